# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report/junit.py: the rack report as JUnit XML, one testcase per host and step, valid XML whatever the names."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import junit
from ansible_collections.gpuops.node.plugins.module_utils.report import model

import report_records as R
from report_records import PASS, POST_PASS

# what must never reach the JUnit XML, in attributes and text
_XML_FORBIDDEN = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]')


def _junit(records, title=None, racks=None):
    return junit.render_junit(model.build_report(records, title, racks))


def _root(records, title=None, racks=None):
    return ET.fromstring(_junit(records, title, racks).encode('utf-8'))


def test_junit_valid_and_counts():
    text = _junit(R.records(), 'Rollout & <tests>')
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode('utf-8'))
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


def test_junit_empty_report():
    root = _root([])
    assert (root.get('tests'), root.findall('testsuite')) == ('0', [])


def test_junit_is_deterministic():
    records = R.records()
    assert _junit(records) == _junit(list(reversed(records)))


def test_junit_strips_illegal_characters():
    record = {'host': 'h.example.org', 'rack': 'r', 'pre_check': {
        'passed': False, 'failures': [R.failure(message=u'bad\x00byte \x1b[31m\u00e9')]}}
    case = _root([record]).find('testsuite/testcase')
    assert case.get('classname') == 'r.h_example_org'
    assert u'\u00e9' in case.find('failure').text


def test_junit_failed_change_is_an_error():
    record = {'host': 'h', 'rack': 'r', 'pre_check': PASS, 'post_check': POST_PASS, 'phase': 'done',
              'error': 'Install driver: non-zero return code', 'changes': {'nvidia_driver': 1}}
    cases = _root([record]).findall('testsuite/testcase')
    assert [c.get('name') for c in cases] == ['pre_check', 'changes', 'post_check']
    assert cases[1].find('error').get('message') == 'Install driver: non-zero return code'
    assert cases[2].find('failure') is None


def test_junit_not_started_hosts_are_skipped():
    records, racks = R.not_started_run()
    root = _root(records, 'T', racks)
    skipped = [c for c in root.iter('testcase') if c.find('skipped') is not None]
    assert [(c.get('classname'), c.get('name')) for c in skipped] == [('rack_2.h3', 'pre_check'), ('rack_2.h4', 'pre_check')]
    assert skipped[0].find('skipped').get('message') == 'not started: the rollout stopped before rack rack_2'


def test_junit_reboot_cases():
    cases = dict(((c.get('classname'), c.get('name')), c) for c in _root(R.reboot_run()).iter('testcase'))
    assert len(cases[('r.a', 'reboot')]) == 0
    assert cases[('r.b', 'reboot')].find('skipped').get('message') == 'reboot required by mps, not rebooted'
    assert cases[('r.b', 'post_check')].find('skipped').get('message') == 'runs after the reboot'


# ---------------------------------------------------------------- odd names and control characters

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
    assert _root([{'host': host, 'rack': 'r', 'pre_check': PASS}]).find('testsuite/testcase').get('classname') == classname


@pytest.mark.parametrize('field', R.FIELDS)
@pytest.mark.parametrize('value', R.CONTROL_VALUES)
def test_no_control_character_reaches_junit(field, value):
    record, title = R.record_with(field, value)
    text = _junit([record], title)
    assert not _XML_FORBIDDEN.search(text), repr(text)
    root = ET.fromstring(text.encode('utf-8'))
    for elem in root.iter():
        for item in list(elem.attrib.values()) + [elem.text or u'']:
            assert not _XML_FORBIDDEN.search(item)
