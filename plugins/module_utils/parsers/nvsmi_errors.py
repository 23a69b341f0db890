# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Recognises nvidia-smi failures and per-GPU error lines."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# nvidia-smi exit codes (as documented by nvidia-smi and used by LBNL NHC)
EXIT_CODES = {
    2: 'invalid argument',
    3: 'operation not available on the target device',
    4: 'permission denied',
    6: 'query unsuccessful',
    8: 'external power cables not attached',
    9: 'NVIDIA driver is not loaded',
    10: 'interrupt issue with a GPU',
    12: 'NVML shared library could not be found or loaded',
    13: 'function not implemented in this NVML version',
    14: 'infoROM is corrupted',
    15: 'a GPU has fallen off the bus or is otherwise inaccessible',
    255: 'other error or internal driver error',
}

_PATTERNS = (
    ('driver_not_loaded', re.compile(r"couldn't communicate with the NVIDIA driver", re.IGNORECASE)),
    ('nvml_mismatch', re.compile(r'Driver/library version mismatch', re.IGNORECASE)),
    ('nvml_missing', re.compile(r"couldn't find libnvidia-ml|NVML Shared Library Not Found", re.IGNORECASE)),
    # the library loaded but cannot reach the devices (often lost device access in a container)
    ('nvml_error', re.compile(r'Failed to initialize NVML: (?!Driver/library)', re.IGNORECASE)),
    ('no_devices', re.compile(r'^No devices were found', re.IGNORECASE | re.MULTILINE)),
    ('gpu_lost', re.compile(r'GPU is lost|fallen off the bus', re.IGNORECASE)),
    ('permission_denied', re.compile(r'Insufficient Permissions', re.IGNORECASE)),
)
_RC_KINDS = {9: 'driver_not_loaded', 12: 'nvml_missing', 15: 'gpu_lost', 4: 'permission_denied',
             2: 'invalid_argument', 14: 'inforom_corrupt', 8: 'power_cables'}

# "Unable to determine the device handle for GPU 0000:05:00.0: GPU is lost. ..." (old)
# "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error" (new)
_HANDLE_RE = re.compile(
    r'Unable to determine the device handle for GPU\s*(?:(\d+):\s*)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:'
    r'[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*:\s*(.*?)\s*$')


# Whole-output failure forms: nvidia-smi printed one of these instead of its output. With exit status 0 only
# these count, and only as the first line: a word inside a good output (a GB200 -q -x holds
# <power_smoothing>Insufficient Permissions</power_smoothing>) is a value, not a failure.
WHOLE_OUTPUT_RE = re.compile(r'^(NVIDIA-SMI has failed|Failed to initialize NVML|No devices were found|'
                             r"NVML Shared Library Not Found|couldn't find libnvidia-ml)", re.IGNORECASE)


def classify_nvsmi_failure(rc, text):
    """Classify a failed nvidia-smi run from its exit status and whole-output form.

    Returns None when ``rc`` is 0 and the first meaningful line of ``text`` is
    not one of nvidia-smi's whole-output failure messages (per-GPU error lines
    before a partial table are reported by ``device_errors``), else ``{kind,
    message, rc}``: ``message`` is the tool's own failure line (or the
    documented meaning of the exit code when it printed nothing).
    """
    text = text or ''
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if rc == 0 and not (lines and WHOLE_OUTPUT_RE.match(lines[0])):
        return None
    kind = None
    for name, pattern in _PATTERNS:
        if pattern.search(text):
            kind = name
            break
    if rc == 0 and kind == 'gpu_lost':
        return None
    if kind is None or (kind == 'permission_denied' and rc not in (0, 4)):
        kind = _RC_KINDS.get(rc, 'unknown')
    message = lines[0] if lines else EXIT_CODES.get(rc, 'nvidia-smi failed with exit code %s' % rc)
    for line in lines:
        if WHOLE_OUTPUT_RE.match(line):
            message = line
            break
    return {'kind': kind, 'message': message, 'rc': rc}


# "WARNING: infoROM is corrupted at gpu 0000:07:00.0" before an otherwise normal output
_INFOROM_RE = re.compile(r'WARNING: infoROM is corrupted at gpu ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])')


def exit_meaning(rc):
    """What an exit status means, for a command whose output was otherwise complete."""
    return EXIT_CODES.get(rc, 'exit status %s' % rc)


def device_errors(text):
    """Per-GPU error lines printed before (or instead of) the normal output.

    Returns a list of ``{gpu, pci_bus_id, reason, readable}``; ``gpu`` is the
    index when the new message form names it, else None; ``readable`` is
    False when nvidia-smi could not read the GPU at all (device handle), True
    for a warning about a GPU it still read (infoROM).
    """
    found = []
    for line in (text or '').splitlines():
        inforom = _INFOROM_RE.search(line)
        if inforom:
            found.append({'gpu': None, 'pci_bus_id': inforom.group(1), 'reason': 'infoROM is corrupted',
                          'readable': True})
            continue
        match = _HANDLE_RE.search(line)
        if match:
            found.append({
                'gpu': int(match.group(1)) if match.group(1) is not None else None,
                'pci_bus_id': match.group(2),
                'reason': match.group(3).split('  ')[0].strip().rstrip('.'),
                'readable': False,
            })
    return found
