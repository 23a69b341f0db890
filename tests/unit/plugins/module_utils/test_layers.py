# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The layers of plugins/module_utils, read from the sources with ``ast`` (nothing is imported).

parsers/ turns text into data; node/ reads the node (sysfs, procfs, PCI ids, packages); topology/ gathers and
checks; plans/<role>.py decide what a role changes; config/ writes the files the roles write; report/ renders the
rack report; the top-level files (errors, files, rawtext, versions, command) are the helpers everyone uses.

Rules:

* no-ansible-module: parsers/, plans/, config/ and report/ never import AnsibleModule
  (ansible.module_utils.basic): a module hands them data, they hand data back.
* no-process: parsers/, plans/, config/ and report/ never run a process: no subprocess, no os.system, os.popen,
  os.exec*, os.spawn*, Popen, run_command, and no import of the collection's command runner (command.py).
* parsers-imports: parsers/ import only the top-level helpers errors, rawtext and versions and other parsers.
* report-imports: report/ imports neither parsers/ nor node/ (it renders what was gathered and checked).
* node-imports: node/ imports nothing of topology/, plans/, config/ or report/.
* import-exists: every import of the collection's module_utils (in plugins/) names an existing file, and a
  name imported from a module is defined (or imported) at that module's top level.
* empty-init: every subpackage of module_utils has an __init__.py, and it is empty (ansible-test sanity
  ``empty-init`` requires it).

Each failure names the file, the line and the rule.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import os

import pytest


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isfile(os.path.join(here, 'galaxy.yml')):
        parent = os.path.dirname(here)
        if parent == here:
            raise RuntimeError('no galaxy.yml above %s' % __file__)
        here = parent
    return here


ROOT = _repo_root()
PLUGINS = os.path.join(ROOT, 'plugins')
MODULE_UTILS = os.path.join(PLUGINS, 'module_utils')
PREFIX = 'ansible_collections.gpuops.node.plugins.module_utils'
PREFIX_PARTS = tuple(PREFIX.split('.'))

SUBPACKAGES = ('parsers', 'node', 'topology', 'plans', 'config', 'report')
# the layers handed data: no AnsibleModule, no process
DATA_LAYERS = ('parsers', 'plans', 'config', 'report')
PARSER_HELPERS = ('errors', 'rawtext', 'versions')
NODE_FORBIDDEN = ('topology', 'plans', 'config', 'report')
REPORT_FORBIDDEN = ('parsers', 'node')

PROCESS_MODULES = ('subprocess', 'pty', 'multiprocessing')
PROCESS_OS_CALLS = ('system', 'popen', 'execl', 'execle', 'execlp', 'execlpe', 'execv', 'execve', 'execvp',
                    'execvpe', 'spawnl', 'spawnle', 'spawnlp', 'spawnlpe', 'spawnv', 'spawnve', 'spawnvp',
                    'spawnvpe', 'posix_spawn', 'posix_spawnp', 'fork', 'forkpty')
PROCESS_CALLS = ('Popen', 'run_command', 'create_subprocess_exec', 'create_subprocess_shell')
COMMAND_RUNNER = ('command',)


def _python_files(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith('.py'))
    return out


def _rel(path):
    return os.path.relpath(path, ROOT)


def _layer(path):
    """'parsers', 'node', ... for a file in a subpackage of module_utils; 'top' for module_utils/x.py; None
    outside module_utils."""
    rel = os.path.relpath(path, MODULE_UTILS)
    if rel.startswith(os.pardir):
        return None
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else 'top'


_TREES = {}


def _tree(path):
    if path not in _TREES:
        with open(path, 'rb') as f:
            _TREES[path] = ast.parse(f.read(), path)
    return _TREES[path]


def _package_of(path):
    """The dotted package of a file under plugins/ (for relative imports)."""
    rel = os.path.relpath(os.path.dirname(path), PLUGINS)
    parts = [] if rel == os.curdir else rel.split(os.sep)
    return ('ansible_collections', 'gpuops', 'node', 'plugins') + tuple(parts)


