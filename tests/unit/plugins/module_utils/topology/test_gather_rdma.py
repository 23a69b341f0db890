# -*- coding: utf-8 -*-
"""RDMA facts (IPoIB, hw_counters, RoCE: DCQCN, PFC, DSCP, rdma_cm) from bundles and from a live node's dcb."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live
from rdma_tree import (NO_DEVICE, NOT_SUPPORTED, PFC_OFF, SYMBOLIC_APP, dcb_file, ecn, hca, modules,
                       roce_and_ib_node)
from real_captures import real_text

ALL = [str(p) for p in range(8)]


def nic(topo, name):
    return next(n for n in topo['nics'] if n['name'] == name)


def test_bundle_roce_and_ipoib_facts(tmp_path):
    topo = gather_bundle(roce_and_ib_node(tmp_path))
    assert topo['ipoib_module_loaded'] is True
    roce, ib = nic(topo, 'mlx5_0'), nic(topo, 'mlx5_1')
    assert ib['ipoib'] == ['ib0'] and ib['roce'] is None
    assert roce['ipoib'] == []
    assert roce['roce'] == {
        'netdev': 'ens6',
        'ecn': {'rp': dict((p, p == '3') for p in ALL), 'np': dict((p, p == '3') for p in ALL),
                'cnp_dscp': 48, 'cnp_802p_prio': 6},
        'pfc': [3],
        'dscp_prio': {},
        'rdma_cm': {'1': {'default_roce_tos': 106, 'default_roce_mode': 'RoCE v2'}},
        'unreadable': {}}
    port = roce['ports'][0]
    assert port['hw_counters'] == {'roce_adp_retrans': 99, 'local_ack_timeout_err': 131, 'packet_seq_err': 1,
                                   'out_of_sequence': 1}
    assert port['counters']['port_xmit_packets'] == 10907922116
    assert ib['ports'][0]['hw_counters'] == {}
    # the fact reads the same after a JSON round trip (keys are strings already)
    assert json.loads(json.dumps(topo['nics'])) == topo['nics']


def test_no_ipoib_module_and_no_ipoib_netdev(tmp_path):
    topo = gather_bundle(roce_and_ib_node(tmp_path, ipoib=False))
    assert topo['ipoib_module_loaded'] is False
    assert nic(topo, 'mlx5_1')['ipoib'] == []


def test_bundle_without_module_or_netdev_copies_cannot_tell(tmp_path):
    hca(tmp_path, 'mlx5_1', '0000:2a:00.0', 'InfiniBand')
    topo = gather_bundle(str(tmp_path))
    assert topo['ipoib_module_loaded'] is None
    assert nic(topo, 'mlx5_1')['ipoib'] is None


def test_unreadable_roce_values_are_null_with_the_reason(tmp_path):
    hca(tmp_path, 'mlx5_0', '0000:17:00.0', 'Ethernet', [('ens6', 1)])
    modules(tmp_path, False)
    dcb_file(tmp_path, 'dcb-pfc-ens6.txt', NOT_SUPPORTED, rc=1)
    dcb_file(tmp_path, 'dcb-app-dscp-prio-ens6.txt', SYMBOLIC_APP)
    topo = gather_bundle(str(tmp_path))
    roce = nic(topo, 'mlx5_0')['roce']
    assert (roce['netdev'], roce['ecn'], roce['pfc'], roce['dscp_prio'], roce['rdma_cm']) == (
        'ens6', None, None, None, None)
    assert roce['unreadable']['pfc'] == 'dcb-pfc-ens6.txt exited 1: Attribute read: Operation not supported'
    assert 'AF31:3' in roce['unreadable']['dscp_prio']
    assert 'class/net/ens6/ecn does not exist' in roce['unreadable']['ecn']
    assert 'kernel/config/rdma_cm/mlx5_0 does not exist' in roce['unreadable']['rdma_cm']
    assert any('pfc of ens6 not read' in w for w in topo['warnings'])
    assert topo['errors'] == []


def test_bundle_without_dcb_files(tmp_path):
    hca(tmp_path, 'mlx5_0', '0000:17:00.0', 'Ethernet', [('ens6', 1)])
    ecn(tmp_path, 'ens6', rp=(3,), np=(3,))
    roce = nic(gather_bundle(str(tmp_path)), 'mlx5_0')['roce']
    assert roce['pfc'] is None and roce['unreadable']['pfc'] == 'the bundle has no dcb-pfc-ens6.txt'
    assert roce['ecn']['rp']['3'] is True


def test_ethernet_nic_without_netdev(tmp_path):
    hca(tmp_path, 'mlx5_0', '0000:17:00.0', 'Ethernet')
    roce = nic(gather_bundle(str(tmp_path)), 'mlx5_0')['roce']
    assert roce['netdev'] is None
    assert roce['unreadable']['pfc'] == 'mlx5_0 has no netdev in sysfs'


class Dcb(object):
    """A node's dcb: argv tail -> (rc, real output on stdout, real output on stderr)."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[0] != '/usr/sbin/dcb':
            return 9, b'', real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt'
                                     ).encode('utf-8')
        rc, out, err = self.answers[' '.join(argv[1:])]
        return rc, real_text(out).encode('utf-8') if out else b'', real_text(err).encode('utf-8') if err else b''


