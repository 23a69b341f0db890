# -*- coding: utf-8 -*-
"""The two modules, with nvidia-smi replaced by recorded real outputs answering the runner (module_utils.command)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.modules import gpu_topology_check, gpu_topology_facts
from real_captures import PROFILES, extract_ttar, profile_text, real_text
from module_harness import deprecations_of, executor_result

DRIVER_MISSING = 'nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt'


class Recorded(object):
    """command.execute stand-in: maps an nvidia-smi argv tail to (rc, real output[, stderr[, timed out]])."""

    def __init__(self, outputs):
        self.outputs = outputs
        self.calls = []
        self.timeouts = []
        self.envs = []

    def __call__(self, args, env, cwd=None, timeout=None, kill_after=0):
        self.calls.append(list(args))
        self.timeouts.append(timeout)
        self.envs.append(env)
        key = ' '.join(args[1:])
        rc, rel = self.outputs[key][:2]
        err, timed_out = (tuple(self.outputs[key][2:]) + ('', False))[:2]
        text = rel() if callable(rel) else real_text(rel)   # a transform of a real capture, or the capture
        return rc, text.encode('utf-8') if isinstance(text, str) else text, err.encode('utf-8'), timed_out


def run_module(mod, monkeypatch, capsys, args, outputs, binaries=('nvidia-smi',)):
    """Run a module with nvidia-smi (and the package tools in ``binaries``) answering from ``outputs``."""
    recorded = Recorded(outputs)
    monkeypatch.setattr(command, 'execute', recorded)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, required=False, opt_dirs=None: '/usr/bin/' + name if name in binaries else None)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            mod.main()
    raw = json.loads(capsys.readouterr().out)
    assert deprecations_of(raw) == []
    # the result as Ansible's task executor reads it (failed from rc when the module does not say)
    return executor_result(raw), recorded


def a100(name):
    """One output of the simulated DGX A100 (simulator/profiles/a100-sxm-8gpu-ib: real A100 captures, 8 GPUs)."""
    return lambda: profile_text('a100-sxm-8gpu-ib', name)


def a100_sys(tmp_path):
    """The simulated DGX A100's sysfs tree (its HCAs, PCI devices and NUMA nodes), unpacked under tmp_path."""
    dest = os.path.join(str(tmp_path), 'sys')
    if not os.path.isdir(dest):
        extract_ttar(os.path.join(PROFILES, 'a100-sxm-8gpu-ib', 'sys.ttar'), dest)
    return dest


A100_OUTPUTS = {
    '-q -x': (0, a100('nvidia-smi-q-x.xml')),
    'topo -m': (0, a100('nvidia-smi-topo-m.txt')),
    'nvlink -s': (0, a100('nvidia-smi-nvlink-s.txt')),
}


def test_facts_runs_the_three_commands(monkeypatch, capsys, tmp_path):
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys,
                                  {'sysfs_root': a100_sys(tmp_path)}, A100_OUTPUTS)
    assert recorded.calls == [['/usr/bin/nvidia-smi', '-q', '-x'], ['/usr/bin/nvidia-smi', 'topo', '-m'],
                              ['/usr/bin/nvidia-smi', 'nvlink', '-s']]
    topo = result['ansible_facts']['gpu_topology']
    assert result['changed'] is False
    assert topo['schema_version'] == 3
    assert topo['driver_loaded'] is True
    assert topo['gpus'][0]['name'] == 'NVIDIA A100-SXM4-40GB'
    assert topo['gpus'][0]['nvlink_active'] == 12
    assert topo['gpus'][0]['sources'] == ['xml', 'topo', 'nvlink']
    assert topo['matrix']['GPU0']['mlx5_1'] == 'PXB'
    assert [(o['source'], o['status'], o['gpus']) for o in topo['outputs'].values()] == [
        ('nvidia-smi -q -x', 'ok', list(range(8))), ('nvidia-smi topo -m', 'ok', list(range(8))),
        ('nvidia-smi nvlink -s', 'ok', list(range(8)))]
    assert recorded.timeouts == [60, 60, 60]
    # the best parsable locale, for every call (C here: the stand-in get_bin_path finds no locale program)
    assert [(env['LC_ALL'], env['LANG'], 'LANGUAGE' in env) for env in recorded.envs] == [('C', 'C', False)] * 3
    assert topo['missing'] == [] and len(topo['nics']) == 12


