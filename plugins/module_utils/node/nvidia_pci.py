# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA PCI device ids: which architecture, and for the common data-centre GPUs which model.

Read from the PCI bus, these name a GPU before any driver is installed. The
architecture ranges follow the chips' device id blocks (PCI ID Repository,
vendor 10de); the model names are exactly what ``nvidia-smi`` prints as
``product_name``, so a profile's ``gpu_model`` glob matches both.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

NVIDIA_VENDOR = '0x10de'
# PCI class codes (the first four hex digits of the 24-bit class)
GPU_CLASSES = ('0x0300', '0x0302')     # VGA compatible controller, 3D controller
NVSWITCH_CLASS = '0x0680'              # other bridge device: NVSwitch

# (first id, last id, architecture), device ids as integers, in id order: the chips' device id blocks, checked
# against pci.ids 2026.08.22 (tests/fixtures/ids/pci.ids-nvidia). Rubin (GR100, 0x3000-0x30ff) is left out: no
# driver release lists one yet (tests/fixtures/ids/open-gpu-kernel-modules-first-release.tsv)
ARCHITECTURES = (
    (0x1340, 0x13FF, 'Maxwell'),       # GM108, GM107, GM204
    (0x1400, 0x143F, 'Maxwell'),       # GM206
    (0x15C0, 0x15FF, 'Pascal'),        # GP100
    (0x1610, 0x167F, 'Maxwell'),       # GM204
    (0x1720, 0x173F, 'Pascal'),        # GP100
    (0x1740, 0x17FF, 'Maxwell'),       # GM108, GM107, GM200
    (0x1B00, 0x1D7F, 'Pascal'),        # GP102, GP104, GP106, GP107, GP108
    (0x1D80, 0x1DFF, 'Volta'),         # GV100
    (0x1E00, 0x1FFF, 'Turing'),        # TU102, TU104, TU106, TU117
    (0x2080, 0x20FF, 'Ampere'),        # GA100
    (0x2180, 0x21FF, 'Turing'),        # TU116
    (0x2200, 0x22FF, 'Ampere'),        # GA102
    (0x2300, 0x23FF, 'Hopper'),        # GH100, GH200
    (0x2400, 0x25FF, 'Ampere'),        # GA103, GA104, GA106, GA107
    (0x2600, 0x28FF, 'Ada Lovelace'),  # AD102, AD103, AD104, AD106, AD107
    (0x2900, 0x2FFF, 'Blackwell'),     # GB100, GB102, GB10B, GB202, GB203, GB205, GB206, GB207, GB20B
    (0x3180, 0x33FF, 'Blackwell'),     # GB110 (Blackwell Ultra: B300, GB300), GB112, GB120
)
# Architectures in release order: the driver role compares against it (open kernel modules from Turing on)
ORDER = ('Maxwell', 'Pascal', 'Volta', 'Turing', 'Ampere', 'Ada Lovelace', 'Hopper', 'Blackwell')

# device id -> product_name as nvidia-smi prints it
MODELS = {
    0x15F8: 'Tesla P100-PCIE-16GB',
    0x1DB4: 'Tesla V100-SXM2-16GB',
    0x1DB5: 'Tesla V100-SXM2-32GB',
    0x1EB8: 'Tesla T4',
    0x20B0: 'NVIDIA A100-SXM4-40GB',
    0x20B2: 'NVIDIA A100-SXM4-80GB',
    0x20B5: 'NVIDIA A100 80GB PCIe',
    0x26B9: 'NVIDIA L40S',
    0x2330: 'NVIDIA H100 80GB HBM3',
    0x2331: 'NVIDIA H100 PCIe',
    0x2335: 'NVIDIA H200',
    0x2901: 'NVIDIA B200',
    0x3182: 'NVIDIA B300 SXM6 AC',
}


def device_number(device_id):
    """``0x2330``, ``2330``, ``233010DE`` (nvidia-smi's ``pci_device_id``: device then vendor) -> 0x2330."""
    if device_id is None:
        return None
    value = device_id.strip().lower()
    if value.startswith('0x'):
        value = value[2:]
    if len(value) == 8 and value.endswith('10de'):
        value = value[:4]
    try:
        return int(value, 16)
    except ValueError:
        return None


def architecture(device_id):
    """The architecture of an NVIDIA device id, or None when the id is outside every known block."""
    number = device_number(device_id)
    if number is None:
        return None
    for first, last, name in ARCHITECTURES:
        if first <= number <= last:
            return name
    return None


def model(device_id):
    """nvidia-smi's product name for a known data-centre device id, else None."""
    return MODELS.get(device_number(device_id))
