# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers and argument builders for DCB (Data Center Bridging) tools: iproute2 ``dcb`` and ``mlnx_qos``.

``dcb pfc show dev X`` prints (iproute2 6.1, dcb_pfc.c)::

    pfc-cap 8 macsec-bypass off delay 4096
    prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off

``dcb -N app show dev X dscp-prio`` prints ``dscp-prio 0:0 24:2 48:6`` or
nothing when the DSCP table is empty. ``mlnx_qos -i X`` (MLNX_OFED / DOCA
tools) prints the trust state, the DSCP map, PFC per priority and the traffic
classes.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

PFC_COMMAND = 'dcb pfc show'
APP_COMMAND = 'dcb -N app show dscp-prio'
MLNX_QOS_COMMAND = 'mlnx_qos -i'
PRIORITIES = tuple(range(8))

_ON_OFF = {'on': True, 'off': False}
_PFC_SCALARS = {'pfc-cap': 'pfc_cap', 'delay': 'delay'}
_PRIO_ON_OFF_RE = re.compile(r'^([0-7]):(on|off)$')
_PRIO_COUNT_RE = re.compile(r'^([0-7]):([0-9]+)$')
_DSCP_PRIO_RE = re.compile(r'^([0-9]{1,2}):([0-7])$')


def _words(text):
    """Non-empty lines of ``text`` as (line number, line, words)."""
    text = clean(text)
    if text is None:
        return []
    return [(no, raw, raw.split()) for no, raw in enumerate(text.splitlines(), 1) if raw.strip()]


def parse_pfc(text):
    """``dcb pfc show dev X`` -> ``{pfc_cap, macsec_bypass, delay, prio_pfc: {0..7: bool}}``.

    A value the output does not show (``dcb pfc show dev X prio-pfc`` prints
    only that line) is None. With ``-s`` the ``requests`` and ``indications``
    lines are kept as ``{prio: count}``. ParseError on anything else: empty
    output, an unknown keyword, a priority that is missing or given twice.
    """
    result = {'pfc_cap': None, 'macsec_bypass': None, 'delay': None, 'prio_pfc': None}
    lines = _words(text)
    if not lines:
        raise ParseError(PFC_COMMAND, 'empty output')
    for no, raw, words in lines:
        i = 0
        while i < len(words):
            key = words[i]
            if key in _PFC_SCALARS or key == 'macsec-bypass':
                if i + 1 >= len(words):
                    raise ParseError(PFC_COMMAND, '%s without a value' % key, no, raw)
                value = words[i + 1]
                if key == 'macsec-bypass':
                    if value not in _ON_OFF:
                        raise ParseError(PFC_COMMAND, 'macsec-bypass is not on/off', no, raw)
                    result['macsec_bypass'] = _ON_OFF[value]
                else:
                    if not value.isdigit():
                        raise ParseError(PFC_COMMAND, '%s is not a number' % key, no, raw)
                    result[_PFC_SCALARS[key]] = int(value)
                i += 2
                continue
            if key in ('prio-pfc', 'requests', 'indications'):
                pattern = _PRIO_ON_OFF_RE if key == 'prio-pfc' else _PRIO_COUNT_RE
                table = {}
                i += 1
                while i < len(words) and pattern.match(words[i]):
                    prio, value = pattern.match(words[i]).groups()
                    if int(prio) in table:
                        raise ParseError(PFC_COMMAND, '%s lists priority %s twice' % (key, prio), no, raw)
                    table[int(prio)] = _ON_OFF[value] if key == 'prio-pfc' else int(value)
                    i += 1
                if sorted(table) != list(PRIORITIES):
                    raise ParseError(PFC_COMMAND, '%s does not list priorities 0-7' % key, no, raw)
                result[key.replace('-', '_')] = table
                continue
            raise ParseError(PFC_COMMAND, 'unknown field %r' % key, no, raw)
    if all(result[k] is None for k in ('pfc_cap', 'macsec_bypass', 'delay', 'prio_pfc')):
        raise ParseError(PFC_COMMAND, 'no PFC field in the output', lines[0][0], lines[0][1])
    return result


def pfc_priorities(parsed):
    """Sorted priorities with PFC on, from ``parse_pfc`` or ``parse_mlnx_qos``; None when unknown."""
    if parsed is None:
        return None
    table = parsed.get('prio_pfc', parsed.get('pfc'))
    if table is None:
        return None
    return sorted(prio for prio, enabled in table.items() if enabled)


