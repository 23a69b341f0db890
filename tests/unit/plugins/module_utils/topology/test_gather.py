# -*- coding: utf-8 -*-
"""The topology model and the checks, on bundles laid out from real captures.

Fault cases are derived from real snapshots by the transforms below, each named
for the fault it stands for.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os
import shutil

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.baseline import find_regressions
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import check_profile, validate_profile
from real_captures import PROFILES, extract_ttar, make_bundle, real_text

H100 = dict(topo='topo/h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt', nvlink='nvlink/h100-nvlink-status-i0.txt',
            ib_tree='ib-sysfs/gpud-sys-class-infiniband-h100.0')
DGX_A100 = dict(xml='nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml', topo='topo/dgx-a100-8gpu-12nic.txt')


def checks(failures):
    return sorted(set(f['check'] for f in failures))


def drop_gpu(topo, index):
    """Transform: GPU ``index`` fell off the bus (gone from gpus and from the matrix)."""
    topo = copy.deepcopy(topo)
    topo['gpus'] = [g for g in topo['gpus'] if g['index'] != index]
    topo['gpu_count'] = len(topo['gpus'])
    name = 'GPU%d' % index
    topo['matrix'].pop(name, None)
    for row in topo['matrix'].values():
        row.pop(name, None)
    return topo


def port_down(topo, nic):
    """Transform: every port of ``nic`` goes DOWN/Disabled."""
    topo = copy.deepcopy(topo)
    for entry in topo['nics']:
        if entry['name'] == nic:
            for port in entry['ports']:
                port['state'], port['phys_state'] = 'DOWN', 'Disabled'
    return topo


def test_h100_matrix_bundle(bundle):
    topo = gather_bundle(bundle(**H100))
    assert topo['driver_loaded'] is True
    assert topo['gpu_count'] == 8
    assert topo['missing'] == ['nvidia-smi-q-x.xml', 'sys/devices/system/node', 'sys/bus/pci/devices']
    assert topo['gpu_nic_affinity']['GPU3'] == {'relation': 'PIX', 'nics': ['mlx5_5']}
    assert topo['gpu_nic_affinity']['GPU0'] == {'relation': 'PIX', 'nics': ['mlx5_0']}
    assert topo['gpus'][0]['nvlink_active'] == 18
    assert topo['gpus'][1]['nvlink_active'] is None        # nvlink -s capture covers GPU 0 only
    assert topo['gpus'][5]['cpu_affinity'] == '0-191'
    assert topo['gpus'][5]['numa_node'] == 0
    assert [n['name'] for n in topo['nics']] == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_6', 'mlx5_7', 'mlx5_bond_0']
    assert topo['nics'][0]['ports'][0]['rate_gbps'] == 400
    assert any('mlx5_2 is in the topology matrix but not in sysfs' in w for w in topo['warnings'])


def test_dgx_a100_xml_of_one_gpu_and_matrix_of_eight_disagree(bundle):
    # two real captures of different machines: the A100 XML holds one GPU, the DGX A100 matrix eight
    topo = gather_bundle(bundle(**DGX_A100))
    assert topo['driver_version'] == '510.47.03'
    assert topo['gpu_count'] == 8
    assert topo['gpus'][0]['sources'] == ['xml', 'topo'] and topo['gpus'][1]['sources'] == ['topo']
    assert topo['gpus'][0]['numa_node'] == 3
    assert topo['gpus'][0]['cpu_affinity'] == '48-63,176-191'
    assert topo['missing'] == ['nvidia-smi-nvlink-s.txt', 'sys/class/infiniband', 'sys/devices/system/node',
                               'sys/bus/pci/devices', 'sys']
    failures = check_profile(topo, {'gpu_model': 'NVIDIA A100*', 'ecc_mode': 'Enabled', 'nvlink_relation': 'NV12'})
    assert failures[0]['check'] == 'outputs_disagree'
    assert failures[0]['actual'] == {'nvidia-smi-q-x.xml': 1, 'nvidia-smi-topo-m.txt': 8}
    assert failures[0]['message'] == (
        'nvidia-smi-q-x.xml lists 1 (GPU0), nvidia-smi-topo-m.txt lists 8 (GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6, '
        'GPU7): GPU1, GPU2, GPU3, GPU4, GPU5, GPU6, GPU7 is not in nvidia-smi-q-x.xml')
    # GPU1-7 were never read by -q -x: every check from it says so; GPU0 passes; the matrix covers all eight
    # without sysfs nothing says the matrix's NICs exist
    assert (failures[1]['check'], failures[1]['actual']) == ('nic_missing', 'not checked')
    rest = [(f['check'], f['subject'], f['actual']) for f in failures[2:]]
    assert rest == [(check, 'GPU%d' % i, 'not checked') for check in ('gpu_model', 'ecc_mode') for i in range(1, 8)]


def simulated(tmp_path, profile):
    """A bundle of a simulator profile: one node's outputs derived from real captures, with its sysfs tree."""
    dest = str(tmp_path / profile)
    shutil.copytree(os.path.join(PROFILES, profile), dest)
    extract_ttar(os.path.join(dest, 'sys.ttar'), os.path.join(dest, 'sys'))
    return dest


