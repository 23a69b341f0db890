# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import model


def _failure(check='nvlink_active_links', subject='GPU3', expected=18, actual=16, message='links down'):
    return {'check': check, 'subject': subject, 'expected': expected, 'actual': actual, 'message': message}


def _regression(check='nic_port_down', subject='mlx5_3/1', before='ACTIVE', after='DOWN', message='port went down'):
    return {'check': check, 'subject': subject, 'before': before, 'after': after, 'message': message}


PASS = {'passed': True, 'failures': []}
POST_PASS = {'passed': True, 'failures': [], 'regressions': []}


@pytest.fixture
def records():
    return [
        {'host': 'gpu-a10', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'pre_check': PASS,
         'changes': {'nvidia_driver': 3, 'mofed': False}, 'post_check': POST_PASS, 'phase': 'done'},
        {'host': 'gpu-a2', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'held_back': True,
         'pre_check': {'passed': False, 'failures': [_failure(), _failure('gpu_count', None, 8, 7, 'GPU | lost')]},
         'phase': 'done', 'gpu_topology': {'gpu_count': 7}},
        {'host': 'gpu-b1', 'rack': 'rack_b', 'node_class': 'hgx_a100', 'pre_check': PASS,
         'changes': {'nvidia_driver': True},
         'post_check': {'passed': False, 'failures': [], 'regressions': [_regression()]}, 'phase': 'done'},
        {'host': 'gpu-b2', 'rack': 'rack_b', 'node_class': 'pcie_l40s', 'unreachable': True,
         'error': 'Failed to connect to the host via ssh'},
        {'host': 'gpu-b3', 'rack': 'rack_b', 'node_class': 'pcie_l40s', 'pre_check': PASS,
         'error': 'task "Install driver" failed: <no package>', 'phase': 'changes'},
    ]


def test_derive_status(records):
    report = model.build_report(records)
    status = dict((h['host'], h['status']) for r in report['racks'] for h in r['hosts'])
    assert status == {'gpu-a10': 'provisioned', 'gpu-a2': 'held_back', 'gpu-b1': 'regressed',
                      'gpu-b2': 'unreachable', 'gpu-b3': 'failed'}


