# -*- coding: utf-8 -*-
"""A scratch apt root with one local repository as its only source, and the plan module run against it.

``AptRoot(root, repo, stanzas, base, family, repository)``: ``root`` an empty directory, ``repo`` a directory built
by one of tests/repo's apt builders (``repo/``, ``key.asc``), ``stanzas`` its Packages index as {(name, version):
fields}, ``base`` the (name, version, arch) the base image has installed that the packages depend on. apt reads the
root through APT_CONFIG, dpkg-query through a wrapper on the PATH that adds ``--admindir``; nothing of the host's
apt or dpkg state is read or changed. ``simulate`` hands specs to apt-get's solver (``-s``: nothing is installed);
``plan`` runs gpuops.node.nvidia_driver_plan through ansible-playbook on this host with apt pointed at the root.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

from ansible_cli import run_task

C_LOCALE = dict(os.environ, LC_ALL='C')


class AptRoot(object):
    """A scratch apt root with the repository as its only source, and a dpkg status of chosen packages."""

    def __init__(self, root, repo, stanzas, base, family, repository):
        self.root, self.repo, self.stanzas, self.base = root, repo, stanzas, base
        self.family, self.repository = family, repository
        for folder in ('etc/apt/sources.list.d', 'etc/apt/preferences.d', 'etc/apt/apt.conf.d', 'var/lib/dpkg',
                       'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial', 'bin'):
            (root / folder).mkdir(parents=True)
        (root / 'etc/apt/sources.list.d/gpuops-nvidia-driver.sources').write_text(
            'Types: deb\nURIs: file://%s/repo/\nSuites: /\nSigned-By: %s/key.asc\n' % (self.repo, self.repo))
        (root / 'apt.conf').write_text(
            'Dir "%s/";\nDir::State::status "%s/var/lib/dpkg/status";\nAPT::Architecture "amd64";\n'
            'APT::Architectures "amd64";\nDebug::NoLocking "1";\nAPT::Sandbox::User "%s";\n'
            % (root, root, 'root' if os.geteuid() == 0 else 'nobody'))
        # dpkg-query reads the scratch status (apt-cache and apt-mark read APT_CONFIG)
        wrapper = root / 'bin' / 'dpkg-query'
        wrapper.write_text('#!/bin/sh\nexec %s --admindir=%s/var/lib/dpkg "$@"\n' % (shutil.which('dpkg-query'), root))
        wrapper.chmod(0o755)
        self.status([])
        update = self.apt('apt-get', 'update', '--error-on=any')
        assert update.returncode == 0, update.stdout

    def env(self):
        return dict(C_LOCALE, APT_CONFIG=str(self.root / 'apt.conf'),
                    PATH='%s:%s' % (self.root / 'bin', os.environ.get('PATH', '/usr/bin:/bin')))

    def status(self, installed, held=(), site=''):
        """dpkg's status: the base packages, ``installed`` ((name, version) of this repository's packages) and
        ``site``, stanzas of the site's own packages."""
        text = ''.join('Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: %s\nMaintainer: x\n'
                       'Description: x\n\n' % pkg for pkg in self.base) + site
        for name, version in installed:
            fields = self.stanzas[(name, version)]
            keep = [(k, v) for k, v in fields.items() if k not in ('Filename', 'Size', 'MD5sum', 'SHA1', 'SHA256',
                                                                   'SHA512', 'Description-md5', 'Package')]
            text += 'Package: %s\nStatus: %s ok installed\n%s\n\n' % (
                name, 'hold' if name in held else 'install', '\n'.join('%s: %s' % (k, v.replace('\n', '\n '))
                                                                       for k, v in keep))
        (self.root / 'var/lib/dpkg/status').write_text(text)

    def apt(self, *argv):
        return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=self.env(), check=False)

    def simulate(self, install, remove=()):
        """apt-get -s install of the specs, removing ``remove`` (``name-``) in the same transaction."""
        return self.apt('apt-get', '-s', 'install', '--no-install-recommends',
                        *(list(install) + ['%s-' % n for n in remove]))

    def plan(self, tmp, **args):
        """gpuops.node.nvidia_driver_plan through ansible-playbook on this host, apt pointed at the root."""
        task = dict({'family': self.family, 'source': 'mirror', 'repository': self.repository,
                     'kernel_module': 'open', 'fabricmanager': 'absent', 'persistenced': True,
                     'repo_url': 'file://%s/repo/' % self.repo}, **args)
        return run_task(tmp, 'gpuops.node.nvidia_driver_plan', task, {
            'APT_CONFIG': str(self.root / 'apt.conf'), 'PATH': self.env()['PATH'], 'LC_ALL': 'C'})
