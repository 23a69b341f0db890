# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the driver-emulation tests: synthetic kernel modules, a fake dpkg database,
bare nodes installed under a temporary root."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import gzip
import json
import lzma
import os
import stat
import struct
import sys

from simhelpers import REPO

from simulator import install_node

INSTALLER = os.path.join(REPO, 'simulator', 'install_node.py')


def elf_module(modinfo, comment=b'GCC: (Debian 12.2.0-14) 12.2.0\x00', rodata=b''):
    """A minimal ELF64 relocatable file with .rodata, .modinfo, .comment and .shstrtab sections."""
    sections = [(b'.rodata', rodata), (b'.modinfo', modinfo), (b'.comment', comment)]
    names = b'\x00' + b''.join(name + b'\x00' for name, _data in sections) + b'.shstrtab\x00'
    body = b''
    offsets = []
    for _name, data in sections + [(b'.shstrtab', names)]:
        offsets.append((64 + len(body), len(data)))
        body += data
    shoff = 64 + len(body)
    count = len(sections) + 2          # the null section first
    header = b'\x7fELF\x02\x01\x01' + b'\x00' * 9
    header += struct.pack('<HHIQQQIHHHHHH', 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, count, count - 1)
    table = b'\x00' * 64
    name_at = 1
    for (name, _data), (offset, size) in zip(sections + [(b'.shstrtab', names)], offsets):
        table += struct.pack('<IIQQQQIIQQ', name_at, 1, 0, 0, offset, size, 0, 0, 1, 0)
        name_at += len(name) + 1
    return header + body + table


def modinfo(version, license_text):
    return ('license=%s\x00version=%s\x00vermagic=6.1.0-28-amd64 SMP preempt mod_unload modversions \x00'
            'srcversion=ABCDEF\x00' % (license_text, version)).encode('ascii')


def write_module(root, kver, name, version, license_text, rodata=b''):
    """lib/modules/<kver>/updates/dkms/<name> (.ko, .ko.xz or .ko.gz by the name)."""
    path = os.path.join(str(root), 'lib', 'modules', kver, 'updates', 'dkms', name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = elf_module(modinfo(version, license_text), rodata=rodata)
    if name.endswith('.xz'):
        data = lzma.compress(data)
    elif name.endswith('.gz'):
        data = gzip.compress(data)
    with open(path, 'wb') as handle:
        handle.write(data)
    return path


def write(root, rel, text=''):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    return path


class FakeDpkg(object):
    """An injectable dpkg-query: ``packages`` {name: version}; ``owners`` {path: package}."""

    def __init__(self, packages=None, owners=None):
        self.packages = dict(packages or {})
        self.owners = dict(owners or {})

    def nvml(self, package, version, path='/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1'):
        self.packages[package] = version
        self.owners[path] = package
        return self

    def __call__(self, args):
        if args[0] == '-S':
            lines = ['%s:amd64: %s' % (pkg, path) for path, pkg in sorted(self.owners.items())
                     if path == args[1] or path.endswith('/' + args[1])]
            return (0, '\n'.join(lines) + '\n') if lines else (1, '')
        if args[:2] == ['-W', '-f=${Version}']:
            return (0, self.packages[args[2]]) if args[2] in self.packages else (1, '')
        if args[0] == '-W':
            held = getattr(self, 'held', ())
            return 0, ''.join('%s  %s\n' % ('hi' if name in held else 'ii', name) for name in sorted(self.packages))
        return 2, ''

    def script(self, path):
        """The same database as a dpkg-query program (GPUOPS_SIM_DPKG_QUERY) for subprocesses."""
        with open(path, 'w') as handle:
            handle.write('#!%s\nimport json, sys\nsys.path.insert(0, %r)\nfrom drivertools import FakeDpkg\n'
                         'db = FakeDpkg(**json.load(open(%r)))\nrc, out = db(sys.argv[1:])\nsys.stdout.write(out)\n'
                         'sys.exit(rc)\n' % (sys.executable, os.path.dirname(os.path.abspath(__file__)),
                                             path + '.json'))
        with open(path + '.json', 'w') as handle:
            json.dump({'packages': self.packages, 'owners': self.owners}, handle)
        os.chmod(path, stat.S_IRWXU)
        return path


def bare_node(tmp_path, profile='h100-sxm-8gpu-ib', monkeypatch=None):
    """A bare node installed under ``tmp_path/node`` (no dpkg-divert: not the real root)."""
    root = str(tmp_path / 'node')
    if monkeypatch is not None:
        monkeypatch.setenv('GPUOPS_SIM_ROOT', root)
        monkeypatch.setenv('GPUOPS_SIM_DPKG_QUERY', str(tmp_path / 'no-dpkg-query'))
        monkeypatch.setenv('GPUOPS_SIM_ALLOW_NONROOT', '1')
    summary = install_node.install(os.path.join(REPO, 'simulator', 'profiles', profile), root, python=sys.executable,
                                   bare=True)
    return root, summary
