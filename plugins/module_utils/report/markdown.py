# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report as Markdown: a summary table per rack, the deferred checks, the acceptance gates, the
scheduler section, then the details of every host that did not pass.

Renders a report of report/model.py (build_report). Every cell and heading is
one line of plain text (see _cell). Standard library only (Python 3.8+),
deterministic.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.report import gates as report_gates
from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.plans import gpuops as plans_gpuops

# A Markdown cell or heading is one line of plain text: line breaks become a space, and every other control
# character (C0 but tab and line ends, DEL, C1, bidirectional embeddings, overrides and isolates, lone
# surrogates) becomes U+FFFD, so no terminal escape sequence or hidden reordering reaches a reader.
_MD_CONTROL = re.compile(u'[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
_MD_BREAK = re.compile(u'\\s*[\n\x0b\x0c\r\x85\u2028\u2029]+\\s*')

_value = model.value_text
_sort_key = model.sort_key


def _cell(value, code=False):
    text = _MD_CONTROL.sub(u'\ufffd', _value(value))
    text = _MD_BREAK.sub(u' ', text).replace(u'\t', u' ').strip()
    if not text:
        return u''
    if code:
        text = text.replace(u'`', u"'")
        return u'`%s`' % text.replace(u'|', u'\\|')
    text = text.replace(u'\\', u'\\\\').replace(u'|', u'\\|').replace(u'<', u'&lt;').replace(u'>', u'&gt;')
    return text


def _row(cells):
    return u'| ' + u' | '.join(cells) + u' |'


def _check_cell(check, skipped=u'-'):
    if check is None:
        return skipped
    if check['passed']:
        deferred = len(check.get('deferred') or [])
        return u'PASS (%d deferred)' % deferred if deferred else u'PASS'
    return u'FAIL (%d)' % len(check['failures']) if check['failures'] else u'FAIL'


def _reboot_pending(record):
    reboot = record.get('reboot')
    return bool(reboot) and not reboot['rebooted']


def changes_text(record):
    """Short human text for a record's changes, and its reboot; in check mode what a real run would do."""
    if record['held_back']:
        return u'held back'
    if record['status'] == 'not_started':
        return u'-'
    changes = record['changes']
    parts = []
    for key in sorted(changes, key=_sort_key):
        val = changes[key]
        if val is None:
            parts.append(u'%s: not reported' % key)
        elif isinstance(val, bool):
            parts.append(u'%s: %s' % (key, u'changed' if val else u'ok'))
        else:
            parts.append(u'%s: %d' % (key, val))
    if parts:
        text = u', '.join(parts)
        if record['check_mode']:
            text = u'would change ' + text
    else:
        ran = record['post_check'] is not None or record['reboot'] is not None
        text = u'none' if ran else u'-'
    reboot = record['reboot']
    if reboot:
        if reboot['rebooted']:
            text += u'; would reboot' if record['check_mode'] else u'; rebooted'
        else:
            text += u'; reboot required'
    return text


def _summary_line(summary):
    text = u': %(passed)d passed, %(held_back)d held back, %(regressed)d regressed, ' \
        u'%(failed)d failed, %(unreachable)d unreachable' % summary
    if summary['reboot_required']:
        text += u', %d waiting for a reboot' % summary['reboot_required']
    if summary['not_started']:
        text += u', %d not started' % summary['not_started']
    return u'%d host%s%s' % (summary['hosts'], u'' if summary['hosts'] == 1 else u's', text)


def render_markdown(report):
    """Summary table per rack, the checks deferred to the post-change check, then the details of every failure."""
    summary = report['summary']
    lines = [u'# %s' % _cell(report['title']), u'']
    if report['check_mode']:
        lines += [u'**Check mode: nothing changed.** Changes, reboots and statuses are what a real run would do.',
                  u'']
    verdict = u'HEALTHY' if summary['healthy'] else u'NOT HEALTHY'
    lines += [u'**%s** - %s.' % (verdict, _summary_line(summary)), u'']
    waiting = [r['name'] for r in report['racks'] if r['summary']['not_started']]
    if waiting:
        lines += [u'Not started: %d host%s in %s; the rollout had not reached them when this report was written.'
                  % (summary['not_started'], u'' if summary['not_started'] == 1 else u's',
                     u', '.join(_cell(name) for name in waiting)), u'']
    if not report['racks']:
        lines += [u'No hosts were reported.', u'']
    for rack in report['racks']:
        lines += [u'## Rack %s' % _cell(rack['name']), u'', _summary_line(rack['summary']) + u'.', u'']
        lines.append(_row([u'Host', u'Class', u'Status', u'Pre-check', u'Changes', u'Post-check', u'Regressions',
                           u'Gates']))
        lines.append(_row([u'---'] * 8))
        for rec in rack['hosts']:
            post = rec['post_check']
            regressions = len(post['regressions']) if post else None
            lines.append(_row([
                _cell(rec['host']),
                _cell(rec['node_class']) or u'-',
                rec['status'],
                u'not started' if rec['status'] == 'not_started' else _check_cell(rec['pre_check'], u'not run'),
                _cell(changes_text(rec)),
                _check_cell(post, u'after reboot' if _reboot_pending(rec) else u'-'),
                u'-' if regressions is None else str(regressions),
                _cell(report_gates.cell(rec['gates'])),
            ]))
        lines.append(u'')

    deferred = [r for rack in report['racks'] for r in rack['hosts'] if (r['pre_check'] or {}).get('deferred')]
    if deferred:
        lines += [u'## Deferred to the post-change check', u'',
                  u'Checks of what the roles of this run converge, not made before the change (a bare node is not '
                  u'held back for them); the post-change check makes every check of the profile.', u'',
                  _row([u'Host', u'Checks', u'Roles']), _row([u'---'] * 3)]
        for rec in deferred:
            items = rec['pre_check']['deferred']
            checks = sorted(set(_value(i['check']) for i in items), key=_sort_key)
            roles = sorted(set(_value(i['role']) for i in items), key=_sort_key)
            lines.append(_row([_cell(rec['host']), _cell(u', '.join(checks)), _cell(u', '.join(roles))]))
        lines.append(u'')

    gated = [r for rack in report['racks'] for r in rack['hosts'] if r['gates']]
    if gated:
        lines += [u'## Acceptance gates', u'',
                  u'Run after the post-change check, on the hosts that passed it: a gate that fails fails its host.',
                  u'', _row([u'Host', u'Gate', u'Result', u'Summary']), _row([u'---'] * 4)]
        for rec in gated:
            for gate in rec['gates']:
                lines.append(_row([_cell(rec['host']), _cell(gate['name']), report_gates.gate_outcome(gate),
                                   _cell(gate['summary'])]))
        lines.append(u'')

    lines += plans_gpuops.markdown(report, _cell)
    detailed = [r for rack in report['racks'] for r in rack['hosts'] if _has_details(r)]
    lines += [u'## Details', u'']
    if not detailed:
        lines += [u'No failures, regressions or errors.', u'']
    for rec in detailed:
        node_class = _cell(rec['node_class']) or u'no class'
        heading = u'### %s (%s, %s): %s' % (_cell(rec['host']), _cell(rec['rack']), node_class, rec['status'])
        lines += [heading, u'']
        if rec['unreachable']:
            lines += [u'Host unreachable.', u'']
        if rec['error']:
            lines += [u'Error: %s' % _cell(rec['error']), u'']
        if _reboot_pending(rec):
            lines += [u'Waiting for a reboot required by %s; the post-change check runs after it.'
                      % _cell(u', '.join(rec['reboot']['required_by'])), u'']
        for label, check in ((u'Pre-check', rec['pre_check']), (u'Post-check', rec['post_check'])):
            if check and check['failures']:
                lines += _findings(u'%s failures:' % label, (u'Expected', u'Actual'), ('expected', 'actual'),
                                   check['failures'])
        post = rec['post_check']
        if post and post['regressions']:
            lines += _findings(u'Regressions against the pre-change snapshot:', (u'Before', u'After'),
                               ('before', 'after'), post['regressions'])
        gate_failures = [f for gate in report_gates.failed(rec['gates']) for f in gate['failures']]
        if gate_failures:
            lines += _findings(u'Acceptance gate failures:', (u'Expected', u'Actual'), ('expected', 'actual'),
                               gate_failures)
        if not (rec['unreachable'] or rec['error'] or _reboot_pending(rec) or (rec['pre_check'] or {}).get('failures')
                or (post or {}).get('failures') or (post or {}).get('regressions') or gate_failures):
            lines += [u'%s.' % _cell(model.host_reason(rec)).capitalize(), u'']
    return u'\n'.join(lines).rstrip(u'\n') + u'\n'


def _findings(title, headers, keys, items):
    """A Markdown table of failures or regressions: check, subject, the two values, message."""
    lines = [title, u'', _row([u'Check', u'Subject', headers[0], headers[1], u'Message']), _row([u'---'] * 5)]
    for item in items:
        lines.append(_row([_cell(item['check']), _cell(item['subject']), _cell(item[keys[0]], True),
                           _cell(item[keys[1]], True), _cell(item['message'])]))
    return lines + [u'']


def _has_details(record):
    if record['status'] == 'not_started':
        return False
    if record['unreachable'] or record['error'] or record['status'] not in model.PASSING_STATUSES:
        return True
    for check in (record['pre_check'], record['post_check']):
        if check and (check['failures'] or check.get('regressions')):
            return True
    return bool(report_gates.failed(record.get('gates') or []))
