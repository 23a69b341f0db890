# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the node's package manager offers, has installed and holds: apt and dpkg, or dnf and rpm.

    manager = PackageManager(module, repo_id='gpuops-nvidia-driver')   # apt when apt-cache and dpkg-query exist
    manager.available('libnccl')      # the versions the sources offer, newest first as the tool lists them
    manager.installed(['libnccl'])    # {name: version} of those installed
    manager.held()                    # the held (apt-mark) or locked (dnf versionlock) names

Every command runs through ``command.py``; a failure fails the module with its sentence. The outputs are read by
the parsers of ``node/packages.py``, ``parsers/apt_show.py`` and ``parsers/dnf_module.py``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.node import packages as node_packages
from ansible_collections.gpuops.node.plugins.module_utils.parsers import apt_show as parsers_apt_show
from ansible_collections.gpuops.node.plugins.module_utils.parsers import dnf_module as parsers_dnf_module


class PackageManager(object):
    """The node's package manager: ``name`` (``apt`` or ``dnf``, what the OS family uses) or, without it, apt when
    ``apt-cache`` and ``dpkg-query`` are on the PATH, else dnf and rpm."""

    def __init__(self, module, repo_id=None, name=None, fail=None):
        self.module = module
        self.repo_id = repo_id
        # a failed command or an unreadable output: fail(message), by default the module fails with it
        self.fail = fail or (lambda message: module.fail_json(msg=message))
        has_apt = module.get_bin_path('apt-cache') is not None and module.get_bin_path('dpkg-query') is not None
        self.apt = has_apt if name is None else name == 'apt'
        needed = (['apt-cache', 'dpkg-query'] if self.apt else ['dnf', 'rpm']) if name else []
        missing = [tool for tool in needed if module.get_bin_path(tool) is None]
        if missing:
            self.fail('%s not found on the node (the package manager of its OS family is %s)'
                      % (', '.join(missing), name))
        if not self.apt and module.get_bin_path('rpm') is None:
            self.fail('neither apt/dpkg nor rpm/dnf found on the node')

    def run(self, argv, allow=(0,)):
        result = command.check(self.module, argv, allow, fail=self.fail)
        return result.rc, result.out

    def available(self, package, origin=None, repo=None):
        """The versions of ``package`` the sources offer: on apt those of ``origin`` (a URL) when given, on dnf those
        of the repository ``repo`` (an id) when given; the plan's own repository (``repo_id``) is read with its
        modular filtering off."""
        if self.apt:
            return node_packages.parse_madison(self.run(['apt-cache', 'madison', package])[1], package, origin)
        return self._dnf_versions([package], repo)[package]

    def _repoquery(self, repo=None):
        """``dnf repoquery`` of the available packages, the plan's own repository (``repo_id``) read with its modular
        filtering off; of the repository ``repo`` (an id) alone when given."""
        hotfixes = ['--setopt=%s.module_hotfixes=true' % self.repo_id] if self.repo_id else []
        only = ['--repo', repo] if repo else []
        return ['dnf', '-q', 'repoquery', '--available'] + hotfixes + only

    def _dnf_versions(self, names, repo=None):
        """{name: [versions]} of ``names`` that dnf offers (of ``repo`` alone when given), read with one repoquery."""
        out = self.run(self._repoquery(repo) + ['--qf', '%{name} %{epoch}:%{version}-%{release}'] + list(names))[1]
        return dict((name, node_packages.parse_repoquery(out, name)) for name in names)

    def offered(self, names, origin=None):
        """{name: [versions]} of ``names``, read with one ``apt-cache madison`` (of ``origin``, a URL, when given),
        or one ``dnf repoquery`` of the plan's own repository."""
        if not names:
            return {}
        if self.apt:
            out = self.run(['apt-cache', 'madison'] + list(names))[1]
            return dict((name, node_packages.parse_madison(out, name, origin)) for name in names)
        return self._dnf_versions(names, self.repo_id)

    def show(self, specs):
        """The stanzas (``parsers.apt_show``'s form) of ``name=version`` specs: ``apt-cache show``, or the
        requirements ``dnf repoquery`` lists of the plan's own repository; a spec the tool does not know is left out
        (apt exits 100 when it knows none)."""
        if not specs:
            return []
        if not self.apt:
            dnf_specs = [spec.replace('=', '-', 1) for spec in specs]
            out = self.run(self._repoquery(self.repo_id) + ['--qf', node_packages.REQUIRES_FORMAT] + dnf_specs)[1]
            return node_packages.parse_repoquery_requires(out)
        _rc, out = self.run(['apt-cache', 'show'] + list(specs), allow=(0, 100))
        try:
            return parsers_apt_show.parse_show(out)
        except ParseError as exc:
            self.fail(str(exc))

    def installed_matching(self, pattern):
        """{name: version} of the installed packages whose names match the dpkg-query ``pattern`` (apt only)."""
        _rc, out = self.run(['dpkg-query', '-W', '-f=${Package}\t${Version}\t${db:Status-Abbrev}\n', pattern],
                            allow=(0, 1))
        return node_packages.parse_dpkg_status(out)

    def module_streams(self, name):
        """The ``dnf module list`` rows of module ``name`` (None on apt; empty when no repository has it)."""
        if self.apt:
            return None
        result = command.check(self.module, ['dnf', '-q', 'module', 'list', name], allowed=(0, 1), fail=self.fail)
        if result.rc == 1:
            if parsers_dnf_module.NO_MODULES in (result.err or '') + (result.out or ''):
                return []
            self.fail(command.failure(result))
        try:
            return parsers_dnf_module.parse_module_list(result.out, name)
        except ParseError as exc:
            self.fail(str(exc))

    def installed(self, names):
        if not names:
            return {}
        if self.apt:
            # exit 1 names packages dpkg does not know; the others are still printed
            _rc, out = self.run(['dpkg-query', '-W', '-f=${Package}\t${Version}\t${db:Status-Abbrev}\n'] + names,
                                allow=(0, 1))
            return node_packages.parse_dpkg_status(out)
        # rpm -q exits with the number of the packages it does not know (each named on standard output)
        _rc, out = self.run(['rpm', '-q', '--qf', '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}\n'] + names,
                            allow=tuple(range(min(len(names), 255) + 1)))
        return node_packages.parse_rpm_installed(out)

    def held(self):
        if self.apt:
            return node_packages.parse_showhold(self.run(['apt-mark', 'showhold'])[1])
        rc, out = self.run(['dnf', '-q', 'versionlock', 'list'], allow=(0, 1))
        return node_packages.parse_versionlock(out) if rc == 0 else []
