# -*- coding: utf-8 -*-
"""parse_repoquery_requires: what ``dnf repoquery --qf REQUIRES_FORMAT`` prints, read as apt_show stanzas.

The first output is what Debian's real dnf 4.14 printed for the stand-in of NVIDIA's rhel10 repository
(tests/repo/build_rhel_repo.py --rhel 10; tests/unit/repos/test_rhel_repo.py runs it live). The second adds, by
hand, the kinds of requirement NVIDIA's real packages also carry (a file, shared objects, a rich dependency, an
unversioned capability, a requirement on itself, the architecture %{?_isa} adds): what it cannot prove is that real
packages print no other form.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.node import packages as node_packages

STAND_IN = ('kmod-nvidia-open-dkms 3:580.126.20-1.el10\nnvidia-kmod-common = 3:580.126.20\n.\n\n'
            'nvidia-driver-cuda 3:580.126.20-1.el10\nlibnvidia-ml = 3:580.126.20-1.el10\n'
            'nvidia-driver = 3:580.126.20-1.el10\nnvidia-persistenced = 3:580.126.20-1.el10\n.\n\n')


def test_the_format_is_the_one_the_output_is_read_with():
    assert node_packages.REQUIRES_FORMAT == '%{name} %{epoch}:%{version}-%{release}\n%{requires}\n.\n'


def test_each_package_with_its_capabilities():
    stanzas = node_packages.parse_repoquery_requires(STAND_IN)
    assert [(s['package'], s['version']) for s in stanzas] == [
        ('kmod-nvidia-open-dkms', '3:580.126.20-1.el10'), ('nvidia-driver-cuda', '3:580.126.20-1.el10')]
    assert stanzas[1]['depends'] == [[{'name': 'libnvidia-ml'}], [{'name': 'nvidia-driver'}],
                                     [{'name': 'nvidia-persistenced'}]]
    assert all(s['pre_depends'] == [] for s in stanzas)


def test_files_shared_objects_rich_dependencies_and_itself_are_left_out():
    text = ('nvidia-fabricmanager 0:580.126.20-1\n/bin/sh\nlibc.so.6()(64bit)\nlibc.so.6(GLIBC_2.34)(64bit)\n'
            '(nvidia-driver if kernel)\nsystemd\nnvidia-fabricmanager = 580.126.20-1\nlibnvidia-nscq >= 580\n.\n')
    (stanza,) = node_packages.parse_repoquery_requires(text)
    assert stanza['version'] == '580.126.20-1'
    assert stanza['depends'] == [[{'name': 'systemd'}], [{'name': 'libnvidia-nscq'}]]


def test_the_architecture_of_isa_requirements_is_dropped_from_the_name():
    # NVIDIA's specs require nvidia-driver-libs%{?_isa}: x86-64 on x86_64, aarch-64 on sbsa (Grace) nodes
    text = ('nvidia-driver 3:580.126.20-1.el9\nnvidia-driver-libs(x86-64) = 3:580.126.20\n'
            'libnvidia-cfg(aarch-64) = 3:580.126.20-1.el9\nlibnvidia-ml(x86-32)\n.\n')
    (stanza,) = node_packages.parse_repoquery_requires(text)
    assert stanza['depends'] == [[{'name': 'nvidia-driver-libs'}], [{'name': 'libnvidia-cfg'}],
                                 [{'name': 'libnvidia-ml'}]]


def test_a_package_without_requirements_and_noise():
    assert node_packages.parse_repoquery_requires('') == []
    text = 'nvidia-kmod-common 3:590.48.01-1.el10\n\n.\nLast metadata expiration check: 0:00:01 ago\n.\n'
    assert node_packages.parse_repoquery_requires(text) == [
        {'package': 'nvidia-kmod-common', 'version': '3:590.48.01-1.el10', 'depends': [], 'pre_depends': []}]
