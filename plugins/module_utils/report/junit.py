# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report as JUnit XML: one testsuite per rack, one testcase per host and step (pre-change check,
changes, reboot, post-change check, acceptance gates).

Renders a report of report/model.py (build_report). Standard library only
(Python 3.8+), deterministic.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpuops.node.plugins.module_utils.report import gates as report_gates
from ansible_collections.gpuops.node.plugins.module_utils.report import model

# Characters that XML 1.0 does not allow, even escaped (C0 controls but tab and line ends, lone surrogates,
# U+FFFE, U+FFFF), those it discourages (DEL, C1 controls) and the bidirectional embeddings, overrides and
# isolates, which reorder what a reader sees. JUnit output has U+FFFD in their place.
_XML_UNSAFE = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]')

_value = model.value_text


def _xml(value):
    return _XML_UNSAFE.sub(u'\ufffd', _value(value))


def _failure_line(item):
    parts = [_value(item.get('check')) or u'check']
    if item.get('subject') is not None:
        parts.append(_value(item['subject']))
    head = u' '.join(parts)
    if 'before' in item:
        detail = u'before %s, after %s' % (_value(item.get('before')), _value(item.get('after')))
    else:
        detail = u'expected %s, actual %s' % (_value(item.get('expected')), _value(item.get('actual')))
    message = _value(item.get('message'))
    return u'%s: %s%s' % (head, detail, (u' - ' + message) if message else u'')


def _failure_message(failures, regressions):
    parts = []
    if failures:
        parts.append(u'%d check(s) failed: %s' % (
            len(failures), u', '.join(sorted(set(_value(f['check']) or u'check' for f in failures)))))
    if regressions:
        parts.append(u'%d regression(s): %s' % (
            len(regressions), u', '.join(sorted(set(_value(r['check']) or u'check' for r in regressions)))))
    return u'; '.join(parts) or u'check did not pass'


def _testcases(record):
    """(phase, outcome, message, text) for each step of one host: pre_check, changes, reboot, post_check.

    outcome is one of pass, failure, error, skipped.
    """
    if record['status'] == 'not_started':
        why = model.host_reason(record)
        return [('pre_check', 'skipped', why, None)]
    cases = []
    pre, post = record['pre_check'], record['post_check']
    if pre is None:
        why = u'host unreachable' if record['unreachable'] else (record['error'] or u'pre-change check did not run')
        cases.append(('pre_check', 'error', why, why))
    elif pre['passed']:
        cases.append(('pre_check', 'pass', None, None))
    else:
        cases.append(('pre_check', 'failure', _failure_message(pre['failures'], []),
                      u'\n'.join(_failure_line(f) for f in pre['failures'])))
    if post is not None and record['error']:
        # the changes failed, the post-change check still ran
        cases.append(('changes', 'error', record['error'], record['error']))
    reboot = record['reboot']
    if reboot and reboot['rebooted']:
        cases.append(('reboot', 'pass', None, None))
    elif reboot and not record['error'] and not record['unreachable']:
        cases.append(('reboot', 'skipped', u'reboot required by %s, not rebooted' % u', '.join(reboot['required_by']),
                      None))
    if post is not None:
        if post['passed'] and not post['regressions']:
            cases.append(('post_check', 'pass', None, None))
        else:
            lines = [_failure_line(f) for f in post['failures']] + [_failure_line(r) for r in post['regressions']]
            cases.append(('post_check', 'failure', _failure_message(post['failures'], post['regressions']),
                          u'\n'.join(lines)))
        cases.extend(report_gates.junit_cases(record.get('gates') or []))
    elif record['held_back']:
        cases.append(('post_check', 'skipped', u'held back: pre-change check failed, nothing was changed', None))
    elif record['status'] == 'reboot_required':
        cases.append(('post_check', 'skipped', u'runs after the reboot', None))
    elif pre is not None and (record['unreachable'] or record['error'] or record['phase'] not in (None, 'done')
                              or record['roles'] is not None):
        why = u'host unreachable' if record['unreachable'] else (record['error'] or model.host_reason(record))
        cases.append(('post_check', 'error', why, why))
    return cases


def _indent(elem, level=0):
    pad = u'\n' + u'  ' * level
    if len(elem):
        if not elem.text or not elem.text.strip():
            elem.text = pad + u'  '
        for child in elem:
            _indent(child, level + 1)
        if not child.tail or not child.tail.strip():
            child.tail = pad
    if level and (not elem.tail or not elem.tail.strip()):
        elem.tail = pad


def render_junit(report):
    """JUnit XML: one testsuite per rack, one testcase per host and check phase."""
    totals = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
    root = ET.Element('testsuites', {'name': _xml(report['title'])})
    for rack in report['racks']:
        counts = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
        suite = ET.SubElement(root, 'testsuite', {'name': _xml(rack['name'])})
        for record in rack['hosts']:
            for phase, outcome, message, text in _testcases(record):
                counts['tests'] += 1
                case = ET.SubElement(suite, 'testcase', {
                    'classname': _xml(u'%s.%s' % (rack['name'], record['host'].replace(u'.', u'_'))),
                    'name': phase,
                })
                if outcome == 'pass':
                    continue
                tag = {'failure': 'failure', 'error': 'error', 'skipped': 'skipped'}[outcome]
                counts[{'failure': 'failures', 'error': 'errors', 'skipped': 'skipped'}[outcome]] += 1
                attrs = {'message': _xml(message)}
                if outcome != 'skipped':
                    attrs['type'] = 'regression' if phase == 'post_check' and record['post_check'] and \
                        record['post_check']['regressions'] else phase if outcome == 'failure' else record['status']
                child = ET.SubElement(case, tag, attrs)
                if text:
                    child.text = _xml(text)
        for key in ('tests', 'failures', 'errors', 'skipped'):
            suite.set(key, str(counts[key]))
            totals[key] += counts[key]
    for key in ('tests', 'failures', 'errors', 'skipped'):
        root.set(key, str(totals[key]))
    _indent(root)
    return u'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding='unicode') + u'\n'