def test_simulated_dgx_a100_passes_its_profile_and_fails_another(tmp_path):
    topo = gather_bundle(simulated(tmp_path, 'a100-sxm-8gpu-ib'))
    assert [o['status'] for o in topo['outputs'].values()] == ['ok', 'ok', 'ok']
    good = {'gpu_count': 8, 'gpu_model': 'NVIDIA A100*', 'driver_version': '510.*', 'pcie_gen_min': 4,
            'pcie_width_min': 16, 'nvlink_relation': 'NV12', 'nvlink_active_links': 12, 'ecc_mode': 'Enabled',
            'compute_mode': 'Default', 'mig_mode': 'Disabled', 'max_ecc_uncorrected': 0,
            'nic_names': ['mlx5_[0-3]', 'mlx5_[6-9]'], 'nic_count': 8, 'nic_port_state': 'ACTIVE',
            'gpu_nic_relation_max': 'PXB'}
    assert check_profile(topo, good) == []
    bad = dict(good, gpu_count=16, mig_mode='Enabled', pcie_gen_min=5, nvlink_active_links=18,
               gpu_nic_relation_max='PIX', nic_names=['mlx5_[0-3]'], nic_count=8)
    failures = check_profile(topo, bad)
    assert checks(failures) == ['gpu_count', 'gpu_nic_relation', 'mig_mode', 'nic_count', 'nvlink_active_links',
                                'pcie_gen']
    by = dict((f['check'], f) for f in reversed(failures))
    assert by['mig_mode']['subject'] == 'GPU0' and by['mig_mode']['actual'] == 'Disabled'
    assert by['nic_count']['actual'] == 4
    assert sorted(f['subject'] for f in failures if f['check'] == 'gpu_nic_relation') == ['GPU%d' % i for i in range(8)]


def test_numa_balance_on_dgx1(bundle):
    topo = gather_bundle(bundle(topo='topo/dgx1-v100-8gpu-4nic-topo-mp.txt'))
    # the matrix names NICs, but without sysfs nothing says they exist
    missing = ('nic_missing', 'not checked: sysfs class/infiniband is not available: cannot tell whether the 4 NICs '
                              'nvidia-smi-topo-m.txt names exist (no RDMA stack loaded?)')
    assert [(f['check'], f['message']) for f in check_profile(topo, {'numa_balance': True})] == [missing]
    assert [(f['check'], f['message']) for f in check_profile(topo, {'gpu_nic_relation_max': 'PIX'})] == [
        missing, ('gpu_nic_relation', 'not checked: sysfs class/infiniband is not available: cannot tell which NICs '
                                      'of the matrix exist')]
    uneven = copy.deepcopy(topo)
    uneven['gpus'][4]['numa_node'] = 0     # transform: GPU4 reported on the other socket
    failures = check_profile(uneven, {'numa_balance': True})
    assert failures[1]['check'] == 'numa_balance'
    assert failures[1]['actual'] == {'numa0': 5, 'numa1': 3}


