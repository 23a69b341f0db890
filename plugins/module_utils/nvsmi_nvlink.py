# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``nvidia-smi nvlink -s`` / ``--status`` (and the per-link counters of ``nvlink -e``)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

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
    and ``warnings`` naming every line that was not read. A GPU without NVLink
    has an empty ``links`` list. Raises ParseError when link lines appear
    before any GPU line or the output has no GPU at all.
    """
    if text is None or not text.strip():
        return {'gpus': [], 'elided': False, 'warnings': []}
    gpus = []
    current = None
    elided = False
    warnings = []
    for idx, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            uuid = match.group(3)
            if uuid in (None, '...'):
                uuid = None
            current = {
                'index': int(match.group(1)),
                'name': match.group(2).strip(),
                'uuid': uuid,
                'links': [],
                'counters': {},
                'all_inactive': False,
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
        if (speed or inactive or counter) and current is None:
            raise ParseError(COMMAND, 'link line before any GPU line', idx + 1, raw)
        if speed:
            current['links'].append({'link': int(speed.group(1)), 'active': True,
                                     'speed_gbps': float(speed.group(2))})
        elif inactive:
            current['links'].append({'link': int(inactive.group(1)), 'active': False,
                                     'speed_gbps': None})
        elif counter:
            value = counter.group(3)
            current['counters'].setdefault(int(counter.group(1)), {})[counter.group(2)] = (
                int(value) if value.isdigit() else value)
        else:
            warnings.append('%s: line %d: not a link status line, skipped: %r' % (COMMAND, idx + 1, line))
    if not gpus:
        first = next((l for l in text.splitlines() if l.strip()), '')
        raise ParseError(COMMAND, 'no GPU line found', 1, first)
    if elided:
        warnings.append('%s: output was elided ([...] or ...); link lists may be incomplete' % COMMAND)
    return {'gpus': gpus, 'elided': elided, 'warnings': warnings}
