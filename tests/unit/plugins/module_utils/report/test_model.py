# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report/model.py: records normalised, their statuses and reasons, grouped by rack, and the JSON report."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import model

import report_records as R
from report_records import PASS, POST_PASS


@pytest.fixture
def records():
    return R.records()


def test_derive_status(records):
    report = model.build_report(records)
    status = dict((h['host'], h['status']) for r in report['racks'] for h in r['hosts'])
    assert status == {'gpu-a10': 'provisioned', 'gpu-a2': 'held_back', 'gpu-b1': 'regressed',
                      'gpu-b2': 'unreachable', 'gpu-b3': 'failed'}


@pytest.mark.parametrize('record, expected', [
    ({'host': 'h', 'pre_check': PASS}, 'validated'),
    ({'host': 'h', 'pre_check': {'passed': False, 'failures': [R.failure()]}}, 'failed'),
    ({'host': 'h'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'phase': 'changes'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'post_check': {'passed': False, 'failures': [R.failure()]}}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'post_check': POST_PASS, 'error': 'boom'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'error': 'boom',
      'post_check': {'passed': False, 'regressions': [R.regression()]}}, 'regressed'),
    ({'host': 'h', 'status': 'validated', 'pre_check': {'passed': False}}, 'validated'),
])
def test_derive_status_cases(record, expected):
    assert model.normalize_record(record)['status'] == expected


@pytest.mark.parametrize('record', [
    {'rack': 'rack_a'},
    {'host': 'h', 'status': 'bogus'},
    {'host': 'h', 'pre_check': 'yes'},
    {'host': 'h', 'changes': ['a']},
    {'host': 'h', 'held_back': 'maybe'},
    'not-a-dict',
])
def test_invalid_records(record):
    with pytest.raises(model.ReportError):
        model.normalize_record(record)


def test_counts_and_grouping(records):
    report = model.build_report(records, 'Rollout 42')
    assert report['title'] == 'Rollout 42'
    assert report['summary'] == {
        'hosts': 5, 'passed': 1, 'held_back': 1, 'reboot_required': 0, 'regressed': 1, 'failed': 1,
        'unreachable': 1, 'not_started': 0,
        'by_status': {'provisioned': 1, 'validated': 0, 'held_back': 1, 'reboot_required': 0, 'regressed': 1,
                      'unreachable': 1, 'failed': 1, 'not_started': 0},
        'healthy': False,
    }
    assert [r['name'] for r in report['racks']] == ['rack_a', 'rack_b']
    # natural order: gpu-a2 before gpu-a10
    assert [h['host'] for h in report['racks'][0]['hosts']] == ['gpu-a2', 'gpu-a10']
    assert report['racks'][0]['summary']['hosts'] == 2
    assert report['racks'][1]['summary']['regressed'] == 1


def test_duplicate_host_keeps_last():
    report = model.build_report([{'host': 'h', 'pre_check': {'passed': False}}, {'host': 'h', 'pre_check': PASS}])
    assert report['summary']['hosts'] == 1
    assert report['summary']['healthy'] is True


def test_empty_report_is_not_healthy():
    report = model.build_report([])
    assert report['summary']['hosts'] == 0 and not report['summary']['healthy']
    assert model.build_report(None)['racks'] == []


def test_json(records):
    doc = json.loads(model.render_json(model.build_report(records)))
    assert doc['summary']['hosts'] == 5
    hosts = [h for r in doc['racks'] for h in r['hosts']]
    assert all('gpu_topology' not in h for h in hosts)
    assert set(hosts[0]) == set(model.RECORD_KEYS)


def test_host_json_keeps_extra_keys(records):
    record = model.normalize_record(records[1])
    doc = json.loads(model.render_host_json(record))
    assert doc['gpu_topology'] == {'gpu_count': 7}
    assert doc['status'] == 'held_back'


def test_json_is_deterministic(records):
    assert model.render_json(model.build_report(records)) == model.render_json(model.build_report(records[::-1]))


def test_changes_normalization():
    record = model.normalize_record({'host': 'h', 'changes': {'a': '2', 'b': 1.0, 'c': None, 'd': 'yes', 'e': False}})
    # None: the role did not say (it failed before reporting, or does not follow the contract)
    assert record['changes'] == {'a': 2, 'b': 1, 'c': None, 'd': True, 'e': False}


