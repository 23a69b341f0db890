# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA's driver packaging per OS family, source and branch range: the one table, with its sources.

``REPOSITORIES`` are NVIDIA's CUDA repositories (``<os>/<arch>/`` under developer.download.nvidia.com): the key that
signs each and the branches each carries. ``DRIVER`` has a row per (OS family, source, branch range): the packages
of each kernel module flavour, the package that carries nvidia-persistenced, the fabric manager, NSCQ and IMEX
packages by branch, the pinning packages NVIDIA provides and, for the modular RHEL repositories, the module stream.
``supported`` says whether the nvidia_driver role installs that row today; ``gap`` says what it does not do yet.
The nvidia_driver_plan module reads its package lists from here (``driver_packages``); the role names none.
Beyond the packages a row names, the plan installs and holds every package they depend on that the source offers
at exactly the driver's package version, read from the repository's own metadata (the exact-version closure).
``persistenced`` is ``{name, versioned}``: versioned packages follow the driver's package version. ``pinning``
names NVIDIA's pinning packages, most exact first: the plan installs the first one the source offers, in its own
transaction before the driver (guide-ubuntu).

Every row names its ``sources`` (keys of ``SOURCES``): NVIDIA's Driver Installation Guide, NVIDIA's own
installers (NVIDIA/gpu-driver-container at a commit), the distributions' packaging, and public scripts or logs
that quote real package metadata, each with how sure it is. docs/packaging.md is generated from this table
(tests/scripts/packaging_table.py), and so is the NVIDIA driver column of the README's platform table
(tests/scripts/platforms_table.py).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections

