# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The alerts table, the thresholds' validation, the rendered rules and promtool tests, and the README's alerts
table; the promtool runs are in test_dcgm_alerts_promtool.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_alerts as config_dcgm_alerts
from repo_paths import REPO

ROOT = REPO
README = os.path.join(ROOT, 'roles', 'dcgm', 'README.md')
START, END = '<!-- alerts:start -->', '<!-- alerts:end -->'

NAMES = ['GpuUtilisationHigh', 'NvlinkCrcErrors', 'InfinibandRetransmissions', 'GpuEccUncorrectable',
         'GpuRowRemapPending', 'GpuXidError', 'GpuSmUtilisationQuota']


def test_table_names_metrics_and_thresholds():
    assert [a['name'] for a in config_dcgm_alerts.ALERTS] == NAMES
    for alert in config_dcgm_alerts.ALERTS:
        assert alert['threshold'] in config_dcgm_alerts.THRESHOLDS, alert['name']
        assert alert['severity'] in ('warning', 'critical')
        assert alert['metrics'] and alert['exporter']
        assert all(m in alert['expr'] or alert['kind'] == 'xid' for m in alert['metrics'])
    assert set(config_dcgm_alerts.THRESHOLDS) == set(config_dcgm_alerts.THRESHOLD_KINDS)


def test_defaults_are_the_documented_ones():
    t, errors = config_dcgm_alerts.validate(None)
    assert errors == []
    assert t['gpu_util_percent'] == 95 and t['gpu_util_for'] == '5m' and t['nvlink_crc_per_hour'] == 10
    assert t['ib_retrans_percent'] == 0.1 and t['ecc_uncorrectable'] == 0 and t['row_remap_pending'] == 0
    assert t['sm_util_max_percent'] is None
    assert {48, 79, 94, 95}.issubset(t['xid_codes']) and 13 not in t['xid_codes'] and 31 not in t['xid_codes']


@pytest.mark.parametrize('thresholds, message', [
    ({'gpu_util': 90}, 'dcgm_alert_thresholds.gpu_util: unknown threshold'),
    ({'sm_utilization': 90}, 'dcgm_alert_thresholds.sm_utilization: unknown threshold (the SM-utilisation quota '
                             'is dcgm_alert_thresholds.sm_util_max_percent)'),
    ({'gpu_util_percent': -1}, 'dcgm_alert_thresholds.gpu_util_percent: must not be negative'),
    ({'nvlink_crc_per_hour': 'many'}, 'dcgm_alert_thresholds.nvlink_crc_per_hour: must be a number'),
    ({'ecc_uncorrectable': True}, 'dcgm_alert_thresholds.ecc_uncorrectable: must be a number'),
    ({'ib_retrans_percent': None}, 'dcgm_alert_thresholds.ib_retrans_percent: must be a number'),
    ({'gpu_util_percent': 101}, 'dcgm_alert_thresholds.gpu_util_percent: a percentage below 100'),
    ({'sm_util_max_percent': 100}, 'dcgm_alert_thresholds.sm_util_max_percent: a percentage below 100'),
    ({'gpu_util_for': '5 minutes'}, 'dcgm_alert_thresholds.gpu_util_for: must be a Prometheus duration'),
    ({'xid_codes': 79}, 'dcgm_alert_thresholds.xid_codes: must be a list'),
    ({'xid_codes': [79, -1, 'x']}, 'dcgm_alert_thresholds.xid_codes: XID codes are positive integers'),
])
def test_bad_thresholds_name_the_variable(thresholds, message):
    errors = config_dcgm_alerts.validate(thresholds)[1]
    assert len(errors) == 1 and errors[0].startswith(message), errors
    with pytest.raises(config_dcgm_alerts.AlertsError, match='dcgm_alert_thresholds'):
        config_dcgm_alerts.render_rules(thresholds)


def test_every_error_is_reported_at_once():
    errors = config_dcgm_alerts.validate({'foo': 1, 'gpu_util_percent': 'x', 'ib_retrans_percent': 200})[1]
    assert len(errors) == 3


def test_numeric_strings_from_templating_are_numbers():
    t, errors = config_dcgm_alerts.validate({'gpu_util_percent': '90', 'ib_retrans_percent': '0.5', 'xid_codes': ['79', 48]})
    assert errors == [] and t['gpu_util_percent'] == 90 and t['ib_retrans_percent'] == 0.5
    assert t['xid_codes'] == [48, 79]


def _rules(text):
    data = yaml.safe_load(text)
    assert list(data) == ['groups'] and len(data['groups']) == 1
    return data['groups'][0]


