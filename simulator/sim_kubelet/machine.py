# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The machine the kubelet stand-in sees: CPUs and NUMA nodes of the simulated sysfs when there is one
(``GPUOPS_SIM_SYSFS``, else /usr/share/gpuops-sim/sys under ``GPUOPS_SIM_ROOT``), else /sys.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

from .quantity import parse_cpuset


def sysfs_root(environ=None):
    environ = os.environ if environ is None else environ
    if environ.get('GPUOPS_SIM_SYSFS'):
        return environ['GPUOPS_SIM_SYSFS']
    sim = os.path.join(environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/sys')
    return sim if os.path.isdir(sim) else '/sys'


def read_bytes(path):
    with open(path, 'rb') as handle:
        return handle.read()


def read_text(path, default=None):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return default


def machine(sysfs):
    """{'cpus': set, 'nodes': {id: {'memory': bytes, 'hugepages': {size_bytes: count}}}} of the (simulated) node."""
    node_dirs = sorted(glob.glob(os.path.join(sysfs, 'devices/system/node/node[0-9]*')))
    online = read_text(os.path.join(sysfs, 'devices/system/cpu/online'))
    cpus = parse_cpuset(online) if online else set()
    if not cpus:
        for node in node_dirs:
            cpus |= parse_cpuset(read_text(os.path.join(node, 'cpulist'), ''))
    if not cpus:
        cpus = parse_cpuset(read_text('/sys/devices/system/cpu/online', '') or '0-%d' % ((os.cpu_count() or 1) - 1))
    total = re.search(r'^MemTotal:\s+(\d+) kB', read_text('/proc/meminfo', ''), re.M)
    total = int(total.group(1)) * 1024 if total else 0
    nodes = {}
    for node in node_dirs or ['node0']:
        meminfo = re.search(r'MemTotal:\s+(\d+) kB', read_text(os.path.join(node, 'meminfo'), '') if node_dirs else '')
        pages = {}
        for size_dir in glob.glob(os.path.join(node, 'hugepages/hugepages-*kB')):
            size = int(re.search(r'(\d+)kB$', size_dir).group(1)) * 1024
            pages[size] = int((read_text(os.path.join(size_dir, 'nr_hugepages'), '0') or '0').strip() or 0)
        # APPROXIMATION: a node without its own meminfo (the simulated sysfs) gets an even share of MemTotal
        memory = int(meminfo.group(1)) * 1024 if meminfo else total // max(1, len(node_dirs))
        nodes[int(os.path.basename(node)[4:])] = {'memory': memory, 'hugepages': pages}
    return {'cpus': cpus, 'nodes': nodes}
