# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Acceptance gates in the rack report: the DCGM diagnostic, the NCCL bus bandwidth.

A rollout record's ``gates`` maps each role of the run that has a gate (its ``tasks/gate.yml``) to what the gate
reported as ``<role>_gate``::

    {"dcgm": {"name": "dcgm_diag", "ran": true, "passed": false,
              "summary": "level 1: Fail (Memtest on GPU 1)",
              "failures": [{"check": "dcgm_diag", "subject": "GPU 1", "expected": "Pass", "actual": "Fail",
                            "message": "Memtest: ..."}]}}

A gate that did not run says why in ``summary`` (``ran`` false, ``passed`` null). A gate that ran and did not pass,
or that reported nothing at all (null), fails its host: a gate is never passed on what it could not read.
Standard library only (Python 3.8+).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.rawtext import as_text

GATE_FAILURE_KEYS = ('check', 'subject', 'expected', 'actual', 'message')


class GateError(ValueError):
    """A gate record cannot be understood."""


_text = as_text


def _flag(value, name, host):
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ('true', 'yes', '1', 'false', 'no', '0'):
        return value.strip().lower() in ('true', 'yes', '1')
    raise GateError('host %s: %s must be a boolean or null, got %r' % (host, name, value))


def _failures(values, name, host):
    if values is None:
        return []
    if isinstance(values, dict):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise GateError('host %s: %s must be a list, got %r' % (host, name, values))
    out = []
    for item in values:
        entry = dict((key, None) for key in GATE_FAILURE_KEYS)
        if isinstance(item, dict):
            entry.update((key, item.get(key)) for key in GATE_FAILURE_KEYS)
        else:
            entry['message'] = _text(item)
        out.append(entry)
    return out


def normalize_gates(value, host):
    """The record's gates as a list sorted by role: {role, name, ran, passed, summary, failures}."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        # normalized already (a record read back from a report): {role: gate} again
        if not all(isinstance(gate, dict) and gate.get('role') for gate in value):
            raise GateError('host %s: gates must be a dict of role: gate, got %r' % (host, value))
        value = dict((gate['role'], gate) for gate in value)
    if not isinstance(value, dict):
        raise GateError('host %s: gates must be a dict of role: gate, got %r' % (host, value))
    gates = []
    for role in sorted(value, key=_text):
        raw = value[role]
        role = _text(role)
        where = 'gates.%s' % role
        if raw is None:
            gates.append({'role': role, 'name': role, 'ran': True, 'passed': False,
                          'summary': u'the gate reported nothing', 'failures': [
                              dict(check=role, subject=u'node', expected=u'a gate result', actual=u'none',
                                   message=u'the %s gate ran but reported nothing' % role)]})
            continue
        if not isinstance(raw, dict):
            raise GateError('host %s: %s must be a dict, got %r' % (host, where, raw))
        ran = _flag(raw.get('ran', True), where + '.ran', host)
        passed = _flag(raw.get('passed'), where + '.passed', host)
        if ran and passed is None:
            passed = False
        gates.append({'role': role, 'name': _text(raw.get('name')) or role, 'ran': bool(ran),
                      'passed': passed if ran else None, 'summary': _text(raw.get('summary')) or u'',
                      'failures': _failures(raw.get('failures'), where + '.failures', host)})
    return gates


def failed(gates):
    """The gates that ran and did not pass."""
    return [gate for gate in gates if gate['ran'] and not gate['passed']]


def gate_outcome(gate):
    """PASS, FAIL or the reason it did not run."""
    if not gate['ran']:
        return u'not run'
    return u'PASS' if gate['passed'] else u'FAIL'


def reasons(gates):
    """One text per failed gate, for the host's reason."""
    out = []
    for gate in failed(gates):
        messages = [_text(f.get('message')) or _text(f.get('check')) for f in gate['failures']]
        detail = u'; '.join(m for m in messages if m) or gate['summary'] or u'failed'
        out.append(u'gate %s failed: %s' % (gate['name'], detail))
    return out


def cell(gates):
    """The report table's Gates cell: name and outcome of each gate."""
    if not gates:
        return u'-'
    return u', '.join(u'%s %s' % (gate['name'], gate_outcome(gate)) for gate in gates)


def junit_cases(gates):
    """(phase, outcome, message, text) per gate, as report._testcases gives them."""
    cases = []
    for gate in gates:
        phase = u'gate_%s' % gate['name']
        if not gate['ran']:
            cases.append((phase, 'skipped', gate['summary'] or u'not run', None))
        elif gate['passed']:
            cases.append((phase, 'pass', None, None))
        else:
            lines = [u'%s %s: expected %s, actual %s%s' % (
                _text(f['check']) or gate['name'], _text(f['subject']) or u'node', _text(f['expected']) or u'',
                _text(f['actual']) or u'', (u' - ' + _text(f['message'])) if f['message'] else u'')
                for f in gate['failures']]
            cases.append((phase, 'failure', gate['summary'] or u'gate failed', u'\n'.join(lines) or None))
    return cases
