# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Secure Boot as the firmware reports it, read from efivarfs under a sysfs root (no ``mokutil`` needed).

The decision is ``mokutil --sb-state``'s (lcp/mokutil, src/mokutil.c ``print_sb_state``): Secure Boot is on when
the global variable ``SecureBoot`` is 1 and ``SetupMode`` is 0; shim's ``MokSBStateRT`` (present when the owner
ran ``mokutil --disable-validation``) means shim does not validate what it loads. Each efivarfs file is 4 bytes of
attributes, then the value (the kernel's Documentation/filesystems/efivarfs.rst).

Where mokutil fails (no EFI, in a container: "EFI variables are not supported on this system") this says which:
``not_efi`` when the node did not boot through UEFI (no ``firmware/efi``: Secure Boot cannot be on), ``unknown``
when efivarfs cannot be read, never ``disabled`` for what it could not read.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

GLOBAL = '8be4df61-93ca-11d2-aa0d-00e098032b8c'   # EFI_GLOBAL_VARIABLE
SHIM = '605dab50-e046-4300-abb6-3dd810dd8b23'     # shim's vendor GUID
SECURE_BOOT = 'SecureBoot-' + GLOBAL
SETUP_MODE = 'SetupMode-' + GLOBAL
MOK_SB_STATE = 'MokSBStateRT-' + SHIM
STATES = ('enabled', 'disabled', 'not_efi', 'unsupported', 'unknown')


def _value(path):
    """The value of an efivarfs file (after its 4 attribute bytes): 1, 2 or 4 bytes, little-endian, as mokutil
    reads it (memcpy into an int); or raise ValueError / OSError."""
    with open(path, 'rb') as handle:
        data = bytearray(handle.read())
    if len(data) - 4 not in (1, 2, 4):
        raise ValueError('%d bytes, not 4 of attributes and 1, 2 or 4 of value' % len(data))
    return sum(byte << (8 * i) for i, byte in enumerate(data[4:]))


def read_secure_boot(sysfs_root):
    """``{state, shim_validation, detail}``: ``state`` one of :data:`STATES`; ``shim_validation`` False when shim
    does not validate (MokSBStateRT), True when it does, None when Secure Boot is not on; ``detail`` says what was
    read."""
    efi = os.path.join(sysfs_root, 'firmware', 'efi')
    variables = os.path.join(efi, 'efivars')
    result = {'state': 'unknown', 'shim_validation': None, 'detail': ''}
    if not os.path.isdir(efi):
        result.update(state='not_efi', detail='no firmware/efi: the node did not boot through UEFI')
        return result
    try:
        names = os.listdir(variables)
    except OSError as exc:
        result['detail'] = 'cannot read firmware/efi/efivars: %s' % (exc.strerror or exc)
        return result
    if not names:
        result['detail'] = 'firmware/efi/efivars is empty: efivarfs is not mounted'
        return result
    if SECURE_BOOT not in names:
        result.update(state='unsupported', detail='the firmware has no SecureBoot variable')
        return result
    try:
        secure = _value(os.path.join(variables, SECURE_BOOT))
        setup = _value(os.path.join(variables, SETUP_MODE)) if SETUP_MODE in names else 0
    except (OSError, ValueError) as exc:
        reason = getattr(exc, 'strerror', None) or exc
        result['detail'] = 'cannot read the SecureBoot or SetupMode variable: %s' % reason
        return result
    if setup == 1:
        result.update(state='disabled', detail='SetupMode=1: the platform is in Setup Mode')
    elif secure == 1 and setup == 0:
        shim_off = MOK_SB_STATE in names
        detail = 'SecureBoot=1, SetupMode=0' + (', MokSBStateRT set: shim does not validate' if shim_off else '')
        result.update(state='enabled', shim_validation=not shim_off, detail=detail)
    elif secure == 0:
        result.update(state='disabled', detail='SecureBoot=0')
    else:
        result['detail'] = 'SecureBoot=%d, SetupMode=%d' % (secure, setup)
    return result