@pytest.mark.parametrize('value, expected', [
    (None, u''),
    (u'GPU3', u'GPU3'),
    (True, u'true'),
    (18, u'18'),
    ({'b': 1, 'a': [u'\u00e9']}, u'{"a": ["\u00e9"], "b": 1}'),
])
def test_value_text(value, expected):
    assert model.value_text(value) == expected


# ---------------------------------------------------------------- odd names

@pytest.mark.parametrize('hosts, expected', [
    # only ASCII digits are numbers: superscript two is text (str.isdigit() is true for it, int() fails)
    ([u'node10', u'node1\u00b2', u'node2', u'node1'], [u'node1', u'node1\u00b2', u'node2', u'node10']),
    ([u'node\u0661', u'node10', u'node2'], [u'node2', u'node10', u'node\u0661']),
    ([u'\u00b2', u'10', u'9'], [u'9', u'10', u'\u00b2']),
    # equal but for the case or leading zeros: ordered by the name itself, whatever the input order
    ([u'gpu-1', u'GPU-1', u'gpu-01', u'gpu-2'], [u'GPU-1', u'gpu-01', u'gpu-1', u'gpu-2']),
    ([u'gpu-01', u'gpu-1', u'GPU-1', u'gpu-2'], [u'GPU-1', u'gpu-01', u'gpu-1', u'gpu-2']),
])
def test_natural_order(hosts, expected):
    report = model.build_report([{'host': h, 'rack': 'r'} for h in hosts])
    assert [h['host'] for h in report['racks'][0]['hosts']] == expected
    assert sorted(hosts, key=model.sort_key) == expected


def test_racks_equal_but_for_zeros_stay_grouped():
    records = [{'host': 'h1', 'rack': 'rack01'}, {'host': 'h2', 'rack': 'rack1'}, {'host': 'h3', 'rack': 'rack01'}]
    for order in (records, list(reversed(records))):
        report = model.build_report(order)
        assert [(r['name'], [h['host'] for h in r['hosts']]) for r in report['racks']] == [
            ('rack01', ['h1', 'h3']), ('rack1', ['h2'])]


@pytest.mark.parametrize('value, expected', [
    (u' 12 ', 12),
    (u'0', 0),
    (u'\u00b2', None),
    (u'\u0661\u0662', None),
    (u'1\u00b2', None),
])
def test_changes_only_ascii_numbers(value, expected):
    if expected is None:
        with pytest.raises(model.ReportError, match='changes.a must be a boolean'):
            model.normalize_record({'host': 'h', 'changes': {'a': value}})
    else:
        assert model.normalize_record({'host': 'h', 'changes': {'a': value}})['changes'] == {'a': expected}


@pytest.mark.parametrize('host', [u'node\ud800', u'node\udcff', u'a\x00b', u'node1\u00b2'])
def test_json_is_valid_utf8_and_keeps_the_host(host):
    record = model.normalize_record({'host': host, 'rack': 'r', 'pre_check': PASS})
    text = model.render_json(model.build_report([record]))
    # no lone surrogate left: the files can be written as UTF-8
    text.encode('utf-8')
    model.render_host_json(record).encode('utf-8')
    assert json.loads(model.render_host_json(record))['host'] == host
    assert json.loads(text)['racks'][0]['hosts'][0]['host'] == host


@pytest.mark.parametrize('field', R.FIELDS)
@pytest.mark.parametrize('value', R.CONTROL_VALUES)
def test_json_keeps_control_characters_as_escapes(field, value):
    record, title = R.record_with(field, value)
    text = model.render_json(model.build_report([record], title))
    text.encode('utf-8')
    doc = json.loads(text)
    assert doc['racks'][0]['hosts'][0]['host'] == record['host']
    assert doc['title'] == title


# ---------------------------------------------------------------- rollout records from registered results

def test_rollout_record_from_registered_results():
    record = model.normalize_record(R.rollout(pre_check=R.registered(deferred=[R.deferred()])))
    assert record['status'] == 'provisioned'
    assert record['pre_check'] == {'passed': True, 'failures': [], 'deferred': [R.deferred()]}
    assert record['post_check'] == {'passed': True, 'failures': [], 'regressions': []}
    assert record['reboot'] is None
    assert record['error'] is None and record['unreachable'] is False and record['held_back'] is False
    # the raw inputs the report decided from are not kept, the roles are
    assert 'errors' not in record and 'gather' not in record and 'reboot_required' not in record
    assert record['roles'] == ['mps']
    assert set(model._public(record)) == set(model.RECORD_KEYS)


