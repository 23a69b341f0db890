# -*- coding: utf-8 -*-
"""The nccl role's package plan on RHEL 9 and 10, against NVIDIA's NCCL packaging read by a real dnf.

tests/repo/build_rhel_repo.py puts libnccl, libnccl-devel and libnccl-static into its stand-in of NVIDIA's rhel9
repository as NVIDIA's own spec builds them (NVIDIA/nccl@1672c857 pkg/redhat/nccl.spec.in): version <nccl>, release
<revision>+cuda<major>.<minor>, no epoch, libnccl-devel requiring ``libnccl >= <nccl>``. The gpuops.node.nccl_plan
module runs through ansible-playbook on this host with dnf and rpm pointed at an empty RHEL 9 root
(tests/unit/dnf_root.py; its main flow also on an el10 root against the rhel10 stand-in); the role's dnf steps
(install the specs the plan names, lock them with versionlock, release a lock before a version change) run as dnf
commands.

What this proves: the names the packaging table gives RHEL, the plan's reading of ``dnf repoquery`` and ``rpm
-q`` for these versions, the CUDA build it picks, that dnf installs an exact older NCCL with the role's specs,
that the locks keep ``dnf upgrade`` off them, and why both packages are named (libnccl-devel alone pulls the newest
libnccl). What it cannot: ansible.builtin.dnf and community.general.dnf_versionlock as the role's tasks call them
(no RHEL node boots here), RHEL's own dnf patches, NVIDIA's signatures and the real repository's other packages.
Needs dnf, dnf-plugins-core, rpm and createrepo-c (``make host``); skipped without them, failed under CI.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess

import pytest
import yaml

import dnf_root  # tests/unit
from ansible_cli import run_task
from repo_paths import REPO

pytestmark = dnf_root.requirement()

REPO_ID = 'gpuops-nccl'   # the role's dnf repository (roles/nccl/vars/main.yml, __nccl_source_name)
with open(os.path.join(REPO, 'roles', 'nccl', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
# a node whose driver supports CUDA 12.8: both stand-in releases are CUDA 12 builds
FACTS = {'cuda_version': '12.8', 'driver_loaded': True, 'gpu_count': 8, 'pci_gpus': [{}] * 8, 'nics': [],
         'matrix': {}}


class Rhel(dnf_root.Root):
    """An empty RHEL 9 (or 10) root with the stand-in repository as the role's ``gpuops-nccl``."""

    def __init__(self, tmp, repo, release='9'):
        super().__init__(tmp, REPO_ID, repo, release)

    def installed(self, prefix='libnccl', epoch=False):
        return super().installed(prefix, epoch)

    def plan(self, **variables):
        """gpuops.node.nccl_plan through ansible-playbook, as packages.yml calls it, dnf and rpm on the root."""
        values = dict(DEFAULTS, nccl_dev=True, **variables)
        task = {'variables': values, 'facts': FACTS, 'family': 'RedHat', 'read_packages': True,
                'repo_url': 'file://%s' % self.repo, 'repo_id': REPO_ID}
        return run_task(self.tmp, 'gpuops.node.nccl_plan', task, self.task_env)

    def apply(self, result):
        """packages.yml's dnf steps: release the locks of what changes, install the specs, lock them."""
        relock = [p for p in result['changes'] if p in result['installed']]
        if relock:
            self.dnf('versionlock', 'delete', *relock)
        specs = ['%s-%s' % (p, result['package_version']) for p in result['packages']]
        self.dnf('install', *specs)
        self.dnf('versionlock', 'add', *specs)


@pytest.fixture
def rhel9(tmp_path, rhel_repo):
    return Rhel(tmp_path, rhel_repo('9'))


@pytest.fixture(params=['9', '10'])
def rhel(request, tmp_path, rhel_repo):
    """RHEL 9, then RHEL 10 (an el10 root, NVIDIA's rhel10 repository: no module streams, dnf 4)."""
    return Rhel(tmp_path, rhel_repo(request.param), request.param)


def test_an_exact_older_nccl_installs_is_locked_and_upgrades_when_asked(rhel):
    first = rhel.plan(nccl_version='2.23.4')
    assert first.get('failed') is not True, first
    assert first['packages'] == ['libnccl', 'libnccl-devel']
    assert first['package_manager'] == {'name': 'dnf', 'hold': 'dnf versionlock'}
    assert first['package_version'] == '2.23.4-1+cuda12.6'
    assert first['installed'] == {} and first['changes'] == ['libnccl', 'libnccl-devel']
    rhel.apply(first)
    assert rhel.installed() == {'libnccl': '2.23.4-1+cuda12.6', 'libnccl-devel': '2.23.4-1+cuda12.6'}
    # the second run changes nothing
    again = rhel.plan(nccl_version='2.23.4')
    assert again['installed'] == rhel.installed() and again['changes'] == []
    # the locks hold: dnf upgrades nothing
    assert 'Nothing to do' in subprocess.run(['dnf', '-y', 'upgrade'], stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, universal_newlines=True, env=rhel.env,
                                             check=False).stdout
    assert rhel.installed()['libnccl'] == '2.23.4-1+cuda12.6'
    # nccl_version empty: the newest build for the driver's CUDA major; the locks are released and set again
    newest = rhel.plan(nccl_version='')
    assert newest['package_version'] == '2.26.2-1+cuda12.8'
    assert newest['changes'] == ['libnccl', 'libnccl-devel']
    rhel.apply(newest)
    assert rhel.installed() == {'libnccl': '2.26.2-1+cuda12.8', 'libnccl-devel': '2.26.2-1+cuda12.8'}
    # back to the validated version: a downgrade, which dnf does with the exact specs
    back = rhel.plan(nccl_version='2.23.4')
    rhel.apply(back)
    assert set(rhel.installed().values()) == {'2.23.4-1+cuda12.6'}


def test_the_headers_alone_would_pull_the_newest_runtime(rhel9):
    # NVIDIA's libnccl-devel requires libnccl >= its version, not the same: named alone at 2.23.4, dnf (best=True)
    # takes the newest libnccl, which is why the plan names both at one version
    rhel9.dnf('install', 'libnccl-devel-2.23.4-1+cuda12.6')
    assert rhel9.installed() == {'libnccl': '2.26.2-1+cuda12.8', 'libnccl-devel': '2.23.4-1+cuda12.6'}
    plan = rhel9.plan(nccl_version='2.23.4')
    assert plan['changes'] == ['libnccl']


def test_a_version_without_a_build_for_the_cuda_major_fails_the_task_and_names_the_variable(rhel9):
    result = rhel9.plan(nccl_version='2.25.1')
    assert result['failed'] is True
    assert result['msg'].startswith('nccl_version: the package sources offer no libnccl 2.25.1 built for CUDA 12 '
                                    '(offered: ')
