# -*- coding: utf-8 -*-
"""Build a local, signed, flat apt repository of stand-ins for the driver packages of NVIDIA's ubuntu2204/ubuntu2404
repositories: the names by branch up to 580, without the branch from 590, and NVIDIA's pinning packages.

    python3 tests/repo/build_ubuntu_repo.py --out DIR [--versions 580.95.05-0ubuntu1,...] [--force]

The layout, keys and signatures are those of tests/repo/build_nvidia_repo.py (whose helpers this uses): DIR/repo/,
DIR/key.asc, DIR/wrong-key.asc, DIR/gnupg/, DIR/.inputs. No NVIDIA software: libraries are placeholders, programs
say that they are stand-ins and exit 1, the DKMS packages build nothing.

Where the relations come from (no byte-exact stanza of NVIDIA's Ubuntu repositories is public):

* Confirmed, Canonical's packaging of the same drivers (github.com/canonical/nvidia-graphics-drivers, branch
  580-noble at 2eed1444, 595-noble at 8116b261, debian/control): nvidia-dkms-<B>[-open] Depends on
  nvidia-kernel-source-<B>[-open] and nvidia-kernel-common-<B> of its own upstream version (the proprietary one on
  the firmware too); nvidia-kernel-common-<B> Provides nvidia-kernel-common-<B>-<U> and Depends on the firmware;
  libnvidia-compute-<B> and nvidia-utils-<B> Depend on that virtual nvidia-kernel-common-<B>-<U> only;
  nvidia-compute-utils-<B> Depends on libnvidia-compute-<B> and adduser; each -<B> package Conflicts, Replaces and
  Provides its name without the branch (libnvidia-compute, nvidia-utils, nvidia-kernel-common, ...).
* Quoted real apt output from NVIDIA's repositories (tests/repo/README.md): the names, the revisions (-0ubuntu1 to
  580.105.08, -1ubuntu1 from 580.126.09), the firmware named nvidia-firmware-<B> (nvidia-firmware from 590, where
  Canonical has nvidia-firmware-<B>-<U>), "libnvidia-decode-580 : Depends: libnvidia-compute-580
  (= 580.126.20-1ubuntu1)", "libnvidia-compute : Depends: nvidia-persistenced (= 610.43.02-1ubuntu1)", the
  pinning packages nvidia-driver-pinning-<version> (<version>-1ubuntu1) and nvidia-driver-pinning-<branch>
  (<branch>-2ubuntu1), all installing /etc/apt/preferences.d/nvidia-driver-pin at Pin-Priority 1000.
* Guessed (said so in the packages' descriptions): the version bounds. Canonical bounds a sibling by
  ``(>= U), (<= U-1)``, which NVIDIA's -1ubuntu1 revisions cannot meet; these stand-ins use ``(= V)``. The pin file's
  Package line (one public stanza, of Debian 13's repository, pins ``cuda-drivers* src:nvidia-open:any``); the
  pinning packages' Provides/Conflicts/Replaces nvidia-driver-pinning; no dependency on dkms (nothing is built).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_nvidia_repo as base  # noqa: E402  pylint: disable=wrong-import-position

DEFAULT_VERSIONS = ('580.95.05-0ubuntu1', '580.126.20-1ubuntu1', '595.45.04-1ubuntu1', '595.71.05-1ubuntu1')
VERSION_RE = re.compile(r'^(([0-9]+)\.[0-9]+(?:\.[0-9]+)?)-([0-9]+ubuntu[0-9]+)$')
KEY_UID = 'gpuops test Ubuntu driver repository <ubuntu-repo@gpuops.invalid>'
WRONG_KEY_UID = 'gpuops wrong key for the Ubuntu repository, signs nothing <ubuntu-wrong-key@gpuops.invalid>'
LIB = base.LIB
PIN_FILE = 'etc/apt/preferences.d/nvidia-driver-pin'
GUESSED = (' Its version bounds and, for a pinning package, its pin file are guessed (tests/repo/build_ubuntu_repo.py '
           'says which relations are confirmed).')

# Ubuntu's unit (canonical/nvidia-graphics-drivers, 580-noble at 2eed1444 and 595-noble at 8116b261,
# debian/nvidia-compute-utils-<B>.nvidia-persistenced.service; the same on every branch from 530, jammy and noble):
# its ExecStart line verbatim, with --no-persistence-mode. The real unit is static, with StopWhenUnneeded=true, and
# is started by the udev rule debian/71-nvidia.rules (SYSTEMD_WANTS when the nvidia driver binds); the simulator has
# no udev and no driver to bind, so the stand-in keeps the [Install] section of build_nvidia_repo.py's unit instead.
PERSISTENCED_UNIT = base.PERSISTENCED_UNIT.replace(
    'ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced\n',
    'ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose\n')
assert PERSISTENCED_UNIT != base.PERSISTENCED_UNIT


def pin_text(pattern, what):
    return ('# gpuops.node test stand-in for NVIDIA\'s pin file (%s); its Package line is a guess\n'
            'Package: src:nvidia-graphics-drivers* src:nvidia-open* *nvidia* libnvidia-* libcuda*\n'
            'Pin: version %s\nPin-Priority: 1000\n') % (what, pattern)


def packages(version):
    """The stand-ins of one driver version: specs for build_nvidia_repo.build_deb."""
    match = VERSION_RE.match(version)
    upstream, branch = match.group(1), int(match.group(2))
    suffix = '-%d' % branch if branch <= 580 else ''
    description = ('A stand-in built by gpuops.node\'s tests (tests/repo/build_ubuntu_repo.py) for NVIDIA\'s package '
                   '%s %s from its CUDA repository for Ubuntu, for the gpuops GPU simulator. It holds no NVIDIA '
                   'software: libraries are placeholders, programs say that they are stand-ins and exit 1.' + GUESSED)

    def eq(*names):
        return ['%s (= %s)' % (name, version) for name in names]

    def pkg(name, section, summary, depends=(), files=None, links=None, plain=None, **extra):
        """A package named ``name``, ``{b}`` replaced by the branch suffix (-580, or nothing from 590);
        ``plain``: a name without the branch, which a branch-named package Conflicts with, Replaces and Provides
        (Canonical's packaging)."""
        full = name.format(b=suffix)
        if suffix and plain:
            extra.setdefault('Conflicts', plain)
            extra.setdefault('Replaces', plain)
            extra['Provides'] = ', '.join(p for p in (plain, extra.get('Provides')) if p)
        spec = dict(name=full, version=extra.pop('pkg_version', version), section=section,
                    source='nvidia-graphics-drivers' + suffix, summary=summary, depends=list(depends),
                    files=files or {}, links=links or {}, extra=extra)
        spec['description'] = description % (full, spec['version'])
        return spec

    def doc(name, text):
        return {'usr/share/doc/%s/README.gpuops' % name.format(b=suffix): (0o644, text)}

    def program(path, name):
        return {path: (0o755, base.stand_in('/' + path, name.format(b=suffix), version,
                                            ', which diverts this file and puts its own here'))}

    common = 'nvidia-kernel-common' + suffix
    firmware = 'nvidia-firmware' + suffix
    compute = 'libnvidia-compute' + suffix
    kernel_virtual = '%s-%s' % (common, upstream)
    dkms_doc = ('Stand-in for NVIDIA\'s %s %s, built by gpuops.node\'s tests. It ships no DKMS sources and builds\n'
                'no kernel module: on the simulated GPU nodes the gpuops GPU simulator plays the loaded driver.\n')
    specs = [
        pkg('nvidia-firmware{b}', 'non-free-firmware/kernel', 'NVIDIA GSP firmware',
            files=dict(('lib/firmware/nvidia/%s/%s' % (upstream, fw),
                        (0o644, base.placeholder('GSP firmware ' + fw, firmware, version)))
                       for fw in ('gsp_ga10x.bin', 'gsp_tu10x.bin'))),
        pkg('nvidia-kernel-common{b}', 'restricted/libs', 'Shared files used with the kernel module', eq(firmware),
            files=doc('nvidia-kernel-common{b}', 'Stand-in for NVIDIA\'s %s %s.\n' % (common, version)),
            plain='nvidia-kernel-common', Provides=kernel_virtual if suffix else 'nvidia-kernel-common-' + upstream),
        pkg('nvidia-kernel-source{b}-open', 'restricted/kernel', 'NVIDIA kernel source package (open)',
            files=doc('nvidia-kernel-source{b}-open', dkms_doc % ('nvidia-kernel-source%s-open' % suffix, version)),
            plain='nvidia-kernel-source'),
        pkg('nvidia-kernel-source{b}', 'restricted/kernel', 'NVIDIA kernel source package',
            files=doc('nvidia-kernel-source{b}', dkms_doc % ('nvidia-kernel-source' + suffix, version)),
            plain='nvidia-kernel-source'),
        pkg('libnvidia-compute{b}', 'restricted/libs', 'NVIDIA libcompute package',
            [kernel_virtual if suffix else 'nvidia-kernel-common-' + upstream]
            + ([] if suffix else eq('nvidia-persistenced')),
            files={'%s/libnvidia-ml.so.%s' % (LIB, upstream): (0o644, base.placeholder('NVML', compute, version)),
                   '%s/libcuda.so.%s' % (LIB, upstream): (0o644, base.placeholder('libcuda', compute, version))},
            links={'%s/libnvidia-ml.so.1' % LIB: 'libnvidia-ml.so.%s' % upstream,
                   '%s/libcuda.so.1' % LIB: 'libcuda.so.%s' % upstream},
            plain='libnvidia-compute', Multi_Arch='same'),
        pkg('nvidia-utils{b}', 'restricted/utils', 'NVIDIA driver support binaries', [kernel_virtual] if suffix else
            ['nvidia-kernel-common-' + upstream], files=program('usr/bin/nvidia-smi', 'nvidia-utils{b}'),
            plain='nvidia-utils'),
        pkg('nvidia-dkms{b}', 'restricted/kernel', 'NVIDIA DKMS package',
            eq('nvidia-kernel-source' + suffix, common, firmware),
            files=doc('nvidia-dkms{b}', dkms_doc % ('nvidia-dkms' + suffix, version)), Provides='nvidia-dkms-kernel',
            Conflicts='nvidia-dkms-kernel', Replaces='nvidia-dkms-kernel'),
        pkg('nvidia-dkms{b}-open', 'restricted/kernel', 'NVIDIA DKMS package (open)',
            eq('nvidia-kernel-source%s-open' % suffix, common),
            files=doc('nvidia-dkms{b}-open', dkms_doc % ('nvidia-dkms%s-open' % suffix, version)),
            Provides='nvidia-dkms-kernel', Conflicts='nvidia-dkms-kernel', Replaces='nvidia-dkms-kernel'),
    ]
    persistenced_files = {'usr/bin/nvidia-persistenced': (0o755, base.stand_in(
        '/usr/bin/nvidia-persistenced', 'nvidia-persistenced', version)),
        'lib/systemd/system/nvidia-persistenced.service': (0o644, PERSISTENCED_UNIT)}
    persistenced_scripts = {'postinst': base.maintainer_script('configure', (
        '\tif ! getent passwd nvidia-persistenced >/dev/null; then\n'
        '\t\tadduser --system --group --quiet --no-create-home --home /nonexistent \\\n'
        '\t\t\t--gecos "NVIDIA Persistence Daemon" nvidia-persistenced\n'
        '\tfi\n') + base.DAEMON_RELOAD), 'postrm': base.maintainer_script('remove', base.DAEMON_RELOAD)}
    if suffix:
        # up to 580 the daemon comes in nvidia-compute-utils-<B>, which Provides nvidia-persistenced
        specs.append(pkg('nvidia-compute-utils{b}', 'restricted/utils', 'NVIDIA compute utilities',
                         [compute, 'adduser'], files=persistenced_files, plain='nvidia-compute-utils',
                         Provides='nvidia-persistenced', Conflicts='nvidia-compute-utils, nvidia-persistenced',
                         Replaces='nvidia-compute-utils, nvidia-persistenced', scripts=persistenced_scripts))
    else:
        specs.append(pkg('nvidia-persistenced', 'restricted/utils', 'NVIDIA Persistence Daemon', ['adduser'],
                         files=persistenced_files, scripts=persistenced_scripts))
        specs.append(pkg('nvidia-compute-utils', 'restricted/utils', 'NVIDIA compute utilities',
                         eq(compute, 'nvidia-persistenced'),
                         files=doc('nvidia-compute-utils', 'Stand-in for nvidia-compute-utils %s.\n' % version)))
    fm_version = '%s-1' % upstream
    specs.append(dict(base.packages(upstream + '-1')[-1], version=fm_version, section='multiverse/devel'))
    if branch >= 580:
        pin = 'nvidia-driver-pinning-%s' % upstream
        specs.append(dict(pkg('nvidia-driver-pinning', 'multiverse/misc', 'APT driver pinning file for driver '
                              'version %s' % upstream, files={PIN_FILE: (0o644, pin_text(upstream + '-*', pin))},
                              Provides='nvidia-driver-pinning', Conflicts='nvidia-driver-pinning',
                              Replaces='nvidia-driver-pinning'), name=pin, arch='all'))
        branch_pin = 'nvidia-driver-pinning-%d' % branch
        specs.append(dict(pkg('nvidia-driver-pinning', 'multiverse/misc', 'APT driver pinning file for driver '
                              'branch %d' % branch, files={PIN_FILE: (0o644, pin_text('%d.*' % branch, branch_pin))},
                              Provides='nvidia-driver-pinning', Conflicts='nvidia-driver-pinning',
                              Replaces='nvidia-driver-pinning', pkg_version='%d-2ubuntu1' % branch),
                          name=branch_pin, arch='all'))
    for spec in specs:
        spec['description'] = description % (spec['name'], spec['version'])
    return specs


def inputs_hash(versions):
    digest = hashlib.sha256()
    for path in (os.path.abspath(__file__), base.__file__):
        with open(os.path.splitext(path)[0] + '.py', 'rb') as handle:
            digest.update(handle.read() + b'\0')
    digest.update(json.dumps({'versions': versions}).encode('utf-8'))
    return digest.hexdigest()


def build(out, versions, force=False):
    """Build the repository in out; returns False when it is already built from the same inputs."""
    def fill(staging, workdir):
        built = {}
        for version in versions:
            for spec in packages(version):
                if (spec['name'], spec['version']) not in built:  # a branch's pinning package, the fabric manager
                    built[(spec['name'], spec['version'])] = base.build_deb(spec, workdir, staging)
        base.write_indexes(staging)

    return base.build_signed_repo(out, inputs_hash(versions), {'versions': versions}, fill, key_uid=KEY_UID,
                                  wrong_key_uid=WRONG_KEY_UID, force=force, tmp_prefix='gpuops-ubuntu-repo.')


def parse_versions(text):
    versions = [v.strip() for v in text.split(',') if v.strip()]
    bad = [v for v in versions if not VERSION_RE.match(v)]
    if not versions or bad:
        raise argparse.ArgumentTypeError('expected Ubuntu driver package versions like 580.126.20-1ubuntu1, comma '
                                         'separated; got ' + repr(text))
    return list(dict.fromkeys(versions))


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument('--versions', type=parse_versions, default=list(DEFAULT_VERSIONS),
                            help='driver package versions, comma separated (default: %(default)s)')

    return base.cli(argv, __doc__, lambda out, args: build(out, args.versions, args.force), add_arguments,
                    lambda args: ', '.join(args.versions))


if __name__ == '__main__':
    sys.exit(main())
