# -*- coding: utf-8 -*-
"""The RDMA profile keys: IPoIB, DCQCN, PFC, port error counters, the RoCE retransmission ratio."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import (
    BY_KEY, owned_keys, run_checks, validate_profile)
from rdma_tree import PFC_OFF, hca, roce_and_ib_node, write

NO_DCB = 'dcb (iproute2) was not found on the node'
RDMA_PROFILE = {'nic_ipoib': False, 'nic_roce_dcqcn': 3, 'nic_pfc_priority': 3, 'nic_symbol_errors_max': 0,
                'nic_rcv_errors_max': 0, 'nic_retrans_ratio_max': 0.1}


def rdma(topo, profile, defer_roles=()):
    """The failures of the RDMA keys (the bundles hold no nvidia-smi output: driver_loaded fails on its own)."""
    names = set(BY_KEY[k].name for k in RDMA_PROFILE)
    return [f for f in run_checks(topo, profile, defer_roles)[0] if f['check'] in names]


def only(failures, keys=tuple(RDMA_PROFILE)):
    names = set(BY_KEY[k].name for k in keys)
    return [(f['check'], f['subject'], f['expected'], f['actual']) for f in failures if f['check'] in names]


def check(topo, profile=None):
    return only(run_checks(topo, profile or RDMA_PROFILE)[0])


def nic(topo, name):
    return next(n for n in topo['nics'] if n['name'] == name)


def edited(topo, change):
    """Transform: a copy of the snapshot with ``change(copy)`` applied (what a node in another state reads)."""
    topo = json.loads(json.dumps(topo))
    change(topo)
    return topo


def test_the_rdma_node_against_its_profile(tmp_path):
    topo = gather_bundle(roce_and_ib_node(tmp_path))
    assert check(topo) == [('nic_symbol_errors', 'mlx5_1/1', '<= 0', 3),
                           ('nic_ipoib', 'mlx5_1', [], ['ib0'])]


def test_passing_rdma_node(tmp_path):
    root = roce_and_ib_node(tmp_path, ipoib=False)
    write(root, 'sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error', '0\n')
    assert check(gather_bundle(root)) == []


def test_an_ipoib_netdev_set_down_carries_nothing(tmp_path):
    root = roce_and_ib_node(tmp_path)
    # administratively down (IFF_UP clear), whatever the link says
    write(root, 'sys/class/net/ib0/flags', '0x1002\n')
    assert only(rdma(gather_bundle(root), {'nic_ipoib': False})) == []
    # administratively up with the link down: still IPoIB, once the link comes up
    write(root, 'sys/class/net/ib0/flags', '0x1003\n')
    write(root, 'sys/class/net/ib0/operstate', 'lowerlayerdown\n')
    assert [f['check'] for f in rdma(gather_bundle(root), {'nic_ipoib': False})] == ['nic_ipoib']
    os.remove(os.path.join(root, 'sys/class/net/ib0/flags'))
    failures = rdma(gather_bundle(root), {'nic_ipoib': False})
    assert [(f['check'], f['actual']) for f in failures] == [('nic_ipoib', 'not checked')]
    assert 'flags of IPoIB netdev(s) ib0 could not be read' in failures[0]['message']


def test_ipoib_allowed_checks_nothing(tmp_path):
    assert check(gather_bundle(roce_and_ib_node(tmp_path)), {'nic_ipoib': True}) == []


def test_wrong_dcqcn_and_pfc_priority(tmp_path):
    topo = gather_bundle(roce_and_ib_node(tmp_path, pfc=PFC_OFF))
    failures = rdma(topo, {'nic_roce_dcqcn': 5, 'nic_pfc_priority': 3})
    assert only(failures) == [('nic_roce_dcqcn', 'mlx5_0', 5, {'rp': False, 'np': False}),
                              ('nic_pfc_priority', 'mlx5_0', [3], [])]
    assert failures[0]['message'] == 'mlx5_0 (ens6): DCQCN roce_np and roce_rp off on priority 5'
    assert failures[1]['message'] == 'mlx5_0 (ens6): PFC is on for priorities none, expected only 3'


def test_pfc_on_more_than_the_one_priority(tmp_path):
    topo = edited(gather_bundle(roce_and_ib_node(tmp_path)), lambda t: nic(t, 'mlx5_0')['roce'].update(pfc=[3, 4]))
    assert check(topo, {'nic_pfc_priority': 3}) == [('nic_pfc_priority', 'mlx5_0', [3], [3, 4])]


def test_dcqcn_on_only_one_side(tmp_path):
    topo = edited(gather_bundle(roce_and_ib_node(tmp_path)),
                  lambda t: nic(t, 'mlx5_0')['roce']['ecn']['np'].update({'3': False}))
    assert check(topo, {'nic_roce_dcqcn': 3}) == [('nic_roce_dcqcn', 'mlx5_0', 3, {'rp': True, 'np': False})]


@pytest.mark.parametrize('change, key, why', [
    (lambda t: nic(t, 'mlx5_0')['roce'].update(pfc=None, unreadable={'pfc': NO_DCB}),
     'nic_pfc_priority', 'PFC of mlx5_0 could not be read: dcb (iproute2) was not found on the node'),
    (lambda t: nic(t, 'mlx5_0')['roce'].update(ecn=None, unreadable={'ecn': 'class/net/ens6/ecn does not exist'}),
     'nic_roce_dcqcn', 'DCQCN of mlx5_0 could not be read: class/net/ens6/ecn does not exist'),
    (lambda t: nic(t, 'mlx5_0')['roce']['ecn']['rp'].pop('3'),
     'nic_roce_dcqcn', 'roce_rp/enable/3 of ens6 could not be read'),
    (lambda t: nic(t, 'mlx5_0')['ports'][0]['hw_counters'].pop('packet_seq_err'),
     'nic_retrans_ratio_max', 'hw_counters packet_seq_err of mlx5_0/1 are not in sysfs'),
    (lambda t: nic(t, 'mlx5_0')['ports'][0]['counters'].update(port_xmit_packets=0),
     'nic_retrans_ratio_max', 'no packet sent from mlx5_0/1 since its counters were cleared (port_xmit_packets 0)'),
    (lambda t: nic(t, 'mlx5_1')['ports'][0]['counters'].pop('symbol_error'),
     'nic_symbol_errors_max', 'symbol_error of mlx5_1/1 is not in sysfs'),
    (lambda t: nic(t, 'mlx5_1').update(ipoib=None, ipoib_active=None),
     'nic_ipoib', 'the IPoIB netdevs of mlx5_1 cannot be told from this source'),
])
def test_what_could_not_be_read_is_not_checked(tmp_path, change, key, why):
    topo = edited(gather_bundle(roce_and_ib_node(tmp_path)), change)
    failures = [f for f in run_checks(topo, {key: RDMA_PROFILE[key]})[0] if f['check'] == BY_KEY[key].name]
    assert [f['actual'] for f in failures] == ['not checked']
    assert why in failures[0]['message']


@pytest.mark.parametrize('key', ['nic_roce_dcqcn', 'nic_pfc_priority', 'nic_retrans_ratio_max'])
def test_roce_keys_without_an_ethernet_nic_are_not_checked(tmp_path, key):
    hca(tmp_path, 'mlx5_1', '0000:2a:00.0', 'InfiniBand', [('ib0', 32)])
    failures = rdma(gather_bundle(str(tmp_path)), {key: RDMA_PROFILE[key]})
    assert [(f['subject'], f['actual']) for f in failures] == [('node', 'not checked')]
    assert 'none of the selected NICs (mlx5_1) has an Ethernet port' in failures[0]['message']


def test_ipoib_without_an_infiniband_nic_is_not_checked(tmp_path):
    hca(tmp_path, 'mlx5_0', '0000:17:00.0', 'Ethernet', [('ens6', 1)])
    failures = rdma(gather_bundle(str(tmp_path)), {'nic_ipoib': False, 'nic_names': ['mlx5_9']})
    assert [(f['check'], f['subject'], f['actual']) for f in failures] == [('nic_ipoib', 'node', 'not checked')]
    assert 'no NIC matches' in failures[0]['message']
    failures = rdma(gather_bundle(str(tmp_path)), {'nic_ipoib': False})
    assert [(f['subject'], f['actual']) for f in failures] == [('node', 'not checked')]
    assert 'none of the selected NICs (mlx5_0) has an InfiniBand port' in failures[0]['message']


def test_retransmission_ratio_over_the_limit(tmp_path):
    topo = edited(gather_bundle(roce_and_ib_node(tmp_path)),
                  lambda t: nic(t, 'mlx5_0')['ports'][0]['counters'].update(port_xmit_packets=100000))
    failures = rdma(topo, {'nic_retrans_ratio_max': 0.1})
    assert only(failures) == [('nic_retrans_ratio', 'mlx5_0/1', '<= 0.1%', 0.231)]
    assert failures[0]['message'] == ('mlx5_0/1 retransmitted 0.2310% of its packets (roce_adp_retrans 99, '
                                      'local_ack_timeout_err 131, packet_seq_err 1), expected at most 0.1%')


@pytest.mark.parametrize('key, value', [
    ('nic_roce_dcqcn', 8), ('nic_roce_dcqcn', -1), ('nic_roce_dcqcn', True), ('nic_pfc_priority', '3'),
    ('nic_pfc_priority', 3.0), ('nic_retrans_ratio_max', -0.1), ('nic_symbol_errors_max', 0.5),
    ('nic_ipoib', 'no'),
])
def test_bad_values_are_refused(key, value):
    errors = validate_profile({key: value})
    assert len(errors) == 1 and key in errors[0]


def test_priority_error_says_what_it_wants():
    assert validate_profile({'nic_pfc_priority': 9}) == [
        'profile key nic_pfc_priority must be a priority, a whole number 0-7, got 9']


@pytest.mark.parametrize('value', range(8))
def test_every_priority_is_accepted(value):
    assert validate_profile({'nic_roce_dcqcn': value, 'nic_pfc_priority': value}) == []


def test_the_rdma_role_owns_its_keys(tmp_path):
    # a port that is down (cabling, switch, subnet manager) or the wrong link layer (firmware) is hardware: no role
    # converges it, so the pre-change check never defers it
    assert owned_keys('rdma') == ['nic_ipoib', 'nic_pfc_priority', 'nic_roce_dcqcn']
    topo = gather_bundle(roce_and_ib_node(tmp_path, pfc=PFC_OFF))
    failures, deferred = run_checks(topo, RDMA_PROFILE, defer_roles=('rdma',))
    assert [d['key'] for d in deferred] == ['nic_ipoib', 'nic_roce_dcqcn', 'nic_pfc_priority']
    assert only(failures) == [('nic_symbol_errors', 'mlx5_1/1', '<= 0', 3)]
