# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print, as JSON, the module_utils subpackages each named module of the collection imports, read from its source.

    python3 module_utils_imports.py <collection root> <module> [<module> ...]

Run on the controller by molecule/default/tasks/verify_ansiballz.yml. For every module (a name under
plugins/modules/), with ``ast`` (nothing is imported):

* ``direct``: the subpackages of plugins/module_utils (parsers, node, topology, plans, config, report) its own
  import statements name (``from ...module_utils.plans import nccl`` and ``from ...module_utils.plans.mps import x``
  both name plans);
* ``packed``: the subpackages of every module_utils file it reaches, following the imports of module_utils files
  from file to file as AnsiballZ does to build the module's payload;
* ``files``: those files, relative to plugins/module_utils.

Printed as ``{"modules": {<module>: {"direct", "packed", "files"}}, "subpackages": [...]}``, ``subpackages`` being
the folders of plugins/module_utils with an __init__.py. A module that does not exist, or an
import of module_utils that names no file, fails with a message naming it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import json
import os
import sys

PREFIX = ('ansible_collections', 'gpuops', 'node', 'plugins', 'module_utils')


def _imports(path):
    """The module_utils paths (tuples under module_utils) the file's import statements name."""
    with open(path, 'rb') as handle:
        tree = ast.parse(handle.read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [tuple(alias.name.split('.')) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            base = tuple(node.module.split('.'))
            names = [base + (alias.name,) for alias in node.names]
        else:
            continue
        for name in names:
            if name[:len(PREFIX)] == PREFIX and len(name) > len(PREFIX):
                out.append(name[len(PREFIX):])
    return out


def _file(utils, inner):
    """The file an import of module_utils reaches: the deepest existing module of ``inner``, or None."""
    for size in range(len(inner), 0, -1):
        path = os.path.join(utils, *inner[:size])
        if os.path.isfile(path + '.py'):
            return path + '.py'
        if os.path.isdir(path) and size < len(inner):
            return None
    return None


def _subpackage(utils, rel):
    parts = rel.split('/')
    return parts[0] if len(parts) > 1 and os.path.isdir(os.path.join(utils, parts[0])) else None


def imports_of(root, module):
    utils = os.path.join(root, 'plugins', 'module_utils')
    path = os.path.join(root, 'plugins', 'modules', module + '.py')
    if not os.path.isfile(path):
        raise SystemExit('no module %s: %s does not exist' % (module, path))
    direct, seen, todo = set(), set(), [(path, inner) for inner in _imports(path)]
    for inner in _imports(path):
        if os.path.isdir(os.path.join(utils, inner[0])):
            direct.add(inner[0])
    while todo:
        source, inner = todo.pop()
        found = _file(utils, inner)
        if found is None:
            raise SystemExit('%s imports %s, which names no file under %s' % (source, '.'.join(PREFIX + inner), utils))
        rel = os.path.relpath(found, utils).replace(os.sep, '/')
        if rel not in seen:
            seen.add(rel)
            todo.extend((found, nested) for nested in _imports(found))
    packed = set(_subpackage(utils, rel) for rel in seen) - set([None])
    return {'direct': sorted(direct), 'packed': sorted(packed), 'files': sorted(seen)}


def subpackages(root):
    """The subpackages of plugins/module_utils: its folders with an __init__.py."""
    utils = os.path.join(root, 'plugins', 'module_utils')
    return sorted(name for name in os.listdir(utils) if os.path.isfile(os.path.join(utils, name, '__init__.py')))


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    root = argv[1]
    print(json.dumps({'modules': dict((module, imports_of(root, module)) for module in argv[2:]),
                      'subpackages': subpackages(root)}, indent=1, sort_keys=True))


if __name__ == '__main__':
    main(sys.argv)
