# -*- coding: utf-8 -*-
"""An empty RHEL 9 (or 10) root for Debian's dnf and rpm, and stand-ins of both on the PATH that use it.

Debian 12's dnf is 4.14 with libdnf 0.69, the upstream versions RHEL 9 ships; on an empty ``--installroot`` whose
``os-release`` says RHEL 9 (``PLATFORM_ID="platform:el9"``), with ``--releasever=9`` and RHEL 9's stock
``dnf.conf`` (``best=True``), it resolves as RHEL 9's dnf does. ``make_root`` writes that root, the repository
``repo_id`` at ``baseurl`` (gpgcheck off: the stand-in repositories are not signed), Debian's extra dnf plugins
disabled, the versionlock plugin pointed into the root, and ``dnf`` and ``rpm`` wrappers in ``<tmp>/bin`` that add
the root to every call. Put ``<tmp>/bin`` first on the PATH (and ``HOME=<tmp>/home``, where the rpm macros are) and
any program, a module run by ansible-playbook included, reads and changes the root and not the host.

RHEL 10 (``release='10'``): its dnf is dnf 4 too (4.20; NVIDIA's Driver Installation Guide, "Version locking":
"DNF version 4 is the package manager of ... Red Hat Enterprise Linux 10 / Rocky Linux 10"), with the same stock
``dnf.conf``; the root says ``platform:el10`` and dnf runs with ``--releasever=10``. What the root cannot prove:
what changed in dnf between 4.14 and 4.20.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

TOOLS = ('dnf', 'rpm', 'rpmbuild', 'createrepo_c', 'modifyrepo_c')
VERSIONLOCK = '/usr/lib/python3/dist-packages/dnf-plugins/versionlock.py'
RHEL9_DNF_CONF = ('[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\n'
                  'skip_if_unavailable=False\n')
OS_RELEASE = {'9': 'NAME="Red Hat Enterprise Linux"\nVERSION_ID="9.6"\nID="rhel"\nPLATFORM_ID="platform:el9"\n',
              '10': 'NAME="Red Hat Enterprise Linux"\nVERSION_ID="10.0"\nID="rhel"\nPLATFORM_ID="platform:el10"\n'}


def missing():
    """The tools a dnf root needs that this host lacks (``make host`` installs them)."""
    found = [t for t in TOOLS if not shutil.which(t)]
    return found + ([] if os.path.exists(VERSIONLOCK) else ['dnf-plugins-core'])


def requirement():
    """The ``pytestmark`` of a test module that needs a dnf root: skipped without the tools, failed under CI."""
    import pytest  # pylint: disable=import-outside-toplevel
    lacking = missing()
    if lacking and os.environ.get('CI'):
        raise AssertionError('CI needs %s (make host installs them)' % ', '.join(lacking))
    return pytest.mark.skipif(bool(lacking), reason='needs %s' % ', '.join(lacking))


def make_root(tmp, repo_id, baseurl, release='9'):
    """Write the root of RHEL ``release`` (9 or 10) and the wrappers under ``tmp`` (a pathlib.Path); returns
    ``{root, bin, home}``."""
    root, etc, home, bin_dir = (tmp / n for n in ('root', 'etc', 'home', 'bin'))
    for folder in (root / 'etc' / 'dnf' / 'plugins', etc / 'yum.repos.d', etc / 'plugins', home, bin_dir):
        folder.mkdir(parents=True)
    (root / 'etc' / 'os-release').write_text(OS_RELEASE[release])
    (root / 'etc' / 'dnf' / 'plugins' / 'versionlock.list').write_text('')
    (etc / 'dnf.conf').write_text(RHEL9_DNF_CONF)
    (etc / 'yum.repos.d' / (repo_id + '.repo')).write_text(
        '[%s]\nname=%s (stand-in)\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\n' % (repo_id, repo_id, baseurl))
    # Debian's dnf loads its own plugins; the versionlock list does not follow --installroot
    for plugin in ('local', 'post-transaction-actions', 'show-leaves'):
        (etc / 'plugins' / (plugin + '.conf')).write_text('[main]\nenabled=0\n')
    (etc / 'plugins' / 'versionlock.conf').write_text(
        '[main]\nenabled=1\nlocklist=%s/etc/dnf/plugins/versionlock.list\n' % root)
    # Debian's rpm keeps its database under ~/.rpmdb, RHEL's under /var/lib/rpm
    (home / '.rpmmacros').write_text('%_dbpath /var/lib/rpm\n')
    wrappers = {
        'dnf': 'exec %s --installroot=%s --releasever=%s --config=%s --setopt=reposdir=%s --setopt=pluginconfpath=%s '
               '--nogpgcheck "$@"' % (shutil.which('dnf'), root, release, etc / 'dnf.conf', etc / 'yum.repos.d',
                                      etc / 'plugins'),
        'rpm': 'exec %s --root=%s --dbpath=/var/lib/rpm "$@"' % (shutil.which('rpm'), root),
    }
    for name, body in wrappers.items():
        (bin_dir / name).write_text('#!/bin/sh\n%s\n' % body)
        (bin_dir / name).chmod(0o755)
    return {'root': root, 'bin': bin_dir, 'home': home}


class Root(object):
    """An empty RHEL ``release`` root (``make_root``) with ``baseurl`` as the dnf repository ``repo_id``, and the
    environment whose ``dnf`` and ``rpm`` are the root's."""

    def __init__(self, tmp, repo_id, baseurl, release='9'):
        self.tmp = tmp
        self.repo = baseurl
        made = make_root(tmp, repo_id, baseurl, release)
        self.env = dict(os.environ, PATH='%s:%s' % (made['bin'], os.environ['PATH']), HOME=str(made['home']),
                        LC_ALL='C')
        # what a module run by ansible-playbook needs to use the root
        self.task_env = {'PATH': self.env['PATH'], 'HOME': self.env['HOME']}

    def run(self, *args):
        """``dnf -y -q ARGS`` on the root: (exit status, output)."""
        run = subprocess.run(['dnf', '-y', '-q'] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, env=self.env, check=False)
        return run.returncode, run.stdout

    def dnf(self, *args):
        """``dnf -y -q ARGS`` on the root, which must succeed; its output."""
        rc, out = self.run(*args)
        assert rc == 0, (args, out)
        return out

    def installed(self, prefix, epoch=False):
        """{name: version-release} of the installed packages named ``prefix``*, with ``epoch`` its epoch first where
        the package has one (``1:4.4.1-1``, as apt writes it)."""
        form = '%{NAME} %{EPOCHNUM} %{VERSION}-%{RELEASE}\n'
        run = subprocess.run(['rpm', '-qa', '--qf', form], stdout=subprocess.PIPE, universal_newlines=True,
                             env=self.env, check=True)
        rows = [line.split() for line in run.stdout.splitlines() if line.startswith(prefix)]
        return dict((name, '%s:%s' % (num, version) if epoch and num != '0' else version) for name, num, version in rows)
