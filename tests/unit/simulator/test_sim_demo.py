# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""simulator/demo.py (make demo) without podman: layout, faults, inventory, report verdict, podman config."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from simhelpers import PROFILE_NAMES, profile_path

from simulator import bundle
from simulator import demo
from simulator import demo_inventory
from simulator import demo_report
from simulator import faults

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import check_profile


def default_setup():
    layout = demo.load_layout(demo.DEFAULT_LAYOUT)
    nodes = demo.build_nodes(demo.racks_from_layout(layout, demo.DEFAULT_LAYOUT))
    return layout, nodes


def test_default_layout():
    layout, nodes = default_setup()
    assert [(n['name'], n['rack'], n['profile'], n['node_class']) for n in nodes] == [
        ('rack_a-h100-1', 'rack_a', 'h100-sxm-8gpu-ib', 'dgx_h100'),
        ('rack_a-h100-2', 'rack_a', 'h100-sxm-8gpu-ib', 'dgx_h100'),
        ('rack_b-a100-1', 'rack_b', 'a100-sxm-8gpu-ib', 'dgx_a100'),
        ('rack_b-pcie-1', 'rack_b', 'pcie-4gpu-roce', 'pcie_p100'),
    ]
    assert all(n['container'] == 'gpuops-demo-' + n['name'] for n in nodes)
    fault = demo.place_fault(nodes, demo.fault_from_layout(layout))
    assert fault == {'node': 'rack_b-a100-1', 'spec': 'ib_port_down:nic=mlx5_2', 'name': 'ib_port_down',
                     'params': {'nic': 'mlx5_2'}}
    assert [n['faults'] for n in nodes] == [[], [], ['ib_port_down:nic=mlx5_2'], []]


def test_racks_spec_and_profile_prefixes():
    racks = demo.parse_racks('rack_a=h100*2;rack_b=a100-sxm-8gpu-ib,pciex3')
    assert list(racks.items()) == [('rack_a', [('h100', 2)]), ('rack_b', [('a100-sxm-8gpu-ib', 1), ('pcie', 3)])]
    nodes = demo.build_nodes(demo.parse_racks('rack_c=pcie*2,h100'))
    assert [n['name'] for n in nodes] == ['rack_c-pcie-1', 'rack_c-pcie-2', 'rack_c-h100-1']
    with pytest.raises(demo.DemoError, match='unknown'):
        demo.build_nodes(demo.parse_racks('rack_a=b200'))
    with pytest.raises(demo.DemoError, match='rack_<name>'):
        demo.build_nodes(demo.parse_racks('racka=h100'))
    with pytest.raises(demo.DemoError):
        demo.parse_racks('rack_a')


def test_fault_spec():
    assert demo.parse_fault('none') is None
    assert demo.parse_fault('nvlink_down:gpu=3,links=1,2@rack_a-h100-2') == {
        'spec': 'nvlink_down:gpu=3,links=1,2', 'node': 'rack_a-h100-2'}
    assert demo.parse_fault('ib_port_down') == {'spec': 'ib_port_down', 'node': None}
    dummy, nodes = default_setup()
    assert demo.place_fault(nodes, demo.parse_fault('gpu_missing'))['node'] == 'rack_b-pcie-1'  # default: last node
    with pytest.raises(demo.DemoError, match='no NVLink'):
        demo.place_fault(nodes, demo.parse_fault('nvlink_down@rack_b-pcie-1'))
    with pytest.raises(demo.DemoError, match='unknown fault'):
        demo.place_fault(nodes, demo.parse_fault('bogus'))


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_fault_checks_cover_what_each_fault_breaks(name, tmp_path):
    """A fault's node fails only checks listed in FAULT_CHECKS (so the demo verdict is right for any fault)."""
    meta = bundle.load_yaml(open(os.path.join(profile_path(name), 'profile.yml')).read())
    # faults only the gates (dcgmi diag, nccl-tests) see: the node's hardware checks pass
    gate_only = {'dcgm_diag_fail', 'nccl_slow'}
    assert sorted(set(demo_report.FAULT_CHECKS) | gate_only) == sorted(faults.FAULTS)
    for fault in sorted(faults.FAULTS):
        tree = bundle.read_profile(profile_path(name))
        try:
            faults.FAULTS[fault].apply(tree)
        except faults.FaultError:
            continue
        bundle_dir = str(tmp_path / fault)
        bundle.write_tree(tree, bundle_dir)
        failures = check_profile(gather_bundle(bundle_dir), meta['expected_node_class'])
        if fault in gate_only:
            assert failures == [], (name, fault, failures)
            continue
        assert failures, (name, fault)
        assert set(f['check'] for f in failures) <= set(demo_report.FAULT_CHECKS[fault]), (name, fault, failures)