# How sure a source is: confirmed (NVIDIA's document or code, the distribution's own metadata) or likely (a third
# party quoting real apt, dpkg or dnf output, file names or URLs).
SOURCES = collections.OrderedDict([
    ('guide-recent-updates', (
        'confirmed', 'NVIDIA Driver Installation Guide, "Recent Updates" '
        '(docs.nvidia.com/datacenter/tesla/driver-installation-guide/): "Starting with branch 590, the Ubuntu '
        'packages will be renamed by removing the branch designation from the package name. Switching branches, '
        'installing specific driver versions and specific upgrade / downgrade requirements will be supported through '
        'these version locking (pinning) packages." and "Driver pinning packages have been introduced for Debian and '
        'Ubuntu"; table "Ubuntu 590 package renames" (nvidia-dkms-580-open -> nvidia-dkms-open, '
        'libnvidia-compute-580 -> libnvidia-compute, ...)')),
    ('guide-ubuntu', (
        'confirmed', 'NVIDIA Driver Installation Guide, Ubuntu: "apt install nvidia-driver-pinning-<branch>" or '
        '"-<version>", "Install the pinning package before the driver"; compute-only system: "apt -V install '
        'libnvidia-compute nvidia-dkms-open" (open), "libnvidia-compute nvidia-dkms" (proprietary)')),
    ('guide-rhel', (
        'confirmed', 'NVIDIA Driver Installation Guide, Red Hat Enterprise Linux 8/9 and Rocky: "dnf module enable '
        'nvidia-driver:open-dkms" (the newest) or "nvidia-driver:<branch>-open" / "<branch>-dkms" (a branch), then '
        '"dnf install nvidia-open" or "cuda-drivers"; RHEL 10 has no module: "dnf versionlock"')),
    ('gdc-ubuntu', (
        'confirmed', 'NVIDIA/gpu-driver-container@06a208ca ubuntu22.04/precompiled/nvidia-driver:20-75: '
        '"if [ "$DRIVER_BRANCH" -ge "580" ]; then fabricmanager_package_name=nvidia-fabricmanager else '
        'fabricmanager_package_name=nvidia-fabricmanager-${DRIVER_BRANCH}", the same split for libnvidia-nscq and '
        'nvidia-imex (>= 550), each installed "=${DRIVER_VERSION}*" and held (apt-mark hold)')),
    ('gdc-ubuntu2604', (
        'confirmed', 'NVIDIA/gpu-driver-container@06a208ca ubuntu26.04/install.sh:45-80: '
        '"apt-get install -y --no-install-recommends nvidia-driver-pinning-${DRIVER_VERSION}", then '
        'nvidia-headless-no-dkms-open, nvidia-fabricmanager, libnvidia-nscq, nvidia-imex without the branch')),
    ('gdc-rhel', (
        'confirmed', 'NVIDIA/gpu-driver-container@78fa4ac (2025-08-04, "add driver 580.65.06") rhel8/rhel9 '
        'install.sh: "if [ "$DRIVER_BRANCH" -ge "580" ]; then dnf install -y nvidia-fabricmanager-${DRIVER_VERSION}-1 '
        'else ... nvidia-fabric-manager-..."; @06a208ca rhel9/install.sh:129 "dnf module enable -y '
        'nvidia-driver:${DRIVER_BRANCH}-dkms"')),
    ('hpc-rhel', (
        'confirmed', 'linux-system-roles/hpc@795f3858 vars/RedHat_9.yml:26 "__hpc_nvidia_driver_stream: 580-dkms", '
        'tasks/main.yml:421-445: dnf module reset, then "dnf module enable nvidia-driver:580-dkms"')),
    ('cuda-repo-keys', (
        'confirmed', 'NVIDIA/cuda-repo-management#4 (the 2022 key 3bf863cc, EB69 3B30 35CD 5710 E231 E123 A4B4 6996 '
        '3BF8 63CC, and D42D0685 for RHEL); #39 (maintainer, 2026-02-02: NVIDIA tries "to avoid rotating GPG keys for '
        'existing repos", only Debian 13 got a new key)')),
    ('debian13-key', (
        'confirmed', 'the debian13 repository key 8793F200.pub, fingerprint 0218 2E60 104F CDC2 6EAE 1B85 97A5 D4CB '
        '8793 F200, uid "Kitmaker (Debian 13 Trixie) <kitmaker@nvidia.com>" (four independent public copies)')),
    ('debian13-no-580', (
        'likely', 'NVIDIA/cuda-repo-management#40 (2026-02-02) and #38 (open on 2026-08-04): "the new debian 13 repo '
        'do not have the previous 580 LTS drivers"; public debian13 installs use 590, 595 and 615')),
    ('debian-archive', (
        'confirmed', "Debian's nvidia-graphics-drivers (bookworm 535.261.03-1, trixie 550.163.01-2), apt-cache show: "
        'nvidia-smi, libnvidia-ml1, libcuda1 and nvidia-kernel-support Depend on the exact version through '
        'nvidia-alternative (= V); the dkms packages on firmware-nvidia-gsp (= upstream); Debian packages no '
        'fabric manager')),
    ('dataproc-debian', (
        'likely', 'GoogleCloudDataproc/initialization-actions@faad961 gpu/install_gpu_driver.sh:1535-1555, a pinned '
        'install from NVIDIA\'s debian12 repository: firmware-nvidia-gsp, nvidia-smi, nvidia-alternative, '
        'nvidia-kernel-open-dkms, nvidia-kernel-support, nvidia-modprobe, libnvidia-ml1, each "=${DRIVER_VERSION}-1"')),
    ('ubuntu-580-names', (
        'likely', 'real dpkg -l and .deb manifests from NVIDIA\'s ubuntu2204/ubuntu2404 repositories: '
        'libnvidia-compute-580, nvidia-dkms-580[-open], nvidia-utils-580, nvidia-compute-utils-580, '
        'nvidia-kernel-common-580, nvidia-firmware-580 at 580.x-0ubuntu1 (to 580.105.08) and 580.x-1ubuntu1 (from '
        '580.126.09); "libnvidia-decode-580 : Depends: libnvidia-compute-580 (= 580.126.20-1ubuntu1)"')),
    ('ubuntu-pinning', (
        'likely', 'apt-cache show and apt search on NVIDIA\'s Ubuntu repositories: "Package: '
        'nvidia-driver-pinning-580", "Provides: nvidia-driver-pinning", "Conflicts: nvidia-driver-pinning", '
        '"nvidia-driver-pinning-610 610-2ubuntu1 all", "nvidia-driver-pinning-595.71.05 595.71.05-1ubuntu1 all"; it '
        'installs /etc/apt/preferences.d/nvidia-driver-pin at Pin-Priority 1000')),
    ('rhel-fm-names', (
        'confirmed', 'NVIDIA/gpu-driver-container rhel8/rhel9 install.sh history: nvidia-fabricmanager-<branch> '
        'before 460, nvidia-fabric-manager from 460 to 575, nvidia-fabricmanager from 580; libnvidia-nscq and '
        'nvidia-imex drop the -<branch> suffix at 580')),
    ('guide-version-locking', (
        'confirmed', 'NVIDIA Driver Installation Guide, "Version locking" '
        '(docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html): "DNF version 4 is the '
        'package manager of the following distributions: Red Hat Enterprise Linux 8 / Rocky Linux 8 / Oracle Linux '
        '8, Red Hat Enterprise Linux 9 / ..., Red Hat Enterprise Linux 10 / Rocky Linux 10, ..."; "Make sure the '
        'python3-dnf-plugin-versionlock package is installed"; "Make sure every package that you want to lock onto a '
        'specific branch has the appropriate line"; "Kernel Modules", table "Open GPU kernel module installation": '
        'RHEL 10, AlmaLinux 10, Rocky Linux 10 "dnf install nvidia-open" (the newest), "dnf versionlock '
        '\\*nvidia\\*580\\*" then "dnf install nvidia-open" (a branch), with no module')),
    ('rhel10-repo', (
        'likely', 'public .repo files and install scripts for RHEL 10: "baseurl=https://developer.download.nvidia.com/'
        'compute/cuda/repos/rhel10/x86_64", "gpgkey=.../rhel10/x86_64/CDF6BA43.pub", then "dnf install -y dkms '
        'kmod-nvidia-open-dkms nvidia-driver-cuda" with no module enabled; NVIDIA\'s DCGM documentation lists RHEL '
        '10 among its platforms')),
    ('rhel-streams', (
        'confirmed', 'dnf module list nvidia-driver in public logs and NVIDIA/yum-packaging-precompiled-kmod#63, #68: '
        'a stream per branch and flavour (<branch>, <branch>-dkms, <branch>-open) plus latest, latest-dkms and '
        'open-dkms [d] (the default); packages at epoch 3, e.g. nvidia-driver-3:595.71.05-1.el9')),
    ('nccl-packaging', (
        'confirmed', 'NVIDIA/nccl@1672c857 pkg/redhat/nccl.spec.in: "Name: libnccl", "Release: '
        '${pkg:Revision}+cuda${cuda:Major}.${cuda:Minor}", "%package devel" with "Requires: libnccl >= '
        '${nccl:Major}.${nccl:Minor}.${nccl:Patch}" (not the exact version), "%package static"; @804c1f5a '
        'pkg/debian/control.in: "Package: libnccl@NCCL_MAJOR@", "Package: libnccl-dev" with "Depends: '
        'libnccl@NCCL_MAJOR@ (= ${binary:Version})"')),
    ('dcgm-packaging', (
        'confirmed', 'NVIDIA/DCGM@72fa3fe (4.6.0) CMakeLists.txt:17 "project(datacenter-gpu-manager-4 VERSION 4.6.0)", '
        ':892 "set(CPACK_RPM_PACKAGE_EPOCH 1)"; cmake/packaging.cmake:272 "set(CPACK_RPM_PACKAGE_RELEASE 1)" (no dist '
        'tag), :278-287 the names -core, -cuda11/12/13, -devel (-dev on deb), :290 "set(CPACK_RPM_CORE_PACKAGE_CONFLICTS '
        '"datacenter-gpu-manager")" (no Obsoletes), :340-342 each cudaNN requiring the core "= '
        '${CPACK_RPM_PACKAGE_EPOCH}:${CPACK_RPM_PACKAGE_VERSION}-${CPACK_RPM_PACKAGE_RELEASE}"; docker/Dockerfile.ubi9:33 '
        '"dnf install --assumeyes datacenter-gpu-manager-4-cuda13-${DCGM_VERSION}-1"; DCGM 3 (v3.3.9 packaging.cmake): '
        'datacenter-gpu-manager at epoch 1, release 1. The -proprietary names from public install scripts and '
        'repository listings (4.6.1). DCGM 4.7 splits the packages (libdcgm, nv-hostengine, dcgmi, -module-*) and '
        'makes -core a metapackage (repository listings, not NVIDIA\'s code): not in this row')),
    ('dcgm-exporter-package', (
        'likely', 'file names in NVIDIA\'s rhel8 repository quoted by public PKGBUILDs '
        '(datacenter-gpu-manager-exporter-4.6.0-1.x86_64.rpm) and Debian repositories '
        '(datacenter-gpu-manager-exporter_4.8.2-1_amd64.deb); NVIDIA\'s DCGM docs, "Install DCGM Exporter": "RPM and '
        'Debian package versions identify the exporter version", "Keep the package versions paired during upgrades". '
        'Its epoch and Requires are unpublished')),
    ('role-distro-ubuntu', (
        'confirmed', "Canonical's nvidia-graphics-drivers-<branch>-server packages in the Ubuntu archive "
        '(nvidia-dkms-<branch>-server[-open], nvidia-headless-<branch>-server[-open], nvidia-utils-<branch>-server, '
        'nvidia-compute-utils-<branch>-server), and nvidia-fabricmanager-<branch> there')),
])

