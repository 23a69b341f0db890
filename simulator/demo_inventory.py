# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``make demo``: the inventory of the virtual rack, and the settings of the roles the rollout gives its bare nodes.

The demo's nodes are bare (``install_node.py --bare``: no NVIDIA user space, the driver emulated), and
``site.yml`` provisions them with the ``nvidia_driver`` role from a local signed copy of NVIDIA's CUDA repository
(``tests/repo/build_cuda_repo.py --driver-versions``: NVIDIA's package names and versions of the driver, DCGM and
NCCL, stand-in contents), copied into each node and given to the role as a site mirror, with the key as a
``file://`` URL, as a site would give its own. The ``rdma`` role follows it (the distribution's RDMA stack, IPoIB
off, memlock, the RoCE settings of the PCIe node), then ``dcgm`` and ``nccl`` install from the source the driver role
configured. The driver is loaded only after the rollout's reboot, so the CUDA major versions are given (the driver
branch 580 is CUDA 13; NCCL's CUDA 12 build runs on it), and the gates (the DCGM diagnostic, the NCCL bus bandwidth
of nccl-tests built from the stand-in source tree ``tests/repo/nccl-tests-src`` with an nvcc stand-in) run after
the reboot.

Stdlib only; Python 3.8+ (controller side).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import io
import os
import shutil
import subprocess
import sys
import tarfile

try:
    from . import bundle
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bundle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SYSFS_ROOT = '/usr/share/gpuops-sim/sys'
PROC_ROOT = '/run/gpuops-sim/proc'
NODE_REPO_DIR = '/srv/gpuops-nvidia-repo'
REPO_BUILDER = os.path.join(REPO, 'tests', 'repo', 'build_cuda_repo.py')
DRIVER_VERSIONS = '580.126.20-1,580.159.04-1'
NCCL_TESTS_SRC = os.path.join(REPO, 'tests', 'repo', 'nccl-tests-src')
# nccl-tests' make asks CUDA's nvcc for its version: a stand-in under <NODE_REPO_DIR>/cuda
NVCC_STANDIN = (b'#!/bin/sh\n# gpuops.node demo stand-in of CUDA\'s nvcc\n'
                b'echo "nvcc: NVIDIA (R) Cuda compiler driver (gpuops.node demo stand-in)"\n'
                b'echo "Cuda compilation tools, release 13.0, V13.0.48"\n')
# What the node classes expect once the driver role has run: the repository's driver, kept initialised by
# nvidia-persistenced (the captured GPUs ran without it)
DRIVER_EXPECTED = collections.OrderedDict([('driver_version', '580.*'), ('persistence_mode', 'Enabled')])
# What they expect once the rdma role has run, by the link layer of their NICs: no IPoIB on an InfiniBand compute
# fabric; DCQCN and PFC on the RoCE priority (the role's default, 3) on a RoCE one
RDMA_EXPECTED = {
    'InfiniBand': collections.OrderedDict([('nic_ipoib', False)]),
    'Ethernet': collections.OrderedDict([('nic_roce_dcqcn', 3), ('nic_pfc_priority', 3)]),
}
# What every node class expects once the dcgm role has run
DCGM_EXPECTED = collections.OrderedDict([('dcgm_health', True)])
# The NCCL gate's bus bandwidth per node class, at all_reduce_perf's largest size, below what the simulated
# nccl-tests give the healthy node (simulator/sim_nccl.py replays a capture of the node's kind): about 470 GB/s on
# the H100 NVSwitch node, 235 GB/s on the A100 one; the PCIe node replays the only PCIe capture there is, an A40
# run with peer-to-peer disabled (1.35 GB/s)
NCCL_BUSBW = {'dgx_h100': 400, 'dgx_a100': 200, 'pcie_p100': 1}


