# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The replaying nvidia-smi: outputs in the real tool's formats, state, exit codes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from simhelpers import NVIDIA_SMI, real_text

from simulator import nvidia_smi

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import classify_nvsmi_failure
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_nvlink import parse_nvlink_status
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import parse_topo_matrix
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml

H100_BUS0 = '00000000:19:00.0'


def _bus(node, index):
    return node.run('--query-gpu=pci.bus_id', '--format=csv,noheader', '-i', str(index)).out.strip()


# ---------------------------------------------------------------- replayed files

@pytest.mark.parametrize('name', ['h100-sxm-8gpu-ib', 'a100-sxm-8gpu-ib', 'pcie-4gpu-roce'])
def test_fresh_outputs_replay_the_bundle_byte_for_byte(node, name):
    """topo -m is the bundle's text, with the header in underline codes where the driver prints them."""
    n = node(name)
    topo = n.file('nvidia-smi-topo-m.txt')
    if name == 'h100-sxm-8gpu-ib':
        topo = nvidia_smi.underline_topo_header(topo)
    assert n.run('-q', '-x').out == n.file('nvidia-smi-q-x.xml')
    assert n.run('topo', '-m').out == topo
    assert n.run('topo', '--matrix').out == topo
    assert n.run('nvlink', '-s').out == n.file('nvidia-smi-nvlink-s.txt')
    assert n.run('nvlink', '--status').out == n.file('nvidia-smi-nvlink-s.txt')
    for args in (('-q', '-x'), ('topo', '-m'), ('nvlink', '-s'), ('-L',), ('-q',)):
        assert n.run(*args).rc == 0


def test_nvlink_status_single_gpu_is_the_real_capture_shape(node):
    n = node()
    out = n.run('nvlink', '--status', '-i', '0').out
    real = real_text('nvlink/h100-nvlink-status-i0.txt')
    real_uuid = re.search(r'UUID: ([^)]+)', real).group(1)
    ours = re.search(r'UUID: ([^)]+)', out).group(1)
    assert out == real.replace(real_uuid, ours)


def test_xml_reads_back_through_the_collection_parser(node):
    n = node()
    parsed = parse_nvsmi_xml(n.run('-q', '-x').out)
    assert parsed['driver_version'] == '545.23.08' and parsed['attached_gpus'] == 8
    assert len(set(g['uuid'] for g in parsed['gpus'])) == 8
    assert parsed['warnings'] == []
    only = parse_nvsmi_xml(n.run('-q', '-x', '-i', '3').out)
    assert only['attached_gpus'] == 8 and [g['uuid'] for g in only['gpus']] == [parsed['gpus'][3]['uuid']]


# ---------------------------------------------------------------- -q text

def test_q_text_lines_are_the_real_h100_capture_lines(node):
    """Every line rendered for GPU 0 appears, in the same order, in the real H100 ``-q``;
    the only other lines are attached-GPU count and the thresholds the capture gives
    as T.Limit values (N/A in the XML)."""
    ours = node().run('-q', '-i', '0').out.splitlines()
    real = real_text('nvsmi-q/h100-sxm5-80gb-della-j11g1-nvsmi-a.txt').splitlines()
    allowed = {
        'Attached GPUs                             : 8',
        '        GPU Shutdown Temp                 : N/A',
        '        GPU Slowdown Temp                 : N/A',
        '        GPU Max Operating Temp            : N/A',
        '        Memory Max Operating Temp         : N/A',
    }
    pos = 0
    missing = []
    for line in ours:
        if line in allowed:
            continue
        try:
            pos = real.index(line, pos) + 1
        except ValueError:
            missing.append(line)
    assert missing == []
    assert len(ours) > 120


def test_q_text_compute_mode_line_matches_real_grep_capture(node):
    n = node()
    assert n.run('-c', '3', '-i', '0').rc == 0
    text = n.run('-q', '-i', '0').out
    real = real_text('nvsmi-misc/q-grep-Compute-exclusive-process.txt').splitlines()[1]
    assert real in text.splitlines()


def test_q_text_for_pascal_ecc_layout(node):
    text = node('pcie-4gpu-roce').run('-q', '-i', '1').out
    assert '    ECC Errors\n        Volatile\n            Single Bit\n                Device Memory' in text
    assert '    Remapped Rows                         : N/A' in text
    assert text.count('\nGPU 0000') == 1