Repository = collections.namedtuple('Repository', 'os family release key fingerprint min_branch note sources')

# NVIDIA's CUDA repositories the role knows (x86_64, and sbsa for the Ubuntu and RHEL ones).
REPOSITORIES = (
    Repository('ubuntu2204', 'Ubuntu', '22.04', '3bf863cc.pub', 'EB693B3035CD5710E231E123A4B469963BF863CC', None,
               'DGX OS 6', ('cuda-repo-keys',)),
    Repository('ubuntu2404', 'Ubuntu', '24.04', '3bf863cc.pub', 'EB693B3035CD5710E231E123A4B469963BF863CC', None,
               'DGX OS 7', ('cuda-repo-keys',)),
    Repository('debian12', 'Debian', '12', '3bf863cc.pub', 'EB693B3035CD5710E231E123A4B469963BF863CC', None, '',
               ('cuda-repo-keys',)),
    Repository('debian13', 'Debian', '13', '8793F200.pub', '02182E60104FCDC26EAE1B8597A5D4CB8793F200', 590,
               'a new key; no 580 driver', ('debian13-key', 'debian13-no-580')),
    Repository('rhel8', 'RedHat', '8', 'D42D0685.pub', None, None, 'modular: nvidia-driver streams',
               ('cuda-repo-keys', 'rhel-streams')),
    Repository('rhel9', 'RedHat', '9', 'D42D0685.pub', None, None, 'modular: nvidia-driver streams',
               ('cuda-repo-keys', 'rhel-streams')),
    Repository('rhel10', 'RedHat', '10', 'CDF6BA43.pub', None, None,
               'no module streams: the version locks alone hold a branch, on every package of the driver\'s version',
               ('rhel10-repo', 'guide-rhel', 'guide-version-locking')),
)

