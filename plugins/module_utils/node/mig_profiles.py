# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU-instance profiles per GPU model, for validating a MIG layout.

``nvidia-smi mig -lgip`` answers only on a GPU whose MIG mode is already
enabled, so a layout for a GPU that still has MIG disabled is checked against
the profiles known for its product name (``KNOWN``). When ``-lgip`` rows are
at hand they win: a newer driver may add profiles.

Each profile: ``name`` (``1g.10gb``), ``id`` (the GPU-instance profile id
``-cgi`` accepts), ``total`` (instances that fit on an empty GPU),
``memory_gib``, ``compute_slices`` (the ``Ng`` of the name, of 7) and
``memory_slices`` (eighths of the GPU's memory, from ``memory_gib``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import profile_name

COMPUTE_SLICES = 7
MEMORY_SLICES = 8

# (name, id, total, memory_gib) as ``nvidia-smi mig -lgip`` prints them.
# H100 80GB HBM3: tests/fixtures/real/mig/h100-80gb-lgip.txt (an HGX H100).
_H100_80GB = [
    ('1g.10gb', 19, 7, 9.75), ('1g.10gb+me', 20, 1, 9.75), ('1g.20gb', 15, 4, 19.62), ('2g.20gb', 14, 3, 19.62),
    ('3g.40gb', 9, 2, 39.5), ('4g.40gb', 5, 1, 39.5), ('7g.80gb', 0, 1, 79.25)]
# GH200 with 96 GB HBM3 (product name "NVIDIA GH200 480GB"): tests/fixtures/real/mig/gh200-96gb-lgip.txt.
_GH200_96GB = [
    ('1g.12gb', 19, 7, 11.0), ('1g.12gb+me', 20, 1, 11.0), ('1g.24gb', 15, 4, 23.0), ('2g.24gb', 14, 3, 23.0),
    ('3g.48gb', 9, 2, 46.5), ('4g.48gb', 5, 1, 46.5), ('7g.96gb', 0, 1, 93.0)]
# A100-SXM4-40GB: NVIDIA's MIG User Guide profile table (no real -lgip of this model here).
_A100_40GB = [
    ('1g.5gb', 19, 7, 4.75), ('1g.5gb+me', 20, 1, 4.75), ('1g.10gb', 15, 4, 9.62), ('2g.10gb', 14, 3, 9.62),
    ('3g.20gb', 9, 2, 19.5), ('4g.20gb', 5, 1, 19.5), ('7g.40gb', 0, 1, 39.25)]
# A100 80GB (SXM4 and PCIe): NVIDIA's MIG User Guide profile table (no real -lgip of this model here; the real
# -L captures of both show 1g.10gb devices).
_A100_80GB = [
    ('1g.10gb', 19, 7, 9.5), ('1g.10gb+me', 20, 1, 9.5), ('1g.20gb', 15, 4, 19.5), ('2g.20gb', 14, 3, 19.5),
    ('3g.40gb', 9, 2, 39.25), ('4g.40gb', 5, 1, 39.25), ('7g.80gb', 0, 1, 79.0)]

# Product name (nvidia-smi -q -x product_name) -> the rows above; the source of each is named beside it.
_TABLES = {
    'NVIDIA H100 80GB HBM3': _H100_80GB,
    # tests/fixtures/real/mig/h100-pcie-scaleway-mig-lgip.txt: the same profiles with fewer SMs
    'NVIDIA H100 PCIe': _H100_80GB,
    'NVIDIA GH200 480GB': _GH200_96GB,
    'NVIDIA A100-SXM4-40GB': _A100_40GB,
    'NVIDIA A100-SXM4-80GB': _A100_80GB,
    'NVIDIA A100 80GB PCIe': _A100_80GB,
}

_COMPUTE_RE = re.compile(r'^(\d+)g\.')


def compute_slices(name):
    """The ``N`` of ``Ng.<memory>`` (1 for ``1g.10gb+me``); None for a name that is not a GPU-instance profile
    (``1c.3g.40gb`` is a compute-instance profile)."""
    match = _COMPUTE_RE.match(profile_name(name))
    return int(match.group(1)) if match else None


def _with_slices(rows):
    """Profiles with ``compute_slices`` and ``memory_slices`` from ``[{name, id, total, memory_gib, ...}]``."""
    rows = [dict(row) for row in rows]
    largest = max([float(row['memory_gib']) for row in rows] or [0.0])
    for row in rows:
        row['name'] = profile_name(row['name'])
        row['compute_slices'] = compute_slices(row['name'])
        if largest > 0:
            row['memory_slices'] = max(1, int(round(float(row['memory_gib']) / (largest / MEMORY_SLICES))))
        else:
            row['memory_slices'] = None
    return rows


def _known(rows):
    return _with_slices([{'name': n, 'id': i, 'total': t, 'memory_gib': m} for n, i, t, m in rows])


KNOWN = dict((product, _known(rows)) for product, rows in _TABLES.items())


def profiles_for(product_name, lgip_rows=None):
    """The profiles of one GPU: from its ``parse_lgip`` rows when given (rows of other GPUs of the same
    output are the caller's to leave out; a profile listed twice counts once), else KNOWN for the product
    name, else None (a model this collection does not know, or one without MIG)."""
    if lgip_rows:
        seen = set()
        rows = []
        for row in lgip_rows:
            name = profile_name(row['name'])
            if name not in seen:
                seen.add(name)
                rows.append(dict((k, row[k]) for k in ('name', 'id', 'total', 'memory_gib')))
        return _with_slices(rows)
    known = KNOWN.get((product_name or '').strip())
    return [dict(p) for p in known] if known is not None else None


def _describe(counts):
    return ', '.join('%dx %s' % (counts[name], name) for name in sorted(counts))


def fits(profiles, wanted_counts):
    """None when ``wanted_counts`` (``{'1g.10gb': 7}``) can be created on one empty GPU with these profiles,
    else the reason: an unknown profile name (listing the known ones), a count above the profile's
    total, or more compute slices than 7 or memory slices than 8 in all. Passing this check is necessary,
    not sufficient: nvidia-smi may still find no placement ("Insufficient Resources")."""
    by_name = dict((p['name'], p) for p in profiles or [])
    counts = {}
    for name, count in (wanted_counts or {}).items():
        key = profile_name(name)
        if isinstance(count, bool) or not isinstance(count, int):
            return '%s: the count must be a whole number, not %r' % (key, count)
        counts[key] = counts.get(key, 0) + count
    unknown = sorted(name for name in counts if name not in by_name)
    if unknown:
        return 'unknown GPU-instance profile %s (this GPU has: %s)' % (
            ', '.join(unknown), ', '.join(p['name'] for p in profiles or []) or 'none')
    for name in sorted(counts):
        if counts[name] < 0:
            return '%s: a count cannot be negative (%d)' % (name, counts[name])
        if counts[name] > by_name[name]['total']:
            return '%dx %s: at most %d fit on one GPU' % (counts[name], name, by_name[name]['total'])
    used = dict((name, count) for name, count in counts.items() if count)
    compute = sum((by_name[name]['compute_slices'] or 0) * count for name, count in used.items())
    if compute > COMPUTE_SLICES:
        return '%s: %d compute slices, a GPU has %d' % (_describe(used), compute, COMPUTE_SLICES)
    if any(by_name[name]['memory_slices'] is None for name in used):
        return None
    memory = sum(by_name[name]['memory_slices'] * count for name, count in used.items())
    if memory > MEMORY_SLICES:
        return '%s: %d memory slices, a GPU has %d' % (_describe(used), memory, MEMORY_SLICES)
    return None
