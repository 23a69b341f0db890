# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.node.sysfs import (
    parse_link_speed, parse_port_state, parse_rate, read_infiniband, read_numa_nodes, read_pci_device,
    sysfs_pci_address)
from real_captures import extract_ttar, real_path
from transforms import invalid_utf8
import shutil


def test_value_parsers():
    assert parse_port_state('4: ACTIVE') == 'ACTIVE'
    assert parse_port_state('5: LinkUp\n') == 'LinkUp'
    assert parse_rate('400 Gb/sec (4X NDR)') == 400
    assert parse_rate('2.5 Gb/sec (1X SDR)') == 2.5
    assert parse_link_speed('32.0 GT/s PCIe') == 5
    assert parse_link_speed('8.0 GT/s PCIe') == 3
    assert parse_link_speed('Unknown') is None
    assert sysfs_pci_address('00000000:19:00.0') == '0000:19:00.0'
    assert sysfs_pci_address('00000000:AC:00.0') == '0000:ac:00.0'
    with pytest.raises(ParseError) as err:
        parse_rate('fast')
    assert "'fast'" in str(err.value)
    with pytest.raises(ParseError):
        parse_port_state('ACTIVE')


def test_gpud_h100_partial_tree(tmp_path):
    root = tmp_path / 'sys'
    shutil.copytree(real_path('ib-sysfs/gpud-sys-class-infiniband-h100.0'), str(root / 'class' / 'infiniband'))
    result = read_infiniband(str(root))
    names = [n['name'] for n in result['nics']]
    assert names == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_6', 'mlx5_7', 'mlx5_bond_0']
    mlx5_0 = result['nics'][0]['ports'][0]
    assert (mlx5_0['port'], mlx5_0['state'], mlx5_0['rate_gbps']) == (1, 'ACTIVE', 400)
    assert result['nics'][3]['ports'][0]['phys_state'] == 'LinkUp'
    assert result['nics'][5]['ports'][0]['link_layer'] == 'Ethernet'
    # files absent from the partial copy are named, not guessed
    assert any('mlx5_0/ports/1/link_layer is absent' in w for w in result['warnings'])


