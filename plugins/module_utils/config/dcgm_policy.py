# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DCGM violation policy as data: the table of conditions, validation of ``dcgm_policy``, the ``dcgmi policy``
command lines, and reading (and rendering) ``dcgmi policy --get``.

``dcgmi policy -g G --set A,V <conditions>`` replaces the group's policy (at least one condition is required;
``--clear`` removes it). ``A`` is the action (0 none, 1 GPU reset), ``V`` the validation after it (0 none, 1..3
short, medium, long system validation); DCGM 4.6 stores both but no longer acts on them. ``--get`` prints a
tree (``DcgmiOutputTree(30, 50)`` in DCGM 4)::

    Policy information
    +-----------------------------+------------------------------------------------+
    | Policy Information                                                            |
    | DCGM_ALL_SUPPORTED_GPUS                                                       |
    +=============================+================================================+
    | Violation conditions        | Double-bit ECC errors                          |
    |                             | Max temperature threshold - 90                 |
    | Isolation mode              | Manual                                         |
    | Action on violation         | None                                           |
    | Validation after action     | None                                           |
    | Validation failure action   | None                                           |
    +-----------------------------+------------------------------------------------+
    **** Non-homogenous settings across group. Use with \u2013v flag to see details.

(dcgmi prints the last line after every non-verbose ``--get``, whether or not the GPUs differ; a field whose
GPUs differ shows ``****``). Older releases, as in NVIDIA's documentation, draw 78 columns with the group
name and ``Policy Information`` side by side in the header and name the validations ``NVVS (Short)``.
Group 0 is DCGM's group of all GPUs, ``DCGM_ALL_SUPPORTED_GPUS``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcgmi_health import render_tree, styled_json

# name, dcgmi flag, value type, label in `dcgmi policy --get`, what it watches, bounds for a number
CONDITIONS = (
    {'name': 'dbe', 'flag': '-e', 'long_flag': '--eccerrors', 'type': 'bool', 'label': 'Double-bit ECC errors',
     'description': 'double-bit (uncorrectable) ECC errors'},
    {'name': 'pcie', 'flag': '-p', 'long_flag': '--pcierrors', 'type': 'bool', 'label': 'PCI errors and replays',
     'description': 'PCIe replay errors'},
    {'name': 'max_pages', 'flag': '-M', 'long_flag': '--maxpages', 'type': 'int',
     'label': 'Max retired pages threshold', 'description': 'retired pages above this count', 'min': 1,
     'max': 100000},
    {'name': 'thermal', 'flag': '-T', 'long_flag': '--maxtemp', 'type': 'int', 'label': 'Max temperature threshold',
     'description': 'GPU temperature above this many degrees Celsius', 'min': 1, 'max': 200},
    {'name': 'power', 'flag': '-P', 'long_flag': '--maxpower', 'type': 'int', 'label': 'Max power threshold',
     'description': 'GPU power above this many watts', 'min': 1, 'max': 10000},
    {'name': 'nvlink', 'flag': '-n', 'long_flag': '--nvlinkerrors', 'type': 'bool', 'label': 'NVLink Errors',
     'description': 'NVLink errors'},
    {'name': 'xid', 'flag': '-x', 'long_flag': '--xiderrors', 'type': 'bool', 'label': 'XID error detected.',
     'description': 'XID errors'},
)
CONDITION_NAMES = tuple(c['name'] for c in CONDITIONS)
_BY_NAME = dict((c['name'], c) for c in CONDITIONS)

ACTIONS = ('none', 'reset')                               # --set's first digit
ACTION_LABELS = {'none': 'None', 'reset': 'Reset GPU'}
VALIDATIONS = ('none', 'short', 'medium', 'long')         # --set's second digit
VALIDATION_LABELS = {'none': 'None', 'short': 'System Validation (Short)', 'medium': 'System Validation (Medium)',
                     'long': 'System Validation (Long)', 'extended': 'System Validation (Extended)'}
DOC_VALIDATION_LABELS = {'none': 'None', 'short': 'NVVS (Short)', 'medium': 'NVVS (Medium)', 'long': 'NVVS (Long)'}
ALL_GPUS_GROUP = 0
ALL_GPUS_GROUP_NAME = 'DCGM_ALL_SUPPORTED_GPUS'
MIXED = '****'
NOT_HOMOGENEOUS = u'**** Non-homogenous settings across group. Use with \u2013v flag to see details.'
DOC_NOT_HOMOGENEOUS = '**** Non-homogenous settings across group. Use with -v flag to see details.'
SM_UTIL_MESSAGE = ('DCGM has no SM-utilisation policy; set dcgm_alert_thresholds.sm_util_max_percent, an alert '
                   'rule, instead')