def test_driver_not_loaded(bundle):
    topo = gather_bundle(bundle(xml='nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt',
                                topo='nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt', rc=9))
    assert topo['driver_loaded'] is False
    assert topo['driver_error']['kind'] == 'driver_not_loaded'
    assert topo['driver_error']['rc'] == 9
    assert topo['errors'] == []
    failures = check_profile(topo, {'gpu_count': 8})
    assert checks(failures) == ['driver_loaded']
    assert "couldn't communicate with the NVIDIA driver" in failures[0]['message']


def test_corrupted_matrix_is_an_error_not_a_crash(bundle):
    topo = gather_bundle(bundle(topo='topo/h100-8gpu-12nic-tpgds-aihub0008-CORRUPTED-paste.txt'))
    assert topo['errors'][0]['command'] == 'nvidia-smi topo -m'
    assert topo['errors'][0]['line_no'] == 7
    failures = check_profile(topo, {})
    assert failures[0]['check'] == 'output_unreadable'


def test_regressions(bundle):
    before = gather_bundle(bundle(**H100))
    assert find_regressions(before, before) == []
    after = port_down(drop_gpu(before, 3), 'mlx5_0')
    after['gpus'][0]['nvlink_active'] = 16          # transform: two NVLink links of GPU0 went inactive
    after['gpus'][1]['pcie']['width_current'] = 8   # transform: GPU1 link down-trained x16 -> x8
    after['gpus'][2]['ecc_uncorrected_volatile'] = 4  # transform: new uncorrectable errors on GPU2
    after['matrix']['GPU0']['GPU1'] = 'SYS'
    regs = find_regressions(before, after)
    assert sorted(set((r['check'], r['subject']) for r in regs)) == [
        ('ecc_errors_new', 'GPU2'), ('gpu_lost', 'GPU3'), ('nic_port_down', 'mlx5_0/1'),
        ('nvlink_lost', 'GPU0'), ('nvlink_lost', 'GPU0-GPU1')]
    # the width regression needs a known baseline width; H100 matrix bundle has none
    assert not [r for r in regs if r['check'] == 'pcie_downtrained']


def test_pcie_downtrained_regression(bundle):
    before = gather_bundle(bundle(**DGX_A100))
    after = copy.deepcopy(before)
    after['gpus'][0]['pcie'].update(width_current=8, gen_max=3)   # transform: x16 -> x8, gen4 -> gen3
    regs = find_regressions(before, after)
    assert [(r['check'], r['before'], r['after']) for r in regs] == [
        ('pcie_downtrained', 16, 8), ('pcie_downtrained', 4, 3)]


def test_driver_unloaded_after_change_loses_every_gpu(bundle, tmp_path):
    before = gather_bundle(bundle(**DGX_A100))
    after = copy.deepcopy(before)
    after.update(driver_loaded=False, gpus=[], gpu_count=0,
                 driver_error={'kind': 'driver_not_loaded', 'rc': 9, 'message': 'NVIDIA-SMI has failed'})
    regs = find_regressions(before, after)
    assert [r['check'] for r in regs] == ['gpu_lost'] * 8


def test_profile_validation():
    assert validate_profile({'gpu_count': 8, 'nvlink_relation': 'NV18'}) == []
    errors = validate_profile({'gpu_cnt': 8, 'gpu_count': '8', 'ecc_mode': 'on', 'gpu_nic_relation_max': 'NV4'})
    assert any('unknown profile key(s): gpu_cnt' in e for e in errors)
    assert any('gpu_count must be a non-negative int' in e for e in errors)
    assert any('ecc_mode must be one of Enabled, Disabled' in e for e in errors)
    assert any('gpu_nic_relation_max' in e for e in errors)
    assert validate_profile([]) == ['expected must be a dict (the node-class profile), got list']


def write_bundle(path, **files):
    """A bundle whose files are transforms of real captures (name -> text)."""
    os.makedirs(path)
    for name, text in files.items():
        with open(os.path.join(path, name), 'w') as handle:
            handle.write(text)
    return path


