# -*- coding: utf-8 -*-
"""nccl_conf: the variables it refuses (each message starts with the variable), NCCL_IB_HCA from the simulator
profiles' topology, the nccl.conf lines and the package version picked for the driver's CUDA major."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.module_utils.plans import nccl as plans_nccl
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from repo_paths import REPO

ROOT = REPO
with open(os.path.join(ROOT, 'roles', 'nccl', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)


def _with(**changes):
    values = dict(DEFAULTS)
    values.update(changes)
    return values


@pytest.fixture(scope='module')
def profiles(tmp_path_factory):
    """The gpu_topology facts and expected node class of the simulator's profiles."""
    import sys
    from simulator import bundle
    result = {}
    for name in ('h100-sxm-8gpu-ib', 'a100-sxm-8gpu-ib', 'pcie-4gpu-roce'):
        path = os.path.join(ROOT, 'simulator', 'profiles', name)
        target = str(tmp_path_factory.mktemp(name))
        bundle.write_tree(bundle.read_profile(path), target)
        with open(os.path.join(path, 'profile.yml')) as handle:
            expected = bundle.load_yaml(handle.read())['expected_node_class']
        result[name] = (gather_bundle(target), expected)
    return result


def test_defaults_are_accepted():
    assert plans_nccl.validate(DEFAULTS) == ([], [])


@pytest.mark.parametrize('changes, says', [
    ({'nccl_test_min_busbw_gbps': -1}, 'nccl_test_min_busbw_gbps must be a bus bandwidth in GB/s, 0 or more'),
    ({'nccl_test_min_busbw_gbps': '-5'}, 'nccl_test_min_busbw_gbps must be'),
    ({'nccl_test_min_busbw_gbps': 'fast'}, 'nccl_test_min_busbw_gbps must be'),
    ({'nccl_settings': {'NCCL_DEBUG': ['WARN']}}, 'nccl_settings.NCCL_DEBUG must be a string or an integer'),
    ({'nccl_settings': {'NCCL_DEBUG': True}}, 'nccl_settings.NCCL_DEBUG must be a string or an integer'),
    ({'nccl_settings': {'NCCL_DEBUG': 'a\nb'}}, 'nccl_settings.NCCL_DEBUG must be a string or an integer'),
    ({'nccl_settings': {'debug': 'WARN'}}, "nccl_settings.debug: 'debug' is not an NCCL variable name"),
    ({'nccl_settings': {'NCCL_IB_HCA': 'mlx5'}}, 'nccl_settings.NCCL_IB_HCA: set nccl_ib_hcas instead'),
    ({'nccl_settings': {'NCCL_IB_TC': 106}}, 'nccl_settings.NCCL_IB_TC: set nccl_ib_tc instead'),
    ({'nccl_settings': ['NCCL_DEBUG=WARN']}, 'nccl_settings must be a dict'),
    ({'nccl_ib_hcas': ['mlx5_[0-3']}, "nccl_ib_hcas: 'mlx5_[0-3' is not a glob"),
    ({'nccl_ib_tc': 256}, 'nccl_ib_tc must be a traffic class from 0 to 255'),
    ({'nccl_ib_tc': 'high'}, 'nccl_ib_tc must be'),
    ({'nccl_version': '2.23'}, 'nccl_version must be an NCCL version such as "2.23.4"'),
    ({'nccl_cuda_major': 5}, 'nccl_cuda_major must be a CUDA major version'),
    ({'nccl_repo_url': 'ftp://mirror/'}, 'nccl_repo_url must be an http(s):// or file:// URL'),
    ({'nccl_repo_url': 'https://mirror/'}, 'nccl_repo_key (or nccl_repo_key_url) must give the signing key'),
    ({'nccl_repo_url': 'https://mirror/', 'nccl_repo_key': 'abc'}, 'nccl_repo_key must be an ASCII-armoured'),
    ({'nccl_topo_file': 'topo.xml'}, 'nccl_topo_file must be an absolute path'),
    ({'nccl_cuda_device_max_connections': 33}, 'nccl_cuda_device_max_connections must be from 1 to 32'),
    ({'nccl_tests_build': True, 'nccl_tests_version': ''}, 'nccl_tests_version must name the commit'),
    ({'nccl_tests_build': True, 'nccl_tests_source_type': 'path', 'nccl_tests_source': 'src'},
     'nccl_tests_source must be an absolute directory'),
    ({'nccl_tests_build': True, 'nccl_tests_source_type': 'tarball', 'nccl_tests_source': 'x.tgz'},
     'nccl_tests_source must be an http(s):// or file:// URL or an absolute path'),
    ({'nccl_tests_build': True, 'nccl_tests_dest': 'opt'}, 'nccl_tests_dest must be an absolute path'),
    ({'nccl_tests_build': True, 'nccl_tests_mpi': True}, 'nccl_tests_mpi_home must be the absolute path'),
    ({'nccl_tests_build': True, 'nccl_tests_make_args': ['-j']}, 'nccl_tests_make_args must be a list of NAME=VALUE'),
    ({'nccl_test_command': {'cmd': 'x'}}, 'nccl_test_command must be a command line or a list'),
    ({'nccl_test_environment': {'A': ['x']}}, 'nccl_test_environment must map variable names'),
    ({'nccl_test_timeout': 0}, 'nccl_test_timeout must be a number of seconds above 0'),
])
def test_refused(changes, says):
    errors, _warnings = plans_nccl.validate(_with(**changes))
    assert any(e.startswith(says) for e in errors), errors


