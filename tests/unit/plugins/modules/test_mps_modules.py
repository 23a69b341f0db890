# -*- coding: utf-8 -*-
"""The MPS role's modules: mps_plan (refuses with every reason, plans otherwise) and gpu_compute_mode on the
simulated DGX A100's nvidia-smi (check mode changes nothing, the diff, the setters, a second run changes nothing, a
mode that does not take fails)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from module_harness import answer_commands, patch_module, run  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.modules import gpu_compute_mode, mps_plan

from simhelpers import Node  # noqa: E402 pylint: disable=import-error,wrong-import-position
from simulator import nvidia_smi  # noqa: E402 pylint: disable=import-error,wrong-import-position

VALUES = {'mps_enabled': True, 'mps_gpu_sets': [{'name': 'train', 'devices': [0, 1, 2, 3]}],
          'mps_group': 'gpuops-mps', 'mps_pipe_dir': '/run/nvidia-mps', 'mps_log_dir': '/var/log/nvidia-mps',
          'mps_active_thread_percentage': 150, 'mps_pinned_memory_limit': None, 'mps_client_services': []}


@pytest.fixture
def node(tmp_path, monkeypatch):
    """The simulated DGX A100; the commands the modules run are answered by its nvidia-smi, and recorded."""
    sim = Node(tmp_path, 'a100-sxm-8gpu-ib')
    sim.calls = []

    def run_nvidia_smi(argv):
        sim.calls.append(list(argv))
        assert argv[0] == 'nvidia-smi'
        result = nvidia_smi.run(list(argv[1:]), dict(sim.env))
        return result.rc, result.out, result.err
    sim.answer = run_nvidia_smi
    answer_commands(monkeypatch, run_nvidia_smi)
    return sim


def _modes(node):
    return [g['compute_mode'] for g in parse_nvsmi_xml(node.run('-q', '-x').out)['gpus']]


def _facts(node):
    return {'gpus': parse_nvsmi_xml(node.run('-q', '-x').out)['gpus']}


def test_plan_fails_with_every_reason(node):
    values = dict(VALUES, mps_pipe_dir='/tmp/mps')
    result = run(mps_plan, {'variables': values, 'facts': _facts(node)}, expect_fail=True)
    assert result['msg'].startswith('mps_active_thread_percentage: 150 is not a percentage')
    assert 'mps_pipe_dir: /tmp/mps is under /tmp' in result['msg']
    assert len(result['errors']) == 2


def test_plan_in_check_mode(node):
    values = dict(VALUES, mps_active_thread_percentage=25)
    result = run(mps_plan, {'variables': values, 'facts': _facts(node)}, check_mode=True)
    assert result['changed'] is False
    assert [s['name'] for s in result['sets']] == ['train']
    assert 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25' in result['sets'][0]['env_lines']
    assert sorted(result['compute_modes'].values()) == ['Exclusive_Process'] * 4
    assert node.calls == []


def _wanted(node, mode='Exclusive_Process', gpus=range(4)):
    gpus_read = parse_nvsmi_xml(node.run('-q', '-x').out)['gpus']
    return dict((gpus_read[i]['pci_bus_id'], mode) for i in gpus)


def test_compute_mode_check_mode_changes_nothing_and_shows_the_diff(node):
    result = run(gpu_compute_mode, {'modes': _wanted(node)}, check_mode=True, diff=True)
    assert result['changed'] is True
    assert [c['index'] for c in result['changes']] == [0, 1, 2, 3]
    assert result['diff']['before'].splitlines()[0] == 'GPU0 00000000:07:00.0: Default'
    assert result['diff']['after'].splitlines()[0] == 'GPU0 00000000:07:00.0: Exclusive_Process'
    assert result['commands'][0] == ['nvidia-smi', '-i', '00000000:07:00.0', '-c', 'EXCLUSIVE_PROCESS']
    assert [c[1:] for c in node.calls] == [['-q', '-x']]
    assert _modes(node) == ['Default'] * 8


def test_compute_mode_sets_the_differences_then_changes_nothing(node):
    node.run('-i', '1', '-c', 'EXCLUSIVE_PROCESS')
    result = run(gpu_compute_mode, {'modes': _wanted(node)})
    assert result['changed'] is True
    assert [c['index'] for c in result['changes']] == [0, 2, 3]
    assert _modes(node) == ['Exclusive_Process'] * 4 + ['Default'] * 4
    node.calls[:] = []
    again = run(gpu_compute_mode, {'modes': _wanted(node)})
    assert again['changed'] is False and again['changes'] == [] and again['commands'] == []
    assert [c[1:] for c in node.calls] == [['-q', '-x']]
    back = run(gpu_compute_mode, {'modes': _wanted(node, 'default', gpus=[0, 1])})
    assert [c['after'] for c in back['changes']] == ['Default', 'Default']
    assert _modes(node) == ['Default'] * 2 + ['Exclusive_Process'] * 2 + ['Default'] * 4


def test_compute_mode_refuses_unknown_gpus_and_modes(node):
    result = run(gpu_compute_mode, {'modes': {'0000:ff:00.0': 'Default'}}, expect_fail=True)
    assert result['msg'].startswith('modes: no GPU at 0000:ff:00.0')
    result = run(gpu_compute_mode, {'modes': {'0000:07:00.0': 'Exclusive_Thread'}}, expect_fail=True)
    assert result['msg'].startswith('modes: not a PCI bus id and a compute mode')


def test_compute_mode_fails_when_the_mode_does_not_take(node, monkeypatch):
    def ignore_setter(argv):
        if '-c' in argv:
            return 0, 'Set compute mode to EXCLUSIVE_PROCESS for GPU 00000000:07:00.0.\nAll done.\n', ''
        return node.answer(argv)
    answer_commands(monkeypatch, ignore_setter)
    result = run(gpu_compute_mode, {'modes': _wanted(node, gpus=[0])}, expect_fail=True)
    assert result['msg'] == 'the compute mode did not take: 00000000:07:00.0 is Default'


def test_compute_mode_a_refused_setter_fails_with_its_words(node, monkeypatch):
    def refuse(argv):
        if '-c' in argv:
            return 4, ('Unable to set the compute mode for GPU 00000000:07:00.0: Insufficient Permissions\n'
                       'Terminating early due to previous errors.\n'), ''
        return node.answer(argv)
    answer_commands(monkeypatch, refuse)
    result = run(gpu_compute_mode, {'modes': _wanted(node, gpus=[0])}, expect_fail=True)
    assert result['msg'] == ('nvidia-smi -i 00000000:07:00.0 -c EXCLUSIVE_PROCESS exited 4: Unable to set the compute '
                             'mode for GPU 00000000:07:00.0: Insufficient Permissions | Terminating early due to '
                             'previous errors.')
    assert result['commands'] == [['nvidia-smi', '-i', '00000000:07:00.0', '-c', 'EXCLUSIVE_PROCESS']]


def test_compute_mode_without_nvidia_smi_is_named(tmp_path):
    result = run(gpu_compute_mode, {'modes': {'00000000:07:00.0': 'Default'},
                                    'nvidia_smi': str(tmp_path / 'bin' / 'nvidia-smi')}, expect_fail=True)
    assert result['msg'] == 'nvidia-smi not found at %s' % (tmp_path / 'bin' / 'nvidia-smi')
