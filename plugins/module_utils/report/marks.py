# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the failures and regressions of a host go on its topology drawing (see report/svg.py).

A subject names a GPU (``GPU3``, ``GPU 1``), a pair of GPUs (``GPU0-GPU3``), a NIC (``mlx5_2``), a port
(``mlx5_2/1``) or the node. Pair failures mark the GPU(s) most failing pairs share and the NVLink element (the
GPU's line to the NVSwitch, or the pair's line); node failures that name the bus id of a GPU nvidia-smi does
not list also mark that GPU's box. Nothing is dropped: what names nothing drawn is listed as unplaced.
Standard library only (Python 3.8+).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.report.svg import (
    GPU_RE, PAIR_RE, clean, gpu_index, message, new_marks, switched, usable)

__all__ = ['marks_for']


def _place_nvlink(marks, drawing, gpus, pairs, links):
    """NVLink findings: a failing pair marks the GPU(s) of the pair that most failing pairs share, and the NVLink
    element: that GPU's line to the NVSwitch, or (no NVSwitch) the pair's line, drawn as missing when the drawing
    has none. A link-count failure of a GPU marks its NVSwitch line or its pair lines too."""
    has_switch = switched(drawing)
    count = {}
    for dummy, a, b in pairs:
        count[a] = count.get(a, 0) + 1
        count[b] = count.get(b, 0) + 1
    for item, a, b in pairs:
        top = max(count[a], count[b])
        for index in sorted(set((a, b))):
            if count[index] != top:
                continue
            (marks['gpu'] if index in gpus else marks['missing_gpu']).setdefault(index, []).append(item)
            if has_switch and index in gpus:
                marks['switch'].setdefault(index, []).append(item)
        if not has_switch:
            marks['pair'].setdefault((min(a, b), max(a, b)), []).append(item)
    drawn = set((min(p.get('a'), p.get('b')), max(p.get('a'), p.get('b'))) for p in drawing.get('nvlink') or []
                if p.get('a') in gpus and p.get('b') in gpus)
    for index, item in links:
        if has_switch:
            marks['switch'].setdefault(index, []).append(item)
            continue
        for pair in sorted(drawn | set(marks['pair'])):
            if index in pair:
                marks['pair'].setdefault(pair, []).append(item)


def _place_unlisted(marks, drawing):
    """The GPUs on the PCI bus that nvidia-smi does not list: marked with the node failures that name their bus
    id, else with driver_loaded (driver not loaded) or gpu_count."""
    fallback = 'driver_loaded' if not drawing.get('driver_loaded') else 'gpu_count'
    for gpu in drawing.get('pci_gpus') or []:
        bus = clean(gpu['bus']).lower()
        named = [i for i in marks['node'] if bus in message(i).lower()]
        named = named or [i for i in marks['node'] if clean(i.get('check')) == fallback]
        if named:
            marks['pci'][clean(gpu['bus'])] = named


def marks_for(drawing, items):
    """Where each failure or regression goes on ``drawing`` (None: no drawing, everything is unplaced).

    ``items`` are failure or regression dicts (check, subject, message, ...). Returns {'gpu': {index: [items]},
    'nic': {name: [items]}, 'port': {(nic, port): [items]}, 'pair': {(a, b): [items]}, 'switch': {index: [items]},
    'missing_gpu': {index: [items]}, 'pci': {bus: [items]}, 'node': [items], 'unplaced': [items]}: nothing is
    dropped (a node failure may also mark the GPUs nvidia-smi does not list).
    """
    marks = new_marks()
    if drawing is not None:
        drawing = usable(drawing)
    gpus = set(g['index'] for g in (drawing or {}).get('gpus') or [])
    nics = dict((clean(n['name']), set(clean(p.get('port')) for p in n.get('ports') or []))
                for n in (drawing or {}).get('nics') or [])
    pairs, links = [], []
    for item in items:
        subject = item.get('subject')
        if subject is None or subject == 'node':
            marks['node'].append(item)
            continue
        subject = clean(subject)
        if drawing is None:
            marks['unplaced'].append(item)
            continue
        pair = PAIR_RE.match(subject)
        if pair:
            pairs.append((item, gpu_index(pair.group(1)), gpu_index(pair.group(2))))
        elif GPU_RE.match(subject):
            index = gpu_index(subject)
            (marks['gpu'] if index in gpus else marks['missing_gpu']).setdefault(index, []).append(item)
            if index in gpus and clean(item.get('check')) == 'nvlink_active_links':
                links.append((index, item))
        elif subject in nics:
            marks['nic'].setdefault(subject, []).append(item)
        elif u'/' in subject and subject.rsplit(u'/', 1)[0] in nics and \
                subject.rsplit(u'/', 1)[1] in nics[subject.rsplit(u'/', 1)[0]]:
            nic, port = subject.rsplit(u'/', 1)
            marks['port'].setdefault((nic, port), []).append(item)
            marks['nic'].setdefault(nic, []).append(item)
        else:
            marks['unplaced'].append(item)
    if drawing is not None:
        _place_nvlink(marks, drawing, gpus, pairs, links)
        _place_unlisted(marks, drawing)
    return marks