@pytest.mark.parametrize('steps, status, reason', [
    # held back: a rollout record whose pre-change check failed
    ({'pre_check': R.registered(False, [R.failure()]), 'changes': {}, 'reboot_required': {}, 'post_check': {}},
     'held_back', 'links down'),
    # unreachable at any step, with the connection's message
    ({'gather': {'unreachable': True, 'msg': 'ssh: no route', 'changed': False}, 'pre_check': {'skipped': True},
      'post_check': None}, 'unreachable', 'ssh: no route'),
    ({'pre_check': {'unreachable': True, 'msg': 'lost', 'changed': False}, 'post_check': None},
     'unreachable', 'lost'),
    ({'post_check': {'unreachable': True, 'changed': False}}, 'unreachable', 'host unreachable'),
    # a failed step: the rescue's message in errors; the failed result itself counts as not run
    ({'errors': ['Check GPU topology: invalid expected profile'], 'pre_check': {'failed': True, 'msg': 'invalid'},
      'post_check': None}, 'failed', 'Check GPU topology: invalid expected profile'),
    ({'errors': ['mps : Write the setting: disk full'], 'changes': {'mps': None}}, 'failed',
     'mps : Write the setting: disk full'),
    ({'post_check': R.registered(False, regressions=[R.regression()]), 'errors': ['mps : x: y']}, 'regressed',
     'mps : x: y; port went down'),
    ({'post_check': R.registered(False, [R.failure(message='GPU0 compute mode')])}, 'failed', 'GPU0 compute mode'),
    # reboot: asked and not done (not allowed) -> waits for it; asked and done -> provisioned
    ({'reboot_required': {'mps': True}, 'post_check': {'skipped': True}}, 'reboot_required',
     'reboot required by mps, not rebooted'),
    ({'reboot_required': {'mps': True}, 'reboot': {'changed': True, 'rebooted': True, 'elapsed': 12}},
     'provisioned', 'provisioned'),
    # a role failed after another asked for a reboot: failed, not waiting
    ({'reboot_required': {'mps': True, 'drv': False}, 'errors': ['drv : install: no package'],
      'post_check': R.registered()},
     'failed', 'drv : install: no package; reboot required by mps, not rebooted'),
    # the reboot failed: the rescue's message
    ({'reboot_required': {'mps': True}, 'reboot': {'failed': True, 'rebooted': False, 'msg': 'timed out'},
      'errors': ['Reboot the host: timed out'], 'post_check': {'unreachable': True}}, 'unreachable',
     'Reboot the host: timed out; reboot required by mps, not rebooted'),
    # a rollout record whose post-change check did not run, without a reason, failed
    ({'post_check': {'skipped': True}}, 'failed', 'the post-change check did not run'),
    # the host left the play before its record was closed
    ({'phase': 'started', 'pre_check': None, 'post_check': None}, 'failed',
     'the host left the play before its record was complete (phase started)'),
])
def test_rollout_statuses(steps, status, reason):
    record = model.normalize_record(R.rollout(**steps))
    assert record['status'] == status
    assert model.host_reason(record) == reason


def test_validation_record_is_never_held_back():
    # validate.yml: no roles, the check failed: failed, not held back
    record = model.normalize_record({'host': 'h', 'phase': 'done', 'errors': [],
                                     'pre_check': R.registered(False, [R.failure()])})
    assert (record['status'], record['held_back'], record['roles']) == ('failed', False, None)
    assert model.normalize_record({'host': 'h', 'phase': 'done', 'pre_check': R.registered()})['status'] == 'validated'


def test_reboot_summary():
    record = model.normalize_record(R.rollout(reboot_required={'b_role': True, 'a_role': 'yes', 'c': False}))
    assert record['reboot'] == {'required_by': ['a_role', 'b_role'], 'rebooted': False}
    # a normalized record reads back the same
    again = model.normalize_record(dict(model._public(record), roles=record['roles']))
    assert again['reboot'] == record['reboot'] and again['status'] == 'reboot_required'


def test_reboot_run_statuses():
    report = model.build_report(R.reboot_run())
    assert [(h['host'], h['status']) for h in report['racks'][0]['hosts']] == [('a', 'provisioned'),
                                                                               ('b', 'reboot_required')]
    assert report['summary']['reboot_required'] == 1 and report['check_mode'] is False


