# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which driver branches and kernel modules drive which NVIDIA GPU: one table, each rule with its source.

Read from the GPUs' PCI device ids (``node/nvidia_pci.py``), before any driver is installed:

- :data:`LAST_BRANCH`: the newest branch that drives an architecture (Maxwell, Pascal, Volta: 580);
- :data:`OPEN_ONLY_ARCHITECTURES` and :data:`OPEN_ONLY_DEVICES`: the GPUs only the open kernel modules drive
  (Blackwell and later, Grace Hopper);
- :data:`FIRST_RELEASE`: for each of those GPUs, the first release whose open kernel modules list its device id;
  an id no release lists yet takes the newest first release of the listed ids of its id block
  (:func:`first_release`). Only open-only GPUs have a minimum: for the others NVIDIA's README says the open
  modules "can be used on any Turing or later GPU", and its table is not a list of first support (the T4, driven
  by the open modules since 515, is first listed in 575).

:func:`limits` folds them over a node's GPUs. tests/unit/plugins/module_utils/plans/test_gpu_driver_support.py
checks the tables against their sources (tests/fixtures/ids/).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.node import nvidia_pci
from ansible_collections.gpuops.node.plugins.module_utils import versions as V

SOURCES = {
    'deprecation-580': (
        'NVIDIA, "Unix Graphics Feature Deprecation Schedule" (forums.developer.nvidia.com/t/'
        'unix-graphics-feature-deprecation-schedule/60588): "The release 580 series will be the last to support '
        'GPUs based on the Maxwell, Pascal, and Volta architectures."'),
    'open-modules-blog': (
        'NVIDIA Technical Blog, "NVIDIA Transitions Fully Towards Open-Source GPU Kernel Modules" (2024-07-17): '
        'for Grace Hopper and Blackwell platforms the open-source GPU kernel modules must be used; the '
        'proprietary ones are unsupported there.'),
    'open-modules-readme': (
        'NVIDIA/open-gpu-kernel-modules README.md, "Compatible GPUs", at each release tag from 515.43.04 to '
        '595.45.04: the first release whose table lists the device id (tests/fixtures/ids/'
        'open-gpu-kernel-modules-first-release.tsv).'),
}

# architecture -> the newest branch that drives it (deprecation-580)
LAST_BRANCH = {'Maxwell': 580, 'Pascal': 580, 'Volta': 580}
# only the open kernel modules drive these (open-modules-blog): Blackwell and every later architecture ...
OPEN_ONLY_ARCHITECTURES = ('Blackwell',)
# ... and Grace Hopper, a Hopper GPU by its id (pci.ids: 0x2342 "GH100 [GH200 120GB / 480GB]", 0x2348 "GH100
# [GH200 144G HBM3e]")
OPEN_ONLY_DEVICES = {0x2342: 'Grace Hopper', 0x2348: 'Grace Hopper'}

# release -> the device ids of open-only GPUs that NVIDIA's open kernel modules list first in it (open-modules-readme)
FIRST_LISTED = {
    '535.43.19': (0x2342,),
    '565.57.01': (0x2348,),
    '570.86.15': (0x2901,),
    '570.86.16': (0x2B85, 0x2B87, 0x2C02),
    '570.123.01': (0x2941, 0x2C05),
    '570.123.07': (0x2BB1, 0x2BB4, 0x2C18, 0x2C19, 0x2C58, 0x2C59, 0x2F04, 0x2F18, 0x2F58),
    '570.123.10': (0x2D04,),
    '570.153.02': (0x2BB3, 0x2D18, 0x2D58),
    '570.158.01': (0x2C38, 0x2C39, 0x2D05, 0x2D19, 0x2D39, 0x2D59, 0x2DB8, 0x2DB9, 0x2F38),
    '570.169': (0x2C31, 0x2C34),
    '570.172.08': (0x2D98, 0x2DD8),
    '570.190': (0x2C33, 0x2D30),
    '570.207': (0x2C79, 0x2D79, 0x2DF9),
    '575.57.08': (0x2BB5,),
    '575.64.03': (0x2D83,),
    '580.76.05': (0x2B8C,),
    '580.82.07': (0x29BB, 0x2BB9, 0x3182, 0x31C2),
    '580.94.10': (0x2C77,),
    '580.94.13': (0x2E12,),
    '580.95.05': (0x2BB2, 0x2BBC),
    '580.142': (0x2C3A,),
}
FIRST_RELEASE = dict((device, release) for release, devices in FIRST_LISTED.items() for device in devices)