def _imports(path):
    """[(line, dotted module, [names] or None)] of every import in the file (functions included).

    ``import a.b`` gives ('a.b', None); ``from a import b, c`` gives ('a', ['b', 'c']); a relative import is
    resolved against the file's package.
    """
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append((node.lineno, alias.name, None))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ''
            if node.level:
                base = _package_of(path)
                base = base[:len(base) - (node.level - 1)]
                module = '.'.join(base + ((module,) if module else ()))
            out.append((node.lineno, module, [alias.name for alias in node.names]))
    return sorted(out, key=lambda item: item[0])


def _collection_targets(module, names):
    """The module_utils paths (tuples under module_utils) an import reaches: ``from P import a`` reaches P and,
    where P is a package, P.a. [] for an import outside the collection's module_utils."""
    parts = tuple(module.split('.'))
    if parts[:len(PREFIX_PARTS)] != PREFIX_PARTS:
        return []
    inner = parts[len(PREFIX_PARTS):]
    targets = [inner] if inner else []
    for name in names or []:
        if name != '*' and (not inner or os.path.isdir(os.path.join(MODULE_UTILS, *inner))):
            targets.append(inner + (name,))
    return targets


def _uses_basic(module, names):
    if module == 'ansible.module_utils.basic' or module.startswith('ansible.module_utils.basic.'):
        return True
    return module == 'ansible.module_utils' and 'basic' in (names or [])


def _called_name(func):
    """('os', 'system') for os.system(...), (None, 'Popen') for Popen(...), ('x', 'run_command') for
    x.run_command(...) (the attribute's owner is its last name)."""
    if isinstance(func, ast.Name):
        return None, func.id
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name):
            return owner.id, func.attr
        if isinstance(owner, ast.Attribute):
            return owner.attr, func.attr
        return None, func.attr
    return None, None


def _files_in(*layers):
    return [p for p in _python_files(MODULE_UTILS) if _layer(p) in layers]


def _ids(paths):
    return [os.path.relpath(p, MODULE_UTILS) for p in paths]


DATA_FILES = _files_in(*DATA_LAYERS)


def _violations(path, rule, lines):
    return ['%s:%d: %s: %s' % (_rel(path), line, rule, what) for line, what in lines]


@pytest.mark.parametrize('path', DATA_FILES, ids=_ids(DATA_FILES))
def test_no_ansible_module(path):
    found = [(line, 'imports %s%s (AnsibleModule); take data from the module instead'
              % (module, '' if names is None else ' (%s)' % ', '.join(names)))
             for line, module, names in _imports(path) if _uses_basic(module, names)]
    assert not found, '\n'.join(_violations(path, 'no-ansible-module', found))


@pytest.mark.parametrize('path', DATA_FILES, ids=_ids(DATA_FILES))
def test_no_process(path):
    found = []
    for line, module, names in _imports(path):
        top = module.split('.')[0]
        if top in PROCESS_MODULES:
            found.append((line, 'imports %s' % module))
        elif module == 'os' and set(names or []) & set(PROCESS_OS_CALLS):
            found.append((line, 'imports os.%s' % ', os.'.join(sorted(set(names) & set(PROCESS_OS_CALLS)))))
        elif top == 'asyncio' and set(names or []) & set(PROCESS_CALLS):
            found.append((line, 'imports asyncio subprocess helpers'))
        for target in _collection_targets(module, names):
            if target[:1] == COMMAND_RUNNER:
                found.append((line, 'imports the command runner %s.%s' % (PREFIX, '.'.join(target))))
                break
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            owner, name = _called_name(node.func)
            if owner == 'os' and name in PROCESS_OS_CALLS:
                found.append((node.lineno, 'calls os.%s' % name))
            elif name in PROCESS_CALLS:
                found.append((node.lineno, 'calls %s%s' % (owner + '.' if owner else '', name)))
    found.sort()
    assert not found, '\n'.join(_violations(path, 'no-process', found))


