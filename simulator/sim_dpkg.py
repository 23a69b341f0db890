# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Debian packages as a simulated node sees them: dpkg's version ordering (``dpkg --compare-versions``) and the
dpkg database, read through one injectable query function (``dpkg-query``; ``GPUOPS_SIM_DPKG_QUERY`` overrides
the program, tests/unit/simulator/drivertools.py FakeDpkg). Used by the driver emulation (simulator/sim_driver.py,
which re-exports these names) and the DCGM stand-ins.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import subprocess


# ---------------------------------------------------------------------------
# Debian version ordering (dpkg's verrevcmp)
# ---------------------------------------------------------------------------

def _order(char):
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    if char == '~':
        return -1
    return ord(char) + 256


def _verrevcmp(a, b):
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) else 0
            bc = _order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == '0':
            i += 1
        while j < len(b) and b[j] == '0':
            j += 1
        first_diff = 0
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def _split_version(version):
    epoch, _sep, rest = version.rpartition(':') if ':' in version else ('0', '', version)
    upstream, sep, revision = rest.rpartition('-')
    if not sep:
        upstream, revision = rest, ''
    return int(epoch) if epoch.isdigit() else 0, upstream, revision


def version_compare(a, b):
    """<0, 0, >0 as ``dpkg --compare-versions a lt/eq/gt b``."""
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
    if ea != eb:
        return ea - eb
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


def upstream(version):
    """``535.261.03-1`` / ``1:550.163.01-2~deb13u1`` -> ``535.261.03``; None if not a version."""
    match = re.match(r'^(?:\d+:)?(\d+(?:\.\d+)+)', (version or '').strip())
    return match.group(1) if match else None


# ---------------------------------------------------------------------------
# dpkg database (one injectable query function)
# ---------------------------------------------------------------------------

def dpkg_query(root='/'):
    """``query(args) -> (rc, stdout)`` running dpkg-query (GPUOPS_SIM_DPKG_QUERY overrides the program)."""
    program = os.environ.get('GPUOPS_SIM_DPKG_QUERY') or 'dpkg-query'
    prefix = [program]
    if root not in ('/', '') and not os.environ.get('GPUOPS_SIM_DPKG_QUERY'):
        prefix.append('--admindir=' + os.path.join(root, 'var/lib/dpkg'))

    def query(args):
        try:
            done = subprocess.run(prefix + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  check=False)
        except OSError:
            return 127, ''
        return done.returncode, done.stdout.decode('utf-8', 'replace')
    return query


def dpkg_owner(query, path_or_pattern, with_path=False):
    """The package owning a file (``dpkg-query -S``), diversion lines skipped; or None.
    With ``with_path``: (package, the file's path) or (None, None)."""
    rc, out = query(['-S', path_or_pattern])
    if rc != 0:
        return (None, None) if with_path else None
    for line in out.splitlines():
        if line.startswith('diversion by') or line.startswith('local diversion'):
            continue
        match = re.match(r'^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9]+)?(?:, [^:]+)*: (/\S+)$', line.strip())
        if match and (match.group(2) == path_or_pattern or match.group(2).endswith('/' + path_or_pattern)):
            return match.groups() if with_path else match.group(1)
    return (None, None) if with_path else None


def package_version(query, package):
    rc, out = query(['-W', '-f=${Version}', package])
    return (out.strip() or None) if rc == 0 else None


def installed_packages(query):
    rc, out = query(['-W', '-f=${db:Status-Abbrev} ${Package}\n'])
    if rc != 0:
        return []
    # installed: wanted install (ii) or held (hi)
    return sorted(line.split()[1] for line in out.splitlines() if len(line.split()) == 2
                  and line.split()[0][:2] in ('ii', 'hi'))
