# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reads the output of ``dcgmi diag``: the JSON of DCGM 3.x and 4.x (``-j``) and the text tables of both.

JSON layouts (jsoncpp ``toStyledString``, keys sorted):

- DCGM 3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
  [{"gpu_id": "0", "status", "info": str, "warnings": [{"warning", "error_id", ...}]}]}]}]}, "version",
  "Driver Version Detected", "GPU Device IDs": [...]}`` (level-one results carry no ``gpu_id``).
- DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
  [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status", "info": [str], "warnings": [...]}],
  "test_summary": {"status", "warnings"}}]}]}, "entity_groups": [{"entity_group", "entities": [{"entity_id",
  "device_id", "serial_num"}]}], "metadata": {"version", "Driver Version Detected"}}``.
- Both: a failure before any test is ``{"DCGM (GPU )Diagnostic": {"runtime_error": str, "version": str}}``;
  ``--iterations`` wraps runs in ``{"iterations": [...], "Overall Result": "Pass"|"Fail"}``.

Text tables: a 25-character name column and a 46-character result column; categories are separator rows
(``|-----  Metadata  ---...``); messages (``Info``, ``Warning``, DCGM 4's ``Warning: GPU3``) are cut every 45
characters, mid-word, onto rows whose name column is blank. DCGM 3 prints ``Pass - All``, ``Fail - GPU: 3``,
``Pass - GPUs: 0, 1`` (or a bare ``Pass`` for the deployment tests) and names the GPU at the start of each
message (``GPU 0 Error using CUDA API cuInit ...``); DCGM 4 prints the test's result then one ``GPU0: Pass``
row per entity.

Anything that cannot be read raises :class:`DiagParseError` (never a pass); a ``dcgmi`` that cannot reach the
host engine raises :class:`DiagConnectionError`. A text table without its closing border (output cut short)
is an error unless what was read already fails, in which case the verdict is Fail and the cut is reported in
``errors``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

RESULTS = ('Pass', 'Fail', 'Warn', 'Skip')
# how a result string of dcgmi maps to ours ("Not Run" is a test that did not run: Skip)
_RESULT_WORDS = {'pass': 'Pass', 'fail': 'Fail', 'warn': 'Warn', 'skip': 'Skip', 'not run': 'Skip'}
_RANK = {'Skip': 0, 'Pass': 1, 'Warn': 2, 'Fail': 3}

# what dcgmi prints when the host engine does not answer
CONNECTION_ERRORS = (
    'unable to connect to host engine',
    'unable to establish a connection',
    'host engine connection invalid',
    'connection to the host engine',
    'is the host engine running',
)

_SGR_RE = re.compile(u'\x1b\\[[0-9;]*m')
_CATEGORY_RE = re.compile(r'^[|+]-+\s+([A-Za-z][A-Za-z /]*?)\s+-+[+|]')
_BORDER_RE = re.compile(r'^\+[-=]+\+[-=]+\+$')
_ENTITY_RESULT_RE = re.compile(r'^([A-Za-z_]+?)(\d+): (Pass|Fail|Warn|Skip|Not Run)$')
_V3_RESULT_RE = re.compile(r'^(Pass|Fail|Warn|Skip|Not Run)(?: - (All|GPUs?: ([\d, ]+)))?$')
_MSG_LABEL_RE = re.compile(r'^(Info|Warning)(?:: ([A-Za-z_]+?)(\d+))?$')
_GPU_IN_MSG_RE = re.compile(r'^GPU (\d+)\b')
_ERROR_LINE_RE = re.compile(r'(^error\b|\berror:|\bfail(ed|ure)?\b)', re.IGNORECASE)
_BENIGN_LINES = ('Successfully ran diagnostic for group.',)


class DiagParseError(ValueError):
    """The output of ``dcgmi diag`` could not be read."""


class DiagConnectionError(DiagParseError):
    """``dcgmi`` could not reach the host engine; the message carries what it printed."""


def clean_text(text):
    """Text with a byte-order mark, terminal colour codes and carriage returns removed."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    text = _SGR_RE.sub('', text or '').replace('\r\n', '\n').replace('\r', '\n')
    return text.lstrip(u'\ufeff')


def connection_error(text):
    """dcgmi's lines about a host engine it cannot reach, or None."""
    lines = [l.strip() for l in clean_text(text).split('\n')]
    hits = [l for l in lines if any(p in l.lower() for p in CONNECTION_ERRORS)]
    return ' '.join(hits) if hits else None


def _result(word, where):
    value = _RESULT_WORDS.get(str(word).strip().lower())
    if value is None:
        raise DiagParseError('%s: unknown result %r' % (where, word))
    return value


def worst(results, default='Skip'):
    """The worst of ``results`` (Fail > Warn > Pass > Skip)."""
    results = list(results)
    return max(results, key=lambda r: _RANK[r]) if results else default


def parse_diag(text):
    """Parse ``dcgmi diag`` output (JSON or text table, DCGM 3.x or 4.x); see the module docstring."""
    text = clean_text(text)
    if not text.strip():
        raise DiagParseError('dcgmi diag: empty output')
    lines = text.split('\n')
    first_json = next((i for i, l in enumerate(lines) if l.strip().startswith('{')), None)
    first_table = next((i for i, l in enumerate(lines) if l.strip().startswith('+-')), None)
    if first_json is not None and (first_table is None or first_json < first_table):
        parsed = _parse_json(text[text.index('{'):], lines[:first_json])
    elif first_table is not None:
        parsed = _parse_text(lines)
    else:
        conn = connection_error(text)
        if conn:
            raise DiagConnectionError('dcgmi diag: cannot reach the host engine: %s' % conn)
        shown = ' '.join(l.strip() for l in lines if l.strip())[:300]
        raise DiagParseError('dcgmi diag: no result table and no JSON in the output: %r' % shown)
    _finish(parsed)
    return parsed


def _finish(parsed):
    if not parsed['gpus']:
        parsed['gpus'] = sorted(set(r['gpu'] for t in parsed['tests'] for r in t['results'] if r['gpu'] is not None))
    if not parsed['tests'] and not parsed['errors']:
        raise DiagParseError('dcgmi diag: the output holds no test result')
    if not parsed['errors'] and not any(t['result'] != 'Skip' for t in parsed['tests']) \
            and not any(r['result'] != 'Skip' for t in parsed['tests'] for r in t['results']):
        # a diagnostic that skipped every test proved nothing about the GPUs: never a pass
        raise DiagParseError('dcgmi diag: every test was skipped, nothing was tested (%s)'
                             % ', '.join(t['name'] for t in parsed['tests']))
    every = [t['result'] for t in parsed['tests']] + [r['result'] for t in parsed['tests'] for r in t['results']]
    if parsed['errors'] or 'Fail' in every:
        parsed['verdict'] = 'Fail'
    elif 'Warn' in every:
        parsed['verdict'] = 'Warn'
    else:
        parsed['verdict'] = 'Pass'


def _new(fmt, version=None):
    return {'format': fmt, 'dcgm_version': version, 'verdict': None, 'gpus': [], 'tests': [], 'errors': []}


# ---------------------------------------------------------------- JSON

def _load_json(body):
    try:
        return json.loads(body)
    except ValueError as exc:
        raise DiagParseError('dcgmi diag: the JSON cannot be read (cut short or damaged?): %s' % exc)


def _parse_json(body, before):
    conn = connection_error('\n'.join(before))
    if conn:
        raise DiagConnectionError('dcgmi diag: cannot reach the host engine: %s' % conn)
    doc = _load_json(body.strip())
    if not isinstance(doc, dict):
        raise DiagParseError('dcgmi diag: the JSON is not an object')
    if 'iterations' in doc:
        runs = [_parse_json_doc(run) for run in doc.get('iterations') or []]
        if not runs:
            raise DiagParseError('dcgmi diag: the JSON has an empty "iterations" list')
        parsed = runs[0]
        for run in runs[1:]:
            parsed['tests'].extend(run['tests'])
            parsed['errors'].extend(run['errors'])
            parsed['gpus'] = sorted(set(parsed['gpus']) | set(run['gpus']))
        overall = doc.get('Overall Result')
        if overall is not None and _result(overall, 'Overall Result') == 'Fail':
            parsed['errors'].append(str(doc.get('Warning') or 'the iterations ended in a failure'))
        return parsed
    return _parse_json_doc(doc)


def _parse_json_doc(doc):
    if 'DCGM Diagnostic' in doc:
        fmt, root = 'json-dcgm4', doc['DCGM Diagnostic']
        meta = doc.get('metadata') or {}
        version = meta.get('version') or (root.get('version') if isinstance(root, dict) else None)
    elif 'DCGM GPU Diagnostic' in doc:
        fmt, root = 'json-dcgm3', doc['DCGM GPU Diagnostic']
        version = doc.get('version') or (root.get('version') if isinstance(root, dict) else None)
    else:
        raise DiagParseError('dcgmi diag: the JSON has neither "DCGM Diagnostic" (DCGM 4) nor "DCGM GPU Diagnostic" '
                             '(DCGM 3); top-level keys: %s' % ', '.join(sorted(doc)))
    if not isinstance(root, dict):
        key = 'DCGM Diagnostic' if fmt == 'json-dcgm4' else 'DCGM GPU Diagnostic'
        raise DiagParseError('dcgmi diag: "%s" is not an object' % key)
    parsed = _new(fmt, str(version) if version else None)
    if root.get('runtime_error'):
        message = str(root['runtime_error']).strip()
        if connection_error(message):
            raise DiagConnectionError('dcgmi diag: cannot reach the host engine: %s' % message)
        parsed['errors'].append(message)
    categories = root.get('test_categories')
    if categories is None and not parsed['errors']:
        raise DiagParseError('dcgmi diag: the JSON has no "test_categories"')
    for category in categories or []:
        for test in (category or {}).get('tests') or []:
            if not test:
                continue
            parsed['tests'].append(_json_test(test, category.get('category'), fmt))
    if fmt == 'json-dcgm4':
        for group in doc.get('entity_groups') or []:
            if group.get('entity_group') == 'GPU':
                parsed['gpus'] = sorted(int(e['entity_id']) for e in group.get('entities') or [])
    else:
        ids = doc.get('GPU Device IDs')
        gpus = set(r['gpu'] for t in parsed['tests'] for r in t['results'] if r['gpu'] is not None)
        parsed['gpus'] = sorted(gpus) if gpus else list(range(len(ids or [])))
    return parsed


def _warnings(entry):
    out = []
    for warning in entry.get('warnings') or []:
        if isinstance(warning, dict):
            # DCGM 3 level-one results name the message "warnings", the others "warning"
            msg = warning.get('warning', warning.get('warnings'))
        else:
            msg = warning
        if msg:
            out.append(str(msg).strip())
    return out


def _info(entry):
    info = entry.get('info')
    if isinstance(info, list):
        info = '; '.join(str(i).strip() for i in info if str(i).strip())
    return str(info).strip() if info else None


def _json_test(test, category, fmt):
    name = test.get('name')
    if not name:
        raise DiagParseError('dcgmi diag: a test without a name in the JSON: %r' % (test,))
    results = []
    for entry in test.get('results') or []:
        gpu = None
        if fmt == 'json-dcgm4':
            if entry.get('entity_group', 'GPU') == 'GPU' and entry.get('entity_id') is not None:
                gpu = int(entry['entity_id'])
        elif entry.get('gpu_id') not in (None, ''):
            gpu = int(entry['gpu_id'])
        results.append({'gpu': gpu, 'result': _result(entry.get('status'), 'test %s' % name),
                        'info': _info(entry), 'warnings': _warnings(entry)})
    summary = test.get('test_summary')
    if summary:
        status = _result(summary.get('status'), 'test %s' % name)
        known = set(w for r in results for w in r['warnings'])
        unattributed = [w for w in _warnings(summary) if w not in known]
        if unattributed or not results or _info(summary) and not any(r['info'] for r in results):
            results.insert(0, {'gpu': None, 'result': status, 'info': _info(summary), 'warnings': unattributed})
    else:
        if not results:
            raise DiagParseError('dcgmi diag: test %s has neither results nor a summary' % name)
        status = worst(r['result'] for r in results)
    return {'name': str(name), 'category': category, 'result': status, 'results': results}


# ---------------------------------------------------------------- text

def _split_row(line, sep, end, line_no):
    if len(line) <= end or line[0] != '|' or line[end] != '|' or line[sep] not in '|+':
        raise DiagParseError('dcgmi diag: line %d is not a row of the table: %r' % (line_no, line))
    return line[1:sep].strip(), line[sep + 1:end]


def _parse_text(lines):
    indent = None
    table = []
    outside = []
    closed = False
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if indent is None and line.strip().startswith('+-'):
            indent = len(line) - len(line.lstrip())
        body = line[indent:] if indent is not None and line[:indent].strip() == '' else line
        if indent is not None and not closed and body[:1] in ('|', '+'):
            table.append((no, body))
            if len(table) > 3 and _BORDER_RE.match(body) and not _CATEGORY_RE.match(body):
                closed = True
        elif line.strip():
            outside.append((no, line.strip(), indent is not None))
    parsed = _new('text-dcgm3')
    for no, line, after in outside:
        if line in _BENIGN_LINES:
            continue
        if connection_error(line):
            raise DiagConnectionError('dcgmi diag: cannot reach the host engine: %s' % line)
        if _ERROR_LINE_RE.search(line):
            parsed['errors'].append(line)
        elif after:
            raise DiagParseError('dcgmi diag: line %d after the table cannot be read: %r' % (no, line))
    border = table[0][1]
    cuts = [i for i, c in enumerate(border) if c == '+']
    if len(cuts) != 3:
        raise DiagParseError('dcgmi diag: line %d is not the border of a two-column table: %r' % (table[0][0], border))
    sep, end = cuts[1], cuts[2]
    if not closed and not table[-1][1].endswith('|'):
        table.pop()     # a row cut in the middle
    # the result column is a space, 46 characters and a space; messages are cut every 45 characters
    chunk = end - sep - 4
    rows = _text_rows(table, sep, end)
    _text_tests(parsed, rows, chunk)
    if not closed:
        if parsed['verdict_hint'] != 'Fail':
            raise DiagParseError('dcgmi diag: the table has no closing border (output cut short) and what was read '
                                 'does not fail; it cannot be trusted as a pass')
        parsed['errors'].append('the output ends before the closing border of the table (cut short)')
    del parsed['verdict_hint']
    looks_v4 = parsed.pop('looks_v4', False)
    major = (parsed['dcgm_version'] or '').split('.')[0]
    if major.isdigit():
        parsed['format'] = 'text-dcgm4' if int(major) >= 4 else 'text-dcgm3'
    elif looks_v4:
        parsed['format'] = 'text-dcgm4'
    return parsed


def _text_rows(table, sep, end):
    """(line_no, category, name, cell) for each data row; cell keeps its spacing."""
    rows = []
    category = None
    header_done = False
    for no, line in table:
        match = _CATEGORY_RE.match(line)
        if match:
            category = match.group(1).strip()
            continue
        if line.startswith('+'):
            if line.startswith('+='):
                header_done = True
            continue
        name, cell = _split_row(line, sep, end, no)
        if not header_done:
            continue
        rows.append((no, category, name, cell))
    return rows


def _text_tests(parsed, rows, chunk):
    device_ids = []
    test = None
    message = None        # [label, gpu, text] being joined
    parsed['verdict_hint'] = None

    def flush():
        if message is not None and test is not None:
            _attach(test, message)

    for no, category, name, cell in rows:
        value = cell.strip()
        if category == 'Metadata':
            if name == 'DCGM Version':
                parsed['dcgm_version'] = value
            elif name == 'GPU Device IDs Detected':
                device_ids = [v for v in re.split(r'[,\s]+', value) if v]
            continue
        label = _MSG_LABEL_RE.match(name) if name else None
        if name and not label:
            flush()
            message = None
            match = _V3_RESULT_RE.match(value)
            if not match:
                raise DiagParseError('dcgmi diag: line %d: test %s has an unknown result %r' % (no, name, value))
            result = _result(match.group(1), 'line %d' % no)
            test = {'name': name, 'category': category, 'result': result, 'results': [], '_rows': {}}
            parsed['tests'].append(test)
            if name.islower():
                parsed['looks_v4'] = True   # DCGM 4 names tests by plugin: software, memory, pcie
            _v3_results(test, match, result, device_ids)
            continue
        if test is None:
            raise DiagParseError('dcgmi diag: line %d comes before any test: %r' % (no, value))
        if label:
            flush()
            gpu = int(label.group(3)) if label.group(2) == 'GPU' else None
            message = [label.group(1), gpu, cell[1:1 + chunk]]
            continue
        entity = _ENTITY_RESULT_RE.match(value)
        if entity:
            flush()
            message = None
            parsed['looks_v4'] = True
            gpu = int(entity.group(2)) if entity.group(1) == 'GPU' else None
            _row(test, gpu, _result(entity.group(3), 'line %d' % no), replace=True)
            continue
        v3 = _V3_RESULT_RE.match(value)
        if v3 and v3.group(2) and v3.group(2) != 'All':
            flush()
            message = None
            _v3_results(test, v3, _result(v3.group(1), 'line %d' % no), device_ids)
            test['result'] = worst([test['result'], _result(v3.group(1), 'line %d' % no)])
            continue
        if message is not None:
            message[2] += cell[1:1 + chunk]
            continue
        if re.match(r'^Code: \(\d+\)$', value):
            continue
        raise DiagParseError('dcgmi diag: line %d cannot be read: %r' % (no, value))
    flush()
    for test in parsed['tests']:
        rows_by_gpu = test.pop('_rows')
        test['results'] = [rows_by_gpu[k] for k in sorted(rows_by_gpu, key=lambda g: (g is not None, g or 0))]
        if not test['results']:
            test['results'] = [{'gpu': None, 'result': test['result'], 'info': None, 'warnings': []}]
    every = [t['result'] for t in parsed['tests']] + [r['result'] for t in parsed['tests'] for r in t['results']]
    parsed['verdict_hint'] = 'Fail' if 'Fail' in every else None
    if device_ids and not parsed['gpus']:
        seen = sorted(set(r['gpu'] for t in parsed['tests'] for r in t['results'] if r['gpu'] is not None))
        parsed['gpus'] = seen if len(seen) == len(device_ids) else list(range(len(device_ids)))


def _row(test, gpu, result, replace=False):
    rows = test['_rows']
    if gpu not in rows:
        rows[gpu] = {'gpu': gpu, 'result': result, 'info': None, 'warnings': []}
    elif replace:
        rows[gpu]['result'] = result
    return rows[gpu]


def _v3_results(test, match, result, device_ids):
    if match.group(2) == 'All':
        for gpu in range(len(device_ids)):
            _row(test, gpu, result)
    elif match.group(3):
        for gpu in re.split(r'[,\s]+', match.group(3).strip()):
            if gpu:
                _row(test, int(gpu), result, replace=True)


def _attach(test, message):
    kind, gpu, text = message
    text = text.strip()
    if gpu is None:
        found = _GPU_IN_MSG_RE.match(text)
        if found and int(found.group(1)) in test['_rows']:
            gpu = int(found.group(1))
    row = test['_rows'].get(gpu) or _row(test, gpu, test['result'])
    if kind == 'Warning':
        row['warnings'].append(text)
    else:
        row['info'] = text if not row['info'] else row['info'] + '; ' + text


# ---------------------------------------------------------------- report

def diag_failures(parsed):
    """The failures of a parsed diag in the report's format (``check``, ``subject``, ``expected``, ``actual``,
    ``message``): one per failing GPU of a failing test, one for the node when a failing test names no failing
    GPU, one per error printed outside the tests."""
    failures = []
    for test in parsed['tests']:
        if test['result'] != 'Fail' and not any(r['result'] == 'Fail' for r in test['results']):
            continue
        bad = [r for r in test['results'] if r['result'] == 'Fail' and r['gpu'] is not None]
        if bad:
            for row in bad:
                failures.append(_failure('GPU %d' % row['gpu'], test['name'], row))
        else:
            rows = [r for r in test['results'] if r['warnings'] or r['info']] or test['results']
            merged = {'warnings': [w for r in rows for w in r['warnings']],
                      'info': '; '.join(r['info'] for r in rows if r['info']) or None}
            failures.append(_failure('node', test['name'], merged))
    for error in parsed['errors']:
        failures.append({'check': 'dcgm_diag', 'subject': 'node', 'expected': 'Pass', 'actual': 'Fail',
                         'message': 'dcgmi diag: %s' % error})
    return failures


def _failure(subject, name, row):
    detail = '; '.join(row['warnings']) or row.get('info') or 'Fail'
    return {'check': 'dcgm_diag', 'subject': subject, 'expected': 'Pass', 'actual': 'Fail',
            'message': '%s: %s' % (name, detail)}


def summary(parsed, level=None):
    """One line: ``level 1: 9 tests Pass on 8 GPUs`` or ``level 3: Fail: GPU Memory failed on GPU 0, 1``."""
    head = 'level %s: ' % level if level is not None else ''
    gpus = len(parsed['gpus'])
    ran = [t for t in parsed['tests'] if t['result'] != 'Skip']
    if parsed['verdict'] != 'Fail':
        return '%s%d tests %s on %d GPU%s' % (head, len(ran), parsed['verdict'], gpus, '' if gpus == 1 else 's')
    parts = []
    for test in parsed['tests']:
        bad = [r['gpu'] for r in test['results'] if r['result'] == 'Fail' and r['gpu'] is not None]
        if bad:
            parts.append('%s failed on GPU %s' % (test['name'], ', '.join(str(g) for g in bad)))
        elif test['result'] == 'Fail':
            parts.append('%s failed' % test['name'])
    parts.extend(parsed['errors'][:1])
    return '%sFail: %s' % (head, '; '.join(parts))


# ---------------------------------------------------------------- rendering

def render_diag_json(parsed, layout='dcgm4', device_id='20b0', driver=None):
    """The ``dcgmi diag -j`` document (``layout`` ``dcgm4`` or ``dcgm3``) that :func:`parse_diag` reads back as
    ``parsed`` (tests, per-GPU results, warnings, info, errors, DCGM version); ``device_id`` is the PCI device id
    written for every GPU. Used to derive JSON from a text capture and by the simulator."""
    from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcgmi_health import styled_json
    v4 = layout == 'dcgm4'
    categories = []
    for test in parsed['tests']:
        if not categories or categories[-1]['category'] != test['category']:
            categories.append({'category': test['category'] or 'Hardware', 'tests': []})
        entry = {'name': test['name'], 'results': []}
        glob = []
        for row in test['results']:
            warnings = [{'warning': w, 'error_id': 0, 'error_category': 0, 'error_severity': 0}
                        for w in row['warnings']]
            if row['gpu'] is None:
                glob.append((row, warnings))
                if v4:
                    continue
                result = {'status': row['result']}
            elif v4:
                result = {'entity_group': 'GPU', 'entity_group_id': 1, 'entity_id': row['gpu'], 'status': row['result']}
            else:
                result = {'gpu_id': str(row['gpu']), 'status': row['result']}
            if warnings:
                result['warnings'] = warnings
            if row['info']:
                result['info'] = [row['info']] if v4 else row['info']
            entry['results'].append(result)
        if v4:
            summary_entry = {'status': test['result']}
            summary_warnings = [w for _row, ws in glob for w in ws]
            if summary_warnings:
                summary_entry['warnings'] = summary_warnings
            summary_info = [row['info'] for row, _ws in glob if row['info']]
            if summary_info:
                summary_entry['info'] = summary_info
            entry['test_summary'] = summary_entry
            if not entry['results']:
                del entry['results']
        categories[-1]['tests'].append(entry)
    root = {'test_categories': categories}
    if parsed['errors']:
        root['runtime_error'] = '; '.join(parsed['errors'])
    if v4:
        doc = {'DCGM Diagnostic': root,
               'entity_groups': [{'entity_group': 'GPU', 'entity_group_id': 1,
                                  'entities': [{'entity_id': g, 'device_id': device_id} for g in parsed['gpus']]}],
               'metadata': {'version': parsed['dcgm_version'] or '4.4.1'}}
        if driver:
            doc['metadata']['Driver Version Detected'] = driver
    else:
        doc = {'DCGM GPU Diagnostic': root, 'version': parsed['dcgm_version'] or '3.3.9',
               'GPU Device IDs': [device_id for _g in parsed['gpus']]}
        if driver:
            doc['Driver Version Detected'] = driver
    return styled_json(doc) + '\n'
