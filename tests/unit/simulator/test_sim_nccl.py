# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulated nccl-tests: its reference rows are the real captures', parse_nccl_tests reads what it prints
(the profile's GPUs, the captured bus bandwidths, lowered by nccl_slow), the stand-in source tree builds it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest

from simhelpers import NVIDIA_SMI, PROFILE_NAMES, REPO, Node, real_text

from simulator import bundle
from simulator import sim_nccl

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests

SRC = os.path.join(REPO, 'tests', 'repo', 'nccl-tests-src')
SIM = os.path.join(REPO, 'simulator', 'sim_nccl.py')


class NcclNode(Node):
    """A simulated node with an nvidia-smi to ask, libnccl2 in its dpkg status and a hostname."""

    def __init__(self, tmp_path, name, faults=(), nccl='2.21.5-1+cuda12.4'):
        super(NcclNode, self).__init__(tmp_path, name, [f for f in faults if isinstance(f[0], str)])
        objects = [f for f in faults if not isinstance(f[0], str)]
        if objects:  # Fault objects (nccl_slow before faults.py lists it)
            tree = bundle.read_profile(self.dir)
            for fault, params in objects:
                fault.apply(tree, **params)
            bundle.write_tree(tree, self.dir)
        root = tmp_path / 'root'
        (root / 'var' / 'lib' / 'dpkg').mkdir(parents=True)
        if nccl:
            (root / 'var' / 'lib' / 'dpkg' / 'status').write_text(
                'Package: libnccl2\nStatus: install ok installed\nVersion: %s\n\n' % nccl)
        smi = tmp_path / 'nvidia-smi'
        smi.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, NVIDIA_SMI))
        smi.chmod(0o755)
        self.root = root
        self.env.update({'GPUOPS_SIM_ROOT': str(root), 'GPUOPS_SIM_NVIDIA_SMI': str(smi),
                         'GPUOPS_SIM_HOSTNAME': 'gpu-a01.example', 'PATH': os.environ.get('PATH', '')})

    def nccl(self, *argv, **env):
        environ = dict(self.env)
        environ.update(env)
        return sim_nccl.run(list(argv), environ)

    def runtime_fault(self, entry):
        path = self.root / 'var' / 'lib' / 'gpuops-sim' / 'faults-runtime.json'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entry))


def _slow_fault():
    from simulator import faults
    if 'nccl_slow' in faults.FAULTS:
        return faults.FAULTS['nccl_slow']
    return faults.Fault('nccl_slow', sim_nccl.apply_fault_nccl_slow, 'bus bandwidth scaled by factor', {'factor': 'factor'})


@pytest.mark.parametrize('kind', sorted(sim_nccl.REFERENCES))
def test_reference_rows_are_the_real_capture(kind):
    ref = sim_nccl.REFERENCES[kind]
    parsed = parse_nccl_tests(real_text(ref['source']))
    assert tuple((r['size'], r['out_of_place']['busbw_gbps'], r['in_place']['busbw_gbps'])
                 for r in parsed['rows']) == ref['rows']


