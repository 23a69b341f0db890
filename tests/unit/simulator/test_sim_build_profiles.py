# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The committed profiles are exactly what the derivation produces from the real captures."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import fnmatch
import hashlib
import os
import re

import pytest
import yaml

from simhelpers import PROFILE_NAMES, REPO, profile_path, real_text

from simulator import build_profiles
from simulator import bundle
from simulator import nvidia_smi

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import check_profile, validate_profile


@pytest.fixture(scope='module')
def built():
    return build_profiles.build_all()


def test_derivation_is_reproducible(built):
    assert sorted(built) == sorted(PROFILE_NAMES)
    for name, tree in built.items():
        assert build_profiles.compare(bundle.pack(tree), bundle.read_tree(profile_path(name))) == [], (
            '%s differs from a fresh derivation: run python3 -m simulator.build_profiles' % name)


def test_derivation_is_deterministic():
    assert build_profiles.build_all() == build_profiles.build_all()


def test_check_mode(capsys):
    assert build_profiles.main(['--check']) == 0


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_profile_yml(name):
    with open(os.path.join(profile_path(name), 'profile.yml')) as handle:
        source = handle.read()
    meta = yaml.safe_load(source)
    assert meta == bundle.load_yaml(source)
    assert bundle.dump_yaml(meta, build_profiles.HEADER) == source
    assert meta['name'] == name and meta['node_class'] and meta['description']
    assert meta['faults'] == [] and meta['dcgm'] == {}
    assert meta['counts']['gpus'] == len(meta['gpus'])
    for entry in meta['derived_from']:
        path = os.path.join(REPO, entry['path'])
        assert entry['path'].startswith('tests/fixtures/real/') and os.path.exists(path)
        assert os.path.exists(os.path.splitext(path)[0] + '.source') or os.path.exists(path + '.source')
        assert entry['sha256'] == build_profiles.sha256(entry['path']), 'real capture changed: %s' % entry['path']
        assert entry['took']


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_collection_gatherer_reads_each_profile_cleanly(name, tmp_path):
    meta = bundle.load_yaml(open(os.path.join(profile_path(name), 'profile.yml')).read())
    bundle_dir = str(tmp_path / 'bundle')
    bundle.write_tree(bundle.read_profile(profile_path(name)), bundle_dir)
    facts = gather_bundle(bundle_dir)
    assert facts['driver_loaded'] is True and facts['driver_error'] is None
    assert facts['missing'] == [] and facts['errors'] == [] and facts['warnings'] == []
    assert facts['gpu_count'] == meta['counts']['gpus']
    assert [g['uuid'] for g in facts['gpus']] == [g['uuid'] for g in meta['gpus']]
    assert len(set(g['pci_bus_id'] for g in facts['gpus'])) == meta['counts']['gpus']
    assert len(set(g['serial'] for g in facts['gpus'])) == meta['counts']['gpus']
    assert all(g['nvlink_active'] == g['nvlink_total'] == meta['counts']['nvlinks_per_gpu'] for g in facts['gpus'])
    assert len(facts['nics']) == meta['counts']['nics']
    for nic in facts['nics']:
        port = nic['ports'][0]
        expected = [n for n in meta['nics'] if n['name'] == nic['name']][0]
        assert (port['state'], port['phys_state'], port['link_layer']) == ('ACTIVE', 'LinkUp', expected['link_layer'])
        assert nic['pci_bus_id'] == expected['pci']
    for gpu in facts['gpus']:
        assert gpu['pcie']['gen_current'] == gpu['pcie']['gen_max'] and gpu['pcie']['width_current'] == 16
        assert gpu['numa_node'] == max(0, [g for g in meta['gpus'] if g['uuid'] == gpu['uuid']][0]['numa_node'])
    expected = meta['expected_node_class']
    assert fnmatch.fnmatchcase(facts['gpus'][0]['name'], expected['gpu_model'])
    compute = [n for n in facts['nics'] if n['name'] in (expected.get('nic_names') or [n['name'] for n in facts['nics']])]
    assert len(compute) == expected['nic_count']
    assert all(n['ports'][0]['rate_gbps'] >= expected['nic_rate_min_gbps'] for n in compute)


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_healthy_profile_meets_its_expected_node_class(name, tmp_path):
    """expected_node_class is a valid gpu_topology_check profile that the healthy profile passes (make demo uses it)."""
    meta = bundle.load_yaml(open(os.path.join(profile_path(name), 'profile.yml')).read())
    expected = meta['expected_node_class']
    assert validate_profile(expected) == []
    bundle_dir = str(tmp_path / 'bundle')
    bundle.write_tree(bundle.read_profile(profile_path(name)), bundle_dir)
    assert check_profile(gather_bundle(bundle_dir), expected) == []


