# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Driver emulation on bare nodes: which module loads at boot, the stand-ins, nvidia-smi's answers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat

import pytest

from drivertools import FakeDpkg, bare_node, write, write_module
from simhelpers import real_text

from simulator import admin
from simulator import nvidia_smi
from simulator import sim_driver

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvidia_proc import parse_driver_version
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import classify_nvsmi_failure
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_live

NVIDIA_DRIVER_535 = FakeDpkg().nvml('libnvidia-ml1', '535.216.01-1~deb12u1')


# ---------------------------------------------------------------- Debian version ordering

@pytest.mark.parametrize('low,high', [
    ('6.1.0-9-amd64', '6.1.0-28-amd64'), ('6.1.0-28-amd64', '6.12.6-amd64'), ('1.0~rc1', '1.0'),
    ('535.216.01-1~deb12u1', '535.216.01-1'), ('1:1.0', '2:0.1'), ('1.0-1', '1.0-1.1'), ('1.0a', '1.0b'),
])
def test_version_compare_is_dpkg_order(low, high):
    assert sim_driver.version_compare(low, high) < 0 < sim_driver.version_compare(high, low)
    assert sim_driver.version_compare(low, low) == 0


def test_cuda_version_by_branch():
    assert [sim_driver.cuda_version(v) for v in ('535.261.03', '550.163.01', '560.35.03', '565.57.01', '570.86.10',
                                                 '575.51.03', '580.95.05', '545.23.08', '510.47.03')] == \
        ['12.2', '12.4', '12.6', '12.7', '12.8', '12.9', '13.0', '12.3', '11.6']
    assert sim_driver.cuda_version('garbage') is None


# ---------------------------------------------------------------- modules and boot

def test_read_module_takes_modinfo_from_the_elf_section(tmp_path):
    """A version= string elsewhere in the module (here .rodata) is not the module's version."""
    path = write_module(tmp_path, '6.1.0-28-amd64', 'nvidia-current.ko', '535.216.01', 'NVIDIA',
                        rodata=b'\x00version=1.2.3\x00')
    assert sim_driver.read_module(path) == {'version': '535.216.01', 'license': 'NVIDIA', 'gcc': 'gcc version 12.2.0 '
                                            '(Debian 12.2.0-14)', 'vermagic': '6.1.0-28-amd64 SMP preempt mod_unload '
                                            'modversions '}


def test_read_module_without_elf_scans_the_strings(tmp_path):
    path = write(tmp_path, 'm/nvidia.ko', 'junk\x00license=Dual MIT/GPL\x00version=565.57.01\x00')
    info = sim_driver.read_module(path)
    assert (info['version'], info['license'], info['gcc']) == ('565.57.01', 'Dual MIT/GPL', None)


@pytest.mark.parametrize('name,license_text,flavour', [
    ('nvidia-current.ko.xz', 'NVIDIA', 'proprietary'),
    ('nvidia-current.ko', 'Dual MIT/GPL', 'open'),
    ('nvidia.ko.gz', 'Dual MIT/GPL', 'open'),
    ('nvidia.ko', 'NVIDIA', 'proprietary'),
])
def test_boot_loads_the_newest_kernels_module(tmp_path, name, license_text, flavour):
    root = str(tmp_path)
    for kver in ('6.1.0-9-amd64', '6.1.0-28-amd64'):     # Debian order: 28 is newer than 9
        write(root, 'boot/vmlinuz-' + kver)
    write_module(root, '6.1.0-9-amd64', name, '535.183.01', license_text)
    write_module(root, '6.1.0-28-amd64', name, '535.216.01', license_text)
    decision = sim_driver.boot(root, query=NVIDIA_DRIVER_535)
    assert decision['loaded'] is True and decision['kernel'] == '6.1.0-28-amd64'
    assert (decision['version'], decision['kernel_module'], decision['source']) == ('535.216.01', flavour, 'module')
    assert decision['module'] == '/lib/modules/6.1.0-28-amd64/updates/dkms/' + name
    with open(os.path.join(root, sim_driver.PROC_VERSION)) as handle:
        proc = parse_driver_version(handle.read())
    assert (proc['version'], proc['kernel_module'], proc['arch']) == ('535.216.01', flavour, 'x86_64')
    assert proc['gcc'] == 'gcc version 12.2.0 (Debian 12.2.0-14)'
    assert sim_driver.loaded(root)['version'] == '535.216.01'