@pytest.mark.parametrize('name, kind, source_args', [
    ('h100-sxm-8gpu-ib', 'nvswitch', ['-b', '256M', '-e', '2G', '-f', '2']),
    ('a100-sxm-8gpu-ib', 'a100', ['-b', '1G', '-e', '8G', '-f', '2']),
    ('pcie-4gpu-roce', 'pcie', ['-b', '1G', '-e', '8G', '-f', '2']),
])
def test_round_trip_profile_devices_and_captured_busbw(tmp_path, name, kind, source_args):
    node = NcclNode(tmp_path, name)
    gpus = bundle.load_yaml(node.file('profile.yml'))['gpus']
    rc, out, err = node.nccl('all_reduce_perf', *(source_args + ['-g', str(len(gpus))]))
    assert (rc, err) == (0, '')
    parsed = parse_nccl_tests(out)
    assert parsed['errors'] == [] and parsed['test'] == 'all_reduce_perf'
    assert parsed['nccl_version'] == '2.21.5'
    assert [(d['device'], d['name'], d['host']) for d in parsed['devices']] == [
        (g['index'], g['name'], 'gpu-a01') for g in gpus]
    assert [d['bus_id'] for d in parsed['devices']] == [
        g['pci_bus_id'][4:14].lower() for g in gpus]
    ref = sim_nccl.REFERENCES[kind]['rows']
    assert [(r['size'], r['out_of_place']['busbw_gbps'], r['in_place']['busbw_gbps'])
            for r in parsed['rows']] == list(ref)
    assert parsed['largest_size_busbw_gbps'] == max(ref[-1][1:])
    busbw = [h['busbw_gbps'] for r in parsed['rows'] for h in (r['out_of_place'], r['in_place'])]
    assert abs(parsed['avg_busbw_gbps'] - sum(busbw) / len(busbw)) < 0.01

    # the profile fault and the run-time fault lower it by their factor; both: the lower factor
    slow = NcclNode(tmp_path / 'slow', name, faults=[(_slow_fault(), {'factor': '0.5'})])
    low = parse_nccl_tests(slow.nccl('all_reduce_perf', *(source_args + ['-g', str(len(gpus))]))[1])
    assert low['largest_size_busbw_gbps'] == round(max(ref[-1][1:]) * 0.5, 2)
    slow.runtime_fault({'nccl_slow': {'factor': 0.25}, 'dcgm_diag_fail': {'gpu': 1}})
    lower = parse_nccl_tests(slow.nccl('all_reduce_perf', *(source_args + ['-g', str(len(gpus))]))[1])
    assert lower['largest_size_busbw_gbps'] == round(max(ref[-1][1:]) * 0.25, 2)


def _fault_apply(tree, fault, **params):
    if hasattr(fault, 'apply'):
        return fault.apply(tree, **params)
    raise AssertionError(fault)


def test_profile_fault_is_recorded(tmp_path):
    tree = bundle.read_profile(os.path.join(REPO, 'simulator', 'profiles', 'h100-sxm-8gpu-ib'))
    assert _fault_apply(tree, _slow_fault(), factor='0.3') == []
    runtime = json.loads(bundle.text(tree, 'sim/runtime.json'))
    assert runtime['faults'][-1] == {'name': 'nccl_slow', 'params': {'factor': '0.3'}}
    assert bundle.load_yaml(bundle.text(tree, 'profile.yml'))['faults'][-1]['factor'] == 0.3
    with pytest.raises(ValueError):
        sim_nccl.apply_fault_nccl_slow({}, factor=0)
    with pytest.raises(ValueError):
        sim_nccl.apply_fault_nccl_slow({}, factor='fast')


def test_runtime_fault_default_factor(tmp_path):
    node = NcclNode(tmp_path, 'h100-sxm-8gpu-ib')
    node.runtime_fault({'nccl_slow': {}})
    parsed = parse_nccl_tests(node.nccl('all_reduce_perf', '-b', '2G', '-e', '2G', '-g', '8')[1])
    assert parsed['largest_size_busbw_gbps'] == round(470.73 * 0.25, 2)
    node.runtime_fault({'dcgm_diag_fail': {'gpu': 1}})
    assert parse_nccl_tests(node.nccl('all_reduce_perf', '-b', '2G', '-e', '2G', '-g', '8')[1])[
        'largest_size_busbw_gbps'] == 470.73


@pytest.mark.parametrize('collective, nranks, factor_name', [
    ('all_reduce', 8, 'ar'), ('all_gather', 8, 'ag'), ('reduce_scatter', 4, 'ag'), ('alltoall', 8, 'ag'),
    ('broadcast', 8, 'one'), ('reduce', 2, 'one'), ('sendrecv', 8, 'one')])
