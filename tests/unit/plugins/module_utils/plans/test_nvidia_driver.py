# -*- coding: utf-8 -*-
"""The nvidia_driver role's plan: flavour, version, action, refusals (each naming its variable)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers import dkms as parsers_dkms
from ansible_collections.gpuops.node.plugins.module_utils.node import packages as node_packages
from ansible_collections.gpuops.node.plugins.module_utils import versions as V
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import PlanError, plan

NVIDIA = {'open': ['nvidia-kernel-open-dkms', 'nvidia-smi', 'libnvidia-ml1'],
          'proprietary': ['nvidia-kernel-dkms', 'nvidia-smi', 'libnvidia-ml1']}
FM = [{'name': 'nvidia-fabricmanager', 'since_branch': 580}, {'name': 'nvidia-fabricmanager-{branch}', 'since_branch': 0}]
OLD, NEW = '580.126.20-1', '580.159.04-1'
H100 = ({'device_id': '0x2330', 'architecture': 'Hopper'},) * 8
P100 = ({'device_id': '0x15f8', 'architecture': 'Pascal'},) * 4
B200 = ({'device_id': '0x2901', 'architecture': 'Blackwell'},)


def request(**kw):
    base = {'packages': NVIDIA, 'kernel_module': 'auto', 'fabricmanager': 'auto', 'fabricmanager_packages': FM,
            'source': 'mirror', 'extra_packages': [{'name': 'nvidia-persistenced', 'versioned': True}]}
    base.update(kw)
    return base


def node(gpus=H100, installed=None, nvswitches=0, processes=(), held=(), available=(OLD, NEW)):
    return {'facts': {'pci_gpus': list(gpus), 'nvswitch_count': nvswitches, 'gpu_processes': list(processes)},
            'installed': dict(installed or {}), 'held': list(held),
            'available': {'open': list(available), 'proprietary': list(available)},
            'fabricmanager_available': {'nvidia-fabricmanager': list(available)}}


def installed_at(version, flavour='open'):
    names = NVIDIA[flavour] + ['nvidia-persistenced']
    return dict((n, version) for n in names)


@pytest.mark.parametrize('gpus, requested, flavour', [
    (H100, 'auto', 'open'), (P100, 'auto', 'proprietary'), (B200, 'auto', 'open'),
    (H100, 'proprietary', 'proprietary'), (P100, 'proprietary', 'proprietary'), (H100 + P100, 'auto', 'proprietary'),
])
def test_flavour(gpus, requested, flavour):
    assert plan(request(kernel_module=requested), node(gpus=gpus))['kernel_module'] == flavour


@pytest.mark.parametrize('gpus, kw, variable, words', [
    (P100, {'kernel_module': 'open'}, 'nvidia_driver_kernel_module', 'Pascal'),
    (B200, {'kernel_module': 'proprietary'}, 'nvidia_driver_kernel_module', 'Blackwell'),
    (B200 + P100, {}, 'nvidia_driver_kernel_module', 'mixes'),
    ((), {}, 'nvidia_driver_kernel_module', 'none was found'),
    (H100, {'version': '550.54'}, 'nvidia_driver_version', 'not available'),
    (H100, {'version': '580.126'}, 'nvidia_driver_version', 'not available'),
    (H100, {'version': '580-126-20'}, 'nvidia_driver_version', 'must look like'),
    (H100, {'branch': '55'}, 'nvidia_driver_branch', 'three digits'),
    (H100, {'branch': '570'}, 'nvidia_driver_branch', 'no 570 driver'),
    (H100, {'branch': '570', 'version': '580.126.20'}, 'nvidia_driver_version', 'not in nvidia_driver_branch'),
])
def test_refused(gpus, kw, variable, words):
    with pytest.raises(PlanError) as info:
        plan(request(**kw), node(gpus=gpus))
    assert info.value.variable == variable
    assert str(info.value).startswith(variable + ': ')
    assert words in str(info.value)


def test_bare_node_installs_newest_and_holds():
    result = plan(request(), node())
    assert result['action'] == 'install'
    assert result['target_version'] == '580.159.04'
    assert result['install'] == ['nvidia-kernel-open-dkms=' + NEW, 'nvidia-smi=' + NEW, 'libnvidia-ml1=' + NEW,
                                 'nvidia-persistenced=' + NEW]
    assert result['hold'] == NVIDIA['open'] + ['nvidia-persistenced']
    assert result['fabricmanager']['wanted'] is False


def test_converged_node_changes_nothing():
    result = plan(request(version='580.126.20'), node(installed=installed_at(OLD), held=NVIDIA['open']))
    assert (result['action'], result['install'], result['remove'], result['unhold']) == ('none', [], [], [])


def test_upgrade_unholds_installs_holds():
    result = plan(request(), node(installed=installed_at(OLD), held=NVIDIA['open'] + ['nvidia-persistenced']))
    assert result['action'] == 'upgrade'
    assert result['unhold'] == sorted(NVIDIA['open'] + ['nvidia-persistenced'])
    assert result['installed_version'] == '580.126.20'


def test_downgrade_refused_then_allowed():
    with pytest.raises(PlanError) as info:
        plan(request(version='580.126.20'), node(installed=installed_at(NEW)))
    assert info.value.variable == 'nvidia_driver_allow_downgrade'
    assert '580.159.04 is newer than the requested 580.126.20' in str(info.value)
    assert plan(request(version='580.126.20', allow_downgrade=True),
                node(installed=installed_at(NEW)))['action'] == 'downgrade'


def test_gpu_processes_refuse_a_change_unless_forced():
    procs = [{'pid': 4242, 'name': 'python3', 'gpu': 0}]
    with pytest.raises(PlanError) as info:
        plan(request(), node(installed=installed_at(OLD), processes=procs))
    assert info.value.variable == 'nvidia_driver_force'
    assert 'pid 4242 python3 on GPU 0' in str(info.value)
    assert plan(request(force=True), node(installed=installed_at(OLD), processes=procs))['action'] == 'upgrade'
    # nothing to change: processes do not matter
    assert plan(request(version='580.126.20'), node(installed=installed_at(OLD), processes=procs))['action'] == 'none'
    # a driver this source did not install (a runfile, other packages) is guarded too
    other = node(processes=procs)
    other['facts'].update(driver_installed_version='535.154.05', kernel_module='proprietary', driver_loaded=True)
    with pytest.raises(PlanError) as info:
        plan(request(), other)
    assert 'the installed driver 535.154.05' in str(info.value)


def test_unreadable_processes_refuse_a_change_unless_forced():
    blind = node(installed=installed_at(OLD))
    blind['facts'].update(kernel_module='open', driver_version='580.126.20', driver_loaded=False,
                          driver_error={'kind': 'nvml_mismatch', 'message': 'Driver/library version mismatch'})
    with pytest.raises(PlanError) as info:
        plan(request(), blind)
    assert info.value.variable == 'nvidia_driver_force'
    assert 'cannot list the GPU processes (Driver/library version mismatch)' in str(info.value)
    assert plan(request(force=True), blind)['action'] == 'upgrade'


def test_unread_nvswitch_count_is_not_zero():
    unread = node()
    unread['facts']['nvswitch_count'] = None
    with pytest.raises(PlanError) as info:
        plan(request(), unread)
    assert info.value.variable == 'nvidia_driver_fabricmanager'
    assert plan(request(fabricmanager='absent'), unread)['fabricmanager']['wanted'] is False


def test_flavour_switch_removes_the_other():
    result = plan(request(kernel_module='open'), node(installed=installed_at(NEW, 'proprietary')))
    assert result['action'] == 'switch'
    assert result['remove'] == ['nvidia-kernel-dkms']


def test_fabricmanager_on_nvswitch_nodes_at_the_driver_version():
    result = plan(request(), node(nvswitches=4))
    assert result['fabricmanager'] == {'wanted': True, 'nvswitch_count': 4, 'package': 'nvidia-fabricmanager',
                                       'package_version': NEW}
    assert 'nvidia-fabricmanager=' + NEW in result['install'] and 'nvidia-fabricmanager' in result['hold']
    bare = node(nvswitches=4)
    bare['fabricmanager_available'] = {'nvidia-fabricmanager': [OLD]}
    with pytest.raises(PlanError) as info:
        plan(request(), bare)
    assert info.value.variable == 'nvidia_driver_fabricmanager'
    # no NVSwitch: an installed fabric manager goes
    gone = plan(request(), node(installed=dict(installed_at(NEW), **{'nvidia-fabricmanager': NEW})))
    assert gone['remove'] == ['nvidia-fabricmanager']
    # branch 575 and older: the name carries the branch
    assert plan(request(), node(available=('575.57.08-1',), nvswitches=0))['fabricmanager']['package'] == \
        'nvidia-fabricmanager-575'


def test_branch_named_packages_need_a_branch():
    ubuntu = {'open': ['nvidia-dkms-{branch}-server-open'], 'proprietary': ['nvidia-dkms-{branch}-server']}
    with pytest.raises(PlanError) as info:
        plan(request(packages=ubuntu), node())
    assert info.value.variable == 'nvidia_driver_branch'
    assert plan(request(packages=ubuntu, branch='580'), node())['install'][0] == \
        'nvidia-dkms-580-server-open=' + NEW


@pytest.mark.parametrize('left, right, sign', [
    ('550.163.01-2~deb13u1', '550.163.01-2', -1), ('535.309.01-0+deb12u1', '535.261.03-1', 1),
    ('1:550.54.15-1', '560.28.03-1', 1), ('580.126.20-1', '580.126.20-1', 0), ('580.95.05-1', '580.126.20-1', -1),
    ('1.0~rc1', '1.0', -1), ('1.0a', '1.0', 1),
])
def test_dpkg_order(left, right, sign):
    result = V.dpkg_compare(left, right)
    assert (result > 0) - (result < 0) == sign


def test_package_outputs():
    madison = (' nvidia-driver | 535.309.01-0+deb12u1 | http://deb.debian.org/debian-security bookworm-security/non-free '
               'amd64 Packages\n nvidia-driver | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 '
               'Packages\n')
    assert node_packages.parse_madison(madison, 'nvidia-driver') == ['535.309.01-0+deb12u1', '535.261.03-1']
    assert node_packages.parse_madison(madison, 'nvidia-driver', 'http://deb.debian.org/debian/') == ['535.261.03-1']
    local = (' nvidia-smi | 580.159.04-1 | file:/srv/gpuops-nvidia-repo/repo  Packages\n'
             ' nvidia-smi | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages\n')
    assert node_packages.parse_madison(local, 'nvidia-smi', 'file:///srv/gpuops-nvidia-repo/repo/') == ['580.159.04-1']
    status = 'nvidia-smi\t580.126.20-1\tii \nnvidia-kernel-dkms\t580.126.20-1\trc \nlibnvidia-ml1:amd64\t580.126.20-1\thi \n'
    assert node_packages.parse_dpkg_status(status) == {'nvidia-smi': '580.126.20-1', 'libnvidia-ml1': '580.126.20-1'}
    assert node_packages.parse_showhold('nvidia-smi\nlibnvidia-ml1:amd64\n') == ['nvidia-smi', 'libnvidia-ml1']
    # rpm -q with the plan modules' query format: a name listed twice at one version (two architectures) is that
    # version; at two versions (an interrupted transaction), a string no pin equals
    rpm = ('libnccl (none):2.23.4-1+cuda12.6\npackage libnccl-devel is not installed\n'
           'datacenter-gpu-manager-4-core 1:4.6.0-1\ndatacenter-gpu-manager-4-core 1:4.6.0-1\n'
           'nvidia-driver 3:580.126.20-1.el9\nnvidia-driver 3:580.159.04-1.el9\n')
    assert node_packages.parse_rpm_installed(rpm) == {
        'libnccl': '2.23.4-1+cuda12.6', 'datacenter-gpu-manager-4-core': '1:4.6.0-1',
        'nvidia-driver': '3:580.126.20-1.el9 3:580.159.04-1.el9'}


def test_dkms_status_forms():
    text = ('nvidia-current/535.216.01, 6.1.0-28-amd64, x86_64: installed\n'
            'nvidia, 470.57.02, 5.4.0-80-generic, x86_64: installed (WARNING! Diff between built and installed module!)\n'
            'nvidia-current-open/550.163.01: added\n')
    entries = parsers_dkms.parse_status(text)
    assert [(e['module'], e['version'], e['kernel'], e['status']) for e in entries] == [
        ('nvidia-current', '535.216.01', '6.1.0-28-amd64', 'installed'),
        ('nvidia', '470.57.02', '5.4.0-80-generic', 'installed'),
        ('nvidia-current-open', '550.163.01', None, 'added')]
    assert entries[1]['note'].startswith('(WARNING!')
    with pytest.raises(Exception) as info:
        parsers_dkms.parse_status('garbage line\n')
    assert 'garbage line' in str(info.value)


def test_make_log_errors():
    log = ('  CC [M]  nvidia/nv-pci.o\n'
           "nvidia/nv-pci.c:123:13: error: implicit declaration of function 'pci_resize_resource'\n"
           'make[2]: *** [scripts/Makefile.build:243: nvidia/nv-pci.o] Error 1\n')
    assert parsers_dkms.build_errors(log) == ["nvidia/nv-pci.c:123:13: error: implicit declaration of function 'pci_resize_resource'"]
    assert parsers_dkms.build_errors('make[1]: *** [Makefile:1: all] Error 2\n') == ['make[1]: *** [Makefile:1: all] Error 2']
    assert parsers_dkms.build_errors('all good\n') == []


# The packaging table (plans/nvidia_packaging.py) refuses what the source cannot give, naming the branch.
@pytest.mark.parametrize('kw, available, words', [
    ({'source': 'cuda_repo', 'family': 'Debian', 'repository': 'debian13', 'branch': '580'}, (OLD, NEW),
     "NVIDIA's debian13 repository carries no 580 driver"),
    ({'source': 'cuda_repo', 'family': 'Debian', 'repository': 'debian13', 'version': '580.126.20'}, (OLD, NEW),
     'only branches 590 and later'),
])
def test_packaging_refusals(kw, available, words):
    with pytest.raises(PlanError) as info:
        plan(request(**kw), node(available=available))
    assert info.value.variable == 'nvidia_driver_branch'
    assert words in str(info.value)


def test_packaging_allows_what_the_source_gives():
    # a site mirror may carry 580 on Debian 13 (it says itself what it offers); Debian 12's repository has 580
    assert plan(request(source='mirror', family='Debian', repository='debian13', branch='580'),
                node())['target_version'] == '580.159.04'
    assert plan(request(source='cuda_repo', family='Debian', repository='debian12', branch='580'),
                node())['target_version'] == '580.159.04'
    assert plan(request(source='cuda_repo', family='Ubuntu', repository='ubuntu2404', branch='580'),
                node(available=('580.159.04-1ubuntu1',)))['target_version'] == '580.159.04'
