# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reads ``dcgmi health -c`` (text and ``-j`` JSON) and ``dcgmi discovery -l``, and renders them.

``dcgmi`` draws these with its output tree (``DcgmiOutputTree(left, right)``): a border of ``left - 1`` and
``right - 2`` dashes, header lines across the full width, then one row per value, ``| label | value |``, where
a child's label is indented three columns per level behind ``-> `` and a value's further lines (its overflow)
follow on rows with a blank label. ``-j`` prints the same tree as JSON (jsoncpp, keys sorted):
``{"header": [...], "body": {label: {"value": str, "overflow": [str], "children": {...}}}}``.

``health -c`` in DCGM 4 (tree 28/60)::

    | Overall Health           | Warning                                                  |
    | GPU                      |                                                          |
    | -> 0                     | Warning                                                  |
    |    -> Errors             |                                                          |
    |       -> PCIe system     | Warning                                                  |
    |                          | Detected more than 8 PCIe replays per minute for GPU 0:  |
    |                          | 13                                                       |

Older releases (NVIDIA's documentation example) print ``| Group 1 | Overall Health: Warning |`` in the header,
``| GPU ID: 0 | Warning |`` and ``| | PCIe system: Warning - <message>`` wrapped on blank-label rows. Both are
read. An output that cannot be read, or dcgmi's error text (no host engine, no watches), raises
:class:`HealthParseError` whose message carries what dcgmi printed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

HEALTH_STATES = ('Healthy', 'Warning', 'Failure')
CONNECTION_ERRORS = (
    'unable to connect to host engine',
    'unable to establish a connection',
    'host engine connection invalid',
    'is the host engine running',
)
# dcgmi health -c splits messages longer than this at word boundaries
HEALTH_MESSAGE_WIDTH = 54

_SGR_RE = re.compile(u'\x1b\\[[0-9;]*m')
_INCIDENT_RE = re.compile(r'^(.+?): (Healthy|Warning|Failure) - (.*)$')


class HealthParseError(ValueError):
    """The output of ``dcgmi health`` or ``dcgmi discovery`` could not be read."""


def _clean(text):
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    text = _SGR_RE.sub('', text or '').replace('\r\n', '\n').replace('\r', '\n')
    return text.lstrip(u'\ufeff')


def _shown(text):
    return ' '.join(l.strip() for l in text.split('\n') if l.strip())[:400]


def dcgmi_error(text):
    """dcgmi's ``Error: ...`` lines, or those about a host engine it cannot reach, joined; None when there are none."""
    hits = [l.strip() for l in _clean(text).split('\n')
            if l.strip().startswith('Error:') or any(p in l.lower() for p in CONNECTION_ERRORS)]
    return ' '.join(hits) if hits else None


# ---------------------------------------------------------------- dcgmi's output tree

def tree_rows(text, first_table=True):
    """The rows of a dcgmi table: (label, value), the label keeping its indentation (a child's depth), from the line after the ``+===`` rule (or
    the first row when there is none) to the closing border (with ``first_table`` false, rules between rows are
    skipped and every row is read); ``None`` when the text has no table. Lines may be indented (documentation
    copies)."""
    rows = []
    started = False
    seen_rule = '+=' in text
    for line in text.split('\n'):
        body = line.strip()
        if body.startswith('+='):
            started = True
            continue
        if body.startswith('+-'):
            if started and rows and first_table:
                break
            continue
        if body.startswith('|') and (started or not seen_rule):
            if not body.endswith('|'):
                raise HealthParseError('a row of the table is cut short: %r' % body)
            cells = body[1:-1].split('|')
            if len(cells) != 2:
                raise HealthParseError('a row of the table does not have two columns: %r' % body)
            rows.append((cells[0][1:].rstrip(), cells[1].strip()))
    return rows if rows else None


def render_tree(headers, rows, left, right):
    """A dcgmi output tree (``DcgmiOutputTree(left, right)``): ``rows`` are (level, label, value, overflow)."""
    full = left + right
    hline = '+%s+%s+\n' % ('-' * (left - 1), '-' * (right - 2))
    out = [hline]
    if headers:
        out.extend('| %s|\n' % h.ljust(full - 3) for h in headers)
        out.append('+%s+%s+\n' % ('=' * (left - 1), '=' * (right - 2)))
    for level, label, value, overflow in rows:
        name = ('%s%s' % ('-> '.rjust(level * 3), label)) if level else label
        out.append('| %s | %s |\n' % (name.ljust(left - 3), (value or '').ljust(right - 4)))
        out.extend('| %s | %s |\n' % (''.ljust(left - 3), line.ljust(right - 4)) for line in overflow)
    out.append(hline)
    return ''.join(out)


def styled_json(value, indent=0):
    """JSON as ``dcgmi -j`` prints it (jsoncpp's styled writer: tabs, ``"key" : value``, sorted keys)."""
    pad = '\t' * indent
    if isinstance(value, dict):
        if not value:
            return '{}'
        items = []
        for key in sorted(value):
            item = value[key]
            if isinstance(item, (dict, list)) and item:
                items.append('%s\t%s : \n%s\t%s' % (pad, json.dumps(key), pad, styled_json(item, indent + 1)))
            else:
                items.append('%s\t%s : %s' % (pad, json.dumps(key), styled_json(item, indent + 1)))
        return '{\n' + ',\n'.join(items) + '\n' + pad + '}'
    if isinstance(value, list):
        if not value:
            return '[]'
        items = ['%s\t%s' % (pad, styled_json(item, indent + 1)) for item in value]
        return '[\n' + ',\n'.join(items) + '\n' + pad + ']'
    return json.dumps(value)


def _json_body(text):
    start = text.find('{')
    if start < 0:
        return None
    try:
        doc, _end = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        raise HealthParseError('the JSON cannot be read (cut short or damaged?): %s' % exc)
    if not isinstance(doc, dict) or not isinstance(doc.get('body'), dict):
        raise HealthParseError('the JSON has no "body" object: %r' % _shown(text))
    return doc


# ---------------------------------------------------------------- health -c

def parse_health_check(text):
    """``{'overall': 'Healthy'|'Warning'|'Failure', 'gpus': {gpu: {'status', 'incidents': [{'system', 'health',
    'message'}]}}}`` from ``dcgmi health -c`` (text or ``-j``). ``system`` is dcgmi's name without the trailing
    `` system`` (``PCIe``, ``NVLINK``, ``Memory``, ``InfoROM``, ``Driver``...). Only GPUs with an incident appear."""
    text = _clean(text)
    if not text.strip():
        raise HealthParseError('dcgmi health -c: empty output')
    error = dcgmi_error(text)
    if error:
        raise HealthParseError('dcgmi health -c: %s' % error)
    try:
        if text.lstrip().startswith('{') or ('{' in text and '+-' not in text):
            result = _health_json(_json_body(text))
        else:
            result = _health_text(text)
    except HealthParseError as exc:
        raise HealthParseError('dcgmi health -c: %s' % exc)
    if result['overall'] not in HEALTH_STATES:
        raise HealthParseError('dcgmi health -c: overall health %r is none of %s'
                               % (result['overall'], ', '.join(HEALTH_STATES)))
    return result


def _system(label):
    label = label.strip()
    return label[:-len(' system')] if label.endswith(' system') else label


def _health_json(doc):
    body = doc['body']
    overall = (body.get('Overall Health') or {}).get('value')
    if overall is None:
        raise HealthParseError('the JSON has no "Overall Health"')
    gpus = {}
    for gpu, node in sorted(((body.get('GPU') or {}).get('children') or {}).items()):
        incidents = []
        errors = ((node.get('children') or {}).get('Errors') or {}).get('children') or {}
        for system, entry in errors.items():
            incidents.append({'system': _system(system), 'health': entry.get('value'),
                              'message': ' '.join(entry.get('overflow') or [])})
        gpus[int(gpu)] = {'status': node.get('value'), 'incidents': incidents}
    return {'overall': overall, 'gpus': gpus}


def _health_text(text):
    header = re.search(r'Overall Health:\s*(\w+)', text)
    rows = tree_rows(text, first_table=False)
    if rows is None:
        raise HealthParseError('no table and no JSON in the output: %r' % _shown(text))
    if header:
        return _health_doc_layout(header.group(1), rows)
    return _health_tree(rows)


def _health_doc_layout(overall, rows):
    gpus = {}
    gpu = None
    for label, value in rows:
        label = label.strip()
        match = re.match(r'^GPU ID: (\d+)$', label)
        if match:
            gpu = int(match.group(1))
            gpus[gpu] = {'status': value, 'incidents': []}
            continue
        if label or gpu is None:
            raise HealthParseError('unexpected row %r | %r' % (label, value))
        incident = _INCIDENT_RE.match(value)
        if incident:
            gpus[gpu]['incidents'].append({'system': _system(incident.group(1)), 'health': incident.group(2),
                                           'message': incident.group(3)})
        elif gpus[gpu]['incidents']:
            gpus[gpu]['incidents'][-1]['message'] += ' ' + value
        else:
            raise HealthParseError('a message row before any incident: %r' % value)
    return {'overall': overall, 'gpus': gpus}


def _health_tree(rows):
    overall = None
    gpus = {}
    group = gpu = incident = None
    for label, value in rows:
        name = label.strip()
        level = (len(label) - len(label.lstrip())) // 3 + 1 if name.startswith('->') else 0
        name = name[2:].strip() if level else name
        if level == 0 and name == 'Overall Health':
            overall = value
        elif level == 0 and name:
            group, gpu, incident = name, None, None
        elif level == 1:
            gpu = int(name) if group == 'GPU' and name.isdigit() else None
            if gpu is not None:
                gpus[gpu] = {'status': value, 'incidents': []}
            incident = None
        elif level == 2 and name == 'Errors':
            continue
        elif level == 3:
            incident = {'system': _system(name), 'health': value, 'message': ''}
            if gpu is not None:
                gpus[gpu]['incidents'].append(incident)
        elif not name and incident is not None:
            incident['message'] = (incident['message'] + ' ' + value).strip()
        else:
            raise HealthParseError('unexpected row %r | %r' % (label, value))
    if overall is None:
        raise HealthParseError('the table has no "Overall Health" row')
    return {'overall': overall, 'gpus': gpus}


def split_health_message(message, width=HEALTH_MESSAGE_WIDTH):
    """A message cut at word boundaries into lines of at most ``width`` characters, as dcgmi prints it."""
    words = message.replace('\n', ' ').split()
    lines, line = [], ''
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + ' ' + word) if line else word
    if line:
        lines.append(line)
    return lines


