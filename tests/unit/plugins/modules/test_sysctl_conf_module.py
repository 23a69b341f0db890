# -*- coding: utf-8 -*-
"""The sysctl_conf module on a synthetic node (a /proc/sys tree and a root with sysctl.d files, built here): it writes
the file atomically with mode 0644 and sets the running values, check mode and diff, a second run changes nothing,
an override is a warning naming the file (a failure with fail_on_override), drift, an unknown key is refused with
nothing written, allow_missing, and a value the kernel refuses (the values set before it put back)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import stat

import pytest

from module_harness import patch_module, run  # noqa: F401 pylint: disable=unused-import

from ansible.module_utils import basic

from ansible_collections.gpuops.node.plugins.modules import sysctl_conf

PROC = {'proc/sys/net/core/rmem_max': '212992\n', 'proc/sys/net/core/wmem_max': '212992\n',
        'proc/sys/kernel/numa_balancing': '1\n', 'proc/sys/vm/zone_reclaim_mode': '0\n',
        'proc/sys/net/ipv4/tcp_rmem': '4096\t131072\t6291456\n'}
BASE = {'net.core.rmem_max': 268435456, 'net.core.wmem_max': 268435456, 'kernel.numa_balancing': 0,
        'vm.zone_reclaim_mode': 0, 'net.ipv4.tcp_rmem': '4096 87380 134217728'}
OURS = 'etc/sysctl.d/90-gpuops.conf'


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A dict-like handle on the synthetic node; module.warn calls are recorded in node.warnings."""
    base = str(tmp_path)
    for rel, content in PROC.items():
        where = os.path.join(base, rel)
        if not os.path.isdir(os.path.dirname(where)):
            os.makedirs(os.path.dirname(where))
        with open(where, 'w') as handle:
            handle.write(content)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda _self, text: warnings.append(text))

    class Node(object):
        root = base
        proc = os.path.join(base, 'proc')

        @staticmethod
        def path(rel):
            return os.path.join(base, rel)

        @staticmethod
        def read(rel):
            with open(os.path.join(base, rel)) as handle:
                return handle.read()

        @staticmethod
        def put(rel, text):
            where = os.path.join(base, rel)
            if not os.path.isdir(os.path.dirname(where)):
                os.makedirs(os.path.dirname(where))
            with open(where, 'w') as handle:
                handle.write(text)

        @staticmethod
        def args(**extra):
            return dict({'base_settings': BASE, 'proc_root': os.path.join(base, 'proc'), 'root': base,
                         'name_prefix': 'sysctl_', 'header': 'Managed by Ansible'}, **extra)
    Node.warnings = warnings
    return Node


def test_apply_then_a_second_run_changes_nothing(node):
    result = run(sysctl_conf, node.args())
    assert result['changed'] and result['file_changed']
    assert node.read(OURS).startswith('# Managed by Ansible\nkernel.numa_balancing = 0\n')
    assert stat.S_IMODE(os.stat(node.path(OURS)).st_mode) == 0o644
    assert not [n for n in os.listdir(node.path('etc/sysctl.d')) if n.startswith('.')]
    assert node.read('proc/sys/net/core/rmem_max') == '268435456\n'
    assert sorted(a['key'] for a in result['applied']) == [
        'kernel.numa_balancing', 'net.core.rmem_max', 'net.core.wmem_max', 'net.ipv4.tcp_rmem']
    assert result['settings']['net.ipv4.tcp_rmem'] == '4096 87380 134217728'
    assert result['overrides'] == [] and result['missing'] == [] and 'diff' not in result
    again = run(sysctl_conf, node.args())
    assert not again['changed'] and again['applied'] == [] and not again['file_changed']


def test_check_mode_shows_the_diff_and_changes_nothing(node):
    result = run(sysctl_conf, node.args(), check_mode=True, diff=True)
    assert result['changed']
    assert not os.path.exists(node.path(OURS))
    assert node.read('proc/sys/kernel/numa_balancing') == '1\n'
    file_diff, live_diff = result['diff']
    assert file_diff['before'] == '' and 'net.core.rmem_max = 268435456' in file_diff['after']
    assert file_diff['after_header'] == '/etc/sysctl.d/90-gpuops.conf'
    assert 'kernel.numa_balancing = 1' in live_diff['before'] and 'kernel.numa_balancing = 0' in live_diff['after']


def test_an_override_is_a_warning_naming_the_file(node):
    node.put('etc/sysctl.d/99-sysctl.conf', 'net.core.wmem_max = 4194304\n')
    # the node booted with that file
    node.put('proc/sys/net/core/wmem_max', '4194304\n')
    result = run(sysctl_conf, node.args())
    assert result['overrides'] == [{'key': 'net.core.wmem_max', 'wanted': '268435456', 'value': '4194304',
                                    'file': '/etc/sysctl.d/99-sysctl.conf', 'ours': '/etc/sysctl.d/90-gpuops.conf'}]
    assert node.read('proc/sys/net/core/wmem_max') == '4194304\n'
    assert len(node.warnings) == 1 and '/etc/sysctl.d/99-sysctl.conf' in node.warnings[0]
    assert result['drifted'] == []


