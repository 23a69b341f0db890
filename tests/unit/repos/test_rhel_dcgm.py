# -*- coding: utf-8 -*-
"""The dcgm role's package plan on RHEL 9 and 10, against NVIDIA's DCGM packaging read by a real dnf.

tests/repo/build_rhel_repo.py puts DCGM 4.4.1 and 4.6.0, their exporters (4.6.0, 4.8.3) and DCGM 3.3.9 into its
stand-in of NVIDIA's rhel9 repository, with the names, epoch, release and relations of NVIDIA's
cmake/packaging.cmake (NVIDIA/DCGM@72fa3fe): each -cudaNN requires the core at exactly its epoch:version-release,
and the core conflicts with DCGM 3. The gpuops.node.dcgm_plan module runs through ansible-playbook on this host with
dnf and rpm pointed at an empty RHEL 9 root (tests/unit/dnf_root.py; its main flow also on an el10 root against the
rhel10 stand-in); the role's dnf steps (remove DCGM 3, release a lock before a version change, install the pins as
name-epoch:version-release, lock the names) run as dnf commands.

What this proves: the names the packaging table gives RHEL, the plan's reading of ``dnf repoquery`` and ``rpm -q``
for NVIDIA's epoch-1 versions (the same strings as on apt), that dnf installs an exact older DCGM with the role's
specs and upgrades it, that the locks keep ``dnf upgrade`` off it, why DCGM 3 must go first, and that a version the
repository lacks fails the task naming the variable. What it cannot: ansible.builtin.dnf and
community.general.dnf_versionlock as the role's tasks call them (no RHEL node boots here), the exporter's real
Requires (unpublished; the builder says what it guesses), DCGM 4.7's new package layout, NVIDIA's signatures.
Needs dnf, dnf-plugins-core, rpm and createrepo-c (``make host``); skipped without them, failed under CI.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

import dnf_root  # tests/unit
from ansible_cli import run_task
from repo_paths import REPO

pytestmark = dnf_root.requirement()

REPO_ID = 'gpuops-dcgm'   # the role's dnf repository (roles/dcgm/vars/main.yml, __dcgm_source_name)
with open(os.path.join(REPO, 'roles', 'dcgm', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
CORE, CUDA12, EXPORTER, DCGM3 = ('datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda12',
                                 'datacenter-gpu-manager-exporter', 'datacenter-gpu-manager')


class Rhel(dnf_root.Root):
    """An empty RHEL 9 (or 10) root with the stand-in repository as the role's ``gpuops-dcgm``."""

    def __init__(self, tmp, repo, release='9'):
        super().__init__(tmp, REPO_ID, repo, release)

    def dcgm(self):
        return self.installed('datacenter-gpu-manager', epoch=True)

    def plan(self, cuda_major=12, **variables):
        """gpuops.node.dcgm_plan through ansible-playbook, as repository.yml calls it, dnf and rpm on the root."""
        values = dict((k, DEFAULTS[k]) for k in ('dcgm_version', 'dcgm_exporter_version', 'dcgm_exporter',
                                                 'dcgm_profiling'))
        values.update(variables)
        task = {'variables': values, 'family': 'RedHat', 'cuda_major': cuda_major, 'read_packages': True,
                'repo_url': 'file://%s' % self.repo, 'repo_id': REPO_ID}
        return run_task(self.tmp, 'gpuops.node.dcgm_plan', task, self.task_env)

    def apply(self, result):
        """install.yml's dnf steps: release the locks, remove DCGM 3 and the packages no longer pinned, install the
        pins, lock the names."""
        relock = [p for p in result['changes'] if p in result['installed']]
        dcgm3 = result['packages']['dcgm3']
        unlock = relock + result['stale'] + ([dcgm3] if dcgm3 in result['installed'] else [])
        if unlock:
            self.dnf('versionlock', 'delete', *unlock)
        if dcgm3 in result['installed']:
            self.dnf('remove', dcgm3)
        if result['stale']:
            self.dnf('remove', *result['stale'])
        self.dnf('install', *('%s-%s' % item for item in sorted(result['pins'].items())))
        self.dnf('versionlock', 'add', *sorted(result['pins']))


@pytest.fixture
def rhel9(tmp_path, rhel_repo):
    return Rhel(tmp_path, rhel_repo('9'))


@pytest.fixture(params=['9', '10'])
def rhel(request, tmp_path, rhel_repo):
    """RHEL 9, then RHEL 10 (an el10 root, NVIDIA's rhel10 repository: no module streams, dnf 4)."""
    return Rhel(tmp_path, rhel_repo(request.param), request.param)