Driver = collections.namedtuple('Driver', 'family source branches packages persistenced fabricmanager nscq imex '
                                          'pinning stream supported gap sources')

# Fabric manager (and NSCQ, IMEX) names by branch: the first entry whose since_branch the target reaches.
_FM_APT = ({'name': 'nvidia-fabricmanager', 'since_branch': 580},
           {'name': 'nvidia-fabricmanager-{branch}', 'since_branch': 0})
_NSCQ_APT = ({'name': 'libnvidia-nscq', 'since_branch': 580}, {'name': 'libnvidia-nscq-{branch}', 'since_branch': 0})
_IMEX_APT = ({'name': 'nvidia-imex', 'since_branch': 580}, {'name': 'nvidia-imex-{branch}', 'since_branch': 550})
# NVIDIA's debian12 repository rebuilds Debian's packaging: the libraries and programs Depend on nvidia-alternative
# at their exact version, libcuda1 on libnvidia-ptxjitcompiler1 and libnvidia-pkcs11-openssl3 too; every one is
# named, so that an older version installs (apt takes the newest of a package left unnamed)
_DEBIAN_REPO_COMMON = ('nvidia-kernel-support', 'firmware-nvidia-gsp', 'nvidia-driver-cuda', 'nvidia-smi',
                       'libnvidia-ml1', 'libcuda1', 'nvidia-alternative', 'libnvidia-ptxjitcompiler1',
                       'libnvidia-pkcs11-openssl3', 'nvidia-modprobe')