_FIELDS = ('Violation conditions', 'Isolation mode', 'Action on violation', 'Validation after action',
           'Validation failure action')


class PolicyParseError(ValueError):
    """The output of ``dcgmi policy --get`` could not be read (the message carries dcgmi's text)."""


def empty_policy():
    return {'conditions': {}, 'action': 'none', 'validation': 'none'}


def validate(policy, var='dcgm_policy'):
    """``(normalized, errors)``: the policy with only its enabled conditions (``True`` or a number), the action and
    validation as words; each error names the variable to change."""
    errors = []
    normalized = empty_policy()
    if policy is None:
        return normalized, errors
    if not isinstance(policy, dict):
        return normalized, ['%s: must be a dict with conditions, action and validation' % var]
    for key in sorted(policy):
        if key not in ('conditions', 'action', 'validation'):
            errors.append('%s.%s: unknown key (known: action, conditions, validation)' % (var, key))
    conditions = policy.get('conditions') or {}
    if not isinstance(conditions, dict):
        errors.append('%s.conditions: must be a dict of condition: value' % var)
        conditions = {}
    for name in sorted(conditions):
        value = conditions[name]
        where = '%s.conditions.%s' % (var, name)
        if str(name).lower().startswith('sm_util'):
            errors.append('%s: %s' % (where, SM_UTIL_MESSAGE))
            continue
        cond = _BY_NAME.get(name)
        if cond is None:
            errors.append('%s: unknown policy condition (known: %s)' % (where, ', '.join(CONDITION_NAMES)))
            continue
        if value is None or value is False:
            continue
        if cond['type'] == 'bool':
            if value is not True:
                errors.append('%s: must be true or false, not %r' % (where, value))
                continue
            normalized['conditions'][name] = True
            continue
        if value is True or not re.match(r'^\d+$', str(value).strip()):
            errors.append('%s: must be a whole number (%s), or false to turn it off; got %r'
                          % (where, cond['description'], value))
            continue
        number = int(str(value).strip())
        if not cond['min'] <= number <= cond['max']:
            errors.append('%s: %d is outside %d..%d (%s)'
                          % (where, number, cond['min'], cond['max'], cond['description']))
            continue
        normalized['conditions'][name] = number
    for key, words in (('action', ACTIONS), ('validation', VALIDATIONS)):
        value = policy.get(key, 'none')
        if value is None:
            value = 'none'
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(words):
            value = words[value]
        if str(value).lower() not in words:
            errors.append('%s.%s: must be one of %s (or 0..%d), not %r'
                          % (var, key, ', '.join(words), len(words) - 1, value))
            continue
        normalized[key] = str(value).lower()
    return normalize(normalized), errors


def normalize(policy):
    """What DCGM keeps: without any condition there is no policy, so action and validation read back as none."""
    out = {'conditions': dict(policy.get('conditions') or {}), 'action': policy.get('action', 'none'),
           'validation': policy.get('validation', 'none')}
    if not out['conditions']:
        out['action'] = out['validation'] = 'none'
    return out


def same(a, b):
    """Whether two normalized policies are the same for DCGM."""
    keys = ('conditions', 'action', 'validation')
    return not (a.get('mixed') or b.get('mixed')) and all(normalize(a)[k] == normalize(b)[k] for k in keys)


def _base(dcgmi, group, host):
    argv = [dcgmi, 'policy', '-g', str(group)]
    return argv, (['--host', str(host)] if host else [])


def get_argv(dcgmi, group=ALL_GPUS_GROUP, host=None, json_output=False):
    argv, tail = _base(dcgmi, group, host)
    return argv + ['--get'] + (['-j'] if json_output else []) + tail


def clear_argv(dcgmi, group=ALL_GPUS_GROUP, host=None):
    argv, tail = _base(dcgmi, group, host)
    return argv + ['--clear'] + tail


def set_argv(dcgmi, policy, group=ALL_GPUS_GROUP, host=None):
    """``dcgmi policy -g G --set A,V <flags>`` for a normalized policy; ``None`` when it has no condition (dcgmi
    refuses ``--set`` without one: clearing is all there is to do)."""
    policy = normalize(policy)
    if not policy['conditions']:
        return None
    argv, tail = _base(dcgmi, group, host)
    argv += ['--set', '%d,%d' % (ACTIONS.index(policy['action']), VALIDATIONS.index(policy['validation']))]
    for cond in CONDITIONS:
        value = policy['conditions'].get(cond['name'])
        if value is None or value is False:
            continue
        argv.append(cond['flag'])
        if cond['type'] == 'int':
            argv.append(str(int(value)))
    return argv + tail