def test_boot_kernel_override_and_module_elsewhere_in_the_tree(tmp_path):
    root = str(tmp_path)
    for kver in ('6.1.0-9-amd64', '6.1.0-28-amd64'):
        write(root, 'boot/vmlinuz-' + kver)
    path = write_module(root, '6.1.0-9-amd64', 'nvidia.ko', '535.183.01', 'NVIDIA')
    moved = os.path.join(root, 'lib/modules/6.1.0-9-amd64/kernel/drivers/video/nvidia.ko')
    os.makedirs(os.path.dirname(moved))
    os.rename(path, moved)
    write(root, sim_driver.BOOT_KERNEL_FILE, '6.1.0-9-amd64\n')
    decision = sim_driver.decide(root, query=NVIDIA_DRIVER_535)
    assert (decision['kernel'], decision['kernel_source'], decision['version']) == (
        '6.1.0-9-amd64', 'etc/gpuops-sim/boot-kernel', '535.183.01')


def test_dkms_without_a_module_for_the_booted_kernel_loads_nothing(tmp_path):
    root = str(tmp_path)
    for kver in ('6.1.0-9-amd64', '6.1.0-28-amd64'):
        write(root, 'boot/vmlinuz-' + kver)
    write_module(root, '6.1.0-9-amd64', 'nvidia-current.ko', '535.216.01', 'NVIDIA')
    os.makedirs(os.path.join(root, 'var/lib/dkms/nvidia-current/535.216.01'))
    write(root, sim_driver.DRIVER_JSON, '{"loaded": true, "version": "1"}')     # a previous boot's: forgotten
    decision = sim_driver.boot(root, query=NVIDIA_DRIVER_535)
    assert decision['loaded'] is False and 'DKMS' in decision['reason'] and '6.1.0-28-amd64' in decision['reason']
    assert not os.path.exists(os.path.join(root, sim_driver.DRIVER_JSON))
    assert not os.path.exists(os.path.join(root, sim_driver.PROC_VERSION))
    with open(os.path.join(root, sim_driver.BOOT_JSON)) as handle:
        assert json.load(handle)['loaded'] is False


def test_userspace_only_loads_the_package_version(tmp_path):
    root = str(tmp_path)
    dpkg = FakeDpkg().nvml('libnvidia-ml1', '550.163.01-2')
    decision = sim_driver.decide(root, query=dpkg, uname_release='6.18.44-test')
    assert (decision['loaded'], decision['source'], decision['version'], decision['kernel_module'],
            decision['kernel']) == (True, 'userspace', '550.163.01', 'proprietary', '6.18.44-test')
    dpkg.packages['nvidia-opencl-icd'] = '550.163.01-2'          # "opencl" does not name the open modules
    assert sim_driver.decide(root, query=dpkg)['kernel_module'] == 'proprietary'
    dpkg.packages['nvidia-open-kernel-dkms'] = '550.163.01-2'
    decision = sim_driver.decide(root, query=dpkg)
    assert decision['kernel_module'] == 'open' and decision['flavour_from'] == 'nvidia-open-kernel-dkms'
    assert parse_driver_version(sim_driver.proc_version_text(decision))['kernel_module'] == 'open'
    dpkg.held = {'nvidia-open-kernel-dkms'}                         # held (apt-mark hold) is installed too
    assert sim_driver.decide(root, query=dpkg)['kernel_module'] == 'open'
    assert sim_driver.decide(root, query=FakeDpkg())['loaded'] is False