def test_facts_driver_not_loaded_does_not_fail(monkeypatch, capsys, tmp_path):
    outputs = dict((k, (9, DRIVER_MISSING)) for k in A100_OUTPUTS)
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)}, outputs)
    assert result['failed'] is False
    topo = result['ansible_facts']['gpu_topology']
    assert topo['driver_loaded'] is False
    assert topo['driver_error']['kind'] == 'driver_not_loaded'
    assert topo['driver_error']['rc'] == 9
    assert len(recorded.calls) == 1      # nothing more is asked of a node without a driver


def test_facts_unreadable_output_fails_clearly(monkeypatch, capsys, tmp_path):
    outputs = dict(A100_OUTPUTS)
    outputs['topo -m'] = (0, 'topo/h100-8gpu-12nic-tpgds-aihub0008-CORRUPTED-paste.txt')
    result, _rec = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)}, outputs)
    assert result['failed'] is True
    assert result['msg'].startswith('could not read: nvidia-smi topo -m: line 7')
    assert 'Traceback' not in json.dumps(result)


def test_check_reports_failures_without_failing_when_asked(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'fail_on_mismatch': False,
            'expected': {'gpu_count': 4, 'mig_mode': 'Enabled', 'nvlink_relation': 'NV12'}}
    result, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['passed'] is False
    assert result['failed'] is False
    assert sorted(set(f['check'] for f in result['failures'])) == ['gpu_count', 'mig_mode']
    assert result['gpu_topology']['gpu_count'] == 8


def test_check_fails_task_by_default(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'expected': {'gpu_count': 16}}
    result, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True
    assert 'expected 16 GPUs, found 8' in result['msg']


def test_check_baseline_regressions(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'fail_on_mismatch': False}
    before, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert before['passed'] is True
    outputs = dict(A100_OUTPUTS)

    def two_links_down():
        """Transform: links 3 and 5 of GPU0 go inactive, as the V100 capture shows inactive links."""
        lines = profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-nvlink-s.txt').split('\n')
        for link in (3, 5):
            lines[1 + link] = lines[1 + link].replace('25 GB/s', '<inactive>')
        return '\n'.join(lines)
    outputs['nvlink -s'] = (0, two_links_down)
    args['baseline'] = before['gpu_topology']
    after, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, outputs)
    assert after['passed'] is False
    assert [(r['check'], r['subject'], r['before'], r['after']) for r in after['regressions']] == [
        ('nvlink_lost', 'GPU0', 12, 10)]


def test_check_rejects_unknown_profile_keys_before_touching_the_node(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'expected': {'gpu_cuont': 8}}
    result, recorded = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True
    assert 'unknown profile key(s): gpu_cuont' in result['msg']
    assert recorded.calls == []


def test_bundle_dir_reads_files(monkeypatch, capsys, bundle):
    path = bundle(xml='nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml')
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys, {'bundle_dir': path}, {})
    assert recorded.calls == []
    topo = result['ansible_facts']['gpu_topology']
    assert topo['gpus'][0]['name'] == 'Tesla P100-PCIE-16GB'
    assert 'nvidia-smi-topo-m.txt' in topo['missing']


def test_a_failing_nvlink_query_does_not_unload_the_driver(monkeypatch, capsys, tmp_path):
    outputs = dict(A100_OUTPUTS)
    # transform: nvlink -s fails with an unrecognised message (as with all links inactive)
    outputs['nvlink -s'] = (3, 'nvsmi-errors/gpu-reset-not-supported-vm-DOCEXAMPLE.txt')
    result, _rec = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)}, outputs)
    topo = result['ansible_facts']['gpu_topology']
    assert topo['driver_loaded'] is True
    assert topo['driver_error'] is None
    assert topo['gpus'][0]['nvlink_active'] is None
    assert topo['outputs']['nvlink']['status'] == 'failed' and topo['outputs']['nvlink']['rc'] == 3


