# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every command the collection runs goes through plugins/module_utils/command.py, the one runner (argv only, the
best parsable locale, a time-out, one failure wording).

Every file under plugins/modules and plugins/module_utils is read with ``ast`` (nothing is imported); anything but
command.py fails the test, naming the file and the line, when it:

* uses ``run_command`` (``module.run_command(...)``, or the method taken as a value, or ``getattr(x, 'run_command')``);
* imports ``subprocess`` (``import subprocess``, ``from subprocess import ...``, ``__import__('subprocess')``);
* calls ``os.system``, ``os.popen``, an ``os.exec*`` or ``os.spawn*`` function (also imported from os), or
  ``Popen`` under any name.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import os

import pytest
from repo_paths import REPO

ROOT = REPO
RUNNER = os.path.join('plugins', 'module_utils', 'command.py')
SCANNED = (os.path.join('plugins', 'modules'), os.path.join('plugins', 'module_utils'))

OS_CALLS = ('system', 'popen', 'execl', 'execle', 'execlp', 'execlpe', 'execv', 'execve', 'execvp', 'execvpe',
            'spawnl', 'spawnle', 'spawnlp', 'spawnlpe', 'spawnv', 'spawnve', 'spawnvp', 'spawnvpe', 'posix_spawn',
            'posix_spawnp')


def _files():
    found = []
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
            found.extend(os.path.relpath(os.path.join(dirpath, name), ROOT)
                         for name in sorted(filenames) if name.endswith('.py'))
    return found


def _string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def offences(source, path='<source>'):
    """``['<path>:<line>: <what>']`` for each way ``source`` runs a process without the runner."""
    tree = ast.parse(source, path)
    found = []
    os_names = set()     # names bound to os.system etc. by "from os import ..."

    def say(node, what):
        found.append('%s:%d: %s (run commands with module_utils/command.py)' % (path, node.lineno, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == 'subprocess' or alias.name.startswith('subprocess.'):
                    say(node, 'imports %s' % alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == 'subprocess' or node.module.startswith('subprocess.'):
                say(node, 'imports from %s' % node.module)
            if node.module == 'os':
                for alias in node.names:
                    if alias.name in OS_CALLS:
                        os_names.add(alias.asname or alias.name)
                        say(node, 'imports os.%s' % alias.name)
        elif isinstance(node, ast.Attribute):
            if node.attr == 'run_command':
                say(node, 'uses run_command')
            elif node.attr == 'Popen':
                say(node, 'uses Popen')
            elif node.attr in OS_CALLS and isinstance(node.value, ast.Name) and node.value.id == 'os':
                say(node, 'calls os.%s' % node.attr)
        elif isinstance(node, ast.Name) and node.id == 'Popen':
            say(node, 'uses Popen')
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            first = _string(node.args[0]) if node.args else None
            second = _string(node.args[1]) if len(node.args) > 1 else None
            if node.func.id == 'getattr' and second == 'run_command':
                say(node, 'uses run_command')
            elif node.func.id == '__import__' and first == 'subprocess':
                say(node, 'imports subprocess')
            elif node.func.id in os_names:
                say(node, 'calls os.%s' % node.func.id)
    return sorted(set(found), key=lambda line: (line.split(':')[0], int(line.split(':')[1])))


def test_the_scan_reads_the_plugins():
    files = _files()
    assert RUNNER in files
    assert os.path.join('plugins', 'modules', 'nccl_test.py') in files
    assert os.path.join('plugins', 'module_utils', 'topology', 'sources.py') in files


def test_the_runner_is_the_only_file_that_runs_processes():
    found = []
    for path in _files():
        if path == RUNNER:
            continue
        with open(os.path.join(ROOT, path)) as handle:
            found.extend(offences(handle.read(), path))
    assert found == [], '\n'.join(found)


def test_the_runner_itself_runs_processes():
    with open(os.path.join(ROOT, RUNNER)) as handle:
        found = offences(handle.read(), RUNNER)
    assert any('imports subprocess' in line for line in found) and any('Popen' in line for line in found)


@pytest.mark.parametrize('source, what', [
    ('rc, out, err = module.run_command(["ls"])', 'x.py:1: uses run_command'),
    ('run = self.module.run_command', 'x.py:1: uses run_command'),
    ('run = getattr(module, "run_command")', 'x.py:1: uses run_command'),
    ('import subprocess', 'x.py:1: imports subprocess'),
    ('import subprocess as sp', 'x.py:1: imports subprocess'),
    ('from subprocess import PIPE', 'x.py:1: imports from subprocess'),
    ('sp = __import__("subprocess")', 'x.py:1: imports subprocess'),
    ('import os\nos.system("ls")', 'x.py:2: calls os.system'),
    ('import os\nos.popen("ls").read()', 'x.py:2: calls os.popen'),
    ('import os\nos.execvp("ls", ["ls"])', 'x.py:2: calls os.execvp'),
    ('from os import system\n\nsystem("ls")', 'x.py:3: calls os.system'),
    ('from subprocess_helpers import Popen\n\nPopen(["ls"])', 'x.py:3: uses Popen'),
    ('command.run(module, ["ls"])', None),
    ('proc = sp.Popen(["ls"])', 'x.py:1: uses Popen'),
])
def test_each_way_is_found_with_its_line(source, what):
    found = offences(source, 'x.py')
    if what is None:
        assert found == []
    else:
        assert what + ' (run commands with module_utils/command.py)' in found, found


def test_an_injected_run_function_is_no_offence():
    assert offences('def gather_live(run, nvidia_smi):\n    return run([nvidia_smi, "-q"])\n') == []