def parse_app_dscp(text):
    """``dcb -N app show dev X dscp-prio`` -> ``{dscp: [prio, ...]}``; empty output -> ``{}``.

    A DSCP may map to several priorities (the APP table allows it); the list
    keeps the printed order. Symbolic DSCP names (the output of ``dcb`` without
    ``-N``, such as ``CS3``) and any other line are a ParseError.
    """
    table = {}
    for no, raw, words in _words(text):
        if words[0] != 'dscp-prio':
            raise ParseError(APP_COMMAND, 'expected a dscp-prio line', no, raw)
        for word in words[1:]:
            match = _DSCP_PRIO_RE.match(word)
            if not match or int(match.group(1)) > 63:
                raise ParseError(APP_COMMAND, 'expected <dscp 0-63>:<prio 0-7> (run dcb with -N), got %r' % word,
                                 no, raw)
            table.setdefault(int(match.group(1)), []).append(int(match.group(2)))
    return table


def pfc_set_args(priorities):
    """Arguments after ``dcb pfc set dev X``: PFC on exactly ``priorities``, off on the rest.

    ``[3]`` -> ``['prio-pfc', 'all:off', '3:on']``; ``[]`` -> ``['prio-pfc', 'all:off']``.
    """
    prios = sorted(set(_priority(p) for p in priorities))
    return ['prio-pfc', 'all:off'] + ['%d:on' % p for p in prios]


def app_replace_args(mapping):
    """Arguments after ``dcb app replace dev X``: ``{26: 3, 48: 6}`` -> ``['dscp-prio', '26:3', '48:6']``.

    A value may be a list of priorities (``{24: [2, 3]}``), as ``parse_app_dscp`` returns.
    """
    if not mapping:
        raise ValueError('dscp-prio mapping is empty')
    args = ['dscp-prio']
    for dscp in sorted(mapping, key=int):
        if not 0 <= int(dscp) <= 63:
            raise ValueError('DSCP %r is not 0-63' % (dscp,))
        prios = mapping[dscp]
        for prio in (prios if isinstance(prios, (list, tuple)) else [prios]):
            args.append('%d:%d' % (int(dscp), _priority(prio)))
    return args


def _priority(value):
    if isinstance(value, bool) or not str(value).isdigit() or int(value) not in PRIORITIES:
        raise ValueError('priority %r is not 0-7' % (value,))
    return int(value)


# mlnx_qos -i X (mlnx-tools' mlnx_qos): the lines of the real MLNX_OFED 4.x to 23.10 outputs under
# tests/fixtures/real/dcb/
_MQ_DCBX_RE = re.compile(r'^DCBX mode:\s*(.+?)\s*$')
_MQ_TRUST_RE = re.compile(r'^Priority trust state:\s*(\S+)\s*$')
_MQ_DSCP_RE = re.compile(r'^prio:([0-7])\s+dscp:((?:[0-9]{2},)*[0-9]{2}),?\s*$')
_MQ_DEFAULT_PRIO_RE = re.compile(r'^prio:([0-7])\s*$')
_MQ_BUFSIZE_RE = re.compile(r'^Receive buffer size \(bytes\):\s*((?:[0-9]+,)*[0-9]+),?'
                            r'(?:max_buffer_size=([0-9]+))?\s*$')
_MQ_CABLE_RE = re.compile(r'^Cable len:\s*([0-9]+)\s*$')
_MQ_TC_RE = re.compile(r'^tc:\s*([0-7])\s+ratelimit:\s*([^,]+?),\s*tsa:\s*(\w+)(?:,\s*bw:\s*([0-9]+)%)?\s*$')
_MQ_TC_PRIO_RE = re.compile(r'^priority:\s*((?:[0-7]\s*)+)$')