_DEBIAN_REPO = {'open': ('nvidia-kernel-open-dkms',) + _DEBIAN_REPO_COMMON,
                'proprietary': ('nvidia-kernel-dkms',) + _DEBIAN_REPO_COMMON}

# NVIDIA's modular RHEL 8/9 repositories: the module and the stream of a branch per kernel module flavour. Only the
# default stream's packages (open-dkms, the newest branch) are visible to dnf until a branch's stream is enabled, and
# each branch stream lists every version of its branch (guide-rhel, gdc-rhel, hpc-rhel, rhel-streams). The rhel10
# repository has no module: the plan finds no stream there and enables none (guide-version-locking).
RHEL_STREAMS = {'module': 'nvidia-driver', 'open': '{branch}-open', 'proprietary': '{branch}-dkms'}
# NVIDIA's repositories that have those streams
MODULAR = ('rhel8', 'rhel9')

DRIVER = (
    Driver('Ubuntu', 'distro', (0, None),
           {'open': ('nvidia-dkms-{branch}-server-open', 'nvidia-headless-{branch}-server-open',
                     'nvidia-utils-{branch}-server'),
            'proprietary': ('nvidia-dkms-{branch}-server', 'nvidia-headless-{branch}-server',
                            'nvidia-utils-{branch}-server')},
           {'name': 'nvidia-compute-utils-{branch}-server', 'versioned': True},
           ({'name': 'nvidia-fabricmanager-{branch}', 'since_branch': 0},),
           (), (), (), None, True, '', ('role-distro-ubuntu',)),
    Driver('Ubuntu', 'cuda_repo', (0, 580),
           {'open': ('nvidia-dkms-{branch}-open', 'libnvidia-compute-{branch}', 'nvidia-utils-{branch}'),
            'proprietary': ('nvidia-dkms-{branch}', 'libnvidia-compute-{branch}', 'nvidia-utils-{branch}')},
           {'name': 'nvidia-compute-utils-{branch}', 'versioned': True}, _FM_APT, _NSCQ_APT, _IMEX_APT,
           ('nvidia-driver-pinning-{version}', 'nvidia-driver-pinning-{branch}'), None, True, '',
           ('ubuntu-580-names', 'gdc-ubuntu', 'ubuntu-pinning')),
    Driver('Ubuntu', 'cuda_repo', (590, None),
           {'open': ('nvidia-dkms-open', 'libnvidia-compute', 'nvidia-utils'),
            'proprietary': ('nvidia-dkms', 'libnvidia-compute', 'nvidia-utils')},
           {'name': 'nvidia-compute-utils', 'versioned': True}, ({'name': 'nvidia-fabricmanager', 'since_branch': 0},),
           ({'name': 'libnvidia-nscq', 'since_branch': 0},), ({'name': 'nvidia-imex', 'since_branch': 0},),
           ('nvidia-driver-pinning-{version}', 'nvidia-driver-pinning-{branch}'), None, True, '',
           ('guide-recent-updates', 'guide-ubuntu', 'gdc-ubuntu2604', 'ubuntu-pinning')),
    Driver('Debian', 'distro', (0, None),
           {'open': ('nvidia-open-kernel-dkms', 'nvidia-open-kernel-support', 'firmware-nvidia-gsp', 'nvidia-smi',
                     'libnvidia-ml1', 'libcuda1'),
            'proprietary': ('nvidia-kernel-dkms', 'nvidia-kernel-support', 'firmware-nvidia-gsp', 'nvidia-smi',
                            'libnvidia-ml1', 'libcuda1')},
           {'name': 'nvidia-persistenced', 'versioned': False}, (), (), (), (), None, True,
           'Debian packages no fabric manager',
           ('debian-archive',)),
    Driver('Debian', 'cuda_repo', (0, None), _DEBIAN_REPO, {'name': 'nvidia-persistenced', 'versioned': True},
           _FM_APT, _NSCQ_APT, _IMEX_APT, ('nvidia-driver-pinning-{version}', 'nvidia-driver-pinning-{branch}'), None,
           True, '',
           ('dataproc-debian', 'debian-archive', 'guide-recent-updates', 'gdc-ubuntu')),
    Driver('RedHat', 'cuda_repo', (0, None),
           {'open': ('kmod-nvidia-open-dkms', 'nvidia-driver', 'nvidia-driver-cuda', 'libnvidia-ml'),
            'proprietary': ('kmod-nvidia-latest-dkms', 'nvidia-driver', 'nvidia-driver-cuda', 'libnvidia-ml')},
           {'name': 'nvidia-persistenced', 'versioned': True},
           ({'name': 'nvidia-fabricmanager', 'since_branch': 580}, {'name': 'nvidia-fabric-manager', 'since_branch': 460},
            {'name': 'nvidia-fabricmanager-{branch}', 'since_branch': 0}),
           ({'name': 'libnvidia-nscq', 'since_branch': 580}, {'name': 'libnvidia-nscq-{branch}', 'since_branch': 0}),
           ({'name': 'nvidia-imex', 'since_branch': 580}, {'name': 'nvidia-imex-{branch}', 'since_branch': 550}),
           (), RHEL_STREAMS, True, '',
           ('guide-rhel', 'gdc-rhel', 'hpc-rhel', 'rhel-fm-names', 'rhel-streams', 'guide-version-locking')),
)


