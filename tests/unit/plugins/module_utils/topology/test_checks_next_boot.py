# -*- coding: utf-8 -*-
"""``next_boot_driver``: the kernel the node boots next has the installed driver's module, decided on what
module_utils/node/boot_kernel.py read (test_boot_kernel.py reads it from a node's tree)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import BY_KEY, run_checks, validate_profile

READY = {'kernel': '6.1.0-31-amd64', 'running': '6.1.0-28-amd64', 'headers': True,
         'module': 'updates/dkms/nvidia-current.ko', 'module_version': '535.261.03', 'unreadable': None}


def next_boot(boot, installed='535.261.03', wanted=True):
    topo = {'next_boot': boot, 'driver_installed_version': installed}
    return [f for f in run_checks(topo, {'next_boot_driver': wanted})[0] if f['check'] == 'next_boot_driver']


def test_the_installed_drivers_module_for_the_next_kernel_passes():
    assert next_boot(READY) == []


def test_no_installed_driver_to_compare_with_is_not_checked():
    failures = next_boot(READY, installed=None)
    assert [f['actual'] for f in failures] == ['not checked']
    assert 'no installed driver package to compare the module updates/dkms/nvidia-current.ko' in failures[0]['message']


@pytest.mark.parametrize('headers,says', [(False, 'headers are not installed, so DKMS cannot build one'),
                                          (True, 'headers are installed, yet DKMS built nothing for it')])
def test_a_kernel_update_without_the_module_fails_naming_the_kernel(headers, says):
    failures = next_boot(dict(READY, module=None, module_version=None, headers=headers))
    assert [(f['subject'], f['actual']) for f in failures] == [('node', None)]
    assert 'kernel 6.1.0-31-amd64, which the node boots next, has no NVIDIA module' in failures[0]['message']
    assert says in failures[0]['message'] and 'nvidia_driver_hold_kernel' in failures[0]['message']


def test_an_old_module_for_the_next_kernel_fails():
    failures = next_boot(dict(READY, module_version='535.216.01'))
    assert [(f['expected'], f['actual']) for f in failures] == [('535.261.03', '535.216.01')]


@pytest.mark.parametrize('boot,why', [
    (None, 'the boot kernel was not read'),
    ({'kernel': None, 'unreadable': 'no kernel image (vmlinuz-*) in /boot'}, 'no kernel image'),
    (dict(READY, module=None, unreadable='/lib/modules/6.1.0-31-amd64 has no modules.dep'), 'has no modules.dep'),
    (dict(READY, module_version=None), 'the version of updates/dkms/nvidia-current.ko for kernel 6.1.0-31-amd64'),
])
def test_what_could_not_be_read_is_not_checked(boot, why):
    failures = next_boot(boot)
    assert [f['actual'] for f in failures] == ['not checked'] and why in failures[0]['message']


def test_off_checks_nothing_and_the_key_is_a_bool_of_the_driver_role():
    assert next_boot(None, wanted=False) == []
    assert BY_KEY['next_boot_driver'].role == 'nvidia_driver'
    assert validate_profile({'next_boot_driver': 'yes'})
