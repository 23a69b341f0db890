# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Readers and path builders for the RDMA state in sysfs and configfs.

Every path is relative to ``sysfs_root`` (``/sys`` on a live node):

- ``class/infiniband/<hca>/device/net/<netdev>``: the HCA's netdevs;
  ``class/net/<netdev>/type`` is 1 for Ethernet, 32 for an IPoIB netdev.
- ``module/ib_ipoib``: a directory while ib_ipoib is loaded.
- ``class/net/<netdev>/ecn/roce_rp/enable/<0-7>``,
  ``class/net/<netdev>/ecn/roce_np/enable/<0-7>`` (mlx5 DCQCN, ``0``/``1``),
  ``class/net/<netdev>/ecn/roce_np/cnp_dscp`` and ``cnp_802p_prio``.
- ``kernel/config/rdma_cm/<hca>/ports/<n>/default_roce_tos`` and
  ``default_roce_mode`` (configfs; the HCA directory exists once created with
  mkdir).
- ``class/infiniband/<hca>/ports/<n>/hw_counters/<name>``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.gpuops.node.plugins.module_utils.node.sysfs import read_value

# netdev ``type`` (ARPHRD_*) of an IPoIB netdev
ARPHRD_INFINIBAND = 32
ARPHRD_ETHER = 1
IFF_UP = 0x1
ECN_POINTS = ('rp', 'np')
CNP_VALUES = ('cnp_dscp', 'cnp_802p_prio')
RDMA_CM_VALUES = ('default_roce_tos', 'default_roce_mode')
# mlx5 hw_counters that count retransmissions and their causes
RETRANS_COUNTERS = ('roce_adp_retrans', 'local_ack_timeout_err', 'packet_seq_err')
ROCE_HW_COUNTERS = ('roce_adp_retrans', 'local_ack_timeout_err', 'out_of_sequence', 'packet_seq_err')

_NUMBER_RE = re.compile(r'^[0-9]+$')


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


def _listdir(path):
    try:
        return sorted(os.listdir(path), key=_natural)
    except (IOError, OSError):
        return []


def _number(path, warnings, low=None, high=None):
    """The int in a sysfs file, None when absent; not a number or out of range -> None and a warning."""
    value = read_value(path, warnings)
    if value is None:
        return None
    if not _NUMBER_RE.match(value):
        warnings.append('sysfs %s: expected a number, got %r' % (path, value))
        return None
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        warnings.append('sysfs %s: %d is outside %s-%s' % (path, number, low, high))
        return None
    return number


def netdev_dir(sysfs_root, netdev):
    return os.path.join(sysfs_root, 'class', 'net', netdev)


def netdevs(sysfs_root, hca):
    """The netdevs of an RDMA device (``class/infiniband/<hca>/device/net``), in natural order."""
    return _listdir(os.path.join(sysfs_root, 'class', 'infiniband', hca, 'device', 'net'))


def netdev_type(sysfs_root, netdev, warnings=None):
    """``class/net/<netdev>/type`` as an int, None when absent or not a number."""
    sink = warnings if warnings is not None else []
    return _number(os.path.join(netdev_dir(sysfs_root, netdev), 'type'), sink)


def ipoib_netdevs(sysfs_root, hca, warnings=None):
    """The HCA's netdevs whose type is 32 (IPoIB), in natural order."""
    sink = warnings if warnings is not None else []
    found = []
    for name in netdevs(sysfs_root, hca):
        kind = _number(os.path.join(netdev_dir(sysfs_root, name), 'type'), sink)
        if kind is None:
            kind = _number(os.path.join(sysfs_root, 'class', 'infiniband', hca, 'device', 'net', name, 'type'), sink)
        if kind == ARPHRD_INFINIBAND:
            found.append(name)
    return found


# operstate values of a netdev that carries no traffic: set down, its link down, or its device gone


def netdev_operstate(sysfs_root, netdev, warnings=None):
    """``class/net/<netdev>/operstate`` (``up``, ``down``, ...), None when absent."""
    sink = warnings if warnings is not None else []
    value = read_value(os.path.join(netdev_dir(sysfs_root, netdev), 'operstate'), sink)
    return value.lower() if value else None


def netdev_flags(sysfs_root, netdev, warnings=None):
    """``class/net/<netdev>/flags`` (``0x1003``) as an int, None when absent or not hexadecimal."""
    sink = warnings if warnings is not None else []
    path = os.path.join(netdev_dir(sysfs_root, netdev), 'flags')
    value = read_value(path, sink)
    if value is None:
        return None
    try:
        return int(value, 16)
    except ValueError:
        sink.append('sysfs %s: expected a hexadecimal number, got %r' % (path, value))
        return None


def active_netdevs(sysfs_root, names, warnings=None):
    """Those of ``names`` administratively up (``IFF_UP`` in ``flags``), whatever their link; None when the flags
    of one cannot be read. An interface that is up with its link down still carries traffic once the link comes
    up."""
    active = []
    for name in names:
        flags = netdev_flags(sysfs_root, name, warnings)
        if flags is None:
            return None
        if flags & IFF_UP:
            active.append(name)
    return active


def ipoib_module_loaded(sysfs_root):
    """True while ib_ipoib is loaded (``module/ib_ipoib`` is a directory)."""
    return os.path.isdir(os.path.join(sysfs_root, 'module', 'ib_ipoib'))


