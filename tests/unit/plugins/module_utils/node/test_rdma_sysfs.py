# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.node import rdma_sysfs
from rdma_tree import write
from real_captures import extract_ttar, real_path

MLX5_TTAR = 'ib-sysfs/procfs-fixture-mlx5_0-connectx4-ib-counters-hw_counters.ttar'


def netdev(root, hca, name, kind):
    """A netdev of ``hca`` laid out as on a node: the device's net/<name> directory, class/net/<name> a link to it."""
    pci = os.path.join(str(root), 'bus', 'pci', 'devices', '0000:17:00.0')
    write(pci, os.path.join('net', name, 'type'), '%d\n' % kind)
    ib = os.path.join(str(root), 'class', 'infiniband', hca)
    if not os.path.islink(os.path.join(ib, 'device')):
        os.makedirs(ib)
        os.symlink(pci, os.path.join(ib, 'device'))
    net = os.path.join(str(root), 'class', 'net')
    if not os.path.isdir(net):
        os.makedirs(net)
    os.symlink(os.path.join(pci, 'net', name), os.path.join(net, name))


def ecn_tree(root, netdev_name, rp=(), np=(), cnp_dscp='48', cnp_prio='6'):
    for point, enabled in (('rp', rp), ('np', np)):
        for prio in range(8):
            write(root, 'class/net/%s/ecn/roce_%s/enable/%d' % (netdev_name, point, prio),
                  '1\n' if prio in enabled else '0\n')
    if cnp_dscp is not None:
        write(root, 'class/net/%s/ecn/roce_np/cnp_dscp' % netdev_name, cnp_dscp + '\n')
    if cnp_prio is not None:
        write(root, 'class/net/%s/ecn/roce_np/cnp_802p_prio' % netdev_name, cnp_prio + '\n')


def test_netdevs_and_ipoib(tmp_path):
    netdev(tmp_path, 'mlx5_0', 'ib0', 32)
    netdev(tmp_path, 'mlx5_0', 'ib0.8001', 32)
    netdev(tmp_path, 'mlx5_0', 'eth10', 1)
    assert rdma_sysfs.netdevs(str(tmp_path), 'mlx5_0') == ['eth10', 'ib0', 'ib0.8001']
    assert rdma_sysfs.ipoib_netdevs(str(tmp_path), 'mlx5_0') == ['ib0', 'ib0.8001']
    assert rdma_sysfs.netdev_type(str(tmp_path), 'eth10') == 1
    assert rdma_sysfs.netdevs(str(tmp_path), 'mlx5_9') == []
    assert rdma_sysfs.ipoib_netdevs(str(tmp_path), 'mlx5_9') == []


def test_ipoib_netdev_without_class_net_entry_reads_the_device_copy(tmp_path):
    # a capture bundle that copied class/infiniband with the device's net/ directory but not class/net
    write(tmp_path, 'class/infiniband/mlx5_0/device/net/ib0/type', '32\n')
    assert rdma_sysfs.ipoib_netdevs(str(tmp_path), 'mlx5_0') == ['ib0']


def test_ipoib_module_loaded(tmp_path):
    assert rdma_sysfs.ipoib_module_loaded(str(tmp_path)) is False
    write(tmp_path, 'module/ib_ipoib/refcnt', '0\n')
    assert rdma_sysfs.ipoib_module_loaded(str(tmp_path)) is True


def test_read_ecn(tmp_path):
    ecn_tree(tmp_path, 'eth2', rp=(3,), np=(3,))
    assert rdma_sysfs.read_ecn(str(tmp_path), 'eth2') == {
        'rp': dict((p, p == 3) for p in range(8)),
        'np': dict((p, p == 3) for p in range(8)),
        'cnp_dscp': 48, 'cnp_802p_prio': 6}


def test_read_ecn_absent_is_none(tmp_path):
    write(tmp_path, 'class/net/eth2/type', '1\n')
    assert rdma_sysfs.read_ecn(str(tmp_path), 'eth2') is None
    assert rdma_sysfs.read_ecn(str(tmp_path), 'nosuch0') is None


def test_read_ecn_unreadable_values_are_left_out_and_named(tmp_path):
    ecn_tree(tmp_path, 'eth2', rp=(3,), np=(3,), cnp_dscp='64', cnp_prio=None)
    write(tmp_path, 'class/net/eth2/ecn/roce_rp/enable/3', 'yes\n')
    os.remove(os.path.join(str(tmp_path), 'class/net/eth2/ecn/roce_np/enable/5'))
    warnings = []
    ecn = rdma_sysfs.read_ecn(str(tmp_path), 'eth2', warnings)
    assert 3 not in ecn['rp'] and 5 not in ecn['np'] and ecn['np'][3] is True
    assert ecn['cnp_dscp'] is None and ecn['cnp_802p_prio'] is None
    assert len(warnings) == 3
    assert any('roce_np/enable/5 is absent' in w for w in warnings)


