# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each fault changes exactly what it says, and the collection's gatherer sees it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import os

import pytest

from simhelpers import PROFILE_NAMES, gather_tree, profile_path, profile_tree, real_text

from simulator import bundle
from simulator import faults
from simulator import nvidia_smi

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle

H100 = 'h100-sxm-8gpu-ib'
A100 = 'a100-sxm-8gpu-ib'
PCIE = 'pcie-4gpu-roce'
SAME_FILES = {'profile.yml', nvidia_smi.RUNTIME_FILE}


_tree = profile_tree
_gather = gather_tree


def _apply(name, fault, **params):
    base = _tree(name)
    tree = copy.deepcopy(base)
    changed = faults.FAULTS[fault].apply(tree, **params)
    return base, tree, changed


def _diff(base, tree):
    return sorted(rel for rel in set(base) | set(tree) if base.get(rel) != tree.get(rel) and rel not in SAME_FILES)


def _strip_gpu(gpu):
    return dict((k, v) for k, v in gpu.items() if k != 'index')


def test_registry():
    assert sorted(faults.FAULTS) == ['dcgm_diag_fail', 'driver_not_loaded', 'ecc_uncorrectable', 'gpu_device_id',
                                     'gpu_missing', 'ib_port_down', 'mig_unexpected', 'nccl_slow', 'nvlink_down', 'pcie_downtrained',
                                     'roce_retrans_high']
    for name, fault in faults.FAULTS.items():
        assert fault.description and '\n' not in fault.description
        assert getattr(faults, name) is fault and callable(fault)
        assert fault.func.__doc__


def test_fault_is_recorded_in_profile_yml_and_runtime(tmp_path):
    out = str(tmp_path / 'out')
    changed = faults.nvlink_down(profile_path(H100), out, gpu=2)
    assert changed == ['nvidia-smi-nvlink-s.txt', 'nvidia-smi-topo-m.txt']
    faults.ib_port_down(out, out, phys_state='Polling')
    assert bundle.is_packed(out)
    meta = bundle.load_yaml(open(os.path.join(out, 'profile.yml')).read())
    assert [f['name'] for f in meta['faults']] == ['nvlink_down', 'ib_port_down']
    assert meta['faults'][0]['params'] == {'gpu': 2} and meta['faults'][0]['changed'] == changed
    assert meta['faults'][0]['description'] == faults.FAULTS['nvlink_down'].description
    assert meta['name'] == H100
    with open(os.path.join(out, nvidia_smi.RUNTIME_FILE)) as handle:
        runtime = json.load(handle)
    assert runtime['faults'] == [{'name': 'nvlink_down', 'params': {'gpu': 2}},
                                 {'name': 'ib_port_down', 'params': {'phys_state': 'Polling'}}]
    assert bundle.read_profile(out)['sys/class/infiniband/mlx5_0/ports/1/phys_state'] == b'2: Polling\n'
    # an unpacked bundle in, an unpacked bundle out
    bundle_dir = str(tmp_path / 'bundle')
    bundle.write_tree(_tree(H100), bundle_dir)
    faults.gpu_missing(bundle_dir, str(tmp_path / 'bundle2'))
    assert not bundle.is_packed(str(tmp_path / 'bundle2'))
    assert gather_bundle(str(tmp_path / 'bundle2'))['gpu_count'] == 7


def test_gpu_missing(tmp_path):
    base, tree, changed = _apply(H100, 'gpu_missing', gpu=2)
    assert changed == ['nvidia-smi-nvlink-s.txt', 'nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt']
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    assert after['gpu_count'] == 7 and after['errors'] == [] and after['warnings'] == []
    assert [_strip_gpu(g) for g in after['gpus']] == [_strip_gpu(g) for i, g in enumerate(before['gpus']) if i != 2]
    assert sorted(after['matrix']) == sorted(k for k in before['matrix'] if k != 'GPU7')
    # GPU3 of before is GPU2 now, with its NIC relations
    assert after['matrix']['GPU2']['mlx5_5'] == before['matrix']['GPU3']['mlx5_5'] == 'PIX'
    assert after['nics'] == before['nics']
    xml = nvidia_smi.XmlDoc(bundle.text(tree, nvidia_smi.XML_FILE))
    assert nvidia_smi.get_value(xml.head, 'attached_gpus') == '7' and len(xml.blocks) == 7
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    assert meta['faults'][0]['gpu_removed']['bus_id'] == before['gpus'][2]['pci_bus_id']