def test_procfs_ttar_connectx3_two_ports(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'), str(tmp_path))
    result = read_infiniband(str(tmp_path))
    nic = result['nics'][0]
    assert nic['name'] == 'mlx4_0'
    assert [p['port'] for p in nic['ports']] == [1, 2]
    assert all(p['state'] == 'ACTIVE' and p['rate_gbps'] == 40 and p['link_layer'] == 'InfiniBand'
               for p in nic['ports'])


def test_procfs_ttar_connectx4(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx5_0-connectx4-ib-counters-hw_counters.ttar'), str(tmp_path))
    port = read_infiniband(str(tmp_path))['nics'][0]['ports'][0]
    assert port['rate_gbps'] == 25
    # the curated fixture holds "4: ACTIVE" in phys_state; read as printed
    assert port['phys_state'] == 'ACTIVE'


def test_pci_device(tmp_path):
    base = tmp_path / 'bus' / 'pci' / 'devices' / '0000:19:00.0'
    base.mkdir(parents=True)
    for name, value in (('current_link_speed', '16.0 GT/s PCIe\n'), ('max_link_speed', '32.0 GT/s PCIe\n'),
                        ('current_link_width', '8\n'), ('max_link_width', '16\n'), ('numa_node', '1\n')):
        (base / name).write_text(value)
    assert read_pci_device(str(tmp_path), '00000000:19:00.0') == {
        'address': '0000:19:00.0', 'numa_node': 1, 'gen_current': 4, 'gen_max': 5,
        'width_current': 8, 'width_max': 16}
    assert read_pci_device(str(tmp_path), '00000000:1a:00.0') is None
    assert read_infiniband(str(tmp_path)) is None
    assert os.path.isdir(str(base))


def test_hca_address_from_link_or_uevent(tmp_path):
    pci = tmp_path / 'bus' / 'pci' / 'devices' / '0000:18:00.0'
    pci.mkdir(parents=True)
    (pci / 'numa_node').write_text('0\n')
    linked = tmp_path / 'class' / 'infiniband' / 'mlx5_0'
    linked.mkdir(parents=True)
    os.symlink('../../../bus/pci/devices/0000:18:00.0', str(linked / 'device'))
    copied = tmp_path / 'class' / 'infiniband' / 'mlx5_1' / 'device'
    copied.mkdir(parents=True)
    (copied / 'uevent').write_text('DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:29:00.0\n')
    (copied / 'numa_node').write_text('1\n')
    nics = read_infiniband(str(tmp_path))['nics']
    assert [(n['name'], n['pci_bus_id'], n['numa_node']) for n in nics] == [
        ('mlx5_0', '0000:18:00.0', 0), ('mlx5_1', '0000:29:00.0', 1)]


def test_port_error_counters(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'), str(tmp_path))
    ports = read_infiniband(str(tmp_path))['nics'][0]['ports']
    assert ports[0]['counters']['link_downed'] == 0
    assert ports[0]['counters']['symbol_error'] == 0
    assert set(ports[0]['counters']) >= {'link_downed', 'link_error_recovery', 'port_rcv_errors',
                                         'local_link_integrity_errors', 'excessive_buffer_overrun_errors'}


def test_numa_cpulists_and_netdevs(tmp_path):
    for node, cpus in ((0, '0-47,96-143\n'), (1, '48-95,144-191\n')):
        path = tmp_path / 'devices' / 'system' / 'node' / ('node%d' % node)
        path.mkdir(parents=True)
        (path / 'cpulist').write_text(cpus)
    (tmp_path / 'devices' / 'system' / 'node' / 'possible').write_text('0-1\n')
    assert read_numa_nodes(str(tmp_path)) == {'0': '0-47,96-143', '1': '48-95,144-191'}
    device = tmp_path / 'class' / 'infiniband' / 'mlx5_0' / 'device'
    (device / 'net' / 'ibp24s0').mkdir(parents=True)
    assert read_infiniband(str(tmp_path))['nics'][0]['netdevs'] == ['ibp24s0']
    assert read_numa_nodes(str(tmp_path / 'nothing')) is None


def test_unparsable_pci_values_are_warnings(tmp_path):
    base = tmp_path / 'bus' / 'pci' / 'devices' / '0000:19:00.0'
    base.mkdir(parents=True)
    for name, value in (('current_link_speed', '16.0 GT/s PCIe\n'), ('max_link_speed', 'fast\n'),
                        ('current_link_width', 'x16\n'), ('max_link_width', '16\n'), ('numa_node', '1\n')):
        (base / name).write_text(value)
    warnings = []
    pci = read_pci_device(str(tmp_path), '00000000:19:00.0', warnings)
    assert (pci['gen_max'], pci['width_current'], pci['gen_current']) == (None, None, 4)
    assert len(warnings) == 2
    assert "max_link_speed" in warnings[0] and "'fast'" in warnings[0]
    assert "current_link_width" in warnings[1] and "'x16'" in warnings[1]


def test_non_utf8_sysfs_file_is_decoded_and_named(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'), str(tmp_path))
    rate = tmp_path / 'class' / 'infiniband' / 'mlx4_0' / 'ports' / '1' / 'rate'
    rate.write_bytes(invalid_utf8(rate.read_bytes(), after=b'Gb/sec'))   # transform: two invalid bytes
    result = read_infiniband(str(tmp_path))
    assert result['nics'][0]['ports'][0]['rate_gbps'] == 40
    assert any('ports/1/rate: not valid UTF-8' in w for w in result['warnings'])


def test_symlink_loop_and_dangling_hca_are_warnings(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'), str(tmp_path))
    ports = tmp_path / 'class' / 'infiniband' / 'mlx4_0' / 'ports' / '1'
    (ports / 'state').unlink()
    os.symlink('state', str(ports / 'state'))                              # transform: a symlink loop
    os.symlink('nowhere', str(tmp_path / 'class' / 'infiniband' / 'mlx5_9'))
    result = read_infiniband(str(tmp_path))
    assert result['nics'][0]['ports'][0]['state'] is None
    assert any('ports/1/state is a symlink loop' in w for w in result['warnings'])
    assert any('class/infiniband/mlx5_9 is a dangling link or a symlink loop' in w for w in result['warnings'])


def test_lower_case_state_is_read_upper_case(tmp_path):
    extract_ttar(real_path('ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'), str(tmp_path))
    state = tmp_path / 'class' / 'infiniband' / 'mlx4_0' / 'ports' / '1' / 'state'
    state.write_text(state.read_text().lower())                             # transform: "4: active"
    assert read_infiniband(str(tmp_path))['nics'][0]['ports'][0]['state'] == 'ACTIVE'