def policy_from_set_argv(argv):
    """The normalized policy a ``dcgmi policy ... --set A,V <flags>`` command line sets (short or long flags)."""
    flags = {}
    for cond in CONDITIONS:
        flags[cond['flag']] = flags[cond['long_flag']] = cond
    policy = empty_policy()
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == '--set':
            action, _sep, validation = args[i + 1].partition(',')
            policy['action'] = ACTIONS[int(action)]
            policy['validation'] = VALIDATIONS[int(validation)]
            i += 2
            continue
        if arg in flags:
            cond = flags[arg]
            if cond['type'] == 'int':
                policy['conditions'][cond['name']] = int(args[i + 1])
                i += 2
                continue
            policy['conditions'][cond['name']] = True
        i += 1
    return normalize(policy)


# ---------------------------------------------------------------- --get

def _conditions_from(values):
    conditions = {}
    for value in values:
        if value == 'None':
            continue
        for cond in CONDITIONS:
            if cond['type'] == 'bool' and value == cond['label']:
                conditions[cond['name']] = True
                break
            if cond['type'] == 'int' and value.startswith(cond['label']):
                number = re.match(r'^%s - (\d+)$' % re.escape(cond['label']), value)
                if not number:
                    raise PolicyParseError('dcgmi policy --get: cannot read %r' % value)
                conditions[cond['name']] = int(number.group(1))
                break
        else:
            raise PolicyParseError('dcgmi policy --get: unknown violation condition %r' % value)
    return conditions


def _word(value, labels, field):
    for extra in (DOC_VALIDATION_LABELS,) if field == 'Validation after action' else ():
        for word, label in extra.items():
            if value == label:
                return word
    for word, label in labels.items():
        if value == label:
            return word
    raise PolicyParseError('dcgmi policy --get: unknown %s %r' % (field.lower(), value))


def _policy_from_fields(fields):
    missing = [f for f in ('Violation conditions', 'Action on violation', 'Validation after action')
               if f not in fields]
    if missing:
        raise PolicyParseError('dcgmi policy --get: the table has no %s' % ', '.join(missing))
    policy = empty_policy()
    mixed = [f for f in _FIELDS if f in fields and MIXED in fields[f]]
    if mixed:
        policy['mixed'] = mixed
    if 'Violation conditions' not in mixed:
        policy['conditions'] = _conditions_from(fields['Violation conditions'])
    if 'Action on violation' not in mixed:
        policy['action'] = _word(fields['Action on violation'][0], ACTION_LABELS, 'Action on violation')
    if 'Validation after action' not in mixed:
        policy['validation'] = _word(fields['Validation after action'][0], VALIDATION_LABELS,
                                     'Validation after action')
    out = normalize(policy) if not mixed else policy
    if mixed:
        out['mixed'] = mixed
    return out


