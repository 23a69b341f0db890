# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reads the output of an nccl-tests program (``all_reduce_perf``, ``all_gather_perf``, ...).

What the parser meets in real outputs (tests/fixtures/real/nccl/):

* the header differs between versions: 2.18 adds ``# nccl-tests version``, ``# Collective test
  starting:`` and `` unalign:``; devices print their bus as ``[0x1b]`` (older) or ``[0000:1b:00]``;
  very old versions name the last columns ``error`` (a maximum error) instead of ``#wrong``. The
  columns of a row are read from the table header, the default being the current layout;
* every line may carry launcher prefixes: ``mpirun --tag-output`` (``[1,0]<stdout>:``), ``srun --label``
  (`` 0: ``), SkyPilot (``(head, rank=0, pid=3808) ``), a Markdown indentation;
* ``#wrong`` can be ``N/A`` (validation off, or alltoall's in-place column): read as None;
* ``# Avg bus bandwidth`` averages the whole sweep (both columns), so a threshold belongs on the
  largest size measured (``largest_size_busbw_gbps``, the better of the two columns there);
* failures print ``<host>: Test NCCL failure ...`` or ``Test CUDA failure ...`` and no table rows;
  NCCL's own ``INFO``/``WARN`` lines interleave with the header when ``NCCL_DEBUG`` is set;
* copies may lack the device lines (a table-only excerpt) or start mid-output.

A table row that cannot be read, or rows without the closing ``# Avg bus bandwidth`` line (an output
cut short), are reported in ``errors``; an output with neither a row nor an error raises
NcclParseError, never an empty pass.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

COMMAND = 'nccl-tests'

# The columns of the current table header (nccl-tests 2.x), used when the output has no header.
DEFAULT_COLUMNS = ('size', 'count', 'type', 'redop', 'root',
                   'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw', '#wrong')

# Launcher prefixes, in the order they nest: SkyPilot, then mpirun --tag-output, then srun --label.
_PREFIX_RE = re.compile(r'^(?:\([^)]*\)\s*)?(?:\[\d+,\d+\]<std(?:out|err)>:)?(?:\s*\d+: ?(?=\s|#|$))?')
_VERSION_LINE_RE = re.compile(r'^#\s*nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?')
_STARTING_RE = re.compile(r'^#\s*Collective test starting:\s*(\S+)')
_NTHREAD_RE = re.compile(r'^#\s*nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)\((\w+)\)'
                         r' warmup iters: (\d+) iters: (\d+)(?: agg iters: (\d+))?(?: validation: (\d+))?'
                         r'(?: graph: (\d+))?')
_DEVICE_RE = re.compile(r'^#\s*Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+'
                        r'\[([^\]]*)\]\s*(.*?)\s*$')
_AVG_RE = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*(\S+)')
_OOB_RE = re.compile(r'^#\s*Out of bounds values\s*:\s*(\d+)\s+(\S+)')
_NCCL_VERSION_RE = re.compile(r'(?:^|\s)NCCL version (\d+\.\d+\.\d+\S*)')
_FAILURE_RE = re.compile(r'Test (?:NCCL|CUDA|NCCL/CUDA) failure|Test failure\b')
_PRIMARY_FAILURE_RE = re.compile(r'Test (?:NCCL|CUDA|NCCL/CUDA) failure')
_FATAL_RE = re.compile(r'mpirun noticed that|Segmentation fault|core dumped|Bus error|'
                       r'Invalid number of GPUs|invalid device ordinal')
_ROW_START_RE = re.compile(r'^\d+\s+\d+\s')


class NcclParseError(ParseError):
    """An nccl-tests output with neither a result table nor a failure to report."""

    def __init__(self, reason, line_no=None, line=None):
        super(NcclParseError, self).__init__(COMMAND, reason, line_no, line)


def strip_prefix(line):
    """The line without launcher prefixes (mpirun --tag-output, srun --label, SkyPilot) and indentation."""
    return _PREFIX_RE.sub('', line, count=1).strip()