def test_dcgm_3_is_replaced_by_the_pinned_dcgm_4_which_is_locked_and_upgrades_when_asked(rhel):
    rhel.dnf('install', DCGM3)
    assert rhel.dcgm() == {DCGM3: '1:3.3.9-1'}
    # DCGM 4's core conflicts with DCGM 3 and obsoletes nothing: installed beside it, dnf refuses
    rc, out = rhel.run('install', CORE + '-1:4.4.1-1')
    assert rc != 0 and 'conflicts' in out, out
    first = rhel.plan(dcgm_version='4.4.1', dcgm_exporter_version='4.4.1-4.6.0')
    assert first.get('failed') is not True, first
    assert first['packages'] == {'dcgm': [CORE, CUDA12], 'exporter': EXPORTER, 'dcgm3': DCGM3}
    assert first['package_manager'] == {'name': 'dnf', 'hold': 'dnf versionlock'}
    assert first['pins'] == {CORE: '1:4.4.1-1', CUDA12: '1:4.4.1-1', EXPORTER: '4.6.0-1'}
    assert first['installed'] == {DCGM3: '1:3.3.9-1'} and first['changes'] == [CORE, CUDA12, EXPORTER]
    rhel.apply(first)
    assert rhel.dcgm() == {CORE: '1:4.4.1-1', CUDA12: '1:4.4.1-1', EXPORTER: '4.6.0-1'}
    # the second run changes nothing, and the locks keep dnf upgrade off every package
    again = rhel.plan(dcgm_version='4.4.1', dcgm_exporter_version='4.4.1-4.6.0')
    assert again['changes'] == [] and again['installed'] == first['pins']
    rhel.dnf('upgrade')
    assert rhel.dcgm() == first['pins']
    # the next release, as a site moves its pin: every lock released, the pair installed, locked again
    newer = rhel.plan(dcgm_version='4.6.0', dcgm_exporter_version='4.6.0-4.8.3')
    assert newer['pins'] == {CORE: '1:4.6.0-1', CUDA12: '1:4.6.0-1', EXPORTER: '4.8.3-1'}
    assert newer['changes'] == [CORE, CUDA12, EXPORTER]
    rhel.apply(newer)
    assert rhel.dcgm() == {CORE: '1:4.6.0-1', CUDA12: '1:4.6.0-1', EXPORTER: '4.8.3-1'}
    # back to the validated release: a downgrade, which dnf does with the exact specs
    rhel.apply(rhel.plan(dcgm_version='4.4.1', dcgm_exporter_version='4.4.1-4.6.0'))
    assert rhel.dcgm()[CORE] == '1:4.4.1-1'


def test_the_profiling_module_and_cuda_13_are_pinned_with_the_core(rhel9):
    plan = rhel9.plan(dcgm_version='4.6.0', dcgm_exporter=False, dcgm_profiling=True)
    assert sorted(plan['pins']) == [CORE, CUDA12, 'datacenter-gpu-manager-4-proprietary',
                                    'datacenter-gpu-manager-4-proprietary-cuda12']
    assert set(plan['pins'].values()) == {'1:4.6.0-1'}
    rhel9.apply(plan)
    assert set(rhel9.dcgm().values()) == {'1:4.6.0-1'}


def test_a_version_the_repository_lacks_fails_the_task_and_names_the_variable(rhel9):
    result = rhel9.plan(dcgm_version='4.5.3', dcgm_exporter_version='4.5.3-4.8.2')
    assert result['failed'] is True
    assert result['msg'].startswith('dcgm_version: the package sources do not offer '
                                    'datacenter-gpu-manager-4-core=1:4.5.3-1, ')
    assert 'datacenter-gpu-manager-4-core 1:4.4.1-1, 1:4.6.0-1' in result['msg'], result['msg']
    assert rhel9.dcgm() == {}


def test_a_driver_moving_to_cuda_13_leaves_no_cuda_12_build_to_stop_the_next_upgrade(rhel9):
    rhel9.apply(rhel9.plan(dcgm_version='4.4.1', dcgm_exporter_version='4.4.1-4.6.0'))
    # the driver now supports CUDA 13 (dcgm_cuda_major auto follows it), and the site turns the exporter off
    moved = rhel9.plan(cuda_major=13, dcgm_version='4.4.1', dcgm_exporter=False)
    assert moved['stale'] == [EXPORTER, CUDA12] and moved['changes'] == ['datacenter-gpu-manager-4-cuda13']
    # left locked, the CUDA 12 build (which requires the core at exactly 1:4.4.1-1) stops the upgrade
    rc, out = rhel9.run('install', CORE + '-1:4.6.0-1', 'datacenter-gpu-manager-4-cuda13-1:4.6.0-1')
    assert rc != 0, out
    rhel9.apply(moved)
    assert rhel9.dcgm() == {CORE: '1:4.4.1-1', 'datacenter-gpu-manager-4-cuda13': '1:4.4.1-1'}
    rhel9.apply(rhel9.plan(cuda_major=13, dcgm_version='4.6.0', dcgm_exporter=False))
    assert rhel9.dcgm() == {CORE: '1:4.6.0-1', 'datacenter-gpu-manager-4-cuda13': '1:4.6.0-1'}