def test_accepted_forms():
    errors, warnings = plans_nccl.validate(_with(nccl_test_min_busbw_gbps='400', nccl_ib_tc='106', nccl_cuda_major=12,
                                                 nccl_version='2.23.4-1', nccl_settings={'NCCL_DEBUG': 'WARN',
                                                                                         'NCCL_BUFFSIZE': None,
                                                                                         'NCCL_IB_QPS_PER_CONNECTION': 4}))
    assert (errors, warnings) == ([], [])
    assert plans_nccl.validate(_with(nccl_test_min_busbw_gbps=0))[0] == []


def test_an_unknown_nccl_name_is_a_warning():
    errors, warnings = plans_nccl.validate(_with(nccl_settings={'NCCL_IB_HCAS': 'mlx5'}))
    assert errors == []
    assert warnings == ['nccl_settings.NCCL_IB_HCAS: not an NCCL variable NCCL documents; written as given '
                        '(check its spelling)']


def test_h100_compute_rails_closest_to_the_gpus(profiles):
    facts, expected = profiles['h100-sxm-8gpu-ib']
    hcas, errors, warnings = plans_nccl.select_hcas(facts, expected['nic_names'], [])
    # the profile's 8 compute rails (PIX to one GPU each); the 4 Ethernet storage ports stay out
    assert hcas == ['%s:1' % n for n in expected['nic_names']]
    assert (errors, warnings) == ([], [])
    # without nic_names the relations alone leave the storage NICs out
    assert plans_nccl.select_hcas(facts, None, [])[0] == hcas


def test_nic_names_exclude_a_closest_nic(profiles):
    facts, _expected = profiles['h100-sxm-8gpu-ib']
    hcas, _errors, _warnings = plans_nccl.select_hcas(facts, ['mlx5_[0-8]'], [])
    assert 'mlx5_11:1' not in hcas and 'mlx5_8:1' in hcas


def test_a100_two_rails_per_gpu_pair(profiles):
    facts, expected = profiles['a100-sxm-8gpu-ib']
    hcas = plans_nccl.select_hcas(facts, expected.get('nic_names'), [])[0]
    assert hcas == ['mlx5_%d:1' % i for i in (0, 1, 2, 3, 6, 7, 8, 9)]


def test_roce_node_and_no_relations(profiles):
    facts, _expected = profiles['pcie-4gpu-roce']
    assert plans_nccl.select_hcas(facts, None, [])[0] == ['rocep1s0f0:1']
    bare = dict(facts, matrix={})
    hcas, errors, warnings = plans_nccl.select_hcas(bare, None, [])
    assert hcas == ['rocep1s0f0:1'] and errors == [] and 'no GPU-to-NIC relation' in warnings[0]
    hcas, errors, warnings = plans_nccl.select_hcas(dict(facts, nics=[], matrix={}), None, [])
    assert hcas == [] and errors == [] and 'no RDMA device' in warnings[0]


def test_explicit_globs(profiles):
    facts, _expected = profiles['h100-sxm-8gpu-ib']
    hcas, errors, _warnings = plans_nccl.select_hcas(facts, None, ['mlx5_1', 'mlx5_[56]'])
    assert hcas == ['mlx5_1:1', 'mlx5_5:1', 'mlx5_6:1'] and errors == []
    hcas, errors, _warnings = plans_nccl.select_hcas(facts, None, ['mlx6_*'])
    assert errors == ["nccl_ib_hcas: 'mlx6_*' selects no RDMA device; the node has " +
                      ', '.join('mlx5_%d' % i for i in range(12))]


