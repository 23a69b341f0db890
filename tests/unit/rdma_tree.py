# -*- coding: utf-8 -*-
"""Sysfs trees of RDMA nodes for the tests: the layout a node has (``class/infiniband``, ``class/net``, DCQCN
``ecn``, configfs ``rdma_cm``, ``module/ib_ipoib``), values chosen per test; dcb outputs from real captures."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil

from real_captures import real_path

# real dcb outputs (tests/fixtures/real/dcb/) a bundle can hold
PFC3 = 'dcb/dcb-pfc-show-ens6-connectx3-mlx4-pfc3-crlf.txt'
PFC_OFF = 'dcb/dcb-pfc-show-ens6-connectx3-mlx4-all-off-crlf.txt'
SYMBOLIC_APP = 'dcb/dcb-app-show-ens6-connectx3-mlx4-symbolic-AF31-crlf.txt'
NOT_SUPPORTED = 'dcb/debian12-iproute2-6.1-pfc-show-lo-ERROR.txt'
NO_DEVICE = 'dcb/debian12-iproute2-6.1-pfc-show-nonexistent-dev-ERROR.txt'


def write(root, rel, value):
    path = os.path.join(str(root), rel)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'w') as handle:
        handle.write(value)
    return path


def hca(root, name, address, link_layer, netdevs=(), state='4: ACTIVE', counters=None, hw_counters=None):
    """An RDMA device with one port; ``netdevs`` is ``[(name, type)]`` (1 Ethernet, 32 IPoIB)."""
    sys = os.path.join(str(root), 'sys')
    pci = os.path.join(sys, 'bus', 'pci', 'devices', address)
    write(pci, 'numa_node', '0\n')
    base = os.path.join(sys, 'class', 'infiniband', name)
    os.makedirs(base)
    os.symlink(os.path.relpath(pci, base), os.path.join(base, 'device'))
    port = os.path.join(base, 'ports', '1')
    for fname, value in (('state', state), ('phys_state', '5: LinkUp'), ('rate', '400 Gb/sec (4X NDR)'),
                         ('link_layer', link_layer)):
        write(port, fname, value + '\n')
    for cname, value in sorted((counters or {}).items()):
        write(port, 'counters/' + cname, '%d\n' % value)
    for cname, value in sorted((hw_counters or {}).items()):
        write(port, 'hw_counters/' + cname, '%d\n' % value)
    for net, kind in netdevs:
        write(pci, 'net/%s/type' % net, '%d\n' % kind)
        write(pci, 'net/%s/operstate' % net, 'up\n')
        write(pci, 'net/%s/flags' % net, '0x1003\n')
        classnet = os.path.join(sys, 'class', 'net')
        if not os.path.isdir(classnet):
            os.makedirs(classnet)
        os.symlink(os.path.relpath(os.path.join(pci, 'net', net), classnet), os.path.join(classnet, net))
    return sys


def ecn(root, netdev, rp=(), np=(), cnp_dscp=48, cnp_prio=6):
    sys = os.path.join(str(root), 'sys')
    for point, enabled in (('rp', rp), ('np', np)):
        for prio in range(8):
            write(sys, 'class/net/%s/ecn/roce_%s/enable/%d' % (netdev, point, prio),
                  '1\n' if prio in enabled else '0\n')
    write(sys, 'class/net/%s/ecn/roce_np/cnp_dscp' % netdev, '%d\n' % cnp_dscp)
    write(sys, 'class/net/%s/ecn/roce_np/cnp_802p_prio' % netdev, '%d\n' % cnp_prio)


def rdma_cm(root, name, tos=106, mode='RoCE v2'):
    sys = os.path.join(str(root), 'sys')
    write(sys, 'kernel/config/rdma_cm/%s/ports/1/default_roce_tos' % name, '%d\n' % tos)
    write(sys, 'kernel/config/rdma_cm/%s/ports/1/default_roce_mode' % name, mode + '\n')


def modules(root, ipoib):
    sys = os.path.join(str(root), 'sys')
    write(sys, 'module/mlx5_ib/refcnt', '0\n')
    if ipoib:
        write(sys, 'module/ib_ipoib/refcnt', '0\n')


def dcb_file(root, name, rel=None, rc=None, text=None):
    """A dcb output in the bundle: a real capture (``rel``) or ``text``, and its exit status."""
    path = os.path.join(str(root), name)
    if rel is not None:
        shutil.copyfile(real_path(rel), path)
    else:
        with open(path, 'w') as handle:
            handle.write(text or '')
    if rc is not None:
        with open(path + '.rc', 'w') as handle:
            handle.write('%d\n' % rc)


RETRANS = {'roce_adp_retrans': 99, 'local_ack_timeout_err': 131, 'packet_seq_err': 1, 'out_of_sequence': 1}


def roce_and_ib_node(root, ipoib=True, pfc=PFC3):
    """mlx5_0: RoCE (ens6, DCQCN on priority 3, rdma_cm ToS 106); mlx5_1: InfiniBand with the IPoIB netdev ib0."""
    hca(root, 'mlx5_0', '0000:17:00.0', 'Ethernet', [('ens6', 1)],
        counters={'symbol_error': 0, 'port_rcv_errors': 0, 'port_xmit_packets': 10907922116}, hw_counters=RETRANS)
    hca(root, 'mlx5_1', '0000:2a:00.0', 'InfiniBand', [('ib0', 32)] if ipoib else [],
        counters={'symbol_error': 3, 'port_rcv_errors': 0, 'port_xmit_packets': 1000})
    ecn(root, 'ens6', rp=(3,), np=(3,))
    rdma_cm(root, 'mlx5_0')
    modules(root, ipoib)
    dcb_file(root, 'dcb-pfc-ens6.txt', pfc)
    dcb_file(root, 'dcb-app-dscp-prio-ens6.txt', text='')
    return str(root)