def test_boot_always_creates_the_proc_root(tmp_path):
    root = str(tmp_path)
    decision = sim_driver.boot(root, query=FakeDpkg(), uname_release='6.18.44-test')
    assert decision['loaded'] is False
    assert os.path.isdir(os.path.join(root, sim_driver.PROC_ROOT))
    assert not os.path.exists(os.path.join(root, sim_driver.PROC_VERSION))


def _sysfs_device(root, address, vendor, klass):
    write(root, sim_driver.SYSFS + '/bus/pci/devices/%s/vendor' % address, vendor + '\n')
    write(root, sim_driver.SYSFS + '/bus/pci/devices/%s/class' % address, klass + '\n')


@pytest.mark.skipif(os.geteuid() != 0, reason='mknod of a character device needs root')
def test_boot_makes_the_driver_device_nodes_and_empties_them_first(tmp_path):
    """The nodes nvidia-modprobe makes (nvidiaN per GPU, nvidiactl, nvidia-uvm, nvidia-uvm-tools), emptied at each
    boot as /dev is; an NVSwitch or a NIC is no GPU. Cannot prove the real majors of nvidia-uvm (dynamic)."""
    root = str(tmp_path)
    _sysfs_device(root, '0000:07:00.0', '0x10de', '0x030200')
    _sysfs_device(root, '0000:0f:00.0', '0x10de', '0x030200')
    _sysfs_device(root, '0000:05:00.0', '0x10de', '0x068000')     # NVSwitch: a bridge
    _sysfs_device(root, '0000:0c:00.0', '0x15b3', '0x020700')     # ConnectX
    dev = os.path.join(root, sim_driver.DEV_DIR)
    assert sim_driver.boot(root, query=NVIDIA_DRIVER_535, uname_release='6.18.44-test')['loaded'] is True
    numbers = dict((name, (os.major(os.lstat(os.path.join(dev, name)).st_rdev),
                           os.minor(os.lstat(os.path.join(dev, name)).st_rdev))) for name in os.listdir(dev))
    assert numbers == {'nvidia0': (195, 0), 'nvidia1': (195, 1), 'nvidiactl': (195, 255),
                       'nvidia-uvm': (509, 0), 'nvidia-uvm-tools': (509, 1)}
    assert all(stat.S_ISCHR(os.lstat(os.path.join(dev, name)).st_mode) for name in numbers)
    os.makedirs(os.path.join(dev, 'char'))
    os.symlink('../nvidia0', os.path.join(dev, 'char', '195:0'))
    assert sim_driver.boot(root, query=FakeDpkg(), uname_release='6.18.44-test')['loaded'] is False
    assert os.listdir(dev) == []


def test_blacklist_and_unreadable_modules_load_nothing(tmp_path):
    root = str(tmp_path)
    write(root, 'etc/modprobe.d/nvidia.conf', 'alias nvidia nvidia-current\n')
    assert sim_driver.decide(root, query=NVIDIA_DRIVER_535)['loaded'] is True
    write(root, 'etc/modprobe.d/gpu.conf', 'blacklist nvidia\n')
    decision = sim_driver.decide(root, query=NVIDIA_DRIVER_535)
    assert decision['loaded'] is False and decision['reason'] == 'blocked by /etc/modprobe.d/gpu.conf: blacklist nvidia'
    os.remove(os.path.join(root, 'etc/modprobe.d/gpu.conf'))
    write(root, 'boot/vmlinuz-6.1.0-28-amd64')
    write_module(root, '6.1.0-28-amd64', 'nvidia-current.ko', '535.216.01', 'NVIDIA')
    write(root, 'etc/modprobe.d/off.conf', 'install nvidia-current /bin/false\n')
    assert 'install nvidia-current /bin/false' in sim_driver.decide(root, query=NVIDIA_DRIVER_535)['reason']
    os.remove(os.path.join(root, 'etc/modprobe.d/off.conf'))
    write(root, 'lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko.zst', 'zstd')
    os.remove(os.path.join(root, 'lib/modules/6.1.0-28-amd64/updates/dkms/nvidia-current.ko'))
    assert 'zstd' in sim_driver.decide(root, query=NVIDIA_DRIVER_535)['reason']