def report(statuses, failures=None):
    hosts = []
    for host, status in statuses.items():
        pre = {'passed': status != 'held_back', 'failures': (failures or {}).get(host, [])}
        hosts.append({'host': host, 'status': status, 'pre_check': pre})
    return {'racks': [{'name': 'rack_x', 'hosts': hosts}]}


def test_check_report():
    dummy, nodes = default_setup()
    fault = {'node': 'rack_b-a100-1', 'spec': 'ib_port_down:nic=mlx5_2', 'name': 'ib_port_down', 'params': {}}
    port = {'check': 'nic_port_state', 'subject': 'mlx5_2/1', 'message': 'mlx5_2/1 is DOWN'}
    good = {'rack_a-h100-1': 'provisioned', 'rack_a-h100-2': 'provisioned', 'rack_b-a100-1': 'held_back',
            'rack_b-pcie-1': 'validated'}
    assert demo.check_report(report(good, {'rack_b-a100-1': [port]}), nodes, fault) == []
    assert demo.check_report(report(good, {'rack_b-a100-1': []}), nodes, fault) == [
        'rack_b-a100-1 is held back without a failed check']
    other = dict(port, check='gpu_count', subject='node', message='expected 8 GPUs, found 7')
    assert 'does not explain' in demo.check_report(report(good, {'rack_b-a100-1': [port, other]}), nodes, fault)[0]
    assert demo.check_report(report(dict(good, **{'rack_a-h100-2': 'failed'}), {'rack_b-a100-1': [port]}), nodes,
                             fault) == ['rack_a-h100-2 is failed, expected provisioned']
    assert demo.check_report(report(dict(good, **{'rack_b-a100-1': 'provisioned'})), nodes, fault) == [
        'rack_b-a100-1 (fault ib_port_down:nic=mlx5_2) is provisioned, expected held_back']
    all_good = dict(good, **{'rack_b-a100-1': 'provisioned'})
    assert demo.check_report(report(all_good), nodes, None) == []
    missing = dict(all_good)
    del missing['rack_b-pcie-1']
    assert demo.check_report(report(dict(missing, extra='provisioned')), nodes, None) == [
        'rack_b-pcie-1 is not in the report', 'unexpected hosts in the report: extra']


def test_check_report_gate_faults():
    dummy, nodes = default_setup()
    fault = {'node': 'rack_a-h100-2', 'spec': 'dcgm_diag_fail', 'name': 'dcgm_diag_fail', 'params': {}}
    passed = [{'name': 'dcgm_diag', 'ran': True, 'passed': True}, {'name': 'nccl_busbw', 'ran': True, 'passed': True}]
    failed = [dict(passed[0], passed=False), passed[1]]
    statuses = {'rack_a-h100-1': 'provisioned', 'rack_a-h100-2': 'failed', 'rack_b-a100-1': 'provisioned',
                'rack_b-pcie-1': 'provisioned'}

    def with_gates(statuses, faulty_gates):
        doc = report(statuses)
        for host in doc['racks'][0]['hosts']:
            host['gates'] = faulty_gates if host['host'] == fault['node'] else passed
        return doc
    assert demo.check_report(with_gates(statuses, failed), nodes, fault) == []
    # the node must fail by that gate, and that gate alone
    assert 'expected failed by the dcgm_diag gate alone' in demo.check_report(
        with_gates(statuses, [failed[0], dict(passed[1], passed=False)]), nodes, fault)[0]
    assert 'expected failed by the dcgm_diag gate alone' in demo.check_report(
        with_gates(dict(statuses, **{'rack_a-h100-2': 'provisioned'}), passed), nodes, fault)[0]
    # a healthy node whose gates did not run is not a demo that passed
    doc = with_gates(statuses, failed)
    doc['racks'][0]['hosts'][0]['gates'] = [dict(passed[0], ran=False)]
    assert demo.check_report(doc, nodes, fault) == ['rack_a-h100-1: the gates dcgm_diag did not run']