def ecn_dir(sysfs_root, netdev):
    return os.path.join(netdev_dir(sysfs_root, netdev), 'ecn')


def ecn_path(sysfs_root, netdev, point, prio):
    """``class/net/<netdev>/ecn/roce_<point>/enable/<prio>``; ``point`` is ``'rp'`` or ``'np'``."""
    if point not in ECN_POINTS:
        raise ValueError('ECN point %r is not rp or np' % (point,))
    if int(prio) not in range(8):
        raise ValueError('priority %r is not 0-7' % (prio,))
    return os.path.join(ecn_dir(sysfs_root, netdev), 'roce_%s' % point, 'enable', str(int(prio)))


def cnp_path(sysfs_root, netdev, name):
    """``class/net/<netdev>/ecn/roce_np/<name>``; ``name`` is ``cnp_dscp`` or ``cnp_802p_prio``."""
    if name not in CNP_VALUES:
        raise ValueError('CNP value %r is not one of %s' % (name, ', '.join(CNP_VALUES)))
    return os.path.join(ecn_dir(sysfs_root, netdev), 'roce_np', name)


def read_ecn(sysfs_root, netdev, warnings=None):
    """DCQCN state of a netdev: ``{rp: {prio: bool}, np: {prio: bool}, cnp_dscp, cnp_802p_prio}``.

    None when ``class/net/<netdev>/ecn`` does not exist (not an mlx5 netdev,
    or a driver without DCQCN). A priority whose file is absent or holds
    something other than 0/1 is left out (and named in ``warnings``), so a
    check sees it as unknown rather than off.
    """
    sink = warnings if warnings is not None else []
    if not os.path.isdir(ecn_dir(sysfs_root, netdev)):
        return None
    result = {}
    for point in ECN_POINTS:
        table = {}
        for prio in range(8):
            path = ecn_path(sysfs_root, netdev, point, prio)
            value = read_value(path, sink)
            if value is None:
                sink.append('sysfs: %s is absent' % os.path.relpath(path, sysfs_root))
            elif value in ('0', '1'):
                table[prio] = value == '1'
            else:
                sink.append('sysfs %s: expected 0 or 1, got %r' % (path, value))
        result[point] = table
    result['cnp_dscp'] = _number(cnp_path(sysfs_root, netdev, 'cnp_dscp'), sink, 0, 63)
    result['cnp_802p_prio'] = _number(cnp_path(sysfs_root, netdev, 'cnp_802p_prio'), sink, 0, 7)
    return result


def rdma_cm_dir(sysfs_root, hca):
    """``kernel/config/rdma_cm/<hca>`` (configfs; created with mkdir)."""
    return os.path.join(sysfs_root, 'kernel', 'config', 'rdma_cm', hca)


def rdma_cm_path(sysfs_root, hca, port, name):
    """``kernel/config/rdma_cm/<hca>/ports/<port>/<name>``; ``name`` is default_roce_tos or default_roce_mode."""
    if name not in RDMA_CM_VALUES:
        raise ValueError('rdma_cm value %r is not one of %s' % (name, ', '.join(RDMA_CM_VALUES)))
    return os.path.join(rdma_cm_dir(sysfs_root, hca), 'ports', str(int(port)), name)


def read_rdma_cm(sysfs_root, hca, warnings=None):
    """``{port: {default_roce_tos: int|None, default_roce_mode: str|None}}``, or None without the HCA directory."""
    sink = warnings if warnings is not None else []
    base = rdma_cm_dir(sysfs_root, hca)
    if not os.path.isdir(base):
        return None
    ports = {}
    for port in _listdir(os.path.join(base, 'ports')):
        if not _NUMBER_RE.match(port):
            continue
        mode = read_value(rdma_cm_path(sysfs_root, hca, port, 'default_roce_mode'), sink)
        ports[int(port)] = {
            'default_roce_tos': _number(rdma_cm_path(sysfs_root, hca, port, 'default_roce_tos'), sink, 0, 255),
            'default_roce_mode': mode if mode else None,
        }
    return ports


def read_hw_counters(port_dir, warnings):
    """Every counter under ``<port>/hw_counters`` as an int (empty without the directory).

    A file that is not a number is left out and named in ``warnings``.
    """
    counters = {}
    base = os.path.join(port_dir, 'hw_counters')
    for name in _listdir(base):
        path = os.path.join(base, name)
        if not os.path.isfile(path):
            continue
        number = _number(path, warnings)
        if number is not None:
            counters[name] = number
    return counters


def retrans_ratio(port):
    """Retransmissions per transmitted packet of a port, in percent; None when it cannot be computed.

    ``sum(RETRANS_COUNTERS) / counters.port_xmit_packets * 100`` from a facts
    port (``counters`` and ``hw_counters``); None when a retransmission
    counter is missing or no packet was sent (0 or absent).
    """
    hw = port.get('hw_counters') or {}
    xmit = (port.get('counters') or {}).get('port_xmit_packets')
    if not xmit or any(hw.get(name) is None for name in RETRANS_COUNTERS):
        return None
    return sum(hw[name] for name in RETRANS_COUNTERS) * 100.0 / xmit