def _layer_imports(path, allowed=None, forbidden=None):
    """(line, what) of the imports of the collection's module_utils that leave ``allowed`` or enter
    ``forbidden`` (first parts of the path under module_utils: a subpackage or a top-level module)."""
    found = []
    for line, module, names in _imports(path):
        inner = _collection_targets(module, names)
        if not inner:
            continue
        # the deepest target says what is imported: P.a of ``from P import a``, else P itself
        reached = set()
        for target in inner:
            if len(inner) > 1 and target == inner[0]:
                continue  # the package of ``from package import module``
            reached.add(target[0])
        for first in sorted(reached):
            if (allowed is not None and first not in allowed) or (forbidden is not None and first in forbidden):
                found.append((line, 'imports %s (%s)' % (module + ('' if names is None else ': ' + ', '.join(names)),
                                                         first + ('/' if first in SUBPACKAGES else '.py'))))
    return found


PARSER_FILES = _files_in('parsers')
REPORT_FILES = _files_in('report')
NODE_FILES = _files_in('node')


@pytest.mark.parametrize('path', PARSER_FILES, ids=_ids(PARSER_FILES))
def test_parsers_import_only_helpers_and_parsers(path):
    found = _layer_imports(path, allowed=PARSER_HELPERS + ('parsers',))
    assert not found, '\n'.join(_violations(
        path, 'parsers-imports (only %s and parsers/)' % ', '.join(PARSER_HELPERS), found))


@pytest.mark.parametrize('path', REPORT_FILES, ids=_ids(REPORT_FILES))
def test_report_imports_neither_parsers_nor_node(path):
    found = _layer_imports(path, forbidden=REPORT_FORBIDDEN)
    assert not found, '\n'.join(_violations(path, 'report-imports (not parsers/, not node/)', found))


@pytest.mark.parametrize('path', NODE_FILES, ids=_ids(NODE_FILES))
def test_node_imports_no_upper_layer(path):
    found = _layer_imports(path, forbidden=NODE_FORBIDDEN)
    assert not found, '\n'.join(_violations(path, 'node-imports (not %s)' % '/, '.join(NODE_FORBIDDEN) + '/', found))


def _top_level_names(path):
    names = set()
    for node in _tree(path).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split('.')[0])
        elif isinstance(node, (ast.If, ast.Try)):
            # try: import x / except ImportError: x = None, and if HAS_X: ...
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split('.')[0] for a in sub.names)
    return names


def _missing(module, names):
    """What an import of the collection's module_utils names that does not exist, or None."""
    parts = tuple(module.split('.'))
    if parts[:len(PREFIX_PARTS)] != PREFIX_PARTS:
        return None
    inner = parts[len(PREFIX_PARTS):]
    base = os.path.join(MODULE_UTILS, *inner)
    if os.path.isdir(base):
        if inner and not os.path.isfile(os.path.join(base, '__init__.py')):
            return '%s/ has no __init__.py' % _rel(base)
        gone = [n for n in names or [] if n != '*' and not os.path.isfile(os.path.join(base, n + '.py'))
                and not os.path.isfile(os.path.join(base, n, '__init__.py'))]
        return ', '.join('no file %s' % _rel(os.path.join(base, n + '.py')) for n in gone) or None
    if not os.path.isfile(base + '.py'):
        return 'no file %s.py' % _rel(base)
    defined = _top_level_names(base + '.py')
    gone = [n for n in names or [] if n != '*' and n not in defined]
    return ', '.join('%s.py defines no %s' % (_rel(base), n) for n in gone) or None


PLUGIN_FILES = _python_files(PLUGINS)


