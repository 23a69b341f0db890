# -*- coding: utf-8 -*-
"""rdma_plan: the variables it refuses (each message starts with the variable), the HCAs it selects, the stack it
sees and the IPoIB policy, as data."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.plans.rdma import installed_stack, plan, validate

DEFAULTS = {
    'rdma_stack': 'distro', 'rdma_stack_replace': False, 'rdma_doca_repo_url': '', 'rdma_doca_repo_key': '',
    'rdma_doca_repo_key_url': '', 'rdma_doca_packages': ['doca-ofed'], 'rdma_ipoib_hcas': [], 'rdma_roce': True,
    'rdma_roce_hcas': [], 'rdma_roce_priority': 3, 'rdma_roce_dscp': 26, 'rdma_roce_tos': 106,
    'rdma_roce_cnp_dscp': 48, 'rdma_roce_cnp_priority': 6,
}
MARKERS = ['doca-ofed', 'mlnx-ofed-kernel-utils', 'mlnx-tools']
KEY = '-----BEGIN PGP PUBLIC KEY BLOCK-----\n...\n-----END PGP PUBLIC KEY BLOCK-----'


def _nic(name, layer, netdevs=(), ports=1):
    return {'name': name, 'netdevs': list(netdevs),
            'ports': [{'port': p, 'link_layer': layer} for p in range(1, ports + 1)]}


FACTS = {'nics': [_nic('mlx5_0', 'InfiniBand', ['ibp24s0']), _nic('mlx5_1', 'InfiniBand', ['ibp41s0']),
                  _nic('mlx5_4', 'Ethernet', ['enp1s0f0np0']), _nic('mlx5_5', 'Ethernet')],
         'ipoib_module_loaded': True}


def _with(**changes):
    values = dict(DEFAULTS)
    values.update(changes)
    return values


@pytest.mark.parametrize('changes, says', [
    ({'rdma_roce_priority': 8}, 'rdma_roce_priority must be an integer from 0 to 7, got 8'),
    ({'rdma_roce_priority': -1}, 'rdma_roce_priority must be an integer from 0 to 7'),
    ({'rdma_roce_cnp_priority': 9}, 'rdma_roce_cnp_priority must be'),
    ({'rdma_roce_dscp': 64, 'rdma_roce_tos': 106}, 'rdma_roce_dscp must be an integer from 0 to 63, got 64'),
    ({'rdma_roce_cnp_dscp': 64}, 'rdma_roce_cnp_dscp must be'),
    ({'rdma_roce_tos': 256}, 'rdma_roce_tos must be an integer from 0 to 255'),
    ({'rdma_roce_tos': True}, 'rdma_roce_tos must be an integer'),
    ({'rdma_roce_tos': 96}, 'rdma_roce_tos 96 carries DSCP 24'),
    ({'rdma_roce_tos': 107}, 'rdma_roce_tos 107 sets both ECN bits'),
    ({'rdma_roce_cnp_dscp': 26}, 'rdma_roce_cnp_dscp 26 is rdma_roce_dscp too'),
    ({'rdma_stack': 'mofed'}, 'rdma_stack must be one of distro, doca_ofed'),
    ({'rdma_roce_hcas': ['mlx5_[0']}, "rdma_roce_hcas: 'mlx5_[0' is not a glob"),
    ({'rdma_ipoib_hcas': ['']}, "rdma_ipoib_hcas: '' is not a glob"),
    ({'rdma_stack': 'doca_ofed'}, 'rdma_doca_repo_url must be the http(s):// or file:// URL'),
    ({'rdma_stack': 'doca_ofed', 'rdma_doca_repo_url': 'file:///srv/doca/'}, 'rdma_doca_repo_key (or'),
    ({'rdma_stack': 'doca_ofed', 'rdma_doca_repo_url': 'https://m/doca/', 'rdma_doca_repo_key': 'abc'},
     'rdma_doca_repo_key must be an ASCII-armoured'),
    ({'rdma_stack': 'doca_ofed', 'rdma_doca_repo_url': 'https://m/doca/', 'rdma_doca_repo_key': KEY,
      'rdma_doca_packages': []}, 'rdma_doca_packages must name'),
])
def test_validate_refuses_naming_the_variable(changes, says):
    errors = validate(_with(**changes))
    assert any(e.startswith(says.split()[0]) and says in e for e in errors), errors


def test_validate_accepts_the_defaults_and_a_cnp_sharing_priority_and_dscp():
    assert validate(DEFAULTS) == []
    assert validate(_with(rdma_roce_cnp_dscp=26, rdma_roce_cnp_priority=3)) == []
    assert validate(_with(rdma_stack='doca_ofed', rdma_doca_repo_url='https://m/doca/',
                          rdma_doca_repo_key_url='https://m/key.pub')) == []


@pytest.mark.parametrize('installed, stack', [
    ({}, None),
    ({'rdma-core': '44.0-2'}, 'distro'),
    ({'rdma-core': '2410mlnx54-1.2410068'}, 'doca_ofed'),
    ({'rdma-core': '44.0-2', 'mlnx-tools': '24.10-0.2410068'}, 'doca_ofed'),
    ({'doca-ofed': '2.9.1-1'}, 'doca_ofed'),
])
def test_installed_stack(installed, stack):
    assert installed_stack(installed, MARKERS)[0] == stack


@pytest.mark.parametrize('changes, roce, errors', [
    ({}, [{'hca': 'mlx5_4', 'netdev': 'enp1s0f0np0', 'ports': [1]}], ['rdma_roce_hcas: mlx5_5 has no network']),
    ({'rdma_roce_hcas': ['mlx5_4']}, [{'hca': 'mlx5_4', 'netdev': 'enp1s0f0np0', 'ports': [1]}], []),
    ({'rdma_roce_hcas': ['mlx5_0']}, [], ["rdma_roce_hcas: 'mlx5_0' selects no Ethernet (RoCE) HCA"]),
    ({'rdma_roce_hcas': ['mlx5_9*']}, [], ["rdma_roce_hcas: 'mlx5_9*' selects no Ethernet (RoCE) HCA"]),
    ({'rdma_roce': False}, [], []),
])
def test_roce_selection(changes, roce, errors):
    result = plan(_with(**changes), FACTS, {'rdma-core': '44.0-2'}, MARKERS)
    assert result['roce'] == roce
    assert [e for e in result['errors'] if not any(e.startswith(x) for x in errors)] == []
    assert len(result['errors']) == len(errors)


@pytest.mark.parametrize('keep, module, down, error', [
    ([], False, [], None),
    (['mlx5_1'], True, ['mlx5_0'], None),
    (['mlx5_*'], True, [], None),
    (['mlx5_4'], True, [], "rdma_ipoib_hcas: 'mlx5_4' selects no InfiniBand HCA"),
])
def test_ipoib_policy(keep, module, down, error):
    result = plan(_with(rdma_roce=False, rdma_ipoib_hcas=keep), FACTS, {}, MARKERS)
    if error:
        assert result['errors'][0].startswith(error)
        return
    assert result['errors'] == []
    assert result['ipoib'] == {'module': module, 'keep': [n for n in ('mlx5_0', 'mlx5_1') if n not in down],
                               'down': down, 'loaded': True} if module else \
        result['ipoib'] == {'module': False, 'keep': [], 'down': [], 'loaded': True}


@pytest.mark.parametrize('installed, changes, refused, remove', [
    ({'rdma-core': '44.0-2'}, {'rdma_stack': 'doca_ofed'}, True, []),
    ({'rdma-core': '44.0-2'}, {'rdma_stack': 'doca_ofed', 'rdma_stack_replace': True}, False, []),
    ({'rdma-core': '2410mlnx54-1.2410068', 'doca-ofed': '2.9.1', 'libc6': '2.36-9'}, {}, True, []),
    ({'rdma-core': '2410mlnx54-1.2410068', 'doca-ofed': '2.9.1', 'libc6': '2.36-9'}, {'rdma_stack_replace': True},
     False, ['doca-ofed', 'rdma-core']),
    ({}, {'rdma_stack': 'doca_ofed'}, False, []),
])
def test_stack_conflict(installed, changes, refused, remove):
    values = _with(rdma_roce=False, rdma_doca_repo_url='file:///srv/doca/', rdma_doca_repo_key=KEY, **changes)
    result = plan(values, FACTS, installed, MARKERS)
    assert any(e.startswith('rdma_stack: the host has') and 'rdma_stack_replace' in e
               for e in result['errors']) == refused
    assert result['stack']['remove'] == remove


def test_no_rdma_device_or_an_unreadable_link_layer_is_refused():
    result = plan(DEFAULTS, {'nics': [], 'missing': ['sys/class/infiniband']}, {}, MARKERS)
    assert result['errors'][0].startswith('rdma_sysfs_root: /sys/class/infiniband does not exist')
    facts = {'nics': [_nic('mlx5_0', None)]}
    result = plan(DEFAULTS, facts, {}, MARKERS)
    assert result['errors'][0].startswith('rdma_sysfs_root: the link layer of mlx5_0 cannot be read')


def test_a_node_without_roce_hca_selects_none_by_default():
    facts = {'nics': [_nic('mlx5_0', 'InfiniBand', ['ibp24s0'])], 'ipoib_module_loaded': False}
    result = plan(DEFAULTS, facts, {}, MARKERS)
    assert result['errors'] == [] and result['roce'] == []


def test_numbers_given_as_strings_are_read_as_numbers():
    assert validate(_with(rdma_roce_priority='4', rdma_roce_tos='106')) == []
    assert validate(_with(rdma_roce_priority='x'))[0].startswith('rdma_roce_priority must be an integer')
