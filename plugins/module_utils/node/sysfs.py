# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Readers for the sysfs files gpuops.node uses.

``sysfs_root`` plays the role of node_exporter's ``--path.sysfs``: ``/sys`` on
a live node, ``<bundle>/sys`` for a capture bundle.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.pci import PCI_ADDRESS, sysfs_pci_address
from ansible_collections.gpuops.node.plugins.module_utils.node.nvidia_pci import (
    GPU_CLASSES, NVIDIA_VENDOR, NVSWITCH_CLASS, architecture, model)
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import decode

# PCIe transfer rate per lane (GT/s) -> generation
_GT_TO_GEN = {'2.5': 1, '5': 2, '5.0': 2, '8': 3, '8.0': 3, '16': 4, '16.0': 4,
              '32': 5, '32.0': 5, '64': 6, '64.0': 6, '128': 7, '128.0': 7}
_STATE_RE = re.compile(r'^\s*(\d+)\s*:\s*(\S+)\s*$')
_RATE_RE = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec\b')


def read_value(path, warnings=None):
    """Contents of a sysfs file without the trailing newline, or None if absent.

    Bytes that are not UTF-8 are replaced, and a file that exists but cannot be
    read (a symlink loop, a directory, no permission) is None; both are named in
    ``warnings`` when a list is given.
    """
    sink = warnings if warnings is not None else []
    if os.path.exists(path) and not os.path.isfile(path):
        # a FIFO or a device would block or never end: sysfs attributes are regular files
        sink.append('sysfs: %s is not a regular file' % path)
        return None
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ELOOP:
            sink.append('sysfs: %s is a symlink loop' % path)
        elif exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            sink.append('sysfs: cannot read %s: %s' % (path, exc.strerror))
        return None
    return decode(data, 'sysfs: %s' % path, sink).strip()


