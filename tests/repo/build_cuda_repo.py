# -*- coding: utf-8 -*-
"""Build a local, signed, flat apt repository of stand-ins for NVIDIA's DCGM, dcgm-exporter and NCCL packages.

    python3 tests/repo/build_cuda_repo.py --out DIR [--driver-versions 580.126.20-1,...] [--force]

The packages carry the names, versions (epoch included), relations and file layout of the packages in NVIDIA's
CUDA repository (https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/), which the tests cannot
reach, but no NVIDIA software: the libraries are placeholders, the programs (dcgmi, nv-hostengine, dcgm-exporter,
dcgmproftesterNN, ncclras) print that they are stand-ins and exit 1; the gpuops simulator diverts the first three
and supplies their behaviour. What a role meets is real: the nvidia-dcgm and nvidia-dcgm-exporter units, the
core package's postinst (the nvidia-dcgm system user, /var/log/nvidia-dcgm), the exporter's counters file, and the
version coupling: every DCGM 4 package depends on ``datacenter-gpu-manager-4-core (= V)``, core conflicts with the
DCGM 3 package ``datacenter-gpu-manager`` (epoch 1, so ``apt-get install datacenter-gpu-manager`` installs 3.x and
removes DCGM 4), libnccl-dev on ``libnccl2 (= V)``.

Sources (tests/repo/README.md has the table of what is confirmed and what is not):
- github.com/NVIDIA/DCGM (tags 4.2.3, 4.4.1, 4.6.0, 3.3.9): cmake/packaging.cmake (package names, Depends, Provides,
  Recommends, Conflicts, Pre-Depends, epoch 1 in CMakeLists.txt; no Debian revision before 4.4, ``-1`` from 4.4),
  scripts/deb/postinst, config-files/systemd/nvidia-dcgm.service.in, scripts/verify_package_contents/*.deb.txt.
- github.com/NVIDIA/dcgm-exporter (DCGM-Exporter 4.2.3-4.1.3, 4.4.1-4.6.0): etc/default-counters.csv,
  packaging/config-files/systemd/nvidia-dcgm-exporter.service, Makefile (package-build layout). Exporter 4.8.3
  (with DCGM 4.6.0) has the counters of 4.6.0: 4.5.3-4.8.2's default-counters.csv enables the same fields (it only
  rewords six commented-out lines); 4.8.3's own file is not in the public history read, and is assumed the same.
  DCGM 4.6.0's Debian packaging and units are 4.4.1's (the diff of the two tags adds only the multinode packages).
- github.com/NVIDIA/nccl (2.23.4-1, 2.26.2-1): pkg/debian/control.in, changelog.in, lib*.install.in.

With ``--driver-versions`` the repository also holds the driver packages of those versions, as
build_nvidia_repo.py builds them: one repository like NVIDIA's, where the driver, DCGM and NCCL come from the same
source (``make demo`` gives it to the nvidia_driver role as the site mirror; dcgm and nccl use the apt source the
driver role configured). It leaves out NVIDIA's pinning packages, which build_nvidia_repo.py adds to its own
repository: with none offered the role installs the driver by its exact-version closure alone, as for a mirror
without them (the nvidia_driver scenario and tests/unit/repos/test_nvidia_repo.py test the pinning packages).

DIR/repo/        the repository (deb822 ``URIs: file://.../repo/``, ``Suites: /``): *.deb, Packages, Packages.gz,
                 Release (Origin NVIDIA, Label NVIDIA CUDA), Release.gpg (armoured, detached), InRelease
DIR/key.asc      the public key that signs it; DIR/wrong-key.asc: another key, that did not
DIR/gnupg/       the keys (generated once, kept so that key.asc stays the same across rebuilds)
DIR/.inputs      hash of this script and build_nvidia_repo.py (whose helpers it uses)
Needs dpkg-deb, apt-ftparchive (apt-utils) and gpg.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_nvidia_repo as base  # noqa: E402  pylint: disable=wrong-import-position

KEY_UID = 'gpuops test CUDA repository <cuda-repo@gpuops.invalid>'
WRONG_KEY_UID = 'gpuops wrong key for the CUDA repository, signs nothing <cuda-wrong-key@gpuops.invalid>'
LIB = base.LIB
MAJOR = 4  # DCGM's major version: package names datacenter-gpu-manager-4-*, libdcgm.so.4

# DCGM 4 releases: the upstream version, the Debian version as NVIDIA publishes it (epoch 1; CPack added no Debian
# revision before 4.4: 1:4.2.3; from 4.4 on the revision -1: 1:4.4.1-1), the CUDA flavours it is built for, and
# the dcgm-exporter release paired with it (<dcgm>-<exporter> release tags of NVIDIA/dcgm-exporter).
DCGM = [
    dict(upstream='4.2.3', version='1:4.2.3', cuda=(11, 12), exporter='4.1.3-1', revision=False),
    dict(upstream='4.4.1', version='1:4.4.1-1', cuda=(11, 12, 13), exporter='4.6.0-1', revision=True),
    dict(upstream='4.6.0', version='1:4.6.0-1', cuda=(11, 12, 13), exporter='4.8.3-1', revision=True),
]
# The last DCGM 3 release, as the unversioned name datacenter-gpu-manager (epoch 1, no Debian revision).
DCGM3 = dict(upstream='3.3.9', version='1:3.3.9')
# NCCL: <nccl>-<pkg revision>+cuda<major>.<minor> (pkg/debian/changelog.in).
NCCL = ['2.23.4-1+cuda12.6', '2.26.2-1+cuda12.8']

# nvidia-dcgm.service of DCGM 4.2.3 and 4.4.1 (config-files/systemd/nvidia-dcgm.service.in, bindir /usr/bin), its
# directives in NVIDIA's order; NVIDIA's licence header left out.
DCGM4_UNIT = """\
[Unit]
Description=NVIDIA DCGM service
After=nvidia-gpu-reset.target
Wants=nvidia-gpu-reset.target

