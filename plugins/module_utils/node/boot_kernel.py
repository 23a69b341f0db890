# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kernel the node boots next, and the NVIDIA module that kernel would load.

An unattended kernel update installs a kernel the node boots at its next reboot; when DKMS could not build the
driver for it (no headers) or the precompiled module for it is missing, the node comes back without a driver.
``gpu_topology.next_boot`` says so before the reboot:

- ``kernel``: the newest ``/boot/vmlinuz-*`` by dpkg's version order, rescue images left out. Debian's and Ubuntu's
  GRUB (``10_linux``) put the newest kernel first and boot it by default, and RHEL's kernel packages make a new
  kernel the default (``UPDATEDEFAULT=yes``; a debug kernel, ``+debug``, never). What this cannot read: a
  ``GRUB_DEFAULT`` or ``grubby --set-default`` that pins another entry.
- ``running``: the running kernel (``uname -r``).
- ``headers``: whether ``/lib/modules/<kernel>/build`` leads to a directory (the headers DKMS builds against).
- ``module``: the NVIDIA module ``modules.dep`` of that kernel lists (what ``modprobe nvidia`` loads at boot:
  ``nvidia``, Debian's ``nvidia-current`` and ``nvidia-current-open``, ``nvidia-tesla-<branch>``), as a path under
  ``/lib/modules/<kernel>``; null when it lists none.
- ``module_version``: that module's ``version`` (``modinfo -F version``, which reads compressed modules too).
- ``unreadable``: why the rest could not be read (no kernel in ``/boot``, no ``modules.dep``), else null.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.gpuops.node.plugins.module_utils import versions as V
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean, decode

BOOT = '/boot'
MODULES = '/lib/modules'
# the file names (suffix left out) of the NVIDIA module modprobe loads as "nvidia"
MODULE_NAME = re.compile(r'^nvidia(-current|-tesla-[0-9]+)?(-open)?\.ko(\.(xz|zst|gz))?$')
VERSION = re.compile(r'^[0-9]{1,5}(\.[0-9]{1,5}){1,4}$')
# a kernel release as uname -r prints it; another file name in /boot is no kernel of a package (and is never
# passed on: node strings reach the controller's reports)
RELEASE = re.compile(r'^[0-9][A-Za-z0-9._+~-]{0,126}[A-Za-z0-9]$')
PATH = re.compile(r'^(?!/)(?!.*\.\.)[A-Za-z0-9._+~/-]{1,255}$')
DEP_MAX = 16 * 1024 * 1024   # a modules.dep is some 100 kB


def boot_kernels(running, boot_dir=BOOT):
    """``{boot, running, headers_for}``: the kernel the node boots next (the newest in ``boot_dir`` by dpkg's order;
    rescue images left out; None when there is none), the running one, and those of the two that are in
    ``boot_dir``: the kernels DKMS must build for."""
    names = [n[len('vmlinuz-'):] for n in os.listdir(boot_dir) if n.startswith('vmlinuz-')] \
        if os.path.isdir(boot_dir) else []
    # rescue images and RHEL's debug kernels (never the default kernel-install makes) left out
    names = [n for n in names if 'rescue' not in n and not n.endswith('+debug') and RELEASE.match(n)]
    boot = sorted(names, key=V.DpkgKey)[-1] if names else None
    headers = [k for k in ([boot] + ([running] if running in names else [])) if k]
    return {'boot': boot, 'running': running, 'headers_for': sorted(set(headers), key=V.DpkgKey)}


def modules_dep_module(text):
    """The first NVIDIA module ``modules.dep`` lists (its path, relative to the kernel's module directory)."""
    for line in text.splitlines():
        path = line.split(':', 1)[0].strip()
        if PATH.match(path) and MODULE_NAME.match(os.path.basename(path)):
            return path
    return None


def _result(kernel=None, running=None, headers=None, module=None, module_version=None, unreadable=None):
    return {'kernel': kernel, 'running': running, 'headers': headers, 'module': module,
            'module_version': module_version, 'unreadable': unreadable}


def read_live(run, running, modinfo, boot_dir=BOOT, modules_dir=MODULES, warnings=None):
    """``next_boot`` of the node: ``run(argv)`` returns ``(rc, out, err[, timed_out])`` (bytes); ``modinfo`` is the
    binary's path or None (the version is then not read, and a warning says so)."""
    warnings = [] if warnings is None else warnings
    running = running if running and RELEASE.match(running) else None
    kernel = boot_kernels(running, boot_dir)['boot']
    if kernel is None:
        return _result(running=running, unreadable='no kernel image (vmlinuz-*) in %s' % boot_dir)
    base = os.path.join(modules_dir, kernel)
    headers = os.path.isdir(os.path.join(base, 'build'))
    try:
        with open(os.path.join(base, 'modules.dep'), 'rb') as handle:
            dep = decode(handle.read(DEP_MAX), os.path.join(base, 'modules.dep'), warnings)
    except (IOError, OSError):
        return _result(kernel, running, headers,
                       unreadable='%s has no modules.dep (depmod never ran for it): modprobe finds no module there'
                       % base)
    module = modules_dep_module(dep)
    if module is None:
        return _result(kernel, running, headers)
    version = None
    if modinfo is None:
        warnings.append('modinfo was not found on the node: the version of %s is not read' % module)
    else:
        result = run([modinfo, '-F', 'version', os.path.join(base, module)])
        rc, out = result[0], decode(result[1] or b'', 'modinfo', warnings).strip()
        if rc == 0 and VERSION.match(out):
            version = out
        else:
            warnings.append('modinfo -F version %s: exit %s, %r' % (module, rc, clean(out)[:80]))
    return _result(kernel, running, headers, module, version)
