# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rack report: per-host rollout records rendered as JSON, Markdown and JUnit XML.

Pure functions, standard library only (Python 3.8+). The renderers are
deterministic (no timestamps, stable ordering) so that writing the same
records twice produces byte-identical files.

A record describes one host of a run::

    {
      "host": "gpu-a01", "rack": "rack_a", "node_class": "dgx_h100",
      "pre_check": {"passed": true, "failures": []} | null,
      "held_back": false,
      "changes": {"nvidia_driver": 3, "mofed": false},
      "post_check": {"passed": true, "failures": [], "regressions": []} | null,
      "status": "provisioned",          # optional, derived when absent
      "error": "task X failed: ...",    # optional
      "unreachable": false,             # optional
      "phase": "done",                  # optional: start/pre_check/changes/post_check/done
    }

Any other key (for example ``gpu_topology``) is kept in the per-host JSON
document but left out of the rack report.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import xml.etree.ElementTree as ET

STATUSES = ('provisioned', 'validated', 'held_back', 'regressed', 'unreachable', 'failed')
PASSING_STATUSES = ('provisioned', 'validated')
PHASES = ('pre_check', 'post_check')
DEFAULT_TITLE = 'GPU rack report'
UNRACKED = 'unracked'

FAILURE_KEYS = ('check', 'subject', 'expected', 'actual', 'message')
REGRESSION_KEYS = ('check', 'subject', 'before', 'after', 'message')
RECORD_KEYS = ('host', 'rack', 'node_class', 'status', 'held_back', 'unreachable', 'error',
               'phase', 'pre_check', 'changes', 'post_check')

# Characters that XML 1.0 does not allow, even escaped (C0 controls but tab and line ends, lone surrogates,
# U+FFFE, U+FFFF), those it discourages (DEL, C1 controls) and the bidirectional embeddings, overrides and
# isolates, which reorder what a reader sees. JUnit output has U+FFFD in their place.
_XML_UNSAFE = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]')

