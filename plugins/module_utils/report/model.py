# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rack report: the per-host records of a run, normalised and grouped by rack, and the JSON report.

Pure functions, standard library only (Python 3.8+). Every status is decided
here, and why a host has it (host_reason); report/markdown.py, report/junit.py
and report/html.py render a built report, report/render.py all of them at
once. Rendering is deterministic (no timestamps, stable ordering) so that
writing the same records twice produces byte-identical files.

A record describes one host of a run. The playbooks hand over what each step
returned, as registered, and every status is decided here::

    {
      "host": "gpu-a01", "rack": "rack_a", "node_class": "dgx_h100",
      "phase": "done",                  # "started" until the host reached the report
      "check_mode": false,              # the run was --check: nothing changed
      "errors": ["task X: ..."],        # or "error": "...": what failed (rescued tasks)
      "gather": {...},                  # registered result of the fact gathering (unreachable?)
      "pre_check": {...} | null,        # gpu_topology_check result: passed, failures, deferred
      "roles": ["nvidia_driver"],       # rollout records only: the roles the run applies
      "changes": {"nvidia_driver": 3},  # <role>_changed of each role
      "reboot_required": {"nvidia_driver": true},   # <role>_reboot_required of each role
      "reboot": {...} | null,           # registered result of ansible.builtin.reboot
      "post_check": {...} | null,       # gpu_topology_check result with regressions
      "gates": {"dcgm": {...}},         # <role>_gate of each role with an acceptance gate (report/gates.py)
    }

A check result may be the module's registered result (``unreachable``,
``skipped`` and ``failed`` results are understood; ``gpu_topology`` and the
rest are ignored) or the summary ``{"passed", "failures", "regressions",
"deferred"}``. ``status``, ``held_back`` and ``unreachable`` may be given;
otherwise they are derived (see derive_status). A record with ``roles`` is a
rollout record: a failed pre-change check holds its host back. Without
``roles`` (validate.yml) it only fails the host.

Any other key (for example ``gpu_topology``) is kept in the per-host JSON
document but left out of the rack report.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.node.plugins.module_utils.report import gates as report_gates
from ansible_collections.gpuops.node.plugins.module_utils.plans import gpuops as plans_gpuops
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import as_text

STATUSES = ('provisioned', 'validated', 'held_back', 'reboot_required', 'regressed', 'unreachable', 'failed',
            'not_started')
PASSING_STATUSES = ('provisioned', 'validated')
# statuses that always fail their host after the report; held_back and reboot_required only when asked
FAILING_STATUSES = ('failed', 'regressed', 'unreachable')
PHASES = ('started', 'done')
DEFAULT_TITLE = 'GPU rack report'
UNRACKED = 'unracked'

FAILURE_KEYS = ('check', 'subject', 'expected', 'actual', 'message')
REGRESSION_KEYS = ('check', 'subject', 'before', 'after', 'message')
DEFERRED_KEYS = ('check', 'key', 'role', 'why')
RECORD_KEYS = ('host', 'rack', 'node_class', 'status', 'held_back', 'unreachable', 'error',
               'phase', 'check_mode', 'pre_check', 'changes', 'reboot', 'post_check', 'gates')

# Lone surrogates (from undecodable bytes) cannot be written as UTF-8: JSON output escapes them.
_SURROGATE = re.compile(u'[\ud800-\udfff]')


class ReportError(ValueError):
    """A record cannot be understood."""


_text = as_text


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


def _result(value, name, host):
    """``(result, unreachable)`` of a step: None for a missing, skipped or failed result.

    ``unreachable`` is the message of a result whose host could not be reached, else None. A failed task's
    message comes with the record's ``errors`` (the play's rescue), so a failed result only counts as not run.
    """
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise ReportError('host %s: %s must be a dict or null, got %r' % (host, name, value))
    if _bool(value.get('unreachable'), name + '.unreachable', host):
        return None, _text(value.get('msg')) or u'host unreachable'
    if not value or _bool(value.get('skipped'), name + '.skipped', host):
        return None, None
    return value, None


