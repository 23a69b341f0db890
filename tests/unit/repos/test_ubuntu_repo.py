# -*- coding: utf-8 -*-
"""NVIDIA's Ubuntu packaging against real apt: tests/repo/build_ubuntu_repo.py's stand-ins (names by branch up to
580, without the branch from 590, pinning packages) in a scratch apt root, the plan made by gpuops.node.nvidia_driver_plan
run through ansible-playbook on this host with apt pointed at that root (APT_CONFIG, and dpkg-query at its status),
and the plan's packages handed to apt-get's solver (simulated: nothing is installed), in the role's order: the
installation first, what it replaced removed after.

What it proves: with the relations of Canonical's packaging of the same drivers (exact-version siblings, a
virtual kernel-common name per version, Conflicts with the names without the branch), the plan names every package
an older version needs, a branch switch across the 590 rename swaps the names in one apt transaction (a site's
package that needs only the name without the branch stays) and removes what is left, and a
downgrade is refused unless allowed. What it cannot prove: that NVIDIA's own repositories bound the versions the
same way (no byte-exact stanza of them is public; the builder says what is guessed), what NVIDIA's pin file pins,
or a real dpkg run of the maintainer scripts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess
import sys

import pytest

from apt_root import AptRoot
from repo_paths import REPO

from ansible_collections.gpuops.node.plugins.module_utils.parsers.apt_show import parse_show

SCRIPT = os.path.join(REPO, 'tests', 'repo', 'build_ubuntu_repo.py')
MISSING = [tool for tool in ('dpkg-deb', 'apt-ftparchive', 'gpg', 'apt-get', 'dpkg-query') if shutil.which(tool) is None]
if MISSING and os.environ.get('CI'):
    raise AssertionError('CI needs %s (make host installs them)' % ', '.join(MISSING))
pytestmark = pytest.mark.skipif(bool(MISSING), reason='needs %s' % ', '.join(MISSING))

OLD580, NEW580, OLD595, NEW595 = '580.95.05-0ubuntu1', '580.126.20-1ubuntu1', '595.45.04-1ubuntu1', '595.71.05-1ubuntu1'
LEADS580 = ['nvidia-dkms-580-open', 'libnvidia-compute-580', 'nvidia-utils-580', 'nvidia-compute-utils-580']
# what an Ubuntu 24.04 base has that the packages depend on
BASE = (('adduser', '3.137ubuntu1', 'all'), ('libc6', '2.39-0ubuntu8', 'amd64'))


@pytest.fixture(scope='module')
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp('ubuntu-repo')
    built = subprocess.run([sys.executable, SCRIPT, '--out', str(out)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert built.returncode == 0, built.stdout
    with open(os.path.join(str(out), 'repo', 'Packages')) as handle:
        stanzas = dict(((s['package'], s['version']), s['fields']) for s in parse_show(handle.read()))
    return out, stanzas


@pytest.fixture
def apt_root(tmp_path, repo):
    out, stanzas = repo
    return AptRoot(tmp_path / 'root', out, stanzas, BASE, 'Ubuntu', 'ubuntu2404')


def installs(result):
    return dict(spec.split('=', 1) for spec in result['plan']['install'])


def test_an_older_580_needs_the_whole_closure(apt_root, tmp_path):
    result = apt_root.plan(tmp_path, version='580.95.05')
    assert not result.get('failed'), result.get('msg')
    plan = result['plan']
    assert plan['action'] == 'install' and plan['target_package_version'] == OLD580
    # the named packages, nvidia-compute-utils-580 at the driver's version, and what they couple at it
    assert sorted(plan['closure']) == ['nvidia-firmware-580', 'nvidia-kernel-common-580',
                                       'nvidia-kernel-source-580-open']
    assert set(installs(result).values()) == {OLD580}
    assert sorted(plan['hold']) == sorted(LEADS580 + plan['closure'] + ['nvidia-driver-pinning-580.95.05'])
    assert plan['pinning'] == {'package': 'nvidia-driver-pinning-580.95.05', 'package_version': OLD580,
                               'install': True, 'target_version': '580.95.05'}
    done = apt_root.simulate(plan['install'])
    assert done.returncode == 0, done.stdout
    assert all('(%s ' % OLD580 in line for line in done.stdout.splitlines() if line.startswith('Inst '))
    # the named packages alone, as the role installed them before: apt takes the newest kernel-common and fails
    alone = apt_root.simulate('%s=%s' % (name, OLD580) for name in LEADS580)
    assert alone.returncode != 0
    assert 'Depends: nvidia-kernel-common-580 (= %s) but %s is to be installed' % (OLD580, NEW580) in alone.stdout


def test_from_590_the_names_lose_the_branch_and_the_pinning_package_comes_first(apt_root, tmp_path):
    result = apt_root.plan(tmp_path, branch='595')
    plan = result['plan']
    assert plan['target_package_version'] == NEW595
    assert sorted(installs(result)) == ['libnvidia-compute', 'nvidia-compute-utils', 'nvidia-dkms-open',
                                        'nvidia-firmware', 'nvidia-kernel-common', 'nvidia-kernel-source-open',
                                        'nvidia-persistenced', 'nvidia-utils']
    # the version's own pinning package before the branch's
    assert plan['pinning']['package'] == 'nvidia-driver-pinning-595.71.05'
    older = apt_root.plan(tmp_path, version='595.45.04')['plan']
    assert set(installs({'plan': older}).values()) == {OLD595}
    done = apt_root.simulate(older['install'])
    assert done.returncode == 0, done.stdout
    # no branch asked: the newest branch range's names, the newest version
    newest = apt_root.plan(tmp_path)['plan']
    assert newest['target_version'] == '595.71.05' and 'nvidia-dkms-open=' + NEW595 in newest['install']


def test_a_branch_switch_across_the_rename_removes_the_old_names(apt_root, tmp_path):
    closure = ['nvidia-firmware-580', 'nvidia-kernel-common-580', 'nvidia-kernel-source-580-open']
    old = [(n, NEW580) for n in LEADS580 + closure + ['nvidia-driver-pinning-580.126.20']]
    apt_root.status(old, held=[n for n, _v in old])
    result = apt_root.plan(tmp_path, branch='595', facts={'driver_installed_version': '580.126.20'})
    plan = result['plan']
    assert plan['action'] == 'upgrade' and plan['installed_version'] == '580.126.20'
    gone = sorted(LEADS580 + closure + ['nvidia-driver-pinning-580.126.20'])
    assert plan['remove'] == gone and plan['unhold'] == gone
    # the role releases the holds, then installs: the new names Conflict with and Replace the old ones, so apt swaps
    # them in that one transaction, and a site's package that needs only the name without the branch stays
    site = ('Package: site-cuda-tool\nStatus: install ok installed\nVersion: 1.0\nArchitecture: amd64\n'
            'Maintainer: x\nDepends: libnvidia-compute\nDescription: x\n\n')
    apt_root.status(old, site=site)
    done = apt_root.simulate(plan['install'])
    assert done.returncode == 0, done.stdout
    swapped = sorted(l.split()[1] for l in done.stdout.splitlines() if l.startswith('Remv '))
    assert swapped and set(swapped) <= set(gone) and 'site-cuda-tool' not in swapped, done.stdout
    # what is left of 580 goes after, on its own
    assert apt_root.simulate([], plan['remove']).returncode == 0


def test_a_downgrade_across_the_rename_is_refused_unless_allowed(apt_root, tmp_path):
    new = ['libnvidia-compute', 'nvidia-compute-utils', 'nvidia-dkms-open', 'nvidia-firmware', 'nvidia-kernel-common',
           'nvidia-kernel-source-open', 'nvidia-persistenced', 'nvidia-utils']
    apt_root.status([(n, NEW595) for n in new])
    facts = {'driver_installed_version': '595.71.05'}
    refused = apt_root.plan(tmp_path, branch='580', facts=facts)
    assert refused['failed'] and refused['variable'] == 'nvidia_driver_allow_downgrade'
    assert 'the installed driver 595.71.05 is newer than the requested 580.126.20' in refused['msg']
    allowed = apt_root.plan(tmp_path, branch='580', facts=facts, allow_downgrade=True)['plan']
    assert allowed['action'] == 'downgrade' and allowed['remove'] == sorted(new)
    done = apt_root.simulate(allowed['install'])
    assert done.returncode == 0, done.stdout
    assert set(l.split()[1] for l in done.stdout.splitlines() if l.startswith('Remv ')) <= set(new)


def test_a_driver_from_before_580_brings_its_own_fabric_manager_name():
    # branch 575 named its fabric manager nvidia-fabricmanager-575 (NVIDIA's name up to 575): a jump to 595 removes it
    from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging
    from ansible_collections.gpuops.node.plugins.modules import nvidia_driver_plan as module_plan
    target = nvidia_packaging.driver_packages('Ubuntu', 'cuda_repo', '595')['row']
    rows = nvidia_packaging.other_rows('Ubuntu', 'cuda_repo', target)
    previous = module_plan.previous_packages(rows, {'575'})
    assert previous == [{'open': ['nvidia-dkms-575-open', 'libnvidia-compute-575', 'nvidia-utils-575'],
                         'proprietary': ['nvidia-dkms-575', 'libnvidia-compute-575', 'nvidia-utils-575'],
                         'extra': ['nvidia-compute-utils-575', 'nvidia-fabricmanager-575']}]
    # no branch known: the rows that name packages by branch are left out
    assert module_plan.previous_packages(rows, set()) == []


def test_two_packages_that_ship_one_path_conflict_and_replace(repo):
    # dpkg refuses to unpack a file another installed package owns unless the new package Replaces it; apt-get -s
    # does not see files, so the stand-ins are checked here (as Canonical's packages do: nvidia-compute-utils-580
    # Conflicts with and Replaces nvidia-persistenced, which ships the same daemon from 590)
    out, stanzas = repo
    owners = {}
    for (name, version), fields in stanzas.items():
        listing = subprocess.run(['dpkg-deb', '-c', os.path.join(str(out), 'repo', fields['Filename'].lstrip('./'))],
                                 stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        for line in listing.splitlines():
            path = line.split()[5]
            if not path.endswith('/'):
                owners.setdefault(path, set()).add(name)

    def names(fields, key):
        return set(n.strip().split()[0] for n in fields.get(key, '').split(',') if n.strip())

    relations = {}
    for (name, _version), fields in stanzas.items():
        mine = relations.setdefault(name, {'conflicts': set(), 'replaces': set(), 'provides': {name}})
        for key in ('conflicts', 'replaces', 'provides'):
            mine[key] |= names(fields, key.capitalize())
    for path, packages in sorted(owners.items()):
        for a in packages:
            for b in packages - {a}:
                # one of the two conflicts with and replaces the other (by its name or a name it provides)
                assert any(relations[x]['conflicts'] & relations[y]['provides']
                           and relations[x]['replaces'] & relations[y]['provides']
                           for x, y in ((a, b), (b, a))), (path, a, b)


def test_volta_without_a_branch_gets_the_newest_580_under_its_branch_names(apt_root, tmp_path):
    # no branch asked on a Volta node: 580 is its last branch, so the plan takes the 580 row (names by branch),
    # not the newest branch range's, and the newest 580
    volta = {'pci_gpus': [{'device_id': '0x1db5', 'architecture': 'Volta'}] * 8}
    result = apt_root.plan(tmp_path, kernel_module='auto', facts=volta)
    assert not result.get('failed'), result.get('msg')
    plan = result['plan']
    assert plan['kernel_module'] == 'proprietary' and plan['target_package_version'] == NEW580
    assert all('-580' in spec.split('=')[0] for spec in plan['install'] if 'pinning' not in spec), plan['install']
    refused = apt_root.plan(tmp_path, kernel_module='auto', facts=volta, branch='595')
    assert refused['failed'] and refused['variable'] == 'nvidia_driver_branch'
    assert 'branch 595 does not drive this node: Volta GPUs (PCI id 0x1db5)' in refused['msg']