def test_h100_gpu_values_come_from_the_real_q_capture():
    q = build_profiles.parse_q_text(real_text('nvsmi-q/h100-sxm5-80gb-della-j11g1-nvsmi-a.txt'))
    doc = nvidia_smi.XmlDoc(open(os.path.join(profile_path('h100-sxm-8gpu-ib'), nvidia_smi.XML_FILE)).read())
    identity = ('serial', 'uuid', 'minor_number', 'board_id', 'gpu_module_id', 'pci/pci_bus', 'pci/pci_bus_id')
    for index, block in enumerate(doc.blocks):
        for entry in build_profiles.H100_FROM_Q:
            path, label = entry[0], entry[1]
            value = entry[2](q[label]) if len(entry) > 2 else q[label]
            if index and path in identity:
                continue
            assert nvidia_smi.get_value(block, path) == value, (index, path)
    assert nvidia_smi.get_value(doc.head, 'driver_version') == q['Driver Version']
    assert nvidia_smi.get_value(doc.blocks[0], 'uuid') == q['GPU UUID']
    assert [nvidia_smi.get_value(b, 'pci/pci_bus_id') for b in doc.blocks][0] == q['PCI/Bus Id']


def test_h100_xml_keeps_the_template_structure():
    """Same elements in the same order as the real A100 XML, except the parts the derivation replaces."""
    template = nvidia_smi.XmlDoc(real_text('nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml'))
    ours = nvidia_smi.XmlDoc(open(os.path.join(profile_path('h100-sxm-8gpu-ib'), nvidia_smi.XML_FILE)).read())

    def tags(block):
        for path in ('mig_devices', 'remapped_rows', 'supported_clocks'):
            block = nvidia_smi.replace_element(block, path, '<%s/>' % path)
        return [m.group(1) for m in re.finditer(r'<([a-z_0-9]+)[ />]', block)]
    assert tags(template.blocks[0]) == tags(ours.blocks[0])
    assert ours.head.splitlines()[:3] == template.head.splitlines()[:3]
    assert '<remapped_rows>\n            <remapped_row_corr>0</remapped_row_corr>' in ours.blocks[0]


def test_a100_gpu_elements_are_the_real_one_with_recorded_changes():
    real = nvidia_smi.XmlDoc(real_text('nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml')).blocks[0]
    doc = nvidia_smi.XmlDoc(open(os.path.join(profile_path('a100-sxm-8gpu-ib'), nvidia_smi.XML_FILE)).read())
    base = build_profiles.a100_base_block(real)
    for index, block in enumerate(doc.blocks):
        differing = [(a, b) for a, b in zip(base.splitlines(), block.splitlines()) if a != b]
        changed_tags = set(re.search(r'<([a-z_]+)', a).group(1) for a, _b in differing)
        assert changed_tags <= {'gpu', 'serial', 'uuid', 'minor_number', 'board_id', 'gpu_module_id', 'pci_bus',
                                'pci_device', 'pci_bus_id'}, changed_tags
    assert '<current_mig>Disabled</current_mig>' in doc.blocks[0]
    assert '<remapped_row_pending>No</remapped_row_pending>' in doc.blocks[0]


def test_topologies_keep_the_real_captures():
    assert open(os.path.join(profile_path('h100-sxm-8gpu-ib'), nvidia_smi.TOPO_FILE)).read() == \
        real_text('topo/h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt')
    assert open(os.path.join(profile_path('a100-sxm-8gpu-ib'), nvidia_smi.TOPO_FILE)).read() == \
        real_text('topo/dgx-a100-8gpu-12nic.txt')
    ours = open(os.path.join(profile_path('pcie-4gpu-roce'), nvidia_smi.TOPO_FILE)).read().splitlines()
    real = real_text('topo/rtx5060ti-4gpu-pcie-phb-aisandbox.txt').splitlines()
    for our_row, real_row in zip(ours[:5], real):
        cells = our_row.split('\t')
        del cells[5]
        assert cells == real_row.split('\t')
    assert ours[5] == 'NIC0\tPHB\tPHB\tPHB\tPHB\t X \t\t\t\t'
    assert ours[-1] == '  NIC0: rocep1s0f0'
    h100 = real_text('topo/h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt')
    assert '\n'.join(ours[7:17]) in h100