# A Markdown cell or heading is one line of plain text: line breaks become a space, and every other control
# character (C0 but tab and line ends, DEL, C1, bidirectional embeddings, overrides and isolates, lone
# surrogates) becomes U+FFFD, so no terminal escape sequence or hidden reordering reaches a reader.
_MD_CONTROL = re.compile(u'[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
_MD_BREAK = re.compile(u'\\s*[\n\x0b\x0c\r\x85\u2028\u2029]+\\s*')

# Lone surrogates (from undecodable bytes) cannot be written as UTF-8: JSON output escapes them.
_SURROGATE = re.compile(u'[\ud800-\udfff]')


class ReportError(ValueError):
    """A record cannot be understood."""


def _text(value):
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
    return value if isinstance(value, str) else str(value)


def _bool(value, name, host):
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ('true', 'yes', 'on', '1', 'false', 'no', 'off', '0', ''):
        return value.strip().lower() in ('true', 'yes', 'on', '1')
    raise ReportError('host %s: %s must be a boolean, got %r' % (host, name, value))


def _items(values, keys, name, host):
    if values is None:
        return []
    if isinstance(values, dict):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise ReportError('host %s: %s must be a list, got %r' % (host, name, values))
    out = []
    for item in values:
        if isinstance(item, dict):
            out.append(dict((k, item.get(k)) for k in keys))
        else:
            entry = dict((k, None) for k in keys)
            entry['message'] = _text(item)
            out.append(entry)
    return out


def _check(value, name, host, with_regressions):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReportError('host %s: %s must be a dict or null, got %r' % (host, name, value))
    if not value:
        return None
    failures = _items(value.get('failures'), FAILURE_KEYS, name + '.failures', host)
    result = {'failures': failures}
    if with_regressions:
        result['regressions'] = _items(value.get('regressions'), REGRESSION_KEYS, name + '.regressions', host)
    passed = value.get('passed')
    if passed is None:
        passed = not failures and not result.get('regressions')
    result['passed'] = _bool(passed, name + '.passed', host)
    return result


def _changes(value, host):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReportError('host %s: changes must be a dict, got %r' % (host, value))
    out = {}
    for key, val in value.items():
        if isinstance(val, bool) or val is None:
            out[_text(key)] = bool(val)
        elif isinstance(val, int):
            out[_text(key)] = val
        elif isinstance(val, float) and val.is_integer():
            out[_text(key)] = int(val)
        elif isinstance(val, str) and re.match(r'[0-9]+\Z', val.strip()):
            out[_text(key)] = int(val.strip())
        else:
            out[_text(key)] = _bool(val, 'changes.%s' % key, host)
    return out


def derive_status(record):
    """Status of a normalized record that does not carry one.

    unreachable wins, then held back, then regressions, then any error or
    failed check. A record that stopped before its last phase without an
    error is a host that left the play (usually unreachable mid-run).
    """
    if record.get('unreachable'):
        return 'unreachable'
    if record.get('held_back'):
        return 'held_back'
    post = record.get('post_check')
    if post and post.get('regressions'):
        return 'regressed'
    if record.get('error'):
        return 'failed'
    pre = record.get('pre_check')
    if pre is None:
        return 'failed'
    phase = record.get('phase')
    if phase not in (None, 'done'):
        return 'failed'
    if post is not None:
        return 'provisioned' if post.get('passed') else 'failed'
    return 'validated' if pre.get('passed') else 'failed'


def normalize_record(raw):
    """Validate one record and fill in defaults. Returns a new dict."""
    if not isinstance(raw, dict):
        raise ReportError('a record must be a dict, got %r' % (raw,))
    host = _text(raw.get('host'))
    if not host:
        raise ReportError('a record has no host: %r' % (raw,))
    record = dict(raw)
    record['host'] = host
    record['rack'] = _text(raw.get('rack')) or UNRACKED
    record['node_class'] = _text(raw.get('node_class'))
    record['held_back'] = _bool(raw.get('held_back'), 'held_back', host)
    record['unreachable'] = _bool(raw.get('unreachable'), 'unreachable', host)
    record['error'] = _text(raw.get('error')) or None
    record['phase'] = _text(raw.get('phase')) or None
    record['pre_check'] = _check(raw.get('pre_check'), 'pre_check', host, False)
    record['post_check'] = _check(raw.get('post_check'), 'post_check', host, True)
    record['changes'] = _changes(raw.get('changes'), host)
    status = _text(raw.get('status'))
    if status:
        if status not in STATUSES:
            raise ReportError('host %s: status %r is not one of %s' % (host, status, ', '.join(STATUSES)))
        record['status'] = status
    else:
        record['status'] = derive_status(record)
    return record


def _natural_key(value):
    """Sort key: runs of ASCII digits compare as numbers, the rest case-insensitively.

    Only ASCII digits are numbers; other digits (superscripts, other scripts) compare as text. Names with the
    same key (``gpu-01``, ``gpu-1``, ``GPU-1``) are ordered by the name itself after it, see _sort_key.
    """
    parts = re.split(r'([0-9]+)', value or u'')
    # the digit runs are at the odd indexes
    return [(0, int(part), u'') if i % 2 else (1, 0, part.lower()) for i, part in enumerate(parts) if part != u'']


def _sort_key(value):
    return (_natural_key(value), value or u'')


def summarize(records):
    """Counts over normalized records."""
    by_status = dict((s, 0) for s in STATUSES)
    for record in records:
        by_status[record['status']] += 1
    return {
        'hosts': len(records),
        'passed': sum(by_status[s] for s in PASSING_STATUSES),
        'held_back': by_status['held_back'],
        'regressed': by_status['regressed'],
        'failed': by_status['failed'],
        'unreachable': by_status['unreachable'],
        'by_status': by_status,
        'healthy': len(records) > 0 and all(r['status'] in PASSING_STATUSES for r in records),
    }


def build_report(records, title=None):
    """Normalize records and group them by rack (both sorted naturally).

    A host listed twice keeps its last record.
    """
    if records is None:
        records = []
    by_host = {}
    for raw in records:
        record = normalize_record(raw)
        by_host[record['host']] = record
    normalized = sorted(by_host.values(), key=lambda r: (_sort_key(r['rack']), _sort_key(r['host'])))
    racks = []
    for record in normalized:
        if not racks or racks[-1]['name'] != record['rack']:
            racks.append({'name': record['rack'], 'hosts': []})
        racks[-1]['hosts'].append(record)
    for rack in racks:
        rack['summary'] = summarize(rack['hosts'])
    return {
        'title': _text(title) or DEFAULT_TITLE,
        'summary': summarize(normalized),
        'racks': racks,
    }


def _public(record):
    return dict((k, record.get(k)) for k in RECORD_KEYS)


def render_json(report):
    """The rack report as JSON text (hosts without bulky extra keys)."""
    doc = {
        'title': report['title'],
        'summary': report['summary'],
        'racks': [{'name': r['name'], 'summary': r['summary'], 'hosts': [_public(h) for h in r['hosts']]}
                  for r in report['racks']],
    }
    return _json(doc)


def render_host_json(record):
    """One normalized record, every key kept, as JSON text."""
    return _json(record)


def _json(doc):
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    # a surrogate only occurs inside a JSON string, where its \u escape means the same
    return _SURROGATE.sub(lambda m: u'\\u%04x' % ord(m.group()), text) + u'\n'


# ---------------------------------------------------------------- Markdown

def _value(value):
    if value is None:
        return u''
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return u'true' if value else u'false'
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


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
        return u'PASS'
    return u'FAIL (%d)' % len(check['failures']) if check['failures'] else u'FAIL'


def changes_text(record):
    """Short human text for a record's changes."""
    if record['held_back']:
        return u'held back'
    changes = record['changes']
    if not changes:
        return u'none' if record['post_check'] is not None else u'-'
    parts = []
    for key in sorted(changes, key=_sort_key):
        val = changes[key]
        if isinstance(val, bool):
            parts.append(u'%s: %s' % (key, u'changed' if val else u'ok'))
        else:
            parts.append(u'%s: %d' % (key, val))
    return u', '.join(parts)


def _summary_line(summary):
    text = u': %(passed)d passed, %(held_back)d held back, %(regressed)d regressed, ' \
        u'%(failed)d failed, %(unreachable)d unreachable' % summary
    return u'%d host%s%s' % (summary['hosts'], u'' if summary['hosts'] == 1 else u's', text)


def render_markdown(report):
    """Summary table per rack, then the details of every failure."""
    summary = report['summary']
    lines = [u'# %s' % _cell(report['title']), u'']
    verdict = u'HEALTHY' if summary['healthy'] else u'NOT HEALTHY'
    lines += [u'**%s** - %s.' % (verdict, _summary_line(summary)), u'']
    if not report['racks']:
        lines += [u'No hosts were reported.', u'']
    for rack in report['racks']:
        lines += [u'## Rack %s' % _cell(rack['name']), u'', _summary_line(rack['summary']) + u'.', u'']
        lines.append(_row([u'Host', u'Class', u'Status', u'Pre-check', u'Changes', u'Post-check', u'Regressions']))
        lines.append(_row([u'---'] * 7))
        for rec in rack['hosts']:
            post = rec['post_check']
            regressions = len(post['regressions']) if post else None
            lines.append(_row([
                _cell(rec['host']),
                _cell(rec['node_class']) or u'-',
                rec['status'],
                _check_cell(rec['pre_check'], u'not run'),
                _cell(changes_text(rec)),
                _check_cell(post),
                u'-' if regressions is None else str(regressions),
            ]))
        lines.append(u'')

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
        for label, check in ((u'Pre-check', rec['pre_check']), (u'Post-check', rec['post_check'])):
            if check and check['failures']:
                lines += _findings(u'%s failures:' % label, (u'Expected', u'Actual'), ('expected', 'actual'),
                                   check['failures'])
        post = rec['post_check']
        if post and post['regressions']:
            lines += _findings(u'Regressions against the pre-change snapshot:', (u'Before', u'After'),
                               ('before', 'after'), post['regressions'])
    return u'\n'.join(lines).rstrip(u'\n') + u'\n'


def _findings(title, headers, keys, items):
    """A Markdown table of failures or regressions: check, subject, the two values, message."""
    lines = [title, u'', _row([u'Check', u'Subject', headers[0], headers[1], u'Message']), _row([u'---'] * 5)]
    for item in items:
        lines.append(_row([_cell(item['check']), _cell(item['subject']), _cell(item[keys[0]], True),
                           _cell(item[keys[1]], True), _cell(item['message'])]))
    return lines + [u'']


def _has_details(record):
    if record['unreachable'] or record['error'] or record['status'] not in PASSING_STATUSES:
        return True
    for check in (record['pre_check'], record['post_check']):
        if check and (check['failures'] or check.get('regressions')):
            return True
    return False


# ---------------------------------------------------------------- JUnit XML

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
    """(phase, outcome, message, text) for each check phase of one host.

    outcome is one of pass, failure, error, skipped.
    """
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
    if post is not None:
        if post['passed'] and not post['regressions']:
            cases.append(('post_check', 'pass', None, None))
        else:
            lines = [_failure_line(f) for f in post['failures']] + [_failure_line(r) for r in post['regressions']]
            cases.append(('post_check', 'failure', _failure_message(post['failures'], post['regressions']),
                          u'\n'.join(lines)))
    elif record['held_back']:
        cases.append(('post_check', 'skipped', u'held back: pre-change check failed, nothing was changed', None))
    elif pre is not None and (record['unreachable'] or record['error']
                              or record['phase'] not in (None, 'done')):
        why = u'host unreachable' if record['unreachable'] else (
            record['error'] or u'host left the play during %s' % record['phase'])
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


def render_all(records, title=None):
    """Build the report and render it. Returns (report, {'json','markdown','junit'})."""
    report = build_report(records, title)
    return report, {
        'json': render_json(report),
        'markdown': render_markdown(report),
        'junit': render_junit(report),
    }
