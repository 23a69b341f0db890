# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rendered rules under the real promtool (Debian's ``prometheus`` package, installed by ``make host``):
``promtool check rules`` accepts them and ``promtool test rules`` proves that every alert fires above its
threshold and stays quiet below it, for the defaults and for a site's thresholds; and promtool does fail a test
whose expectation is wrong. Without promtool these tests fail under CI (the environment variable ``CI`` set) and
are skipped elsewhere."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_alerts

PROMTOOL = os.environ.get('PROMTOOL') or shutil.which('promtool')

SITE = {'gpu_util_percent': 80, 'gpu_util_for': '10m', 'nvlink_crc_per_hour': 0, 'ib_retrans_percent': 0.5,
        'ecc_uncorrectable': 2, 'row_remap_pending': 0, 'xid_codes': [13, 79, 95], 'sm_util_max_percent': 90}


@pytest.fixture
def promtool():
    if not PROMTOOL:
        if os.environ.get('CI'):
            pytest.fail('promtool is not installed (CI is set): make host installs Debian\'s prometheus package')
        pytest.skip('promtool is not installed (apt-get install prometheus, or make host); CI fails here')
    return PROMTOOL


def _run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def _write(tmp_path, rules, tests):
    (tmp_path / 'rules.yml').write_text(rules)
    (tmp_path / 'tests.yml').write_text(tests)


@pytest.mark.parametrize('thresholds', [{}, SITE], ids=['defaults', 'site'])
def test_promtool_checks_and_tests_the_rendered_rules(promtool, tmp_path, thresholds):
    labels = {'cluster': 'rack-a'}
    _write(tmp_path, dcgm_alerts.render_rules(thresholds, labels), dcgm_alerts.render_tests(thresholds, 'rules.yml', labels))
    rc, out = _run([promtool, 'check', 'rules', 'rules.yml'], str(tmp_path))
    assert rc == 0, out
    count = len(dcgm_alerts.active(dcgm_alerts.checked(thresholds)))
    assert 'SUCCESS: %d rules found' % count in out
    rc, out = _run([promtool, 'test', 'rules', 'tests.yml'], str(tmp_path))
    assert rc == 0, out
    assert 'SUCCESS' in out


def test_promtool_fails_an_alert_expected_below_its_threshold(promtool, tmp_path):
    """The tests can fail: expecting the alert on the series below the threshold is reported as a failure."""
    tests = yaml.safe_load(dcgm_alerts.render_tests({}, 'rules.yml'))
    cases = dict((c['name'].split(' gpu_util_percent')[0], c) for c in tests['tests'])
    fired = cases['GpuUtilisationHigh fires above']['alert_rule_test'][-1]['exp_alerts']
    quiet = cases['GpuUtilisationHigh quiet below']['alert_rule_test'][-1]
    assert fired and quiet['exp_alerts'] == []
    quiet['exp_alerts'] = fired
    _write(tmp_path, dcgm_alerts.render_rules({}), yaml.safe_dump(tests))
    rc, out = _run([promtool, 'test', 'rules', 'tests.yml'], str(tmp_path))
    assert rc != 0, out
    assert 'FAILED' in out and 'GpuUtilisationHigh' in out


def test_promtool_fails_rules_tested_against_other_thresholds(promtool, tmp_path):
    """Rules rendered for a threshold of 99 % do not fire on the series the 95 % tests feed them."""
    _write(tmp_path, dcgm_alerts.render_rules({'gpu_util_percent': 99}), dcgm_alerts.render_tests({}, 'rules.yml'))
    rc, out = _run([promtool, 'test', 'rules', 'tests.yml'], str(tmp_path))
    assert rc != 0 and 'GpuUtilisationHigh' in out, out


def test_promtool_rejects_a_broken_expression(promtool, tmp_path):
    _write(tmp_path, dcgm_alerts.render_rules({}).replace('> 95', '> > 95'), '')
    rc, out = _run([promtool, 'check', 'rules', 'rules.yml'], str(tmp_path))
    assert rc != 0, out