def test_nvlink_blocks_replicate_the_real_capture():
    real = real_text('nvlink/h100-nvlink-status-i0.txt').splitlines()
    ours = open(os.path.join(profile_path('h100-sxm-8gpu-ib'), nvidia_smi.NVLINK_FILE)).read().splitlines()
    assert len(ours) == 8 * len(real)
    for i in range(8):
        assert ours[i * 19 + 1:(i + 1) * 19] == real[1:]


def test_ib_sysfs_values_come_from_the_real_captures(tmp_path):
    bundle_dir = str(tmp_path / 'bundle')
    bundle.write_tree(bundle.read_profile(profile_path('h100-sxm-8gpu-ib')), bundle_dir)
    base = os.path.join(bundle_dir, 'sys', 'class', 'infiniband')
    gpud = os.path.join(REPO, 'tests', 'fixtures', 'real', 'ib-sysfs', 'gpud-sys-class-infiniband-h100.0')
    with open(os.path.join(gpud, 'mlx5_0', 'ports', '1', 'rate')) as handle:
        rate = handle.read()
    with open(os.path.join(base, 'mlx5_0', 'ports', '1', 'rate')) as handle:
        assert handle.read() == rate + '\n'
    assert os.readlink(os.path.join(base, 'mlx5_0', 'device')) == '../../../bus/pci/devices/0000:18:00.0'
    with open(os.path.join(base, 'mlx5_0', 'device', 'numa_node')) as handle:
        assert handle.read() == '-1\n'
    with open(os.path.join(base, 'mlx5_0', 'device', 'uevent')) as handle:
        assert 'PCI_SLOT_NAME=0000:18:00.0\n' in handle.read()


def test_committed_profiles_are_sanity_clean():
    """No ':' in committed names and no symlinks (ansible-test sanity rules); sysfs lives in sys.ttar."""
    for name in PROFILE_NAMES:
        tree = bundle.read_tree(profile_path(name))
        assert bundle.SYS_ARCHIVE in tree
        assert not any(isinstance(v, bundle.Link) or ':' in rel for rel, v in tree.items())


def test_ttar_round_trip_and_test_extractor(tmp_path):
    from real_captures import extract_ttar
    tree = bundle.read_profile(profile_path('a100-sxm-8gpu-ib'))
    sys_tree = dict((rel[4:], v) for rel, v in tree.items() if rel.startswith('sys/'))
    text = bundle.dump_ttar(sys_tree)
    assert bundle.load_ttar(text) == sys_tree
    archive = tmp_path / 'sys.ttar'
    archive.write_text(text)
    extract_ttar(str(archive), str(tmp_path / 'sys'))
    extracted = bundle.read_tree(str(tmp_path / 'sys'))
    assert extracted == sys_tree
    odd = {'a/b': b'no newline', 'a/c': b'x\n\ny\n'}
    assert bundle.load_ttar(bundle.dump_ttar(odd)) == odd


def test_mig_tables():
    table = open(os.path.join(profile_path('h100-sxm-8gpu-ib'), nvidia_smi.MIG_FILE)).read()
    rows = build_profiles.parse_lgip(real_text('mig/h100-80gb-lgip.txt'))
    assert [p['name'] for p in rows] == [p['name'] for p in __import__('json').loads(table)['NVIDIA H100 80GB HBM3']['profiles']]
    assert nvidia_smi.render_lgip([(0, build_profiles.mig_geometry(r, '79.25'), r['free']) for r in rows]) == real_text('mig/h100-80gb-lgip.txt')


def test_yaml_subset_round_trip():
    value = {'a': 1, 'b': 'two: "quoted"', 'c': [1, 'x', {'d': None, 'e': [], 'f': {}}], 'g': {'h': True},
             'weird key': -1.5, 'l': [[1, 2], []]}
    text = bundle.dump_yaml(value, 'header')
    assert yaml.safe_load(text) == value == bundle.load_yaml(text)


def test_sources_are_python38_syntax():
    for name in sorted(os.listdir(os.path.join(REPO, 'simulator'))):
        if name.endswith('.py'):
            path = os.path.join(REPO, 'simulator', name)
            with open(path) as handle:
                ast.parse(handle.read(), filename=path, feature_version=(3, 8))


def test_real_captures_are_read_only():
    """The derivation only reads tests/fixtures/real (its digests are recorded per profile)."""
    digest = hashlib.sha256()
    real = os.path.join(REPO, 'tests', 'fixtures', 'real')
    before = bundle.read_tree(real)
    build_profiles.build_all()
    assert bundle.read_tree(real) == before
    digest.update(b'ok')