@pytest.mark.parametrize('path', PLUGIN_FILES, ids=[_rel(p) for p in PLUGIN_FILES])
def test_module_utils_imports_exist(path):
    found = []
    for line, module, names in _imports(path):
        missing = _missing(module, names)
        if missing:
            found.append((line, 'imports %s: %s' % (module, missing)))
    assert not found, '\n'.join(_violations(path, 'import-exists', found))


def test_every_subpackage_has_an_empty_init():
    found = []
    for dirpath, dirnames, filenames in os.walk(MODULE_UTILS):
        dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
        if dirpath == MODULE_UTILS or not any(f.endswith('.py') for f in filenames) and not dirnames:
            continue
        init = os.path.join(dirpath, '__init__.py')
        if not os.path.isfile(init):
            found.append('%s:0: empty-init: no __init__.py' % _rel(init))
        elif os.path.getsize(init):
            found.append('%s:1: empty-init: %d bytes, ansible-test requires it empty' % (_rel(init), os.path.getsize(init)))
    assert not found, '\n'.join(found)


def test_the_layers_are_there():
    # the rules above pass trivially over a layer that moved away
    for layer in SUBPACKAGES:
        assert _files_in(layer), 'plugins/module_utils/%s/ has no Python file' % layer
    assert [p for p in _python_files(MODULE_UTILS) if _layer(p) == 'top']


# ---------------------------------------------------------------- the checker itself

def _check_source(tmp_path, layer, source, test):
    """Run one rule over a file written into a fake layer folder: the assertion message, or None."""
    (tmp_path / layer).mkdir()
    path = tmp_path / layer / 'x.py'
    path.write_text(source)
    try:
        test(str(path))
    except AssertionError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize('layer, source, test, rule', [
    ('report', 'from ansible.module_utils.basic import AnsibleModule\n', test_no_ansible_module, 'no-ansible-module'),
    ('plans', 'from ansible.module_utils import basic\n', test_no_ansible_module, 'no-ansible-module'),
    ('config', 'import subprocess\n', test_no_process, 'no-process'),
    ('parsers', 'import os\n\ndef f():\n    return os.popen("x")\n', test_no_process, 'no-process'),
    ('plans', 'def f(m):\n    return m.run_command(["x"])\n', test_no_process, 'no-process'),
    ('report', 'from %s import command\n' % PREFIX, test_no_process, 'no-process'),
    ('parsers', 'from %s.node import sysfs\n' % PREFIX, test_parsers_import_only_helpers_and_parsers,
     'parsers-imports'),
    ('parsers', 'from %s.files import write_atomic\n' % PREFIX, test_parsers_import_only_helpers_and_parsers,
     'parsers-imports'),
    ('report', 'from %s.parsers.dcb import x\n' % PREFIX, test_report_imports_neither_parsers_nor_node,
     'report-imports'),
    ('node', 'def f():\n    from %s.topology import gather\n' % PREFIX, test_node_imports_no_upper_layer,
     'node-imports'),
])
def test_the_checker_finds(tmp_path, layer, source, test, rule):
    message = _check_source(tmp_path, layer, source, test)
    assert message and rule in message and ('%s%sx.py:' % (layer, os.sep)) in message, message


@pytest.mark.parametrize('layer, source, test', [
    ('parsers', 'from %s.errors import ParseError\nfrom %s.parsers import dcb\n' % (PREFIX, PREFIX),
     test_parsers_import_only_helpers_and_parsers),
    ('report', 'from %s.plans import gpuops\n' % PREFIX, test_report_imports_neither_parsers_nor_node),
    ('node', 'from %s.node.sysfs import read_value\n' % PREFIX, test_node_imports_no_upper_layer),
    ('plans', 'import os\n\ndef f(p):\n    return os.path.join(p, "x")\n', test_no_process),
])
def test_the_checker_lets_pass(tmp_path, layer, source, test):
    assert _check_source(tmp_path, layer, source, test) is None
