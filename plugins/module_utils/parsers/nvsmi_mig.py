# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers of the MIG outputs of nvidia-smi.

``nvidia-smi mig -lgip`` (GPU-instance profiles), ``mig -lgi`` (GPU
instances), ``mig -lci`` (compute instances), ``nvidia-smi -i X -mig 0|1``
(MIG mode changes) and the result lines of ``mig -cgi/-cci/-dci/-dgi``.

The tables differ in width between drivers, so rows are read by whitespace,
never by column positions. A text that is not such a table raises ParseError
naming the line; the "none found" answers (rc 6) are recognised by
``empty_answer`` and mean an empty list, not an error.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

# What nvidia-smi prints (exit status 6, NVML "Not Found") when there is nothing to list.
NOT_FOUND_TEXTS = (
    'No GPU instances found',
    'No compute instances found',
    'No MIG-enabled devices found',
)
RC_NOT_FOUND = 6

_BORDER_RE = re.compile(r'^\+[-=+]*\+$')
_RULE_RE = re.compile(r'^\|=+\|$')
_BUS_RE = r'([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])'

# | 0  MIG 1g.10gb  19  7/7  9.75  No  16  1  0 |
_LGIP_ROW_RE = re.compile(r'^\|\s*(\d+)\s+(?:MIG\s+)?(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([0-9.]+)\s+(\S+)\s+(\d+)\s+'
                          r'(\d+)\s+(\d+)\s*\|$')
# |                                  1  1  0 |   (CE, JPEG, OFA)
_LGIP_ROW2_RE = re.compile(r'^\|\s+(\d+)\s+(\d+)\s+(\d+)\s*\|$')
# | 0  MIG 2g.20gb  14  3  0:2 |
_LGI_ROW_RE = re.compile(r'^\|\s*(\d+)\s+(?:MIG\s+)?(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|$')
# | 0  3  MIG 2g.20gb  1  0  0:2 |
_LCI_ROW_RE = re.compile(r'^\|\s*(\d+)\s+(\d+)\s+(?:MIG\s+)?(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|$')
_HEADER_WORDS = ('GPU', 'Name', 'ID', 'Instance', 'Instances', 'Free/Total', 'Memory', 'GiB', 'P2P', 'SM', 'DEC',
                 'ENC', 'CE', 'JPEG', 'OFA', 'Profile', 'Placement', 'Start:Size')

_MODE_DONE_RE = re.compile(r'^(Enabled|Disabled) MIG Mode for GPU ' + _BUS_RE)
_MODE_PENDING_RE = re.compile(r'^Warning: MIG mode is in pending (enable|disable) state for GPU ' + _BUS_RE)
_MODE_UNABLE_RE = re.compile(r'^Unable to (enable|disable) MIG Mode for GPU ' + _BUS_RE + r'\s*:\s*(.*)$')
_ANY_BUS_RE = re.compile(_BUS_RE)

_CREATED_GI_RE = re.compile(r'^Successfully created GPU instance ID\s+(\d+) on GPU\s+(\d+) using profile '
                            r'(?:MIG\s+)?(\S+) \(ID\s+(\d+)\)')
_CREATED_CI_RE = re.compile(r'^Successfully created compute instance ID\s+(\d+) on GPU\s+(\d+) GPU instance ID\s+'
                            r'(\d+) using profile (?:MIG\s+)?(\S+) \(ID\s+(\d+)\)')
_DESTROYED_CI_RE = re.compile(r'^Successfully destroyed compute instance ID\s+(\d+) from GPU\s+(\d+) GPU instance '
                              r'ID\s+(\d+)')
_DESTROYED_GI_RE = re.compile(r'^Successfully destroyed GPU instance ID\s+(\d+) from GPU\s+(\d+)')


def profile_name(name):
    """``'1g.10gb'`` for ``'MIG 1g.10gb'`` or ``'1g.10gb'`` (the spelling mig-parted and nvidia-smi accept)."""
    name = (name or '').strip()
    if name[:4].upper() == 'MIG ':
        name = name[4:].strip()
    return name


def empty_answer(rc, text):
    """True when ``(rc, text)`` is nvidia-smi's answer for "nothing to list": every line of the
    text starts with one of NOT_FOUND_TEXTS and the exit status is 0 or 6."""
    if rc not in (0, RC_NOT_FOUND):
        return False
    lines = [line.strip() for line in (clean(text) or '').splitlines() if line.strip()]
    if not lines:
        return False
    return all(any(line.startswith(known) for known in NOT_FOUND_TEXTS) for line in lines)