# ---------------------------------------------------------------- stand-ins

def test_sync_places_and_removes_standins_by_distrib(tmp_path, monkeypatch):
    root, _summary = bare_node(tmp_path, monkeypatch=monkeypatch)
    smi = os.path.join(root, 'usr/lib/nvidia/current/nvidia-smi')
    write(root, 'usr/lib/nvidia/current/nvidia-smi.distrib', 'ELF binary of the package')
    write(root, 'usr/bin/nvidia-persistenced.distrib', 'ELF')
    os.symlink('/etc/alternatives/nvidia--nvidia-smi', os.path.join(root, 'usr/bin/nvidia-smi'))
    assert sim_driver.sync(root) == {'placed': ['/usr/lib/nvidia/current/nvidia-smi', '/usr/bin/nvidia-persistenced'],
                                     'removed': [], 'kept': []}
    assert os.access(smi, os.X_OK) and sim_driver.is_standin(smi)
    with open(os.path.join(root, sim_driver.LIB_DIR, 'standin-nvidia-smi'), 'rb') as a, open(smi, 'rb') as b:
        assert a.read() == b.read()
    assert sim_driver.sync(root)['kept'] == ['/usr/lib/nvidia/current/nvidia-smi', '/usr/bin/nvidia-persistenced']
    os.remove(smi + '.distrib')
    assert sim_driver.sync(root)['removed'] == ['/usr/lib/nvidia/current/nvidia-smi']
    assert not os.path.exists(smi)
    assert os.path.islink(os.path.join(root, 'usr/bin/nvidia-smi'))       # an alternatives link is not ours
    os.remove(os.path.join(root, 'usr/bin/nvidia-persistenced'))
    write(root, 'usr/bin/nvidia-persistenced', 'a real binary')
    with pytest.raises(sim_driver.DriverError, match='not a gpuops-sim stand-in'):
        sim_driver.sync(root)


# ---------------------------------------------------------------- nvidia-smi in emulated mode

def _smi(root, dpkg, tmp_path, *argv):
    os.environ['GPUOPS_SIM_DPKG_QUERY'] = dpkg.script(str(tmp_path / 'dpkg-query'))
    return nvidia_smi.run(list(argv), {'GPUOPS_SIM_ROOT': root})