@pytest.mark.parametrize('record, expected', [
    ({'host': 'h', 'pre_check': PASS}, 'validated'),
    ({'host': 'h', 'pre_check': {'passed': False, 'failures': [_failure()]}}, 'failed'),
    ({'host': 'h'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'phase': 'changes'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'post_check': {'passed': False, 'failures': [_failure()]}}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'post_check': POST_PASS, 'error': 'boom'}, 'failed'),
    ({'host': 'h', 'pre_check': PASS, 'error': 'boom',
      'post_check': {'passed': False, 'regressions': [_regression()]}}, 'regressed'),
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
    report, out = model.render_all([])
    assert report['summary']['hosts'] == 0 and not report['summary']['healthy']
    assert 'No hosts were reported.' in out['markdown']
    assert ET.fromstring(out['junit'].encode('utf-8')).get('tests') == '0'


def test_json(records):
    _report, out = model.render_all(records)
    doc = json.loads(out['json'])
    assert doc['summary']['hosts'] == 5
    hosts = [h for r in doc['racks'] for h in r['hosts']]
    assert all('gpu_topology' not in h for h in hosts)
    assert set(hosts[0]) == set(model.RECORD_KEYS)


def test_host_json_keeps_extra_keys(records):
    record = model.normalize_record(records[1])
    doc = json.loads(model.render_host_json(record))
    assert doc['gpu_topology'] == {'gpu_count': 7}
    assert doc['status'] == 'held_back'


def test_markdown(records):
    _report, out = model.render_all(records, 'Night | run')
    md = out['markdown']
    assert md.startswith('# Night \\| run\n')
    assert '**NOT HEALTHY** - 5 hosts: 1 passed, 1 held back, 1 regressed, 1 failed, 1 unreachable.' in md
    assert '## Rack rack_a' in md and '## Rack rack_b' in md
    assert '| Host | Class | Status | Pre-check | Changes | Post-check | Regressions | Gates |' in md
    assert '| gpu-a10 | dgx_h100 | provisioned | PASS | mofed: ok, nvidia_driver: 3 | PASS | 0 |' in md
    assert '| gpu-a2 | dgx_h100 | held_back | FAIL (2) | held back | - | - |' in md
    assert '| gpu-b1 | hgx_a100 | regressed | PASS | nvidia_driver: changed | FAIL | 1 |' in md
    assert '| gpu-b2 | pcie_l40s | unreachable | not run | - | - | - |' in md
    # details: every failure with check, subject, expected, actual, message; pipes escaped
    assert '| nvlink_active_links | GPU3 | `18` | `16` | links down |' in md
    assert '| gpu_count |  | `8` | `7` | GPU \\| lost |' in md
    assert '| nic_port_down | mlx5_3/1 | `ACTIVE` | `DOWN` | port went down |' in md
    assert 'Error: task "Install driver" failed: &lt;no package&gt;' in md
    assert 'Host unreachable.' in md
    assert '### gpu-a10' not in md
    # every table row of the summary has the same number of cells
    for line in md.splitlines():
        if line.startswith('| gpu-'):
            assert line.replace('\\|', '').count('|') == 9


def test_markdown_healthy():
    _report, out = model.render_all([{'host': 'h1', 'rack': 'r', 'pre_check': PASS}])
    assert '**HEALTHY**' in out['markdown']
    assert 'No failures, regressions or errors.' in out['markdown']


def test_junit_valid_and_counts(records):
    _report, out = model.render_all(records, 'Rollout & <tests>')
    assert out['junit'].startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(out['junit'].encode('utf-8'))
    assert root.tag == 'testsuites'
    assert root.get('name') == 'Rollout & <tests>'
    suites = root.findall('testsuite')
    assert [s.get('name') for s in suites] == ['rack_a', 'rack_b']
    cases = dict(((c.get('classname'), c.get('name')), c) for s in suites for c in s.findall('testcase'))
    assert sorted(cases) == sorted([
        ('rack_a.gpu-a2', 'pre_check'), ('rack_a.gpu-a2', 'post_check'),
        ('rack_a.gpu-a10', 'pre_check'), ('rack_a.gpu-a10', 'post_check'),
        ('rack_b.gpu-b1', 'pre_check'), ('rack_b.gpu-b1', 'post_check'),
        ('rack_b.gpu-b2', 'pre_check'),
        ('rack_b.gpu-b3', 'pre_check'), ('rack_b.gpu-b3', 'post_check'),
    ])
    assert len(cases[('rack_a.gpu-a10', 'pre_check')]) == 0
    failure = cases[('rack_a.gpu-a2', 'pre_check')].find('failure')
    assert failure.get('message') == '2 check(s) failed: gpu_count, nvlink_active_links'
    assert 'nvlink_active_links GPU3: expected 18, actual 16 - links down' in failure.text
    assert cases[('rack_a.gpu-a2', 'post_check')].find('skipped') is not None
    regression = cases[('rack_b.gpu-b1', 'post_check')].find('failure')
    assert regression.get('type') == 'regression'
    assert 'nic_port_down mlx5_3/1: before ACTIVE, after DOWN' in regression.text
    assert cases[('rack_b.gpu-b2', 'pre_check')].find('error').get('message') == 'host unreachable'
    assert 'Install driver' in cases[('rack_b.gpu-b3', 'post_check')].find('error').get('message')
    assert (root.get('tests'), root.get('failures'), root.get('errors'), root.get('skipped')) == ('9', '2', '2', '1')
    assert (suites[1].get('tests'), suites[1].get('failures'), suites[1].get('errors')) == ('5', '1', '2')


def test_junit_strips_illegal_characters():
    record = {'host': 'h.example.org', 'rack': 'r', 'pre_check': {
        'passed': False, 'failures': [_failure(message=u'bad\x00byte \x1b[31m\u00e9')]}}
    _report, out = model.render_all([record])
    root = ET.fromstring(out['junit'].encode('utf-8'))
    case = root.find('testsuite/testcase')
    assert case.get('classname') == 'r.h_example_org'
    assert u'\u00e9' in case.find('failure').text


def test_rendering_is_deterministic(records):
    first = model.render_all(records)[1]
    second = model.render_all(list(reversed(records)))[1]
    assert first == second


def test_changes_normalization():
    record = model.normalize_record({'host': 'h', 'changes': {'a': '2', 'b': 1.0, 'c': None, 'd': 'yes', 'e': False}})
    # None: the role did not say (it failed before reporting, or does not follow the contract)
    assert record['changes'] == {'a': 2, 'b': 1, 'c': None, 'd': True, 'e': False}
    assert model.changes_text(record) == 'a: 2, b: 1, c: not reported, d: changed, e: ok'


def test_junit_failed_change_is_an_error():
    record = {'host': 'h', 'rack': 'r', 'pre_check': PASS, 'post_check': POST_PASS, 'phase': 'done',
              'error': 'Install driver: non-zero return code', 'changes': {'nvidia_driver': 1}}
    report, out = model.render_all([record])
    assert report['summary']['failed'] == 1
    cases = model.ET.fromstring(out['junit'].encode('utf-8')).findall('testsuite/testcase')
    assert [c.get('name') for c in cases] == ['pre_check', 'changes', 'post_check']
    assert cases[1].find('error').get('message') == 'Install driver: non-zero return code'
    assert cases[2].find('failure') is None


# ---------------------------------------------------------------- odd names and control characters

# what must never reach the Markdown (line ends only between lines)
_MD_FORBIDDEN = re.compile(u'[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
# what must never reach the JUnit XML, in attributes and text
_XML_FORBIDDEN = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]')


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
    model.render_all([{'host': h, 'rack': h} for h in hosts])


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


@pytest.mark.parametrize('value, expected', [
    (u'a\x00b', u'a\ufffdb'),
    (u'a\x1b[31mred\x1b[0m', u'a\ufffd[31mred\ufffd[0m'),
    (u'a\x07\x08b', u'a\ufffd\ufffdb'),
    (u'a\x1cb\x1f', u'a\ufffdb\ufffd'),
    (u'a\x7fb', u'a\ufffdb'),
    (u'a\x9b31mb', u'a\ufffd31mb'),
    (u'a\u202eb\u2066c\u2069', u'a\ufffdb\ufffdc\ufffd'),
    (u'a\ud800b', u'a\ufffdb'),
    (u'a\tb', u'a b'),
    (u'a \r\n b', u'a b'),
    (u'a\x0bb\x0cc', u'a b c'),
    (u'a\x85b', u'a b'),
    (u'a\u2028b\u2029c', u'a b c'),
    (u'\n\x00\n', u'\ufffd'),
    (u'\n\t \n', u''),
    (u'a  b', u'a  b'),
    (u'caf\u00e9 \u00b2', u'caf\u00e9 \u00b2'),
])
def test_markdown_cell_controls(value, expected):
    assert model._cell(value) == expected
    assert model._cell(value, code=True) == (u'`%s`' % expected if expected else u'')


_FIELDS = ['title', 'host', 'rack', 'node_class', 'error', 'change', 'check', 'subject', 'expected', 'actual',
           'message', 'before', 'after', 'regression_message']


def _record_with(field, value):
    failure = _failure()
    regression = _regression()
    record = {'host': 'h', 'rack': 'r', 'node_class': 'c', 'pre_check': PASS, 'changes': {'driver': 1},
              'post_check': {'passed': False, 'failures': [failure], 'regressions': [regression]},
              'error': 'boom', 'phase': 'done'}
    title = 'T'
    if field == 'title':
        title = value
    elif field in ('host', 'rack', 'node_class', 'error'):
        record[field] = value
    elif field == 'change':
        record['changes'] = {value: 2}
    elif field in ('before', 'after'):
        regression[field] = value
    elif field == 'regression_message':
        regression['message'] = value
    else:
        failure[field] = value
    return record, title


@pytest.mark.parametrize('field', _FIELDS)
@pytest.mark.parametrize('value', [
    u'x\x00y', u'x\x1b[31my\x1b[0m', u'x\x1b]0;title\x07y', u'x\ry', u'x\x7fy', u'x\x9by', u'x\u2028y',
    u'x\u2029y', u'x\u202ey', u'x\ud800y',
])
def test_no_control_character_reaches_markdown_or_junit(field, value):
    record, title = _record_with(field, value)
    report, out = model.render_all([record], title)
    md = out['markdown']
    assert not _MD_FORBIDDEN.search(md), repr(md)
    md.encode('utf-8')
    for line in md.splitlines():
        if line.startswith(u'| ') and not line.startswith(u'| ---'):
            assert line.replace(u'\\|', u'').count(u'|') in (5, 6, 9), line
    # the value is there, made harmless, where it belongs
    shown = model._cell(value)
    assert u'\ufffd' in shown or u' ' in shown
    assert shown in md
    junit = out['junit']
    assert not _XML_FORBIDDEN.search(junit), repr(junit)
    root = ET.fromstring(junit.encode('utf-8'))
    for elem in root.iter():
        for text in list(elem.attrib.values()) + [elem.text or u'']:
            assert not _XML_FORBIDDEN.search(text)
    assert json.loads(out['json'])['racks'][0]['hosts'][0]['host'] == record['host']
    out['json'].encode('utf-8')


@pytest.mark.parametrize('host, classname', [
    (u'a\x00b.example', u'r.a\ufffdb_example'),
    (u'a\x1b[31mb', u'r.a\ufffd[31mb'),
    (u'a\x7fb', u'r.a\ufffdb'),
    (u'a\x85b', u'r.a\ufffdb'),
    (u'a\u202eb', u'r.a\ufffdb'),
    (u'a\ud800b', u'r.a\ufffdb'),
    (u'node1\u00b2', u'r.node1\u00b2'),
])
def test_junit_classname_controls(host, classname):
    _report, out = model.render_all([{'host': host, 'rack': 'r', 'pre_check': PASS}])
    assert ET.fromstring(out['junit'].encode('utf-8')).find('testsuite/testcase').get('classname') == classname


@pytest.mark.parametrize('host', [u'node\ud800', u'node\udcff', u'a\x00b', u'node1\u00b2'])
def test_json_is_valid_utf8_and_keeps_the_host(host):
    record = model.normalize_record({'host': host, 'rack': 'r', 'pre_check': PASS})
    _report, out = model.render_all([record])
    # no lone surrogate left: the files can be written as UTF-8
    out['json'].encode('utf-8')
    model.render_host_json(record).encode('utf-8')
    assert json.loads(model.render_host_json(record))['host'] == host
    assert json.loads(out['json'])['racks'][0]['hosts'][0]['host'] == host


# ---------------------------------------------------------------- rollout records from registered results

def _deferred(check='compute_mode', role='mps'):
    return {'check': check, 'key': check, 'role': role, 'why': 'converged by the %s role in this run' % role}


def _registered(passed=True, failures=None, regressions=None, deferred=None):
    """A gpu_topology_check result as a playbook registers it, bulky keys included."""
    return {'changed': False, 'passed': passed, 'failures': failures or [], 'regressions': regressions or [],
            'deferred': deferred or [], 'baseline_gaps': [], 'gpu_topology': {'gpu_count': 8},
            'invocation': {'module_args': {'expected': {'gpu_count': 8}}}, 'msg': '0 failure(s)'}


def _rollout(**steps):
    record = {'host': 'h', 'rack': 'r', 'node_class': 'c', 'phase': 'done', 'check_mode': False, 'errors': [],
              'gather': {'changed': False}, 'pre_check': _registered(), 'roles': ['mps'], 'changes': {'mps': 0},
              'reboot_required': {'mps': False}, 'reboot': {'skipped': True, 'skip_reason': 'Conditional result was False'},
              'post_check': _registered()}
    record.update(steps)
    return record


def test_rollout_record_from_registered_results():
    record = model.normalize_record(_rollout(pre_check=_registered(deferred=[_deferred()])))
    assert record['status'] == 'provisioned'
    assert record['pre_check'] == {'passed': True, 'failures': [], 'deferred': [_deferred()]}
    assert record['post_check'] == {'passed': True, 'failures': [], 'regressions': []}
    assert record['reboot'] is None
    assert record['error'] is None and record['unreachable'] is False and record['held_back'] is False
    # the raw inputs the report decided from are not kept, the roles are
    assert 'errors' not in record and 'gather' not in record and 'reboot_required' not in record
    assert record['roles'] == ['mps']
    assert set(model._public(record)) == set(model.RECORD_KEYS)


@pytest.mark.parametrize('steps, status, reason', [
    # held back: a rollout record whose pre-change check failed
    ({'pre_check': _registered(False, [_failure()]), 'changes': {}, 'reboot_required': {}, 'post_check': {}},
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
    ({'post_check': _registered(False, regressions=[_regression()]), 'errors': ['mps : x: y']}, 'regressed',
     'mps : x: y; port went down'),
    ({'post_check': _registered(False, [_failure(message='GPU0 compute mode')])}, 'failed', 'GPU0 compute mode'),
    # reboot: asked and not done (not allowed) -> waits for it; asked and done -> provisioned
    ({'reboot_required': {'mps': True}, 'post_check': {'skipped': True}}, 'reboot_required',
     'reboot required by mps, not rebooted'),
    ({'reboot_required': {'mps': True}, 'reboot': {'changed': True, 'rebooted': True, 'elapsed': 12}},
     'provisioned', 'provisioned'),
    # a role failed after another asked for a reboot: failed, not waiting
    ({'reboot_required': {'mps': True, 'drv': False}, 'errors': ['drv : install: no package'], 'post_check': _registered()},
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
    record = model.normalize_record(_rollout(**steps))
    assert record['status'] == status
    assert model.host_reason(record) == reason


def test_validation_record_is_never_held_back():
    # validate.yml: no roles, the check failed: failed, not held back
    record = model.normalize_record({'host': 'h', 'phase': 'done', 'errors': [], 'pre_check': _registered(False, [_failure()])})
    assert (record['status'], record['held_back'], record['roles']) == ('failed', False, None)
    assert model.normalize_record({'host': 'h', 'phase': 'done', 'pre_check': _registered()})['status'] == 'validated'


def test_reboot_summary():
    record = model.normalize_record(_rollout(reboot_required={'b_role': True, 'a_role': 'yes', 'c': False}))
    assert record['reboot'] == {'required_by': ['a_role', 'b_role'], 'rebooted': False}
    # a normalized record reads back the same
    again = model.normalize_record(dict(model._public(record), roles=record['roles']))
    assert again['reboot'] == record['reboot'] and again['status'] == 'reboot_required'


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
    racks = {'rack_1': ['h1', 'h2'], 'rack_2': ['h3', 'h4']}
    records = [_rollout(host='h1', rack='rack_1'), _rollout(host='h2', rack='rack_1', errors=['x: boom'])]
    report, out = model.render_all(records, 'T', racks)
    statuses = dict((h['host'], (h['rack'], h['status'])) for r in report['racks'] for h in r['hosts'])
    assert statuses == {'h1': ('rack_1', 'provisioned'), 'h2': ('rack_1', 'failed'),
                        'h3': ('rack_2', 'not_started'), 'h4': ('rack_2', 'not_started')}
    assert report['summary']['not_started'] == 2 and report['summary']['healthy'] is False
    md = out['markdown']
    assert '**NOT HEALTHY** - 4 hosts: 1 passed, 0 held back, 0 regressed, 1 failed, 0 unreachable, 2 not started.' in md
    assert 'Not started: 2 hosts in rack_2; the rollout had not reached them when this report was written.' in md
    assert '| h3 | - | not_started | not started | - | - | - |' in md
    assert '### h3' not in md
    root = ET.fromstring(out['junit'].encode('utf-8'))
    skipped = [c for c in root.iter('testcase') if c.find('skipped') is not None]
    assert [(c.get('classname'), c.get('name')) for c in skipped] == [('rack_2.h3', 'pre_check'), ('rack_2.h4', 'pre_check')]
    assert skipped[0].find('skipped').get('message') == 'not started: the rollout stopped before rack rack_2'
    # a host with a record keeps it, whatever racks says
    report = model.build_report(records, racks={'rack_9': ['h1']})
    assert [(r['name'], [h['host'] for h in r['hosts']]) for r in report['racks']] == [('rack_1', ['h1', 'h2'])]


@pytest.mark.parametrize('racks', [['h1'], {'rack_1': 'h1'}])
def test_invalid_racks(racks):
    with pytest.raises(model.ReportError):
        model.build_report([], racks=racks)


def test_failing_hosts():
    records = [
        _rollout(host='ok'),
        _rollout(host='held', pre_check=_registered(False, [_failure(message='GPU3 links down')]), post_check=None),
        _rollout(host='boot', reboot_required={'mps': True}, post_check={'skipped': True}),
        _rollout(host='bad', errors=['mps : Write: denied']),
        _rollout(host='gone', post_check={'unreachable': True, 'msg': 'Connection refused'}),
        _rollout(host='worse', post_check=_registered(False, regressions=[_regression()])),
    ]
    report = model.build_report(records, racks={'r': ['ok', 'held', 'boot', 'bad', 'gone', 'worse', 'later']})
    assert model.failing_hosts(report) == {'bad': 'mps : Write: denied', 'gone': 'Connection refused',
                                         'worse': 'port went down'}
    assert model.failing_hosts(report, fail_held_back=True, fail_reboot_required=True) == {
        'bad': 'mps : Write: denied', 'gone': 'Connection refused', 'worse': 'port went down',
        'held': 'GPU3 links down', 'boot': 'reboot required by mps, not rebooted'}


def test_markdown_rollout_details():
    records = [
        _rollout(host='a', pre_check=_registered(deferred=[_deferred('driver_loaded', 'nvidia_driver'),
                                                           _deferred('driver_version', 'nvidia_driver'),
                                                           _deferred()]),
                 roles=['nvidia_driver', 'mps'], changes={'nvidia_driver': 4, 'mps': 1},
                 reboot_required={'nvidia_driver': True}, reboot={'rebooted': True, 'elapsed': 90}),
        _rollout(host='b', changes={'mps': 2}, reboot_required={'mps': True}, post_check={'skipped': True}),
    ]
    md = model.render_all(records)[1]['markdown']
    assert '| a | c | provisioned | PASS (3 deferred) | mps: 1, nvidia_driver: 4; rebooted | PASS | 0 |' in md
    assert '| b | c | reboot_required | PASS | mps: 2; reboot required | after reboot | - |' in md
    assert '2 hosts: 1 passed, 0 held back, 0 regressed, 0 failed, 0 unreachable, 1 waiting for a reboot.' in md
    assert '## Deferred to the post-change check' in md
    assert '| a | compute_mode, driver_loaded, driver_version | mps, nvidia_driver |' in md
    assert '### b (r, c): reboot_required' in md
    assert 'Waiting for a reboot required by mps; the post-change check runs after it.' in md
    assert 'Check mode' not in md
    cases = dict(((c.get('classname'), c.get('name')), c)
                 for c in ET.fromstring(model.render_junit(model.build_report(records)).encode('utf-8')).iter('testcase'))
    assert len(cases[('r.a', 'reboot')]) == 0
    assert cases[('r.b', 'reboot')].find('skipped').get('message') == 'reboot required by mps, not rebooted'
    assert cases[('r.b', 'post_check')].find('skipped').get('message') == 'runs after the reboot'


def test_markdown_check_mode():
    records = [_rollout(check_mode=True, changes={'mps': 2}, reboot_required={'mps': True},
                        reboot={'changed': True, 'rebooted': True, 'elapsed': 0})]
    report, out = model.render_all(records)
    assert report['check_mode'] is True and json.loads(out['json'])['check_mode'] is True
    md = out['markdown']
    assert md.splitlines()[2] == ('**Check mode: nothing changed.** Changes, reboots and statuses are what a real run '
                                  'would do.')
    assert '| h | c | provisioned | PASS | would change mps: 2; would reboot | PASS | 0 |' in md
    assert model.render_all([_rollout()])[0]['check_mode'] is False


@pytest.mark.parametrize('required_by', [[None], 5, ['']])
def test_reboot_required_by_that_is_not_role_names_is_a_clean_error(required_by):
    from ansible_collections.gpuops.node.plugins.module_utils.report.model import ReportError, normalize_record
    record = {'host': 'gpu-a01', 'rack': 'rack_a', 'reboot': {'required_by': required_by, 'rebooted': False}}
    with pytest.raises(ReportError) as err:
        normalize_record(record)
    assert 'reboot.required_by must be a list of role names' in str(err.value)