def library_version(code):
    """NCCL_VERSION_CODE (22809) as a version (2.28.9); codes of NCCL < 2.9 are major*1000+minor*100+patch."""
    code = int(code)
    if code >= 20900:
        return '%d.%d.%d' % (code // 10000, code // 100 % 100, code % 100)
    return '%d.%d.%d' % (code // 1000, code // 100 % 10, code % 100)


def _header_columns(content):
    tokens = content.lstrip('#').split()
    if 'size' in tokens and 'count' in tokens and 'time' in tokens:
        # '#wrong' may be printed '#wrong' or '# wrong'
        merged = []
        for token in tokens:
            if merged and merged[-1] == '#' and token == 'wrong':
                merged[-1] = '#wrong'
            else:
                merged.append(token)
        return tuple(merged)
    return None


def _number(token, kind, what):
    try:
        return kind(token)
    except ValueError:
        raise ValueError('%s %r is not a number' % (what, token))


def _wrong(token, column):
    if token in ('N/A', 'n/a', '-'):
        return None
    if column == 'error':  # very old nccl-tests: the maximum error, 0e+00 when correct
        return 0 if _number(token, float, 'error') == 0 else 1
    return _number(token, int, '#wrong')


def _row(content, columns):
    """One table row read by the header's columns, or ValueError."""
    tokens = content.split()
    if len(tokens) != len(columns):
        raise ValueError('%d fields where the header has %d columns' % (len(tokens), len(columns)))
    halves = []
    head = {}
    for name, token in zip(columns, tokens):
        if name == 'time':
            halves.append({'time_us': _number(token, float, 'time')})
        elif name in ('algbw', 'busbw'):
            if not halves:
                raise ValueError('%s before time' % name)
            halves[-1][name + '_gbps'] = _number(token, float, name)
        elif name in ('#wrong', 'error'):
            if not halves:
                raise ValueError('%s before time' % name)
            halves[-1]['wrong'] = _wrong(token, name)
        else:
            head[name] = token
    if len(halves) != 2 or any(len(h) != 4 for h in halves):
        raise ValueError('not an out-of-place and an in-place result')
    root = head.get('root')
    redop = head.get('redop')
    return {
        'size': _number(head.get('size', ''), int, 'size'),
        'count': _number(head.get('count', ''), int, 'count'),
        'type': head.get('type'),
        'redop': None if redop in (None, 'none') else redop,
        'root': None if root is None or root == '-1' else _number(root, int, 'root'),
        'out_of_place': halves[0],
        'in_place': halves[1],
    }


def _failure_text(content):
    return re.sub(r'\s+', ' ', content).strip()


def parse_nccl_tests(text):
    """Parse one nccl-tests output (see the module docstring); raises NcclParseError."""
    if text is None or not clean(text).strip():
        raise NcclParseError('empty output')
    result = {'nccl_version': None, 'nccl_tests_version': None, 'test': None, 'params': {}, 'devices': [],
              'rows': [], 'avg_busbw_gbps': None, 'max_busbw_gbps': None, 'largest_size_busbw_gbps': None,
              'largest_size': None, 'wrong_total': 0, 'errors': []}
    columns = None
    primary, backtrace = [], []
    header_line = None
    for line_no, raw in enumerate(clean(text).splitlines(), 1):
        content = strip_prefix(raw)
        if not content:
            continue
        found = _NCCL_VERSION_RE.search(content)
        if found and result['nccl_version'] is None:
            result['nccl_version'] = found.group(1)
        if _PRIMARY_FAILURE_RE.search(content):
            primary.append(_failure_text(content))
            continue
        if _FAILURE_RE.search(content):
            backtrace.append(_failure_text(content))
            continue
        if _FATAL_RE.search(content):
            primary.append(_failure_text(content))
            continue
        if content.startswith('#'):
            _header(content, result)
            cols = _header_columns(content)
            if cols:
                columns, header_line = cols, line_no
            continue
        if _ROW_START_RE.match(content):
            try:
                result['rows'].append(_row(content, columns or DEFAULT_COLUMNS))
            except ValueError as exc:
                result['errors'].append('line %d: unreadable table row (%s): %s' % (line_no, exc, content))
    result['errors'] = primary + (backtrace[:1] if backtrace and not primary else []) + result['errors']
    if result['rows']:
        if result['avg_busbw_gbps'] is None:
            result['errors'].append("the output ends before the '# Avg bus bandwidth' line (cut short?)")
        _summarise(result)
    elif not result['errors']:
        if header_line is not None:
            raise NcclParseError('a table header but no result row and no failure', header_line)
        raise NcclParseError('no nccl-tests result table and no failure in the output')
    return result


def _header(content, result):
    found = _VERSION_LINE_RE.match(content)
    if found:
        result['nccl_tests_version'] = found.group(1)
        if found.group(3) and result['nccl_version'] is None:
            result['nccl_version'] = library_version(found.group(3))
        return
    found = _STARTING_RE.match(content)
    if found:
        result['test'] = found.group(1)
        return
    found = _NTHREAD_RE.match(content)
    if found:
        keys = ('nthreads', 'ngpus', 'min_bytes', 'max_bytes', 'step', 'step_kind', 'warmup_iters', 'iters',
                'agg_iters', 'validation', 'graph')
        result['params'] = dict((k, v if k == 'step_kind' or v is None else int(v))
                                for k, v in zip(keys, found.groups()))
        return
    found = _DEVICE_RE.match(content)
    if found:
        result['devices'].append({'rank': int(found.group(1)), 'group': int(found.group(2)),
                                  'pid': int(found.group(3)), 'host': found.group(4),
                                  'device': int(found.group(5)), 'bus_id': found.group(6),
                                  'name': found.group(7)})
        return
    found = _AVG_RE.match(content)
    if found:
        try:
            result['avg_busbw_gbps'] = float(found.group(1))
        except ValueError:
            result['errors'].append('unreadable average bus bandwidth: %s' % content)
        return
    found = _OOB_RE.match(content)
    if found and (found.group(1) != '0' or found.group(2) != 'OK'):
        result['errors'].append(_failure_text(content.lstrip('# ')))


def _summarise(result):
    rows = result['rows']
    busbw = [half['busbw_gbps'] for row in rows for half in (row['out_of_place'], row['in_place'])]
    result['max_busbw_gbps'] = max(busbw)
    largest = max(row['size'] for row in rows)
    result['largest_size'] = largest
    result['largest_size_busbw_gbps'] = max(half['busbw_gbps'] for row in rows if row['size'] == largest
                                            for half in (row['out_of_place'], row['in_place']))
    halves = [half for row in rows for half in (row['out_of_place'], row['in_place'])]
    result['wrong_total'] = sum(half['wrong'] or 0 for half in halves)
    if result['wrong_total']:
        sizes = sorted(set(row['size'] for row in rows
                           if (row['out_of_place']['wrong'] or 0) + (row['in_place']['wrong'] or 0)))
        result['errors'].append('%d wrong element(s) at size(s) %s'
                                % (result['wrong_total'], ', '.join(str(s) for s in sizes)))


def busbw_failures(parsed, min_busbw_gbps=None, subject='node'):
    """The report's failures for one parsed run: ``nccl_errors`` for each error, ``nccl_busbw`` when the bus
    bandwidth at the largest size is below ``min_busbw_gbps`` (or was not measured)."""
    failures = []
    for error in parsed['errors']:
        failures.append({'check': 'nccl_errors', 'subject': subject, 'expected': 'no errors',
                         'actual': error, 'message': error})
    if min_busbw_gbps is not None:
        value = parsed.get('largest_size_busbw_gbps')
        expected = '>= %s GB/s' % fmt_gbps(min_busbw_gbps)
        if value is None:
            failures.append({'check': 'nccl_busbw', 'subject': subject, 'expected': expected,
                             'actual': 'not measured', 'message': 'no bus bandwidth measured (no result row)'})
        elif value < min_busbw_gbps:
            failures.append({'check': 'nccl_busbw', 'subject': subject, 'expected': expected,
                             'actual': '%s GB/s' % fmt_gbps(value),
                             'message': 'bus bandwidth %s GB/s at %d bytes is below %s GB/s'
                                        % (fmt_gbps(value), parsed['largest_size'], fmt_gbps(min_busbw_gbps))})
    return failures


def fmt_gbps(value):
    """A bandwidth as printed in messages: 400, 117.68."""
    return ('%.2f' % value).rstrip('0').rstrip('.') if value != int(value) else '%d' % value
