# -*- coding: utf-8 -*-
"""The ansible-playbook the unit tests run playbooks with: the virtualenv's, else the one on PATH; and the
collection search path such a run gets, whatever the environment pytest was started from."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest

from repo_paths import COLLECTIONS


def ansible_playbook():
    """Path of ansible-playbook; the test is skipped when there is none."""
    exe = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    if not os.path.exists(exe):
        exe = shutil.which('ansible-playbook')
    if not exe:
        pytest.skip('ansible-playbook is not installed')
    return exe


def site_packages():
    """[the site-packages of this Python], where the ``ansible`` package keeps its collections; [] when none."""
    return [p for p in sys.path if p.endswith('site-packages')][:1]


def collections_path():
    """ANSIBLE_COLLECTIONS_PATH for a child Ansible: the collection as ansible_collections.gpuops.node
    (.build/collections) and the collections of the ``ansible`` package (this Python's site-packages). A child does
    not see pytest.ini's pythonpath: without this it would find gpuops.node only through the caller's
    environment."""
    return os.pathsep.join([COLLECTIONS] + site_packages())


def run_task(tmp, module, args, environment):
    """The registered result of one task of ``module`` (``gpuops.node.nccl_plan``) with ``args``, run by
    ansible-playbook on this host (connection local) with ``environment`` set for the task; a failed task is a
    result with ``failed``, a failed ansible-playbook an assertion. ``tmp`` (a pathlib.Path) holds the playbook."""
    out = tmp / 'task-result.json'
    playbook = tmp / 'task.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'name': 'the task', module: args, 'environment': environment, 'register': 'result', 'ignore_errors': True},
        {'name': 'keep', 'ansible.builtin.copy': {'content': '{{ result | to_json }}', 'dest': str(out)}}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    run = subprocess.run([ansible_playbook(), '-i', 'localhost,', '-c', 'local', str(playbook)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                         check=False)
    assert run.returncode == 0, run.stdout
    with open(str(out)) as handle:
        return json.load(handle)