Library = collections.namedtuple('Library', 'component family packages example hold supported gap sources')

# NVIDIA's libraries and tools that follow the driver's repository, per OS family: the package of each part (``lib``
# the runtime, ``dev`` its headers), a package version as NVIDIA publishes it, and how the role holds it.
# DCGM 4 has the same package names on every OS family (NVIDIA/DCGM cmake/packaging.cmake): ``core``, the CUDA
# build of the diagnostics (``cuda``, ``{cuda}`` the driver's CUDA major), the profiling module (``proprietary``,
# ``proprietary_cuda``), dcgm-exporter (``exporter``), and DCGM 3's single package (``dcgm3``), which the role removes.
_DCGM = {'core': 'datacenter-gpu-manager-4-core', 'cuda': 'datacenter-gpu-manager-4-cuda{cuda}',
         'proprietary': 'datacenter-gpu-manager-4-proprietary',
         'proprietary_cuda': 'datacenter-gpu-manager-4-proprietary-cuda{cuda}',
         'exporter': 'datacenter-gpu-manager-exporter', 'dcgm3': 'datacenter-gpu-manager'}
LIBRARIES = (
    Library('nccl', 'Debian', {'lib': 'libnccl2', 'dev': 'libnccl-dev'}, '2.23.4-1+cuda12.6', 'apt-mark hold', True, '',
            ('nccl-packaging',)),
    Library('nccl', 'Ubuntu', {'lib': 'libnccl2', 'dev': 'libnccl-dev'}, '2.23.4-1+cuda12.6', 'apt-mark hold', True, '',
            ('nccl-packaging',)),
    Library('nccl', 'RedHat', {'lib': 'libnccl', 'dev': 'libnccl-devel'}, '2.23.4-1+cuda12.6', 'dnf versionlock', True,
            '', ('nccl-packaging',)),
    Library('dcgm', 'Debian', _DCGM, '1:4.6.0-1', 'apt-mark hold', True, '', ('dcgm-packaging', 'dcgm-exporter-package')),
    Library('dcgm', 'Ubuntu', _DCGM, '1:4.6.0-1', 'apt-mark hold', True, '', ('dcgm-packaging', 'dcgm-exporter-package')),
    Library('dcgm', 'RedHat', _DCGM, '1:4.6.0-1', 'dnf versionlock', True, '',
            ('dcgm-packaging', 'dcgm-exporter-package')),
)

# The package manager of each OS family the LIBRARIES rows name, and so how a role installs, holds and reads them.
MANAGERS = {'Debian': 'apt', 'Ubuntu': 'apt', 'RedHat': 'dnf'}