def test_rules_default_set_without_the_quota():
    group = _rules(config_dcgm_alerts.render_rules({}, {'cluster': 'rack-a'}, 'gpu'))
    assert group['name'] == 'gpu'
    rules = dict((r['alert'], r) for r in group['rules'])
    assert list(rules) == NAMES[:-1]
    assert rules['GpuUtilisationHigh']['expr'] == 'DCGM_FI_DEV_GPU_UTIL > 95'
    assert rules['GpuUtilisationHigh']['for'] == '5m'
    assert rules['NvlinkCrcErrors']['expr'] == 'increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[1h]) > 10'
    assert rules['InfinibandRetransmissions']['expr'].endswith(
        '/ rate(node_infiniband_port_packets_transmitted_total[5m]) > 0.1')
    assert rules['GpuEccUncorrectable']['expr'] == 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0'
    assert rules['GpuRowRemapPending']['expr'] == 'DCGM_FI_DEV_ROW_REMAP_PENDING > 0'
    assert 'DCGM_FI_DEV_XID_ERRORS == 79 or' in rules['GpuXidError']['expr']
    for rule in rules.values():
        assert rule['labels']['cluster'] == 'rack-a' and rule['labels']['severity'] in ('warning', 'critical')
        assert set(rule['annotations']) == {'summary', 'description'}
        assert '{{ $labels.instance }}' in rule['annotations']['summary']


def test_quota_rule_when_set_and_empty_xid_list_drops_the_xid_rule():
    rules = _rules(config_dcgm_alerts.render_rules({'sm_util_max_percent': 90, 'gpu_util_for': '15m', 'xid_codes': []}))['rules']
    names = [r['alert'] for r in rules]
    assert 'GpuXidError' not in names and names[-1] == 'GpuSmUtilisationQuota'
    assert rules[-1]['expr'] == '100 * DCGM_FI_PROF_SM_ACTIVE > 90' and rules[-1]['for'] == '15m'


def test_rendering_is_deterministic():
    t = {'xid_codes': [95, 48, 79, 48], 'sm_util_max_percent': 85.5}
    labels = {'b': '2', 'a': '1'}
    assert config_dcgm_alerts.render_rules(t, labels) == config_dcgm_alerts.render_rules(dict(t), dict(reversed(list(labels.items()))))
    assert config_dcgm_alerts.render_tests(t, 'r.yml', labels) == config_dcgm_alerts.render_tests(t, 'r.yml', labels)


@pytest.mark.parametrize('labels', [{'severity': 'page'}, {'bad-name': 'x'}, {'__meta': 'x'}])
def test_bad_labels(labels):
    with pytest.raises(config_dcgm_alerts.AlertsError, match='labels'):
        config_dcgm_alerts.render_rules({}, labels)


def test_tests_cover_every_alert_above_and_below():
    t = {'sm_util_max_percent': 90}
    data = yaml.safe_load(config_dcgm_alerts.render_tests(t, 'rules.yml', {'cluster': 'x'}))
    assert data['rule_files'] == ['rules.yml']
    by_alert = {}
    for case in data['tests']:
        alert = case['alert_rule_test'][-1]['alertname']
        by_alert.setdefault(alert, []).append(case)
    assert sorted(by_alert) == sorted(NAMES)
    for alert, cases in by_alert.items():
        fired = [c for c in cases if c['alert_rule_test'][-1]['exp_alerts']]
        quiet = [c for c in cases if not c['alert_rule_test'][-1]['exp_alerts']]
        assert len(fired) == 1 and len(quiet) == 1, alert
        exp = fired[0]['alert_rule_test'][-1]['exp_alerts'][0]
        assert exp['exp_labels']['cluster'] == 'x' and exp['exp_labels']['severity']
        assert '{{' not in exp['exp_annotations']['summary']


def test_a_for_duration_is_proven_by_a_quiet_evaluation_before_it():
    data = yaml.safe_load(config_dcgm_alerts.render_tests({'gpu_util_for': '10m'}, 'rules.yml'))
    case = [c for c in data['tests'] if c['name'].startswith('GpuUtilisationHigh fires')][0]
    assert [(e['eval_time'], bool(e['exp_alerts'])) for e in case['alert_rule_test']] == [('9m', False),
                                                                                          ('12m', True)]


def test_xid_quiet_series_uses_a_code_outside_the_list():
    data = yaml.safe_load(config_dcgm_alerts.render_tests({'xid_codes': [13, 14]}, 'rules.yml'))
    quiet = [c for c in data['tests'] if c['name'].startswith('GpuXidError quiet')][0]
    assert quiet['input_series'][0]['values'].split()[1].startswith('1x')


def test_markdown_table_lists_every_alert_and_threshold():
    text = config_dcgm_alerts.alerts_markdown()
    for name in NAMES:
        assert '`%s`' % name in text
    for key in config_dcgm_alerts.THRESHOLDS:
        assert '`dcgm_alert_thresholds.%s`' % key in text or '| `%s` |' % key in text
    assert 'unset: no rule' in text


def test_readme_alerts_block_matches_the_table():
    if not os.path.isfile(README):
        pytest.skip('roles/dcgm/README.md does not exist yet')
    with open(README) as handle:
        text = handle.read()
    if START not in text or END not in text:
        pytest.skip('roles/dcgm/README.md has no %s / %s markers yet' % (START, END))
    block = text.split(START, 1)[1].split(END, 1)[0]
    assert block.strip() == config_dcgm_alerts.alerts_markdown().strip(), (
        'roles/dcgm/README.md: the alerts table differs from dcgm_alerts.ALERTS; run '
        'python3 tests/scripts/alerts_table.py')