def parse_port_state(value, path='state'):
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; ``"5: LinkUp"`` -> ``"LinkUp"`` (the word as printed)."""
    if value is None:
        return None
    match = _STATE_RE.match(value)
    if not match:
        raise ParseError('sysfs %s' % path, 'expected "<number>: <STATE>"', 1, value)
    return match.group(2)


def parse_rate(value, path='rate'):
    """``"400 Gb/sec (4X NDR)"`` -> ``400``; ``"2.5 Gb/sec (1X SDR)"`` -> ``2.5``."""
    if value is None:
        return None
    match = _RATE_RE.match(value)
    if not match:
        raise ParseError('sysfs %s' % path, 'expected "<N> Gb/sec (...)"', 1, value)
    number = float(match.group(1))
    return int(number) if number.is_integer() else number


def parse_numa_node(value):
    """``"1"`` -> 1; ``"-1"`` (no NUMA information) or absent -> None."""
    if value is None or not re.match(r'^-?\d+$', value.strip()):
        return None
    number = int(value)
    return number if number >= 0 else None


def parse_link_speed(value, path='current_link_speed'):
    """``"32.0 GT/s PCIe"`` -> PCIe generation 5. ``"Unknown"`` -> None."""
    if value is None:
        return None
    match = re.match(r'^\s*([0-9.]+)\s*GT/s', value)
    if not match:
        if value.strip().lower().startswith('unknown'):
            return None
        raise ParseError('sysfs %s' % path, 'expected "<N> GT/s"', 1, value)
    return _GT_TO_GEN.get(match.group(1))


def read_pci_device(sysfs_root, bus_id, warnings=None):
    """PCIe link and NUMA node of one PCI device, or None when not in sysfs.

    A value that cannot be read is None and named in ``warnings``.
    """
    sink = warnings if warnings is not None else []
    address = sysfs_pci_address(bus_id)
    if address is None:
        return None
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices', address)
    if not os.path.isdir(base):
        return None

    def width(name):
        path = os.path.join(base, name)
        value = read_value(path, sink)
        if value is not None and not re.match(r'^[0-9]+$', value):
            sink.append('sysfs %s: expected a number, got %r' % (path, value))
            return None
        return int(value) if value else None

    def speed(name):
        path = os.path.join(base, name)
        try:
            return parse_link_speed(read_value(path, sink), path)
        except ParseError as exc:
            sink.append(str(exc))
            return None

    return {
        'address': address,
        'numa_node': parse_numa_node(read_value(os.path.join(base, 'numa_node'), sink)),
        'gen_current': speed('current_link_speed'),
        'gen_max': speed('max_link_speed'),
        'width_current': width('current_link_width'),
        'width_max': width('max_link_width'),
    }


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


# Port error counters (ports/<n>/counters/): every one should stay at 0 on a healthy fabric;
# link_downed > 0 means the link went down since the counters were cleared.
ERROR_COUNTERS = ('link_downed', 'link_error_recovery', 'symbol_error', 'port_rcv_errors',
                  'port_rcv_remote_physical_errors', 'port_xmit_discards', 'local_link_integrity_errors',
                  'excessive_buffer_overrun_errors')
# traffic counters read beside them: packets sent, the denominator of the retransmission ratio
TRAFFIC_COUNTERS = ('port_xmit_packets',)


def read_counters(port_dir, warnings):
    """The error (and traffic) counters present under ``<port>/counters``, as ints; one that is not a number is a
    warning."""
    counters = {}
    for name in ERROR_COUNTERS + TRAFFIC_COUNTERS:
        path = os.path.join(port_dir, 'counters', name)
        value = read_value(path, warnings)
        if value is None:
            continue
        if re.match(r'^[0-9]+$', value):
            counters[name] = int(value)
        else:
            warnings.append('sysfs %s: expected a number, got %r' % (path, value))
    return counters


def read_numa_nodes(sysfs_root, warnings=None):
    """``{"0": cpulist}`` (node numbers as strings, as in JSON) from ``node*/cpulist``, or None without that directory."""
    base = os.path.join(sysfs_root, 'devices', 'system', 'node')
    if not os.path.isdir(base):
        return None
    nodes = {}
    for name in sorted(os.listdir(base), key=_natural):
        match = re.match(r'^node(\d+)$', name)
        cpulist = read_value(os.path.join(base, name, 'cpulist'), warnings) if match else None
        if cpulist is not None:
            nodes[match.group(1)] = cpulist
    return nodes


def read_infiniband(sysfs_root):
    """RDMA devices under ``class/infiniband``.

    Returns None when the directory does not exist, else a dict with ``nics``
    (``name``, ``numa_node``, ``pci_bus_id``, ``ports``: ``port``, ``state``,
    ``phys_state``, ``rate_gbps``, ``link_layer``, ``counters``) and ``warnings`` naming
    the files that were absent or unreadable.
    """
    base = os.path.join(sysfs_root, 'class', 'infiniband')
    if not os.path.isdir(base):
        return None
    nics = []
    warnings = []
    for name in sorted(os.listdir(base), key=_natural):
        hca = os.path.join(base, name)
        if not os.path.isdir(hca):
            if os.path.islink(hca):
                warnings.append('sysfs: class/infiniband/%s is a dangling link or a symlink loop' % name)
            continue
        device = os.path.join(hca, 'device')
        pci = None
        if os.path.islink(device):
            candidate = os.path.basename(os.readlink(device))
            if PCI_ADDRESS.match(candidate):
                pci = candidate.lower()
        if pci is None:
            # a copy that followed the link keeps the address in uevent
            for line in (read_value(os.path.join(device, 'uevent'), warnings) or '').splitlines():
                if line.startswith('PCI_SLOT_NAME=') and PCI_ADDRESS.match(line.split('=', 1)[1].strip()):
                    pci = line.split('=', 1)[1].strip().lower()
        ports = []
        ports_dir = os.path.join(hca, 'ports')
        if os.path.isdir(ports_dir):
            for port in sorted((p for p in os.listdir(ports_dir) if re.match(r'^[0-9]+$', p)), key=int):
                pdir = os.path.join(ports_dir, port)
                entry = {'port': int(port)}
                for key, fname, parser in (('state', 'state', parse_port_state),
                                           ('phys_state', 'phys_state', parse_port_state),
                                           ('rate_gbps', 'rate', parse_rate),
                                           ('link_layer', 'link_layer', None)):
                    path = os.path.join(pdir, fname)
                    value = read_value(path, warnings)
                    if value is None:
                        warnings.append('sysfs: %s/%s/ports/%s/%s is absent' % ('class/infiniband', name, port, fname))
                        entry[key] = None
                        continue
                    if parser is None:
                        entry[key] = value.splitlines()[0].strip() if value else value
                        continue
                    try:
                        entry[key] = parser(value, path)
                    except ParseError as exc:
                        warnings.append(str(exc))
                        entry[key] = None
                if entry['state'] is not None:
                    entry['state'] = entry['state'].upper()
                entry['counters'] = read_counters(pdir, warnings)
                ports.append(entry)
        else:
            warnings.append('sysfs: class/infiniband/%s has no ports directory' % name)
        net = os.path.join(device, 'net')
        nics.append({
            'name': name,
            'numa_node': parse_numa_node(read_value(os.path.join(device, 'numa_node'), warnings)),
            'pci_bus_id': pci,
            'netdevs': sorted(os.listdir(net), key=_natural) if os.path.isdir(net) else [],
            'ports': ports,
        })
    return {'nics': nics, 'warnings': warnings}


def read_pci_nvidia(sysfs_root, warnings):
    """NVIDIA GPUs and NVSwitches on the PCI bus, whatever the driver: ``{gpus, nvswitches}`` or None.

    None when ``bus/pci/devices`` does not exist. Each GPU has ``pci_bus_id``
    (the sysfs address), ``device_id``, ``architecture`` and ``model`` (from
    the id; None when unknown), ``numa_node`` and ``pcie`` (generations and
    widths from sysfs), in bus order, the order nvidia-smi numbers GPUs in.
    """
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    if not os.path.isdir(base):
        return None
    gpus, switches = [], []
    for address in sorted(os.listdir(base)):
        if not PCI_ADDRESS.match(address):
            continue
        vendor = read_value(os.path.join(base, address, 'vendor'), warnings)
        klass = (read_value(os.path.join(base, address, 'class'), warnings) or '').lower()
        if vendor is None or vendor.lower() != NVIDIA_VENDOR:
            continue
        device = read_value(os.path.join(base, address, 'device'), warnings)
        if klass.startswith(NVSWITCH_CLASS):
            switches.append({'pci_bus_id': address.lower(), 'device_id': device})
        elif klass.startswith(GPU_CLASSES):
            pci = read_pci_device(sysfs_root, address, warnings) or {}
            gpus.append({
                'pci_bus_id': address.lower(),
                'device_id': device,
                'architecture': architecture(device),
                'model': model(device),
                'numa_node': pci.get('numa_node'),
                'pcie': dict((k, pci.get(k)) for k in ('gen_current', 'gen_max', 'width_current', 'width_max')),
            })
    return {'gpus': gpus, 'nvswitches': switches}