def _check(value, name, host, post):
    """``(check, unreachable)``: a check result as {passed, failures, deferred} (pre) or
    {passed, failures, regressions} (post), from the module's registered result or a summary."""
    value, unreachable = _result(value, name, host)
    if value is None:
        return None, unreachable
    if 'passed' not in value and 'failures' not in value and value.get('failed'):
        return None, None
    failures = _items(value.get('failures'), FAILURE_KEYS, name + '.failures', host)
    result = {'failures': failures}
    if post:
        result['regressions'] = _items(value.get('regressions'), REGRESSION_KEYS, name + '.regressions', host)
    else:
        result['deferred'] = _items(value.get('deferred'), DEFERRED_KEYS, name + '.deferred', host)
    passed = value.get('passed')
    if passed is None:
        passed = not failures and not result.get('regressions')
    result['passed'] = _bool(passed, name + '.passed', host)
    return result, None


def _by_role(value, name, host, convert):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReportError('host %s: %s must be a dict, got %r' % (host, name, value))
    return dict((_text(key), convert(val, '%s.%s' % (name, key))) for key, val in value.items())


def _changes(value, host):
    """{role: number of changed tasks}; a role that did not say (None) stays None, true/false stay booleans."""
    def convert(val, name):
        if isinstance(val, bool) or val is None:
            return val
        if isinstance(val, int):
            return val
        if isinstance(val, float) and val.is_integer():
            return int(val)
        if isinstance(val, str) and re.match(r'[0-9]+\Z', val.strip()):
            return int(val.strip())
        return _bool(val, name, host)
    return _by_role(value, 'changes', host, convert)


def _reboot(raw, host):
    """``(reboot, unreachable)``: {required_by, rebooted} when a role asked for a reboot, else None.

    ``reboot_required`` maps each role to its ``<role>_reboot_required``; ``reboot`` is the registered result of
    the reboot task (``rebooted``: it rebooted, or in check mode would have), or an already normalized
    {required_by, rebooted}.
    """
    given = raw.get('reboot')
    asked = _by_role(raw.get('reboot_required'), 'reboot_required', host,
                     lambda val, name: _bool(val, name, host))
    required_by = sorted((role for role, wanted in asked.items() if wanted), key=sort_key)
    result, unreachable = _result(given, 'reboot', host)
    if isinstance(result, dict) and 'required_by' in result:
        given_roles = result['required_by'] or []
        if not isinstance(given_roles, (list, tuple)) or not all(isinstance(r, str) and r for r in given_roles):
            raise ReportError('host %s: reboot.required_by must be a list of role names, got %r'
                              % (host, result['required_by']))
        required_by = [_text(role) for role in given_roles]
    if not required_by:
        return None, unreachable
    rebooted = _bool((result or {}).get('rebooted'), 'reboot.rebooted', host)
    return {'required_by': required_by, 'rebooted': rebooted}, unreachable


def _errors(raw, host):
    errors = raw.get('errors')
    if errors is None:
        errors = []
    elif not isinstance(errors, (list, tuple)):
        errors = [errors]
    texts = [_text(e) for e in list(errors) + [raw.get('error')] if e is not None and _text(e)]
    return u'; '.join(texts) or None