def test_nvidia_smi_answers_with_the_loaded_module(tmp_path, monkeypatch):
    root, summary = bare_node(tmp_path, monkeypatch=monkeypatch)
    assert summary['boot']['loaded'] is False
    dpkg = FakeDpkg().nvml('libnvidia-ml1', '535.261.03-1')
    for argv in (['-q', '-x'], ['--version'], [], ['-L']):
        result = _smi(root, dpkg, tmp_path, *argv)
        assert (result.rc, result.out, result.err) == (9, sim_driver.DRIVER_NOT_LOADED, '')
    assert sim_driver.DRIVER_NOT_LOADED == real_text(
        'nvsmi-errors/couldnt-communicate-debian12-535-no-kernel-module-container.txt')
    assert classify_nvsmi_failure(9, sim_driver.DRIVER_NOT_LOADED)['kind'] == 'driver_not_loaded'
    assert admin.run(['boot'], {'GPUOPS_SIM_ROOT': root}).rc == 0
    xml = parse_nvsmi_xml(_smi(root, dpkg, tmp_path, '-q', '-x').out)
    assert (xml['driver_version'], xml['cuda_version']) == ('535.261.03', '12.2')
    assert set(g['persistence_mode'] for g in xml['gpus']) == {'Disabled'}      # a freshly loaded driver
    assert _smi(root, dpkg, tmp_path, '--version').out.splitlines()[0] == 'NVIDIA-SMI version  : 535.261.03'
    assert _smi(root, dpkg, tmp_path, '--query-gpu=driver_version', '--format=csv,noheader', '-i', '0').out == \
        '535.261.03\n'
    assert 'Driver Version: 535.261.03     CUDA Version: 12.2' in _smi(root, dpkg, tmp_path).out
    # the package is upgraded, the old module stays loaded until a reboot
    newer = FakeDpkg().nvml('libnvidia-ml1', '550.163.01-2')
    result = _smi(root, newer, tmp_path, '-q', '-x')
    mismatch = 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.163\n'
    assert (result.rc, result.out) == (18, mismatch)
    assert classify_nvsmi_failure(result.rc, result.out)['kind'] == 'nvml_mismatch'
    assert _smi(root, FakeDpkg(), tmp_path, '-L').rc == 12
    # the collection's live gatherer on the node, its proc_root at the simulated proc tree
    os.environ['GPUOPS_SIM_DPKG_QUERY'] = dpkg.script(str(tmp_path / 'dpkg-query'))

    def run_command(argv):
        result = nvidia_smi.run(argv[1:], {'GPUOPS_SIM_ROOT': root})
        return result.rc, result.out, result.err
    facts = gather_live(run_command, 'nvidia-smi', summary['sysfs_root'], proc_root=summary['proc_root'])
    assert (facts['driver_loaded'], facts['driver_version'], facts['kernel_module'], facts['nvswitch_count']) == (
        True, '535.261.03', 'proprietary', 4)
    assert [w for w in facts['warnings'] if 'kernel module' in w] == []


def test_gpu_processes_read_back_through_the_collection_parser(node):
    n = node()
    assert n.admin('busy', '0', '4242', '/usr/bin/python3').rc == 0
    assert n.admin('busy', '0', '4243').rc == 0
    gpus = parse_nvsmi_xml(n.run('-q', '-x').out)['gpus']
    assert gpus[0]['processes'] == [
        {'pid': 4242, 'type': 'C', 'name': '/usr/bin/python3', 'used_memory_mib': 1024},
        {'pid': 4243, 'type': 'C', 'name': 'python3', 'used_memory_mib': 1024}]
    assert [g['processes'] for g in gpus[1:]] == [[]] * 7
    xml = n.run('-q', '-x', '-i', '0').out
    assert ('        <processes>\n            <process_info>\n                <gpu_instance_id>N/A</gpu_instance_id>\n'
            '                <compute_instance_id>N/A</compute_instance_id>\n                <pid>4242</pid>\n'
            '                <type>C</type>\n') in xml
    table = n.run().out.splitlines()
    rows = [line for line in table if '4242' in line or '4243' in line]
    assert rows == ['|    0   N/A  N/A            4242      C   /usr/bin/python3                       1024MiB |',
                    '|    0   N/A  N/A            4243      C   python3                                1024MiB |']
    assert n.admin('busy', '0', 'x').rc == 2
    assert n.admin('idle', '0').rc == 0
    assert parse_nvsmi_xml(n.run('-q', '-x').out)['gpus'][0]['processes'] == []
    assert 'No running processes found' in n.run().out
    n.admin('busy', '1', '7')
    n.admin('reboot')
    assert parse_nvsmi_xml(n.run('-q', '-x').out)['gpus'][1]['processes'] == []


def test_process_row_is_the_real_table_layout():
    real = real_text('nvsmi-errors/unable-to-determine-device-handle-GPU1-then-partial-table-rtxpro6000.txt')
    line = [l for l in real.splitlines() if ' 6194 ' in l][0]
    assert sim_driver.process_rows(0, [{'pid': 6194, 'name': 'VLLM::Worker_TP1', 'used_memory_mib': 88438}]) == [line]