def open_only(gpu):
    """Why only the open kernel modules drive ``gpu`` (a pci_gpus entry), or None."""
    device = nvidia_pci.device_number(gpu.get('device_id'))
    if device in OPEN_ONLY_DEVICES:
        return OPEN_ONLY_DEVICES[device]
    architecture = gpu.get('architecture')
    order = nvidia_pci.ORDER
    if architecture in order and any(a in order and order.index(architecture) >= order.index(a)
                                     for a in OPEN_ONLY_ARCHITECTURES):
        return architecture
    return None


def _newest(releases):
    return sorted(releases, key=V.DpkgKey)[-1] if releases else None


def first_release(gpu):
    """``(release, why)``: the first release whose open kernel modules list ``gpu``, for an open-only GPU, else
    ``(None, None)``. An id no release lists takes the newest first release of the listed ids of its id block (the
    same high byte: a chip's ids), or ``(None, None)`` when none is listed there."""
    device = nvidia_pci.device_number(gpu.get('device_id'))
    if device is None or open_only(gpu) is None:
        return None, None
    if device in FIRST_RELEASE:
        return FIRST_RELEASE[device], 'listed from %s' % FIRST_RELEASE[device]
    block = _newest([release for listed, release in FIRST_RELEASE.items() if listed >> 8 == device >> 8])
    if block is None:
        return None, None
    return block, 'its id is not listed yet; the listed GPUs of ids %#06x-%#06x need %s' % (
        device & 0xFF00, device | 0xFF, block)


def limits(pci_gpus):
    """What the GPUs of a node allow: ``{min_release, min_branch, min_reason, max_branch, max_reason}`` (None
    where nothing limits). The minimum comes from open-only GPUs (so it holds for the open modules, the only ones
    that drive them)."""
    result = {'min_release': None, 'min_branch': None, 'min_reason': None, 'max_branch': None, 'max_reason': None}
    for gpu in pci_gpus or []:
        architecture = gpu.get('architecture')
        last = LAST_BRANCH.get(architecture)
        if last is not None and (result['max_branch'] is None or last < result['max_branch']):
            result['max_branch'] = last
            result['max_reason'] = ('%s GPUs (PCI id %s): the 580 series is the last to support Maxwell, Pascal '
                                    'and Volta' % (architecture, gpu.get('device_id')))
        first, why = first_release(gpu)
        if first is not None and (result['min_release'] is None or V.DpkgKey(first) > V.DpkgKey(result['min_release'])):
            result['min_release'] = first
            result['min_branch'] = int(V.branch_of(first))
            result['min_reason'] = ('%s GPU (PCI id %s%s): NVIDIA\'s open kernel modules drive it from %s (%s)'
                                    % (open_only(gpu), gpu.get('device_id'),
                                       ', %s' % gpu['model'] if gpu.get('model') else '', first, why))
    return result


def allows(limits_, version):
    """Whether the driver ``version`` (upstream, 580.126.20) is within ``limits_``; a version whose branch cannot
    be read is not, when anything limits."""
    number = V.branch_of(version or '')
    if number is None:
        return limits_['max_branch'] is None and limits_['min_release'] is None
    number = int(number)
    if limits_['max_branch'] is not None and number > limits_['max_branch']:
        return False
    if limits_['min_release'] is not None:
        if number < limits_['min_branch']:
            return False
        if number == limits_['min_branch'] and V.DpkgKey(version) < V.DpkgKey(limits_['min_release']):
            return False
    return True
