# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Acceptance gates in the rack report (module_utils/report/gates.py through model.py and render.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.report import render
from ansible_collections.gpuops.node.plugins.module_utils.report import gates

PASS = {'passed': True, 'failures': []}
POST_PASS = {'passed': True, 'failures': [], 'regressions': []}
DIAG_FAIL = {'check': 'dcgm_diag', 'subject': 'GPU 1', 'expected': 'Pass', 'actual': 'Fail',
             'message': 'Memtest: a memory error was found on GPU 1'}
GATE_PASS = {'name': 'dcgm_diag', 'ran': True, 'passed': True, 'summary': 'level 1: 9 tests Pass on 8 GPUs',
             'failures': []}
GATE_FAIL = {'name': 'dcgm_diag', 'ran': True, 'passed': False, 'summary': 'level 1: Fail', 'failures': [DIAG_FAIL]}
BW_PASS = {'name': 'nccl_busbw', 'ran': True, 'passed': True, 'summary': '462.3 GB/s >= 400', 'failures': []}
NOT_RUN = {'name': 'nccl_busbw', 'ran': False, 'passed': None, 'summary': 'not run: no nccl_test_command',
           'failures': []}


def _record(gate_map, post=None):
    post = POST_PASS if post is None else post
    return {'host': 'gpu-a01', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'phase': 'done', 'roles': ['dcgm', 'nccl'],
            'pre_check': PASS, 'changes': {'dcgm': 3, 'nccl': 2}, 'post_check': post, 'gates': gate_map}


# (gates, status, failed gate names, reason contains)
CASES = [
    ({'dcgm': GATE_PASS, 'nccl': BW_PASS}, 'provisioned', [], None),
    ({'dcgm': GATE_PASS, 'nccl': NOT_RUN}, 'provisioned', [], None),
    ({'dcgm': GATE_FAIL, 'nccl': BW_PASS}, 'failed', ['dcgm_diag'], 'gate dcgm_diag failed: Memtest'),
    # a gate that ran without a verdict, or reported nothing at all, is never a pass
    ({'dcgm': dict(GATE_PASS, passed=None)}, 'failed', ['dcgm_diag'], 'gate dcgm_diag failed'),
    ({'dcgm': None}, 'failed', ['dcgm'], 'reported nothing'),
    ({}, 'provisioned', [], None),
    (None, 'provisioned', [], None),
]


@pytest.mark.parametrize('gate_map,status,failed,reason', CASES)
def test_status_and_reason(gate_map, status, failed, reason):
    report = model.build_report([_record(gate_map)])
    record = report['racks'][0]['hosts'][0]
    assert record['status'] == status
    assert [g['name'] for g in gates.failed(record['gates'])] == failed
    failing = model.failing_hosts(report)
    if reason:
        assert reason in failing['gpu-a01']
    else:
        assert failing == {}


def test_markdown_shows_every_gate_and_the_failure():
    out = render.render_all([_record({'dcgm': GATE_FAIL, 'nccl': BW_PASS})])[1]
    md = out['markdown']
    assert '| gpu-a01 | dgx_h100 | failed | PASS | dcgm: 3, nccl: 2 | PASS | 0 | dcgm_diag FAIL, nccl_busbw PASS |' in md
    assert '## Acceptance gates' in md
    assert '| gpu-a01 | nccl_busbw | PASS | 462.3 GB/s &gt;= 400 |' in md
    assert 'Acceptance gate failures:' in md
    assert '| dcgm_diag | GPU 1 | `Pass` | `Fail` | Memtest: a memory error was found on GPU 1 |' in md


def test_junit_has_a_case_per_gate():
    out = render.render_all([_record({'dcgm': GATE_FAIL, 'nccl': NOT_RUN})])[1]
    root = ET.fromstring(out['junit'].encode('utf-8'))
    cases = dict((c.get('name'), c) for c in root.iter('testcase'))
    assert cases['gate_dcgm_diag'].find('failure') is not None
    assert 'GPU 1' in cases['gate_dcgm_diag'].find('failure').text
    assert cases['gate_nccl_busbw'].find('skipped').get('message') == 'not run: no nccl_test_command'


def test_json_keeps_the_gates_and_reads_them_back():
    out = render.render_all([_record({'dcgm': GATE_FAIL})])[1]
    host = json.loads(out['json'])['racks'][0]['hosts'][0]
    assert host['gates'][0]['name'] == 'dcgm_diag' and host['gates'][0]['passed'] is False
    # a record read back from the report normalizes to the same gates
    again = model.build_report([dict(_record(None), gates=host['gates'])])
    assert again['racks'][0]['hosts'][0]['gates'] == host['gates']


def test_gates_without_the_post_check_do_not_pass_a_host():
    post = {'passed': False, 'failures': ['x'], 'regressions': []}
    report = model.build_report([_record({'dcgm': GATE_PASS}, post=post)])
    assert report['racks'][0]['hosts'][0]['status'] == 'failed'


@pytest.mark.parametrize('bad', [['x'], 'dcgm', {'dcgm': 'pass'}, {'dcgm': dict(GATE_PASS, ran='maybe')}])
def test_bad_gates_are_refused(bad):
    with pytest.raises(model.ReportError):
        model.build_report([_record(bad)])
