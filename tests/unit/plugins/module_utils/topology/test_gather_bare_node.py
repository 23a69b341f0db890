# -*- coding: utf-8 -*-
"""What a node says before any driver answers: GPUs and NVSwitches on the PCI bus, the loaded kernel module."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import shutil

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.node.nvidia_pci import ARCHITECTURES, ORDER, architecture, model
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvidia_proc import parse_driver_version
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import run_checks
from real_captures import PROFILES, REAL, extract_ttar, real_text

XMLS = sorted(glob.glob(os.path.join(REAL, 'nvsmi-*', '*.xml')) + glob.glob(os.path.join(PROFILES, '*', '*.xml')))


def uncomment(text):
    """Transform: drop the "## " the notes put before every output line."""
    return ''.join(line[3:] if line.startswith('## ') else line for line in text.splitlines(True))


@pytest.mark.parametrize('name,version,flavour,arch,gcc', [
    ('version-open-565-ubuntu2404.txt', '565.57.01', 'open', 'x86_64', 'gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)'),
    ('version-open-525-arch.txt', '525.60.11', 'open', 'x86_64', 'gcc version 12.2.0 (GCC)'),
    ('version-proprietary-515-ubuntu1804-COMMENTED.txt', '515.76', 'proprietary', 'x86_64',
     'gcc version 7.5.0 (Ubuntu 7.5.0-3ubuntu1~18.04)'),
])
def test_proc_driver_version(name, version, flavour, arch, gcc):
    parsed = parse_driver_version(uncomment(real_text('nvidia-proc/' + name)))
    assert parsed == {'version': version, 'kernel_module': flavour, 'arch': arch, 'gcc': gcc}


def test_proc_driver_version_that_is_not_one():
    with pytest.raises(ParseError) as err:
        parse_driver_version(real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt'))
    assert err.value.command == '/proc/driver/nvidia/version' and err.value.line_no == 1


@pytest.mark.parametrize('path', XMLS, ids=os.path.basename)
def test_architecture_from_the_device_id_agrees_with_nvidia_smi(path):
    with open(path) as handle:
        for gpu in parse_nvsmi_xml(handle.read())['gpus']:
            assert architecture(gpu['pci_device_id']) == gpu['architecture']
            assert model(gpu['pci_device_id']) == gpu['name']


def test_architecture_table_is_ordered_and_covers_the_generations():
    edges = [(first, last) for first, last, _name in ARCHITECTURES]
    assert edges == sorted(edges) and all(a[1] < b[0] for a, b in zip(edges, edges[1:]))
    assert set(name for _f, _l, name in ARCHITECTURES) == set(ORDER)
    assert [architecture(i) for i in ('0x1db5', '0x1eb8', '0x2330', '0x2335', '0x26b9', '0x2901', '0x9999')] == [
        'Volta', 'Turing', 'Hopper', 'Hopper', 'Ada Lovelace', 'Blackwell', None]


def bare(tmp_path, profile, proc=None):
    """Transform: a simulator profile's sysfs tree alone, as a node without NVIDIA user space shows it (no
    nvidia-smi output at all); ``proc`` is the text of /proc/driver/nvidia/version when a module is loaded."""
    dest = str(tmp_path / profile)
    os.makedirs(dest)
    extract_ttar(os.path.join(PROFILES, profile, 'sys.ttar'), os.path.join(dest, 'sys'))
    if proc is not None:
        os.makedirs(os.path.join(dest, 'proc', 'driver', 'nvidia'))
        with open(os.path.join(dest, 'proc', 'driver', 'nvidia', 'version'), 'w') as handle:
            handle.write(proc)
    return dest


def test_bare_node_lists_its_gpus_from_pci(tmp_path):
    topo = gather_bundle(bare(tmp_path, 'h100-sxm-8gpu-ib'))
    assert topo['driver_loaded'] is False and topo['gpu_count'] == 0
    assert len(topo['pci_gpus']) == 8 and topo['nvswitch_count'] == 4      # the DGX H100's four NVSwitches
    for profile in ('a100-sxm-8gpu-ib', 'pcie-4gpu-roce'):                  # the A100 profile has none (yet)
        assert gather_bundle(bare(tmp_path, profile))['nvswitch_count'] == 0
    assert topo['pci_gpus'][0] == {
        'pci_bus_id': '0000:19:00.0', 'device_id': '0x2330', 'architecture': 'Hopper',
        'model': 'NVIDIA H100 80GB HBM3', 'numa_node': None,           # the capture was taken with numa=off
        'pcie': {'gen_current': 5, 'gen_max': 5, 'width_current': 16, 'width_max': 16}}


def test_bare_node_checks_the_hardware_and_defers_the_driver(tmp_path):
    topo = gather_bundle(bare(tmp_path, 'h100-sxm-8gpu-ib'))
    profile = {'gpu_count': 8, 'gpu_model': 'NVIDIA H100*', 'pcie_gen_min': 5, 'pcie_width_min': 16,
               'nvlink_active_links': 18, 'driver_version': '550.*'}
    failures, deferred = run_checks(topo, profile, ['nvidia_driver'])
    assert failures == []
    assert [d['check'] for d in deferred] == ['nic_missing', 'driver_loaded', 'driver_version', 'nvlink_active_links']
    # without the deferral the node fails driver_loaded, and says what the PCI bus shows
    failures, _deferred = run_checks(topo, profile)
    assert [f['check'] for f in failures] == ['driver_loaded']
    assert failures[0]['message'].endswith('; the PCI bus shows 8 NVIDIA GPU(s)')
    # the hardware still gates the change: a class that expects more or other GPUs fails on the bare node
    failures, _deferred = run_checks(topo, dict(profile, gpu_count=4, gpu_model='NVIDIA A100*'), ['nvidia_driver'])
    assert sorted(set(f['check'] for f in failures)) == ['gpu_count', 'gpu_model']


def test_unknown_device_id_is_not_checked_not_passed(tmp_path):
    dest = bare(tmp_path, 'pcie-4gpu-roce')
    device = glob.glob(os.path.join(dest, 'sys', 'bus', 'pci', 'devices', '*', 'device'))
    for path in device:
        with open(path) as handle:
            value = handle.read()
        if value.strip() == '0x15f8':
            with open(path, 'w') as handle:
                handle.write('0x15f7\n')      # transform: the P100 12GB id, which the model table does not name
    failures, _deferred = run_checks(gather_bundle(dest), {'gpu_model': 'Tesla P100*'}, ['nvidia_driver'])
    assert set((f['check'], f['actual']) for f in failures) == {('gpu_model', 'not checked')}


def test_loaded_module_from_proc(tmp_path):
    text = real_text('nvidia-proc/version-open-565-ubuntu2404.txt')
    topo = gather_bundle(bare(tmp_path, 'a100-sxm-8gpu-ib', proc=text))
    assert (topo['kernel_module'], topo['driver_version']) == ('open', '565.57.01')


def test_nvidia_smi_and_module_versions_that_differ_warn(tmp_path):
    dest = str(tmp_path / 'n')
    shutil.copytree(os.path.join(PROFILES, 'a100-sxm-8gpu-ib'), dest)
    os.makedirs(os.path.join(dest, 'proc', 'driver', 'nvidia'))
    with open(os.path.join(dest, 'proc', 'driver', 'nvidia', 'version'), 'w') as handle:
        handle.write(uncomment(real_text('nvidia-proc/version-proprietary-515-ubuntu1804-COMMENTED.txt')))
    topo = gather_bundle(dest)
    assert topo['driver_version'] == '510.47.03' and topo['kernel_module'] == 'proprietary'
    assert 'nvidia-smi reports driver 510.47.03 but the loaded kernel module is 515.76' in topo['warnings']


def test_gpu_processes_from_the_xml(tmp_path):
    def running(text):
        """Transform: one compute process on the first GPU, in the layout nvidia-smi -q -x prints it."""
        return text.replace('<processes>', '<processes>\n\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>N/A'
                            '</gpu_instance_id>\n\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n\t\t\t\t'
                            '<pid>4242</pid>\n\t\t\t\t<type>C</type>\n\t\t\t\t<process_name>python3</process_name>'
                            '\n\t\t\t\t<used_memory>1234 MiB</used_memory>\n\t\t\t</process_info>', 1)
    dest = str(tmp_path / 'p')
    os.makedirs(dest)
    with open(os.path.join(dest, 'nvidia-smi-q-x.xml'), 'w') as handle:
        handle.write(running(real_text('nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml')))
    topo = gather_bundle(dest)
    assert topo['gpu_processes'] == [{'gpu': 0, 'pid': 4242, 'type': 'C', 'name': 'python3', 'used_memory_mib': 1234}]


@pytest.mark.parametrize('version,expected', [
    ('550.163.01-2~deb13u1', '550.163.01'), ('1:550.54.15-1', '550.54.15'), ('550.54.15-1.el9', '550.54.15'),
    ('535.216.01-0ubuntu0.22.04.1', '535.216.01'), ('', None), ('garbage', None),
])
def test_upstream_driver_version(version, expected):
    from ansible_collections.gpuops.node.plugins.module_utils.node.packages import upstream
    assert upstream(version) == expected


def test_dpkg_owner_skips_diversions():
    from ansible_collections.gpuops.node.plugins.module_utils.node.packages import dpkg_owner
    text = ('diversion by gpuops-sim from: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n'
            'libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n')
    assert dpkg_owner(text) == 'libnvidia-ml1'
    assert dpkg_owner('dpkg-query: no path found matching pattern *libnvidia-ml.so.1*\n') is None