def derive_status(record):
    """Status of a normalized record that does not carry one.

    unreachable wins, then held back, then regressions, then any error or failed check. A record that stopped
    before its last phase without an error is a host that left the play (usually unreachable mid-run). A host
    whose roles asked for a reboot that did not happen waits for it (reboot_required): its post-change check
    runs after the reboot. A rollout record (with ``roles``) whose post-change check did not run failed.
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
    reboot = record.get('reboot')
    if reboot and not reboot.get('rebooted'):
        return 'reboot_required'
    if post is not None:
        return 'provisioned' if post.get('passed') and not report_gates.failed(record.get('gates') or []) else 'failed'
    if record.get('roles') is not None:
        return 'failed'
    return 'validated' if pre.get('passed') else 'failed'


def normalize_record(raw):
    """Validate one record and fill in defaults. Returns a new dict."""
    if not isinstance(raw, dict):
        raise ReportError('a record must be a dict, got %r' % (raw,))
    host = _text(raw.get('host'))
    if not host:
        raise ReportError('a record has no host: %r' % (raw,))
    record = dict((k, v) for k, v in raw.items() if k not in ('errors', 'gather', 'reboot_required'))
    record['host'] = host
    record['rack'] = _text(raw.get('rack')) or UNRACKED
    record['node_class'] = _text(raw.get('node_class'))
    record['phase'] = _text(raw.get('phase')) or None
    record['check_mode'] = _bool(raw.get('check_mode'), 'check_mode', host)
    record['error'] = _errors(raw, host)
    roles = raw.get('roles')
    if roles is not None and not isinstance(roles, (list, tuple)):
        raise ReportError('host %s: roles must be a list, got %r' % (host, roles))
    record['roles'] = None if roles is None else [_text(role) for role in roles]
    lost = [_result(raw.get('gather'), 'gather', host)[1]]
    record['pre_check'], unreachable = _check(raw.get('pre_check'), 'pre_check', host, False)
    lost.append(unreachable)
    record['changes'] = _changes(raw.get('changes'), host)
    record['reboot'], unreachable = _reboot(raw, host)
    lost.append(unreachable)
    record['post_check'], unreachable = _check(raw.get('post_check'), 'post_check', host, True)
    lost.append(unreachable)
    try:
        record['gates'] = report_gates.normalize_gates(raw.get('gates'), host)
    except report_gates.GateError as exc:
        raise ReportError(str(exc))
    try:
        record['scheduler'] = plans_gpuops.normalize(raw.get('scheduler'), host)
    except plans_gpuops.SchedulerError as exc:
        raise ReportError(str(exc))
    lost = [message for message in lost if message]
    record['unreachable'] = _bool(raw.get('unreachable'), 'unreachable', host) or bool(lost)
    if lost and not record['error']:
        record['error'] = lost[0]
    held_back = raw.get('held_back')
    if held_back is None:
        pre = record['pre_check']
        held_back = roles is not None and pre is not None and not pre['passed'] and not record['unreachable']
    record['held_back'] = _bool(held_back, 'held_back', host)
    status = _text(raw.get('status'))
    if status:
        if status not in STATUSES:
            raise ReportError('host %s: status %r is not one of %s' % (host, status, ', '.join(STATUSES)))
        record['status'] = status
    else:
        record['status'] = derive_status(record)
    return record


def host_reason(record):
    """One line saying why a normalized record has its status: errors, failed checks, regressions, a reboot."""
    parts = []
    if record['error']:
        parts.append(record['error'])
    elif record['unreachable']:
        parts.append(u'host unreachable')
    for check in (record['pre_check'], record['post_check']):
        for item in (check or {}).get('failures', []) + (check or {}).get('regressions', []):
            parts.append(value_text(item.get('message')) or value_text(item.get('check')) or u'check failed')
    parts.extend(report_gates.reasons(record.get('gates') or []))
    reboot = record.get('reboot')
    if reboot and not reboot['rebooted']:
        parts.append(u'reboot required by %s, not rebooted' % u', '.join(reboot['required_by']))
    if parts:
        return u'; '.join(parts)
    status, phase = record['status'], record['phase']
    if status == 'not_started':
        return u'not started: the rollout stopped before rack %s' % record['rack']
    if phase not in (None, 'done'):
        return u'the host left the play before its record was complete (phase %s)' % phase
    if record['pre_check'] is None:
        return u'the pre-change check did not run'
    if status == 'failed' and record['post_check'] is None:
        return u'the post-change check did not run'
    return status


def failing_hosts(report, fail_held_back=False, fail_reboot_required=False):
    """{host: reason} of the hosts the play fails after the report, by their status.

    failed, regressed and unreachable always; held_back and reboot_required when asked.
    """
    statuses = set(FAILING_STATUSES)
    if fail_held_back:
        statuses.add('held_back')
    if fail_reboot_required:
        statuses.add('reboot_required')
    return dict((r['host'], host_reason(r)) for rack in report['racks'] for r in rack['hosts']
                if r['status'] in statuses)


def _natural_key(value):
    """Sort key: runs of ASCII digits compare as numbers, the rest case-insensitively.

    Only ASCII digits are numbers; other digits (superscripts, other scripts) compare as text. Names with the
    same key (``gpu-01``, ``gpu-1``, ``GPU-1``) are ordered by the name itself after it, see sort_key.
    """
    parts = re.split(r'([0-9]+)', value or u'')
    # the digit runs are at the odd indexes
    return [(0, int(part), u'') if i % 2 else (1, 0, part.lower()) for i, part in enumerate(parts) if part != u'']


def sort_key(value):
    """Natural order of a host or rack name (see _natural_key); the renderers sort by it too."""
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
        'reboot_required': by_status['reboot_required'],
        'regressed': by_status['regressed'],
        'failed': by_status['failed'],
        'unreachable': by_status['unreachable'],
        'not_started': by_status['not_started'],
        'by_status': by_status,
        'healthy': len(records) > 0 and all(r['status'] in PASSING_STATUSES for r in records),
    }


def _racks(racks):
    """[(rack, host)] of the racks mapping {rack: [hosts]}, validated."""
    if racks is None:
        return []
    if not isinstance(racks, dict):
        raise ReportError('racks must map a rack to its hosts, got %r' % (racks,))
    pairs = []
    for rack, hosts in racks.items():
        if not isinstance(hosts, (list, tuple)):
            raise ReportError('racks: rack %s must list its hosts, got %r' % (rack, hosts))
        pairs.extend((_text(rack), _text(host)) for host in hosts)
    return pairs


def build_report(records, title=None, racks=None):
    """Normalize records and group them by rack (both sorted naturally).

    A host listed twice keeps its last record. ``racks`` ({rack: [hosts]}) lists every host of the run: a host
    without a record is ``not_started`` (the rollout stopped before its batch, or has not reached it yet).
    """
    if records is None:
        records = []
    by_host = {}
    for raw in records:
        record = normalize_record(raw)
        by_host[record['host']] = record
    for rack, host in _racks(racks):
        if host and host not in by_host:
            by_host[host] = normalize_record({'host': host, 'rack': rack, 'status': 'not_started'})
    normalized = sorted(by_host.values(), key=lambda r: (sort_key(r['rack']), sort_key(r['host'])))
    racks = []
    for record in normalized:
        if not racks or racks[-1]['name'] != record['rack']:
            racks.append({'name': record['rack'], 'hosts': []})
        racks[-1]['hosts'].append(record)
    for rack in racks:
        rack['summary'] = summarize(rack['hosts'])
    check_mode = any(r['check_mode'] for r in normalized)
    for record in normalized:
        record['service'] = plans_gpuops.service_plan(record, host_reason(record), plans_gpuops.MARK, check_mode)
    return {
        'title': _text(title) or DEFAULT_TITLE,
        'check_mode': check_mode,
        'summary': summarize(normalized),
        'racks': racks,
    }


def _public(record):
    """The keys of a host in the JSON report; its ``drawing`` too when it has one, so that the report read back
    (playbooks/merge_reports.yml) still draws it."""
    public = dict((k, record.get(k)) for k in RECORD_KEYS)
    if record.get('drawing') is not None:
        public['drawing'] = record['drawing']
    if record.get('scheduler') is not None:
        public['scheduler'] = record['scheduler']
        public['service'] = record.get('service')
    return public


def render_json(report):
    """The rack report as JSON text (hosts without bulky extra keys)."""
    doc = {
        'title': report['title'],
        'check_mode': report['check_mode'],
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


def value_text(value):
    """A finding's value as the renderers show it: '' for None, text as it is, the rest as compact JSON."""
    if value is None:
        return u''
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return u'true' if value else u'false'
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
