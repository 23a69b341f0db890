# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Package version ordering: dpkg's (deb-version(7)) and the NVIDIA driver's upstream numbers.

``dpkg_compare`` implements dpkg's algorithm (epoch, then upstream version and Debian revision compared part by
part: non-digits with ``~`` before everything and letters before other characters, digits numerically), so
``550.163.01-2~deb13u1`` sorts before ``550.163.01-2`` as apt sorts it. RPM versions of the driver
(``3:550.54.15-1.el9``) order the same way for every version NVIDIA publishes.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

_DRIVER_RE = re.compile(r'^\d{3}(\.\d{1,3}){1,2}$')
_BRANCH_RE = re.compile(r'^\d{3}$')


def _order(char):
    if char == '~':
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(left, right):
    """dpkg's verrevcmp on one part (upstream version or revision)."""
    i = j = 0
    while i < len(left) or j < len(right):
        first_diff = 0
        while (i < len(left) and not left[i].isdigit()) or (j < len(right) and not right[j].isdigit()):
            lc = _order(left[i]) if i < len(left) and not left[i].isdigit() else 0
            rc = _order(right[j]) if j < len(right) and not right[j].isdigit() else 0
            if lc != rc:
                return lc - rc
            i += 1
            j += 1
        while i < len(left) and left[i] == '0':
            i += 1
        while j < len(right) and right[j] == '0':
            j += 1
        while i < len(left) and left[i].isdigit() and j < len(right) and right[j].isdigit():
            if not first_diff:
                first_diff = ord(left[i]) - ord(right[j])
            i += 1
            j += 1
        if i < len(left) and left[i].isdigit():
            return 1
        if j < len(right) and right[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def _split(version):
    version = (version or '').strip()
    epoch = 0
    if ':' in version:
        head, version = version.split(':', 1)
        epoch = int(head) if head.isdigit() else 0
    upstream, revision = version, ''
    if '-' in version:
        upstream, revision = version.rsplit('-', 1)
    return epoch, upstream, revision


def dpkg_compare(left, right):
    """<0, 0 or >0 as dpkg --compare-versions orders ``left`` and ``right``."""
    le, lu, lr = _split(left)
    re_, ru, rr = _split(right)
    if le != re_:
        return le - re_
    return _compare_part(lu, ru) or _compare_part(lr, rr)


class DpkgKey(object):
    """Sort key: ``sorted(versions, key=DpkgKey)``."""

    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return dpkg_compare(self.version, other.version) < 0

    def __eq__(self, other):
        return dpkg_compare(self.version, other.version) == 0


def is_driver_version(value):
    """``550.163.01`` or ``550.54`` (what nvidia-smi and NVIDIA's release notes print)."""
    return bool(_DRIVER_RE.match(value or ''))


def is_branch(value):
    """A driver branch: three digits, ``550``."""
    return bool(_BRANCH_RE.match(value or ''))


def driver_tuple(version):
    """``550.163.01`` -> (550, 163, 1); None when it is not a driver version."""
    if not is_driver_version(version):
        return None
    return tuple(int(part) for part in version.split('.'))


def branch_of(version):
    """``550.163.01`` -> ``550``; None when it is not a driver version."""
    return version.split('.')[0] if is_driver_version(version) else None
