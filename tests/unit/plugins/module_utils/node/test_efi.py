# -*- coding: utf-8 -*-
"""Secure Boot read from efivarfs (plugins/module_utils/node/efi.py), decided as mokutil --sb-state decides it.

The files are built in the format the kernel documents for efivarfs (Documentation/filesystems/efivarfs.rst: 4
bytes of attributes, little-endian, then the value; 0x06 is BOOTSERVICE_ACCESS|RUNTIME_ACCESS, what the global
variables carry), with the names and GUIDs mokutil reads (lcp/mokutil src/mokutil.c). What this cannot prove: a
firmware that writes the variables otherwise, and efivarfs as a container sees it (which is why a missing or empty
directory is ``unknown``, never ``disabled``).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.node import efi


def firmware(tmp_path, **values):
    """A sysfs root whose efivars hold ``values`` ({variable file name: value byte, or raw bytes})."""
    variables = tmp_path / 'firmware' / 'efi' / 'efivars'
    variables.mkdir(parents=True)
    for name, value in values.items():
        (variables / name).write_bytes(value if isinstance(value, bytes) else b'\x06\x00\x00\x00' + bytes([value]))
    return str(tmp_path)


SB, SM, MOK = efi.SECURE_BOOT, efi.SETUP_MODE, efi.MOK_SB_STATE


@pytest.mark.parametrize('values, state, shim', [
    ({SB: 1, SM: 0}, 'enabled', True),
    ({SB: 1, SM: 0, MOK: 1}, 'enabled', False),
    ({SB: 0, SM: 0}, 'disabled', None),
    ({SB: 1, SM: 1}, 'disabled', None),       # Setup Mode: mokutil says "SecureBoot disabled"
    ({SB: 0}, 'disabled', None),
    ({'BootOrder-' + efi.GLOBAL: 0}, 'unsupported', None),
    ({SB: b'\x06\x00\x00\x00'}, 'unknown', None),
    # a firmware that stores the value in 4 bytes: mokutil reads 1, 2 or 4
    ({SB: b'\x06\x00\x00\x00\x01\x00\x00\x00', SM: 0}, 'enabled', True),
    ({SB: b'\x06\x00\x00\x00\x01\x00\x00', SM: 0}, 'unknown', None),
    ({SB: 2, SM: 0}, 'unknown', None),
])
def test_the_state_of_the_variables(tmp_path, values, state, shim):
    found = efi.read_secure_boot(firmware(tmp_path, **values))
    assert (found['state'], found['shim_validation']) == (state, shim), found
    assert found['detail']


def test_a_node_that_did_not_boot_through_uefi_is_not_efi(tmp_path):
    assert efi.read_secure_boot(str(tmp_path))['state'] == 'not_efi'


def test_efivarfs_not_mounted_is_unknown_never_disabled(tmp_path):
    (tmp_path / 'firmware' / 'efi').mkdir(parents=True)
    assert efi.read_secure_boot(str(tmp_path))['state'] == 'unknown'
    (tmp_path / 'firmware' / 'efi' / 'efivars').mkdir()
    found = efi.read_secure_boot(str(tmp_path))
    assert found['state'] == 'unknown' and 'not mounted' in found['detail']
