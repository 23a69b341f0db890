# -*- coding: utf-8 -*-
"""nccl_plan: what it returns and refuses for a node, and how it reads apt and dpkg, or dnf and rpm."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.modules import nccl_plan as module_nccl_plan

from module_harness import answer_commands
from repo_paths import REPO

ROOT = REPO
with open(os.path.join(ROOT, 'roles', 'nccl', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)


def _nic(name, layer='InfiniBand'):
    return {'name': name, 'ports': [{'port': 1, 'link_layer': layer}]}


FACTS = {
    'cuda_version': '12.3', 'driver_loaded': True, 'gpu_count': 2, 'pci_gpus': [{}, {}],
    'nics': [_nic('mlx5_0'), _nic('mlx5_1'), _nic('mlx5_2', 'Ethernet')],
    'matrix': {'GPU0': {'GPU1': 'NV12', 'mlx5_0': 'PIX', 'mlx5_1': 'SYS', 'mlx5_2': 'NODE'},
               'GPU1': {'GPU0': 'NV12', 'mlx5_0': 'SYS', 'mlx5_1': 'PIX', 'mlx5_2': 'NODE'}},
}
SHOW = ('Package: libnccl2\nVersion: 2.26.2-1+cuda12.8\n\nPackage: libnccl2\nVersion: 2.23.4-1+cuda12.6\n\n')
MADISON = (' libnccl2 | 2.26.2-1+cuda12.8 | file:/srv/repo ./ Packages\n'
           ' libnccl2 | 2.23.4-1+cuda12.6 | http://other/repo ./ Packages\n')
DPKG = 'libnccl2\t2.23.4-1+cuda12.6\thi \n'


def _params(**variables):
    values = dict(DEFAULTS)
    values.update(variables)
    return {'variables': values, 'facts': FACTS, 'profile': {'nic_names': ['mlx5_[01]']},
            'family': 'Debian', 'read_packages': True, 'repo_url': '', 'repo_id': 'gpuops-nccl'}


def _read(module):
    return lambda *args: module_nccl_plan.read_packages(module, *args)


class FakeModule(object):
    """The module, and apt and dpkg-query answering the commands it runs."""

    def __init__(self):
        self.calls = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name

    def answer(self, argv):
        self.calls.append(argv[:2])
        if argv[:2] == ['apt-cache', 'show']:
            return 0, SHOW, ''
        if argv[:2] == ['apt-cache', 'madison']:
            return 0, MADISON, ''
        # dpkg-query: libnccl-dev unknown
        return 1, DPKG, 'dpkg-query: no packages found matching libnccl-dev\n'

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture
def module(monkeypatch):
    fake = FakeModule()
    answer_commands(monkeypatch, fake.answer)
    return fake


def test_plan_of_a_node(module):
    result = module_nccl_plan.plan(_params(nccl_version='2.23.4', nccl_tests_build=True, nccl_test_min_busbw_gbps=40),
                                   _read(module))
    assert result['errors'] == []
    assert result['packages'] == ['libnccl2', 'libnccl-dev']
    assert result['package_manager'] == {'name': 'apt', 'hold': 'apt-mark hold'}
    assert result['changes'] == ['libnccl-dev']
    assert result['ib_hca'] == ['mlx5_0:1', 'mlx5_1:1']
    assert 'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1' in result['conf_lines']
    assert result['package_version'] == '2.23.4-1+cuda12.6'
    assert result['installed'] == {'libnccl2': '2.23.4-1+cuda12.6'}
    assert result['cuda'] == {'major': 12, 'minor': 3}
    assert result['test_command'] == '/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 2'


def test_only_the_mirror_counts(module):
    params = _params(nccl_version='2.23.4')
    params['repo_url'] = 'file:///srv/repo/'
    result = module_nccl_plan.plan(params, _read(module))
    assert result['package_version'] is None
    assert result['errors'] == ['nccl_version: the package sources offer no libnccl2 2.23.4 built for CUDA 12 (offered: '
                                '2.26.2-1+cuda12.8); choose a version built for the driver\'s CUDA major, or set '
                                'nccl_cuda_major']


def test_bad_values_stop_before_apt_is_read():
    calls = []
    result = module_nccl_plan.plan(_params(nccl_test_min_busbw_gbps=-1, nccl_ib_hcas=['ib*']),
                                   lambda *args: calls.append(args))
    assert calls == []
    assert [e.split(' ')[0] for e in result['errors']] == ['nccl_test_min_busbw_gbps', 'nccl_ib_hcas:']
    assert result['conf_lines'] == []


def test_without_read_packages_nothing_is_read():
    params = _params()
    params['read_packages'] = False
    result = module_nccl_plan.plan(params, lambda *args: 1 / 0)
    assert result['errors'] == [] and result['package_version'] is None
    assert result['packages'] == ['libnccl2']


@pytest.mark.parametrize('family, packages, manager', [
    ('Debian', ['libnccl2', 'libnccl-dev'], 'apt'),
    ('Ubuntu', ['libnccl2', 'libnccl-dev'], 'apt'),
    ('RedHat', ['libnccl', 'libnccl-devel'], 'dnf'),
])
def test_the_packages_come_from_the_packaging_table(family, packages, manager):
    params = _params(nccl_dev=True)
    params.update(family=family, read_packages=False)
    result = module_nccl_plan.plan(params)
    assert (result['packages'], result['package_manager']['name']) == (packages, manager)


def test_an_os_family_without_nccl_packages_is_refused_before_anything_is_read():
    params = _params()
    params['family'] = 'Suse'
    result = module_nccl_plan.plan(params, lambda *args: 1 / 0)
    assert result['errors'] == ["gpuops_nccl_enabled: gpuops.node.nccl has no NCCL packages for the OS family 'Suse' "
                                "(known: Debian, Ubuntu, RedHat); set gpuops_nccl_enabled: false for this host"]


@pytest.mark.parametrize('gate', [{'nccl_tests_build': True}, {'nccl_test_command': 'all_reduce_perf -g 2'}])
def test_a_gate_without_a_threshold_is_refused(gate, module):
    result = module_nccl_plan.plan(_params(nccl_version='2.23.4', **gate), _read(module))
    assert [e for e in result['errors'] if e.startswith('nccl_test_min_busbw_gbps: the gate runs nccl-tests')]


def test_a_failing_apt_fails_with_its_words(module, monkeypatch):
    def locked(argv):
        if argv[:2] == ['apt-cache', 'madison']:
            return 100, '', 'E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)\n'
        return module.answer(argv)
    answer_commands(monkeypatch, locked)
    with pytest.raises(AssertionError) as failed:
        module_nccl_plan.read_packages(module, ['libnccl2'], 'apt', 'file:/srv/repo', '')
    assert failed.value.args[0] == {'msg': 'apt-cache madison libnccl2 exited 100: E: Could not open lock file '
                                           '/var/lib/apt/lists/lock - open (13: Permission denied)', 'errors': []}
