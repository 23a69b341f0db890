# -*- coding: utf-8 -*-
"""The one table of NVIDIA's packaging (plans/nvidia_packaging.py): complete, every row sourced, and the
plan module reading from it every OS, source and branch the nvidia_driver role offers (the role names no packages).

What it cannot prove: that the rows are NVIDIA's packaging today. They are what the cited documents, NVIDIA's own
installers and the quoted real metadata say; the sources marked "likely" are third parties quoting real output."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import pytest
import yaml

from repo_paths import REPO

from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging as P

VARS = os.path.join(REPO, 'roles', 'nvidia_driver', 'vars')
FAMILY_VARS = {'Ubuntu': 'Ubuntu.yml', 'Debian': 'Debian.yml', 'RedHat': 'RedHat.yml'}
# NVIDIA's datacenter driver branches since 450 (and two to come): every one falls in exactly one row
BRANCHES = (450, 460, 470, 510, 515, 520, 525, 530, 535, 545, 550, 555, 560, 565, 570, 575, 580, 590, 595, 610, 615,
            620, 700)


def _role_vars(family):
    with open(os.path.join(VARS, FAMILY_VARS[family])) as handle:
        return yaml.safe_load(handle)


def test_every_row_and_repository_cites_known_sources():
    for row in P.DRIVER + P.REPOSITORIES + P.LIBRARIES:
        assert row.sources, row
        assert set(row.sources) <= set(P.SOURCES), row
    for key, (sureness, text) in P.SOURCES.items():
        assert sureness in ('confirmed', 'likely'), key
        assert len(text) > 40, key
    used = set(s for row in P.DRIVER + P.REPOSITORIES + P.LIBRARIES for s in row.sources)
    assert sorted(set(P.SOURCES) - used) == [], 'sources no row cites'


def test_nccl_has_one_row_per_family_the_role_supports():
    supported = set()
    for path in glob.glob(os.path.join(REPO, 'roles', 'nccl', 'vars', '*.yml')):
        with open(path) as handle:
            values = yaml.safe_load(handle) or {}
        if values.get('__nccl_supported'):
            supported.add(os.path.basename(path)[:-len('.yml')])
    assert supported == {'Debian', 'Ubuntu', 'RedHat'}
    for family in supported:
        row = P.library('nccl', family)
        assert row is not None and row.supported, family
        assert set(row.packages) == {'lib', 'dev'}, row
    assert P.library('nccl', 'Suse') is None


def test_branch_ranges_cover_every_branch_once():
    for family in FAMILY_VARS:
        for source in ('distro', 'cuda_repo'):
            rows = [r for r in P.DRIVER if r.family == family and r.source == source]
            for branch in BRANCHES:
                found = [r for r in rows if r.branches[0] <= branch and (r.branches[1] is None or branch <= r.branches[1])]
                assert len(found) == (1 if rows else 0), (family, source, branch)


@pytest.mark.parametrize('family', sorted(FAMILY_VARS))
def test_the_plan_reads_every_source_of_the_role_from_the_table(family):
    # the role names no packages (vars/<family>.yml): the plan module reads them here for each source it offers
    sources = _role_vars(family)['__nvidia_driver_sources']
    for source in sources:
        for branch in BRANCHES + (None,):
            entry = P.driver_packages(family, source, branch)
            assert entry is not None and entry['row'].supported, (family, source, branch)
            packages = entry['packages']
            assert sorted(packages) == ['open', 'proprietary'], (family, source)
            # the first package of each flavour is the kernel module package that decides the version
            assert 'dkms' in packages['open'][0] and 'dkms' in packages['proprietary'][0], (family, source)
            assert packages['open'][0] != packages['proprietary'][0], (family, source)
            assert sorted(entry['persistenced']) == ['name', 'versioned'], (family, source)
            for item in entry['fabricmanager']:
                assert sorted(item) == ['name', 'since_branch'], (family, source)
            assert all('{version}' in t or '{branch}' in t for t in entry['pinning']), (family, source)
        assert all(set(spec) - {'module_names'} == {'dkms_modules'} for spec in sources.values()), family


def test_no_branch_asked_reads_the_newest_branch_range():
    assert P.driver_packages('Ubuntu', 'cuda_repo', None)['packages']['open'][0] == 'nvidia-dkms-open'
    assert P.driver_packages('Ubuntu', 'mirror', '580')['packages']['open'][0] == 'nvidia-dkms-{branch}-open'
    assert P.driver_packages('Ubuntu', 'distro', None)['packages']['open'][0] == 'nvidia-dkms-{branch}-server-open'
    row = P.driver_packages('Ubuntu', 'cuda_repo', '595')['row']
    assert [r.branches for r in P.other_rows('Ubuntu', 'mirror', row)] == [(0, 580)]


def test_the_roles_repository_keys_are_the_tables():
    expected = dict((r.os, r.key) for r in P.REPOSITORIES)
    found = {}
    for family in FAMILY_VARS:
        role = _role_vars(family)
        assert role['__nvidia_driver_cuda_repo_key'] == '{{ __nvidia_driver_cuda_repo_keys[__nvidia_driver_cuda_repo_os] }}'
        found.update(role['__nvidia_driver_cuda_repo_keys'])
    assert found == expected


def test_the_fabric_manager_changes_name_at_580_on_rhel():
    row = P.driver_row('RedHat', 'cuda_repo', 580)
    assert P.by_branch(row.fabricmanager, 580) == 'nvidia-fabricmanager'
    assert P.by_branch(row.fabricmanager, 575) == 'nvidia-fabric-manager'
    assert P.by_branch(row.fabricmanager, 450) == 'nvidia-fabricmanager-450'


def test_ubuntu_drops_the_branch_from_its_names_at_590():
    assert P.driver_row('Ubuntu', 'cuda_repo', 580).packages['open'][0] == 'nvidia-dkms-{branch}-open'
    row = P.driver_row('Ubuntu', 'mirror', 590)
    assert row.packages['open'][0] == 'nvidia-dkms-open' and row.supported
    assert row.pinning == ('nvidia-driver-pinning-{version}', 'nvidia-driver-pinning-{branch}')


def test_debian13_has_its_own_key_and_no_580():
    repo = P.repository('debian13')
    assert repo.key == '8793F200.pub' and repo.fingerprint.endswith('8793F200') and repo.min_branch == 590
    assert P.repository('debian12').min_branch is None


def test_rhel8_and_9_have_module_streams_and_rhel10_none():
    # NVIDIA's guide: dnf module enable on RHEL 8/9, dnf versionlock alone on RHEL 10 (guide-version-locking);
    # tests/unit/repos/test_rhel_repo.py runs both against a real dnf
    redhat = [r.os for r in P.REPOSITORIES if r.family == 'RedHat']
    assert redhat == ['rhel8', 'rhel9', 'rhel10'] and P.MODULAR == ('rhel8', 'rhel9')
    assert 'guide-version-locking' in P.repository('rhel10').sources
    assert 'no module streams' in P.repository('rhel10').note