def test_missing_binary_is_reported_by_command(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, required=False, opt_dirs=None: None)
    with patch_module_args({'sysfs_root': a100_sys(tmp_path)}):
        with pytest.raises(SystemExit):
            gpu_topology_facts.main()
    topo = json.loads(capsys.readouterr().out)['ansible_facts']['gpu_topology']
    assert topo['driver_loaded'] is False
    assert topo['driver_error']['kind'] == 'nvidia_smi_missing'
    assert topo['missing'][:3] == ['nvidia-smi -q -x', 'nvidia-smi topo -m', 'nvidia-smi nvlink -s']


def test_check_mode_reads_the_same(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'expected': {'mig_mode': 'Disabled'}, '_ansible_check_mode': True}
    result, recorded = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['passed'] is True and result['changed'] is False
    assert len(recorded.calls) == 3


def test_a_hung_nvidia_smi_is_killed_and_named(monkeypatch, capsys, tmp_path):
    """The real bounded runner against a stand-in nvidia-smi that answers -q -x from a simulated A100 and hangs on
    topo -m (a GPU that fell off the bus)."""
    xml = tmp_path / 'q-x.xml'
    xml.write_text(profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-q-x.xml'))
    smi = tmp_path / 'nvidia-smi'
    smi.write_text('#!/bin/sh\ncase "$1" in -q) cat %s ;; topo) sleep 30 ;; *) exit 3 ;; esac\n' % xml)
    smi.chmod(0o755)
    args = {'nvidia_smi': str(smi), 'sysfs_root': a100_sys(tmp_path), 'command_timeout': 1,
            'expected': {'gpu_count': 8, 'nvlink_relation': 'NV12'}, 'fail_on_mismatch': False}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_topology_check.main()
    result = json.loads(capsys.readouterr().out)
    outputs = result['gpu_topology']['outputs']
    assert [outputs[p]['status'] for p in ('xml', 'topo', 'nvlink')] == ['ok', 'timeout', 'failed']
    assert [(f['check'], f['subject']) for f in result['failures']] == [
        ('nvsmi_exit', 'nvidia-smi nvlink -s'), ('nvsmi_timeout', 'nvidia-smi topo -m'),
        ('nvlink_relation', 'node')]
    assert result['failures'][1]['message'] == 'nvidia-smi topo -m did not finish within 1 s and was killed'
    assert result['gpu_topology']['gpu_count'] == 8


@pytest.mark.parametrize('args,message', [
    ({'command_timeout': 0}, 'command_timeout must be at least 1'),
    ({'sysfs_root': '/sy'}, 'sysfs_root /sy is not a directory'),
])
def test_bad_gather_options_fail_before_anything_runs(monkeypatch, capsys, args, message):
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True and message in result['msg'] and recorded.calls == []


def test_non_executable_nvidia_smi_is_not_reported_as_missing(monkeypatch, capsys, tmp_path):
    smi = tmp_path / 'nvidia-smi'
    smi.write_text('not a program\n')
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys,
                                  {'nvidia_smi': str(smi), 'sysfs_root': a100_sys(tmp_path)}, A100_OUTPUTS)
    error = result['ansible_facts']['gpu_topology']['driver_error']
    assert error == {'kind': 'nvidia_smi_unusable', 'rc': None,
                     'message': 'nvidia-smi at %s is not an executable file' % smi}
    assert recorded.calls == []


def test_non_utf8_live_output_keeps_the_facts(monkeypatch, capsys, tmp_path):
    outputs = dict(A100_OUTPUTS)
    # transform: two invalid UTF-8 bytes in the matrix's legend
    outputs['topo -m'] = (0, lambda: profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-topo-m.txt').encode('utf-8')
                          .replace(b'Legend:', b'Legend:\xff\xfe', 1))
    result, _rec = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)}, outputs)
    topo = result['ansible_facts']['gpu_topology']
    assert result['failed'] is False and topo['gpu_count'] == 8 and topo['matrix']['GPU0']['GPU7'] == 'NV12'
    assert any(w.startswith('nvidia-smi topo -m: not valid UTF-8') for w in topo['warnings'])