def a100_xml(gpus=1, transform=None):
    """Transform: the real A100 -q -x with its <gpu> block repeated ``gpus`` times, then ``transform``."""
    text = real_text(DGX_A100['xml'])
    start, end = text.index('    <gpu id='), text.index('</nvidia_smi_log>')
    block = text[start:end]
    text = text[:start] + block * gpus + text[end:]
    return transform(text) if transform else text


def test_split_sram_ecc_counters_are_counted(tmp_path):
    def split(text):
        # transform: newer drivers print SRAM uncorrectable as parity and SEC-DED counters
        return text.replace('<sram_uncorrectable>0</sram_uncorrectable>',
                            '<sram_uncorrectable_parity>3</sram_uncorrectable_parity>'
                            '<sram_uncorrectable_secded>2</sram_uncorrectable_secded>')
    topo = gather_bundle(write_bundle(str(tmp_path / 'b'), **{'nvidia-smi-q-x.xml': a100_xml(1, split)}))
    assert topo['gpus'][0]['ecc_uncorrected_aggregate'] == 5
    assert checks(check_profile(topo, {'max_ecc_uncorrected': 0})) == ['ecc_uncorrected']


def test_gpu_with_a_failed_handle_keeps_the_others_numbered(tmp_path):
    lost = real_text('nvsmi-errors/unable-to-determine-device-handle-GPU1-then-partial-table-rtxpro6000.txt')
    first_line = lost.splitlines()[0] + '\n'
    # transform: the RTX PRO node's error line before a -q -x that lists the GPUs it could read
    # (attached_gpus says 4: the three printed and the one that failed)
    xml = a100_xml(3, lambda t: t.replace('<attached_gpus>1</attached_gpus>', '<attached_gpus>4</attached_gpus>'))
    topo = gather_bundle(write_bundle(str(tmp_path / 'b'), **{'nvidia-smi-q-x.xml': first_line + xml}))
    assert [g['index'] for g in topo['gpus']] == [0, 2, 3]
    assert topo['device_errors'] == [{'gpu': 1, 'pci_bus_id': '0000:34:00.0', 'reason': 'Unknown Error', 'readable': False}]
    failures = check_profile(topo, {})
    assert [(f['check'], f['subject'], f['actual']) for f in failures] == [('gpu_error', 'GPU1', 'Unknown Error')]


def test_nvml_all_links_inactive_line_counts_zero_links(tmp_path):
    text = real_text('nvlink/h100-nvlink-status-i0.txt')
    # transform: every link line replaced by the NVML message drivers print when all links are down
    # and the GPU line naming the A100 of the XML
    head = 'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-27b94a00-ed54-5c24-b1fd-1054085de32a)'
    assert text.splitlines()[0].startswith('GPU 0: NVIDIA H100 80GB HBM3 (UUID: ')
    inactive = head + '\n\t NVML: Unable to retrieve NVLink information as all links are inActive\n'
    files = {'nvidia-smi-q-x.xml': a100_xml(1), 'nvidia-smi-nvlink-s.txt': inactive}
    topo = gather_bundle(write_bundle(str(tmp_path / 'b'), **files))
    assert topo['gpus'][0]['nvlink_active'] == 0
    assert checks(check_profile(topo, {'nvlink_active_links': 12})) == ['nvlink_active_links']


def test_busy_gpu_with_a_slow_link_fails_pcie_gen(tmp_path):
    # the A100 capture is not idle (gpu_idle Not Active); transform: its link runs at gen 3 of 4
    slow = a100_xml(1, lambda t: t.replace('<current_link_gen>4</current_link_gen>', '<current_link_gen>3</current_link_gen>'))
    topo = gather_bundle(write_bundle(str(tmp_path / 'b'), **{'nvidia-smi-q-x.xml': slow}))
    assert topo['gpus'][0]['gpu_idle'] is False
    failures = check_profile(topo, {'pcie_gen_min': 4})
    assert [(f['check'], f['actual']) for f in failures] == [('pcie_gen', 3)]
    idle = slow.replace('<clocks_throttle_reason_gpu_idle>Not Active', '<clocks_throttle_reason_gpu_idle>Active')
    topo = gather_bundle(write_bundle(str(tmp_path / 'idle'), **{'nvidia-smi-q-x.xml': idle}))
    assert check_profile(topo, {'pcie_gen_min': 4}) == []