def test_read_rdma_cm(tmp_path):
    write(tmp_path, 'kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos', '106\n')
    write(tmp_path, 'kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode', 'RoCE v2\n')
    write(tmp_path, 'kernel/config/rdma_cm/mlx5_0/ports/2/default_roce_tos', '300\n')
    warnings = []
    assert rdma_sysfs.read_rdma_cm(str(tmp_path), 'mlx5_0', warnings) == {
        1: {'default_roce_tos': 106, 'default_roce_mode': 'RoCE v2'},
        2: {'default_roce_tos': None, 'default_roce_mode': None}}
    assert len(warnings) == 1
    assert rdma_sysfs.read_rdma_cm(str(tmp_path), 'mlx5_1') is None


@pytest.mark.parametrize('call, expected', [
    (lambda r: rdma_sysfs.ecn_path(r, 'eth2', 'rp', 3), 'class/net/eth2/ecn/roce_rp/enable/3'),
    (lambda r: rdma_sysfs.ecn_path(r, 'eth2', 'np', '0'), 'class/net/eth2/ecn/roce_np/enable/0'),
    (lambda r: rdma_sysfs.cnp_path(r, 'eth2', 'cnp_dscp'), 'class/net/eth2/ecn/roce_np/cnp_dscp'),
    (lambda r: rdma_sysfs.cnp_path(r, 'eth2', 'cnp_802p_prio'), 'class/net/eth2/ecn/roce_np/cnp_802p_prio'),
    (lambda r: rdma_sysfs.rdma_cm_dir(r, 'mlx5_0'), 'kernel/config/rdma_cm/mlx5_0'),
    (lambda r: rdma_sysfs.rdma_cm_path(r, 'mlx5_0', 1, 'default_roce_tos'),
     'kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos'),
])
def test_path_builders(call, expected):
    assert call('/sys') == '/sys/' + expected


@pytest.mark.parametrize('call', [
    lambda: rdma_sysfs.ecn_path('/sys', 'eth2', 'cp', 3),
    lambda: rdma_sysfs.ecn_path('/sys', 'eth2', 'rp', 8),
    lambda: rdma_sysfs.cnp_path('/sys', 'eth2', 'enable'),
    lambda: rdma_sysfs.rdma_cm_path('/sys', 'mlx5_0', 1, 'tos'),
])
def test_path_builders_refuse_unknown_names(call):
    with pytest.raises(ValueError):
        call()


def test_hw_counters_of_a_real_connectx4(tmp_path):
    extract_ttar(real_path(MLX5_TTAR), str(tmp_path))
    warnings = []
    counters = rdma_sysfs.read_hw_counters(str(tmp_path / 'class/infiniband/mlx5_0/ports/1'), warnings)
    assert warnings == []
    assert counters['roce_adp_retrans'] == 99
    assert counters['local_ack_timeout_err'] == 131
    assert counters['out_of_sequence'] == 1
    assert counters['packet_seq_err'] == 1
    assert counters['lifespan'] == 10
    assert len(counters) == 25


def test_hw_counters_absent_or_bad(tmp_path):
    assert rdma_sysfs.read_hw_counters(str(tmp_path), []) == {}
    write(tmp_path, 'hw_counters/roce_adp_retrans', 'n/a\n')
    write(tmp_path, 'hw_counters/packet_seq_err', '5\n')
    warnings = []
    assert rdma_sysfs.read_hw_counters(str(tmp_path), warnings) == {'packet_seq_err': 5}
    assert len(warnings) == 1


@pytest.mark.parametrize('port, expected', [
    # the real ConnectX-4 above: (99 + 131 + 1) / 10907922116 packets
    ({'counters': {'port_xmit_packets': 10907922116},
      'hw_counters': {'roce_adp_retrans': 99, 'local_ack_timeout_err': 131, 'packet_seq_err': 1}},
     231 * 100.0 / 10907922116),
    ({'counters': {'port_xmit_packets': 1000},
      'hw_counters': {'roce_adp_retrans': 1, 'local_ack_timeout_err': 0, 'packet_seq_err': 1}}, 0.2),
    ({'counters': {'port_xmit_packets': 0},
      'hw_counters': {'roce_adp_retrans': 0, 'local_ack_timeout_err': 0, 'packet_seq_err': 0}}, None),
    ({'counters': {},
      'hw_counters': {'roce_adp_retrans': 0, 'local_ack_timeout_err': 0, 'packet_seq_err': 0}}, None),
    ({'counters': {'port_xmit_packets': 1000}, 'hw_counters': {'roce_adp_retrans': 0, 'packet_seq_err': 0}}, None),
    ({'counters': None, 'hw_counters': None}, None),
    ({}, None),
])
def test_retrans_ratio(port, expected):
    assert rdma_sysfs.retrans_ratio(port) == expected