@pytest.mark.parametrize('name,expected', [(H100, {'NODE'}), (A100, {'PXB', 'SYS'})])
def test_nvlink_down(tmp_path, name, expected):
    base, tree, changed = _apply(name, 'nvlink_down', gpu=1)
    assert changed == ['nvidia-smi-nvlink-s.txt', 'nvidia-smi-topo-m.txt']
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    expected_active = [g['nvlink_total'] if g['index'] != 1 else 0 for g in before['gpus']]
    assert [g['nvlink_active'] for g in after['gpus']] == expected_active
    assert all(g['nvlink_total'] == before['gpus'][0]['nvlink_total'] for g in after['gpus'])
    assert 'Link 0: <inactive>' in bundle.text(tree, nvidia_smi.NVLINK_FILE)
    relations = set()
    for a in after['matrix']:
        for b, rel in after['matrix'][a].items():
            if 'GPU1' in (a, b) and a != b and a.startswith('GPU') and b.startswith('GPU'):
                relations.add(rel)
            else:
                assert rel == before['matrix'][a][b]
    assert relations == expected
    if name == A100:
        # GPU0 and GPU1 share a PCIe switch (both PXB to mlx5_0); GPU2 is on another socket
        assert after['matrix']['GPU1']['GPU0'] == 'PXB' and after['matrix']['GPU1']['GPU2'] == 'SYS'


def test_nvlink_down_some_links(tmp_path):
    _base, tree, _changed = _apply(H100, 'nvlink_down', gpu=4, links='0,5')
    after = _gather(tree, tmp_path, 'b')
    assert after['gpus'][4]['nvlink_active'] == 16
    assert set(after['matrix']['GPU4'][g] for g in after['matrix'] if g.startswith('GPU') and g != 'GPU4') == {'NV16'}


def test_nvlink_down_refused_without_nvlink():
    with pytest.raises(faults.FaultError):
        _apply(PCIE, 'nvlink_down')


@pytest.mark.parametrize('name,gen', [(H100, 3), (A100, 3), (PCIE, 2)])
def test_pcie_downtrained(tmp_path, name, gen):
    base, tree, changed = _apply(name, 'pcie_downtrained', gpu=1)
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    address = before['gpus'][1]['pci_bus_id'][4:].lower()
    assert changed == sorted(['nvidia-smi-q-x.xml'] + ['sys/bus/pci/devices/%s/%s' % (address, f) for f in (
        'current_link_speed', 'current_link_width', 'max_link_speed', 'max_link_width')])
    assert after['gpus'][1]['pcie'] == {'gen_current': gen, 'gen_max': gen, 'width_current': 8, 'width_max': 8}
    for i, gpu in enumerate(after['gpus']):
        if i != 1:
            assert gpu == before['gpus'][i]
    assert bundle.text(tree, 'sys/bus/pci/devices/%s/current_link_speed' % address) == \
        {3: '8.0 GT/s PCIe\n', 2: '5.0 GT/s PCIe\n'}[gen]


def test_gpu_device_id_makes_every_gpu_a_b300_by_its_id(tmp_path):
    """The id the driver rules read before any driver: the collection's table names it Blackwell (B300)."""
    base, tree, changed = _apply(PCIE, 'gpu_device_id')
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    addresses = [g['pci_bus_id'][4:].lower() for g in before['gpus']]
    assert changed == sorted(['nvidia-smi-q-x.xml'] + ['sys/bus/pci/devices/%s/device' % a for a in addresses])
    assert [(g['device_id'], g['architecture'], g['model']) for g in after['pci_gpus']] == \
        [('0x3182', 'Blackwell', 'NVIDIA B300 SXM6 AC')] * len(addresses)
    assert [g['name'] for g in after['gpus']] == ['NVIDIA B300 SXM6 AC'] * len(addresses)
    with pytest.raises(faults.FaultError):
        _apply(PCIE, 'gpu_device_id', device='3182')


@pytest.mark.parametrize('phys,text', [('Disabled', '3: Disabled'), ('Polling', '2: Polling')])
def test_ib_port_down(tmp_path, phys, text):
    base, tree, changed = _apply(H100, 'ib_port_down', phys_state=phys)
    assert changed == ['sys/class/infiniband/mlx5_0/ports/1/phys_state', 'sys/class/infiniband/mlx5_0/ports/1/state']
    assert bundle.text(tree, 'sys/class/infiniband/mlx5_0/ports/1/state') == '1: DOWN\n'
    assert bundle.text(tree, 'sys/class/infiniband/mlx5_0/ports/1/phys_state') == text + '\n'
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    port = after['nics'][0]['ports'][0]
    assert (port['state'], port['phys_state'], port['rate_gbps']) == ('DOWN', phys, 400)
    assert after['nics'][1:] == before['nics'][1:]