def test_conf_lines():
    merged = plans_nccl.settings(_with(nccl_settings={'NCCL_DEBUG': 'WARN', 'NCCL_BUFFSIZE': None, 'NCCL_NTHREADS': 256},
                                       nccl_ib_tc=106, nccl_socket_ifname='=eth0', nccl_algo='Ring'),
                                 ['mlx5_0:1', 'mlx5_1:1'])
    assert plans_nccl.conf_lines(merged) == [
        'NCCL_ALGO=Ring', 'NCCL_DEBUG=WARN', 'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1', 'NCCL_IB_TC=106',
        'NCCL_NSOCKS_PERTHREAD=8', 'NCCL_NTHREADS=256', 'NCCL_SOCKET_IFNAME==eth0', 'NCCL_SOCKET_NTHREADS=4']
    assert plans_nccl.conf_lines(plans_nccl.settings(DEFAULTS, [])) == [
        'NCCL_BUFFSIZE=4194304', 'NCCL_NSOCKS_PERTHREAD=8', 'NCCL_SOCKET_NTHREADS=4']


def test_cuda_of():
    assert plans_nccl.cuda_of({'cuda_version': '12.3'}, DEFAULTS) == ((12, 3), [])
    assert plans_nccl.cuda_of({'cuda_version': None}, _with(nccl_cuda_major=12)) == ((12, None), [])
    assert plans_nccl.cuda_of({'cuda_version': '12.3'}, _with(nccl_cuda_major=13)) == ((13, None), [])
    (major, _minor), errors = plans_nccl.cuda_of({'cuda_version': None, 'driver_loaded': False}, DEFAULTS)
    assert major is None and errors[0].startswith('nccl_cuda_major: the driver reports no CUDA version')


OFFERED = [{'version': v, 'depends': ''} for v in (
    '2.26.2-1+cuda12.8', '2.23.4-1+cuda12.6', '2.23.4-1+cuda12.2', '2.23.4-1+cuda11.8', '2.26.2-1+cuda13.0')]


@pytest.mark.parametrize('version, cuda, chosen', [
    ('2.23.4', (12, 3), '2.23.4-1+cuda12.2'),      # the newest build the driver's CUDA minor covers
    ('2.23.4', (12, 8), '2.23.4-1+cuda12.6'),
    ('2.23.4', (12, 1), '2.23.4-1+cuda12.2'),      # none covered: the oldest minor above
    ('2.23.4-1', (11, 8), '2.23.4-1+cuda11.8'),
    ('', (12, 8), '2.26.2-1+cuda12.8'),
    ('', (13, 0), '2.26.2-1+cuda13.0'),
    ('2.23.4', (12, None), '2.23.4-1+cuda12.6'),
])
def test_choose_version(version, cuda, chosen):
    assert plans_nccl.choose_version(OFFERED, version, cuda) == (chosen, None)


def test_choose_version_refuses_a_version_without_a_build_for_the_cuda_major():
    chosen, error = plans_nccl.choose_version(OFFERED, '2.26.2', (11, 8))
    assert chosen is None
    assert error.startswith('nccl_version: the package sources offer no libnccl2 2.26.2 built for CUDA 11 (offered: '
                            '2.26.2-1+cuda12.8')


def test_distribution_builds_by_their_cudart_dependency():
    entries = [{'version': '2.21.5-1', 'depends': 'libc6 (>= 2.34), libcudart12 (>= 12.0),\nlibstdc++6'},
               {'version': '2.23.4-1+cuda12.6', 'depends': 'libc6'}]
    assert plans_nccl.package_cuda(entries[0]['version'], entries[0]['depends']) == (12, None)
    assert plans_nccl.choose_version(entries, '2.21.5', (12, 4)) == ('2.21.5-1', None)


def test_test_command():
    assert plans_nccl.test_command(DEFAULTS, 8) == ''
    assert plans_nccl.test_command(_with(nccl_tests_build=True), 8) == \
        '/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 8'
    assert plans_nccl.test_command(_with(nccl_tests_build=True, nccl_test_command=['x', '-g', '2']), 8) == ['x', '-g', '2']