def test_collectives_sizes_counts_and_bus_factor(tmp_path, collective, nranks, factor_name):
    node = NcclNode(tmp_path, 'h100-sxm-8gpu-ib')
    rc, out, _err = node.nccl(collective + '_perf', '-b', '8', '-e', '128M', '-f', '2', '-g', str(nranks))
    assert rc == 0
    parsed = parse_nccl_tests(out)
    assert parsed['errors'] == [] and len(parsed['devices']) == nranks
    factor = {'ar': 2.0 * (nranks - 1) / nranks, 'ag': float(nranks - 1) / nranks, 'one': 1.0}[factor_name]
    per_rank = factor_name == 'ag'
    for row in parsed['rows']:
        assert row['count'] * 4 * (nranks if per_rank else 1) == row['size']
        half = row['out_of_place']
        if half['algbw_gbps'] > 10:
            assert abs(half['busbw_gbps'] / half['algbw_gbps'] - factor) < 0.01
    assert parsed['rows'][-1]['size'] == 134217728
    assert parsed['rows'][0]['redop'] == ('sum' if collective in ('all_reduce', 'reduce_scatter', 'reduce') else None)
    assert parsed['rows'][0]['root'] == (0 if collective in ('broadcast', 'reduce') else None)


def test_arguments(tmp_path):
    node = NcclNode(tmp_path, 'h100-sxm-8gpu-ib')
    parsed = parse_nccl_tests(node.nccl('all_gather_perf', '-b', '1M', '-e', '4M', '-i', '1M', '-g', '2', '-c', '0',
                                        '-d', 'half', '-n', '50', '-w', '10')[1])
    assert [r['size'] for r in parsed['rows']] == [1048576, 2097152, 3145728, 4194304]
    assert all(r['type'] == 'half' and r['out_of_place']['wrong'] is None for r in parsed['rows'])
    assert parsed['params']['step_kind'] == 'bytes' and parsed['params']['iters'] == 50
    default = parse_nccl_tests(node.nccl('all_reduce_perf')[1])  # one GPU, 32 MiB: bus bandwidth 0
    assert len(default['devices']) == 1 and [r['size'] for r in default['rows']] == [33554432]
    assert default['largest_size_busbw_gbps'] == 0.0
    rc, _out, err = node.nccl('all_reduce_perf', '-q', '1')
    assert rc == 1 and 'invalid option' in err
    assert sim_nccl.collective_of(['sim_nccl.py', 'all_reduce_perf', '-g', '2']) == ('all_reduce', ['-g', '2'])


def test_visible_devices(tmp_path):
    node = NcclNode(tmp_path, 'h100-sxm-8gpu-ib')
    parsed = parse_nccl_tests(node.nccl('all_reduce_perf', '-g', '2', CUDA_VISIBLE_DEVICES='6,7')[1])
    assert [(d['device'], d['bus_id']) for d in parsed['devices']] == [(0, '0000:cb:00'), (1, '0000:db:00')]


def test_failures_as_nccl_tests_prints_them(tmp_path):
    node = NcclNode(tmp_path, 'pcie-4gpu-roce')
    rc, out, _err = node.nccl('all_reduce_perf', '-g', '8')
    assert rc == 1
    assert parse_nccl_tests(out)['errors'] == ["gpu-a01: Test CUDA failure common.cu:941 'invalid device ordinal'"]
    down = NcclNode(tmp_path / 'down', 'h100-sxm-8gpu-ib', faults=[('driver_not_loaded', {})])
    rc, out, _err = down.nccl('all_reduce_perf', '-g', '8')
    assert rc == 1 and 'no CUDA-capable device is detected' in parse_nccl_tests(out)['errors'][0]
    bare = NcclNode(tmp_path / 'bare', 'h100-sxm-8gpu-ib', nccl=None)
    rc, out, err = bare.nccl('all_reduce_perf', '-g', '8')
    assert rc == 127 and out == '' and 'libnccl.so.2: cannot open shared object file' in err
    libdir = tmp_path / 'nccl-lib'
    libdir.mkdir()
    (libdir / 'libnccl.so.2').write_text('')
    rc, out, _err = bare.nccl('all_reduce_perf', '-g', '8', LD_LIBRARY_PATH=str(libdir))
    assert rc == 0 and parse_nccl_tests(out)['nccl_version'] is None