def test_missing_inputs_are_not_checked_rather_than_passed(bundle):
    topo = gather_bundle(bundle(**H100))
    failures = check_profile(topo, {'nic_names': ['mlx5_[0-7]_none'], 'nic_port_state': 'ACTIVE'})
    # the nvlink -s capture covers GPU0 of the eight in the matrix; the sysfs tree holds 5 of its 12 NICs
    assert [(f['check'], f['actual']) for f in failures if f['check'] != 'nic_missing'] == [
        ('outputs_disagree', {'nvidia-smi-topo-m.txt': 8, 'nvidia-smi-nvlink-s.txt': 1}),
        ('nic_port_state', 'not checked')]
    assert [f['subject'] for f in failures if f['check'] == 'nic_missing'] == [
        'mlx5_10', 'mlx5_11', 'mlx5_2', 'mlx5_3', 'mlx5_5', 'mlx5_8', 'mlx5_9']
    a100 = gather_bundle(bundle(**DGX_A100))        # MIG mode: remapped rows and retired pages are N/A
    failures = check_profile(a100, {'allow_remapped_rows_pending': False})
    # (the bundle directory still holds the H100 files: the outputs disagree and NICs are missing)
    kept = [f for f in failures if f['check'] not in ('outputs_disagree', 'nic_missing')]
    assert [(f['check'], f['subject'], f['actual']) for f in kept] == [
        ('remapped_rows_pending', 'GPU%d' % i, 'not checked') for i in range(8)]


def test_unreadable_xml_after_a_change_does_not_lose_every_gpu(bundle, tmp_path):
    before = gather_bundle(bundle(xml='nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml',
                                  topo='topo/a100-2gpu-pcie-2nic-della-i14g20.txt'))
    after_dir = write_bundle(str(tmp_path / 'after'), **{
        'nvidia-smi-q-x.xml': '\n'.join(a100_xml(1).splitlines()[:40]),      # transform: truncated output
        'nvidia-smi-topo-m.txt': real_text('topo/a100-2gpu-pcie-2nic-della-i14g20.txt')})
    after = gather_bundle(after_dir)
    assert after['errors'][0]['command'] == 'nvidia-smi -q -x'
    assert [r for r in find_regressions(before, after) if r['check'] == 'gpu_lost'] == []


def test_link_downed_check_and_new_port_errors(tmp_path):
    before = gather_bundle(make_bundle(str(tmp_path / 'qdr'), ttar='ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'))
    # a bundle with no nvidia-smi output never passes, whatever the profile asks
    assert [f['check'] for f in check_profile(before, {'nic_link_downed_max': 0})] == ['driver_loaded']
    after = copy.deepcopy(before)
    after['nics'][0]['ports'][1]['counters']['link_downed'] = 2     # transform: port 2 flapped twice
    failures = check_profile(after, {'nic_link_downed_max': 0})
    assert [(f['check'], f['subject'], f['actual']) for f in failures] == [
        ('driver_loaded', 'node', False), ('nic_link_downed', 'mlx4_0/2', 2)]
    assert [(r['check'], r['subject'], r['before'], r['after']) for r in find_regressions(before, after)] == [
        ('nic_errors_new', 'mlx4_0/2', 0, 2)]
    # the H100 tree has no error counters: the check says so instead of passing
    h100 = gather_bundle(make_bundle(str(tmp_path / 'h100'), **H100))
    failures = [f for f in check_profile(h100, {'nic_link_downed_max': 0}) if f['check'] != 'nic_missing']
    assert [f['check'] for f in failures][0] == 'outputs_disagree'
    assert set(f['actual'] for f in failures[1:]) == {'not checked'}
