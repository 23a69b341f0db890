# -*- coding: utf-8 -*-
"""The kernel the node boots next and the NVIDIA module it would load (module_utils/node/boot_kernel.py).

The modules.dep lines here are written in depmod's format (``path: dependencies``) with the module paths Debian's
DKMS (``updates/dkms/nvidia-current.ko``), Ubuntu's precompiled packages (``kernel/nvidia-580srv/nvidia.ko``) and
the in-tree drivers use; the molecule scenario nvidia_driver_dkms reads a real one, of a real DKMS build, with the
real modinfo. What this cannot prove: which entry GRUB boots when GRUB_DEFAULT pins an older kernel."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gpuops.node.plugins.module_utils.node import boot_kernel

DEP = ('kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.xz: kernel/drivers/net/ethernet/mellanox/mlxfw/mlxfw.ko.xz\n'
       'kernel/drivers/gpu/drm/nouveau/nouveau.ko.xz: kernel/drivers/gpu/drm/display/drm_display_helper.ko.xz\n'
       'updates/dkms/nvidia-current-modeset.ko: updates/dkms/nvidia-current.ko\n'
       'updates/dkms/nvidia-current.ko:\n')


def node(tmp_path, kernels=('6.1.0-28-amd64', '6.1.0-31-amd64'), dep=DEP, headers=True):
    boot = tmp_path / 'boot'
    boot.mkdir()
    for kver in kernels:
        (boot / ('vmlinuz-' + kver)).write_text('')
        (boot / ('config-' + kver)).write_text('')
    (boot / 'vmlinuz-0-rescue-0123456789abcdef').write_text('')
    newest = tmp_path / 'lib' / 'modules' / kernels[-1]
    newest.mkdir(parents=True)
    if dep is not None:
        (newest / 'modules.dep').write_text(dep)
    if headers:
        (tmp_path / 'usr' / 'src' / ('linux-headers-' + kernels[-1])).mkdir(parents=True)
        os.symlink(str(tmp_path / 'usr' / 'src' / ('linux-headers-' + kernels[-1])), str(newest / 'build'))
    return str(boot), str(tmp_path / 'lib' / 'modules')


def modinfo_answers(version='535.261.03', rc=0):
    calls = []

    def run(argv):
        calls.append(argv)
        return rc, version.encode() + b'\n', b''
    return run, calls


def test_boot_kernels_newest_without_rescue(tmp_path):
    for name in ('vmlinuz-6.1.0-9-amd64', 'vmlinuz-6.1.0-10-amd64', 'vmlinuz-0-rescue-abc', 'config-6.1.0-10-amd64',
                 'vmlinuz-9.9\x1b[2J', 'vmlinuz-9.9 x', 'vmlinuz-a-', 'vmlinuz-7.0-',  # no kernel release
                 'vmlinuz-9.0.0-1.el9.x86_64+debug'):         # RHEL's debug kernel: never the default
        (tmp_path / name).write_text('')
    assert boot_kernel.boot_kernels('6.1.0-9-amd64', str(tmp_path)) == {
        'boot': '6.1.0-10-amd64', 'running': '6.1.0-9-amd64', 'headers_for': ['6.1.0-9-amd64', '6.1.0-10-amd64']}
    assert boot_kernel.boot_kernels('6.18.44-host', str(tmp_path))['headers_for'] == ['6.1.0-10-amd64']
    assert boot_kernel.boot_kernels('6.18.44-host', str(tmp_path / 'absent')) == {
        'boot': None, 'running': '6.18.44-host', 'headers_for': []}


def test_the_newest_kernel_its_headers_and_the_module_modprobe_would_load(tmp_path):
    boot, modules = node(tmp_path)
    run, calls = modinfo_answers()
    assert boot_kernel.read_live(run, '6.1.0-28-amd64', '/usr/sbin/modinfo', boot, modules) == {
        'kernel': '6.1.0-31-amd64', 'running': '6.1.0-28-amd64', 'headers': True,
        'module': 'updates/dkms/nvidia-current.ko', 'module_version': '535.261.03', 'unreadable': None}
    module = os.path.join(modules, '6.1.0-31-amd64', 'updates/dkms/nvidia-current.ko')
    assert calls == [['/usr/sbin/modinfo', '-F', 'version', module]]


def test_a_kernel_update_without_headers_has_no_module(tmp_path):
    """What an unattended upgrade leaves: a newer kernel, depmod run for it, no headers, so no DKMS build."""
    boot, modules = node(tmp_path, dep=DEP.split('updates/', maxsplit=1)[0], headers=False)
    found = boot_kernel.read_live(modinfo_answers()[0], '6.1.0-28-amd64', '/usr/sbin/modinfo', boot, modules)
    assert (found['kernel'], found['headers'], found['module'], found['unreadable']) == (
        '6.1.0-31-amd64', False, None, None)


def test_a_dangling_build_link_is_no_headers(tmp_path):
    boot, modules = node(tmp_path)
    os.rmdir(str(tmp_path / 'usr' / 'src' / 'linux-headers-6.1.0-31-amd64'))
    assert boot_kernel.read_live(modinfo_answers()[0], 'x', None, boot, modules)['headers'] is False


def test_what_could_not_be_read_says_why(tmp_path):
    boot, modules = node(tmp_path, dep=None)
    found = boot_kernel.read_live(modinfo_answers()[0], 'x', '/usr/sbin/modinfo', boot, modules)
    assert found['module'] is None and 'has no modules.dep (depmod never ran for it)' in found['unreadable']
    empty = tmp_path / 'empty'
    empty.mkdir()
    assert boot_kernel.read_live(modinfo_answers()[0], 'x', None, str(empty), modules)['unreadable'] == \
        'no kernel image (vmlinuz-*) in %s' % empty


def test_an_unreadable_version_is_null_with_a_warning(tmp_path):
    boot, modules = node(tmp_path)
    warnings = []
    found = boot_kernel.read_live(modinfo_answers('modinfo: ERROR: could not get modinfo', 1)[0], 'x',
                                  '/usr/sbin/modinfo', boot, modules, warnings)
    assert found['module'] == 'updates/dkms/nvidia-current.ko' and found['module_version'] is None
    assert warnings and 'exit 1' in warnings[0]
    warnings = []
    assert boot_kernel.read_live(None, 'x', None, boot, modules, warnings)['module_version'] is None
    assert warnings == ['modinfo was not found on the node: the version of updates/dkms/nvidia-current.ko is not read']


def test_node_strings_that_are_no_release_or_module_path_are_not_passed_on(tmp_path):
    boot, modules = node(tmp_path, dep='../../../etc/nvidia.ko:\n/abs/nvidia.ko:\nupdates/nvidia.ko:\n')
    found = boot_kernel.read_live(modinfo_answers('1' * 40)[0], 'bad\x1b[0m', '/usr/sbin/modinfo', boot, modules)
    assert (found['running'], found['module'], found['module_version']) == (None, 'updates/nvidia.ko', None)


def test_module_names_modprobe_loads_as_nvidia():
    names = ['nvidia.ko', 'nvidia.ko.zst', 'nvidia-current.ko.xz', 'nvidia-current-open.ko', 'nvidia-tesla-470.ko']
    assert all(boot_kernel.MODULE_NAME.match(n) for n in names)
    assert not any(boot_kernel.MODULE_NAME.match(n) for n in ('nvidia-uvm.ko', 'nvidia-current-modeset.ko',
                                                              'nvidia-drm.ko.zst', 'nvidiafb.ko', 'nouveau.ko'))
    assert boot_kernel.modules_dep_module('kernel/nvidia-580srv/nvidia-uvm.ko: kernel/nvidia-580srv/nvidia.ko\n'
                                          'kernel/nvidia-580srv/nvidia.ko:\n') == 'kernel/nvidia-580srv/nvidia.ko'