# The kernel's packages, held with the driver where nvidia_driver_hold_kernel asks (a kernel update the driver was
# not built for boots the node without it). dnf: the names linux-system-roles/hpc locks (vars/main.yml,
# __hpc_kernel_versionlock_rpms), with RHEL 9's kernel-modules-core and the kernel-64k packages of the aarch64
# nodes (GH200), each locked at its installed versions. apt: patterns of dpkg-query for every installed kernel's
# image, headers and modules, and the meta-packages that pull a new kernel in (Debian's linux-image-amd64, Ubuntu's
# linux-image-generic, on which linux-generic depends): apt and unattended-upgrades leave a held package as it is.
# Ubuntu's precompiled NVIDIA modules (linux-modules-nvidia-*, linux-objects-nvidia-*, linux-signatures-nvidia-*)
# are the driver's, left to its own holds.
KERNEL_PACKAGES = {
    'apt': ('linux-image-*', 'linux-headers-*', 'linux-modules-*'),
    'dnf': ('kernel', 'kernel-core', 'kernel-modules', 'kernel-modules-core', 'kernel-modules-extra', 'kernel-devel',
            'kernel-devel-matched', 'kernel-headers', 'kernel-64k', 'kernel-64k-core', 'kernel-64k-modules',
            'kernel-64k-modules-core', 'kernel-64k-modules-extra', 'kernel-64k-devel', 'kernel-64k-devel-matched'),
}
KERNEL_PACKAGES_NOT = ('linux-modules-nvidia-', 'linux-objects-nvidia-', 'linux-signatures-nvidia-')


def library(component, family):
    """The LIBRARIES row of ``component`` (``nccl``, ``dcgm``) on OS ``family``, or None."""
    for row in LIBRARIES:
        if row.component == component and row.family == family:
            return row
    return None


def repository(os_id):
    """The REPOSITORIES row of NVIDIA's repository ``os_id`` (``ubuntu2404``), or None."""
    for repo in REPOSITORIES:
        if repo.os == os_id:
            return repo
    return None


def driver_row(family, source, branch):
    """The DRIVER row of (``family``, ``source``) whose branch range holds ``branch`` (an int), or None. A mirror is
    a copy of NVIDIA's repository (``cuda_repo``)."""
    source = 'cuda_repo' if source == 'mirror' else source
    for row in DRIVER:
        low, high = row.branches
        if row.family == family and row.source == source and branch >= low and (high is None or branch <= high):
            return row
    return None


def module_stream(row, flavour, branch):
    """(module, stream) that ``row`` (a DRIVER row) enables for ``flavour`` and ``branch``, or None without one."""
    if not row or not row.stream:
        return None
    return row.stream['module'], row.stream[flavour].format(branch=branch)


def stream_text(stream):
    """The stream of a DRIVER row as docs/packaging.md shows it."""
    if not stream:
        return None
    module = stream['module']
    return '%s:%s (open), %s:%s (proprietary)' % (module, stream['open'], module, stream['proprietary'])


def by_branch(entries, branch):
    """The package name of ``branch`` among ``entries`` ({name, since_branch}, newest first), or None."""
    for entry in entries or ():
        if branch >= int(entry.get('since_branch') or 0):
            return entry['name'].format(branch=branch)
    return None


def driver_packages(family, source, branch):
    """What the plan installs for (``family``, ``source``, ``branch``): ``{packages: {open, proprietary},
    persistenced: {name, versioned}, fabricmanager: [{name, since_branch}], pinning: (templates), row}``, names
    still holding ``{branch}`` and ``{version}``. ``branch`` None (neither a branch nor a version asked for): the
    newest branch range's row. None when the table has no row."""
    if branch is None:
        rows = [r for r in DRIVER if r.family == family and r.source == ('cuda_repo' if source == 'mirror' else source)
                and r.branches[1] is None]
        row = rows[0] if rows else None
    else:
        row = driver_row(family, source, int(branch))
    if row is None:
        return None
    return {'packages': dict((f, list(n)) for f, n in row.packages.items()), 'persistenced': dict(row.persistenced),
            'fabricmanager': [dict(e) for e in row.fabricmanager], 'pinning': tuple(row.pinning), 'row': row}


def other_rows(family, source, row):
    """The rows of (``family``, ``source``) other than ``row``: where a driver installed from another branch range
    has its packages (Ubuntu names them by branch up to 580, without from 590)."""
    source = 'cuda_repo' if source == 'mirror' else source
    return [r for r in DRIVER if r.family == family and r.source == source and r is not row]
