# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG model (GPU instance placement, ids, MIG devices), the ``<mig_devices>`` element of the effective XML
and the ``mig -lgip``/``-lgi``/``-lci`` tables.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import uuid


MEMORY_SLOTS = 8
COMPUTE_SLICES = 7


def gi_id_for(start, size):
    """GPU instance id of a memory placement (binary tree of the 8 memory slices).

    Matches the real captures: 3g.40gb at 4:4 -> 2, 2g.20gb at 0:2 -> 3 (H100),
    1g.24gb at 4:2/0:2/2:2 -> 5/3/4 (GH200).
    """
    if size >= 8:
        return 0
    if size >= 4:
        return 1 + start // 4
    if size >= 2:
        return 3 + start // 2
    return 7 + start


def profile_by_id(table, profile_id):
    for prof in table['profiles']:
        if prof['id'] == profile_id:
            return prof
    return None


def find_gi_profile(table, token):
    """Profile named by ``token``: an id ("9") or a name ("3g.40gb", "MIG 3g.40gb")."""
    token = token.strip()
    if re.match(r'^\d+$', token):
        return profile_by_id(table, int(token))
    name = token[4:] if token.upper().startswith('MIG ') else token
    for prof in table['profiles']:
        if prof['name'].lower() == name.lower():
            return prof
    return None


def _used(table, gis):
    slots = set()
    compute = 0
    for gi in gis:
        prof = profile_by_id(table, gi['profile_id'])
        slots.update(range(gi['start'], gi['start'] + gi['size']))
        compute += prof['compute_slices'] if prof else 0
    return slots, compute


def place_gi(table, gis, prof):
    """Memory start of the next ``prof`` instance, or None (Insufficient Resources)."""
    same = sum(1 for gi in gis if gi['profile_id'] == prof['id'])
    if same >= prof['total']:
        return None
    if prof.get('media_extensions') and any(
            (profile_by_id(table, gi['profile_id']) or {}).get('media_extensions') for gi in gis):
        return None
    slots, compute = _used(table, gis)
    if compute + prof['compute_slices'] > COMPUTE_SLICES:
        return None
    for start in prof['placements']:
        wanted = set(range(start, start + prof['mem_slots']))
        if not wanted & slots:
            return start
    return None


def free_count(table, gis, prof):
    """How many more ``prof`` instances fit (the lgip Free column)."""
    trial = [dict(gi) for gi in gis]
    count = 0
    while True:
        start = place_gi(table, trial, prof)
        if start is None:
            return count
        trial.append({'id': -1, 'profile_id': prof['id'], 'start': start, 'size': prof['mem_slots'],
                      'compute_instances': []})
        count += 1


def mig_uuid(gpu_uuid, gi_id, ci_id):
    return 'MIG-%s' % uuid.uuid5(uuid.NAMESPACE_URL, 'gpuops-sim:%s/%d/%d' % (gpu_uuid, gi_id, ci_id))


def mig_devices(table, gis):
    """MIG devices (one per compute instance) ordered as nvidia-smi numbers them."""
    devices = []
    for gi in sorted(gis, key=lambda g: g['id']):
        prof = profile_by_id(table, gi['profile_id'])
        for ci in sorted(gi['compute_instances'], key=lambda c: c['id']):
            devices.append((gi, ci, prof))
    return devices


def mig_devices_element(indent, unit, table, gis, bar1_total_mib):
    devices = mig_devices(table, gis) if table else []
    if not devices:
        return '<mig_devices>\n%s%sNone\n%s</mig_devices>' % (indent, unit, indent)
    i1 = indent + unit
    lines = ['<mig_devices>']
    for index, (gi, ci, prof) in enumerate(devices):
        i2, i3, i4 = i1 + unit, i1 + unit * 2, i1 + unit * 3
        total = int(round(float(prof['memory_gib']) * 1024))
        used = prof.get('fb_used_mib') or 0
        free = prof.get('fb_free_mib', total - used)
        bar1 = bar1_total_mib * prof['mem_slots'] // MEMORY_SLOTS - 1 if bar1_total_mib else 0
        lines += [
            i1 + '<mig_device>',
            i2 + '<index>%d</index>' % index,
            i2 + '<gpu_instance_id>%d</gpu_instance_id>' % gi['id'],
            i2 + '<compute_instance_id>%d</compute_instance_id>' % ci['id'],
            i2 + '<device_attributes>',
            i3 + '<shared>',
            i4 + '<multiprocessor_count>%d</multiprocessor_count>' % prof['sm'],
            i4 + '<copy_engine_count>%d</copy_engine_count>' % prof['ce'],
            i4 + '<encoder_count>%d</encoder_count>' % prof['enc'],
            i4 + '<decoder_count>%d</decoder_count>' % prof['dec'],
            i4 + '<ofa_count>%d</ofa_count>' % prof['ofa'],
            i4 + '<jpg_count>%d</jpg_count>' % prof['jpeg'],
            i3 + '</shared>',
            i2 + '</device_attributes>',
            i2 + '<ecc_error_count>',
            i3 + '<volatile_count>',
            i4 + '<sram_uncorrectable>0</sram_uncorrectable>',
            i3 + '</volatile_count>',
            i2 + '</ecc_error_count>',
            i2 + '<fb_memory_usage>',
            i3 + '<total>%d MiB</total>' % total,
            i3 + '<reserved>0 MiB</reserved>',
            i3 + '<used>%d MiB</used>' % used,
            i3 + '<free>%d MiB</free>' % free,
            i2 + '</fb_memory_usage>',
            i2 + '<bar1_memory_usage>',
            i3 + '<total>%d MiB</total>' % bar1,
            i3 + '<used>0 MiB</used>',
            i3 + '<free>%d MiB</free>' % bar1,
            i2 + '</bar1_memory_usage>',
            i1 + '</mig_device>',
        ]
    lines.append(indent + '</mig_devices>')
    return '\n'.join(lines)


