# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's modules: no import cycle (imports inside functions included), each imports on its own in a
fresh interpreter, in the repository and from the node's lib directory, and what a node gets is complete (the
lib directory of install_node.py, the archive Molecule unpacks into /opt/gpuops-sim)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import glob
import os
import re
import shutil
import subprocess
import sys

from simhelpers import REPO

from simulator import install_node

SIM = os.path.join(REPO, 'simulator')
SKIP_DIRS = ('__pycache__', 'profiles', 'connection_plugins')  # data; Ansible's plugins, not the simulator's


def modules(top=SIM):
    """{dotted name: path} of every module under ``top`` (a package's ``__init__.py`` named as the package)."""
    found = {}
    for directory, subdirs, files in os.walk(top):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith('.py'):
                rel = os.path.relpath(os.path.join(directory, name), top)[:-3].split(os.sep)
                if rel[-1] == '__init__':
                    rel = rel[:-1]
                if rel:
                    found['.'.join(rel)] = os.path.join(directory, name)
    return found


def imported(name, path, known):
    """The modules of ``known`` that module ``name`` imports anywhere in its file: relative imports, the
    ``import sim_driver`` fallbacks of a module run from the lib directory, ``from simulator import ...``. A
    package's module importing a sibling does not count its own package (Python imports that one first)."""
    package = name.split('.') if path.endswith('__init__.py') else name.split('.')[:-1]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            names = []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(package):
                    continue
                parts = package[:len(package) - (node.level - 1)] + (node.module.split('.') if node.module else [])
                base = '.'.join(parts)
            else:
                base = node.module or ''
            bases = [base]
            names = [alias.name for alias in node.names]
        else:
            continue
        for base in bases:
            base = base[len('simulator.'):] if base.startswith('simulator.') else ('' if base == 'simulator' else base)
            candidates = [base] + ['%s.%s' % (base, n) if base else n for n in names]
            found.update(c for c in candidates if c in known and c != name)
    return found


def graph(found=None):
    found = found or modules()
    return dict((name, imported(name, path, found)) for name, path in found.items())


def cycles(edges):
    """Every cycle of the graph found by a depth-first walk (one per back edge)."""
    state, stack, out = {}, [], []

    def visit(node):
        state[node] = 'open'
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if state.get(other) == 'open':
                out.append(stack[stack.index(other):] + [other])
            elif other not in state:
                visit(other)
        stack.pop()
        state[node] = 'done'
    for node in sorted(edges):
        if node not in state:
            visit(node)
    return out


def test_the_walk_sees_imports_inside_functions_and_the_fallbacks():
    edges = graph()
    assert 'nvidia_smi.common' in edges['nvidia_smi.cli'] and 'sim_driver' in edges['nvidia_smi.common']
    assert {'sim_dcgm_core', 'sim_dcgmi', 'sim_dcgm_exporter'} <= edges['sim_dcgm']  # the exporter: in main()
    assert cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == [['a', 'b', 'c', 'a']]


def test_no_import_cycle():
    """nvidia_smi imports no DCGM stand-in (the gpuops-sim admin tool is simulator/admin.py), the stand-ins'
    shared parts are simulator/sim_dcgm_core.py: no cycle, not even through an import inside a function."""
    edges = graph()
    assert cycles(edges) == []
    assert not any(other.startswith('sim_dcgm') for name in edges if name.startswith('nvidia_smi')
                   for other in edges[name])


