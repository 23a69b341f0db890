# -*- coding: utf-8 -*-
"""Build a local, signed, flat apt repository of stand-ins for NVIDIA's debian12 driver packages and pinning packages.

    python3 tests/repo/build_nvidia_repo.py --out DIR [--versions 580.126.20-1,580.159.04-1] [--force]

The packages carry the names, versions, dependencies and file layout of the packages in NVIDIA's CUDA repository
for debian12 (https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/), which the tests cannot
reach, but no NVIDIA software: the libraries are placeholders, the programs print that they are stand-ins and exit
1 (the gpuops GPU simulator supplies their behaviour), the DKMS packages build nothing.

DIR/repo/        the repository (deb822 ``URIs: file://.../repo/``, ``Suites: /``): *.deb, Packages, Packages.gz,
                 Release, Release.gpg (armoured, detached), InRelease (clearsigned)
DIR/key.asc      the public key that signs it; DIR/wrong-key.asc: another key, that did not
DIR/gnupg/       the keys (generated once, kept so that key.asc stays the same across rebuilds)
DIR/.inputs      hash of this script and its arguments: a second run with the same ones does nothing
Needs dpkg-deb, apt-ftparchive (apt-utils) and gpg; tests/repo/README.md has more.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import email.utils
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

DEFAULT_VERSIONS = ('580.126.20-1', '580.159.04-1')
MAINTAINER = 'gpuops.node test repository <repo@gpuops.invalid>'
KEY_UID = 'gpuops test repository <repo@gpuops.invalid>'
WRONG_KEY_UID = 'gpuops wrong key, signs nothing <wrong-key@gpuops.invalid>'
# Release's Date and every file time in the packages: fixed, so that a rebuild gives the same bytes (but for the
# signatures). In the past on any test machine; apt only refuses dates in the future.
EPOCH = 1735689600  # 2025-01-01 00:00:00 UTC
LIB = 'usr/lib/x86_64-linux-gnu'
# The program named in error messages: this script, or another builder that imports its helpers.
PROG = os.path.splitext(os.path.basename((sys.argv[:1] or [''])[0] or 'build_nvidia_repo'))[0]
VERSION_RE = re.compile(r'^(([0-9]+)\.[0-9]+(?:\.[0-9]+)?)-([0-9A-Za-z.+~]+)$')

PERSISTENCED_UNIT = """\
[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced

[Install]
WantedBy=multi-user.target
"""

# NVIDIA's unit comes in the fabricmanager tarball, not in its packaging templates, and no copy of the current one
# was found. Confirmed: Description ("NVIDIA fabric manager service" in systemctl status), Type=forking, ExecStart
# (branch 535 and older; later branches start it through /usr/bin/nvidia-fabricmanager-start.sh --mode start),
# /lib/systemd/system (apt-packaging-fabric-manager's install template). Unconfirmed: the network-online.target
# dependency, TimeoutStartSec and LimitCORE (as NixOS's unit has them) and PIDFile (the path NVIDIA's
# gpu-driver-container reads the daemon's pid from).
FABRICMANAGER_UNIT = """\
[Unit]
Description=NVIDIA fabric manager service
After=network-online.target
Requires=network-online.target

[Service]
User=root
PrivateTmp=false
Type=forking
TimeoutStartSec=240
ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
PIDFile=/var/run/nvidia-fabricmanager/nv-fabricmanager.pid
LimitCORE=infinity

[Install]
WantedBy=multi-user.target
"""

# The keys of NVIDIA's default fabricmanager.cfg (the values NixOS copies from it), comments our own.
FABRICMANAGER_CFG = """\
# NVIDIA Fabric Manager configuration (gpuops.node test stand-in: the keys and defaults of NVIDIA's file).
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/fabricmanager.log
LOG_APPEND_TO_LOG=1
LOG_FILE_MAX_SIZE=1024
LOG_USE_SYSLOG=0
DAEMONIZE=1
BIND_INTERFACE_IP=127.0.0.1
STARTING_TCP_PORT=16000
# 0: bare metal or full passthrough, 1: shared NVSwitch, 2: vGPU
FABRIC_MODE=0
FABRIC_MODE_RESTART=0
STATE_FILE_NAME=/var/tmp/fabricmanager.state
FM_CMD_BIND_INTERFACE=127.0.0.1
FM_CMD_PORT_NUMBER=6666
FM_STAY_RESIDENT_ON_FAILURES=0
ACCESS_LINK_FAILURE_MODE=0
TRUNK_LINK_FAILURE_MODE=0
NVSWITCH_FAILURE_MODE=0
ABORT_CUDA_JOBS_ON_FM_EXIT=1
TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch
"""

# debhelper's systemd snippet, without deb-systemd-helper: the role enables and starts the services.
DAEMON_RELOAD = """\
\tif [ -d /run/systemd/system ]; then
\t\tsystemctl --system daemon-reload >/dev/null || true
\tfi
"""


def maintainer_script(action, body):
    return '#!/bin/sh\nset -e\n\ncase "$1" in\n%s)\n%s\t;;\nesac\n\nexit 0\n' % (action, body)


def stand_in(program, package, version, note=''):
    """A POSIX sh program that says on stderr what it is, and fails."""
    return ('#!/bin/sh\n'
            '# gpuops.node test repository (tests/repo/build_nvidia_repo.py): stand-in for NVIDIA\'s %s.\n'
            'echo "%s: package stand-in (%s %s from the gpuops.node test repository), not NVIDIA\'s program;'
            ' its behaviour comes from the gpuops GPU simulator%s" >&2\n'
            'exit 1\n') % (program, os.path.basename(program), package, version, note)


def placeholder(what, package, version):
    return ('gpuops.node test repository: placeholder for NVIDIA\'s %s (package %s %s); not a library, no NVIDIA '
            'software.\n') % (what, package, version)


def packages(version):
    """The packages of one driver version: [{name, version, arch, section, source, summary, depends, files, ...}]."""
    match = VERSION_RE.match(version)
    upstream, branch = match.group(1), int(match.group(2))

    def eq(*names):
        return ['%s (= %s)' % (name, version) for name in names]

    def pkg(name, section, source, summary, depends=(), files=None, links=None, **extra):
        return dict(name=name, version=extra.pop('pkg_version', version), section=section, source=source,
                    summary=summary, depends=list(depends), files=files or {}, links=links or {}, extra=extra)

    def doc(name, text):
        return {'usr/share/doc/%s/README.gpuops' % name: (0o644, text)}

    def library(name, soname, what):
        real = '%s/%s.so.%s' % (LIB, soname, upstream)
        return dict(files={real: (0o644, placeholder(what, name, version))},
                    links={'%s/%s.so.1' % (LIB, soname): os.path.basename(real)})

    dkms_doc = ('Stand-in for NVIDIA\'s %s %s, built by gpuops.node\'s tests. It ships no DKMS sources and builds\n'
                'no kernel module: on the simulated GPU nodes the gpuops GPU simulator plays the loaded driver.\n')
    fm_name = 'nvidia-fabricmanager' if branch >= 580 else 'nvidia-fabricmanager-%d' % branch
    fm_version = '%s-1' % upstream
    # The relations are those of Debian's nvidia-graphics-drivers packaging, which NVIDIA's debian12 repository
    # rebuilds (its nvidia-driver Depends "nvidia-alternative (= 550.90.12-1)", "nvidia-kernel-open-dkms (= V)", as
    # an apt error quoted in public shows; Debian's bookworm 535.261.03-1, apt-cache show): the libraries and
    # programs Depend on nvidia-alternative at their exact version, the DKMS packages on the GSP firmware of their
    # upstream version and on the virtual nvidia-kernel-support--v1. Left out: what the base image cannot have and
    # no version couples (glx-alternative-nvidia and nvidia-legacy-check, Debian contrib; nvidia-support).
    alternative = '%s (= %s)' % ('nvidia-alternative', version)
    firmware = 'firmware-nvidia-gsp (= %s) | firmware-nvidia-gsp-%s' % (upstream, upstream)
    return [
        pkg('nvidia-alternative', 'non-free/libs', 'nvidia-graphics-drivers',
            'allows the selection of NVIDIA as GLX provider',
            files=doc('nvidia-alternative', 'Stand-in for NVIDIA\'s nvidia-alternative %s.\n' % version),
            Provides='nvidia-alternative--kmod-alias, nvidia-alternative-%s, nvidia-alternative-any' % upstream),
        pkg('nvidia-modprobe', 'contrib/utils', 'nvidia-modprobe', 'utility to load NVIDIA kernel modules',
            files={'usr/bin/nvidia-modprobe': (0o755, stand_in('/usr/bin/nvidia-modprobe', 'nvidia-modprobe',
                                                               version))}),
        pkg('libnvidia-ml1', 'non-free/libs', 'nvidia-graphics-drivers', 'NVIDIA Management Library (NVML) runtime',
            [alternative],
            **dict(library('libnvidia-ml1', 'libnvidia-ml', 'libnvidia-ml.so (NVML)'), Multi_Arch='same')),
        pkg('libnvidia-ptxjitcompiler1', 'non-free/libs', 'nvidia-graphics-drivers', 'NVIDIA PTX JIT Compiler library',
            [alternative], **dict(library('libnvidia-ptxjitcompiler1', 'libnvidia-ptxjitcompiler',
                                          'libnvidia-ptxjitcompiler.so'), Multi_Arch='same')),
        pkg('libnvidia-pkcs11-openssl3', 'non-free/libs', 'nvidia-graphics-drivers',
            'NVIDIA PKCS #11 Library (OpenSSL 3)', [alternative],
            **dict(library('libnvidia-pkcs11-openssl3', 'libnvidia-pkcs11-openssl3', 'libnvidia-pkcs11-openssl3.so'),
                   Multi_Arch='same')),
        pkg('libcuda1', 'non-free/libs', 'nvidia-graphics-drivers', 'NVIDIA CUDA Driver Library',
            [alternative] + eq('libnvidia-ptxjitcompiler1', 'libnvidia-pkcs11-openssl3'),
            **dict(library('libcuda1', 'libcuda', 'libcuda.so'), Multi_Arch='same')),
        pkg('nvidia-smi', 'non-free/utils', 'nvidia-graphics-drivers', 'NVIDIA System Management Interface',
            [alternative] + eq('libnvidia-ml1'),
            files={'usr/bin/nvidia-smi': (0o755, stand_in(
                '/usr/bin/nvidia-smi', 'nvidia-smi', version, ', which diverts this file and puts its own here'))}),
        pkg('nvidia-kernel-support', 'non-free/kernel', 'nvidia-graphics-drivers',
            'NVIDIA binary kernel module support files', [alternative, 'nvidia-modprobe (>= %d)' % branch],
            files=doc('nvidia-kernel-support', 'Stand-in for NVIDIA\'s nvidia-kernel-support %s.\n' % version),
            Provides='nvidia-kernel-support--v1, nvidia-kernel-support-any'),
        pkg('firmware-nvidia-gsp', 'non-free-firmware/kernel', 'nvidia-graphics-drivers', 'NVIDIA GSP firmware',
            files=dict(('usr/lib/firmware/nvidia/%s/%s' % (upstream, fw),
                        (0o644, placeholder('GSP firmware ' + fw, 'firmware-nvidia-gsp', version)))
                       for fw in ('gsp_ga10x.bin', 'gsp_tu10x.bin')),
            Provides='firmware-nvidia-gsp (= %s), firmware-nvidia-gsp-%s' % (upstream, upstream)),
        pkg('nvidia-kernel-dkms', 'non-free/kernel', 'nvidia-graphics-drivers',
            'NVIDIA binary kernel module DKMS source', [firmware, 'nvidia-kernel-support--v1'],
            files=doc('nvidia-kernel-dkms', dkms_doc % ('nvidia-kernel-dkms', version)),
            Provides='nvidia-kernel-%s, nvidia-kernel-dkms-any (= %s)' % (upstream, upstream)),
        pkg('nvidia-kernel-open-dkms', 'contrib/kernel', 'nvidia-open-gpu-kernel-modules',
            'NVIDIA open kernel module DKMS source', [firmware, 'nvidia-kernel-support--v1'],
            files=doc('nvidia-kernel-open-dkms', dkms_doc % ('nvidia-kernel-open-dkms', version)),
            Provides='nvidia-open-kernel-%s, nvidia-open-kernel-dkms-any (= %s)' % (upstream, upstream)),
        pkg('nvidia-driver-cuda', 'non-free/utils', 'nvidia-graphics-drivers',
            'NVIDIA driver CUDA integration components',
            eq('nvidia-smi', 'libcuda1'),
            files=doc('nvidia-driver-cuda', 'Stand-in for NVIDIA\'s nvidia-driver-cuda %s.\n' % version)),
        pkg('nvidia-persistenced', 'contrib/utils', 'nvidia-persistenced',
            'daemon to maintain persistent software state in the NVIDIA driver', eq('libnvidia-ml1') + ['adduser'],
            files={'usr/bin/nvidia-persistenced': (0o755, stand_in('/usr/bin/nvidia-persistenced',
                                                                   'nvidia-persistenced', version)),
                   'lib/systemd/system/nvidia-persistenced.service': (0o644, PERSISTENCED_UNIT)},
            scripts={'postinst': maintainer_script('configure', (
                '\tif ! getent passwd nvidia-persistenced >/dev/null; then\n'
                '\t\tadduser --system --group --quiet --no-create-home --home /nonexistent \\\n'
                '\t\t\t--gecos "NVIDIA Persistence Daemon" nvidia-persistenced\n'
                '\tfi\n') + DAEMON_RELOAD),
                'postrm': maintainer_script('remove', DAEMON_RELOAD)}),
        # NVIDIA's packaging (apt-packaging-fabric-manager): source fabricmanager, Depends libc6 (>= 2.2.1) and
        # systemd-coredump (left out: not on the base image), no dependency on the driver packages.
        pkg(fm_name, 'multiverse/devel', 'fabricmanager', 'Fabric Manager for NVSwitch based systems',
            ['libc6 (>= 2.2.1)'], pkg_version=fm_version,
            files={'usr/bin/nv-fabricmanager': (0o755, stand_in('/usr/bin/nv-fabricmanager', fm_name, fm_version)),
                   'usr/share/nvidia/nvswitch/fabricmanager.cfg': (0o644, FABRICMANAGER_CFG),
                   'lib/systemd/system/nvidia-fabricmanager.service': (0o644, FABRICMANAGER_UNIT)},
            conffiles=['/usr/share/nvidia/nvswitch/fabricmanager.cfg'],
            scripts={'postinst': maintainer_script('configure', DAEMON_RELOAD),
                     'postrm': maintainer_script('remove', DAEMON_RELOAD)}),
    ]


# NVIDIA's pinning packages (Driver Installation Guide, "Recent Updates": "Driver pinning packages have been
# introduced for Debian and Ubuntu"). Seen on a Debian 13 node of NVIDIA's repository (a public note quoting the
# installed system, tests/repo/README.md): the package nvidia-driver-pinning-595.71.05 ships
# /etc/apt/preferences.d/nvidia-driver-pin, whose stanzas pin "version 595.71.05-*" at "Pin-Priority: 1000", one of
# them "Package: cuda-drivers* src:nvidia-open:any". Guessed (said in the packages' descriptions): the package
# revisions (the version's own at the driver's, <branch>-1 for the branch's), the other stanzas (one per source
# package of these stand-ins), the branch's pattern "<branch>.*", Provides/Conflicts/Replaces nvidia-driver-pinning
# (what the Ubuntu ones are quoted to have), from 580 on. tests/repo/README.md has the sources.
PIN_FILE = 'etc/apt/preferences.d/nvidia-driver-pin'
PIN_SOURCES = ('nvidia-graphics-drivers', 'nvidia-open-gpu-kernel-modules', 'nvidia-modprobe', 'nvidia-persistenced',
               'fabricmanager')


def pin_text(pattern, package):
    stanza = 'Package: %s\nPin: version %s\nPin-Priority: 1000\n'
    return ('# gpuops.node test stand-in for NVIDIA\'s pin file (%s); its first stanza has the form of a real one,\n'
            '# the second is a guess\n' % package
            + stanza % ('cuda-drivers* src:nvidia-open:any', pattern) + '\n'
            + stanza % (' '.join('src:%s:any' % source for source in PIN_SOURCES), pattern))


def pinning_packages(version):
    """NVIDIA's pinning packages of one driver version, from 580 on: nvidia-driver-pinning-<upstream> (at the
    driver's package version) and nvidia-driver-pinning-<branch> (at <branch>-1); [] before 580."""
    match = VERSION_RE.match(version)
    upstream, branch = match.group(1), int(match.group(2))
    if branch < 580:
        return []
    specs = []
    for name, pkg_version, pattern in (('nvidia-driver-pinning-%s' % upstream, version, upstream + '-*'),
                                       ('nvidia-driver-pinning-%d' % branch, '%d-1' % branch, '%d.*' % branch)):
        specs.append(dict(
            name=name, version=pkg_version, arch='all', section='contrib/misc', source='nvidia-driver-pinning',
            summary='APT driver pinning file for driver %s' % pattern.rstrip('-*.'), depends=[],
            files={PIN_FILE: (0o644, pin_text(pattern, name))}, links={},
            extra={'Provides': 'nvidia-driver-pinning', 'Conflicts': 'nvidia-driver-pinning',
                   'Replaces': 'nvidia-driver-pinning'},
            description=('A stand-in built by gpuops.node\'s tests (tests/repo/build_nvidia_repo.py) for NVIDIA\'s '
                         'package %s %s from its CUDA repository for debian12: the apt preferences that pin the '
                         'driver. Its revision, Provides, Conflicts and Replaces and the pin file\'s second stanza '
                         'are guessed (the builder says which parts are seen in a real one).' % (name, pkg_version))))
    return specs


def run(argv, **kwargs):
    """Run a command; a failure raises SystemExit with its output."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                            check=False, **kwargs)
    if result.returncode != 0:
        raise SystemExit('%s: %s failed (rc %d):\n%s%s' % (
            PROG, ' '.join(argv), result.returncode, result.stdout, result.stderr))
    return result.stdout


def write(path, data, mode=0o644):
    with open(path, 'wb' if isinstance(data, bytes) else 'w') as handle:
        handle.write(data)
    os.chmod(path, mode)


def control(spec, installed_kib):
    """The DEBIAN/control text; ``spec`` may give ``arch`` (default amd64) and ``description`` (the long text)."""
    fields = [('Package', spec['name']), ('Source', spec['source']), ('Version', spec['version']),
              ('Architecture', spec.get('arch', 'amd64')), ('Maintainer', MAINTAINER),
              ('Installed-Size', str(installed_kib))]
    if spec['depends']:
        fields.append(('Depends', ', '.join(spec['depends'])))
    fields += [(key.replace('_', '-'), value) for key, value in sorted(spec['extra'].items())
               if key not in ('scripts', 'conffiles')]
    fields += [('Section', spec['section']), ('Priority', 'optional')]
    text = spec.get('description') or (
        'A stand-in built by gpuops.node\'s tests (tests/repo/build_nvidia_repo.py) for NVIDIA\'s package %s %s '
        'from its CUDA repository for debian12, for the gpuops GPU simulator. It holds no NVIDIA software: '
        'libraries are placeholders, programs say that they are stand-ins and exit 1.') % (spec['name'],
                                                                                           spec['version'])
    fields.append(('Description', '%s (gpuops.node test stand-in)\n%s' % (
        spec['summary'], textwrap.fill(text, 79, initial_indent=' ', subsequent_indent=' '))))
    return ''.join('%s: %s\n' % field for field in fields)


def build_deb(spec, workdir, outdir):
    """dpkg-deb --build a generated tree; every file time is EPOCH, so the .deb is the same on every run."""
    tree = os.path.join(workdir, '%s_%s' % (spec['name'], spec['version']))
    os.makedirs(os.path.join(tree, 'DEBIAN'), mode=0o755)
    kib = 0
    for path, (mode, text) in sorted(spec['files'].items()):
        target = os.path.join(tree, path)
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        write(target, text, mode)
        kib += (len(text.encode('utf-8')) + 1023) // 1024
    for path, dest in sorted(spec['links'].items()):
        os.makedirs(os.path.dirname(os.path.join(tree, path)), mode=0o755, exist_ok=True)
        os.symlink(dest, os.path.join(tree, path))
        kib += 1
    for name, text in sorted(spec['extra'].get('scripts', {}).items()):
        write(os.path.join(tree, 'DEBIAN', name), text, 0o755)
    if spec['extra'].get('conffiles'):
        write(os.path.join(tree, 'DEBIAN', 'conffiles'), ''.join(c + '\n' for c in spec['extra']['conffiles']))
    write(os.path.join(tree, 'DEBIAN', 'control'), control(spec, max(kib, 1)))
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (EPOCH, EPOCH), follow_symlinks=False)
        os.chmod(root, 0o755)
    os.utime(tree, (EPOCH, EPOCH))
    deb = os.path.join(outdir, '%s_%s_%s.deb' % (spec['name'], spec['version'], spec.get('arch', 'amd64')))
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH))
    run(['dpkg-deb', '--root-owner-group', '-Zgzip', '-z9', '--build', tree, deb], env=env)
    os.chmod(deb, 0o644)
    return os.path.basename(deb)


def write_packages(repo):
    """Packages (stanzas sorted by name and version) and Packages.gz, from apt-ftparchive."""
    stanzas = [s.strip('\n') for s in run(['apt-ftparchive', 'packages', '.'], cwd=repo).split('\n\n') if s.strip()]
    key = re.compile(r'^Package: (\S+)$.*^Version: (\S+)$', re.MULTILINE | re.DOTALL)
    stanzas.sort(key=lambda s: key.search(s).groups())
    text = '\n\n'.join(stanzas) + '\n'
    write(os.path.join(repo, 'Packages'), text)
    write(os.path.join(repo, 'Packages.gz'), gzip.compress(text.encode('utf-8'), 9, mtime=0))


def write_indexes(repo):
    """Packages, Packages.gz and Release, all from apt-ftparchive, as NVIDIA's flat repository."""
    write_packages(repo)
    release = run(['apt-ftparchive', '-o', 'APT::FTPArchive::Release::Origin=NVIDIA',
                   '-o', 'APT::FTPArchive::Release::Label=NVIDIA CUDA',
                   '-o', 'APT::FTPArchive::Release::Date=' + email.utils.formatdate(EPOCH, usegmt=True),
                   'release', '.'], cwd=repo)
    # Fields apt-ftparchive cannot write (it writes Architectures, and Acquire-By-Hash only when true).
    head, sep, sums = release.partition('MD5Sum:')
    fields = dict(line.split(': ', 1) for line in head.splitlines() if line)
    fields.update({'Architecture': 'amd64', 'Acquire-By-Hash': 'no'})
    order = ['Origin', 'Label', 'Architecture', 'Date', 'Acquire-By-Hash']
    head = ''.join('%s: %s\n' % (k, fields[k]) for k in order + sorted(set(fields) - set(order)))
    write(os.path.join(repo, 'Release'), head + sep + sums)


def gpg(home, *args):
    return run(['gpg', '--homedir', home, '--batch', '--no-tty', '--quiet'] + list(args))


def ensure_key(home, uid):
    """The fingerprint of the key for uid in home, generated (ed25519, no passphrase, no expiry) when missing."""
    email = '<%s>' % uid.split('<')[1].rstrip('>')
    for attempt in (1, 2):
        listed = subprocess.run(['gpg', '--homedir', home, '--batch', '--with-colons', '--list-secret-keys', email],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                                check=False)
        fprs = [line.split(':')[9] for line in listed.stdout.splitlines() if line.startswith('fpr:')]
        if listed.returncode == 0 and fprs:
            return fprs[0]
        gpg(home, '--pinentry-mode', 'loopback', '--passphrase', '', '--quick-gen-key', uid, 'ed25519', 'sign',
            'never')
    raise SystemExit('%s: no key for %s in %s after generating it' % (PROG, uid, home))


def inputs_hash(versions):
    with open(os.path.abspath(__file__), 'rb') as handle:
        script = handle.read()
    return hashlib.sha256(script + b'\0' + json.dumps({'versions': versions}).encode('utf-8')).hexdigest()


def build_signed_repo(out, digest, record, fill, key_uid=KEY_UID, wrong_key_uid=WRONG_KEY_UID, force=False,
                      inrelease=True, tmp_prefix='gpuops-repo.'):
    """Build and sign a flat repository in out/repo; returns False when out/.inputs already records ``digest``.

    ``fill(staging, workdir)`` writes the .debs and the indexes (Packages, Release) into ``staging``; ``workdir`` is
    a scratch directory. Then Release is signed (Release.gpg, armoured and detached, and InRelease, clearsigned,
    unless ``inrelease`` is false) with the key of ``key_uid``, generated in out/gnupg on the first build and kept;
    out/key.asc and out/wrong-key.asc (``wrong_key_uid``, which signs nothing) are written before ``fill`` runs.
    ``record``: more fields for out/.inputs."""
    record_path = os.path.join(out, '.inputs')
    signed = ['repo/Release.gpg', 'repo/Packages', 'key.asc', 'wrong-key.asc']
    done = all(os.path.exists(os.path.join(out, p)) for p in signed + (['repo/InRelease'] if inrelease else []))
    if not force and done and os.path.exists(record_path):
        with open(record_path) as handle:
            if json.load(handle).get('sha256') == digest:
                return False
    os.makedirs(out, mode=0o755, exist_ok=True)
    os.chmod(out, 0o755)
    home = os.path.join(out, 'gnupg')
    os.makedirs(home, mode=0o700, exist_ok=True)
    os.chmod(home, 0o700)  # gpg wants its home private; consumers only need key.asc
    if os.path.exists(record_path):
        os.remove(record_path)  # an interrupted build leaves no record, so the next run builds again
    try:
        fpr = ensure_key(home, key_uid)
        wrong = ensure_key(home, wrong_key_uid)
        write(os.path.join(out, 'key.asc'), gpg(home, '--armor', '--export', fpr))
        write(os.path.join(out, 'wrong-key.asc'), gpg(home, '--armor', '--export', wrong))
        staging = os.path.join(out, '.repo.new')
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging, mode=0o755)
        with tempfile.TemporaryDirectory(prefix=tmp_prefix) as workdir:
            fill(staging, workdir)
        release = os.path.join(staging, 'Release')
        sign = ['--local-user', fpr + '!', '--digest-algo', 'SHA512', '--yes']
        gpg(home, *(sign + ['--armor', '--detach-sign', '--output', release + '.gpg', release]))
        os.chmod(release + '.gpg', 0o644)
        if inrelease:
            gpg(home, *(sign + ['--clearsign', '--output', os.path.join(staging, 'InRelease'), release]))
            os.chmod(os.path.join(staging, 'InRelease'), 0o644)
    finally:
        subprocess.run(['gpgconf', '--homedir', home, '--kill', 'gpg-agent'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    repo, old = os.path.join(out, 'repo'), os.path.join(out, '.repo.old')
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(repo):
        os.rename(repo, old)
    os.rename(staging, repo)
    shutil.rmtree(old, ignore_errors=True)
    write(record_path, json.dumps(dict(record, sha256=digest), indent=1, sort_keys=True) + '\n')
    return True


def build(out, versions, force=False):
    """Build the repository in out; returns False when it is already built from the same inputs."""
    def fill(staging, workdir):
        built = {}
        for version in versions:
            for spec in packages(version) + pinning_packages(version):
                # the fabric manager has no -N of its own; a branch's pinning package is one for its versions
                if (spec['name'], spec['version']) not in built:
                    built[(spec['name'], spec['version'])] = build_deb(spec, workdir, staging)
        write_indexes(staging)

    return build_signed_repo(out, inputs_hash(versions), {'versions': versions}, fill, force=force,
                             tmp_prefix='gpuops-nvidia-repo.')


def parse_versions(text):
    versions = [v.strip() for v in text.split(',') if v.strip()]
    bad = [v for v in versions if not VERSION_RE.match(v)]
    if not versions or bad:
        raise argparse.ArgumentTypeError('expected driver package versions like 580.126.20-1, comma separated; got '
                                         + repr(text))
    return list(dict.fromkeys(versions))


def cli(argv, doc, build, add_arguments, describe):
    """The command line every repository builder shares: ``--out`` and ``--force`` and what ``add_arguments(parser)``
    adds; the tools checked; ``build(out, args)`` run (False: already current); what was built said with
    ``describe(args)``. Returns the exit status."""
    parser = argparse.ArgumentParser(description=doc.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--out', required=True, help='directory to build the repository and keys in')
    add_arguments(parser)
    parser.add_argument('--force', action='store_true', help='rebuild even when DIR/.inputs says it is current')
    args = parser.parse_args(argv)
    for tool in ('dpkg-deb', 'apt-ftparchive', 'gpg', 'gpgconf'):
        if shutil.which(tool) is None:
            parser.error('%s not found (Debian: apt-get install dpkg apt-utils gpg)' % tool)
    os.umask(0o022)
    out = os.path.abspath(args.out)
    start = time.time()
    if build(out, args):
        print('built %s/repo (%s) in %.1fs' % (out, describe(args), time.time() - start))
    else:
        print('%s/repo is current (same scripts and arguments as in %s/.inputs)' % (out, out))
    return 0


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument('--versions', type=parse_versions, default=list(DEFAULT_VERSIONS),
                            help='driver package versions, comma separated (default: %(default)s)')

    return cli(argv, __doc__, lambda out, args: build(out, args.versions, args.force), add_arguments,
               lambda args: ', '.join(args.versions))


if __name__ == '__main__':
    sys.exit(main())