def test_ib_port_down_named_nic_and_roce():
    _base, tree, _changed = _apply(A100, 'ib_port_down', nic='mlx5_7')
    assert bundle.text(tree, 'sys/class/infiniband/mlx5_7/ports/1/state') == '1: DOWN\n'
    _base, tree, changed = _apply(PCIE, 'ib_port_down')
    assert bundle.text(tree, 'sys/class/infiniband/rocep1s0f0/ports/1/state') == '1: DOWN\n'
    # the RoCE NIC's Ethernet netdev goes down with its port
    netdev = 'sys/bus/pci/devices/0000:01:00.0/net/enp1s0f0np0/operstate'
    assert bundle.text(tree, netdev) == 'down\n' and netdev in changed
    with pytest.raises(faults.FaultError):
        _apply(H100, 'ib_port_down', nic='mlx5_99')


def test_ecc_uncorrectable_ampere_and_later(tmp_path):
    base, tree, changed = _apply(H100, 'ecc_uncorrectable', gpu=6, count=2)
    assert changed == ['nvidia-smi-q-x.xml']
    before, after = _gather(base, tmp_path, 'a'), _gather(tree, tmp_path, 'b')
    gpu = after['gpus'][6]
    assert (gpu['ecc_uncorrected_volatile'], gpu['ecc_uncorrected_aggregate']) == (2, 2)
    assert gpu['remapped_rows_pending'] is True and gpu['remapped_rows_uncorrectable'] == 2
    assert gpu['remapping_failure'] is False
    assert [g for i, g in enumerate(after['gpus']) if i != 6] == [g for i, g in enumerate(before['gpus']) if i != 6]


def test_ecc_uncorrectable_pascal_retires_pages(tmp_path):
    _base, tree, _changed = _apply(PCIE, 'ecc_uncorrectable')
    gpu = _gather(tree, tmp_path, 'b')['gpus'][1]
    assert (gpu['ecc_uncorrected_volatile'], gpu['ecc_uncorrected_aggregate']) == (1, 1)
    assert gpu['retired_pages_pending'] is True and gpu['remapped_rows_pending'] is None


def test_mig_unexpected(tmp_path):
    base, tree, changed = _apply(A100, 'mig_unexpected', gpu=5)
    assert changed == ['nvidia-smi-mig-lgi.txt', 'nvidia-smi-mig-lgi.txt.rc', 'nvidia-smi-q-x.xml']
    after = _gather(tree, tmp_path, 'b')
    assert [g['mig_mode'] for g in after['gpus']] == ['Disabled'] * 5 + ['Enabled'] + ['Disabled'] * 2
    assert after['mig'] == {'instances': {}, 'unreadable': None}
    assert after['gpus'][5]['mig_mode_pending'] == 'Enabled'
    with pytest.raises(faults.FaultError):
        _apply(PCIE, 'mig_unexpected')


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_driver_not_loaded(tmp_path, name):
    base, tree, changed = _apply(name, 'driver_not_loaded')
    outputs = (nvidia_smi.XML_FILE, nvidia_smi.TOPO_FILE, nvidia_smi.NVLINK_FILE)
    assert changed == sorted(list(outputs) + [o + '.rc' for o in outputs])
    text = real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt')
    for name_ in outputs:
        assert bundle.text(tree, name_) == text and bundle.text(tree, name_ + '.rc') == '9\n'
    facts = _gather(tree, tmp_path, 'b')
    assert facts['driver_loaded'] is False and facts['driver_error']['kind'] == 'driver_not_loaded'
    assert facts['driver_error']['rc'] == 9
    assert len(facts['nics']) == len(_gather(base, tmp_path, 'a')['nics'])
    with pytest.raises(faults.FaultError):
        faults.FAULTS['mig_unexpected'].apply(tree)


def test_unknown_parameter_and_bad_gpu():
    with pytest.raises(faults.FaultError):
        _apply(H100, 'gpu_missing', gpu=8)
    with pytest.raises(faults.FaultError):
        _apply(H100, 'gpu_missing', index=1)


def test_cli(tmp_path, capsys):
    out = str(tmp_path / 'o')
    assert faults.main(['apply', 'pcie_downtrained', profile_path(H100), out, '--param', 'gpu=0', '--param', 'width=4']) == 0
    assert 'pcie_downtrained' in capsys.readouterr().out
    assert bundle.load_yaml(open(os.path.join(out, 'profile.yml')).read())['faults'][0]['params'] == {'gpu': 0, 'width': 4}
    assert faults.main(['apply', 'nvlink_down', profile_path(PCIE), out]) == 1
    assert faults.main(['list']) == 0
    assert faults.parse_spec('nvlink_down:gpu=3,links=1,2') == ('nvlink_down', {'gpu': 3, 'links': '1,2'})