# ---------------------------------------------------------------------------
# MIG tables
# ---------------------------------------------------------------------------
LGIP_HEAD = (
    '+-------------------------------------------------------------------------------+\n'
    '| GPU instance profiles:                                                        |\n'
    '| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |\n'
    '|                                Free/Total   GiB              CE    JPEG  OFA  |\n'
    '|===============================================================================|\n')
LGIP_SEP = '+-------------------------------------------------------------------------------+\n'
LGI_HEAD = (
    '+---------------------------------------------------------+\n'
    '| GPU instances:                                          |\n'
    '| GPU   Name               Profile  Instance   Placement  |\n'
    '|                            ID       ID       Start:Size |\n'
    '|=========================================================|\n')
LGI_SEP = '+---------------------------------------------------------+\n'
LCI_HEAD = (
    '+--------------------------------------------------------------------+\n'
    '| Compute instances:                                                 |\n'
    '| GPU     GPU       Name             Profile   Instance   Placement  |\n'
    '|       Instance                       ID        ID       Start:Size |\n'
    '|         ID                                                         |\n'
    '|====================================================================|\n')
LCI_SEP = '+--------------------------------------------------------------------+\n'


def render_lgip(rows):
    """rows: [(gpu_index, profile, free)] -> the ``mig -lgip`` table (H100 driver layout)."""
    out = [LGIP_HEAD]
    for gpu, prof, free in rows:
        name = 'MIG ' + prof['name']
        line1 = ('|' + ('%d' % gpu).rjust(4) + '  ' + name.ljust(18) + ('%d' % prof['id']).rjust(4)
                 + ('%d/%d' % (free, prof['total'])).rjust(8) + ' ' * 8 + prof['memory_gib'].ljust(11)
                 + prof['p2p'].ljust(7) + ('%d' % prof['sm']).ljust(7) + ('%d' % prof['dec']).ljust(6)
                 + ('%d' % prof['enc']).ljust(4) + '|\n')
        line2 = ('|' + ' ' * 63 + ('%d' % prof['ce']).ljust(6) + ('%d' % prof['jpeg']).ljust(6)
                 + ('%d' % prof['ofa']).ljust(4) + '|\n')
        out += [line1, line2, LGIP_SEP]
    return ''.join(out)


def render_lgi(rows):
    """rows: [(gpu_index, gi, profile)] -> the ``mig -lgi`` table."""
    out = [LGI_HEAD]
    for gpu, gi, prof in rows:
        out.append('|' + ('%d' % gpu).rjust(4) + '  ' + ('MIG ' + prof['name']).ljust(20)
                   + ('%d' % prof['id']).rjust(4) + ('%d' % gi['id']).rjust(9) + ' ' * 10
                   + ('%d:%d' % (gi['start'], gi['size'])).ljust(8) + '|\n')
        out.append(LGI_SEP)
    return ''.join(out)


def render_lci(rows):
    """rows: [(gpu_index, gi, ci, profile)] -> the ``mig -lci`` table."""
    out = [LCI_HEAD]
    for gpu, gi, ci, prof in rows:
        out.append('|' + ('%d' % gpu).rjust(4) + ('%d' % gi['id']).rjust(7) + ' ' * 7
                   + ('MIG ' + prof['name']).ljust(18) + ('%d' % ci['profile_id']).rjust(4)
                   + ('%d' % ci['id']).rjust(10) + ' ' * 10 + ('%d:%d' % (ci['start'], ci['size'])).ljust(8)
                   + '|\n')
        out.append(LCI_SEP)
    return ''.join(out)


CCI_OK = 'Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)'


def gi_sort_key(gi):
    return (gi['start'], gi['id'])
