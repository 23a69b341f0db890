# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``nvidia-smi nvlink -s`` / ``--status`` (and the per-link counters of ``nvlink -e``)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

COMMAND = 'nvidia-smi nvlink -s'

_GPU_RE = re.compile(r'^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$')
_SPEED_RE = re.compile(r'^Link (\d+): ([0-9.]+) GB/s\s*$')
_INACTIVE_RE = re.compile(r'^Link (\d+): <inactive>\s*$', re.IGNORECASE)
_COUNTER_RE = re.compile(r'^Link (\d+): ([A-Za-z][A-Za-z0-9 _-]*?): (\S+)\s*$')
_ALL_INACTIVE_RE = re.compile(r'^NVML: Unable to retrieve NVLink information as all links are in[Aa]ctive')
_ELISION_RE = re.compile(r'^(\[\.\.\.\]|\.{3,}|…)$')


def parse_nvlink_status(text):
    """Parse ``nvidia-smi nvlink -s``.

    Returns ``gpus``: a list of ``{index, name, uuid, links: [{link, active,
    speed_gbps}], counters: {link: {name: value}}}``, ``elided`` (True when the
    output was cut with ``[...]`` or ``...``, so link lists may be incomplete)
    and ``warnings``. A GPU without NVLink has an empty ``links`` list.

    Like ``topo -m``, damaged output is never read as fewer links: ParseError
    names the line when a line is not a GPU, link or counter line, when link
    numbers skip or repeat, when GPU numbers do not increase, when the output
    has no GPU at all, when a GPU lists fewer links than another GPU of its
    model, or names no UUID where the others do (a cut output without an
    elision mark).
    """
    text = clean(text)
    if text is None or not text.strip():
        return {'gpus': [], 'elided': False, 'warnings': []}
    gpus = []
    current = None
    elided = False
    lines = text.splitlines()
    for idx, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            uuid = match.group(3)
            if uuid in (None, '...'):
                uuid = None
            index = int(match.group(1))
            if gpus and index <= gpus[-1]['index']:
                raise ParseError(COMMAND, 'GPU %d follows GPU %d' % (index, gpus[-1]['index']), idx + 1, raw)
            current = {
                'index': index,
                'name': match.group(2).strip(),
                'uuid': uuid,
                'links': [],
                'counters': {},
                'all_inactive': False,
                'line_no': idx + 1,
            }
            gpus.append(current)
            continue
        if _ELISION_RE.match(line):
            elided = True
            continue
        if _ALL_INACTIVE_RE.match(line) and current is not None:
            current['all_inactive'] = True
            continue
        speed = _SPEED_RE.match(line)
        inactive = _INACTIVE_RE.match(line)
        counter = _COUNTER_RE.match(line)
        if not (speed or inactive or counter):
            raise ParseError(COMMAND, 'not a GPU, link or counter line', idx + 1, raw)
        if current is None:
            raise ParseError(COMMAND, 'link line before any GPU line', idx + 1, raw)
        if counter and not (speed or inactive):
            value = counter.group(3)
            current['counters'].setdefault(int(counter.group(1)), {})[counter.group(2)] = (
                int(value) if value.isdigit() else value)
            continue
        number = int((speed or inactive).group(1))
        expected = len(current['links'])
        if number != expected and not (elided and number > expected):
            raise ParseError(COMMAND, 'GPU %d: link %d where link %d was expected (a line is missing or repeated)'
                             % (current['index'], number, expected), idx + 1, raw)
        current['links'].append({'link': number, 'active': bool(speed),
                                 'speed_gbps': float(speed.group(2)) if speed else None})
    if not gpus:
        first = next((l for l in lines if l.strip()), '')
        raise ParseError(COMMAND, 'no GPU line found', 1, first)
    warnings = []
    if elided:
        warnings.append('%s: output was elided ([...] or ...); link lists may be incomplete' % COMMAND)
    else:
        _check_not_cut(gpus, lines)
    for gpu in gpus:
        del gpu['line_no']
    return {'gpus': gpus, 'elided': elided, 'warnings': warnings}


def _check_not_cut(gpus, lines):
    """Every GPU lists as many links as the other GPUs of its model (nvidia-smi prints inactive links too), and
    names its UUID when the others do; else the output was cut or lost lines."""
    with_uuid = [g for g in gpus if g['uuid']]
    for gpu in gpus:
        if with_uuid and not gpu['uuid']:
            raise ParseError(COMMAND, 'GPU %d has no UUID while GPU %d has one: the line was cut'
                             % (gpu['index'], with_uuid[0]['index']), gpu['line_no'], lines[gpu['line_no'] - 1])
        if gpu['counters'] or gpu['all_inactive']:
            continue
        peers = [g for g in gpus if g['name'] == gpu['name'] and not g['all_inactive'] and not g['counters']]
        most = max(peers, key=lambda g: len(g['links']))
        if len(gpu['links']) < len(most['links']):
            line_no = gpu['line_no'] + len(gpu['links'])
            raise ParseError(COMMAND, 'GPU %d lists %d link(s) while GPU %d of the same model lists %d: '
                             'truncated or lines lost' % (gpu['index'], len(gpu['links']), most['index'],
                                                          len(most['links'])), line_no, lines[line_no - 1])
