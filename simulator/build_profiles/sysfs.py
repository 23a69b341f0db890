# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The profiles' sysfs trees (PCI devices, GPUs, HCAs and their ports) and the MIG profile tables
(``sim/mig-profiles.json``) of the MIG-capable GPUs.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from .. import bundle
from .. import nvidia_smi
from .sources import (PCIE_SPEED, SRC_A100_XML, SRC_GH200_CGI, SRC_H100_LCI, SRC_H100_LGIP, SRC_SCALEWAY_TABLE,
                      parse_lgip, read_real)


def pci_device(tree, address, gen_cur, width_cur, gen_max, width_max, numa, vendor=None, device=None,
               pci_class=None):
    base = 'sys/bus/pci/devices/%s/' % address
    bundle.put_text(tree, base + 'current_link_speed', PCIE_SPEED[gen_cur] + '\n')
    bundle.put_text(tree, base + 'current_link_width', '%d\n' % width_cur)
    bundle.put_text(tree, base + 'max_link_speed', PCIE_SPEED[gen_max] + '\n')
    bundle.put_text(tree, base + 'max_link_width', '%d\n' % width_max)
    bundle.put_text(tree, base + 'numa_node', '%d\n' % numa)
    if vendor:
        bundle.put_text(tree, base + 'vendor', vendor + '\n')
    if device:
        bundle.put_text(tree, base + 'device', device + '\n')
    if pci_class:
        bundle.put_text(tree, base + 'class', pci_class + '\n')
    if vendor and device and pci_class:
        driver = 'nvidia' if vendor == '0x10de' else 'mlx5_core'
        bundle.put_text(tree, base + 'uevent', 'DRIVER=%s\nPCI_CLASS=%s\nPCI_ID=%s:%s\nPCI_SLOT_NAME=%s\n' % (
            driver, pci_class[2:].lstrip('0').upper(), vendor[2:].upper(), device[2:].upper(), address))


def ib_device(tree, name, address, port_values, extra=None):
    """An RDMA device; ``device`` is the kernel's link to its PCI function."""
    base = 'sys/class/infiniband/%s/' % name
    tree[base + 'device'] = bundle.Link('../../../bus/pci/devices/%s' % address)
    for key in ('state', 'phys_state', 'rate', 'link_layer'):
        bundle.put_text(tree, base + 'ports/1/' + key, port_values[key] + '\n')
    for key, value in sorted((extra or {}).items()):
        bundle.put_text(tree, base + key, value + '\n')


def gpu_sysfs(tree, xml_text, numa_by_index):
    for index, block in enumerate(nvidia_smi.XmlDoc(xml_text).blocks):
        bus_id = nvidia_smi.get_value(block, 'pci/pci_bus_id')
        address = (bus_id[4:]).lower()
        link = 'pci/pci_gpu_link_info/'
        device_id = nvidia_smi.get_value(block, 'pci/pci_device_id')
        pci_device(tree, address,
                   int(nvidia_smi.get_value(block, link + 'pcie_gen/current_link_gen')),
                   int(nvidia_smi.get_value(block, link + 'link_widths/current_link_width').rstrip('x')),
                   int(nvidia_smi.get_value(block, link + 'pcie_gen/max_link_gen')),
                   int(nvidia_smi.get_value(block, link + 'link_widths/max_link_width').rstrip('x')),
                   numa_by_index[index], vendor='0x' + device_id[4:].lower(),
                   device='0x' + device_id[:4].lower(), pci_class='0x030200')


# ---------------------------------------------------------------------------
# MIG profile tables
# ---------------------------------------------------------------------------

def mig_geometry(prof, full_gib):
    """Slices, placements and default compute instance of a GPU-instance profile.

    Memory slices are derived from the profile's memory (eighths of the full
    GPU); compute slices from the "<N>g" name; placement preference and the
    default compute-instance profile follow the real captures (3g.40gb placed
    at 4:4 before 0:4; 1g.24gb at 4:2, 0:2, 2:2; 1-slice compute profile ID 7
    for a 2-memory-slice 1g; 3g compute placement 0:4).
    """
    compute = int(re.match(r'^(\d+)g', prof['name']).group(1))
    mem = max(1, int(round(float(prof['memory_gib']) / (float(full_gib) / 8.0))))
    if mem >= 8:
        mem, placements = 8, [0]
    elif mem >= 4:
        mem, placements = 4, ([4, 0] if compute == 3 else [0])
    elif mem >= 2:
        mem, placements = 2, ([4, 0, 2, 6] if compute == 1 else [4, 0, 2])
    else:
        placements = list(range(0, 7))
    ci_profile = {1: 7 if mem == 2 else 0, 2: 1, 3: 2, 4: 3, 7: 4}[compute]
    ci_size = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}[compute]
    prof = dict(prof)
    prof.pop('gpu', None)
    prof.pop('free', None)
    prof.update({'compute_slices': compute, 'mem_slots': mem, 'placements': placements,
                 'ci_profile_id': ci_profile, 'ci_placement_size': ci_size,
                 'media_extensions': prof['name'].endswith('+me')})
    return prof


