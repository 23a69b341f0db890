# -*- coding: utf-8 -*-
"""Profiles derived from a node: from every simulator profile (derived from real captures) and from the real
captures themselves, each passes its own node, and each fault of the simulator, applied to the node, fails it with
exactly the checks the faults scenario expects."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import glob
import os

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.module_utils.topology import profile as topology_profile
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import BY_KEY, check_profile, validate_profile
from real_captures import REAL, make_bundle
from transforms import xml_value

from simhelpers import PROFILE_NAMES, gather_tree, profile_tree  # noqa: E402  pylint: disable=wrong-import-position
from simulator import faults  # noqa: E402  pylint: disable=wrong-import-position
from repo_paths import REPO

H100 = 'h100-sxm-8gpu-ib'
OPTION_SETS = [{}, {'nic_names': 'glob', 'gpu_model': 'family'}, {'driver_version': 'exact'},
               {'driver_version': 'none'}]


_tree = profile_tree
_gather = gather_tree


@pytest.mark.parametrize('options', OPTION_SETS, ids=lambda o: ','.join('%s=%s' % kv for kv in sorted(o.items())))
@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_simulated_node_passes_the_profile_derived_from_it(name, options, tmp_path):
    topology = _gather(_tree(name), tmp_path, name)
    derived = topology_profile.derive(topology, options)
    assert validate_profile(derived['profile']) == []
    assert derived['failures'] == [] == check_profile(topology, derived['profile'])
    assert set(derived['profile']) == set(derived['notes'])
    assert not set(derived['profile']) & set(derived['left_out'])
    # every key of the table is either written or said why not (mig_devices only matters with MIG on)
    assert set(derived['profile']) | set(derived['left_out']) | {'mig_devices'} == set(BY_KEY)
    text = topology_profile.document('class_x', derived, ['node-1'], '2026-12-01 07:00 UTC')
    loaded = yaml.safe_load(text)
    assert loaded['gpuops_node_class'] == 'class_x'
    assert loaded['gpuops_node_class_profile'] == dict(derived['profile'])
    assert all(len(line) <= 120 for line in text.splitlines())


def test_derived_values_of_the_h100_node(tmp_path):
    derived = topology_profile.derive(_gather(_tree(H100), tmp_path, 'h100'))['profile']
    assert (derived['gpu_count'], derived['gpu_model']) == (8, 'NVIDIA H100 80GB HBM3')
    assert derived['driver_version'] == '545.*'
    assert (derived['nvlink_relation'], derived['nvlink_active_links'], derived['pcie_gen_min']) == ('NV18', 18, 5)
    # the compute rails: the NICs PIX to a GPU; the storage ports (PIX only to each other) are left out
    assert derived['nic_names'] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_11']
    assert (derived['nic_count'], derived['nic_link_layer'], derived['nic_rate_min_gbps']) == (8, 'InfiniBand', 400)
    assert derived['gpu_nic_relation_max'] == 'PIX'
    globbed = topology_profile.derive(_gather(_tree(H100), tmp_path, 'h100-glob'), {'nic_names': 'glob', 'gpu_model': 'family'})
    assert globbed['profile']['nic_names'] == ['mlx5_[0-25-8]', 'mlx5_11']
    assert globbed['profile']['gpu_model'] == 'NVIDIA H100[ -]*'


@pytest.mark.parametrize('names,others,globs', [
    (['mlx5_0', 'mlx5_1'], [], ['mlx5_*']),
    (['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9'],
     ['mlx5_4', 'mlx5_5', 'mlx5_10', 'mlx5_11'], ['mlx5_[0-36-9]']),
    (['ibp12s0', 'ibp75s0'], ['mlx5_bond_0'], ['ibp*']),
    (['mlx5_0', 'mlx5_10'], ['mlx5_1'], ['mlx5_0', 'mlx5_10']),
    (['a', 'b'], ['c'], ['a', 'b']),
    (['odd[1]'], ['odd1'], ['odd[[]1[]]*']),
])
def test_nic_globs_match_the_compute_nics_only(names, others, globs):
    import fnmatch
    assert topology_profile.nic_globs(names, others) == globs
    assert all(any(fnmatch.fnmatchcase(n, g) for g in globs) for n in names)
    assert not any(fnmatch.fnmatchcase(o, g) for g in globs for o in others)


@pytest.mark.parametrize('name,family', [
    ('NVIDIA H100 80GB HBM3', 'NVIDIA H100'), ('NVIDIA A100-SXM4-40GB', 'NVIDIA A100'),
    ('Tesla P100-PCIE-16GB', 'Tesla P100'), ('NVIDIA GeForce RTX 5060 Ti', 'NVIDIA GeForce RTX 5060'),
    ('NVIDIA L40S', 'NVIDIA L40S'),
])
def test_gpu_family(name, family):
    assert topology_profile.gpu_family(name) == family


# ---------------------------------------------------------------- real captures

def _real_bundles():
    for rel in sorted(glob.glob(os.path.join(REAL, 'nvsmi-xml', '*.xml')) +
                      glob.glob(os.path.join(REAL, 'nvsmi-q-xml', '*.xml'))):
        yield 'xml', os.path.relpath(rel, REAL)
    for rel in sorted(glob.glob(os.path.join(REAL, 'topo', '*.txt'))):
        yield 'topo', os.path.relpath(rel, REAL)


@pytest.mark.parametrize('kind,rel', list(_real_bundles()), ids=lambda v: os.path.basename(str(v)))
def test_real_capture_gives_a_profile_or_says_why_not(kind, rel, tmp_path):
    """A bundle of one real capture: the profile holds only what the capture shows, and a capture that cannot
    prove its NICs (topo names NICs, no sysfs) fails its own profile with a ``not checked``, never a pass."""
    topology = gather_bundle(make_bundle(str(tmp_path / 'b'), **{kind: rel}))
    if 'CORRUPTED' in rel:
        with pytest.raises(topology_profile.ProfileError, match='line 7 cell GPU5/NIC7'):
            topology_profile.derive(topology)
        return
    derived = topology_profile.derive(topology)
    assert validate_profile(derived['profile']) == []
    assert derived['profile']['gpu_count'] == topology['gpu_count']
    names_nics = any(not n.startswith('GPU') for n in (topology.get('matrix') or {}).get('GPU0', {}))
    if kind == 'topo' and names_nics:
        assert [(f['check'], f['actual']) for f in derived['failures']] == [('nic_missing', 'not checked')]
    else:
        assert derived['failures'] == []
    if kind == 'xml':
        assert 'gpu_model' in derived['profile'] and 'driver_version' in derived['profile']
    else:
        assert 'gpu_model' not in derived['profile'] and 'gpu_model' in derived['left_out']


def test_real_pcie_node_has_no_nvlink_relation(tmp_path):
    topology = gather_bundle(make_bundle(str(tmp_path / 'b'), topo='topo/dgx1-v100-8gpu-4nic-topo-mp.txt'))
    derived = topology_profile.derive(topology)
    assert 'nvlink_relation' not in derived['profile']
    assert derived['left_out']['nvlink_relation'] == 'no NVLink between the GPUs (PHB, PIX, SYS)'


def test_gpu_pairs_of_several_nvlink_relations_give_none(tmp_path):
    """A hybrid mesh (DGX-1: NV1, NV2 and SYS pairs) has no one relation for every pair: left out, said why
    (nvlink_active_links still catches a GPU that lost links). Transform: two cells of the H100 matrix rewritten."""
    tree = _tree(H100)
    topo = 'nvidia-smi-topo-m.txt'
    lines = tree[topo].decode('utf-8').split('\n')
    for number, line in enumerate(lines):
        if line.startswith('GPU0\t') or line.startswith('GPU1\t'):
            cells = line.split('\t')
            cells[2 if line.startswith('GPU0') else 1] = 'NV12'
            lines[number] = '\t'.join(cells)
    tree[topo] = '\n'.join(lines).encode('utf-8')
    derived = topology_profile.derive(_gather(tree, tmp_path, 'mesh'))
    assert derived['left_out']['nvlink_relation'] == 'the GPU pairs differ (NV12, NV18): no one relation holds for ' \
        'every pair'
    assert derived['failures'] == []


def test_real_a100_in_mig_mode_without_instances_leaves_mig_devices_out(tmp_path):
    topology = gather_bundle(make_bundle(str(tmp_path / 'b'), xml='nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml'))
    derived = topology_profile.derive(topology)
    assert derived['profile']['mig_mode'] == 'Enabled'
    assert 'mig_devices' in derived['left_out']


def test_a_gpu_unlike_the_others_fails_the_node_not_the_class(tmp_path):
    """One GPU of eight in another persistence mode: the class takes the seven, the node fails on the one."""
    tree = _tree(H100)
    xml = 'nvidia-smi-q-x.xml'
    tree[xml] = xml_value(tree[xml].decode('utf-8'), 'persistence_mode', 'Disabled', occurrence=3).encode('utf-8')
    derived = topology_profile.derive(_gather(tree, tmp_path, 'odd'))
    assert derived['profile']['persistence_mode'] == 'Enabled'
    assert [(f['check'], f['subject']) for f in derived['failures']] == [('persistence_mode', 'GPU3')]


def test_mixed_compute_modes_are_kept_per_gpu(tmp_path):
    tree = _tree(H100)
    xml = 'nvidia-smi-q-x.xml'
    for gpu in (0, 1):
        tree[xml] = xml_value(tree[xml].decode('utf-8'), 'compute_mode', 'Exclusive_Process', occurrence=gpu).encode(
            'utf-8')
    derived = topology_profile.derive(_gather(tree, tmp_path, 'mps'))
    assert derived['profile']['compute_mode'] == {0: 'Exclusive_Process', 1: 'Exclusive_Process', '*': 'Default'}
    assert derived['failures'] == []
    assert yaml.safe_load(topology_profile.document('c', derived, ['n'], 'now'))['gpuops_node_class_profile']['compute_mode'] == \
        {0: 'Exclusive_Process', 1: 'Exclusive_Process', '*': 'Default'}


# ---------------------------------------------------------------- every fault fails the derived profile

def _expected_fault_checks():
    with open(os.path.join(REPO, 'molecule', 'faults', 'vars', 'expected_failures.yml')) as handle:
        expected = yaml.safe_load(handle)['gpuops_molecule_fault_checks']
    with open(os.path.join(REPO, 'molecule', 'faults', 'molecule.yml')) as handle:
        scenario = yaml.safe_load(handle)
    specs = [f for group in scenario['provisioner']['inventory']['host_vars'].values()
             for f in group.get('gpuops_sim_faults') or []]
    return [(spec, expected[spec.split(':')[0]]) for spec in specs]


@pytest.mark.parametrize('spec,checks', _expected_fault_checks(), ids=lambda v: str(v).split(':', maxsplit=1)[0])
def test_each_fault_fails_the_profile_derived_from_the_healthy_node(spec, checks, tmp_path):
    """The faults scenario's faults, with its reviewed expectations, against the profile derived from the healthy
    H100 node instead of the hand-written one."""
    healthy = _tree(H100)
    derived = topology_profile.derive(_gather(healthy, tmp_path, 'healthy'))['profile']
    name, _sep, params = spec.partition(':')
    kwargs = dict(p.split('=', 1) for p in params.split(',') if p)
    tree = copy.deepcopy(healthy)
    faults.FAULTS[name].apply(tree, **kwargs)
    failures = check_profile(_gather(tree, tmp_path, 'faulty'), derived)
    found = {}
    for failure in failures:
        found.setdefault(failure['check'], []).append(failure['subject'])
    assert found == checks


def test_differences_name_the_keys_and_each_hosts_value(tmp_path):
    healthy = topology_profile.derive(_gather(_tree(H100), tmp_path, 'a'))['profile']
    hdr = dict(healthy, nic_rate_min_gbps=200)
    del hdr['nic_ipoib']
    assert topology_profile.differences({'gpu-a01': healthy, 'gpu-a02': healthy}) == {}
    assert topology_profile.differences({'gpu-a01': healthy, 'gpu-a02': hdr}) == {
        'nic_rate_min_gbps': {'gpu-a01': 400, 'gpu-a02': 200},
        'nic_ipoib': {'gpu-a01': False, 'gpu-a02': None}}
    assert list(topology_profile.differences({'a': {'numa_balance': True, 'gpu_count': 8}, 'b': {'gpu_count': 4}})) == \
        ['gpu_count', 'numa_balance']


def test_bad_options_and_a_node_without_driver_are_refused(tmp_path):
    topology = _gather(_tree(H100), tmp_path, 'h100')
    with pytest.raises(ValueError, match='option nic_names must be one of exact, glob'):
        topology_profile.derive(topology, {'nic_names': 'all'})
    with pytest.raises(ValueError, match='unknown option colour'):
        topology_profile.derive(topology, {'colour': 'red'})
    tree = copy.deepcopy(_tree(H100))
    faults.FAULTS['driver_not_loaded'].apply(tree)
    with pytest.raises(topology_profile.ProfileError, match="couldn't communicate with the NVIDIA driver"):
        topology_profile.derive(_gather(tree, tmp_path, 'nodriver'))


# ---------------------------------------------------------------- transforms of the facts (documented in each test)

def _h100_facts(tmp_path, label='h100'):
    return _gather(_tree(H100), tmp_path, label)


def test_a_node_that_lost_a_rail_is_refused_not_widened_to_storage_nics(tmp_path):
    """Transform: mlx5_5 (GPU3's rail) removed from sysfs and from every row of the matrix, as when its HCA is gone
    from the bus. GPU3's closest NIC is then farther than the others' (PIX): the class keeps the seven rails at PIX,
    and GPU3 fails gpu_nic_relation instead of pulling the storage ports into nic_names."""
    topology = _h100_facts(tmp_path)
    gpu3 = [g for g, row in topology['matrix'].items() if row.get('mlx5_5') == 'PIX' and g.startswith('GPU')]
    topology['nics'] = [n for n in topology['nics'] if n['name'] != 'mlx5_5']
    for row in topology['matrix'].values():
        row.pop('mlx5_5', None)
    topology['matrix'].pop('mlx5_5', None)
    derived = topology_profile.derive(topology)
    assert derived['profile']['nic_names'] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_11']
    assert derived['profile']['gpu_nic_relation_max'] == 'PIX'
    assert [(f['check'], f['subject']) for f in derived['failures']] == [('gpu_nic_relation', gpu3[0])]


def test_an_unused_second_port_does_not_make_the_class_down(tmp_path):
    """Transform: every compute rail given a second port, DOWN (a dual-port card with one port cabled). The class
    wants ACTIVE and the node is refused naming each DOWN port, instead of a class that wants DOWN ports."""
    topology = _h100_facts(tmp_path)
    for nic in topology['nics']:
        port = copy.deepcopy(nic['ports'][0])
        port.update(port=2, state='DOWN', phys_state='Disabled')
        nic['ports'].append(port)
    derived = topology_profile.derive(topology)
    assert derived['profile']['nic_port_state'] == 'ACTIVE'
    assert sorted(set(f['subject'] for f in derived['failures'] if f['check'] == 'nic_port_state')) == sorted(
        '%s/2' % n for n in derived['profile']['nic_names'])


def test_a_gpu_whose_mig_mode_cannot_be_read_is_not_passed_by_mig_devices(tmp_path):
    """Transform: MIG on GPUs 0-6 with seven 1g.10gb each (one compute instance each), GPU7's MIG mode N/A."""
    topology = _h100_facts(tmp_path)
    instances = {}
    for gpu in topology['gpus']:
        if gpu['index'] == 7:
            gpu['mig_mode'] = None
            continue
        gpu['mig_mode'] = gpu['mig_mode_pending'] = 'Enabled'
        instances[str(gpu['index'])] = [{'name': '1g.10gb', 'id': 7 + i} for i in range(7)]
        gpu['mig_devices'] = 7
        gpu['mig_device_gpu_instances'] = [7 + i for i in range(7)]
    topology['mig'] = {'instances': instances, 'unreadable': None}
    derived = topology_profile.derive(topology)
    assert derived['profile']['mig_mode'] == 'Enabled'
    assert derived['profile']['mig_devices'] == [{'devices': [0, 1, 2, 3, 4, 5, 6], 'mig-enabled': True,
                                                  'mig-devices': {'1g.10gb': 7}}]
    assert [(f['check'], f['subject'], f['actual']) for f in derived['failures']] == [
        ('mig_mode', 'GPU7', 'not checked')]


@pytest.mark.parametrize('name,others', [
    ('NVIDIA A100-SXM4-40GB', ['NVIDIA A10', 'NVIDIA A100X', 'NVIDIA A1000']),
    ('NVIDIA L4', ['NVIDIA L40S', 'NVIDIA L40']),
    ('Tesla T4', ['Tesla T40']),
])
def test_a_model_family_glob_matches_no_other_model(name, others, tmp_path):
    import fnmatch
    topology = _h100_facts(tmp_path)
    for gpu in topology['gpus']:
        gpu['name'] = name
    glob_ = topology_profile.derive(topology, {'gpu_model': 'family'})['profile']['gpu_model']
    assert fnmatch.fnmatchcase(name, glob_)
    assert not [o for o in others if fnmatch.fnmatchcase(o, glob_)]


def test_file_state_tells_ours_edited_and_foreign(tmp_path):
    derived = topology_profile.derive(_h100_facts(tmp_path))
    text = topology_profile.document('dgx_h100', derived, ['gpu-a01'], '2026-12-01')
    assert topology_profile.file_state(text) == 'ours'
    assert topology_profile.file_state(text.replace('nic_count: 8', 'nic_count: 7')) == 'edited'
    assert topology_profile.file_state(text + '  nic_link_downed_max: 5\n') == 'edited'
    assert topology_profile.file_state(text.replace('# Node class', '# node class')) == 'ours'     # the header is free text
    assert topology_profile.file_state('gpuops_node_class: dgx_h100\ngpuops_node_class_profile: {gpu_count: 8}\n') == 'foreign'
    assert topology_profile.file_state('nccl_test_min_busbw_gbps: 400\n') == 'foreign'


def test_next_boot_driver_is_derived_only_from_a_ready_next_kernel(tmp_path):
    topology = _gather(_tree(H100), tmp_path, H100)
    assert 'next_boot_driver' in topology_profile.derive(topology)['left_out']
    topology['driver_installed_version'] = topology['driver_version']     # a bundle says none is installed
    topology['next_boot'] = {'kernel': '6.8.0-90-generic', 'running': '6.8.0-88-generic', 'headers': True,
                             'module': 'kernel/nvidia-580srv/nvidia.ko',
                             'module_version': topology['driver_version'], 'unreadable': None}
    derived = topology_profile.derive(topology)
    assert derived['profile']['next_boot_driver'] is True and derived['failures'] == []
    topology['next_boot'] = dict(topology['next_boot'], module=None, module_version=None, headers=False)
    assert 'has no NVIDIA module' in topology_profile.derive(topology)['left_out']['next_boot_driver']