def test_inventory(tmp_path):
    layout, nodes = default_setup()
    demo.place_fault(nodes, demo.fault_from_layout(layout))
    inventory = demo.write_inventory(nodes, str(tmp_path), '/reports')
    hosts = yaml.safe_load(open(os.path.join(inventory, 'hosts.yml')))['all']['children']
    assert list(hosts) == ['rack_a', 'rack_b', 'dgx_h100', 'dgx_a100', 'pcie_p100']
    assert hosts['rack_b']['hosts']['rack_b-a100-1'] == {
        'ansible_host': 'gpuops-demo-rack_b-a100-1', 'gpuops_sim_profile': 'a100-sxm-8gpu-ib',
        'gpuops_sim_faults': ['ib_port_down:nic=mlx5_2']}
    assert list(hosts['dgx_h100']['hosts']) == ['rack_a-h100-1', 'rack_a-h100-2']
    all_vars = yaml.safe_load(open(os.path.join(inventory, 'group_vars', 'all.yml')))
    assert all_vars['ansible_connection'] == 'podman'
    assert all_vars['gpuops_sysfs_root'] == '/usr/share/gpuops-sim/sys'
    assert all_vars['gpuops_report_dir'] == '/reports'
    # a node the rollout reboots is a container: systemd reboots it, podman starts it again
    assert all_vars['gpuops_reboot_command'] == 'systemctl reboot'
    assert all_vars['gpuops_reboot_boot_time_command'] == 'cut -d" " -f22 /proc/1/stat'
    assert '--restart=always' in demo.PODMAN_RUN_OPTIONS
    # the rollout installs the driver on the bare nodes, from the repository copied into them, and reboots them
    assert all_vars['gpuops_roles'] == [{'name': 'nvidia_driver'}, {'name': 'rdma'}, {'name': 'dcgm'}, {'name': 'nccl'}]
    # the driver is loaded only after the rollout's reboot: the CUDA major versions are given
    assert (all_vars['dcgm_cuda_major'], all_vars['nccl_cuda_major']) == (13, 12)
    assert all_vars['nccl_tests_source'] == '/srv/gpuops-nvidia-repo/nccl-tests-src'
    assert all_vars['rdma_sysfs_root'] == '/usr/share/gpuops-sim/sys'
    assert all_vars['gpuops_reboot_ok'] is True
    assert all_vars['nvidia_driver_source'] == 'mirror'
    assert all_vars['nvidia_driver_repo_url'] == 'file:///srv/gpuops-nvidia-repo/repo/'
    assert all_vars['nvidia_driver_repo_key_url'] == 'file:///srv/gpuops-nvidia-repo/key.asc'
    assert all_vars['gpuops_proc_root'] == all_vars['nvidia_driver_proc_root'] == '/run/gpuops-sim/proc'
    for name in PROFILE_NAMES:
        meta = bundle.load_yaml(open(os.path.join(profile_path(name), 'profile.yml')).read())
        group = yaml.safe_load(open(os.path.join(inventory, 'group_vars', meta['node_class'] + '.yml')))
        rdma = {'InfiniBand': {'nic_ipoib': False},
                'Ethernet': {'nic_roce_dcqcn': 3, 'nic_pfc_priority': 3}}[meta['expected_node_class']['nic_link_layer']]
        assert group == {'gpuops_node_class': meta['node_class'],
                         'gpuops_node_class_profile': dict(meta['expected_node_class'], driver_version='580.*',
                                                           persistence_mode='Enabled', dcgm_health=True, **rdma),
                         'nccl_test_min_busbw_gbps': demo_inventory.NCCL_BUSBW[meta['node_class']]}
    without = demo.write_inventory(nodes, str(tmp_path / 'plain'), '/reports', driver=False)
    assert 'gpuops_roles' not in yaml.safe_load(open(os.path.join(without, 'group_vars', 'all.yml')))


@pytest.mark.parametrize('before, after', [
    ('', '[engine]\nruntime = "runc"\n'),
    ('[engine]\nruntime = "crun"\n', '[engine]\nruntime = "runc"\n'),
    ('[containers]\nx = 1\n[engine]\ncgroup_manager = "cgroupfs"\n[network]\n',
     '[containers]\nx = 1\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n[network]\n'),
    ('[containers]\nx = 1\n', '[containers]\nx = 1\n\n[engine]\nruntime = "runc"\n'),
])
def test_set_runc(tmp_path, before, after):
    path = str(tmp_path / 'etc' / 'containers.conf')
    if before:
        os.makedirs(os.path.dirname(path))
        open(path, 'w').write(before)
    assert demo.set_runc(path) is True
    assert open(path).read() == after
    assert demo.set_runc(path) is False
