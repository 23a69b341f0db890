# -*- coding: utf-8 -*-
"""dcgm_plan: the DCGM packages it names and pins for a node, and how it reads apt and dpkg (dnf and rpm:
tests/unit/repos/test_rhel_dcgm.py, against a real dnf)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.modules import dcgm_plan as module_dcgm_plan

from module_harness import answer_commands
from repo_paths import REPO

with open(os.path.join(REPO, 'roles', 'dcgm', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
CORE, CUDA12, EXPORTER, DCGM3 = ('datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda12',
                                 'datacenter-gpu-manager-exporter', 'datacenter-gpu-manager')
# apt-cache madison of a node with the site mirror and another source: 4.2.3 (no Debian revision) and 4.4.1 in the
# mirror, a newer 4.4.1 build elsewhere
MADISON = ''.join(' %s | %s | %s ./ Packages\n' % row for row in (
    (CORE, '1:4.4.1-1', 'file:/srv/mirror'), (CORE, '1:4.2.3', 'file:/srv/mirror'),
    (CUDA12, '1:4.4.1-1', 'file:/srv/mirror'), (CUDA12, '1:4.2.3', 'file:/srv/mirror'),
    (EXPORTER, '4.6.0-1', 'file:/srv/mirror'), (EXPORTER, '4.1.3-1', 'file:/srv/mirror'),
    (EXPORTER, '4.8.3-1', 'http://other/repo')))
# dpkg-query: DCGM 3 held, DCGM 4 unknown (exit 1)
DPKG = '%s\t1:3.3.9\thi \n' % DCGM3
# a node whose driver moved from CUDA 12 to 13: the CUDA 12 build and the profiling module held at 4.4.1
DPKG_CUDA12 = ''.join('%s\t1:4.4.1-1\thi \n' % name for name in (
    CORE, CUDA12, 'datacenter-gpu-manager-4-proprietary', 'datacenter-gpu-manager-4-proprietary-cuda12', EXPORTER))


def _params(**variables):
    # a release the madison lines above offer
    values = dict(DEFAULTS, dcgm_version='4.4.1', dcgm_exporter_version='4.4.1-4.6.0')
    values = dict((k, values[k]) for k in ('dcgm_version', 'dcgm_exporter_version', 'dcgm_exporter', 'dcgm_profiling'))
    values.update(variables)
    return {'variables': values, 'family': 'Debian', 'cuda_major': 12, 'read_packages': True,
            'repo_url': 'file:///srv/mirror/', 'repo_id': 'gpuops-dcgm'}


class FakeModule(object):
    def __init__(self, dpkg=DPKG):
        self.calls = []
        self.dpkg = dpkg

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name

    def answer(self, argv):
        self.calls.append(argv)
        if argv[:2] == ['apt-cache', 'madison']:
            return 0, MADISON, ''
        return 1, self.dpkg, 'dpkg-query: no packages found matching %s\n' % CORE

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture
def module(monkeypatch):
    fake = FakeModule()
    answer_commands(monkeypatch, fake.answer)
    return fake


def _plan(module, **variables):
    return module_dcgm_plan.plan(_params(**variables), lambda *args: module_dcgm_plan.read_packages(module, *args))


def test_the_pins_follow_the_package_version_the_mirror_offers(module):
    result = _plan(module)
    assert result['errors'] == []
    assert result['pins'] == {CORE: '1:4.4.1-1', CUDA12: '1:4.4.1-1', EXPORTER: '4.6.0-1'}
    assert result['installed'] == {DCGM3: '1:3.3.9'}
    assert result['changes'] == [CORE, CUDA12, EXPORTER]
    # one madison for the three packages, one dpkg-query for them and DCGM 3
    assert [c[:2] for c in module.calls] == [['apt-cache', 'madison'], ['dpkg-query', '-W']]
    assert module.calls[0][2:] == [CORE, CUDA12, EXPORTER] and DCGM3 in module.calls[1]
    assert result['stale'] == []
    # before DCGM 4.4 NVIDIA's packages had no revision: the second form
    older = _plan(module, dcgm_version='4.2.3', dcgm_exporter_version='4.2.3-4.1.3')
    assert older['pins'] == {CORE: '1:4.2.3', CUDA12: '1:4.2.3', EXPORTER: '4.1.3-1'}


def test_a_version_only_another_source_offers_fails_naming_the_variable(module):
    result = _plan(module, dcgm_exporter_version='4.4.1-4.8.3')
    assert result['errors'] == [
        "dcgm_exporter_version: the package sources do not offer datacenter-gpu-manager-exporter=4.8.3-1 (dcgm_repo_url: "
        "file:///srv/mirror/; offered: datacenter-gpu-manager-4-core 1:4.4.1-1, 1:4.2.3; datacenter-gpu-manager-4-cuda12 "
        "1:4.4.1-1, 1:4.2.3; datacenter-gpu-manager-exporter 4.6.0-1, 4.1.3-1); set dcgm_repo_url to a mirror of "
        "NVIDIA's CUDA repository for this OS, or dcgm_version / dcgm_exporter_version / dcgm_cuda_major to what the "
        "sources offer"]


@pytest.mark.parametrize('family, manager, hold', [
    ('Debian', 'apt', 'apt-mark hold'), ('Ubuntu', 'apt', 'apt-mark hold'), ('RedHat', 'dnf', 'dnf versionlock')])
def test_the_packages_come_from_the_packaging_table(family, manager, hold):
    params = _params(dcgm_profiling=True, dcgm_exporter=False)
    params.update(family=family, cuda_major=13, read_packages=False)
    result = module_dcgm_plan.plan(params, lambda *args: 1 / 0)
    assert result['packages'] == {'dcgm': ['datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda13',
                                           'datacenter-gpu-manager-4-proprietary',
                                           'datacenter-gpu-manager-4-proprietary-cuda13'],
                                  'exporter': None, 'dcgm3': DCGM3}
    assert result['package_manager'] == {'name': manager, 'hold': hold}
    assert result['pins'] == {} and result['errors'] == []


def test_an_os_family_without_dcgm_packages_is_refused_before_anything_is_read():
    params = _params()
    params['family'] = 'Suse'
    result = module_dcgm_plan.plan(params, lambda *args: 1 / 0)
    assert result['errors'] == ["gpuops_dcgm_enabled: gpuops.node.dcgm has no DCGM packages for the OS family 'Suse' "
                                "(known: Debian, Ubuntu, RedHat); set gpuops_dcgm_enabled: false for this host"]


def test_packages_no_longer_pinned_are_stale(monkeypatch):
    fake = FakeModule(DPKG_CUDA12)
    answer_commands(monkeypatch, fake.answer)
    params = _params(dcgm_exporter=False)
    params['cuda_major'] = 13
    result = module_dcgm_plan.plan(params, lambda *args: module_dcgm_plan.read_packages(fake, *args))
    # every DCGM 4 name the table has is read, whatever is pinned
    assert len(fake.calls[1]) - fake.calls[1].index('-f=${Package}\t${Version}\t${db:Status-Abbrev}\n') - 1 == 10
    assert result['pins'] == {CORE: '1:4.4.1-1', 'datacenter-gpu-manager-4-cuda13': '1:4.4.1-1'}
    # the madison lines offer no CUDA 13 build: the variable to change is the CUDA major
    assert result['errors'][0].startswith('dcgm_cuda_major: the package sources do not offer '
                                          'datacenter-gpu-manager-4-cuda13=1:4.4.1-1 ')
    assert result['stale'] == ['datacenter-gpu-manager-4-proprietary', EXPORTER, CUDA12,
                               'datacenter-gpu-manager-4-proprietary-cuda12']