# ---------------------------------------------------------------- -L

def test_list_gpus_format(node):
    out = node().run('-L').out.splitlines()
    assert len(out) == 8
    for i, line in enumerate(out):
        assert re.match(r'^GPU %d: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\)$' % i,
                        line)


def test_list_gpus_with_mig_devices_matches_real_lines(node):
    n = node()
    n.run('-mig', '1', '-i', '0')
    assert n.run('mig', '-cgi', ','.join(['19'] * 7), '-C', '-i', '0').rc == 0
    lines = n.run('-L', '-i', '0').out.splitlines()
    real = real_text('mig/h100-pcie-nvsmi-L-7x1g10gb.txt').splitlines()
    assert len(lines) == len(real) == 8
    for ours, theirs in zip(lines[1:], real[1:]):
        assert re.sub(r'MIG-[0-9a-f-]+', 'MIG-x', ours) == re.sub(r'MIG-[0-9a-f-]+', 'MIG-x', theirs)
    uuids = [re.search(r'(MIG-[0-9a-f-]+)', line).group(1) for line in lines[1:]]
    assert len(set(uuids)) == 7
    assert all(re.match(r'^MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$', u) for u in uuids)


# ---------------------------------------------------------------- --query-gpu

COMMON_FIELDS = ('index,name,uuid,pci.bus_id,driver_version,persistence_mode,compute_mode,mig.mode.current,'
                 'mig.mode.pending,ecc.mode.current,pcie.link.gen.current,pcie.link.gen.max,'
                 'pcie.link.width.current,pcie.link.width.max,memory.total,serial')


def test_query_gpu_common_fields(node):
    n = node()
    out = n.run('--query-gpu=' + COMMON_FIELDS, '--format=csv').out.splitlines()
    assert out[0] == ('index, name, uuid, pci.bus_id, driver_version, persistence_mode, compute_mode, '
                      'mig.mode.current, mig.mode.pending, ecc.mode.current, pcie.link.gen.current, '
                      'pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, memory.total [MiB], serial')
    assert len(out) == 9
    row = out[1].split(', ')
    assert row[0] == '0' and row[1] == 'NVIDIA H100 80GB HBM3' and row[3] == H100_BUS0
    assert row[4:10] == ['545.23.08', 'Enabled', 'Default', 'Disabled', 'Disabled', 'Enabled']
    assert row[10:15] == ['5', '5', '16', '16', '81559 MiB']
    assert row[15] == '1654123038646'
    nounits = n.run('--query-gpu=memory.total,pcie.link.width.max', '--format=csv,noheader,nounits', '-i', '0')
    assert nounits.out == '81559, 16\n'


def test_query_gpu_header_shapes_match_real_captures(node):
    # the same field lists as the real captures give the same header lines
    for rel in ('query-csv/rtx5060ti-4gpu-pcie-link-aisandbox.txt', 'query-csv/a800-sxm4-8gpu-index-name-mem-driver-cc.txt',
                'query-csv/h100-pcie-scaleway-mig-mode.txt'):
        header = real_text(rel).splitlines()[0]
        fields = ','.join(re.sub(r' \[.*\]$', '', f) for f in header.split(', '))
        out = node('a100-sxm-8gpu-ib').run('--query-gpu=' + fields, '--format=csv')
        assert out.rc == 0
        assert out.out.splitlines()[0] == header
    real = real_text('query-csv/a800-sxm4-8gpu-index-name-mem-driver-cc.txt').splitlines()[1]
    ours = node('a100-sxm-8gpu-ib').run('--query-gpu=index,name,memory.total,memory.free,driver_version,compute_cap',
                                        '--format=csv,noheader').out.splitlines()[0]
    assert [len(real.split(', ')), real.split(', ')[2].endswith(' MiB')] == [len(ours.split(', ')), True]
    assert ours.split(', ')[5] == '8.0'


def test_query_gpu_not_applicable_is_bracketed(node):
    out = node('pcie-4gpu-roce').run('--query-gpu=index,mig.mode.current,compute_cap', '--format=csv,noheader').out
    assert out.splitlines() == ['%d, [N/A], 6.0' % i for i in range(4)]


