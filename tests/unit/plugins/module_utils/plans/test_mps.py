# -*- coding: utf-8 -*-
"""mps_plan on the simulated DGX A100's GPUs (its -q -x, parsed): sets resolved by index, UUID and PCI bus id, the
environment of each set, MIG refused, bad directories, percentages and pinned limits refused naming the variable,
and the GPUs that go back to Default."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from real_captures import profile_text

from ansible_collections.gpuops.node.plugins.module_utils.plans import mps as plans_mps
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml

GPUS = parse_nvsmi_xml(profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-q-x.xml'))['gpus']
FACTS = {'gpus': GPUS}
VALUES = {'mps_enabled': True, 'mps_gpu_sets': [{'name': 'all', 'devices': 'all'}], 'mps_group': 'gpuops-mps',
          'mps_pipe_dir': '/run/nvidia-mps', 'mps_log_dir': '/var/log/nvidia-mps',
          'mps_active_thread_percentage': None, 'mps_pinned_memory_limit': None, 'mps_client_services': [],
          'mps_packages': None, 'mps_nvidia_smi': 'nvidia-smi'}


def _values(**changes):
    values = copy.deepcopy(VALUES)
    values.update(changes)
    return values


def _facts(**per_gpu):
    """The facts with ``{index: {key: value}}`` changes."""
    gpus = copy.deepcopy(GPUS)
    for index, change in per_gpu.items():
        gpus[int(index[3:])].update(change)
    return {'gpus': gpus}


def test_the_default_is_one_set_of_every_gpu():
    result = plans_mps.plan(VALUES, FACTS)
    assert result['errors'] == []
    (only,) = result['sets']
    assert only['name'] == 'all'
    assert [g['index'] for g in only['gpus']] == list(range(8))
    assert only['env_lines'][:3] == ['CUDA_VISIBLE_DEVICES=' + ','.join(g['uuid'] for g in GPUS),
                                     'CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps/all',
                                     'CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps/all']
    assert only['env_lines'][-1] == 'GPUOPS_MPS_GPUS=' + ','.join(g['pci_bus_id'] for g in GPUS)
    assert result['compute_modes'] == dict((g['pci_bus_id'], 'Exclusive_Process') for g in GPUS)
    assert result['client_env'] == ['CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps/all',
                                    'CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps/all']


def test_sets_by_index_uuid_and_bus_id_with_the_server_defaults():
    sets = [{'name': 'train', 'devices': [0, '1', GPUS[2]['uuid'].lower(), '0000:4e:00.0']},
            {'name': 'infer', 'devices': ['00000000:87:00.0']}]
    result = plans_mps.plan(_values(mps_gpu_sets=sets, mps_active_thread_percentage=40, mps_pinned_memory_limit='0=1G'),
                            FACTS)
    assert result['errors'] == []
    train, infer = result['sets']
    assert [g['index'] for g in train['gpus']] == [0, 1, 2, 3]
    assert [g['index'] for g in infer['gpus']] == [4]
    assert 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=40' in train['env_lines']
    assert 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G' in infer['env_lines']
    assert result['exclusive'] == sorted(g['pci_bus_id'] for g in GPUS[:5])
    assert result['client_env'][0] == 'CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps/train'


def test_gpus_no_set_has_any_more_go_back_to_default():
    recorded = [g['pci_bus_id'] for g in GPUS[:6]] + ['0000:ff:00.0']
    result = plans_mps.plan(_values(mps_gpu_sets=[{'name': 'a', 'devices': [0, 1, 2, 3]}]), FACTS, recorded)
    modes = result['compute_modes']
    assert [modes[g['pci_bus_id']] for g in GPUS[:6]] == ['Exclusive_Process'] * 4 + ['Default'] * 2
    assert len(modes) == 6


def test_disabled_gives_every_recorded_gpu_back_default():
    result = plans_mps.plan(_values(mps_enabled=False, mps_gpu_sets=[]), FACTS, [GPUS[0]['pci_bus_id'].lower()])
    assert result['errors'] == [] and result['sets'] == [] and result['exclusive'] == []
    assert result['compute_modes'] == {GPUS[0]['pci_bus_id']: 'Default'}


@pytest.mark.parametrize('changes, message', [
    ({'mps_active_thread_percentage': 150}, 'mps_active_thread_percentage: 150 is not a percentage'),
    ({'mps_active_thread_percentage': 0}, 'mps_active_thread_percentage: 0 '),
    ({'mps_pipe_dir': '/tmp/nvidia-mps'}, 'mps_pipe_dir: /tmp/nvidia-mps is under /tmp'),
    ({'mps_log_dir': '/var/tmp/mps'}, 'mps_log_dir: /var/tmp/mps is under /var/tmp'),
    ({'mps_pipe_dir': 'run/mps'}, "mps_pipe_dir: 'run/mps' must be an absolute path"),
    ({'mps_pipe_dir': '/run/../tmp/x'}, 'mps_pipe_dir: '),
    ({'mps_log_dir': '/run/nvidia-mps'}, 'mps_log_dir: must not be mps_pipe_dir'),
    ({'mps_group': 'Bad Group'}, "mps_group: 'Bad Group' is not a group name"),
    ({'mps_client_services': ['web']}, "mps_client_services: 'web' is not the name of a service unit"),
    ({'mps_pinned_memory_limit': '0:1G'}, "mps_pinned_memory_limit: '0:1G' must be <device>=<limit>"),
    ({'mps_pinned_memory_limit': '0=1G,0=2G'}, 'mps_pinned_memory_limit: '),
    ({'mps_pinned_memory_limit': '8=1G'}, 'mps_pinned_memory_limit: device 8 does not exist in the set(s) all'),
    ({'mps_gpu_sets': []}, 'mps_gpu_sets: must list at least one set'),
    ({'mps_gpu_sets': [{'name': 'Train', 'devices': 'all'}]}, "mps_gpu_sets[0].name: 'Train'"),
    ({'mps_gpu_sets': [{'name': 'a', 'devices': [0]}, {'name': 'a', 'devices': [1]}]},
     'mps_gpu_sets[1].name: a names two sets'),
    ({'mps_gpu_sets': [{'name': 'a', 'devices': [8]}]}, 'mps_gpu_sets[0].devices: 8 is not a GPU of this node'),
    ({'mps_gpu_sets': [{'name': 'a', 'devices': ['0000:ff:00.0']}]}, "mps_gpu_sets[0].devices: '0000:ff:00.0'"),
    ({'mps_gpu_sets': [{'name': 'a', 'devices': [0, 1]}, {'name': 'b', 'devices': [1]}]},
     'mps_gpu_sets[1].devices: GPU1 (00000000:0F:00.0) is in the sets a and b'),
    ({'mps_gpu_sets': [{'name': 'a', 'devices': []}]}, 'mps_gpu_sets[0].devices: [] must be all or'),
    ({'mps_gpu_sets': [{'name': 'a'}]}, 'mps_gpu_sets[0]: '),
])
def test_bad_values_are_refused_naming_the_variable(changes, message):
    result = plans_mps.plan(_values(**changes), FACTS)
    assert any(e.startswith(message) for e in result['errors']), result['errors']
    assert result['sets'] == [] and result['compute_modes'] == {}


@pytest.mark.parametrize('key', ['mig_mode', 'mig_mode_pending'])
def test_a_gpu_with_mig_enabled_is_refused(key):
    result = plans_mps.plan(_values(mps_gpu_sets=[{'name': 'a', 'devices': [2, 3]}]), _facts(GPU3={key: 'Enabled'}))
    (error,) = result['errors']
    assert error.startswith('mps_gpu_sets: GPU3 (00000000:4E:00.0) of set a has MIG mode Enabled')
    # MIG on a GPU outside the sets is not the role's business
    assert plans_mps.plan(_values(mps_gpu_sets=[{'name': 'a', 'devices': [2]}]), _facts(GPU3={key: 'Enabled'}))['errors'] == []


def test_no_gpu_listed_is_refused():
    result = plans_mps.plan(VALUES, {'gpus': []})
    assert result['errors'] == ['mps_gpu_sets[0].devices: all selects no GPU: the driver lists none (is it loaded?)']


@pytest.mark.parametrize('value, entries', [
    ('0=1G', [(0, '1G')]), ('0=1G, 1=512MB', [(0, '1G'), (1, '512MB')]), ('3=1073741824', [(3, '1073741824')]),
])
def test_pinned_limits(value, entries):
    assert plans_mps.parse_pinned_limit(value) == (entries, None)


@pytest.mark.parametrize('path', ['/run/nvidia-mps', '/var/log/nvidia-mps', '/srv/mps'])
def test_safe_directories(path):
    assert plans_mps.check_directory('mps_pipe_dir', path) is None


@pytest.mark.parametrize('path', ['/tmp', '/tmp/x', '/dev/shm/mps', '/', '/run//mps', '/run/mps/', None])
def test_unsafe_directories(path):
    assert plans_mps.check_directory('mps_pipe_dir', path).startswith('mps_pipe_dir: ')


def test_driver_not_loaded_checks_the_values_and_waits():
    """A bare node whose driver the rollout installs: no sets, no modes, the role waits for the reboot."""
    result = plans_mps.plan(_values(mps_gpu_sets=[{'name': 'train', 'devices': [0, 1]}]), {'driver_loaded': False, 'gpus': []})
    assert result['errors'] == []
    assert result['waits_for_driver'] is True
    assert (result['sets'], result['compute_modes']) == ([], {})


@pytest.mark.parametrize('changes, variable', [
    ({'mps_active_thread_percentage': 150}, 'mps_active_thread_percentage'),
    ({'mps_pinned_memory_limit': 'lots'}, 'mps_pinned_memory_limit'),
    ({'mps_pipe_dir': '/tmp/mps'}, 'mps_pipe_dir'),
])
def test_driver_not_loaded_still_refuses_bad_values(changes, variable):
    result = plans_mps.plan(_values(**changes), {'driver_loaded': False, 'gpus': []})
    assert result['waits_for_driver'] is True
    assert [e.split(':')[0] for e in result['errors']] == [variable]


def test_a_loaded_driver_does_not_wait():
    assert plans_mps.plan(VALUES, dict(FACTS, driver_loaded=True))['waits_for_driver'] is False
    assert plans_mps.plan(VALUES, FACTS)['waits_for_driver'] is False
