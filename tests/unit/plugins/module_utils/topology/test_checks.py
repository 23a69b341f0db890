# -*- coding: utf-8 -*-
"""A check passes only what it read: each case is a real capture (or a simulator profile derived from real
captures) put through a documented transform from tests/unit/transforms.py."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os
import shutil
import time

import pytest

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import SCHEMA_VERSION, gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.baseline import (
    baseline_gaps, find_regressions, other_node, validate_baseline)
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import (
    CHECKS, check_profile, owned_keys, validate_profile)
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import STATUSES, judge_output
from real_captures import PROFILES, extract_ttar, real_text
from transforms import (damage_line, invalid_utf8, keep_gpus_in_topo, truncate_after_line, underline_topo_header,
                        xml_value)
from repo_paths import REPO

A100 = 'a100-sxm-8gpu-ib'
H100 = 'h100-sxm-8gpu-ib'
XML, TOPO, NVLINK = 'nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt'
DRIVER_MISSING = 'nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt'
NO_DEVICES = 'nvsmi-errors/no-devices-were-found-slurm-no-gres.txt'


def node(tmp_path, profile=A100, sysfs=True, **changes):
    """A bundle of a simulator profile; ``changes`` maps a file name to a transform of its text (or None to drop
    the file, or bytes to write as they are)."""
    dest = str(tmp_path / ('%s-%d' % (profile, len(os.listdir(str(tmp_path))))))
    shutil.copytree(os.path.join(PROFILES, profile), dest)
    if sysfs:
        extract_ttar(os.path.join(dest, 'sys.ttar'), os.path.join(dest, 'sys'))
    for name, change in changes.items():
        path = os.path.join(dest, name.replace('_rc', '.rc'))
        if change is None:
            os.remove(path)
        elif isinstance(change, bytes):
            with open(path, 'wb') as handle:
                handle.write(change)
        else:
            text = ''
            if os.path.exists(path):
                with open(path) as handle:
                    text = handle.read()
            with open(path, 'w') as handle:
                handle.write(change(text))
    return dest


def replaced_by(rel):
    """Transform: the output replaced by another real capture (an error message, another machine's output)."""
    return lambda _text: real_text(rel)


def rc(value):
    """Transform: the capture's ``<file>.rc`` with this exit status."""
    return lambda _text: '%s\n' % value


def checks(failures):
    return [(f['check'], f['subject'], f['actual']) for f in failures]


def test_simulated_node_passes_its_profile(tmp_path):
    topo = gather_bundle(node(tmp_path))
    assert topo['schema_version'] == SCHEMA_VERSION
    assert check_profile(topo, {'gpu_count': 8, 'max_ecc_uncorrected': 0, 'nvlink_active_links': 12}) == []


# ---------------------------------------------------------------- 1. a check passes only what it read

@pytest.mark.parametrize('changes,reason', [
    ({XML: replaced_by(DRIVER_MISSING), XML + '_rc': rc(9)}, "couldn't communicate with the NVIDIA driver"),
    ({XML: replaced_by(NO_DEVICES), XML + '_rc': rc(6), TOPO: replaced_by(NO_DEVICES), TOPO + '_rc': rc(6),
      NVLINK: replaced_by(NO_DEVICES), NVLINK + '_rc': rc(6)}, 'No devices were found'),
    ({XML: None, TOPO: None, NVLINK: None}, 'no nvidia-smi output could be read (nvidia-smi-q-x.xml: not available'),
])
@pytest.mark.parametrize('profile', [{}, {'nic_count': 12, 'nic_port_state': 'ACTIVE'}])
def test_a_node_whose_gpus_cannot_be_read_never_passes(tmp_path, changes, reason, profile):
    topo = gather_bundle(node(tmp_path, **changes))
    failures = check_profile(topo, profile)
    assert failures and failures[0]['check'] == 'driver_loaded'
    assert reason in failures[0]['message']
    assert [f['check'] for f in failures if f['check'] not in ('driver_loaded', 'nic_port_state')] == []


def test_xml_of_eight_and_matrix_of_four_disagree(tmp_path):
    topo = gather_bundle(node(tmp_path, **{TOPO: lambda t: keep_gpus_in_topo(t, 4)}))
    failures = check_profile(topo, {'nvlink_relation': 'NV12', 'gpu_count': 8})
    assert failures[0]['check'] == 'outputs_disagree'
    assert failures[0]['actual'] == {XML: 8, TOPO: 4, NVLINK: 8}
    assert 'GPU4, GPU5, GPU6, GPU7 is not in nvidia-smi-topo-m.txt' in failures[0]['message']
    assert checks(failures[1:]) == [('nvlink_relation', 'GPU%d' % i, 'not checked') for i in range(4, 8)]


def test_nvlink_naming_other_gpus_disagrees(tmp_path):
    # transform: the nvlink -s of the simulated H100 beside the A100's XML and matrix (same count, other UUIDs)
    h100_links = open(os.path.join(PROFILES, H100, NVLINK)).read()
    topo = gather_bundle(node(tmp_path, **{NVLINK: lambda _t: h100_links}))
    failures = check_profile(topo, {'nvlink_active_links': 12})
    assert [f['check'] for f in failures][:1] == ['outputs_disagree']
    assert failures[0]['message'].startswith('nvidia-smi-nvlink-s.txt names GPU UUIDs nvidia-smi-q-x.xml lists '
                                             'nowhere: GPU-')
    # the links were not matched to the XML's GPUs: not checked, never the H100's 18 links
    assert set(f['actual'] for f in failures[1:]) == {'not checked'}


def test_exit_255_with_complete_output_fails_its_part(tmp_path):
    topo = gather_bundle(node(tmp_path, **{TOPO + '_rc': rc(255)}))
    assert topo['outputs']['topo']['status'] == 'exit'
    assert topo['matrix']['GPU0']['GPU1'] == 'NV12'       # what it printed is kept
    failures = check_profile(topo, {})
    assert checks(failures) == [('nvsmi_exit', TOPO, 255)]
    assert failures[0]['message'] == ('nvidia-smi-topo-m.txt exited 255: other error or internal driver error; '
                                      'what it printed was kept')


@pytest.mark.parametrize('value', ['[Unknown Error]', 'Unknown Error'])
def test_unreadable_ecc_counter_is_not_checked(tmp_path, value):
    # transform: GPU0's aggregate dram_uncorrectable counter (0) printed as an NVML error
    topo = gather_bundle(node(tmp_path, **{XML: lambda t: xml_value(t, 'dram_uncorrectable', value, 1)}))
    failures = check_profile(topo, {'max_ecc_uncorrected': 0})
    assert checks(failures) == [('ecc_uncorrected', 'GPU0', 'not checked')]
    assert 'ecc_errors/aggregate/dram_uncorrectable: %s' % value in failures[0]['message']


@pytest.mark.parametrize('transform,line_no', [
    (lambda t: truncate_after_line(t, 13 * 7 + 5), 96),                    # cut inside GPU7's links
    (lambda t: damage_line(t, 20, '         Link 5: 25 GB'), 20),          # a damaged line
    (lambda t: damage_line(t, 20, '         Link 7: 25 GB/s'), 20),        # a lost line (link 5 then 7)
])
def test_damaged_nvlink_is_unreadable_not_a_hardware_failure(tmp_path, transform, line_no):
    topo = gather_bundle(node(tmp_path, **{NVLINK: transform}))
    failures = check_profile(topo, {'nvlink_active_links': 12})
    assert failures[0]['check'] == 'output_unreadable' and failures[0]['subject'] == 'nvidia-smi nvlink -s'
    assert failures[0]['actual'] == 'line %d' % line_no
    assert set(f['actual'] for f in failures[1:]) == {'not checked'}
    assert not [f for f in failures if isinstance(f['actual'], int)]


def test_nic_legend_name_without_sysfs_device_does_not_satisfy_the_relation(tmp_path):
    # transform: mlx5_0 and mlx5_1 (the PXB NICs of GPU0 and GPU1) are gone from sysfs; the matrix still names them
    dest = node(tmp_path)
    for name in ('mlx5_0', 'mlx5_1'):
        shutil.rmtree(os.path.join(dest, 'sys', 'class', 'infiniband', name))
    topo = gather_bundle(dest)
    failures = check_profile(topo, {'gpu_nic_relation_max': 'PXB'})
    assert checks(failures) == [('nic_missing', 'mlx5_0', None), ('nic_missing', 'mlx5_1', None),
                                ('gpu_nic_relation', 'GPU0', 'SYS'), ('gpu_nic_relation', 'GPU1', 'SYS')]
    # and the empty profile does not pass a node that lost an HCA
    assert checks(check_profile(topo, {})) == [('nic_missing', 'mlx5_0', None), ('nic_missing', 'mlx5_1', None)]


# ---------------------------------------------------------------- the baseline

def test_baseline_shapes_are_refused_with_what_was_given(tmp_path):
    snapshot = gather_bundle(node(tmp_path))
    assert validate_baseline(snapshot) == []
    # a snapshot of this schema taken before secure_boot was read is still a baseline
    assert validate_baseline(dict((k, v) for k, v in snapshot.items() if k != 'secure_boot')) == []
    registered = {'changed': False, 'passed': True, 'failures': [], 'regressions': [], 'gpu_topology': snapshot}
    cases = [
        (registered, 'baseline is a registered task result or a wrapper (keys changed, failures, gpu_topology, '
                     'passed, regressions), not a snapshot: pass its gpu_topology'),
        ({'gpu_topology': snapshot}, 'keys gpu_topology'),
        ({}, 'baseline is empty'),
        (dict((k, snapshot[k]) for k in ('gpus', 'nics')), 'baseline has schema_version None; this collection reads 3'),
        (dict(snapshot, schema_version=1), 'baseline has schema_version 1'),
        (dict((k, v) for k, v in snapshot.items() if k != 'matrix'), 'baseline lacks matrix'),
        ([], 'baseline is a list'),
    ]
    for baseline, message in cases:
        errors = validate_baseline(baseline)
        assert len(errors) == 1 and message in errors[0], (baseline if baseline == {} else list(baseline), errors)


@pytest.mark.parametrize('transform,message', [
    (lambda s: s['gpus'][0].pop('index'), 'baseline.gpus[0] has no index'),
    (lambda s: s['gpus'][1].update(index='1'), "baseline.gpus[1].index is '1', expected int"),
    (lambda s: s['gpus'][2].update(nvlink_active='12'), "baseline.gpus[2].nvlink_active is '12', expected int or null"),
    (lambda s: s['gpus'][0]['pcie'].update(width_current='x16'), "baseline.gpus[0].pcie.width_current is 'x16'"),
    (lambda s: s['nics'][0]['ports'][0].pop('port'), 'baseline.nics[0].ports[0] has no port'),
    (lambda s: s['nics'][0].pop('name'), 'baseline.nics[0] has no name'),
    (lambda s: s['nics'][0]['ports'][0]['counters'].update(link_downed=None),
     'baseline.nics[0].ports[0].counters.link_downed is None, expected a non-negative int'),
    (lambda s: s['matrix'].update(GPU0=None), 'baseline.matrix.GPU0 must map device names to relation strings'),
    (lambda s: s.update(gpus=None), 'baseline.gpus is a null, expected list'),
    (lambda s: s['gpus'].append('GPU8'), 'baseline.gpus[8] is a str, not a dict'),
])
def test_malformed_baselines_are_clean_errors(tmp_path, transform, message):
    snapshot = gather_bundle(node(tmp_path))
    broken = copy.deepcopy(snapshot)
    transform(broken)
    errors = validate_baseline(broken)
    assert any(message in e for e in errors), errors


def test_baseline_from_another_node_is_refused(tmp_path):
    a100 = gather_bundle(node(tmp_path))
    h100 = gather_bundle(node(tmp_path, H100))
    assert other_node(a100, a100) is None
    assert other_node(a100, h100).startswith('baseline belongs to another node: no GPU UUID or serial in common')
    bare = dict(h100, gpus=[])            # a node whose GPUs cannot be read now: not refused, GPUs reported lost
    assert other_node(a100, bare) is None


def test_timeouts_are_named_and_the_rest_still_read(tmp_path):
    topo = gather_bundle(node(tmp_path, **{TOPO + '_rc': rc(124)}))
    assert topo['outputs']['topo']['status'] == 'timeout'
    assert topo['gpu_count'] == 8 and topo['gpus'][0]['nvlink_active'] == 12
    failures = check_profile(topo, {'nvlink_relation': 'NV12'})
    assert checks(failures) == [('nvsmi_timeout', TOPO, 'killed'), ('nvlink_relation', 'node', 'not checked')]
    assert failures[0]['message'] == "nvidia-smi-topo-m.txt was stopped by the capture's time limit (exit 124)"


# ---------------------------------------------------------------- 2. never an exception

def test_non_utf8_output_is_read_with_a_warning(tmp_path):
    with open(os.path.join(PROFILES, A100, TOPO), 'rb') as handle:
        data = invalid_utf8(handle.read(), after=b'Legend:')
    topo = gather_bundle(node(tmp_path, **{TOPO: data}))
    assert topo['gpu_count'] == 8 and topo['errors'] == []
    assert [w for w in topo['warnings'] if 'not valid UTF-8' in w] == [
        'nvidia-smi-topo-m.txt: not valid UTF-8 (first bad byte at offset %d); 2 character(s) replaced with U+FFFD'
        % (data.index(b'\xff'))]


@pytest.mark.parametrize('content,warning', [
    (b'garbage\n', "nvidia-smi-q-x.xml.rc holds 'garbage', not an exit status"),
    (b'\xc2\xb2\n', "nvidia-smi-q-x.xml.rc holds '\u00b2', not an exit status"),
])
def test_rc_file_that_is_not_a_status(tmp_path, content, warning):
    topo = gather_bundle(node(tmp_path, **{XML + '_rc': content}))
    assert any(warning in w for w in topo['warnings'])
    assert topo['outputs']['xml']['status'] == 'exit'
    assert [f['check'] for f in check_profile(topo, {})] == ['nvsmi_exit']


def test_rc_directory_is_a_warning(tmp_path):
    dest = node(tmp_path)
    os.mkdir(os.path.join(dest, XML + '.rc'))
    topo = gather_bundle(dest)
    assert any('nvidia-smi-q-x.xml.rc is not a regular file' in w for w in topo['warnings'])


def test_device_error_lines_are_deduplicated_in_linear_time(tmp_path):
    line = real_text('nvsmi-errors/unable-to-determine-device-handle-GPU1-then-partial-table-rtxpro6000.txt')
    line = line.splitlines()[0] + '\n'
    # transform: the error line repeated 32,000 times before the A100's XML (a GPU flapping during the query)
    start = time.time()
    topo = gather_bundle(node(tmp_path, **{XML: lambda t: line * 32000 + t}))
    assert topo['device_errors'] == [{'gpu': 1, 'pci_bus_id': '0000:34:00.0', 'reason': 'Unknown Error', 'readable': False}]
    # the XML still prints all its attached GPUs: none is renumbered, no GPU8 appears
    assert [g['index'] for g in topo['gpus']] == list(range(8))
    assert time.time() - start < 60        # a guard against a hang, not a timing claim (bench/ has the ratio)


def test_warnings_per_output_are_bounded(tmp_path):
    def noisy(text):
        """Transform: every GPU row of the matrix gets an extra affinity cell (a column-aligned copy's damage)."""
        return '\n'.join(l + '\tx' if l.startswith('GPU') else l for l in text.split('\n'))
    # the same 8-row noise, with the header repeated 10 times as NIC rows would be: use 40 GPUs of warnings
    topo = gather_bundle(node(tmp_path, **{TOPO: noisy}))
    topo_warnings = [w for w in topo['warnings'] if w.startswith('nvidia-smi topo -m')]
    assert 1 <= len(topo_warnings) <= 21


def test_stderr_with_exit_0_and_complete_output_is_a_warning(tmp_path):
    # transform: "Failed to initialize NVML: Unknown Error" on stderr while stdout is complete (exit 0)
    text = open(os.path.join(PROFILES, A100, XML)).read()
    status, failure, kept = judge_output('nvidia-smi -q -x', 0, text, 'Failed to initialize NVML: Unknown Error\n',
                                         False)
    assert (status, failure, kept) == ('ok', None, text)
    status, failure, kept = judge_output('nvidia-smi -q -x', 0, '', 'Failed to initialize NVML: Unknown Error\n',
                                         False)
    assert status == 'failed' and failure['kind'] == 'nvml_error' and kept is None


def test_duplicate_uuids_warn(tmp_path):
    def same_uuid(text):
        """Transform: GPU1 printed with GPU0's UUID (a broken VM passthrough)."""
        first = xml_value(text, 'uuid', 'X', 0)
        uuid = text[text.index('<uuid>') + 6:text.index('</uuid>')]
        return xml_value(first, 'uuid', uuid, 1).replace('<uuid>X</uuid>', '<uuid>%s</uuid>' % uuid, 1)
    topo = gather_bundle(node(tmp_path, **{XML: same_uuid}))
    assert any('is printed for more than one GPU' in w for w in topo['warnings'])


# ---------------------------------------------------------------- 3. real outputs the parsers read

def test_underlined_topo_header_gives_the_same_facts(tmp_path):
    plain = gather_bundle(node(tmp_path))
    underlined = gather_bundle(node(tmp_path, **{TOPO: underline_topo_header}))
    assert underlined['matrix'] == plain['matrix'] and underlined['errors'] == []


def test_insufficient_permissions_as_a_value_is_not_a_permission_failure(tmp_path):
    def power_smoothing(text):
        """Transform: GB200 / driver 580 print <power_smoothing>Insufficient Permissions</power_smoothing>."""
        return text.replace('<persistence_mode>', '<power_smoothing>Insufficient Permissions</power_smoothing>'
                            '\n        <persistence_mode>')
    topo = gather_bundle(node(tmp_path, **{XML: power_smoothing}))
    assert topo['driver_loaded'] is True and topo['driver_error'] is None and topo['gpu_count'] == 8


def test_bundle_with_only_nvlink_names_every_gpu(tmp_path):
    topo = gather_bundle(node(tmp_path, sysfs=False, **{XML: None, TOPO: None}))
    assert topo['driver_loaded'] is True and topo['gpu_count'] == 8
    assert [(g['index'], g['name'], g['nvlink_active']) for g in topo['gpus']][:2] == [
        (0, 'NVIDIA A100-SXM4-40GB', 12), (1, 'NVIDIA A100-SXM4-40GB', 12)]
    assert topo['gpus'][0]['uuid'].startswith('GPU-')
    failures = check_profile(topo, {'nvlink_active_links': 12, 'gpu_count': 8, 'gpu_model': 'NVIDIA A100*'})
    assert failures == []


# ---------------------------------------------------------------- 4. the table

def test_table_has_one_row_per_check_and_key():
    names = [c.name for c in CHECKS]
    keys = [c.key for c in CHECKS if c.key]
    assert len(names) == len(set(names)) and len(keys) == len(set(keys))
    assert all(c.doc and c.func for c in CHECKS)
    assert owned_keys('nvidia_driver') == ['driver_loaded', 'driver_version', 'next_boot_driver', 'persistence_mode']
    assert owned_keys('mig') == ['mig_devices', 'mig_mode']
    assert set(STATUSES) == {'ok', 'exit', 'failed', 'timeout', 'unreadable', 'missing', 'skipped'}


@pytest.mark.parametrize('profile,error', [
    ({'nic_names': []}, 'profile key nic_names must be a non-empty list of globs (leave the key out to select every'),
    ({'nic_names': ['mlx5_[0-3']}, 'a glob must not be empty or have an unclosed ['),
    ({'gpu_model': 'NVIDIA [H100'}, 'profile key gpu_model must be a glob'),
    ({'nvlink_relation': 'NV'}, 'profile key nvlink_relation must be a relation such as NV18'),
    ({'mig_mode': 'enabled'}, 'profile key mig_mode must be one of Enabled, Disabled'),
    ({'gpu_nic_relation_max': 'NV4'}, 'profile key gpu_nic_relation_max must be one of PIX, PXB, PHB, NODE, SYS'),
    ({'nic_rate_min_gbps': True}, 'profile key nic_rate_min_gbps must be a non-negative number'),
])
def test_bad_profile_values_name_the_key(profile, error):
    errors = validate_profile(profile)
    assert len(errors) == 1 and error in errors[0], errors


def test_lower_case_port_state_in_the_profile_matches(tmp_path):
    topo = gather_bundle(node(tmp_path))
    assert check_profile(topo, {'nic_names': ['mlx5_0'], 'nic_port_state': 'active'}) == []


def test_regressions_against_a_validated_baseline(tmp_path):
    before = gather_bundle(node(tmp_path))
    after = gather_bundle(node(tmp_path, **{NVLINK: lambda t: t.replace('Link 3: 25 GB/s', 'Link 3: <inactive>', 1)}))
    assert [(r['check'], r['subject'], r['before'], r['after']) for r in find_regressions(before, after)] == [
        ('nvlink_lost', 'GPU0', 12, 11)]


# ---------------------------------------------------------------- what a baseline can no longer compare

def regs(before, after):
    return [(r['check'], r['subject'], r['before'], r['after']) for r in find_regressions(before, after)]


def test_a_value_read_before_and_unreadable_now_is_a_regression(tmp_path):
    before = gather_bundle(node(tmp_path))
    after = gather_bundle(node(tmp_path, **{XML: lambda t: xml_value(t, 'dram_uncorrectable', '[Unknown Error]', 1)}))
    assert regs(before, after) == [('ecc_errors_new', 'GPU0', 0, 'not checked')]
    empty_links = gather_bundle(node(tmp_path, **{NVLINK: lambda _t: ''}))       # transform: nothing printed, exit 0
    assert regs(before, empty_links) == [('nvlink_lost', 'GPU%d' % i, 12, 'not checked') for i in range(8)]


def test_an_output_read_before_and_missing_now_is_not_compared(tmp_path):
    before = gather_bundle(node(tmp_path))
    after = gather_bundle(node(tmp_path, **{TOPO: None, NVLINK: None}))
    assert [r[:2] for r in regs(before, after)] == [('not_compared', TOPO), ('not_compared', NVLINK)] + [
        ('nvlink_lost', 'GPU%d' % i) for i in range(8)]


def test_every_query_timing_out_is_not_every_gpu_lost(tmp_path):
    before = gather_bundle(node(tmp_path))
    after = gather_bundle(node(tmp_path, **{XML + '_rc': rc(124), TOPO + '_rc': rc(124), NVLINK + '_rc': rc(124)}))
    assert after['driver_loaded'] is False and after['driver_error'] is None
    assert [r[:4] for r in regs(before, after)] == [
        ('not_compared', XML, 'ok', 'timeout'), ('not_compared', TOPO, 'ok', 'timeout'),
        ('not_compared', NVLINK, 'ok', 'timeout')]


# ---------------------------------------------------------------- more ways a node could pass unread

def test_xml_printing_fewer_gpus_than_attached_disagrees(tmp_path):
    def drop_last_gpu(text):
        """Transform: the last <gpu> element gone while <attached_gpus> still says 8 (a GPU nvidia-smi skipped)."""
        return text[:text.rindex('    <gpu id=')] + '</nvidia_smi_log>\n'
    topo = gather_bundle(node(tmp_path, **{XML: drop_last_gpu, TOPO: lambda t: keep_gpus_in_topo(t, 7),
                                           NVLINK: lambda t: t[:t.index('GPU 7:')]}))
    # -q -x says so itself, and the PCI bus still shows the GPU at bd:00.0
    assert checks(check_profile(topo, {})) == [('outputs_disagree', 'node', 7),
                                               ('outputs_disagree', 'node', ['0000:bd:00.0'])]


@pytest.mark.parametrize('value', ['GPU is lost', 'ERR!', 'Maybe'])
def test_retired_pages_neither_yes_nor_no_is_not_checked(tmp_path, value):
    with open(os.path.join(REPO, 'tests', 'fixtures', 'real', 'nvsmi-xml',
                           'tesla-p100-pcie-16gb-driver510-gce-netdata.xml')) as handle:
        p100 = xml_value(handle.read(), 'pending_retirement', value)    # transform: the P100's "No" replaced
    dest = str(tmp_path / 'p100')
    os.makedirs(dest)
    with open(os.path.join(dest, XML), 'w') as handle:
        handle.write(p100)
    topo = gather_bundle(dest)
    assert checks(check_profile(topo, {'allow_retired_pages_pending': False})) == [
        ('retired_pages_pending', 'GPU0', 'not checked')]


def test_inforom_warning_fails_gpu_error(tmp_path):
    warning = 'WARNING: infoROM is corrupted at gpu 0000:07:00.0\n'     # transform: the warning before the output
    topo = gather_bundle(node(tmp_path, **{XML: lambda t: warning + t, TOPO: lambda t: warning + t}))
    failures = check_profile(topo, {})
    assert checks(failures) == [('gpu_error', 'GPU0', 'infoROM is corrupted')]     # GPU0 is at 07:00.0
    assert failures[0]['message'] == 'nvidia-smi warned about GPU0 (0000:07:00.0): infoROM is corrupted'


def test_text_before_the_xml_is_a_warning(tmp_path):
    topo = gather_bundle(node(tmp_path, **{XML: lambda t: 'Some notice from the tool\n' + t}))
    assert 'nvidia-smi -q -x: text before the XML: Some notice from the tool' in topo['warnings']


def test_entity_declarations_are_refused(tmp_path):
    def entity(text):
        """Transform: an internal entity declared in the DOCTYPE (a crafted file, never nvidia-smi)."""
        return text.replace('<nvidia_smi_log>', '<!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>', 1)
    topo = gather_bundle(node(tmp_path, **{XML: entity}))
    assert checks(check_profile(topo, {}))[0][0] == 'output_unreadable'


def test_topo_cut_inside_the_nic_legend_is_unreadable(tmp_path):
    topo = gather_bundle(node(tmp_path, H100, **{TOPO: lambda t: t[:t.index('  NIC4:')]}))
    assert topo['errors'][0]['reason'].startswith('the NIC Legend has no entry for NIC4')


@pytest.mark.parametrize('content', [b'--5\n', b'5-\n', b'\xb2\n'])
def test_odd_rc_contents_never_raise(tmp_path, content):
    topo = gather_bundle(node(tmp_path, **{XML + '_rc': content}))
    assert topo['outputs']['xml']['rc'] == 1


def test_fifo_in_sysfs_does_not_hang(tmp_path):
    dest = node(tmp_path)
    numa = os.path.join(dest, 'sys', 'bus', 'pci', 'devices')
    target = os.path.join(numa, sorted(os.listdir(numa))[0], 'numa_node')
    os.remove(target)
    os.mkfifo(target)                                                   # transform: a FIFO where a file was
    topo = gather_bundle(dest)
    assert any('is not a regular file' in w for w in topo['warnings'])


def test_nvidia_smi_that_cannot_run_says_so(tmp_path):
    # what the runner (module_utils.command) gives for a program the kernel refuses to start
    smi = tmp_path / 'nvidia-smi'
    smi.write_bytes(b'\x7fELF not really')
    smi.chmod(0o755)
    rc, out, err, timed_out = command.run(None, [str(smi), '-q', '-x'], binary=True)
    status, failure, _text = judge_output('nvidia-smi -q -x', rc, out.decode(), err.decode(), timed_out)
    assert status == 'failed' and failure == {'kind': 'not_run', 'rc': None,
                                              'message': 'nvidia-smi could not be run: Exec format error'}


def test_old_form_device_error_is_placed_in_bus_order(tmp_path):
    line = real_text('nvsmi-errors/gpu-is-lost-old-format-busid-only.txt').splitlines()[0] + '\n'
    line = line.replace('0000:05:00.0', '0000:4E:00.0')     # transform: the real line, for the GPU at 4E:00.0

    def lost_gpu3(text):
        """Transform: GPU3 (4E:00.0) gone from -q -x, attached_gpus still 8, the old-form error line before it."""
        start = text.index('<gpu id="00000000:4E:00.0">')
        start = text.rindex('\n', 0, start) + 1
        end = text.index('</gpu>', start) + len('</gpu>\n')
        return line + text[:start] + text[end:]
    topo = gather_bundle(node(tmp_path, **{XML: lost_gpu3, TOPO: None, NVLINK: None}))
    assert [g['index'] for g in topo['gpus']] == [0, 1, 2, 4, 5, 6, 7]
    assert topo['device_errors'][0]['gpu'] == 3
    assert checks(check_profile(topo, {})) == [('gpu_error', 'GPU3', 'GPU is lost')]


@pytest.mark.parametrize('transform,message', [
    (lambda s: s['outputs'].update(xml='ok'), "baseline.outputs.xml must be a dict with a status string, got 'ok'"),
    (lambda s: s['gpus'].append(dict(s['gpus'][0])), 'baseline.gpus lists 0 twice'),
    (lambda s: s['nics'].append(dict(s['nics'][0])), "baseline.nics lists 'mlx5_0' twice"),
    (lambda s: s['nics'][0]['ports'][0]['counters'].update(link_downed=-1),
     'baseline.nics[0].ports[0].counters.link_downed is -1, expected a non-negative int'),
])
def test_more_malformed_baselines(tmp_path, transform, message):
    broken = copy.deepcopy(gather_bundle(node(tmp_path)))
    transform(broken)
    assert message in validate_baseline(broken)


def test_output_unreadable_in_the_baseline_is_a_gap_not_a_pass(tmp_path):
    before = gather_bundle(node(tmp_path, **{NVLINK + '_rc': rc(124)}))
    after = gather_bundle(node(tmp_path, **{NVLINK: lambda t: t.replace('Link 3: 25 GB/s', 'Link 3: <inactive>', 1)}))
    assert baseline_gaps(before, after) == [
        'nvidia-smi-nvlink-s.txt was timeout in the baseline: NVLink link regressions were not compared']
    assert baseline_gaps(after, after) == []


def test_port_regressions_say_not_checked_instead_of_none(tmp_path):
    before = gather_bundle(node(tmp_path))
    dest = node(tmp_path)
    os.remove(os.path.join(dest, 'sys', 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'state'))  # transform
    os.remove(os.path.join(dest, 'sys', 'class', 'infiniband', 'mlx5_1', 'ports', '1', 'rate'))   # transform
    got = [r for r in find_regressions(before, gather_bundle(dest)) if r['check'] == 'nic_port_down']
    assert [(r['subject'], r['after'], r['message']) for r in got] == [
        ('mlx5_0/1', 'not checked', 'mlx5_0/1 went from ACTIVE to not checked (state unreadable in sysfs)'),
        ('mlx5_1/1', 'not checked', 'mlx5_1/1 rate (Gb/s) was 200 before the change and cannot be read now')]