def _table_lines(text, command, title):
    """(line_no, stripped line) of the rows of a ``mig -l*`` table, after checking its title."""
    text = clean(text)
    if text is None or not text.strip():
        raise ParseError(command, 'empty output')
    lines = text.splitlines()
    rows = []
    seen_title = False
    seen_rule = False
    last = None
    for idx, raw in enumerate(lines):
        line = raw.strip()
        if line:
            last = line
        if not line or _BORDER_RE.match(line):
            continue
        if not seen_title:
            if line.startswith('|') and line.strip('| ').rstrip(':') == title:
                seen_title = True
                continue
            raise ParseError(command, 'not a "%s" table' % title, idx + 1, raw)
        if not seen_rule:
            if _RULE_RE.match(line):
                seen_rule = True
                continue
            words = line.strip('|').split()
            if line.startswith('|') and line.endswith('|') and all(w in _HEADER_WORDS for w in words):
                continue
            raise ParseError(command, 'not a header line of the "%s" table' % title, idx + 1, raw)
        rows.append((idx + 1, raw))
    if not seen_title:
        raise ParseError(command, 'no "%s" table' % title)
    if not seen_rule:
        raise ParseError(command, 'the "%s" table has no rows section (cut short?)' % title)
    if not rows:
        raise ParseError(command, 'the "%s" table has no rows (nvidia-smi prints "No ... found" instead)' % title)
    if not _BORDER_RE.match(last):
        raise ParseError(command, 'the "%s" table does not end with its border line (cut short?)' % title)
    return rows


def parse_lgip(text):
    """``nvidia-smi mig -lgip`` -> ``[{gpu, name, id, free, total, memory_gib, p2p, sm, dec, enc, ce, jpeg,
    ofa}]`` in the order printed; ``name`` without the ``MIG`` prefix (``1g.10gb``, ``1g.10gb+me``)."""
    command = 'nvidia-smi mig -lgip'
    result = []
    pending = None
    for line_no, raw in _table_lines(text, command, 'GPU instance profiles'):
        line = raw.strip()
        match = _LGIP_ROW_RE.match(line)
        if match:
            if pending is not None:
                raise ParseError(command, 'profile %s has no CE/JPEG/OFA line' % pending['name'], line_no, raw)
            gpu, name, pid, free, total, mem, p2p, sm, dec, enc = match.groups()
            pending = {'gpu': int(gpu), 'name': profile_name(name), 'id': int(pid), 'free': int(free),
                       'total': int(total), 'memory_gib': float(mem), 'p2p': p2p, 'sm': int(sm), 'dec': int(dec),
                       'enc': int(enc)}
            continue
        match = _LGIP_ROW2_RE.match(line)
        if match and pending is not None:
            pending.update({'ce': int(match.group(1)), 'jpeg': int(match.group(2)), 'ofa': int(match.group(3))})
            result.append(pending)
            pending = None
            continue
        raise ParseError(command, 'not a GPU-instance profile row', line_no, raw)
    if pending is not None:
        raise ParseError(command, 'profile %s has no CE/JPEG/OFA line (cut short?)' % pending['name'])
    return result


def parse_lgi(text):
    """``nvidia-smi mig -lgi`` -> ``[{gpu, name, profile_id, id, start, size}]`` in the order printed
    (not sorted by id: nvidia-smi lists them by placement)."""
    command = 'nvidia-smi mig -lgi'
    result = []
    for line_no, raw in _table_lines(text, command, 'GPU instances'):
        match = _LGI_ROW_RE.match(raw.strip())
        if not match:
            raise ParseError(command, 'not a GPU-instance row', line_no, raw)
        gpu, name, pid, gid, start, size = match.groups()
        result.append({'gpu': int(gpu), 'name': profile_name(name), 'profile_id': int(pid), 'id': int(gid),
                       'start': int(start), 'size': int(size)})
    return result


def parse_lci(text):
    """``nvidia-smi mig -lci`` -> ``[{gpu, gi, name, profile_id, id, start, size}]``: ``gi`` is the GPU
    instance id, ``name`` the compute-instance profile name (``2g.20gb``, or ``1c.3g.40gb`` for a part of
    a GPU instance)."""
    command = 'nvidia-smi mig -lci'
    result = []
    for line_no, raw in _table_lines(text, command, 'Compute instances'):
        match = _LCI_ROW_RE.match(raw.strip())
        if not match:
            raise ParseError(command, 'not a compute-instance row', line_no, raw)
        gpu, gid, name, pid, cid, start, size = match.groups()
        result.append({'gpu': int(gpu), 'gi': int(gid), 'name': profile_name(name), 'profile_id': int(pid),
                       'id': int(cid), 'start': int(start), 'size': int(size)})
    return result


