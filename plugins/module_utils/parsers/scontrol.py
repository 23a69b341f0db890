# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser of ``scontrol show node`` and what a rollout reads from a node's state.

``scontrol show node NAME[,NAME...]`` prints one record per node, a blank line after each: ``Key=Value`` pairs
separated by spaces, over several indented lines. Three keys take the rest of their line, spaces included:
``OS=``, ``Reason=`` (the reason, then ``[user@time]``) and ``Comment=``/``Extra=``. ``State=`` is the base state
and its flags joined by ``+`` (``ALLOCATED+DRAIN``, ``IDLE+DRAIN``, ``DOWN+NOT_RESPONDING``). A name Slurm does not
know prints ``Node NAME not found`` and exits 1.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# keys whose value is the rest of the line
REST_OF_LINE = ('OS', 'Reason', 'Comment', 'Extra')
# the base states scontrol prints (node_state_base_string, and the older compound names); any other is an output this
# parser could not read (a truncated or garbled State=), refused rather than taken for a node in service
BASE_STATES = ('IDLE', 'ALLOCATED', 'MIXED', 'COMPLETING', 'DOWN', 'FUTURE', 'UNKNOWN', 'ERROR', 'DRAINED',
               'DRAINING', 'FAIL', 'FAILING', 'PLANNED', 'RESERVED', 'INVAL', 'MAINT', 'REBOOT', 'POWER_DOWN',
               'POWERED_DOWN', 'POWERING_DOWN', 'POWERING_UP', 'BLOCKED', 'CLOUD', 'NO_RESPOND', 'PERFCTRS')
# base states in which jobs still run on the node
BUSY_STATES = ('ALLOCATED', 'MIXED', 'COMPLETING')
# base states or flags that take a node out of service whatever its drain says
DOWN_STATES = ('DOWN', 'FUTURE', 'UNKNOWN')
DOWN_FLAGS = ('NOT_RESPONDING', 'POWERED_DOWN', 'POWER_DOWN', 'FAIL', 'MAINTENANCE', 'REBOOT_REQUESTED',
              'REBOOT_ISSUED', 'INVALID_REG')
NOT_FOUND = re.compile(r'^Node (\S+) not found\s*$', re.M)
REASON_STAMP = re.compile(r'^(?P<text>.*?)\s*\[(?P<user>[^@\]]*)@(?P<time>[^\]]*)\]\s*$')


class SlurmParseError(ValueError):
    """The text is not the output of ``scontrol show node``."""


def _pairs(line):
    """Key=Value pairs of one line; a REST_OF_LINE key takes what follows it."""
    pairs = []
    rest = line.strip()
    while rest:
        match = re.match(r'([A-Za-z_][A-Za-z0-9_]*)=', rest)
        if not match:
            raise SlurmParseError('not a Key=Value pair: %r' % rest[:60])
        key = match.group(1)
        rest = rest[match.end():]
        if key in REST_OF_LINE:
            pairs.append((key, rest.rstrip()))
            break
        value, _sep, rest = rest.partition(' ')
        pairs.append((key, value))
        rest = rest.lstrip()
    return pairs


def parse_show_node(text):
    """[{key: value}] of the node records in ``scontrol show node`` output, in the order printed.

    ``not_found`` names the nodes Slurm said it does not know (``Node NAME not found``). Raises SlurmParseError on
    text that is neither.
    """
    nodes, not_found, current = [], [], None
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        missing = NOT_FOUND.match(line)
        if missing:
            not_found.append(missing.group(1))
            current = None
            continue
        if line.startswith('NodeName='):
            current = {}
            nodes.append(current)
        elif current is None or not line.startswith(' '):
            raise SlurmParseError('a line outside a node record: %r' % line[:60])
        current.update(_pairs(line))
    return {'nodes': nodes, 'not_found': not_found}


def split_state(state):
    """('IDLE', ['DRAIN']) of 'IDLE+DRAIN'; Slurm may end a state with '*' (not responding) or '~' (powered off)."""
    if not state:
        raise SlurmParseError('a node record without State=')
    flags = []
    while state and state[-1] in '*~#!%$@^-':
        flags.append({'*': 'NOT_RESPONDING', '~': 'POWERED_DOWN'}.get(state[-1], state[-1]))
        state = state[:-1]
    parts = state.upper().split('+')
    if parts[0] not in BASE_STATES:
        raise SlurmParseError('an unknown node state %r' % state)
    return parts[0], parts[1:] + flags


def split_reason(reason):
    """(text, user, time) of ``Reason=`` (the reason, then ``[user@time]``); (None, None, None) without one."""
    if reason is None or reason in ('', '(null)', 'none'):
        return None, None, None
    match = REASON_STAMP.match(reason)
    if match:
        return match.group('text'), match.group('user'), match.group('time')
    return reason.strip(), None, None


def node_status(record, mark):
    """What a rollout reads from one node record: whether it is in service, drained, still running jobs, and by
    whom it was drained (``ours``: its reason starts with ``mark``)."""
    base, flags = split_state(record.get('State'))
    reason, user, when = split_reason(record.get('Reason'))
    drain = 'DRAIN' in flags or base in ('DRAINED', 'DRAINING')
    busy = base in BUSY_STATES or 'COMPLETING' in flags or base == 'DRAINING'
    down = base in DOWN_STATES or any(flag in DOWN_FLAGS for flag in flags)
    return {
        'name': record.get('NodeName'),
        'found': True,
        'state': record.get('State'),
        'base': base,
        'flags': flags,
        'drain': drain,
        'busy': busy,
        'down': down,
        # drained: no job left and none will start; draining: drained, jobs still running
        'drained': drain and not busy,
        'draining': drain and busy,
        'in_service': not drain and not down,
        'reason': reason,
        'reason_user': user,
        'reason_time': when,
        'ours': bool(drain and reason is not None and reason.startswith(mark)),
        # drained or down by someone else (an operator, Slurm itself): its reason is never written over, and it is
        # never returned to service by the rollout
        'theirs': bool((drain or down) and not (reason is not None and reason.startswith(mark))),
    }


def statuses(text, names, mark):
    """{name: status} of every name asked for: a name Slurm does not know has found False."""
    parsed = parse_show_node(text)
    found = dict((record.get('NodeName'), node_status(record, mark)) for record in parsed['nodes'])
    result = {}
    for name in names:
        if name in found:
            result[name] = found[name]
        else:
            result[name] = unknown_node(name)
    return result


def unknown_node(name):
    """The status of a node its scheduler does not know (the same keys as node_status)."""
    return {'name': name, 'found': False, 'state': None, 'base': None, 'flags': [], 'drain': False, 'busy': False,
            'down': False, 'drained': False, 'draining': False, 'in_service': False, 'reason': None,
            'reason_user': None, 'reason_time': None, 'ours': False, 'theirs': False}


def one_line(text, limit=240):
    """``text`` on one line, its spaces squeezed, at most ``limit`` characters (cut with '...')."""
    line = u' '.join((text or u'').split())
    return line if len(line) <= limit else line[:limit - 3].rstrip() + u'...'


def drain_reason(mark, text, limit=240):
    """The reason written with a drain: the mark, then the text, on one line and at most ``limit`` characters."""
    return one_line(u'%s %s' % (mark, text or u''), limit)