def _imports_alone(names, cwd, path_first=None):
    """The names of ``names`` that fail to import as the first import of a fresh interpreter: (name, stderr)."""
    failed = []
    env = dict(os.environ)
    env.pop('GPUOPS_SIM_ROOT', None)
    env['PYTHONPATH'] = ''
    for name in names:
        code = 'import importlib, sys\n%simportlib.import_module(%r)\n' % (
            'sys.path.insert(0, %r)\n' % path_first if path_first else '', name)
        done = subprocess.run([sys.executable, '-c', code], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
        if done.returncode:
            failed.append((name, done.stderr.decode('utf-8', 'replace').strip().splitlines()[-1:]))
    return failed


def test_every_module_imports_alone_and_in_any_order():
    names = ['simulator.' + name for name in sorted(modules())]
    assert _imports_alone(names, REPO) == []
    for order in (names, list(reversed(names))):
        code = 'import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n'
        done = subprocess.run([sys.executable, '-c', code] + order, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
        assert done.returncode == 0, done.stderr.decode('utf-8', 'replace')


def _lib_modules():
    """The dotted names the node's lib directory holds (install_node.lib_files())."""
    names = []
    for rel in install_node.lib_files():
        parts = rel[:-3].split('/')
        names.append('.'.join(parts[:-1] if parts[-1] == '__init__' else parts))
    return names


def test_the_lib_directory_holds_everything_its_modules_import():
    """A module the node's modules import (also an optional one: a missing one would only switch a feature off)
    is installed under /usr/share/gpuops-sim/lib."""
    edges = graph()
    lib = set(_lib_modules())
    missing = sorted((name, other) for name in lib for other in edges[name] if other not in lib)
    assert missing == []
    assert set(install_node.LIB_PACKAGES) <= lib and 'admin' in lib and 'nvidia_smi.cli' in lib


def _python38():
    """A Python 3.8 that runs (python3.8 on PATH, a pyenv version), or None."""
    candidates = [shutil.which('python3.8')] + sorted(glob.glob(os.path.expanduser('~/.pyenv/versions/3.8*/bin/python3.8')))
    for candidate in candidates:
        try:
            done = subprocess.run([candidate, '-c', 'import sys; print(sys.version_info[:2] == (3, 8))'],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        except (OSError, TypeError):
            continue
        if done.returncode == 0 and done.stdout.strip() == b'True':
            return candidate
    return None


def test_the_lib_modules_import_from_the_lib_directory(tmp_path):
    """As on a node: the lib directory's modules imported as top-level modules, nothing of the repository."""
    lib = tmp_path / 'usr' / 'share' / 'gpuops-sim' / 'lib'
    for rel in install_node.lib_files():
        target = lib / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(SIM, rel), str(target))
    assert _imports_alone(sorted(_lib_modules()), str(tmp_path), str(lib)) == []
    # the oldest Python the node modules support (3.8: a relative import beyond the top package is a ValueError)
    oldest = _python38()
    if oldest:
        code = 'import importlib, sys\nsys.path.insert(0, %r)\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n'
        done = subprocess.run([oldest, '-c', code % str(lib)] + sorted(_lib_modules()), cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        assert done.returncode == 0, done.stderr.decode('utf-8', 'replace')


def _packed(text):
    """The file and directory names a ``tar --create`` list of a Molecule playbook names."""
    return set(re.findall(r"'([A-Za-z_0-9]+(?:\.py)?)'", text))


def test_molecule_packs_every_module_a_node_runs_from_opt_gpuops_sim():
    """install_node.py and sim_kubelet run from the unpacked archive: every module they import (the packages
    whole: their directories) is packed."""
    edges = graph()
    needed, todo = set(), ['install_node', 'sim_kubelet']
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(edges[name])
    tops = set(name.split('.')[0] for name in needed)
    packages = set(name for name in tops if os.path.isdir(os.path.join(SIM, name)))
    wanted = set(name if name in packages else name + '.py' for name in tops) | {'__init__.py'}
    with open(os.path.join(REPO, 'molecule', 'shared', 'install_simulator.yml')) as handle:
        shared = handle.read()
    assert sorted(wanted - _packed(shared)) == []
    with open(os.path.join(REPO, 'molecule', 'nccl', 'prepare.yml')) as handle:
        nccl = re.search(r'tar --create [^\n]*\n([^\n]*)', handle.read()).group(1).split()
    assert '*.py' in nccl and packages <= set(nccl)