def _one_line(text):
    """A line as the operator should read it: runs of blanks (a terminal wrap pasted as spaces) made one."""
    return re.sub(r'\s{2,}', ' ', text.strip())


def parse_mode_change(text):
    """``nvidia-smi [-i X] -mig 0|1`` -> ``[{bus_id, result, message}]``, one per GPU line.

    ``result`` is ``enabled``/``disabled`` (the mode is now current), ``pending`` (nvidia-smi set the
    mode but it needs a GPU reset or reboot: "pending enable state ... In use by another client" or
    "Not Supported" in a VM), ``not_supported`` (MIG cannot be set on that GPU) or ``error`` (any other
    "Unable to ..." line; ``bus_id`` may then be None). ``message`` is the line verbatim. Warnings
    about persistence mode, "All done." and explanations are not results. The exit status says
    little: a pending mode still ends in "All done." with status 0.
    """
    result = []
    for raw in (clean(text) or '').splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _MODE_DONE_RE.match(line)
        if match:
            result.append({'bus_id': match.group(2), 'result': match.group(1).lower(), 'message': line})
            continue
        match = _MODE_PENDING_RE.match(line)
        if match:
            result.append({'bus_id': match.group(2), 'result': 'pending', 'message': line})
            continue
        match = _MODE_UNABLE_RE.match(line)
        if match:
            reason = _one_line(match.group(3)).lower().replace(' ', '')
            kind = 'not_supported' if reason.startswith('notsupported') else 'error'
            result.append({'bus_id': match.group(2), 'result': kind, 'message': line})
            continue
        if line.startswith('Unable to') or line.startswith('Failed to'):
            bus = _ANY_BUS_RE.search(line)
            result.append({'bus_id': bus.group(1) if bus else None, 'result': 'error', 'message': line})
    return result


def mig_errors(text):
    """The lines of a ``mig -cgi/-cci/-dci/-dgi`` output that report a failure, verbatim (every
    non-empty line that is not a "Successfully ..." line: "Unable to create a GPU instance on GPU 0
    using profile 20: Insufficient Resources", "Failed to create GPU instances: In use by another
    client", "No MIG-enabled devices found.", "Insufficient Permissions")."""
    errors = []
    for raw in (clean(text) or '').splitlines():
        line = raw.rstrip('\r\n')
        if line.strip() and not line.strip().startswith('Successfully'):
            errors.append(line)
    return errors


def parse_results(text):
    """The "Successfully ..." lines of ``mig -cgi [-C]/-cci/-dci/-dgi`` as records:
    ``{action: created|destroyed, kind: gpu_instance|compute_instance, gpu, gi, ci (compute instances
    only), name and profile_id (created only)}``, in the order printed. Other lines are left out
    (``mig_errors`` returns them)."""
    result = []
    for raw in (clean(text) or '').splitlines():
        line = raw.strip()
        match = _CREATED_GI_RE.match(line)
        if match:
            result.append({'action': 'created', 'kind': 'gpu_instance', 'gi': int(match.group(1)),
                           'gpu': int(match.group(2)), 'name': profile_name(match.group(3)),
                           'profile_id': int(match.group(4))})
            continue
        match = _CREATED_CI_RE.match(line)
        if match:
            result.append({'action': 'created', 'kind': 'compute_instance', 'ci': int(match.group(1)),
                           'gpu': int(match.group(2)), 'gi': int(match.group(3)),
                           'name': profile_name(match.group(4)), 'profile_id': int(match.group(5))})
            continue
        match = _DESTROYED_CI_RE.match(line)
        if match:
            result.append({'action': 'destroyed', 'kind': 'compute_instance', 'ci': int(match.group(1)),
                           'gpu': int(match.group(2)), 'gi': int(match.group(3))})
            continue
        match = _DESTROYED_GI_RE.match(line)
        if match:
            result.append({'action': 'destroyed', 'kind': 'gpu_instance', 'gi': int(match.group(1)),
                           'gpu': int(match.group(2))})
    return result


def instances_by_gpu(lgi_rows):
    """``{gpu index: {profile name: count}}`` of ``parse_lgi`` rows."""
    counts = {}
    for row in lgi_rows:
        per_gpu = counts.setdefault(row['gpu'], {})
        per_gpu[row['name']] = per_gpu.get(row['name'], 0) + 1
    return counts
