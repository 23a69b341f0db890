# -*- coding: utf-8 -*-
"""gpuops.node.gpuops, tasks/reboot.yml: the host is back from its reboot once systemd has finished the boot, so
the boot units of the roles (gpuops-mig-layout.service re-creating the GPU instances) have run before the
post-change check reads the node. The reboot's test_command is run here against a systemctl stand-in that answers
as systemctl is-system-running --wait does."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess

import pytest

from role_files import load


def _reboot_task():
    block = [task for task in load('gpuops', 'tasks', 'reboot.yml') if 'block' in task][0]['block']
    return [task for task in block if 'ansible.builtin.reboot' in task][0]['ansible.builtin.reboot']


def test_the_reboot_waits_for_the_boot_to_finish():
    assert 'systemctl is-system-running --wait' in _reboot_task()['test_command']


@pytest.mark.parametrize('answer, rc, ready', [
    ('running', 0, True),
    # a unit failed: the boot has finished all the same, the post-change check finds what it left undone
    ('degraded', 1, True),
    ('maintenance', 1, False),
    # the manager is not up yet (a container's init just started), or cannot be reached
    ('offline', 1, False),
    ('', 1, False),
])
def test_the_test_command_succeeds_only_once_the_boot_has_finished(tmp_path, answer, rc, ready):
    systemctl = tmp_path / 'systemctl'
    systemctl.write_text('#!/bin/sh\n[ "$*" = "is-system-running --wait" ] || exit 64\n%s\nexit %d\n'
                         % ('echo %s' % answer if answer else ':', rc))
    systemctl.chmod(0o755)
    env = dict(os.environ, PATH='%s:%s' % (tmp_path, os.environ.get('PATH', '/usr/bin:/bin')))
    result = subprocess.run(['/bin/sh', '-c', _reboot_task()['test_command']], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, check=False)
    assert (result.returncode == 0) == ready, (result.returncode, result.stdout, result.stderr)
