# -*- coding: utf-8 -*-
"""The README's quick start, run as written: from an empty directory, with only the built tarball and the `ansible`
package (its ansible-core and bundled collections, this virtualenv's), nothing of the checkout on any path.

Every line of the README's quick-start block runs in that directory, in order, through bash, with HOME a fresh
directory (so `~/.ansible/collections` is the tarball's install and nothing else) and no ANSIBLE_* variable of the
test run; a line's `# exit N` comment is its expected exit status (0 when it says none). What it cannot prove: that
Galaxy serves the same tarball (Galaxy is not reachable here), and the quick start's time on another machine.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil
import subprocess
import sys

from repo_paths import REPO

MARKER = '<!-- quickstart: run as written by tests/unit/collection/test_quickstart.py -->'
_EXIT = re.compile(r'^\s*exit (\d+)')


def quickstart_lines(readme_text):
    """The commands of the block after MARKER: (command, expected exit status)."""
    assert MARKER in readme_text, 'README.md has no quick-start marker %s' % MARKER
    rest = readme_text.split(MARKER, 1)[1].lstrip('\n')
    assert rest.startswith('```bash\n'), 'the quick-start marker must be followed by a ```bash block'
    block = rest[len('```bash\n'):].split('\n```', 1)[0]
    commands = []
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        command, _sep, comment = line.partition('  #')
        match = _EXIT.search(comment)
        commands.append((command.strip(), int(match.group(1)) if match else 0))
    return commands


def _readme():
    with open(os.path.join(REPO, 'README.md')) as handle:
        return handle.read()


def _environment(home):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_') and k != 'PYTHONPATH')
    env.update(HOME=home, PATH=os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', '/usr/bin:/bin'),
               ANSIBLE_NOCOLOR='1', LC_ALL='C.UTF-8')
    return env


def test_quickstart_lines_parse():
    lines = quickstart_lines('x\n%s\n```bash\na --b   # exit 2: why\n# a comment\n\nc  # note\n```\n' % MARKER)
    assert lines == [('a --b', 2), ('c', 0)]


def test_the_quickstart_names_the_tarball_this_version_builds(installed_collection):
    tarball = os.path.basename(installed_collection.tarball)
    installs = [c for c, _rc in quickstart_lines(_readme()) if c.startswith('ansible-galaxy collection install')]
    assert installs == ['ansible-galaxy collection install %s' % tarball]


def test_the_readme_quickstart_runs_as_written(installed_collection, tmp_path):
    work, home = tmp_path / 'empty', tmp_path / 'home'
    work.mkdir()
    home.mkdir()
    shutil.copy(installed_collection.tarball, str(work))
    env = _environment(str(home))
    transcript = []
    for command, expected in quickstart_lines(_readme()):
        run = subprocess.run(['bash', '-c', command], cwd=str(work), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
        transcript.append('$ %s  -> %s\n%s' % (command, run.returncode, run.stdout[-3000:]))
        assert run.returncode == expected, '\n'.join(transcript)
    installed = home / '.ansible' / 'collections' / 'ansible_collections' / 'gpuops' / 'node'
    assert (installed / 'MANIFEST.json').is_file(), 'the quick start did not install into ~/.ansible/collections'
    report = (work / 'quickstart' / 'reports' / 'validate.md').read_text()
    # what the README shows of the second run is in the report it wrote
    shown = _readme().split(MARKER, 1)[1].split('```text\n', 1)[1].split('\n```', 1)[0]
    for line in shown.splitlines():
        assert line in report, (line, report)
    assert '**NOT HEALTHY** - 2 hosts: 1 passed' in report, report
    for name in ('validate.html', 'validate.json', 'validate.xml'):
        assert (work / 'quickstart' / 'reports' / name).is_file(), name
    # nothing of the checkout was read: every file ansible ran from the collection is the installed copy's
    assert REPO not in '\n'.join(transcript), '\n'.join(transcript)