def test_drift_is_reported_and_the_files_value_set(node):
    run(sysctl_conf, node.args())
    # a runtime tool (tuned) lowers a value after the role set it
    node.put('proc/sys/net/core/rmem_max', '212992\n')
    result = run(sysctl_conf, node.args())
    assert result['drifted'] == [{'key': 'net.core.rmem_max', 'value': '212992', 'expected': '268435456',
                                  'file': '/etc/sysctl.d/90-gpuops.conf'}]
    assert result['applied'] == [{'key': 'net.core.rmem_max', 'before': '212992', 'after': '268435456'}]
    assert node.read('proc/sys/net/core/rmem_max') == '268435456\n'
    assert node.warnings == [
        'net.core.rmem_max was 212992 on the running kernel, where the sysctl files give 268435456 '
        '(/etc/sysctl.d/90-gpuops.conf): changed at run time (a tool such as tuned, or by hand); set to 268435456']


def test_fail_on_override(node):
    node.put('etc/sysctl.conf', 'kernel.numa_balancing = 1\n')
    for check_mode in (True, False):
        result = run(sysctl_conf, node.args(fail_on_override=True), check_mode=check_mode, expect_fail=True)
        assert result['msg'] == ('sysctl_fail_on_override: kernel.numa_balancing = 1 in /etc/sysctl.conf wins over '
                                 'kernel.numa_balancing = 0 in /etc/sysctl.d/90-gpuops.conf')
        # refused before any change
        assert not result['changed'] and not os.path.exists(node.path(OURS))
        assert node.read('proc/sys/net/core/rmem_max') == '212992\n'


def test_an_unknown_key_is_refused_with_nothing_written(node):
    result = run(sysctl_conf, node.args(settings={'net.foo.bar': 1, 'vm.zone_reclaim_mode': True}), expect_fail=True)
    assert result['errors'] == [
        'sysctl_settings: vm.zone_reclaim_mode: True is not a value: give an integer, a string or a list of them',
        'sysctl_settings: net.foo.bar has no %s/sys/net/foo/bar on this node (a typo, or a kernel module not loaded '
        'yet: list it in sysctl_allow_missing)' % node.proc]
    assert result['msg'] == '; '.join(result['errors'])
    assert not os.path.exists(node.path('etc/sysctl.d'))
    assert node.read('proc/sys/kernel/numa_balancing') == '1\n'


def test_an_unknown_key_alone_names_its_proc_file(node):
    result = run(sysctl_conf, node.args(settings={'net.foo.bar': 1}), expect_fail=True)
    assert result['msg'] == ('sysctl_settings: net.foo.bar has no %s/sys/net/foo/bar on this node (a typo, or a '
                             'kernel module not loaded yet: list it in sysctl_allow_missing)' % node.proc)


def test_allow_missing(node):
    result = run(sysctl_conf, node.args(settings={'net.bridge.bridge-nf-call-iptables': 0},
                                        allow_missing=['net.bridge.bridge-nf-call-iptables']))
    assert result['missing'] == ['net.bridge.bridge-nf-call-iptables']
    # sysctl.d(5): "-" skips the key quietly at boot while the module that has it is not loaded
    assert '\n-net.bridge.bridge-nf-call-iptables = 0\n' in node.read(OURS)
    assert 'net.bridge.bridge-nf-call-iptables' not in result['live']


REAL_READ_ONLY = '/proc/sys/fs/file-nr'


@pytest.mark.skipif(not os.path.isfile(REAL_READ_ONLY), reason='no /proc/sys here')
def test_a_value_the_kernel_refuses(node):
    # the synthetic entry is the real kernel's read-only fs.file-nr: reading works, the kernel refuses the write
    # (EACCES, even for root; EROFS where /proc/sys is mounted read-only, as in a container)
    os.makedirs(node.path('proc/sys/fs'))
    os.symlink(REAL_READ_ONLY, node.path('proc/sys/fs/file-nr'))
    result = run(sysctl_conf, node.args(settings={'fs.file-nr': '0 0 0'}), expect_fail=True)
    assert result['msg'].startswith('sysctl_settings: the kernel refused fs.file-nr = 0 0 0 (')
    assert not os.path.exists(node.path(OURS))


def test_an_invalid_argument_puts_back_the_values_set_before_it(node, monkeypatch):
    from ansible_collections.gpuops.node.plugins.module_utils.config import sysctl as config_sysctl

    def refuse(path, value):
        if path.endswith('tcp_rmem'):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return write_value(path, value)
    write_value = config_sysctl.write_value
    monkeypatch.setattr(config_sysctl, 'write_value', refuse)
    result = run(sysctl_conf, node.args(settings={'net.ipv4.tcp_rmem': '4096 87380 1'}), expect_fail=True)
    assert result['msg'] == 'sysctl_settings: the kernel refused net.ipv4.tcp_rmem = 4096 87380 1 (Invalid argument)'
    assert not os.path.exists(node.path(OURS))
    # the keys set before it (numa_balancing, rmem_max, wmem_max) are back: the node is as it was
    for rel, content in PROC.items():
        assert node.read(rel) == content, rel
    assert not result['changed'] and result['applied'] == []
    assert node.warnings == ['the running values set in this run were put back: kernel.numa_balancing = 1, '
                             'net.core.rmem_max = 212992, net.core.wmem_max = 212992']
