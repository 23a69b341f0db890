# -*- coding: utf-8 -*-
"""The nvidia_driver plan against a modular repository as NVIDIA's RHEL 9 one is, read by a real dnf.

tests/repo/build_rhel_repo.py builds a local stand-in of NVIDIA's rhel9 repository (the nvidia-driver module's
streams 580-open, 580-dkms, 590-open, 590-dkms, open-dkms (the default) and latest-dkms; packages at epoch 3 that
require each other at their exact version). Debian's dnf 4.14 (libdnf 0.69, the versions RHEL 9 ships) works on an
empty --installroot that says it is RHEL 9: the plan module's PackageManager reads it through stand-ins of dnf
and rpm on the PATH that add the root, and the steps the role takes are run as commands: reset and enable the
stream, install the plan's specs, lock them.

What this proves: the plan's reading of ``dnf module list`` and of the versions of every branch (modular
filtering off for the role's repository), the stream it chooses, and that dnf installs an exact older version,
upgrades, downgrades and switches branch with those streams. What it cannot: RHEL's own patches to dnf,
ansible.builtin.dnf (the role's tasks call it, this runs the dnf command), NVIDIA's real modules.yaml (not public),
scriptlets and signatures. Needs dnf, dnf-plugins-core, rpm and createrepo-c (``make host``); skipped without
them, failed under CI.

RHEL 10: NVIDIA's rhel10 repository has no module streams, and its guide holds a branch with dnf versionlock alone
(dnf 4, as on RHEL 9). The same packages at release 1.el10 without modules.yaml, on a root that says RHEL 10:
every branch is visible, the plan enables no stream, and the locks are what keep dnf on the installed version.
What it cannot prove beyond the above: that NVIDIA's rhel10 packages have the names and Requires of its rhel9 ones
(guessed).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

import pytest
import yaml

import build_rhel_repo  # tests/repo
import dnf_root  # tests/unit
from ansible_cli import run_task

from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import PlanError, plan
from ansible_collections.gpuops.node.plugins.modules import nvidia_driver_plan as module_plan

pytestmark = dnf_root.requirement()

REPO_ID = 'gpuops-nvidia-driver'      # the role's dnf repository (roles/nvidia_driver/vars/main.yml)


def _role_vars():
    """What the plan module reads from the packaging table for NVIDIA's RHEL repository (the role names none)."""
    entry = nvidia_packaging.driver_packages('RedHat', 'cuda_repo', '580')
    return {'packages': entry['packages'], 'fabricmanager': entry['fabricmanager']}


class FakeModule(object):
    """What PackageManager asks of an AnsibleModule: no apt here, and failures raised."""

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return None if name in ('apt-cache', 'dpkg-query') else shutil.which(name)

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture(scope='module')
def stand_in_repo(rhel_repo):
    return rhel_repo('9')


@pytest.fixture(scope='module')
def stand_in_repo10(rhel_repo):
    return rhel_repo('10')


def _node(tmp_path, repo, monkeypatch, release):
    made = dnf_root.make_root(tmp_path, REPO_ID, repo, release)
    bin_dir, home = made['bin'], made['home']
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    monkeypatch.setenv('HOME', str(home))
    return Node('rhel' + release)


@pytest.fixture
def node(tmp_path, stand_in_repo, monkeypatch):
    """An empty RHEL 9 root, the repository as the role writes it, and dnf and rpm stand-ins that use the root."""
    return _node(tmp_path, stand_in_repo, monkeypatch, '9')


@pytest.fixture
def node10(tmp_path, stand_in_repo10, monkeypatch):
    """The same on RHEL 10, against the stand-in of NVIDIA's rhel10 repository (no module streams)."""
    return _node(tmp_path, stand_in_repo10, monkeypatch, '10')


