# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real captures the profiles are derived from (tests/fixtures/real/, only read): their paths, the
``derived_from`` record of a profile (Sources), and the parsers of the captures that are text.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import os
import re

from .. import bundle

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = 'tests/fixtures/real'
PROFILES_DIR = os.path.join(REPO, 'simulator', 'profiles')

SRC_A100_XML = REAL + '/nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml'
SRC_P100_XML = REAL + '/nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml'
SRC_H100_Q = REAL + '/nvsmi-q/h100-sxm5-80gb-della-j11g1-nvsmi-a.txt'
SRC_H100_TOPO = REAL + '/topo/h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt'
SRC_A100_TOPO = REAL + '/topo/dgx-a100-8gpu-12nic.txt'
SRC_PCIE_TOPO = REAL + '/topo/rtx5060ti-4gpu-pcie-phb-aisandbox.txt'
SRC_H100_NVLINK = REAL + '/nvlink/h100-nvlink-status-i0.txt'
SRC_H100_LGIP = REAL + '/mig/h100-80gb-lgip.txt'
SRC_GH200_CGI = REAL + '/mig/gh200-cgi-15x3-C-success.txt'
SRC_H100_LCI = REAL + '/mig/h100-80gb-lci-2ci.txt'
SRC_SCALEWAY_TABLE = REAL + '/mig/h100-pcie-scaleway-nvsmi-table-7x1g10gb.txt'
SRC_GPUD_IB = REAL + '/ib-sysfs/gpud-sys-class-infiniband-h100.0'
SRC_A100_IBSTATUS = REAL + '/ib/ibstatus-a100-9port-hdr-gpud.txt'
SRC_ROCE_DEVINFO = REAL + '/ib/ibv_devinfo-cx7-roce-4port.txt'

PCIE_SPEED = {1: '2.5 GT/s PCIe', 2: '5.0 GT/s PCIe', 3: '8.0 GT/s PCIe', 4: '16.0 GT/s PCIe',
              5: '32.0 GT/s PCIe', 6: '64.0 GT/s PCIe'}


def read_real(rel):
    with open(os.path.join(REPO, rel), 'rb') as handle:
        return handle.read().decode('utf-8')


def sha256(rel):
    path = os.path.join(REPO, rel)
    digest = hashlib.sha256()
    if os.path.isdir(path):
        for name in sorted(bundle.read_tree(path)):
            digest.update(name.encode('utf-8') + b'\0')
            with open(os.path.join(path, name), 'rb') as handle:
                digest.update(handle.read() + b'\0')
    else:
        with open(path, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()


class Sources(object):
    """Records which real capture each profile used and what it took."""

    def __init__(self):
        self.entries = []

    def use(self, rel, took):
        self.entries.append({'path': rel, 'sha256': sha256(rel), 'took': took})
        return rel


# ---------------------------------------------------------------------------
# Parsing the real captures
# ---------------------------------------------------------------------------

def parse_q_text(text):
    """``nvidia-smi -q`` text -> {"Section/Sub/Label": value} (first GPU only).

    Labels nest by indentation (4 spaces a level); a label can carry a value
    and children ("HW Slowdown : Not Active" with "HW Thermal Slowdown" under it).
    """
    values = {}
    stack = []
    in_gpu = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith('GPU '):
            if in_gpu:
                break
            in_gpu = True
            stack = []
            continue
        indent = len(line) - len(line.lstrip(' '))
        level = indent // 4
        match = re.match(r'^ *(\S.*?)\s+: (.*)$', line)
        if match:
            label, value = match.group(1), match.group(2)
        else:
            label, value = line.strip(), None
        if not in_gpu:
            if value is not None:
                values[label] = value
            continue
        stack = stack[:level - 1] + [label]
        if value is not None:
            values['/'.join(stack)] = value
    return values


def parse_lgip(text):
    """``nvidia-smi mig -lgip`` -> GPU-instance profile rows (split on whitespace)."""
    rows = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = line.strip('|').split()
        if len(cells) >= 10 and cells[1] == 'MIG':
            nxt = lines[i + 1].strip('|').split()
            free, total = cells[4].split('/')
            rows.append({'gpu': int(cells[0]), 'name': cells[2], 'id': int(cells[3]), 'free': int(free),
                         'total': int(total), 'memory_gib': cells[5], 'p2p': cells[6], 'sm': int(cells[7]),
                         'dec': int(cells[8]), 'enc': int(cells[9]), 'ce': int(nxt[0]), 'jpeg': int(nxt[1]),
                         'ofa': int(nxt[2])})
    return rows


def parse_ibstatus(text):
    ports = {}
    current = None
    for line in text.splitlines():
        match = re.match(r"^Infiniband device '([^']+)' port (\d+) status:", line)
        if match:
            current = {}
            ports[match.group(1)] = current
            continue
        match = re.match(r'^\s+([a-z_ ]+):\s+(.*)$', line)
        if match and current is not None:
            current[match.group(1).strip()] = match.group(2).strip()
    return ports


def parse_ibv_devinfo(text):
    hcas = {}
    current = None
    for line in text.splitlines():
        match = re.match(r'^hca_id:\s*(\S+)', line)
        if match:
            current = {}
            hcas[match.group(1)] = current
            continue
        match = re.match(r'^\s+([a-z_]+):\s+(.*)$', line)
        if match and current is not None:
            current.setdefault(match.group(1), match.group(2).strip())
    return hcas