def _toolchain(tmp_path):
    cuda = tmp_path / 'cuda'
    (cuda / 'bin').mkdir(parents=True)
    (cuda / 'bin' / 'nvcc').write_text('#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\n')
    (cuda / 'bin' / 'nvcc').chmod(0o755)
    nccl = tmp_path / 'nccl'
    (nccl / 'include').mkdir(parents=True)
    (nccl / 'lib').mkdir()
    (nccl / 'include' / 'nccl.h').write_text('')
    (nccl / 'lib' / 'libnccl.so').write_text('')
    return str(cuda), str(nccl)


def _make(src, *args):
    return subprocess.run(['make', '-C', src] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)


@pytest.mark.skipif(shutil.which('make') is None, reason='needs make')
def test_source_tree_builds_launchers_that_run_the_simulator(tmp_path):
    src = str(tmp_path / 'nccl-tests')
    shutil.copytree(SRC, src)
    cuda, nccl = _toolchain(tmp_path)
    done = _make(src, 'CUDA_HOME=' + cuda, 'NCCL_HOME=' + nccl, 'PYTHON=' + sys.executable, 'SIM_NCCL=' + SIM)
    assert done.returncode == 0, done.stderr
    built = sorted(os.listdir(os.path.join(src, 'build')))
    assert [n for n in built if n.endswith('_perf')] == sorted(c + '_perf' for c in sim_nccl.COLLECTIVES)
    node = NcclNode(tmp_path, 'h100-sxm-8gpu-ib')
    env = dict(os.environ)
    env.update(node.env)
    proc = subprocess.run([os.path.join(src, 'build', 'all_gather_perf'), '-b', '1G', '-e', '1G', '-g', '8'],
                          stdout=subprocess.PIPE, env=env, universal_newlines=True, check=False)
    assert proc.returncode == 0
    parsed = parse_nccl_tests(proc.stdout)
    assert parsed['test'] == 'all_gather_perf' and len(parsed['devices']) == 8
    assert _make(src, 'CUDA_HOME=' + cuda, 'NCCL_HOME=' + nccl).stdout.count('Compiling') == 0  # up to date


@pytest.mark.skipif(shutil.which('make') is None, reason='needs make')
@pytest.mark.parametrize('missing, message', [
    ('nvcc', 'nvcc: not found'),
    ('nccl.h', 'fatal error: nccl.h: No such file or directory'),
    ('libnccl.so', 'cannot find -lnccl'),
    ('mpi.h', 'fatal error: mpi.h: No such file or directory'),
])
def test_source_tree_fails_like_the_real_build(tmp_path, missing, message):
    src = str(tmp_path / 'nccl-tests')
    shutil.copytree(SRC, src)
    cuda, nccl = _toolchain(tmp_path)
    args = ['CUDA_HOME=' + cuda, 'NCCL_HOME=' + nccl]
    if missing == 'nvcc':
        os.remove(os.path.join(cuda, 'bin', 'nvcc'))
    elif missing == 'nccl.h':
        os.remove(os.path.join(nccl, 'include', 'nccl.h'))
    elif missing == 'libnccl.so':
        os.remove(os.path.join(nccl, 'lib', 'libnccl.so'))
    else:
        args += ['MPI=1', 'MPI_HOME=' + str(tmp_path / 'no-mpi')]
    done = _make(src, *args)
    assert done.returncode != 0 and message in done.stderr
    assert not any(n.endswith('_perf') for n in os.listdir(os.path.join(src, 'build')))


def test_install_places_the_lib(tmp_path):
    assert sim_nccl.install(str(tmp_path)) is True
    assert sim_nccl.install(str(tmp_path)) is False
    with open(os.path.join(str(tmp_path), sim_nccl.LIB, 'sim_nccl.py')) as handle, open(SIM) as source:
        assert handle.read() == source.read()


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_every_profile_has_a_kind(name):
    profile = os.path.join(REPO, 'simulator', 'profiles', name)
    gpus = sim_nccl.profile_gpus(profile)
    assert gpus and sim_nccl.node_kind(profile, gpus) == {'h100-sxm-8gpu-ib': 'nvswitch', 'a100-sxm-8gpu-ib': 'a100',
                                                          'pcie-4gpu-roce': 'pcie'}[name]
