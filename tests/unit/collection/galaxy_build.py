# -*- coding: utf-8 -*-
"""ansible-galaxy on a collection as a user runs it: build a tarball, list it (conftest.py's installed_collection,
test_shipped_docs.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys
import tarfile

import pytest


def galaxy_cli(*args, **kwargs):
    """Runs the virtualenv's ansible-galaxy (PYTHONPATH unset: pytest.ini's paths are no part of a user's run);
    the CompletedProcess, its stderr in its stdout."""
    exe = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    if not os.path.exists(exe):
        pytest.fail('ansible-galaxy is not installed in the virtualenv (tests/requirements.txt)')
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    env.update(kwargs.pop('env', {}))
    return subprocess.run([exe] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False, **kwargs)


def build_tarball(source, output):
    """Path of the tarball ``ansible-galaxy collection build`` makes of the collection at ``source``."""
    os.makedirs(output, exist_ok=True)
    build = galaxy_cli('collection', 'build', '--output-path', output, source, cwd=output)
    assert build.returncode == 0, build.stdout
    built = [name for name in os.listdir(output) if name.endswith('.tar.gz')]
    assert len(built) == 1, (built, build.stdout)
    return os.path.join(output, built[0])


def tarball_members(tarball):
    """The sorted paths of the files (not the directories) a collection tarball holds."""
    with tarfile.open(tarball) as tar:
        return sorted(m.name for m in tar.getmembers() if not m.isdir())