def build_repo(directory):
    """Build (or reuse) the local signed repository under ``directory``/nvidia-repo; returns that path."""
    out = os.path.join(directory, 'nvidia-repo')
    subprocess.run([sys.executable, REPO_BUILDER, '--out', out, '--driver-versions', DRIVER_VERSIONS], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def repo_tar(path):
    """The repository (``repo/`` and ``key.asc``), the nccl-tests source tree and the nvcc stand-in
    (``cuda/bin/nvcc``) as an uncompressed tar stream for ``NODE_REPO_DIR``."""
    buf = io.BytesIO()

    def owned_by_root(info):
        info.uid = info.gid = 0
        info.uname = info.gname = 'root'
        return info

    with tarfile.open(fileobj=buf, mode='w') as tar:
        for name in ('repo', 'key.asc'):
            tar.add(os.path.join(path, name), arcname=name, filter=owned_by_root)
        tar.add(NCCL_TESTS_SRC, arcname='nccl-tests-src', filter=owned_by_root)
        info = owned_by_root(tarfile.TarInfo('cuda/bin/nvcc'))
        info.size, info.mode = len(NVCC_STANDIN), 0o755
        tar.addfile(info, io.BytesIO(NVCC_STANDIN))
    return buf.getvalue()


def driver_vars():
    """The rollout's variables for the nvidia_driver, rdma, dcgm and nccl roles on the demo's nodes."""
    return [
        ('gpuops_roles', [collections.OrderedDict([('name', name)])
                          for name in ('nvidia_driver', 'rdma', 'dcgm', 'nccl')]),
        ('gpuops_reboot_ok', True),
        ('gpuops_proc_root', PROC_ROOT),
        ('nvidia_driver_source', 'mirror'),
        # a site pins its branch: without it a later run takes the newest branch the source offers
        ('nvidia_driver_branch', '580'),
        ('nvidia_driver_repo_url', 'file://%s/repo/' % NODE_REPO_DIR),
        ('nvidia_driver_repo_key_url', 'file://%s/key.asc' % NODE_REPO_DIR),
        ('nvidia_driver_sysfs_root', SYSFS_ROOT),
        ('nvidia_driver_proc_root', PROC_ROOT),
        ('rdma_sysfs_root', SYSFS_ROOT),
        ('dcgm_sysfs_root', SYSFS_ROOT),
        ('dcgm_cuda_major', 13),
        ('nccl_sysfs_root', SYSFS_ROOT),
        ('nccl_cuda_major', 12),
        ('nccl_tests_build', True),
        ('nccl_tests_source_type', 'path'),
        ('nccl_tests_source', NODE_REPO_DIR + '/nccl-tests-src'),
        ('nccl_tests_cuda_home', NODE_REPO_DIR + '/cuda'),
    ]


def class_profile(expected, driver):
    """The node class profile: the simulator profile's expected_node_class, with what the rollout's roles converge."""
    profile = collections.OrderedDict(expected)
    if driver:
        profile.update(DRIVER_EXPECTED)
        profile.update(RDMA_EXPECTED.get(expected.get('nic_link_layer'), {}))
        profile.update(DCGM_EXPECTED)
    return profile


def write_inventory(nodes, directory, report_dir, driver=True):
    """hosts.yml and group_vars/ under ``directory``/inventory; with ``driver``, the nvidia_driver and rdma rollout."""
    inventory = os.path.join(directory, 'inventory')
    if os.path.isdir(inventory):
        shutil.rmtree(inventory)
    os.makedirs(os.path.join(inventory, 'group_vars'))
    header = 'Generated by simulator/demo.py (make demo); rewritten on every run.'
    children = collections.OrderedDict()
    for node in nodes:
        children.setdefault(node['rack'], {'hosts': collections.OrderedDict()})['hosts'][node['name']] = {
            'ansible_host': node['container'],
            'gpuops_sim_profile': node['profile'],
            'gpuops_sim_faults': node['faults'],
        }
    classes = collections.OrderedDict()
    for node in nodes:
        classes.setdefault(node['node_class'], []).append(node)
    for name, members in classes.items():
        children[name] = {'hosts': collections.OrderedDict((n['name'], None) for n in members)}
    with open(os.path.join(inventory, 'hosts.yml'), 'w') as handle:
        handle.write(bundle.dump_yaml({'all': {'children': children}}, header))
    all_vars = collections.OrderedDict([
        ('ansible_connection', 'podman'),
        ('ansible_python_interpreter', '/usr/bin/python3'),
        ('gpuops_nvidia_smi', 'nvidia-smi'),
        ('gpuops_sysfs_root', SYSFS_ROOT),
        ('gpuops_report_dir', report_dir),
        ('gpuops_report_title', 'gpuops.node demo rollout (simulated GPU nodes)'),
        # a container reboots with systemd (podman restarts it) and shares the host kernel's boot_id
        ('gpuops_reboot_command', 'systemctl reboot'),
        ('gpuops_reboot_boot_time_command', 'cut -d" " -f22 /proc/1/stat'),
    ] + (driver_vars() if driver else []))
    with open(os.path.join(inventory, 'group_vars', 'all.yml'), 'w') as handle:
        handle.write(bundle.dump_yaml(all_vars, header + '\nNodes are podman containers; nvidia-smi and sysfs are '
                                      'the gpuops simulator (simulator/README.md).'))
    for name, members in classes.items():
        profile = members[0]['profile']
        with open(os.path.join(inventory, 'group_vars', name + '.yml'), 'w') as handle:
            handle.write(bundle.dump_yaml(
                collections.OrderedDict([('gpuops_node_class', name),
                                         ('gpuops_node_class_profile', class_profile(members[0]['expected'], driver))]
                                        + ([('nccl_test_min_busbw_gbps', NCCL_BUSBW[name])]
                                           if driver and name in NCCL_BUSBW else [])),
                header + '\nNode class %s: expected_node_class of simulator/profiles/%s/profile.yml%s.'
                % (name, profile, ', with what the rollout\'s roles converge' if driver else '')))
    return inventory
