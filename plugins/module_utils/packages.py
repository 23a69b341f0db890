# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NVIDIA driver version the package manager has installed, whatever the source.

Every source (Debian's ``nvidia-driver``, Ubuntu's ``nvidia-driver-NNN[-server|-open]``, NVIDIA's CUDA repository,
RHEL's ``nvidia-driver``) ships NVML, ``libnvidia-ml.so.1``, in a package versioned like the driver. The
package that owns it names the installed user space; comparing it with the loaded kernel module's version says
whether a reboot is pending.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

NVML = 'libnvidia-ml.so.1'
# "libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" (dpkg-query -S); diversions start otherwise
_DPKG_OWNER_RE = re.compile(r'^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9]+)?(?:, [^:]+)*: (/\S*/' + re.escape(NVML) + r')$')
_VERSION_RE = re.compile(r'^(?:\d+:)?(\d+(?:\.\d+)+)')


def upstream(version):
    """``1:550.163.01-2~deb13u1`` or ``550.54.15-1.el9`` -> ``550.163.01`` / ``550.54.15``; None if not a version."""
    match = _VERSION_RE.match((version or '').strip())
    return match.group(1) if match else None


def dpkg_owner(text):
    """The package that owns ``libnvidia-ml.so.1`` in ``dpkg-query -S`` output, or None."""
    for line in (text or '').splitlines():
        match = _DPKG_OWNER_RE.match(line.strip())
        if match:
            return match.group(1)
    return None


def read_installed_driver(run, which):
    """``{package, package_version, version}`` of the installed NVIDIA user space, or None when none is.

    ``run(argv)`` returns ``(rc, out, err[, timed_out])`` with text or bytes;
    ``which(name)`` finds a binary (None when absent).
    """
    def text(value):
        return value.decode('utf-8', 'replace') if isinstance(value, bytes) else (value or '')

    if which('dpkg-query'):
        result = run([which('dpkg-query'), '-S', NVML])
        package = dpkg_owner(text(result[1])) if result[0] == 0 else None
        if package is None:
            return None
        result = run([which('dpkg-query'), '-W', '-f=${Version}', package])
        version = text(result[1]).strip() if result[0] == 0 else ''
    elif which('rpm'):
        result = run([which('rpm'), '-q', '--whatprovides', NVML + '()(64bit)', '--qf', '%{NAME} %{VERSION}-%{RELEASE}\\n'])
        lines = [l.split() for l in text(result[1]).splitlines() if len(l.split()) == 2] if result[0] == 0 else []
        if not lines:
            return None
        package, version = lines[0]
    else:
        return None
    return {'package': package, 'package_version': version or None, 'version': upstream(version)}
