# -*- coding: utf-8 -*-
"""The driver plan on a node whose firmware has Secure Boot on (the ``secure_boot`` facts of node/efi.py): refused
before any change, naming nvidia_driver_secure_boot_signed and the manual enrolment step, unless the module can
load. What this cannot prove: that a signed module loads (no firmware here; the post-change check reads the
loaded module after the reboot)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.node import nvidia_pci
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import PlanError, plan

NAMES = {'open': ['nvidia-kernel-open-dkms', 'nvidia-smi'], 'proprietary': ['nvidia-kernel-dkms', 'nvidia-smi']}
OFFERED = ('580.126.20-1', '580.159.04-1')


def _gpus(device, count=8):
    return [{'device_id': device, 'architecture': nvidia_pci.architecture(device)}] * count


SECURE = {'state': 'enabled', 'shim_validation': True, 'detail': 'SecureBoot=1, SetupMode=0'}


def _secure_plan(secure_boot, kernel_module=None, **kw):
    # force: the running GPU processes are another rule (a loaded module without them is refused)
    request = {'packages': NAMES, 'kernel_module': 'auto', 'fabricmanager': 'off', 'fabricmanager_packages': [],
               'source': 'mirror', 'extra_packages': [], 'force': True}
    request.update(kw)
    node = {'facts': {'pci_gpus': _gpus('0x2330'), 'nvswitch_count': 0, 'secure_boot': secure_boot,
                      'kernel_module': kernel_module},
            'installed': {}, 'held': [], 'available': {'open': list(OFFERED), 'proprietary': list(OFFERED)},
            'fabricmanager_available': {}}
    return plan(request, node)


@pytest.mark.parametrize('secure_boot, words', [
    (SECURE, 'Secure Boot is on (SecureBoot=1, SetupMode=0) and no NVIDIA kernel module is loaded'),
    ({'state': 'unknown', 'shim_validation': None, 'detail': 'efivarfs is not mounted'},
     'the Secure Boot state cannot be read (efivarfs is not mounted)'),
])
def test_secure_boot_that_would_keep_the_module_from_loading_is_refused(secure_boot, words):
    with pytest.raises(PlanError) as info:
        _secure_plan(secure_boot)
    assert info.value.variable == 'nvidia_driver_secure_boot_signed'
    assert words in str(info.value) and 'mokutil --import' in str(info.value) and 'console' in str(info.value)


@pytest.mark.parametrize('secure_boot, kernel_module, signed', [
    (SECURE, None, True),                                              # the site signs
    (SECURE, 'open', False),                                           # a loaded module: this node's modules load
    (dict(SECURE, shim_validation=False), None, False),                # shim does not validate
    ({'state': 'disabled', 'shim_validation': None, 'detail': 'SecureBoot=0'}, None, False),
    ({'state': 'not_efi', 'shim_validation': None, 'detail': 'no firmware/efi'}, None, False),
    (None, None, False),                                               # a bundle: no sysfs
])
def test_secure_boot_that_lets_the_module_load_is_no_refusal(secure_boot, kernel_module, signed):
    assert _secure_plan(secure_boot, kernel_module, secure_boot_signed=signed)['action'] == 'install'