@pytest.mark.parametrize('record', [
    {'host': 'h', 'roles': 'mps'},
    {'host': 'h', 'reboot_required': ['mps']},
    {'host': 'h', 'reboot_required': {'mps': 'maybe'}},
    {'host': 'h', 'reboot': 'yes'},
    {'host': 'h', 'gather': 'ok'},
    {'host': 'h', 'pre_check': {'passed': True, 'deferred': 'compute_mode'}},
    {'host': 'h', 'check_mode': 'perhaps'},
])
def test_invalid_rollout_records(record):
    with pytest.raises(model.ReportError):
        model.normalize_record(record)


def test_errors_join_and_error():
    record = model.normalize_record({'host': 'h', 'errors': ['a: b', None, ''], 'error': 'c'})
    assert record['error'] == 'a: b; c'
    assert model.normalize_record({'host': 'h', 'errors': 'one'})['error'] == 'one'


def test_not_started_hosts_from_racks():
    records, racks = R.not_started_run()
    report = model.build_report(records, 'T', racks)
    statuses = dict((h['host'], (h['rack'], h['status'])) for r in report['racks'] for h in r['hosts'])
    assert statuses == {'h1': ('rack_1', 'provisioned'), 'h2': ('rack_1', 'failed'),
                        'h3': ('rack_2', 'not_started'), 'h4': ('rack_2', 'not_started')}
    assert report['summary']['not_started'] == 2 and report['summary']['healthy'] is False
    h3 = report['racks'][1]['hosts'][0]
    assert model.host_reason(h3) == 'not started: the rollout stopped before rack rack_2'
    # a host with a record keeps it, whatever racks says
    report = model.build_report(records, racks={'rack_9': ['h1']})
    assert [(r['name'], [h['host'] for h in r['hosts']]) for r in report['racks']] == [('rack_1', ['h1', 'h2'])]


@pytest.mark.parametrize('racks', [['h1'], {'rack_1': 'h1'}])
def test_invalid_racks(racks):
    with pytest.raises(model.ReportError):
        model.build_report([], racks=racks)


def test_failing_hosts():
    records = [
        R.rollout(host='ok'),
        R.rollout(host='held', pre_check=R.registered(False, [R.failure(message='GPU3 links down')]), post_check=None),
        R.rollout(host='boot', reboot_required={'mps': True}, post_check={'skipped': True}),
        R.rollout(host='bad', errors=['mps : Write: denied']),
        R.rollout(host='gone', post_check={'unreachable': True, 'msg': 'Connection refused'}),
        R.rollout(host='worse', post_check=R.registered(False, regressions=[R.regression()])),
    ]
    report = model.build_report(records, racks={'r': ['ok', 'held', 'boot', 'bad', 'gone', 'worse', 'later']})
    assert model.failing_hosts(report) == {'bad': 'mps : Write: denied', 'gone': 'Connection refused',
                                           'worse': 'port went down'}
    assert model.failing_hosts(report, fail_held_back=True, fail_reboot_required=True) == {
        'bad': 'mps : Write: denied', 'gone': 'Connection refused', 'worse': 'port went down',
        'held': 'GPU3 links down', 'boot': 'reboot required by mps, not rebooted'}


def test_check_mode_is_in_the_report_and_its_json():
    records = [R.rollout(check_mode=True, changes={'mps': 2}, reboot_required={'mps': True},
                         reboot={'changed': True, 'rebooted': True, 'elapsed': 0})]
    report = model.build_report(records)
    assert report['check_mode'] is True and json.loads(model.render_json(report))['check_mode'] is True
    assert report['racks'][0]['hosts'][0]['status'] == 'provisioned'
    assert model.build_report([R.rollout()])['check_mode'] is False


@pytest.mark.parametrize('required_by', [[None], 5, ['']])
def test_reboot_required_by_that_is_not_role_names_is_a_clean_error(required_by):
    from ansible_collections.gpuops.node.plugins.module_utils.report.model import ReportError, normalize_record
    record = {'host': 'gpu-a01', 'rack': 'rack_a', 'reboot': {'required_by': required_by, 'rebooted': False}}
    with pytest.raises(ReportError) as err:
        normalize_record(record)
    assert 'reboot.required_by must be a list of role names' in str(err.value)