def test_wrong_baseline_is_refused_before_the_node_is_read(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'fail_on_mismatch': False}
    before, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    args['baseline'] = before            # the whole registered result, not its gpu_topology
    result, recorded = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True and recorded.calls == []
    assert result['msg'].startswith('invalid baseline: baseline is a registered task result or a wrapper')


def test_baseline_of_another_node_is_refused(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'fail_on_mismatch': False}
    h100 = dict((k, (0, lambda n=n: profile_text('h100-sxm-8gpu-ib', n)))
                for k, n in (('-q -x', 'nvidia-smi-q-x.xml'), ('topo -m', 'nvidia-smi-topo-m.txt'),
                             ('nvlink -s', 'nvidia-smi-nvlink-s.txt')))
    other, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, h100)
    args['baseline'] = other['gpu_topology']
    result, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True
    assert result['msg'].startswith('baseline belongs to another node: no GPU UUID or serial in common')


def test_defer_roles_lists_what_the_driver_role_will_converge(monkeypatch, capsys, tmp_path):
    outputs = dict((k, (9, DRIVER_MISSING)) for k in A100_OUTPUTS)
    args = {'sysfs_root': a100_sys(tmp_path), 'fail_on_mismatch': False, 'defer_roles': ['nvidia_driver'],
            'expected': {'driver_version': '550.*', 'nvlink_relation': 'NV12', 'persistence_mode': 'Enabled'}}
    result, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, outputs)
    assert result['passed'] is True and result['failures'] == []
    assert [(d['check'], d['role']) for d in result['deferred']] == [
        ('nic_missing', 'nvidia_driver'), ('driver_loaded', 'nvidia_driver'), ('driver_version', 'nvidia_driver'),
        ('nvlink_relation', 'nvidia_driver'), ('persistence_mode', 'nvidia_driver')]
    assert result['deferred'][3]['why'] == 'needs the driver the nvidia_driver role installs in this run'
    assert result['deferred'][1]['why'] == 'converged by the nvidia_driver role in this run'
    assert result['msg'] == '0 failure(s), 0 regression(s), 5 deferred'
    # without the deferral the same node fails driver_loaded
    del args['defer_roles']
    result, _rec = run_module(gpu_topology_check, monkeypatch, capsys, args, outputs)
    assert [f['check'] for f in result['failures']] == ['driver_loaded']


def test_defer_roles_rejects_an_unknown_role(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': a100_sys(tmp_path), 'defer_roles': ['nvidia']}
    result, recorded = run_module(gpu_topology_check, monkeypatch, capsys, args, A100_OUTPUTS)
    assert result['failed'] is True and 'defer_roles' in result['msg'] and recorded.calls == []


def test_a_child_holding_the_output_does_not_discard_a_finished_answer(tmp_path):
    """The runner against a stand-in that prints the simulated A100's -q -x, leaves a child holding its stdout
    and exits 0: the output and the exit status are kept, with a note."""
    xml = tmp_path / 'q-x.xml'
    xml.write_text(profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-q-x.xml'))
    smi = tmp_path / 'nvidia-smi'
    smi.write_text('#!/bin/sh\ncat %s\nsleep 30 &\nexit 0\n' % xml)
    smi.chmod(0o755)
    rc, out, err, timed_out = command.run(None, [str(smi), '-q', '-x'], timeout=1, binary=True)
    assert (rc, timed_out) == (0, False)
    assert out.decode('utf-8') == xml.read_text()
    assert err.endswith(b'\nnvidia-smi exited 0 but a process it started kept its output open; stopped after 1 s')


def test_installed_driver_from_dpkg(monkeypatch, capsys, tmp_path):
    outputs = dict(A100_OUTPUTS)
    # dpkg-query's own output forms, for the package Debian 13 ships NVML in (the debian13_real_nvidia scenario
    # checks the same against the real packages)
    outputs['-S libnvidia-ml.so.1'] = (0, lambda: 'libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n')
    outputs['-W -f=${Version} libnvidia-ml1'] = (0, lambda: '550.163.01-2')
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)},
                                  outputs, binaries=('nvidia-smi', 'dpkg-query'))
    topo = result['ansible_facts']['gpu_topology']
    assert topo['driver_installed'] == {'package': 'libnvidia-ml1', 'package_version': '550.163.01-2',
                                        'version': '550.163.01'}
    assert topo['driver_installed_version'] == '550.163.01'
    assert recorded.calls[-2:] == [['/usr/bin/dpkg-query', '-S', 'libnvidia-ml.so.1'],
                                   ['/usr/bin/dpkg-query', '-W', '-f=${Version}', 'libnvidia-ml1']]