def parse_policy_get(text):
    """The normalized policy ``dcgmi policy --get`` (text or ``-j``) shows. A field whose GPUs differ (``****``)
    is listed under ``mixed`` (such a policy never equals a wanted one). With ``-v`` (one table per GPU) the
    tables must agree, or the result is mixed."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    text = (text or '').replace('\r\n', '\n').lstrip(u'\ufeff')
    if not text.strip():
        raise PolicyParseError('dcgmi policy --get: empty output')
    errors = [l.strip() for l in text.split('\n') if l.strip().startswith('Error')
              or 'connect to host engine' in l.lower() or 'establish a connection' in l.lower()]
    if errors:
        raise PolicyParseError('dcgmi policy --get: %s' % ' '.join(errors))
    stripped = text.lstrip()
    if '{' in text and not any(l.strip().startswith('+') for l in text.split('\n')):
        tables = _json_tables(text)
    else:
        tables = _text_tables(text)
    if not tables:
        raise PolicyParseError('dcgmi policy --get: no policy table in the output: %r' % stripped[:300])
    policies = [_policy_from_fields(t) for t in tables]
    first = policies[0]
    if any(p != first for p in policies[1:]):
        out = dict(first)
        out['mixed'] = list(_FIELDS)
        return out
    return first


def _json_tables(text):
    tables = []
    decoder = json.JSONDecoder()
    at = text.find('{')
    while at >= 0:
        try:
            doc, end = decoder.raw_decode(text[at:])
        except ValueError as exc:
            raise PolicyParseError('dcgmi policy --get: the JSON cannot be read: %s' % exc)
        body = doc.get('body') if isinstance(doc, dict) else None
        if not isinstance(body, dict):
            raise PolicyParseError('dcgmi policy --get: the JSON has no "body" object')
        fields = {}
        for field, node in body.items():
            values = ([node['value']] if 'value' in node else []) + list(node.get('overflow') or [])
            fields[field[:1].upper() + field[1:].lower()] = [str(v).strip() for v in values]
        tables.append(fields)
        at = text.find('{', at + end)
    return tables


def _text_tables(text):
    tables = []
    fields = None
    last = None
    in_body = False
    for line in text.split('\n'):
        body = line.strip()
        if body.startswith('+='):
            fields, last, in_body = {}, None, True
            continue
        if body.startswith('+'):
            if in_body and fields:
                tables.append(fields)
                in_body = False
            continue
        if not in_body or not body.startswith('|'):
            continue
        if not body.endswith('|') or body.count('|') != 3:
            raise PolicyParseError('dcgmi policy --get: a row of the table cannot be read: %r' % body)
        label, value = [c.strip() for c in body[1:-1].split('|')]
        if label:
            # documentation copies write "Violation Conditions"
            last = label[:1].upper() + label[1:].lower()
            fields[last] = [value]
        elif last is not None:
            fields[last].append(value)
        else:
            raise PolicyParseError('dcgmi policy --get: a row before any field: %r' % body)
    if in_body:
        raise PolicyParseError('dcgmi policy --get: the table has no closing border (output cut short)')
    return tables


def _values(policy, layout):
    policy = normalize(policy)
    conditions = []
    for cond in CONDITIONS:
        value = policy['conditions'].get(cond['name'])
        if value is None or value is False:
            continue
        conditions.append(cond['label'] if cond['type'] == 'bool' else '%s - %d' % (cond['label'], int(value)))
    labels = DOC_VALIDATION_LABELS if layout == 'doc' else VALIDATION_LABELS
    return [('Violation conditions', conditions or ['None']), ('Isolation mode', ['Manual']),
            ('Action on violation', [ACTION_LABELS[policy['action']]]),
            ('Validation after action', [labels[policy['validation']]]),
            ('Validation failure action', ['None'])]


def render_policy_get(policy, group_id=ALL_GPUS_GROUP, group_name=None, layout='dcgm4', json_output=False,
                      entity=None):
    """``dcgmi policy -g <group_id> --get`` for a normalized policy. ``layout`` ``dcgm4`` is what DCGM 4 prints
    (tree 30/50, the two headers on their own lines, ``System Validation (Short)``); ``doc`` is the older layout
    of NVIDIA's documentation (78 columns, ``<group name> | Policy Information`` in the header, ``NVVS (Short)``).
    ``entity`` (e.g. ``GPU ID: 0``) draws one GPU's table as ``-v`` does, without the closing remark."""
    if group_name is None:
        group_name = ALL_GPUS_GROUP_NAME if int(group_id) == ALL_GPUS_GROUP else 'group%d' % int(group_id)
    title = entity or group_name
    values = _values(policy, layout)
    if json_output:
        body = {}
        for field, vals in values:
            node = {'value': vals[0]}
            if vals[1:]:
                node['overflow'] = vals[1:]
            body[field] = node
        doc = styled_json({'header': ['Policy Information', title], 'body': body})
        return 'Policy information\n%s\n%s' % (doc, '' if entity else NOT_HOMOGENEOUS + '\n')
    if layout == 'doc':
        line = '+%s+%s+\n' % ('-' * 27, '-' * 48)
        out = ['Policy information\n', line, '| %s | %s |\n' % (title.ljust(25), 'Policy Information'.ljust(46)),
               '+%s+%s+\n' % ('=' * 27, '=' * 48)]
        for field, vals in values:
            for i, val in enumerate(vals):
                out.append('| %s | %s |\n' % ((field if i == 0 else '').ljust(25), val.ljust(46)))
        out.append(line)
        if not entity:
            out.append(DOC_NOT_HOMOGENEOUS + '\n')
        return ''.join(out)
    rows = [(0, field, vals[0], vals[1:]) for field, vals in values]
    table = render_tree(['Policy Information', title], rows, 30, 50)
    return 'Policy information\n' + table + ('' if entity else NOT_HOMOGENEOUS + '\n')