def parse_mlnx_qos(text):
    """``mlnx_qos -i X`` -> ``{trust, pfc: {0..7: bool}, dcbx_mode, dscp2prio, buffer, cable_len, tc}``.

    ``trust`` is ``'dscp'`` or ``'pcp'``, ``dscp2prio`` ``{dscp: prio}`` as printed (None without a mapping
    block; only the DSCPs listed), ``default_prio`` the priorities under
    ``default priority:`` (None when not printed), ``buffer`` the receive
    buffer per priority and ``buffer_size`` the bytes per buffer (None when
    not printed; ``buffer_max_size`` from a trailing ``max_buffer_size=``),
    ``tc`` ``{tc: {ratelimit, tsa, bw, priorities}}``. The layouts read are
    those of mlnx-tools in MLNX_OFED 4.x to 23.10; any other line, or output
    without a trust state or a PFC table, is a ParseError.
    """
    result = {'trust': None, 'pfc': None, 'dcbx_mode': None, 'dscp2prio': None, 'default_prio': None,
              'buffer': None, 'buffer_size': None, 'buffer_max_size': None, 'cable_len': None, 'tc': {}}
    lines = _words(text)
    if not lines:
        raise ParseError(MLNX_QOS_COMMAND, 'empty output')
    block = None
    tc = None
    for no, raw, words in lines:
        line = raw.strip()
        match = _MQ_DCBX_RE.match(line)
        if match:
            result['dcbx_mode'] = match.group(1)
            block = None
            continue
        match = _MQ_TRUST_RE.match(line)
        if match:
            if match.group(1) not in ('dscp', 'pcp'):
                raise ParseError(MLNX_QOS_COMMAND, 'unknown trust state', no, raw)
            result['trust'] = match.group(1)
            block = None
            continue
        if line == 'dscp2prio mapping:':
            result['dscp2prio'] = {}
            block = 'dscp'
            continue
        match = _MQ_DSCP_RE.match(line)
        if match and block == 'dscp':
            for dscp in match.group(2).split(','):
                if int(dscp) > 63 or int(dscp) in result['dscp2prio']:
                    raise ParseError(MLNX_QOS_COMMAND, 'DSCP %s out of range or mapped twice' % dscp, no, raw)
                result['dscp2prio'][int(dscp)] = int(match.group(1))
            continue
        if line == 'default priority:':
            result['default_prio'] = []
            block = 'default'
            continue
        match = _MQ_DEFAULT_PRIO_RE.match(line)
        if match and block == 'default':
            result['default_prio'].append(int(match.group(1)))
            continue
        match = _MQ_BUFSIZE_RE.match(line)
        if match:
            result['buffer_size'] = [int(v) for v in match.group(1).split(',')]
            if match.group(2):
                result['buffer_max_size'] = int(match.group(2))
            block = None
            continue
        match = _MQ_CABLE_RE.match(line)
        if match:
            result['cable_len'] = int(match.group(1))
            block = None
            continue
        if line == 'PFC configuration:':
            block = 'pfc'
            continue
        if block == 'pfc' and words[0] in ('priority', 'enabled', 'buffer'):
            values = words[1:]
            if len(values) != 8 or not all(v.isdigit() for v in values):
                raise ParseError(MLNX_QOS_COMMAND, 'expected 8 numbers in the PFC table', no, raw)
            if words[0] == 'priority':
                if [int(v) for v in values] != list(PRIORITIES):
                    raise ParseError(MLNX_QOS_COMMAND, 'PFC table priorities are not 0-7', no, raw)
            elif words[0] == 'enabled':
                if any(v not in ('0', '1') for v in values):
                    raise ParseError(MLNX_QOS_COMMAND, 'PFC enabled is not 0/1', no, raw)
                result['pfc'] = dict((p, values[p] == '1') for p in PRIORITIES)
            else:
                result['buffer'] = dict((p, int(values[p])) for p in PRIORITIES)
            continue
        match = _MQ_TC_RE.match(line)
        if match:
            tc = int(match.group(1))
            result['tc'][tc] = {'ratelimit': match.group(2), 'tsa': match.group(3),
                                'bw': int(match.group(4)) if match.group(4) else None, 'priorities': []}
            block = 'tc'
            continue
        match = _MQ_TC_PRIO_RE.match(line)
        if match and block == 'tc':
            result['tc'][tc]['priorities'].extend(int(p) for p in match.group(1).split())
            continue
        raise ParseError(MLNX_QOS_COMMAND, 'not a line of a known mlnx_qos layout', no, raw)
    if result['trust'] is None:
        raise ParseError(MLNX_QOS_COMMAND, 'no "Priority trust state" line in the output')
    if result['pfc'] is None:
        raise ParseError(MLNX_QOS_COMMAND, 'no PFC table (priority/enabled) in the output')
    return result
