# -*- coding: utf-8 -*-
"""mig_plan: what a layout needs per GPU, planned from the parsed real captures in mig/ (an H100's -lgip, its
-lgi with two GPU instances and the -lci of their compute instances, a GH200's -lgip), and the layouts it
refuses before anything is changed."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import expand
from ansible_collections.gpuops.node.plugins.module_utils.plans.mig import (
    creation_order, describe, gpu_states, pending_work, plan)
from ansible_collections.gpuops.node.plugins.module_utils.node.mig_profiles import profiles_for
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import parse_lci, parse_lgi, parse_lgip
from real_captures import real_text

H100 = 'NVIDIA H100 80GB HBM3'
H100_LGIP = parse_lgip(real_text('mig/h100-80gb-lgip.txt'))
# GPU 0: GPU instance 3 (2g.20gb, placement 0:2) and 2 (3g.40gb, 4:4), each with its default compute instance
H100_LGI = parse_lgi(real_text('mig/h100-80gb-lgi-2gi.txt'))
H100_LCI = parse_lci(real_text('mig/h100-80gb-lci-2ci.txt'))
GH200_LGIP = parse_lgip(real_text('mig/gh200-96gb-lgip.txt'))
BUS = ['00000000:19:00.0', '00000000:3B:00.0', '00000000:4C:00.0', '00000000:5D:00.0']


def _xml(index, mode='Enabled', pending=None, name=H100):
    return {'index': index, 'pci_bus_id': BUS[index], 'name': name, 'pci_device_id': '0x233010DE',
            'mig_mode': mode, 'mig_mode_pending': mode if pending is None else pending}


def _plan(entries, xml_gpus, lgi=None, lci=None, lgip=None, where='mig-configs.c'):
    states = gpu_states(xml_gpus, lgi, lci)
    desired = expand(entries, states, where)
    profiles = {}
    for gpu in states:
        rows = [r for r in (lgip or []) if r['gpu'] == gpu['index']] if gpu['mig_mode'] == 'Enabled' else None
        profiles['0000:' + gpu['bus_id'][-7:].lower()] = profiles_for(gpu['name'], rows)
    return plan(states, desired, profiles, where)


def _one(entries, **kwargs):
    result = _plan(entries, [_xml(0)], H100_LGI, H100_LCI, H100_LGIP, **kwargs)
    assert result['errors'] == []
    assert len(result['gpus']) == 1
    return result['gpus'][0]


def _on(devices):
    return [{'devices': 'all', 'mig-enabled': True, 'mig-devices': devices}]


def test_gpu_states_join_the_real_tables():
    state = gpu_states([_xml(0), _xml(1, 'Disabled')], H100_LGI, H100_LCI)
    assert state[0]['instances'] == [
        {'gi': 2, 'name': '3g.40gb', 'profile_id': 9, 'start': 4, 'size': 4,
         'cis': [{'id': 0, 'name': '3g.40gb', 'profile_id': 2}]},
        {'gi': 3, 'name': '2g.20gb', 'profile_id': 14, 'start': 0, 'size': 2,
         'cis': [{'id': 0, 'name': '2g.20gb', 'profile_id': 1}]},
    ]
    assert state[1]['instances'] == [] and state[1]['bus_id'] == '00000000:3B:00.0'


def test_the_layout_already_there_changes_nothing():
    gpu = _one(_on({'2g.20gb': 1, 'MIG 3g.40gb': 1}))
    assert (gpu['mode_change'], gpu['destroy'], gpu['create']) == (None, [], [])
    assert gpu['before'] == gpu['after'] == {'mig_mode': 'Enabled', 'mig_mode_pending': 'Enabled',
                                             'instances': {'2g.20gb': 1, '3g.40gb': 1}}
    assert not pending_work(gpu)


def test_missing_instances_are_added_to_the_existing_ones():
    gpu = _one(_on({'3g.40gb': 1, '2g.20gb': 1, '1g.10gb': 2}))
    assert (gpu['mode_change'], gpu['destroy'], gpu['create']) == (None, [], ['1g.10gb', '1g.10gb'])
    assert gpu['after']['instances'] == {'3g.40gb': 1, '2g.20gb': 1, '1g.10gb': 2}


def test_a_different_layout_rebuilds_the_gpu_largest_first():
    gpu = _one(_on({'1g.10gb': 3, '3g.40gb': 1}))
    assert gpu['destroy'] == [{'gi': 2, 'name': '3g.40gb', 'cis': [0]}, {'gi': 3, 'name': '2g.20gb', 'cis': [0]}]
    assert gpu['create'] == ['3g.40gb', '1g.10gb', '1g.10gb', '1g.10gb']
    assert gpu['mode'] == {'current': 'Enabled', 'pending': 'Enabled', 'wanted': 'Enabled'}
    assert gpu['mode_change'] is None


def test_a_missing_instance_larger_than_an_existing_one_rebuilds_the_gpu():
    # three 1g.10gb at placements 0-2 leave no placement for a 4g.40gb: created after them it would fail
    lgi = [{'gpu': 0, 'name': '1g.10gb', 'profile_id': 19, 'id': 7 + n, 'start': n, 'size': 1} for n in range(3)]
    lci = [{'gpu': 0, 'gi': 7 + n, 'name': '1g.10gb', 'profile_id': 0, 'id': 0, 'start': 0, 'size': 1}
           for n in range(3)]
    gpu = _plan(_on({'4g.40gb': 1, '1g.10gb': 3}), [_xml(0)], lgi, lci, H100_LGIP)['gpus'][0]
    assert [d['gi'] for d in gpu['destroy']] == [7, 8, 9]
    assert gpu['create'] == ['4g.40gb', '1g.10gb', '1g.10gb', '1g.10gb']
    gpu = _plan(_on({'1g.10gb': 5}), [_xml(0)], lgi, lci, H100_LGIP)['gpus'][0]
    assert (gpu['destroy'], gpu['create']) == ([], ['1g.10gb', '1g.10gb'])


def test_gpu_instances_without_their_compute_instance_are_rebuilt():
    # mig -cgi 9,14 without -C (h100-80gb-cgi-9-14-no-C): GPU instances and no compute instance
    gpu = _plan(_on({'3g.40gb': 1, '2g.20gb': 1}), [_xml(0)], H100_LGI, [], H100_LGIP)['gpus'][0]
    assert [d['gi'] for d in gpu['destroy']] == [2, 3] and gpu['destroy'][0]['cis'] == []
    assert gpu['create'] == ['3g.40gb', '2g.20gb']


def test_a_partial_compute_instance_is_rebuilt():
    lci = [dict(H100_LCI[1], name='1c.3g.40gb', profile_id=0)]
    gpu = _plan(_on({'3g.40gb': 1, '2g.20gb': 1, '1g.10gb': 1}), [_xml(0)], H100_LGI, H100_LCI[:1] + lci,
                H100_LGIP)['gpus'][0]
    assert len(gpu['destroy']) == 2 and gpu['create'] == ['3g.40gb', '2g.20gb', '1g.10gb']


def test_mig_off_destroys_then_disables():
    gpu = _one([{'devices': [0], 'mig-enabled': False}])
    assert gpu['mode_change'] == 'disable'
    assert [d['gi'] for d in gpu['destroy']] == [2, 3] and gpu['create'] == []
    assert gpu['after'] == {'mig_mode': 'Disabled', 'mig_mode_pending': 'Disabled', 'instances': {}}


def test_mig_disabled_gpus_are_enabled_then_filled_from_the_known_profiles():
    result = _plan(_on({'1g.10gb': 7}), [_xml(0, 'Disabled'), _xml(1, 'Disabled')])
    assert result['errors'] == [] and result['warnings'] == []
    for gpu in result['gpus']:
        assert gpu['mode_change'] == 'enable' and gpu['destroy'] == [] and gpu['create'] == ['1g.10gb'] * 7
        assert gpu['before']['instances'] == {} and gpu['after']['mig_mode'] == 'Enabled'


def test_half_the_node_on_half_off():
    entries = [{'devices': [0, 1], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}},
               {'devices': ['0000:4c:00.0'], 'mig-enabled': False}]
    result = _plan(entries, [_xml(0, 'Disabled'), _xml(1, 'Disabled'), _xml(2, 'Disabled'), _xml(3, 'Disabled')])
    assert [(g['index'], g['entry'], g['mode_change'], len(g['create'])) for g in result['gpus']] == [
        (0, 0, 'enable', 7), (1, 0, 'enable', 7), (2, 1, None, 0)]   # GPU 3 is matched by no entry: left alone


@pytest.mark.parametrize('mode, pending, enabled, change', [
    ('Disabled', 'Enabled', True, 'enable'),     # asked before, the GPU was busy: asked again
    ('Disabled', 'Enabled', False, 'disable'),   # cancels the pending enable
    ('Enabled', 'Disabled', True, 'enable'),
    ('Enabled', 'Enabled', True, None),
    ('Disabled', 'Disabled', False, None),
])
def test_pending_modes(mode, pending, enabled, change):
    entries = [{'devices': 'all', 'mig-enabled': enabled, 'mig-devices': {'1g.10gb': 1} if enabled else {}}]
    gpu = _plan(entries, [_xml(0, mode, pending)], H100_LGI if mode == 'Enabled' else None,
                H100_LCI if mode == 'Enabled' else None, H100_LGIP)['gpus'][0]
    assert gpu['mode_change'] == change
    assert gpu['mode'] == {'current': mode, 'pending': pending, 'wanted': 'Enabled' if enabled else 'Disabled'}


def test_a_gpu_without_mig_may_be_asked_for_mig_off():
    p100 = {'index': 0, 'pci_bus_id': '00000000:02:00.0', 'name': 'Tesla P100-PCIE-16GB', 'mig_mode': None,
            'mig_mode_pending': None}
    result = _plan([{'devices': 'all', 'mig-enabled': False}], [p100])
    assert result['errors'] == []
    assert not pending_work(result['gpus'][0])
    result = _plan(_on({'1g.10gb': 1}), [p100])
    assert result['errors'] == ['mig-configs.c[0].mig-enabled: GPU 0 (Tesla P100-PCIE-16GB) does not support MIG']


def test_gh200_profiles_come_from_its_lgip():
    gh200 = _xml(0, name='NVIDIA GH200 480GB')
    assert _plan(_on({'1g.12gb': 4, '3g.48gb': 1}), [gh200], lgip=GH200_LGIP)['errors'] == []
    errors = _plan(_on({'1g.10gb': 7}), [gh200], lgip=GH200_LGIP)['errors']
    assert errors == ['mig-configs.c[0].mig-devices.1g.10gb: GPU 0 (NVIDIA GH200 480GB) has no GPU-instance profile '
                      '1g.10gb; its profiles: 1g.12gb, 1g.12gb+me, 1g.24gb, 2g.24gb, 3g.48gb, 4g.48gb, 7g.96gb']


@pytest.mark.parametrize('devices, says', [
    ({'1g.10gb': 8}, 'cannot hold them: 8x 1g.10gb: at most 7 fit on one GPU'),
    ({'1g.10gb+me': 2}, 'cannot hold them: 2x 1g.10gb+me: at most 1 fit on one GPU'),
    ({'3g.40gb': 1, '1g.10gb': 5}, 'cannot hold them: 5x 1g.10gb, 1x 3g.40gb: 8 compute slices, a GPU has 7'),
    ({'4g.40gb': 1, '1g.20gb': 3}, 'cannot hold them: 3x 1g.20gb, 1x 4g.40gb: 10 memory slices, a GPU has 8'),
])
def test_layouts_that_do_not_fit(devices, says):
    entries = [{'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': devices}]
    result = _plan(entries, [_xml(0), _xml(1, 'Disabled'), _xml(2, 'Disabled'), _xml(3, 'Disabled')],
                   H100_LGI, H100_LCI, H100_LGIP, where='mig-configs.half-1g.10gb')
    # one message for the four GPUs, whether the profiles came from -lgip (GPU 0) or the known table
    assert result['errors'] == ['mig-configs.half-1g.10gb[0].mig-devices: GPU 0, 1, 2, 3 (%s) %s' % (H100, says)]


def test_unknown_profile_names_the_valid_ones():
    result = _plan(_on({'1g.99gb': 1, '2g.20gb': 1}), [_xml(0, 'Disabled'), _xml(1, 'Disabled')])
    assert result['errors'] == [
        'mig-configs.c[0].mig-devices.1g.99gb: GPU 0, 1 (NVIDIA H100 80GB HBM3) has no GPU-instance profile 1g.99gb; '
        'its profiles: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb']


def test_an_unknown_model_with_mig_disabled_is_left_to_nvidia_smi():
    result = _plan(_on({'1g.23gb': 2}), [_xml(0, 'Disabled', name='NVIDIA B200')])
    assert result['errors'] == []
    assert result['warnings'] == ['GPU 0 (00000000:19:00.0): the GPU-instance profiles of NVIDIA B200 are not known '
                                  'while MIG is disabled; nvidia-smi checks 2x 1g.23gb when it creates them']
    assert result['gpus'][0]['create'] == ['1g.23gb', '1g.23gb']


def test_creation_order_and_describe():
    wanted = {'1g.10gb': 2, '3g.40gb': 1, '2g.20gb': 1, '1g.20gb': 1, '7g.80gb': 1, '4g.40gb': 1}
    assert creation_order(wanted, profiles_for(H100)) == [
        '7g.80gb', '4g.40gb', '3g.40gb', '2g.20gb', '1g.20gb', '1g.10gb', '1g.10gb']
    assert creation_order({'1g.10gb+me': 1, '1g.10gb': 1, '1g.20gb': 1}) == ['1g.20gb', '1g.10gb', '1g.10gb+me']
    assert describe({'1g.10gb': 3, '3g.40gb': 1}) == '1x 3g.40gb, 3x 1g.10gb'
    assert describe({}) == 'none'
