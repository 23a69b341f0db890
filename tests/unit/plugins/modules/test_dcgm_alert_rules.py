# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""dcgm_alert_rules: writes only what differs (a second run changes nothing), check mode and diff, bad thresholds
named, and a promtool that rejects the rules leaves the file untouched."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import stat
import subprocess

import pytest

import module_harness as harness
# patch_module: an autouse fixture
from module_harness import patch_module  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_alerts
from ansible_collections.gpuops.node.plugins.modules import dcgm_alert_rules

PROMTOOL = shutil.which('promtool')


def run(args, check_mode=False, diff=False, expect_fail=False):
    return harness.run(dcgm_alert_rules, args, check_mode=check_mode, diff=diff, expect_fail=expect_fail)


def _fake_promtool(tmp_path, rc):
    path = tmp_path / 'bin' / 'promtool'
    path.parent.mkdir()
    path.write_text('#!/bin/sh\necho "fake promtool $*"\nexit %d\n' % rc)
    path.chmod(0o755)
    return str(path)


def test_writes_then_changes_nothing(tmp_path):
    dest = str(tmp_path / 'rules.yml')
    args = {'dest': dest, 'tests_dest': str(tmp_path / 'tests' / 'rules.tests.yml'), 'promtool': '',
            'thresholds': {'sm_util_max_percent': 90}, 'labels': {'cluster': 'a'}}
    (tmp_path / 'tests').mkdir()
    first = run(args)
    assert first['changed'] and first['alerts'][-1] == 'GpuSmUtilisationQuota' and first['checked'] is False
    with open(dest) as handle:
        assert handle.read() == dcgm_alerts.render_rules({'sm_util_max_percent': 90}, {'cluster': 'a'})
    with open(args['tests_dest']) as handle:
        assert '- "../rules.yml"' in handle.read()
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o644
    second = run(args)
    assert not second['changed'] and second['changed_files'] == []


def test_check_mode_and_diff_write_nothing(tmp_path):
    dest = tmp_path / 'rules.yml'
    dest.write_text('old\n')
    result = run({'dest': str(dest), 'promtool': ''}, check_mode=True, diff=True)
    assert result['changed'] and result['changed_files'] == [str(dest)]
    assert result['diff'][0]['before'] == 'old\n' and 'GpuXidError' in result['diff'][0]['after']
    assert dest.read_text() == 'old\n'


def test_mode_change_alone_is_a_change(tmp_path):
    dest = str(tmp_path / 'rules.yml')
    run({'dest': dest, 'promtool': ''})
    os.chmod(dest, 0o600)
    result = run({'dest': dest, 'promtool': ''})
    assert result['changed'] and result['changed_files'] == []
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o644


def test_bad_threshold_fails_naming_the_variable(tmp_path):
    result = run({'dest': str(tmp_path / 'r.yml'), 'promtool': '', 'thresholds': {'sm_utilization': 90,
                                                                                  'gpu_util_percent': 120}},
                 expect_fail=True)
    assert 'dcgm_alert_thresholds.sm_utilization: unknown threshold' in result['msg']
    assert 'dcgm_alert_thresholds.gpu_util_percent' in result['msg']
    assert not (tmp_path / 'r.yml').exists()


def test_failing_promtool_leaves_dest_untouched(tmp_path):
    dest = tmp_path / 'rules.yml'
    dest.write_text('old\n')
    result = run({'dest': str(dest), 'promtool': _fake_promtool(tmp_path, 1)}, expect_fail=True)
    assert result['msg'] == 'promtool check rules rules.yml exited 1: fake promtool check rules rules.yml; nothing written'
    assert (result['rc'], result['stdout']) == (1, 'fake promtool check rules rules.yml\n')
    assert dest.read_text() == 'old\n'


def test_missing_promtool_path_fails(tmp_path):
    result = run({'dest': str(tmp_path / 'r.yml'), 'promtool': str(tmp_path / 'nope')}, expect_fail=True)
    assert 'does not exist' in result['msg']


def test_passing_promtool_is_reported(tmp_path):
    tool = _fake_promtool(tmp_path, 0)
    result = run({'dest': str(tmp_path / 'r.yml'), 'promtool': tool})
    assert result['checked'] and result['promtool'] == tool


@pytest.mark.skipif(not PROMTOOL, reason='promtool is not installed (test_dcgm_alerts_promtool.py fails under CI)')
def test_real_promtool_auto_and_the_written_tests_pass(tmp_path):
    dest = str(tmp_path / 'rules.yml')
    tests = str(tmp_path / 'rules.tests.yml')
    result = run({'dest': dest, 'tests_dest': tests, 'thresholds': {'sm_util_max_percent': 90}})
    assert result['checked'] and result['promtool'] == PROMTOOL
    proc = subprocess.run([PROMTOOL, 'test', 'rules', tests], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, cwd='/')
    assert proc.returncode == 0, proc.stdout