def test_live_node_runs_dcb_for_each_roce_netdev(tmp_path):
    root = roce_and_ib_node(tmp_path)
    run = Dcb({'pfc show dev ens6': (0, PFC_OFF, None), '-N app show dev ens6 dscp-prio': (1, None, NO_DEVICE)})
    topo = gather_live(run, '/usr/bin/nvidia-smi', os.path.join(root, 'sys'), dcb='/usr/sbin/dcb', limit=60)
    dcb_calls = [c for c in run.calls if c[0] == '/usr/sbin/dcb']
    assert dcb_calls == [['/usr/sbin/dcb', 'pfc', 'show', 'dev', 'ens6'],
                         ['/usr/sbin/dcb', '-N', 'app', 'show', 'dev', 'ens6', 'dscp-prio']]
    roce = nic(topo, 'mlx5_0')['roce']
    assert roce['pfc'] == []
    assert roce['dscp_prio'] is None
    assert roce['unreadable'] == {
        'dscp_prio': 'dcb -N app show dev ens6 dscp-prio exited 1: Attribute read: No such device'}


def test_live_node_without_dcb(tmp_path):
    root = roce_and_ib_node(tmp_path)
    run = Dcb({})
    topo = gather_live(run, '/usr/bin/nvidia-smi', os.path.join(root, 'sys'), dcb=None)
    roce = nic(topo, 'mlx5_0')['roce']
    assert roce['pfc'] is None and roce['dscp_prio'] is None
    assert roce['unreadable']['pfc'] == 'dcb (iproute2) was not found on the node'
    assert roce['ecn']['np']['3'] is True


def test_live_node_with_a_hung_dcb(tmp_path):
    root = roce_and_ib_node(tmp_path)

    def run(argv):
        if 'dcb' in argv[0]:
            return None, b'', b'', True
        return 9, b'', b''
    topo = gather_live(run, '/usr/bin/nvidia-smi', os.path.join(root, 'sys'), dcb='/usr/sbin/dcb', limit=5)
    roce = nic(topo, 'mlx5_0')['roce']
    assert roce['unreadable']['pfc'] == 'dcb pfc show dev ens6 did not finish within 5 s and was killed'


def test_dcb_is_not_run_without_a_roce_nic(tmp_path):
    roce_and_ib_node(tmp_path)
    run = Dcb({})
    hca(tmp_path / 'ibonly', 'mlx5_1', '0000:2a:00.0', 'InfiniBand', [('ib0', 32)])
    gather_live(run, '/usr/bin/nvidia-smi', str(tmp_path / 'ibonly' / 'sys'), dcb='/usr/sbin/dcb')
    assert [c for c in run.calls if c[0] == '/usr/sbin/dcb'] == []


# ---------------------------------------------------------------- regressions between two snapshots

def more_retransmissions(topo, name, counter, by):
    """Transform: ``counter`` of the first port of ``name`` rose by ``by`` after the change."""
    topo = json.loads(json.dumps(topo))
    nic(topo, name)['ports'][0]['hw_counters'][counter] += by
    return topo


def retrans_regressions(before, after):
    from ansible_collections.gpuops.node.plugins.module_utils.topology.baseline import find_regressions
    return [r for r in find_regressions(before, after) if r['check'] in ('nic_retrans_new', 'nic_errors_new')]


def test_retransmissions_rising_is_a_regression(tmp_path):
    before = gather_bundle(roce_and_ib_node(tmp_path))
    after = more_retransmissions(before, 'mlx5_0', 'local_ack_timeout_err', 5)
    assert retrans_regressions(before, after) == [{
        'check': 'nic_retrans_new', 'subject': 'mlx5_0/1', 'before': 131, 'after': 136,
        'message': 'mlx5_0/1 local_ack_timeout_err rose from 131 to 136 (RoCE retransmissions: packets lost on '
                   'the fabric)'}]


def test_traffic_and_out_of_sequence_are_not_regressions(tmp_path):
    before = gather_bundle(roce_and_ib_node(tmp_path))
    after = more_retransmissions(before, 'mlx5_0', 'out_of_sequence', 5)
    nic(after, 'mlx5_0')['ports'][0]['counters']['port_xmit_packets'] += 10 ** 6
    assert retrans_regressions(before, after) == []


def test_retransmission_counter_gone_is_not_checked(tmp_path):
    before = gather_bundle(roce_and_ib_node(tmp_path))
    after = json.loads(json.dumps(before))
    del nic(after, 'mlx5_0')['ports'][0]['hw_counters']['packet_seq_err']
    assert [(r['check'], r['before'], r['after']) for r in retrans_regressions(before, after)] == [
        ('nic_retrans_new', 1, 'not checked')]


def test_baseline_with_bad_hw_counters_is_refused(tmp_path):
    from ansible_collections.gpuops.node.plugins.module_utils.topology.baseline import validate_baseline
    snapshot = gather_bundle(roce_and_ib_node(tmp_path))
    assert validate_baseline(snapshot) == []
    nic(snapshot, 'mlx5_0')['ports'][0]['hw_counters']['roce_adp_retrans'] = -1
    assert validate_baseline(snapshot) == [
        'baseline.nics[0].ports[0].hw_counters.roce_adp_retrans is -1, expected a non-negative int']
    nic(snapshot, 'mlx5_0')['ports'][0]['hw_counters'] = 'n/a'
    assert validate_baseline(snapshot) == ["baseline.nics[0].ports[0].hw_counters is 'n/a', expected dict or null"]


def test_ipoib_active_follows_the_administrative_state(tmp_path):
    from rdma_tree import write
    root = roce_and_ib_node(tmp_path)
    assert nic(gather_bundle(root), 'mlx5_1')['ipoib_active'] == ['ib0']
    write(root, 'sys/class/net/ib0/operstate', 'down\n')
    assert nic(gather_bundle(root), 'mlx5_1')['ipoib_active'] == ['ib0']
    write(root, 'sys/class/net/ib0/flags', '0x1002\n')
    assert nic(gather_bundle(root), 'mlx5_1')['ipoib_active'] == []