[Service]
User=root
PrivateTmp=false

Environment="DCGM_HOME_DIR=/var/log/nvidia-dcgm"

ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm

Restart=on-abort

[Install]
Alias=dcgm.service
WantedBy=multi-user.target
"""
# DCGM 3.3.9's unit: no Alias, a Conflicts with the deprecated dcgm.service (which 3.x also ships, left out here).
DCGM3_UNIT = DCGM4_UNIT.replace('Description=NVIDIA DCGM service\n',
                                'Description=NVIDIA DCGM service\nConflicts=dcgm.service\n').replace(
                                    'Alias=dcgm.service\n', '')

# The core package's postinst (scripts/deb/postinst, DCGM 3.3.9 to 4.6): the system user and group nvidia-dcgm
# (useradd -U -r, shell nologin; exit status 9, "already exists", is fine) and its log directory. Like NVIDIA's, it
# neither reloads systemd nor enables or starts the service.
CORE_POSTINST = """\
#!/bin/sh
# gpuops.node test stand-in: what NVIDIA's postinst of the DCGM core package does.
set -uf
useradd -Urs /usr/sbin/nologin nvidia-dcgm
status=$?
set -e
if [ $status -ne 0 ] && [ $status -ne 9 ]; then
    exit $status
fi
mkdir -p /var/log/nvidia-dcgm
chown nvidia-dcgm:nvidia-dcgm /var/log/nvidia-dcgm
chmod 755 /var/log/nvidia-dcgm
"""

# nvidia-dcgm-exporter.service (packaging/config-files/systemd/), installed in /lib/systemd/system by the exporter's
# package build. 4.1.3 appended its log to /var/dcgm-exporter.log, 4.6.0 to /var/log/dcgm-exporter.log.
EXPORTER_UNIT = """\
[Unit]
Description=NVIDIA DCGM-exporter service
Wants=nvidia-dcgm.service
After=nvidia-dcgm.service

[Service]
User=root
PrivateTmp=false

StandardOutput=append:%(log)s
StandardError=append:%(log)s

ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv

Restart=on-abort

[Install]
WantedBy=multi-user.target
"""

# /etc/dcgm-exporter/default-counters.csv of dcgm-exporter 4.1.3: NVIDIA's fields, metric types, order and which
# fields are commented out; the help texts and comments are ours. 4.6.0 adds the block EXPORTER_FIELDS and
# DCGM_FI_DEV_FB_RESERVED (see counters()).
COUNTERS_413 = """\
# gpuops.node test stand-in of dcgm-exporter's default counters (NVIDIA's fields and types; our wording).
# Format: DCGM field, Prometheus metric type, help text. A line starting with '#' is a comment.