def test_query_gpu_errors(node):
    n = node()
    bad = n.run('--query-gpu=index,cuda_version', '--format=csv')
    assert (bad.rc, bad.out) == (2, 'Field "cuda_version" is not a valid field to query.\n\n')
    missing = n.run('--query-gpu=index')
    assert missing.rc == 2 and '"--format=" switch is missing' in missing.out
    fmt = n.run('--query-gpu=index', '--format=json')
    assert fmt.rc == 2 and 'is not recognized' in fmt.out


# ---------------------------------------------------------------- arguments and exit codes

@pytest.mark.parametrize('argv,message', [
    (['--bogus'], "ERROR: Option --bogus is not recognized. Please run 'nvidia-smi -h' for help.\n"),
    (['-lms100'], "ERROR: Option -lms100 is not recognized. Please run 'nvidia-smi -h' for help.\n"),
    (['-i'], "ERROR: Option -i is missing its value. Please run 'nvidia-smi -h' for help.\n"),
    (['-L', '-q'], "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (['-x'], "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (['-pm', '7'], "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (['topo', '-x'], "ERROR: Option -x is not recognized. Please run 'nvidia-smi -h' for help.\n"),
    (['mig', '-lgi', '-lci'], "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
])
def test_bad_arguments_exit_2(node, argv, message):
    result = node().proc(*argv)
    assert (result.rc, result.out) == (2, message)


def test_valid_but_unsimulated_options_say_so(node):
    result = node().run('-d', 'MEMORY', '-q')
    assert result.rc == 2 and 'not simulated' in result.err


def test_unknown_gpu_id_is_not_found(node):
    result = node().proc('-i', '12', '-L')
    assert (result.rc, result.out) == (6, 'No devices were found\n')


def test_gpu_selection_by_uuid_and_bus_id(node):
    n = node()
    uuid = n.run('--query-gpu=uuid', '--format=csv,noheader', '-i', '5').out.strip()
    bus = _bus(n, 5)
    for ident in (uuid, bus, bus[4:], bus.lower()):
        assert n.run('--query-gpu=index', '--format=csv,noheader', '-i', ident).out == '5\n'


def test_version(node):
    out = node().run('--version').out
    assert out.splitlines()[0] == 'NVIDIA-SMI version  : 545.23.08'
    assert 'CUDA Version        : 12.3' in out


# ---------------------------------------------------------------- setters and state

def test_persistence_mode_messages_and_state(node):
    n = node()
    assert n.proc('-pm', '1', '-i', '0').out == real_text('nvsmi-misc/pm-1-already-enabled-gh200.txt').replace(
        '00000009:01:00.0', H100_BUS0)
    assert n.proc('-pm', '0', '-i', '0').out == real_text('nvsmi-misc/pm-0-disabled-gh200.txt').replace(
        '00000009:01:00.0', H100_BUS0)
    again = n.proc('-pm', '1', '-i', '0')
    assert again.rc == 0
    assert again.out == real_text('nvsmi-misc/pm-1-enabled-legacy-persistence-a100.txt').replace(
        '00000000:4F:00.0', H100_BUS0)
    n.proc('--persistence-mode=0')
    out = n.proc('--query-gpu=persistence_mode', '--format=csv,noheader').out
    assert out == 'Disabled\n' * 8
    assert '<persistence_mode>Disabled</persistence_mode>' in n.proc('-q', '-x', '-i', '7').out
    assert 'Persistence Mode                      : Disabled' in n.proc('-q', '-i', '7').out
    assert parse_nvsmi_xml(n.proc('-q', '-x').out)['gpus'][4]['persistence_mode'] == 'Disabled'


def test_state_survives_new_processes_and_lives_in_the_state_file(node):
    n = node()
    assert n.proc('-c', 'EXCLUSIVE_PROCESS', '-i', '2').rc == 0
    with open(n.state) as handle:
        state = json.load(handle)
    assert state['gpus'][_bus(n, 2)]['compute_mode'] == 'Exclusive_Process'
    assert n.proc('--query-gpu=compute_mode', '--format=csv,noheader', '-i', '2').out == 'Exclusive_Process\n'


def test_state_root_override(tmp_path, node):
    n = node()
    root = tmp_path / 'root'
    (root / 'usr' / 'share' / 'gpuops-sim').mkdir(parents=True)
    os.symlink(n.dir, str(root / 'usr' / 'share' / 'gpuops-sim' / 'profile'))
    env = {'GPUOPS_SIM_ROOT': str(root), 'GPUOPS_SIM_ALLOW_NONROOT': '1'}
    assert nvidia_smi.run(['-pm', '0', '-i', '1'], env).rc == 0
    assert (root / 'var' / 'lib' / 'gpuops-sim' / 'state.json').is_file()


def test_compute_mode_message_matches_real(node):
    n = node()
    out = n.run('-i', '0', '--compute-mode', '3').out
    assert out == real_text('nvsmi-misc/compute-mode-3-exclusive-process-vm-plus-q-grep.txt').replace(
        '00000000:00:06.0', H100_BUS0)
    assert n.run('-c', '0', '-i', '0').out == 'Set compute mode to DEFAULT for GPU %s.\nAll done.\n' % H100_BUS0
    assert n.run('-c', '2', '-i', '0').rc == 0
    assert n.run('--query-gpu=compute_mode', '--format=csv,noheader', '-i', '0').out == 'Prohibited\n'


def test_setters_need_root(node, monkeypatch):
    n = node()
    env = dict(n.env)
    del env['GPUOPS_SIM_ALLOW_NONROOT']
    monkeypatch.delenv('GPUOPS_SIM_ALLOW_NONROOT', raising=False)
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    result = nvidia_smi.run(['-pm', '1'], env)
    assert result.rc == 4 and 'Insufficient Permissions' in result.out
    assert nvidia_smi.run(['-L'], env).rc == 0


def test_mig_enable_with_persistence_disabled_warns_like_real(node):
    n = node('a100-sxm-8gpu-ib')
    bus = _bus(n, 0)
    out = n.proc('-mig', '1', '-i', '0')
    assert out.rc == 0
    assert out.out == real_text('mig/gh200-mig-1-enabled-with-persistence-disabled-warning.txt').replace(
        '00000009:01:00.0', bus)
    assert n.proc('--query-gpu=mig.mode.current,mig.mode.pending', '--format=csv,noheader', '-i', '0').out == \
        'Enabled, Enabled\n'
    h100 = node()
    assert h100.run('-mig', '1', '-i', '0').out == 'Enabled MIG Mode for GPU %s\nAll done.\n' % H100_BUS0


def test_mig_enable_on_busy_gpu_stays_pending_until_reboot(node):
    n = node()
    assert n.admin('busy', '0').rc == 0
    out = n.run('-i', '0', '-mig', '1')
    real = real_text('mig/mig-1-WARN-pending-in-use-by-another-client-0B.txt').replace('00000000:0B:00.0', H100_BUS0)
    assert (out.rc, out.out) == (0, real)
    assert n.run('--query-gpu=mig.mode.current,mig.mode.pending', '--format=csv,noheader', '-i', '0').out == \
        'Disabled, Enabled\n'
    assert n.admin('reboot').rc == 0
    assert n.run('--query-gpu=mig.mode.current,mig.mode.pending', '--format=csv,noheader', '-i', '0').out == \
        'Enabled, Enabled\n'


def test_mig_not_supported_on_pascal(node):
    n = node('pcie-4gpu-roce')
    out = n.run('-mig', '1', '-i', '0')
    assert out.rc == 0 and out.out.endswith('Treating as warning and moving on.\nAll done.\n')
    assert 'Not Supported' in out.out
    assert n.run('mig', '-lgip').out == 'No MIG-supported devices found.\n'


def test_reboot_drops_instances_and_restores_boot_modes(node):
    n = node()
    n.run('-mig', '1', '-i', '0')
    n.run('mig', '-cgi', '9', '-C', '-i', '0')
    n.run('-pm', '0')
    n.admin('reboot')
    assert n.run('mig', '-lgi').rc == 6
    assert n.run('--query-gpu=persistence_mode,mig.mode.current', '--format=csv,noheader', '-i', '0').out == \
        'Enabled, Enabled\n'


def test_state_resets_when_a_different_profile_is_installed(node, tmp_path):
    n = node()
    n.run('-pm', '0')
    from simulator import bundle, faults
    tree = bundle.read_tree(n.dir)
    faults.FAULTS['ib_port_down'].apply(tree)
    faults.FAULTS['mig_unexpected'].apply(tree, gpu=2)
    bundle.write_tree(tree, n.dir)
    out = n.run('--query-gpu=persistence_mode,mig.mode.current', '--format=csv,noheader', '-i', '2').out
    assert out == 'Enabled, Enabled\n'


# ---------------------------------------------------------------- MIG

def _mig_node(node, name='h100-sxm-8gpu-ib'):
    n = node(name)
    assert n.run('-mig', '1', '-i', '0').rc == 0
    return n


def test_lgip_fresh_is_the_real_capture(node):
    n = _mig_node(node)
    assert n.run('mig', '-i', '0', '-lgip').out == real_text('mig/h100-80gb-lgip.txt')


def test_cgi_lgi_cci_lci_replay_the_real_session(node):
    n = _mig_node(node)
    out = n.run('mig', '-i', '0', '-cgi', '9,14')
    assert (out.rc, out.out) == (0, real_text('mig/h100-80gb-cgi-9-14-no-C.txt'))
    assert n.run('mig', '-i', '0', '-lgi').out == real_text('mig/h100-80gb-lgi-2gi.txt')
    cci = n.run('mig', '-i', '0', '-gi', '2', '-cci').out + n.run('mig', '-i', '0', '-gi', '3', '-cci').out
    assert cci == real_text('mig/h100-80gb-cci-gi2-and-gi3.txt')
    assert n.run('mig', '-i', '0', '-lci').out == real_text('mig/h100-80gb-lci-2ci.txt')


def test_cgi_with_default_ci_matches_real_messages_and_ids(node):
    n = _mig_node(node)
    out = n.run('mig', '-cgi', '15,15,15', '-C', '-i', '0').out
    assert out == real_text('mig/gh200-cgi-15x3-C-success.txt').replace('1g.24gb', '1g.20gb')


def test_cgi_insufficient_resources_matches_real_error(node):
    n = _mig_node(node)
    out = n.run('mig', '-cgi', '20,20,20', '-C', '-i', '0')
    lines = out.out.splitlines()
    assert out.rc != 0
    assert lines[-2:] == real_text('mig/gh200-cgi-C-ERROR-insufficient-resources.txt').splitlines()
    assert lines[0].startswith('Successfully created GPU instance ID  7 on GPU  0 using profile MIG 1g.10gb+me')


def test_lgip_free_counts_follow_instances(node):
    n = _mig_node(node)
    n.run('mig', '-cgi', '9', '-i', '0')
    rows = dict((line.split()[4], line.split()[5]) for line in n.run('mig', '-lgip', '-i', '0').out.splitlines()
                if 'MIG ' in line)
    assert rows['9'] == '1/2' and rows['0'] == '0/1' and rows['5'] == '1/1' and rows['19'] == '4/7'


def test_mig_state_shows_in_xml_q_and_table(node):
    n = _mig_node(node)
    n.run('mig', '-cgi', '19,19', '-C', '-i', '0')
    parsed = parse_nvsmi_xml(n.run('-q', '-x', '-i', '0').out)['gpus'][0]
    assert (parsed['mig_mode'], parsed['mig_devices']) == ('Enabled', 2)
    text = n.run('-q', '-i', '0').out
    assert text.count('        MIG Device\n') == 2 and 'Multiprocessor count  : 16' in text
    table = n.run().out
    assert '| MIG devices:' in table and '15MiB /  9984MiB' in table


def test_a100_mig_devices_render_exactly_like_the_real_xml(node):
    n = _mig_node(node, 'a100-sxm-8gpu-ib')
    n.run('mig', '-cgi', '9,9', '-C', '-i', '0')
    ours = n.run('-q', '-x', '-i', '0').out
    real = real_text('nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml')

    def block(text):
        return text[text.index('<mig_devices>'):text.index('</mig_devices>')]
    assert block(ours) == block(real)


def test_destroy_instances(node):
    n = _mig_node(node)
    n.run('mig', '-cgi', '9,14', '-C', '-i', '0')
    busy = n.run('mig', '-dgi', '-i', '0')
    assert busy.rc != 0 and 'In use by another client' in busy.out
    out = n.run('mig', '-dci', '-i', '0').out
    assert out == ('Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  2\n'
                   'Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  3\n')
    out = n.run('mig', '-dgi', '-gi', '3', '-i', '0').out
    assert out == 'Successfully destroyed GPU instance ID  3 from GPU  0\n'
    assert n.run('mig', '-lgi', '-i', '0').out.count('MIG 3g.40gb') == 1
    n.run('mig', '-dgi', '-i', '0')
    assert n.run('mig', '-lgi', '-i', '0').out == 'No GPU instances found: Not Found\n'


def test_disable_mig_with_instances_fails(node):
    n = _mig_node(node)
    n.run('mig', '-cgi', '0', '-i', '0')
    out = n.run('-mig', '0', '-i', '0')
    assert out.rc != 0 and 'In use by another client' in out.out
    n.run('mig', '-dgi', '-i', '0')
    assert n.run('-mig', '0', '-i', '0').out == 'Disabled MIG Mode for GPU %s\nAll done.\n' % H100_BUS0


def test_mig_commands_without_mig_enabled(node):
    n = node()
    assert n.run('mig', '-lgi').out == 'No MIG-enabled devices found.\n'
    assert n.run('mig', '-lgi').rc == 6


# ---------------------------------------------------------------- default table

def _pipes(line):
    return [i for i, c in enumerate(line) if c == '|']


def test_default_table_columns_match_the_real_table(node):
    n = _mig_node(node)
    n.run('mig', '-cgi', '19', '-C', '-i', '0')
    ours = n.run().out.splitlines()
    real = real_text('mig/h100-pcie-scaleway-nvsmi-table-7x1g10gb.txt').splitlines()
    assert ours[0] == 'Fri Feb 23 11:51:29 2024'
    for line in ours[1:]:
        if line:
            assert len(line) == 91, line
    # the same kind of line has its separators in the same columns
    assert _pipes(ours[2]) == _pipes(real[2]) and ours[4:8] == real[4:8]
    assert _pipes(ours[8]) == _pipes(real[8]) and _pipes(ours[9]) == _pipes(real[9])
    at = [i for i, line in enumerate(ours) if re.match(r'^\|\s+0\s+7\s+0\s+0\s+\|', line)][0]
    # the real table is an H100 PCIe (14 SMs per 1g.10gb); the profile is an H100 SXM5 (16)
    assert ours[at] == real[20].replace('| 14 ', '| 16 ')
    assert ours[at + 1] == real[21]
    assert ours[-7:] == real[-7:]


# ---------------------------------------------------------------- topo -m header codes

H100_TOPO_HEADER = (b'\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5'
                    b'\tNIC6\tNIC7\tNIC8\tNIC9\tNIC10\tNIC11\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n')


def _topo_bytes(n):
    """``nvidia-smi topo -m`` as a separate process writing into a pipe: (rc, stdout bytes)."""
    env = dict(os.environ)
    env.update(n.env)
    done = subprocess.run([sys.executable, NVIDIA_SMI, 'topo', '-m'], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False)
    assert done.stderr == b''
    return done.returncode, done.stdout


def _set_driver_version(n, version):
    path = os.path.join(n.dir, 'nvidia-smi-q-x.xml')
    with open(path, 'rb') as handle:
        text = handle.read().decode('utf-8')
    text, count = re.subn(r'<driver_version>[^<]*</driver_version>', '<driver_version>%s</driver_version>' % version,
                          text)
    assert count == 1
    with open(path, 'wb') as handle:
        handle.write(text.encode('utf-8'))


def test_topo_header_in_underline_codes_for_a_545_driver(node):
    """H100 profile (driver 545.23.08): the header line is exactly \\t ESC[4m <cells> ESC[0m, into a pipe;
    every other byte is the bundle's."""
    n = node('h100-sxm-8gpu-ib')
    rc, out = _topo_bytes(n)
    plain = n.file('nvidia-smi-topo-m.txt').encode('utf-8')
    assert rc == 0
    assert out.startswith(H100_TOPO_HEADER)
    assert out == H100_TOPO_HEADER + plain.split(b'\n', 1)[1]
    assert out.count(b'\x1b') == 2 and out.count(b'\x1b[4m') == 1 and out.count(b'\x1b[0m') == 1
    assert plain.startswith(H100_TOPO_HEADER.replace(b'\x1b[4m', b'').replace(b'\x1b[0m', b''))


@pytest.mark.parametrize('name', ['a100-sxm-8gpu-ib', 'pcie-4gpu-roce'])
def test_topo_header_plain_for_a_510_driver(node, name):
    """A100 and P100 profiles (driver 510.47.03): no escape code anywhere, the bundle's bytes."""
    n = node(name)
    assert parse_nvsmi_xml(n.file('nvidia-smi-q-x.xml'))['driver_version'] == '510.47.03'
    rc, out = _topo_bytes(n)
    assert rc == 0
    assert b'\x1b' not in out
    assert out == n.file('nvidia-smi-topo-m.txt').encode('utf-8')
    assert out.startswith(b'\tGPU0\tGPU1\t')


@pytest.mark.parametrize('version, underlined', [
    ('510.47.03', False), ('530.30.02', False), ('534.99.99', False), ('535', True), ('535.54.03', True),
    ('535.129.03', True), ('545.23.08', True), ('610.57.04', True), ('N/A', False), ('', False),
])
def test_topo_header_codes_follow_the_xml_driver_version(node, version, underlined):
    n = node('a100-sxm-8gpu-ib')
    _set_driver_version(n, version)
    plain = n.file('nvidia-smi-topo-m.txt')
    out = n.run('topo', '-m').out
    assert out == (nvidia_smi.underline_topo_header(plain) if underlined else plain)
    assert out.startswith('\t\x1b[4mGPU0\t' if underlined else '\tGPU0\t')
    assert nvidia_smi.topo_header_underlined(version) is underlined


def test_underline_topo_header_shapes():
    assert nvidia_smi.underline_topo_header('\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n') == (
        '\t\x1b[4mGPU0\tCPU Affinity\x1b[0m\nGPU0\t X \t0-7\n')
    assert nvidia_smi.underline_topo_header('\tGPU0\tCPU Affinity\r\nGPU0\t X \t0-7\r\n') == (
        '\t\x1b[4mGPU0\tCPU Affinity\x1b[0m\r\nGPU0\t X \t0-7\r\n')
    coded = '\t\x1b[4mGPU0\x1b[0m\nGPU0\t X \n'
    assert nvidia_smi.underline_topo_header(coded) == coded
    for text in ('', '\n', 'GPU0\tGPU1\n', '        GPU0    GPU1\n'):
        assert nvidia_smi.underline_topo_header(text) == text


@pytest.mark.parametrize('name', ['h100-sxm-8gpu-ib', 'a100-sxm-8gpu-ib', 'pcie-4gpu-roce'])
def test_topo_reads_back_like_the_bundle_through_the_collection_parser(node, name):
    n = node(name)
    printed = parse_topo_matrix(n.run('topo', '-m').out)
    assert printed == parse_topo_matrix(n.file('nvidia-smi-topo-m.txt'))
    assert printed['gpus'] and not printed.get('warnings')


def test_topo_header_codes_survive_topo_faults(node):
    n = node(faults=[('gpu_missing', {'gpu': 2}), ('nvlink_down', {'gpu': 3})])
    plain = n.file('nvidia-smi-topo-m.txt')
    out = n.run('topo', '-m').out
    assert out == nvidia_smi.underline_topo_header(plain) != plain
    assert out.startswith('\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tNIC0\t')


# ---------------------------------------------------------------- driver not loaded

@pytest.mark.parametrize('argv', [[], ['-L'], ['-q', '-x'], ['topo', '-m'], ['nvlink', '-s'], ['--bogus'],
                                  ['--query-gpu=index', '--format=csv'], ['-pm', '1'], ['mig', '-lgip']])
def test_driver_not_loaded_prints_the_real_text_and_exits_9(node, argv):
    n = node(faults=[('driver_not_loaded', {})])
    result = n.proc(*argv)
    assert result.rc == 9
    assert result.out == real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt')
    assert classify_nvsmi_failure(result.rc, result.out)['kind'] == 'driver_not_loaded'


# ---------------------------------------------------------------- faults as the tool shows them

def test_nvlink_down_reads_back(node):
    n = node(faults=[('nvlink_down', {'gpu': 3})])
    status = parse_nvlink_status(n.run('nvlink', '-s').out)
    assert [sum(link['active'] for link in g['links']) for g in status['gpus']] == [18, 18, 18, 0, 18, 18, 18, 18]
    matrix = parse_topo_matrix(n.run('topo', '-m').out)['matrix']
    assert set(matrix['GPU3'][g] for g in ('GPU0', 'GPU1', 'GPU2', 'GPU4', 'GPU5', 'GPU6', 'GPU7')) == {'NODE'}


def test_pcie_profile_nvlink_lists_gpus_without_links(node):
    status = parse_nvlink_status(node('pcie-4gpu-roce').run('nvlink', '-s').out)
    assert [len(g['links']) for g in status['gpus']] == [0, 0, 0, 0]