# A100-SXM4-40GB GPU-instance profiles as NVIDIA's MIG User Guide lists them
# (no real -lgip of an A100 is in tests/fixtures/real; the 3g.20gb row matches
# the real A100 XML's MIG devices: 42 SMs, 3 CE, 2 DEC, 0 OFA, 0 JPG, 19968 MiB).
A100_40GB_LGIP = [
    ('1g.5gb', 19, 7, '4.75', 14, 0, 0, 1, 0, 0),
    ('1g.5gb+me', 20, 1, '4.75', 14, 1, 0, 1, 1, 1),
    ('1g.10gb', 15, 4, '9.62', 14, 1, 0, 1, 0, 0),
    ('2g.10gb', 14, 3, '9.62', 28, 1, 0, 2, 0, 0),
    ('3g.20gb', 9, 2, '19.50', 42, 2, 0, 3, 0, 0),
    ('4g.20gb', 5, 1, '19.50', 56, 2, 0, 4, 0, 0),
    ('7g.40gb', 0, 1, '39.25', 98, 5, 0, 7, 1, 1),
]


def mig_tables(sources, which):
    tables = {}
    if 'h100' in which:
        rows = parse_lgip(read_real(sources.use(
            SRC_H100_LGIP, 'MIG GPU-instance profiles of an H100 80GB (names, ids, instances, memory, SM/DEC/ENC/'
            'CE/JPEG/OFA) for mig -lgip, MIG device attributes and the placement model')))
        full = [r for r in rows if r['name'].startswith('7g')][0]['memory_gib']
        profiles = [mig_geometry(r, full) for r in rows]
        used = scaleway_fb_used(sources)
        for prof in profiles:
            if prof['name'] in used:
                prof['fb_used_mib'] = used[prof['name']]
        sources.use(SRC_GH200_CGI, 'GPU-instance ids by placement (5,3,4 for 1g.24gb) and compute-instance '
                                   'profile ID 7 of a 2-memory-slice 1g profile')
        sources.use(SRC_H100_LCI, 'compute-instance placement sizes (3g.40gb -> 0:4, 2g.20gb -> 0:2) and '
                                  'profile ids 1/2')
        tables['NVIDIA H100 80GB HBM3'] = {
            'source': SRC_H100_LGIP, 'profiles': profiles}
    if 'a100' in which:
        rows = [{'name': r[0], 'id': r[1], 'total': r[2], 'memory_gib': r[3], 'p2p': 'No', 'sm': r[4],
                 'dec': r[5], 'enc': r[6], 'ce': r[7], 'jpeg': r[8], 'ofa': r[9]} for r in A100_40GB_LGIP]
        profiles = [mig_geometry(r, '39.25') for r in rows]
        seen = a100_mig_device_memory(sources)
        for prof in profiles:
            key = (prof['sm'], int(round(float(prof['memory_gib']) * 1024)))
            if key in seen:
                prof['fb_used_mib'], prof['fb_free_mib'] = seen[key]
        tables['NVIDIA A100-SXM4-40GB'] = {
            'source': 'NVIDIA MIG User Guide A100-SXM4-40GB profile table (not a capture in this repository); '
                      '3g.20gb cross-checked with ' + SRC_A100_XML,
            'profiles': profiles}
    return tables


def a100_mig_device_memory(sources):
    """(SMs, total MiB) -> (used, free) MiB of the MIG devices in the real A100 XML."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(read_real(sources.use(
        SRC_A100_XML, 'FB memory used/free of a fresh 3g.20gb MIG device (19 / 19948 MiB)')).encode('utf-8'))
    seen = {}
    for dev in root.iter('mig_device'):
        sms = int(dev.find('device_attributes/shared/multiprocessor_count').text)
        total = int(dev.find('fb_memory_usage/total').text.split()[0])
        seen[(sms, total)] = (int(dev.find('fb_memory_usage/used').text.split()[0]),
                              int(dev.find('fb_memory_usage/free').text.split()[0]))
    return seen


def scaleway_fb_used(sources):
    """FB memory used by a fresh MIG device, from the real 7x 1g.10gb table."""
    text = read_real(sources.use(SRC_SCALEWAY_TABLE, 'FB memory a fresh 1g.10gb MIG device reports used '
                                                     '(15 MiB)'))
    match = re.search(r'\|\s+0\s+\d+\s+0\s+0\s+\|\s+(\d+)MiB /\s+(\d+)MiB', text)
    return {'1g.10gb': int(match.group(1))}