def render_health_check(gpus_status, overall=None, json_output=False):
    """``dcgmi health -c`` as DCGM 4 prints it (tree 28/60, or ``-j`` JSON) for ``gpus_status``, the shape
    :func:`parse_health_check` returns under ``gpus`` (GPUs without incidents may be left out). ``overall``
    defaults to the worst GPU status."""
    order = {'Healthy': 0, 'Warning': 1, 'Failure': 2}
    gpus = dict((int(k), v) for k, v in (gpus_status or {}).items() if v.get('incidents'))
    if overall is None:
        overall = max([v.get('status') or 'Healthy' for v in gpus.values()] or ['Healthy'], key=order.get)
    if json_output:
        body = {'Overall Health': {'value': overall}}
        if gpus:
            body['GPU'] = {'children': {}}
            for gpu in sorted(gpus):
                errors = {}
                for inc in gpus[gpu]['incidents']:
                    errors['%s system' % inc['system'] if inc['system'] != 'Driver' else 'Driver'] = {
                        'value': inc['health'], 'overflow': split_health_message(inc['message'])}
                body['GPU']['children'][str(gpu)] = {'value': gpus[gpu]['status'],
                                                     'children': {'Errors': {'children': errors}}}
        return styled_json({'header': ['Health Monitor Report'], 'body': body}) + '\n'
    rows = [(0, 'Overall Health', overall, [])]
    if gpus:
        rows.append((0, 'GPU', '', []))
        for gpu in sorted(gpus):
            rows.append((1, str(gpu), gpus[gpu]['status'], []))
            rows.append((2, 'Errors', '', []))
            for inc in gpus[gpu]['incidents']:
                label = inc['system'] if inc['system'] == 'Driver' else '%s system' % inc['system']
                rows.append((3, label, inc['health'], split_health_message(inc['message'])))
    return render_tree(['Health Monitor Report'], rows, 28, 60)