def test_no_installed_driver(monkeypatch, capsys, tmp_path):
    outputs = dict(A100_OUTPUTS)
    outputs['-S libnvidia-ml.so.1'] = (1, lambda: '')       # dpkg-query: no path found matching pattern
    result, _rec = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': a100_sys(tmp_path)},
                              outputs, binaries=('nvidia-smi', 'dpkg-query'))
    assert result['ansible_facts']['gpu_topology']['driver_installed_version'] is None


def roce(name):
    """One output of the simulated PCIe RoCE node (simulator/profiles/pcie-4gpu-roce: 4 P100, one ConnectX-7)."""
    return lambda: profile_text('pcie-4gpu-roce', name)


def roce_sys(tmp_path):
    dest = os.path.join(str(tmp_path), 'roce-sys')
    if not os.path.isdir(dest):
        extract_ttar(os.path.join(PROFILES, 'pcie-4gpu-roce', 'sys.ttar'), dest)
    return dest


ROCE_OUTPUTS = {
    '-q -x': (0, roce('nvidia-smi-q-x.xml')),
    'topo -m': (0, roce('nvidia-smi-topo-m.txt')),
    'nvlink -s': (0, roce('nvidia-smi-nvlink-s.txt')),
    'pfc show dev enp1s0f0np0': (0, roce('dcb-pfc-enp1s0f0np0.txt')),
    '-N app show dev enp1s0f0np0 dscp-prio': (0, roce('dcb-app-dscp-prio-enp1s0f0np0.txt')),
}


def test_check_runs_dcb_on_the_roce_netdev(monkeypatch, capsys, tmp_path):
    args = {'sysfs_root': roce_sys(tmp_path), 'fail_on_mismatch': False,
            'expected': {'nic_pfc_priority': 3, 'nic_roce_dcqcn': 3, 'nic_link_layer': 'Ethernet'}}
    result, recorded = run_module(gpu_topology_check, monkeypatch, capsys, args, ROCE_OUTPUTS,
                                  binaries=('nvidia-smi', 'dcb'))
    assert recorded.calls[3:] == [['/usr/bin/dcb', 'pfc', 'show', 'dev', 'enp1s0f0np0'],
                                  ['/usr/bin/dcb', '-N', 'app', 'show', 'dev', 'enp1s0f0np0', 'dscp-prio']]
    assert recorded.timeouts[3:] == [60, 60]
    nic = result['gpu_topology']['nics'][0]
    assert nic['roce']['pfc'] == [] and nic['roce']['dscp_prio'] == {}
    assert [(f['check'], f['subject'], f['actual']) for f in result['failures']] == [
        ('nic_pfc_priority', 'rocep1s0f0', [])]


def test_facts_without_dcb_on_the_node(monkeypatch, capsys, tmp_path):
    result, recorded = run_module(gpu_topology_facts, monkeypatch, capsys, {'sysfs_root': roce_sys(tmp_path)},
                                  ROCE_OUTPUTS)
    assert result['failed'] is False and len(recorded.calls) == 3
    roce_facts = result['ansible_facts']['gpu_topology']['nics'][0]['roce']
    assert roce_facts['pfc'] is None
    assert roce_facts['unreadable']['pfc'] == 'dcb (iproute2) was not found on the node'
    assert 'pfc of enp1s0f0np0 not read: dcb (iproute2) was not found on the node' in \
        result['ansible_facts']['gpu_topology']['warnings']