# Clocks
DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock (MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock (MHz).

# Temperature
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (C).
DCGM_FI_DEV_GPU_TEMP,    gauge, GPU temperature (C).

# Power
DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy consumed since boot (mJ).

# PCIe
# DCGM_FI_PROF_PCIE_TX_BYTES,  counter, Bytes sent over PCIe (NVML).
# DCGM_FI_PROF_PCIE_RX_BYTES,  counter, Bytes received over PCIe (NVML).
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe replays.

# Utilisation
DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilisation (%).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory copy utilisation (%).
DCGM_FI_DEV_ENC_UTIL,      gauge, Encoder utilisation (%).
DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilisation (%).

# Errors and violations
DCGM_FI_DEV_XID_ERRORS,              gauge,   Last XID error.
# DCGM_FI_DEV_POWER_VIOLATION,       counter, Time throttled by power (us).
# DCGM_FI_DEV_THERMAL_VIOLATION,     counter, Time throttled by temperature (us).
# DCGM_FI_DEV_SYNC_BOOST_VIOLATION,  counter, Time throttled by sync boost (us).
# DCGM_FI_DEV_BOARD_LIMIT_VIOLATION, counter, Time throttled by board limits (us).
# DCGM_FI_DEV_LOW_UTIL_VIOLATION,    counter, Time throttled by low utilisation (us).
# DCGM_FI_DEV_RELIABILITY_VIOLATION, counter, Time throttled by reliability limits (us).

# Memory
DCGM_FI_DEV_FB_FREE, gauge, Frame buffer free (MiB).
DCGM_FI_DEV_FB_USED, gauge, Frame buffer used (MiB).

# ECC
# DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Single-bit volatile ECC errors.
# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Double-bit volatile ECC errors.
# DCGM_FI_DEV_ECC_SBE_AGG_TOTAL, counter, Single-bit persistent ECC errors.
# DCGM_FI_DEV_ECC_DBE_AGG_TOTAL, counter, Double-bit persistent ECC errors.

# Retired pages
# DCGM_FI_DEV_RETIRED_SBE,     counter, Pages retired for single-bit errors.
# DCGM_FI_DEV_RETIRED_DBE,     counter, Pages retired for double-bit errors.
# DCGM_FI_DEV_RETIRED_PENDING, counter, Pages pending retirement.

# NVLink
# DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, NVLink flow-control CRC errors.
# DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, counter, NVLink data CRC errors.
# DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,   counter, NVLink replays.
# DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, counter, NVLink recoveries.
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL,            counter, NVLink bandwidth counter, all lanes.
# DCGM_FI_DEV_NVLINK_BANDWIDTH_L0,               counter, NVLink bytes, header and payload, link 0.

# vGPU licence
DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU licence status

# Remapped rows
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Rows remapped for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,   counter, Rows remapped for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE,           gauge,   Row remapping failed

# Static information, as labels on the other metrics
DCGM_FI_DRIVER_VERSION,        label, Driver version
# DCGM_FI_NVML_VERSION,          label, NVML version
# DCGM_FI_DEV_BRAND,             label, Brand
# DCGM_FI_DEV_SERIAL,            label, Serial number
# DCGM_FI_DEV_OEM_INFOROM_VER,   label, OEM inforom version
# DCGM_FI_DEV_ECC_INFOROM_VER,   label, ECC inforom version
# DCGM_FI_DEV_POWER_INFOROM_VER, label, Power inforom version
# DCGM_FI_DEV_INFOROM_IMAGE_VER, label, Inforom image version
# DCGM_FI_DEV_VBIOS_VERSION,     label, VBIOS version

# Profiling (DCP) metrics, Volta and newer datacenter GPUs
DCGM_FI_PROF_GR_ENGINE_ACTIVE,   gauge, Graphics engine active ratio.
# DCGM_FI_PROF_SM_ACTIVE,          gauge, SM active ratio.
# DCGM_FI_PROF_SM_OCCUPANCY,       gauge, SM occupancy ratio.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Tensor pipe active ratio.
DCGM_FI_PROF_DRAM_ACTIVE,        gauge, Memory interface active ratio.
# DCGM_FI_PROF_PIPE_FP64_ACTIVE,   gauge, FP64 pipe active ratio.
# DCGM_FI_PROF_PIPE_FP32_ACTIVE,   gauge, FP32 pipe active ratio.
# DCGM_FI_PROF_PIPE_FP16_ACTIVE,   gauge, FP16 pipe active ratio.
DCGM_FI_PROF_PCIE_TX_BYTES,      gauge, PCIe send rate, headers and payload (bytes/s).
DCGM_FI_PROF_PCIE_RX_BYTES,      gauge, PCIe receive rate, headers and payload (bytes/s).
"""
EXPORTER_FIELDS = """\
# dcgm-exporter's own fields

# DCGM_EXP_CLOCK_EVENTS_COUNT, counter, Clock events
# DCGM_EXP_XID_ERRORS_COUNT, counter, XIDs in the last window
# DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM health status
# DCGM_EXP_P2P_STATUS, counter, P2P NVLink status

"""


def counters(exporter_version):
    """default-counters.csv of an exporter release: 4.1.3's, and from 4.6 on with the two additions of 4.6.0."""
    if exporter_version.startswith('4.1.'):
        return COUNTERS_413
    used = 'DCGM_FI_DEV_FB_USED, gauge, Frame buffer used (MiB).\n'
    text = COUNTERS_413.replace('# Memory\n', EXPORTER_FIELDS + '# Memory\n', 1).replace(
        used, used + 'DCGM_FI_DEV_FB_RESERVED, gauge, Frame buffer reserved (MiB).\n', 1)
    assert text.count('DCGM_EXP_') == 4 and 'FB_RESERVED' in text
    return text


def stand_in(program, package, version, note=''):
    """A POSIX sh program that says on stderr what it is, and fails."""
    return ('#!/bin/sh\n'
            '# gpuops.node test repository (tests/repo/build_cuda_repo.py): stand-in for NVIDIA\'s %s.\n'
            'echo "%s: package stand-in (%s %s from the gpuops.node test repository), not NVIDIA\'s program%s" >&2\n'
            'exit 1\n') % (program, os.path.basename(program), package, version, note)


SIMULATED = '; the gpuops simulator diverts this file and puts its own here'


def pkg(name, version, section, source, summary, depends=(), files=None, links=None, release='', **extra):
    text = ('A stand-in built by gpuops.node\'s tests (tests/repo/build_cuda_repo.py) for NVIDIA\'s package %s %s%s '
            'from its CUDA repository. It holds no NVIDIA software: libraries are placeholders, programs say that '
            'they are stand-ins and exit 1.') % (name, version, release)
    files = dict(files or {})
    files.setdefault('usr/share/doc/%s/README.gpuops' % name,
                     (0o644, 'Stand-in for NVIDIA\'s %s %s.\n' % (name, version)))
    return dict(name=name, version=version, section=section, source=source, summary=summary, depends=list(depends),
                files=files, links=dict(links or {}), extra=extra, description=text)


def library(package, version, soname, upstream, directory=LIB):
    """A placeholder library at NVIDIA's path, with its SONAME link: (files, links)."""
    real = '%s/%s.%s' % (directory, soname.rsplit('.', 1)[0], upstream)
    return ({real: (0o644, base.placeholder(soname, package, version))},
            {'%s/%s' % (directory, soname): os.path.basename(real)})


def dcgm4(rel):
    """The DCGM 4 packages of one release."""
    v, up = rel['version'], rel['upstream']
    name = 'datacenter-gpu-manager-%d' % MAJOR
    core = '%s-core' % name
    eq = '(= %s)' % v
    note = ' (DCGM %s)' % up

    def dpkg(suffix, summary, depends, files=None, links=None, **extra):
        return pkg('%s-%s' % (name, suffix), v, 'devel', name, summary, depends, files, links, release=note,
                   **extra)

    lib_files, lib_links = library(core, v, 'libdcgm.so.%d' % MAJOR, up)
    core_files = {
        'usr/bin/dcgmi': (0o755, stand_in('/usr/bin/dcgmi', core, v, SIMULATED)),
        'usr/bin/nv-hostengine': (0o755, stand_in('/usr/bin/nv-hostengine', core, v, SIMULATED)),
        'usr/lib/systemd/system/nvidia-dcgm.service': (0o644, DCGM4_UNIT),
    }
    core_files.update(lib_files)
    core_extra = dict(Conflicts='datacenter-gpu-manager', scripts={'postinst': CORE_POSTINST})
    core_depends = ['libc6 (>= 2.27)']
    if rel['revision']:  # 4.4 added lshw and the Pre-Depends of the postinst's useradd
        core_depends.append('lshw')
        core_extra['Pre_Depends'] = 'passwd, login'
    result = [dpkg('core', 'CUDA-version agnostic components of NVIDIA Datacenter GPU Manager (DCGM)', core_depends,
                   core_files, lib_links, **core_extra)]
    for cuda in rel['cuda']:
        files, links = library('%s-cuda%d' % (name, cuda), v, 'libdcgm_cublas_proxy%d.so.%d' % (cuda, MAJOR), up)
        files['usr/bin/dcgmproftester%d' % cuda] = (0o755, stand_in('/usr/bin/dcgmproftester%d' % cuda,
                                                                    '%s-cuda%d' % (name, cuda), v))
        extra = dict(Provides='%s %s' % (name, eq))
        if rel['revision']:
            extra['Recommends'] = 'libnuma1'
        result.append(dpkg('cuda%d' % cuda, 'NVIDIA Datacenter GPU Manager (DCGM) binaries for CUDA%d systems' % cuda,
                           ['%s %s' % (core, eq)], files, links, **extra))
        result.append(dpkg('proprietary-cuda%d' % cuda,
                           'Proprietary DCGM diagnostics for CUDA%d systems' % cuda,
                           ['%s-proprietary %s' % (name, eq), '%s-cuda%d %s' % (name, cuda, eq)]))
    result.append(dpkg('cuda-all', 'Metapackage for NVIDIA Datacenter GPU Manager (DCGM) binaries',
                       ['%s-cuda%d %s' % (name, cuda, eq) for cuda in rel['cuda']]))
    prop_files, prop_links = library('%s-proprietary' % name, v, 'libdcgmmoduleprofiling.so.%d' % MAJOR, up)
    result.append(dpkg('proprietary', 'Proprietary components of DCGM (profiling module, EUD)',
                       ['%s %s' % (core, eq)], prop_files, prop_links))
    result.append(dpkg('dev', 'Development files for NVIDIA Datacenter GPU Manager (DCGM)', ['%s %s' % (core, eq)],
                       {'usr/include/%s/dcgm_agent.h' % name: (0o644, '/* gpuops.node test stand-in: no NVIDIA header. */\n')},
                       {'%s/libdcgm.so' % LIB: 'libdcgm.so.%d' % MAJOR}))
    exporter = rel['exporter']
    result.append(pkg(
        'datacenter-gpu-manager-exporter', exporter, 'devel', 'datacenter-gpu-manager-exporter',
        'NVIDIA DCGM Exporter, GPU telemetry for Prometheus', ['%s %s' % (core, eq)],
        {'usr/bin/dcgm-exporter': (0o755, stand_in('/usr/bin/dcgm-exporter', 'datacenter-gpu-manager-exporter',
                                                   exporter, SIMULATED)),
         'etc/dcgm-exporter/default-counters.csv': (0o644, counters(exporter)),
         'lib/systemd/system/nvidia-dcgm-exporter.service': (0o644, EXPORTER_UNIT % dict(
             log='/var/dcgm-exporter.log' if exporter.startswith('4.1.') else '/var/log/dcgm-exporter.log'))},
        release=' (DCGM Exporter %s-%s)' % (up, exporter.rsplit('-', 1)[0]),
        conffiles=['/etc/dcgm-exporter/default-counters.csv']))
    return result


def dcgm3():
    """datacenter-gpu-manager 1:3.3.9, the DCGM 3 package: the same programs and unit, libdcgm.so.3."""
    v, up, name = DCGM3['version'], DCGM3['upstream'], 'datacenter-gpu-manager'
    files, links = library(name, v, 'libdcgm.so.3', up)
    files.update({
        'usr/bin/dcgmi': (0o755, stand_in('/usr/bin/dcgmi', name, v, SIMULATED)),
        'usr/bin/nv-hostengine': (0o755, stand_in('/usr/bin/nv-hostengine', name, v, SIMULATED)),
        'usr/lib/systemd/system/nvidia-dcgm.service': (0o644, DCGM3_UNIT),
    })
    others = ('datacenter-gpu-manager, datacenter-gpu-manager-fabricmanager (<< 2.0), '
              'datacenter-gpu-manager-dcp-nda-only, datacenter-gpu-manager-collectd, datacenter-gpu-manager-wsgi, '
              'datacenter-gpu-manager-fabricmanager-internal-api-header')
    return [pkg(name, v, 'devel', name, 'NVIDIA Datacenter GPU Management Tools', ['libc6 (>= 2.17)'], files,
                links, release=' (DCGM 3)', Provides=name, Conflicts=others, Replaces=others,
                scripts={'postinst': CORE_POSTINST})]


def nccl(version):
    """libnccl2 and libnccl-dev of one NCCL build (pkg/debian of NVIDIA/nccl)."""
    up = version.split('-', 1)[0]
    files, links = library('libnccl2', version, 'libnccl.so.2', up)
    dev_files = {'usr/include/nccl.h': (0o644, '/* gpuops.node test stand-in of NCCL %s\'s nccl.h: no NVIDIA header. '
                                        '*/\n#define NCCL_VERSION_STANDIN "%s"\n' % (up, up)),
                 '%s/libnccl_static.a' % LIB: (0o644, base.placeholder('libnccl_static.a', 'libnccl-dev', version))}
    if tuple(int(n) for n in up.split('.')[:2]) >= (2, 24):
        dev_files['usr/bin/ncclras'] = (0o755, stand_in('/usr/bin/ncclras', 'libnccl-dev', version))
    else:
        dev_files['usr/include/nccl_net.h'] = (0o644, '/* gpuops.node test stand-in: no NVIDIA header. */\n')
    return [pkg('libnccl2', version, 'libs', 'nccl', 'NVIDIA Collective Communication Library (NCCL) Runtime',
                files=files, links=links),
            pkg('libnccl-dev', version, 'libdevel', 'nccl', 'NVIDIA Collective Communication Library (NCCL) '
                'Development Files', ['libnccl2 (= %s)' % version], dev_files, {'%s/libnccl.so' % LIB: 'libnccl.so.2'})]


def packages():
    """Every package of the repository: [{name, version, section, source, summary, depends, files, ...}]."""
    result = []
    for rel in DCGM:
        result += dcgm4(rel)
    result += dcgm3()
    for version in NCCL:
        result += nccl(version)
    return result


def deb_name(spec):
    """NVIDIA's file name: name_version-without-epoch_arch.deb."""
    return '%s_%s_amd64.deb' % (spec['name'], spec['version'].split(':', 1)[-1])


def inputs_hash(driver_versions=()):
    digest = hashlib.sha256()
    for script in (os.path.abspath(__file__), os.path.abspath(base.__file__)):
        with open(script, 'rb') as handle:
            digest.update(handle.read() + b'\0')
    digest.update(','.join(driver_versions).encode('utf-8'))
    return digest.hexdigest()


def driver_packages(versions):
    """The driver packages of build_nvidia_repo.py for ``versions``, each once."""
    specs = {}
    for version in versions:
        for spec in base.packages(version):
            specs.setdefault((spec['name'], spec['version']), spec)  # the fabric manager has no -N of its own
    return list(specs.values())


def build(out, force=False, driver_versions=()):
    """Build the repository in out; returns False when it is already built from the same inputs."""
    def fill(staging, workdir):
        for spec in driver_packages(driver_versions):
            base.build_deb(spec, workdir, staging)
        for spec in packages():
            built = base.build_deb(spec, workdir, staging)
            if built != deb_name(spec):  # dpkg-deb's name carries the epoch ("1:"); NVIDIA's files do not
                os.rename(os.path.join(staging, built), os.path.join(staging, deb_name(spec)))
        base.write_indexes(staging)

    record = {'dcgm': [r['version'] for r in DCGM], 'nccl': NCCL, 'driver': list(driver_versions)}
    return base.build_signed_repo(out, inputs_hash(driver_versions), record, fill,
                                  KEY_UID, WRONG_KEY_UID, force=force, tmp_prefix='gpuops-cuda-repo.')


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument('--driver-versions', type=base.parse_versions, default=[],
                            help='also the driver packages of these versions (comma-separated), as '
                                 'build_nvidia_repo.py builds them')

    def describe(args):
        return 'DCGM %s and %s, NCCL %s%s' % (
            ', '.join(r['version'] for r in DCGM), DCGM3['version'], ', '.join(NCCL),
            ', driver %s' % ', '.join(args.driver_versions) if args.driver_versions else '')

    return base.cli(argv, __doc__, lambda out, args: build(out, args.force, args.driver_versions), add_arguments,
                    describe)


if __name__ == '__main__':
    sys.exit(main())