# ---------------------------------------------------------------- discovery -l

def parse_discovery(text):
    """``[{'gpu', 'name', 'bus_id', 'uuid'}]`` from ``dcgmi discovery -l``; the count dcgmi prints must match."""
    text = _clean(text)
    if not text.strip():
        raise HealthParseError('dcgmi discovery -l: empty output')
    error = dcgmi_error(text)
    if error:
        raise HealthParseError('dcgmi discovery -l: %s' % error)
    lines = text.split('\n')
    count_at = next((i for i, l in enumerate(lines) if re.match(r'^\s*\d+ GPUs? found\b', l)), None)
    if count_at is None:
        raise HealthParseError('dcgmi discovery -l: no "N GPUs found" line: %r' % _shown(text))
    count = int(lines[count_at].split()[0])
    section = []
    for line in lines[count_at + 1:]:
        if re.match(r'^\s*\d+ \w+ found', line):
            break
        section.append(line)
    gpus = []
    for line in section:
        body = line.strip()
        if not body.startswith('|'):
            continue
        cells = [c.strip() for c in body.strip('|').split('|')]
        if len(cells) != 2 or cells == ['GPU ID', 'Device Information']:
            continue
        if cells[0]:
            if not cells[0].isdigit():
                raise HealthParseError('dcgmi discovery -l: bad GPU id %r' % cells[0])
            gpus.append({'gpu': int(cells[0]), 'name': None, 'bus_id': None, 'uuid': None})
        if not gpus:
            raise HealthParseError('dcgmi discovery -l: a row before any GPU: %r' % body)
        key, _sep, value = cells[1].partition(': ')
        field = {'Name': 'name', 'PCI Bus ID': 'bus_id', 'Device UUID': 'uuid'}.get(key)
        if field:
            gpus[-1][field] = value.strip()
    if len(gpus) != count:
        raise HealthParseError('dcgmi discovery -l: it says %d GPU(s) found but lists %d' % (count, len(gpus)))
    for gpu in gpus:
        missing = [k for k in ('name', 'bus_id', 'uuid') if not gpu[k]]
        if missing:
            raise HealthParseError('dcgmi discovery -l: GPU %d has no %s' % (gpu['gpu'], ', '.join(missing)))
    return gpus


def render_discovery(gpus, cpus=True):
    """``dcgmi discovery -l`` as DCGM 3.3 prints it (GPUs, an empty NvSwitch table, and with ``cpus`` an empty CPU
    table), for ``gpus`` in the shape :func:`parse_discovery` returns."""
    line = '+--------+----------------------------------------------------------------------+\n'
    out = ['%d GPU%s found.\n' % (len(gpus), '' if len(gpus) == 1 else 's'), line,
           '| GPU ID | Device Information                                                   |\n', line]
    for gpu in gpus:
        for i, (key, field) in enumerate((('Name', 'name'), ('PCI Bus ID', 'bus_id'), ('Device UUID', 'uuid'))):
            out.append('| %s | %s |\n' % ((str(gpu['gpu']) if i == 0 else '').ljust(6),
                                          ('%s: %s' % (key, gpu[field])).ljust(68)))
        out.append(line)
    out.append('0 NvSwitches found.\n+-----------+\n| Switch ID |\n+-----------+\n+-----------+\n')
    if cpus:
        out.extend(['0 CPUs found.\n', line,
                    '| CPU ID | Device Information                                                   |\n', line, line])
    return ''.join(out)