class Node(object):
    """The plan as the nvidia_driver_plan module reads it, and the role's steps as dnf commands."""

    def __init__(self, repository='rhel9'):
        self.manager = module_plan.PackageManager(FakeModule(), REPO_ID)
        self.spec = _role_vars()
        self.repository = repository
        self.allowerasing = True

    def dnf(self, *args):
        result = subprocess.run(['dnf', '-y', '-q'] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        assert result.returncode == 0, (args, result.stdout.decode('utf-8', 'replace'))
        return result.stdout.decode('utf-8', 'replace')

    def request(self, **kw):
        base = {'packages': self.spec['packages'], 'fabricmanager_packages': self.spec['fabricmanager'],
                'extra_packages': [{'name': 'nvidia-persistenced', 'versioned': True}], 'kernel_module': 'open',
                'fabricmanager': 'auto', 'source': 'mirror', 'family': 'RedHat', 'repository': self.repository}
        base.update(kw)
        return base

    def plan(self, **kw):
        names = sorted(set(self.spec['packages']['open'] + self.spec['packages']['proprietary'])
                       | {'nvidia-persistenced', 'nvidia-fabricmanager'})
        installed = self.manager.installed(names)
        state = {'facts': {'pci_gpus': [{'device_id': '0x2330', 'architecture': 'Hopper'}], 'nvswitch_count': 4},
                 'installed': installed, 'held': self.manager.held(),
                 'available': dict((f, self.manager.available(self.spec['packages'][f][0])) for f in ('open', 'proprietary')),
                 'fabricmanager_available': {'nvidia-fabricmanager': self.manager.available('nvidia-fabricmanager')},
                 'module_streams': self.manager.module_streams('nvidia-driver')}
        result = plan(self.request(**kw), state)
        # what the module adds: the packages of the driver's version the named ones require (nvidia-kmod-common,
        # nvidia-driver-libs(x86-64))
        module_plan.add_exact_closure(self.manager, result, None, state)
        return result

    def apply(self, result):
        """The role's install.yml, step by step, as dnf commands."""
        stream = result['module_stream']
        if result['unhold']:
            self.dnf('versionlock', 'delete', *result['unhold'])
        if stream and stream['change'] == 'switch':
            self.dnf('module', 'reset', stream['module'])
        if stream and stream['change'] != 'none':
            self.dnf('module', 'enable', '%s:%s' % (stream['module'], stream['stream']))
        if result['install']:
            # the module turns name=version into dnf's name-version; the role lets dnf erase what the new packages
            # conflict with only when the plan replaces something (allowerasing), in the same transaction
            erase = ['--allowerasing'] if self.allowerasing and result['remove'] else []
            self.dnf('install', *(erase + [spec.replace('=', '-', 1) for spec in result['install']]))
        left = [name for name in result['remove'] if name in self.manager.installed(result['remove'])]
        if left:
            # after the installation, as the role does: what the swap left behind (ansible's dnf skips what is gone)
            self.dnf('remove', *left)
        self.dnf('versionlock', 'add', *result['hold'])

    def versions(self):
        names = ['nvidia-driver', 'nvidia-driver-libs', 'nvidia-driver-cuda', 'libnvidia-ml', 'nvidia-persistenced',
                 'nvidia-kmod-common',
                 'kmod-nvidia-open-dkms', 'kmod-nvidia-latest-dkms', 'nvidia-fabricmanager']
        return self.manager.installed(names)


def test_the_stand_in_repository_is_the_same_bytes_on_every_build(tmp_path, stand_in_repo):
    again = build_rhel_repo.build(str(tmp_path / 'again'))
    for name in ('repodata/repomd.xml', 'modules.yaml', 'nvidia-driver-580.126.20-1.el9.x86_64.rpm'):
        with open(os.path.join(stand_in_repo, name), 'rb') as one, open(os.path.join(again, name), 'rb') as other:
            assert one.read() == other.read(), name


def test_dnf_shows_the_default_stream_and_the_plan_sees_every_branch(node):
    streams = node.manager.module_streams('nvidia-driver')
    assert sorted(r['stream'] for r in streams) == ['580-dkms', '580-open', '590-dkms', '590-open', 'latest-dkms',
                                                    'open-dkms']
    assert [r['stream'] for r in streams if r['default']] == ['open-dkms']
    assert not [r for r in streams if r['enabled']]
    # dnf's own view: the default stream's packages only (590)
    plain = subprocess.run(['dnf', '-q', 'repoquery', '--available', '--qf', '%{version}', 'nvidia-driver'],
                           stdout=subprocess.PIPE, check=True).stdout.decode().split()
    assert sorted(set(plain)) == ['590.48.01']
    assert sorted(node.manager.available('nvidia-driver')) == [
        '3:580.126.20-1.el9', '3:580.159.04-1.el9', '3:590.48.01-1.el9']


def test_an_exact_older_version_then_an_upgrade_a_downgrade_and_a_branch_switch(node):
    # a site's validated version, not the newest of its branch: the 580-open stream is enabled first
    first = node.plan(version='580.126.20')
    assert first['action'] == 'install' and first['target_package_version'] == '3:580.126.20-1.el9'
    assert first['module_stream'] == {'module': 'nvidia-driver', 'stream': '580-open', 'enabled': None,
                                      'change': 'enable'}
    node.apply(first)
    found = node.versions()
    assert set(found.values()) == {'3:580.126.20-1.el9', '580.126.20-1'}, found
    assert 'kmod-nvidia-latest-dkms' not in found
    # the second run changes nothing
    again = node.plan(version='580.126.20')
    assert again['action'] == 'none' and again['install'] == [] and again['module_stream']['change'] == 'none'
    assert set(again['hold']) <= set(node.manager.held())
    # an upgrade within the branch: released, installed, locked again
    upgrade = node.plan(branch='580')
    assert upgrade['action'] == 'upgrade' and upgrade['target_version'] == '580.159.04'
    assert set(upgrade['unhold']) == set(upgrade['hold']) and upgrade['module_stream']['change'] == 'none'
    node.apply(upgrade)
    assert set(node.versions().values()) == {'3:580.159.04-1.el9', '580.159.04-1'}
    # the locks hold: dnf upgrades nothing
    assert 'Nothing to do' in subprocess.run(['dnf', '-y', 'upgrade'], stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, check=False).stdout.decode()
    # a downgrade is refused, then allowed
    with pytest.raises(PlanError) as refused:
        node.plan(version='580.126.20')
    assert refused.value.variable == 'nvidia_driver_allow_downgrade'
    down = node.plan(version='580.126.20', allow_downgrade=True)
    assert down['action'] == 'downgrade' and sorted(down['closure']) == ['nvidia-driver-libs', 'nvidia-kmod-common']
    node.apply(down)
    assert set(node.versions().values()) == {'3:580.126.20-1.el9', '580.126.20-1'}
    # the stream offers a newer 580: every package of the driver's version is locked, so dnf upgrades nothing
    # (an unlocked nvidia-kmod-common or nvidia-driver-libs(x86-64) would make the whole upgrade fail)
    assert 'Nothing to do' in subprocess.run(['dnf', '-y', 'upgrade'], stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, check=False).stdout.decode()
    # another branch: the enabled stream is reset, the 590 one enabled
    switch = node.plan(branch='590')
    assert switch['action'] == 'upgrade' and switch['module_stream'] == {
        'module': 'nvidia-driver', 'stream': '590-open', 'enabled': '580-open', 'change': 'switch'}
    node.apply(switch)
    assert set(node.versions().values()) == {'3:590.48.01-1.el9', '590.48.01-1'}
    assert node.plan(branch='590')['action'] == 'none'


def test_a_branch_the_repository_has_no_stream_for_is_refused(node, monkeypatch):
    streams = [r for r in node.manager.module_streams('nvidia-driver') if r['stream'] != '580-dkms']
    monkeypatch.setattr(node.manager, 'module_streams', lambda name: streams)
    with pytest.raises(PlanError) as refused:
        node.plan(version='580.126.20', kernel_module='proprietary')
    assert refused.value.variable == 'nvidia_driver_branch'
    assert 'no stream 580-dkms' in str(refused.value)


def _role_dnf_install():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', '..', 'roles', 'nvidia_driver', 'tasks', 'install.yml')) as f:
        tasks = yaml.safe_load(f)
    found = [task['ansible.builtin.dnf'] for block in tasks for task in block.get('block', [])
             if 'ansible.builtin.dnf' in task]
    assert len(found) == 1, found
    return found[0]


def test_the_role_installs_with_allowerasing_exactly_when_the_plan_replaces():
    # what Node.apply models: the role's dnf install may erase only when the plan removes something
    assert _role_dnf_install()['allowerasing'] == "{{ __nvidia_driver_plan.remove | length > 0 }}"


def test_a_switch_of_kernel_module_flavour_changes_stream_and_kmod(node):
    node.apply(node.plan(version='580.159.04'))
    switch = node.plan(version='580.159.04', kernel_module='proprietary')
    assert switch['action'] == 'switch' and switch['remove'] == ['kmod-nvidia-open-dkms']
    # the two kmod packages conflict: dnf refuses the new one while the old is installed, unless it may erase it
    node.allowerasing = False
    with pytest.raises(AssertionError) as refused:
        node.apply(switch)
    assert 'kmod-nvidia-open-dkms' in str(refused.value) and 'conflict' in str(refused.value).lower()
    assert 'kmod-nvidia-open-dkms' in node.versions()
    node.allowerasing = True
    assert switch['module_stream'] == {'module': 'nvidia-driver', 'stream': '580-dkms', 'enabled': '580-open',
                                       'change': 'switch'}
    node.apply(switch)
    found = node.versions()
    assert 'kmod-nvidia-open-dkms' not in found and found['kmod-nvidia-latest-dkms'] == '3:580.159.04-1.el9'
    assert set(found.values()) == {'3:580.159.04-1.el9', '580.159.04-1'}
    assert node.plan(version='580.159.04', kernel_module='proprietary')['action'] == 'none'


def test_rhel10_has_no_stream_and_dnf_sees_every_branch(node10):
    assert node10.manager.module_streams('nvidia-driver') == []
    plain = subprocess.run(['dnf', '-q', 'repoquery', '--available', '--qf', '%{version}', 'nvidia-driver'],
                           stdout=subprocess.PIPE, check=True).stdout.decode().split()
    assert sorted(set(plain)) == ['580.126.20', '580.159.04', '590.48.01']


def test_rhel10_an_exact_older_version_the_locks_hold_it_then_upgrade_downgrade_and_switch(node10):
    first = node10.plan(version='580.126.20')
    assert first['action'] == 'install' and first['target_package_version'] == '3:580.126.20-1.el10'
    assert first['module_stream'] is None
    node10.apply(first)
    assert set(node10.versions().values()) == {'3:580.126.20-1.el10', '580.126.20-1'}, node10.versions()
    again = node10.plan(version='580.126.20')
    assert again['action'] == 'none' and again['install'] == []
    # no stream holds the branch: the locks alone keep dnf on the installed version ...
    upgrade = subprocess.run(['dnf', '-y', 'upgrade'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert 'Nothing to do' in upgrade.stdout.decode(), upgrade.stdout.decode()
    assert set(node10.versions().values()) == {'3:580.126.20-1.el10', '580.126.20-1'}
    # ... and without them dnf would take the newest branch (so the check above can fail)
    preview = subprocess.run(['dnf', '--disableplugin=versionlock', '--assumeno', 'upgrade'], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, check=False).stdout.decode()
    assert '590.48.01' in preview, preview
    # an upgrade within the branch: released, installed, locked again
    within = node10.plan(branch='580')
    assert within['action'] == 'upgrade' and within['target_version'] == '580.159.04'
    assert set(within['unhold']) == set(within['hold'])
    node10.apply(within)
    assert set(node10.versions().values()) == {'3:580.159.04-1.el10', '580.159.04-1'}
    # a downgrade is refused, then allowed
    with pytest.raises(PlanError) as refused:
        node10.plan(version='580.126.20')
    assert refused.value.variable == 'nvidia_driver_allow_downgrade'
    node10.apply(node10.plan(version='580.126.20', allow_downgrade=True))
    assert set(node10.versions().values()) == {'3:580.126.20-1.el10', '580.126.20-1'}
    # another branch: no stream to switch, the locks released and set again
    switch = node10.plan(branch='590')
    assert switch['action'] == 'upgrade' and switch['module_stream'] is None
    node10.apply(switch)
    assert set(node10.versions().values()) == {'3:590.48.01-1.el10', '590.48.01-1'}
    assert node10.plan(branch='590')['action'] == 'none'


def test_rhel10_the_module_through_ansible_playbook_names_and_locks_the_closure(tmp_path, stand_in_repo10):
    # the role's call (tasks/plan.yml) as ansible-playbook runs it, dnf and rpm on an empty RHEL 10 root
    root = dnf_root.Root(tmp_path, REPO_ID, stand_in_repo10, '10')
    task = {'source': 'cuda_repo', 'family': 'RedHat', 'repository': 'rhel10', 'repo_id': REPO_ID,
            'persistenced': True, 'kernel_module': 'open', 'version': '580.126.20', 'dkms_modules': ['nvidia'],
            'facts': {'pci_gpus': [{'device_id': '0x2330', 'architecture': 'Hopper'}], 'nvswitch_count': 4}}
    result = run_task(tmp_path, 'gpuops.node.nvidia_driver_plan', task, root.task_env)
    assert result.get('failed') is not True and result['changed'] is False, result
    got = result['plan']
    assert got['action'] == 'install' and got['module_stream'] is None
    assert sorted(got['closure']) == ['nvidia-driver-libs', 'nvidia-kmod-common']
    for name in got['closure']:
        assert '%s-3:580.126.20-1.el10' % name in got['install'] and name in got['hold']
    root.dnf('install', *got['install'])
    root.dnf('versionlock', 'add', *got['hold'])
    assert set(root.installed('nvidia-driver').values()) == {'580.126.20-1.el10'}
    # every package of the driver's version locked: dnf upgrade succeeds and changes none of them
    rc, out = root.run('upgrade')
    assert rc == 0, out
    assert set(root.installed('nvidia-').values()) | set(root.installed('kmod-nvidia').values()) == {
        '580.126.20-1.el10', '580.126.20-1'}
