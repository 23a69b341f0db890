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


# ---------------------------------------------------------------------------------------------------------------
# What the package manager offers, has installed and holds (read by gpuops.node.nvidia_driver_plan)
# ---------------------------------------------------------------------------------------------------------------

def apt_origin(url):
    """How ``apt-cache madison`` names a repository URL: ``file:///srv/repo/`` -> ``file:/srv/repo``."""
    url = (url or '').rstrip('/')
    if url.startswith('file://'):
        return 'file:' + url[len('file://'):]
    return url


def parse_madison(text, package, origin=None):
    """Versions of ``package`` in ``apt-cache madison PACKAGE`` output, in the order printed; with ``origin`` (a
    repository URL), only those that repository offers (other sources may carry the same package names).

    `` nvidia-driver | 535.216.01-1~deb12u1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages``
    """
    prefix = apt_origin(origin) if origin else None
    found = []
    for line in (text or '').splitlines():
        parts = [p.strip() for p in line.split('|')]
        if len(parts) < 3 or parts[0] != package or not parts[1] or parts[1] in found:
            continue
        where = parts[2].split()[0].rstrip('/') if parts[2].split() else ''
        if prefix is None or where == prefix:
            found.append(parts[1])
    return found


def parse_dpkg_status(text):
    """{package: version} of the installed packages in ``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'``.

    Only packages whose status is ``ii`` (installed) or ``hi`` (held, installed) count; ``rc`` (removed, config
    left) does not.
    """
    installed = {}
    for line in (text or '').splitlines():
        fields = line.split('\t')
        if len(fields) >= 3 and fields[2].strip()[:2] in ('ii', 'hi') and fields[1]:
            installed[fields[0].split(':')[0]] = fields[1]
    return installed


def parse_showhold(text):
    """Package names in ``apt-mark showhold`` output (``name`` or ``name:arch`` per line)."""
    return [line.strip().split(':')[0] for line in (text or '').splitlines() if line.strip()]


def parse_repoquery(text, package):
    """Versions of ``package`` in ``dnf repoquery --qf '%{name} %{epoch}:%{version}-%{release}'`` output."""
    found = []
    for line in (text or '').splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == package:
            version = parts[1][2:] if parts[1].startswith('0:') else parts[1]
            if version not in found:
                found.append(version)
    return found


# ``dnf repoquery --qf`` of REQUIRES_FORMAT: one record per package, its requirements one per line.
REQUIRES_FORMAT = '%{name} %{epoch}:%{version}-%{release}\n%{requires}\n.\n'
# a capability, with the architecture rpm adds for %{?_isa} (``nvidia-driver-libs(x86-64)``, ``(aarch-64)``)
_CAPABILITY = re.compile(r'^([A-Za-z0-9_][A-Za-z0-9_.+-]*)(?:\([a-z0-9_]+-(?:32|64)\))?(?:\s+[<>=]+\s+\S+)?$')


def parse_repoquery_requires(text):
    """The packages of ``dnf repoquery --qf REQUIRES_FORMAT`` output as ``parsers.apt_show`` stanzas: ``{package,
    version, depends, pre_depends}``, ``depends`` a group of one alternative per requirement that names a
    capability (``libnvidia-ml = 3:580.126.20-1.el9``, ``nvidia-kmod``, or ``nvidia-driver-libs(x86-64) =
    3:580.126.20``, read as its name: NVIDIA's specs write ``nvidia-driver-libs%{?_isa}``); files (``/bin/sh``),
    shared objects (``libc.so.6()(64bit)``) and rich dependencies (``(a if b)``), which no package name satisfies,
    are left out. A version without an epoch (``0:``) is written without one, as rpm and the plan do."""
    stanzas = []
    for record in (text or '').split('\n.\n'):
        lines = [line.strip() for line in record.strip('\n').splitlines()]
        if not lines or len(lines[0].split()) != 2:
            continue
        name, version = lines[0].split()
        version = version[2:] if version.startswith('0:') else version
        depends = []
        for line in lines[1:]:
            match = _CAPABILITY.match(line)
            if match and match.group(1) != name:
                depends.append([{'name': match.group(1)}])
        stanzas.append({'package': name, 'version': version, 'depends': depends, 'pre_depends': []})
    return stanzas


def parse_rpm_installed(text):
    """{name: version} from ``rpm -q --qf '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}\\n' NAMES`` (``is not installed`` lines skipped).

    A name rpm lists more than once at one version (a package of two architectures) is that version; at two or more
    versions (a transaction cut short leaves both), the versions sorted and joined by spaces: a string that equals no
    package version, so no pin reads as met and the message shows what is there."""
    versions = {}
    for line in (text or '').splitlines():
        parts = line.split()
        if len(parts) == 2 and ':' in parts[1]:
            epoch, rest = parts[1].split(':', 1)
            version = rest if epoch in ('0', '(none)') else parts[1]
            if version not in versions.setdefault(parts[0], []):
                versions[parts[0]].append(version)
    return dict((name, ' '.join(sorted(found))) for name, found in versions.items())


def parse_versionlock(text):
    """Package names locked in ``dnf versionlock list`` output (``3:nvidia-driver-550.54.15-1.el9.*``)."""
    names = []
    for line in (text or '').splitlines():
        line = line.strip()
        match = re.match(r'^(?:\d+:)?([A-Za-z0-9_+.-]+?)-\d[^-]*-[^-]+$', line)
        if match:
            names.append(match.group(1))
    return names
