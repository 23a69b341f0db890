# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``gpuops.node.dcgm`` role installs, decided before it changes anything.

Pure functions over the role's variables and what the package manager offers:

- :func:`packages_of` names the DCGM 4 packages of the node's OS family and CUDA major, the exporter's and DCGM 3's,
  from the packaging table (``plans/nvidia_packaging.py``, ``LIBRARIES``);
- :func:`version_candidates` gives the package versions ``dcgm_version`` may be (NVIDIA's two forms);
- :func:`pins` picks the one the sources offer and pins every package to it, the exporter to its own.

``plugins/modules/dcgm_plan.py`` reads the node and calls them. Every error starts with the variable to change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging


def packages_of(family, values, cuda):
    """``(packages, package_manager, error)``: ``packages`` is ``{dcgm, exporter, dcgm3}``, the DCGM 4 packages
    of OS ``family`` for CUDA major ``cuda`` (the profiling module's too with ``dcgm_profiling``), the exporter's
    package (None without ``dcgm_exporter``) and DCGM 3's; ``package_manager`` is ``{name, hold}``."""
    row = nvidia_packaging.library('dcgm', family)
    if row is None or not row.supported:
        known = [r.family for r in nvidia_packaging.LIBRARIES if r.component == 'dcgm' and r.supported]
        return None, None, ('gpuops_dcgm_enabled: gpuops.node.dcgm has no DCGM packages for the OS family %r (known: '
                            '%s); set gpuops_dcgm_enabled: false for this host' % (family, ', '.join(known)))
    names = row.packages
    dcgm = [names['core'], names['cuda'].format(cuda=cuda)]
    if values.get('dcgm_profiling'):
        dcgm += [names['proprietary'], names['proprietary_cuda'].format(cuda=cuda)]
    packages = {'dcgm': dcgm, 'exporter': names['exporter'] if values.get('dcgm_exporter') else None,
                'dcgm3': names['dcgm3']}
    return packages, {'name': nvidia_packaging.MANAGERS[family], 'hold': row.hold}, None


# The CUDA majors NVIDIA builds DCGM 4 for (packaging.cmake: -cuda11, -cuda12, -cuda13)
CUDA_MAJORS = (11, 12, 13)


def known(family):
    """Every DCGM 4 package name of OS ``family`` the role may have installed (each CUDA build, the profiling
    module's, the exporter's), or () without a row."""
    row = nvidia_packaging.library('dcgm', family)
    if row is None:
        return ()
    names = row.packages
    return tuple([names['core'], names['proprietary'], names['exporter']]
                 + [names[part].format(cuda=cuda) for cuda in CUDA_MAJORS for part in ('cuda', 'proprietary_cuda')])


def version_candidates(dcgm_version):
    """The package versions of ``dcgm_version``: a full one (with an epoch or a revision) as given, else NVIDIA's
    two forms, ``1:<version>-1`` (DCGM 4.4 on) and ``1:<version>`` (before), the same on apt and dnf."""
    if ':' in dcgm_version or '-' in dcgm_version:
        return [dcgm_version]
    return ['1:%s-1' % dcgm_version, '1:%s' % dcgm_version]


def exporter_package_version(dcgm_exporter_version):
    """The package version of a dcgm-exporter release ``<DCGM version>-<exporter version>``: ``<exporter>-1``."""
    return dcgm_exporter_version.split('-', 1)[-1] + '-1'


def _variable(packages, missing):
    """The variable to change when the packages ``missing`` are not offered: the DCGM version when the core is, the
    exporter's release when only it is, the CUDA major when a CUDA build is, else the profiling module."""
    core, exporter = packages['dcgm'][0], packages['exporter']
    if core in missing:
        return 'dcgm_version'
    if missing == [exporter]:
        return 'dcgm_exporter_version'
    if any('proprietary' not in name for name in missing if name != exporter):
        return 'dcgm_cuda_major'
    return 'dcgm_profiling'


def pins(packages, offered, values, source, installed=None):
    """``(pins, errors)``: ``{name: package version}`` of every package to install, from ``offered`` (``{name:
    [versions the sources offer]}``). The DCGM packages take the first of :func:`version_candidates` the core
    package is offered (or ``installed``) at; a package installed at its pin needs no offer (a mirror may have pruned
    it). ``source`` says which sources were read (for the message)."""
    installed = installed or {}

    def has(name, version):
        return version in (offered.get(name) or []) or installed.get(name) == version
    core = packages['dcgm'][0]
    candidates = version_candidates(values.get('dcgm_version') or '')
    version = next((c for c in candidates if has(core, c)), candidates[0])
    wanted = dict((name, version) for name in packages['dcgm'])
    if packages['exporter']:
        wanted[packages['exporter']] = exporter_package_version(values.get('dcgm_exporter_version') or '')
    missing = [name for name in sorted(wanted) if not has(name, wanted[name])]
    if not missing:
        return wanted, []
    # a package version given without its epoch (4.6.0-1) is not the offered 1:4.6.0-1: apt and dnf install the
    # version with its epoch only
    epochs = sorted(set(v for name in missing for v in offered.get(name) or []
                        if ':' in v and ':' not in wanted[name] and v.split(':', 1)[1] == wanted[name]))
    return wanted, ['%s: the package sources do not offer %s (%s; offered: %s); set dcgm_repo_url to a mirror of '
                    'NVIDIA\'s CUDA repository for this OS, or dcgm_version / dcgm_exporter_version / dcgm_cuda_major '
                    'to what the sources offer%s'
                    % (_variable(packages, missing), ', '.join('%s=%s' % (name, wanted[name]) for name in missing),
                       source, '; '.join('%s %s' % (name, ', '.join(offered.get(name) or []) or 'none')
                                         for name in sorted(wanted)),
                       '; a package version carries its epoch: %s' % ', '.join(epochs) if epochs else '')]
