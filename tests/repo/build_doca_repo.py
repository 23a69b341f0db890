# -*- coding: utf-8 -*-
"""Build a local, signed, flat apt repository of stand-ins for NVIDIA's DOCA-OFED packages for Debian 12.

    python3 tests/repo/build_doca_repo.py --out DIR [--release 2.9.1] [--force]

The packages carry the names, versions, dependencies and relevant file layout of the packages in NVIDIA's DOCA
repository (https://linux.mellanox.com/public/repo/doca/<release>/<distro>/x86_64/), which the tests cannot reach,
but no NVIDIA software: the programs print that they are stand-ins, the DKMS package builds nothing, the libraries
are empty. What the rdma role reads and writes is real: /etc/infiniband/openib.conf (a conffile, with the keys and
defaults of the real file), the openibd unit, mlnx-tools' /usr/bin/mlnx_qos, the maintainer scripts' effects, and
the versions that tell OFED's rdma-core from Debian's (2410mlnx54-1.2410068 sorts above Debian 12's 44.0-2, so
installing doca-ofed over Debian's RDMA stack upgrades it).

DIR/repo/        the repository (deb822 ``URIs: file://.../repo/``, ``Suites: /``), laid out as NVIDIA's: *.deb,
                 Packages, Packages.gz, Release (Date and MD5Sum/SHA1/SHA256 only), Release.gpg (armoured,
                 detached), no InRelease, and GPG-KEY-Mellanox.pub (the armoured public key, as NVIDIA's has)
DIR/key.asc      the public key that signs it; DIR/wrong-key.asc: another key, that did not
DIR/gnupg/       the keys (generated once, kept so that key.asc stays the same across rebuilds)
DIR/.inputs      hash of this script, build_nvidia_repo.py (whose helpers it uses) and the arguments
Needs dpkg-deb, apt-ftparchive (apt-utils) and gpg; tests/repo/README.md has more.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import email.utils
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_nvidia_repo as base  # noqa: E402  pylint: disable=wrong-import-position

KEY_UID = 'gpuops test DOCA repository <doca-repo@gpuops.invalid>'
WRONG_KEY_UID = 'gpuops wrong key for the DOCA repository, signs nothing <doca-wrong-key@gpuops.invalid>'
KEY_FILE = 'GPG-KEY-Mellanox.pub'

# One DOCA release per repository, as NVIDIA publishes them (one directory per release). The versions are those of
# NVIDIA's packages for that release (tests/repo/README.md names the sources); doca is the meta packages' version.
RELEASES = {
    '2.9.1': dict(ofed='24.10-1.1.4.0', doca='2.9.1-018000', core='2410mlnx54-1.2410068',
                  tools='24.10-0.2410068', perftest='24.10.0-0.65.g9093bae.2410068',
                  kernel='24.10.OFED.24.10.1.1.4.1-1', scripts='24.10.OFED.24.10.1.1.4-1'),
    '2.10.0': dict(ofed='25.01-0.6.0.0', doca='2.10.0-093000', core='2501mlnx56-1.2501060',
                   tools='25.01-0.2501060', perftest='25.01.0-0.70.g759a5c5.2501060',
                   kernel='25.01.OFED.25.01.0.6.0.1-1', scripts='25.01.OFED.25.01.0.6.0-1'),
}
DEFAULT_RELEASE = '2.9.1'

# The keys and defaults of /etc/infiniband/openib.conf as mlnx-ofed-kernel-utils ships it in OFED 24.10 and 25.01
# (mlnx-ofa_kernel's ofed_scripts/openib.conf, copied as is by debian/rules), in its order; comments our own. The
# DKMS build, the one NVIDIA's Debian and Ubuntu repositories carry, ships no *_LOAD line: IPOIB_LOAD=yes and the
# other *_LOAD keys are appended by ofed_scripts/install_helper only in the kernel-specific (non-DKMS) build.
OPENIB_CONF = """\
# /etc/infiniband/openib.conf: the settings /etc/init.d/openibd (openibd.service) reads.
# gpuops.node test stand-in: the keys and defaults of the file that mlnx-ofed-kernel-utils ships (DKMS build);
# the comments are ours.

# Start the driver stack at boot
ONBOOT=yes

# Let "openibd stop" unload the driver stack (turn off when the root file system is on remote storage)
ALLOW_STOP=yes

# Load the driver stack even when the kernel modules on disk are not the ones OFED installed
FORCE_MODE=no

# Node description
NODE_DESC=$(hostname -s)

# Seconds to wait before the node description is updated
NODE_DESC_TIME_BEFORE_UPDATE=20

# Seconds to wait at most for the host name to be set
NODE_DESC_UPDATE_TIMEOUT=120

# Seconds to sleep when openibd start has finished
POST_START_DELAY=0

# Run /usr/sbin/mlnx_affinity
RUN_AFFINITY_TUNER=no

# Run /usr/sbin/mlnx_tune
RUN_MLNX_TUNE=no

# Load E_IPoIB
LOAD_EIPOIB=no

# Raise the priority of the ib_mad thread
RENICE_IB_MAD=no

# Run the sysctl tuning script
RUN_SYSCTL=no

# Firmware debug tracer
ENABLE_FW_TRACER=yes

# MAC addresses of PFs set through the ECPF, "[<bdf>-<MAC>] ...", for example:
# SMARTNIC_PF_MAC_CONF="0000:03:00.0-c4:8a:07:a5:29:70 0000:03:00.1-c4:8a:07:a5:29:71"
"""

IB_IPOIB_CONF = """\
# Module options for the OFED ib_ipoib module (gpuops.node test stand-in of the file mlnx-ofed-kernel-utils ships;
# the package's postinst appends a line to it on every configure). Put settings of your own in another file.
alias netdev-ib* ib_ipoib
"""

# The unit of mlnx-ofed-kernel-utils (mlnx-ofa_kernel's ofed_scripts/openibd.service), directives as NVIDIA's.
OPENIBD_UNIT = """\
[Unit]
Description=openibd - configure Mellanox devices
Documentation=file:/etc/infiniband/openib.conf
After=wickedd.service wickedd-nanny.service local-fs.target
Before=network.target network.service networking.service remote-fs-pre.target
RefuseManualStop=false
DefaultDependencies=false

[Service]
Type=oneshot
TimeoutSec=180
RemainAfterExit=yes
ExecStart=/etc/init.d/openibd start bootid=%b
ExecStop=/etc/init.d/openibd stop
ExecReload=/etc/init.d/openibd restart bootid=%b

[Install]
WantedBy=sysinit.target
"""

# NVIDIA's openibd loads and unloads the kernel modules that openib.conf names. The stand-in succeeds and does
# nothing, so that the unit (enabled by the postinst, started at boot) does not fail on the simulated nodes: loading
# modules is the gpuops simulator's part.
OPENIBD = """\
#!/bin/sh
### BEGIN INIT INFO
# Provides:          openibd
# Required-Start:    $local_fs
# Required-Stop:     $local_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: openibd - configure Mellanox devices
### END INIT INFO
# gpuops.node test repository (tests/repo/build_doca_repo.py): stand-in for NVIDIA's /etc/init.d/openibd.
case "$1" in
start|stop|restart|force-reload|status)
    echo "openibd $1: package stand-in (%(package)s %(version)s from the gpuops.node test repository), loads and \
unloads no kernel module; the gpuops simulator plays the driver stack" >&2
    exit 0
    ;;
*)
    echo "Usage: $0 {start|stop|restart|force-reload|status}" >&2
    exit 1
    ;;
esac
"""

# mlnx-ofed-kernel-utils' postinst (debian/mlnx-ofed-kernel-utils.postinst, OFED 24.10), same effects: sysv links
# unless Ubuntu, openibd enabled when systemd runs, the ib_ipoib option line appended on every configure, memlock
# unlimited in limits.conf unless a docker container.
UTILS_POSTINST = r"""#!/bin/sh
dist=`lsb_release -s -i 2>/dev/null | tr '[:upper:]' '[:lower:]'`
if [ "X$dist" != "Xubuntu" ]; then
    /usr/sbin/update-rc.d openibd defaults > /dev/null 2>&1
fi

if (systemctl 2>/dev/null | grep -qw "\-\.mount" 2>/dev/null); then
    systemctl daemon-reload >/dev/null 2>&1 || true
    systemctl enable openibd >/dev/null 2>&1 || true
    cat /proc/sys/kernel/random/boot_id 2>/dev/null | sed -e 's/-//g' > /var/run/openibd.bootid || true
    test -s /var/run/openibd.bootid || echo manual > /var/run/openibd.bootid || true
fi

echo "options ib_ipoib send_queue_size=128 recv_queue_size=128" >> /etc/modprobe.d/ib_ipoib.conf

if [ ! -e "/.dockerenv" ] && ! (grep -q docker /proc/self/cgroup 2>/dev/null); then
    if [ -e /etc/security/limits.conf ]; then
        LIMITS_UPDATED=0
        if ! (grep -qE "soft.*memlock" /etc/security/limits.conf 2>/dev/null); then
            echo "* soft memlock unlimited" >> /etc/security/limits.conf
            LIMITS_UPDATED=1
        fi
        if ! (grep -qE "hard.*memlock" /etc/security/limits.conf 2>/dev/null); then
            echo "* hard memlock unlimited" >> /etc/security/limits.conf
            LIMITS_UPDATED=1
        fi
        if [ $LIMITS_UPDATED -eq 1 ]; then
            echo "Configured /etc/security/limits.conf"
        fi
    fi
fi

exit 0
"""

UTILS_PRERM = r"""#!/bin/sh
dist=`lsb_release -s -i 2>/dev/null | tr '[:upper:]' '[:lower:]'`
if [ "X$dist" != "Xubuntu" ]; then
    /usr/sbin/update-rc.d -f openibd remove > /dev/null 2>&1
fi

if (systemctl 2>/dev/null | grep -qw "\-\.mount" 2>/dev/null); then
    systemctl disable openibd >/dev/null 2>&1 || true
fi

exit 0
"""


def stand_in(program, package, version, note=''):
    """A POSIX sh program that says on stderr what it is, and fails."""
    return ('#!/bin/sh\n'
            '# gpuops.node test repository (tests/repo/build_doca_repo.py): stand-in for NVIDIA\'s %s.\n'
            'echo "%s: package stand-in (%s %s from the gpuops.node test repository), not NVIDIA\'s program%s" >&2\n'
            'exit 1\n') % (program, os.path.basename(program), package, version, note)


def ofed_info(ofed, package, version):
    """ofed-scripts' /usr/bin/ofed_info: prints the OFED version as NVIDIA's does (``-s``, ``-n``)."""
    return ('#!/bin/sh\n'
            '# gpuops.node test repository (tests/repo/build_doca_repo.py): stand-in for NVIDIA\'s ofed_info\n'
            '# (%s %s): the version lines only, no component list.\n'
            'case "$1" in\n'
            '-s) echo "OFED-internal-%s:" ;;\n'
            '-n) echo "%s" ;;\n'
            '*) echo "OFED-internal-%s:"; echo; echo "(package stand-in: no component list)" ;;\n'
            'esac\n') % (package, version, ofed, ofed, ofed)


def packages(release):
    """The packages of one DOCA release: [{name, version, arch, section, source, summary, depends, files, ...}]."""
    rel = RELEASES[release]
    core, kernel = rel['core'], rel['kernel']

    def pkg(name, version, section, source, summary, depends=(), files=None, arch='amd64', **extra):
        text = ('A stand-in built by gpuops.node\'s tests (tests/repo/build_doca_repo.py) for NVIDIA\'s package %s '
                '%s from its DOCA %s repository (OFED %s) for Debian 12. It holds no NVIDIA software: programs say '
                'that they are stand-ins, no kernel module is built, libraries are empty.') % (
                    name, version, release, rel['ofed'])
        files = dict(files or {})
        files.setdefault('usr/share/doc/%s/README.gpuops' % name, (0o644, 'Stand-in for NVIDIA\'s %s %s (DOCA %s).\n'
                                                                   % (name, version, release)))
        return dict(name=name, version=version, arch=arch, section=section, source=source, summary=summary,
                    depends=list(depends), files=files, links={}, extra=extra, description=text)

    def ge(name, version=core):
        return '%s (>= %s)' % (name, version)

    libc, libnl = 'libc6 (>= 2.34)', 'libnl-3-200 (>= 3.2.7)'

    def lib(name, summary, depends=()):
        return pkg(name, core, 'libs', 'rdma-core', summary, list(depends) + [libc], Multi_Arch='same')

    return [
        pkg('doca-ofed', rel['doca'], 'metapackages', 'doca-ofed', 'DOCA-OFED installation profile (MLNX_OFED-like)',
            [ge('rdma-core'), ge('libibverbs1'), ge('ibverbs-providers'), ge('ibverbs-utils'), ge('libibumad3'),
             ge('librdmacm1'), ge('libibmad5'), ge('libibnetdisc5'), ge('infiniband-diags'),
             ge('perftest', rel['perftest']), ge('mlnx-tools', rel['tools']), ge('ofed-scripts', rel['scripts']),
             ge('mlnx-ofed-kernel-utils', kernel), ge('mlnx-ofed-kernel-dkms', kernel)]),
        pkg('rdma-core', core, 'net', 'rdma-core', 'RDMA core userspace infrastructure and documentation',
            ['lsb-base (>= 3.2-14~)', 'udev', libc, libnl, 'libsystemd0', 'libudev1 (>= 183)'], Multi_Arch='foreign',
            Breaks='infiniband-diags (<< 2.0.0)', Replaces='infiniband-diags (<< 2.0.0)'),
        lib('libibverbs1', 'Library for direct userspace use of RDMA (InfiniBand/iWARP)',
            ['adduser', libnl, 'libnl-route-3-200 (>= 3.2.7)']),
        pkg('ibverbs-providers', core, 'libs', 'rdma-core', 'User space provider drivers for libibverbs',
            [ge('libibverbs1'), libc], Multi_Arch='same', Provides='libefa1, libipathverbs1, libmlx5-1, libmthca1',
            Breaks='libipathverbs1, libmlx5-1, libmthca1', Replaces='libipathverbs1, libmlx5-1, libmthca1'),
        pkg('ibverbs-utils', core, 'net', 'rdma-core', 'Examples for the libibverbs library',
            [ge('libibverbs1'), libc], Multi_Arch='foreign'),
        lib('libibumad3', 'InfiniBand Userspace Management Datagram (uMAD) library'),
        lib('librdmacm1', 'Library for managing RDMA connections', [ge('libibverbs1')]),
        lib('libibmad5', 'Infiniband Management Datagram (MAD) library', [ge('libibumad3')]),
        lib('libibnetdisc5', 'InfiniBand diagnostics library', [ge('libibmad5'), ge('libibumad3')]),
        pkg('infiniband-diags', core, 'net', 'rdma-core', 'InfiniBand diagnostic programs',
            ['libibnetdisc5 (= %s)' % core, 'perl:any', ge('libibmad5'), ge('libibumad3'), libc],
            Multi_Arch='foreign'),
        pkg('perftest', rel['perftest'], 'net', 'perftest', 'Infiniband verbs performance tests',
            ['ibverbs-providers', ge('libibverbs1'), ge('librdmacm1'), ge('libibumad3'), 'libpci3', libc]),
        pkg('mlnx-tools', rel['tools'], 'net', 'mlnx-tools',
            'Userspace tools to restart and tune MLNX_OFED kernel modules', ['python3', 'pciutils', 'procps'],
            files={'usr/bin/mlnx_qos': (0o755, stand_in(
                '/usr/bin/mlnx_qos', 'mlnx-tools', rel['tools'],
                '; the gpuops simulator plays the NICs\' QoS settings'))},
            Breaks='mlnx-ofed-kernel-utils (<< 5.4), mlnx-en-utils (<< 5.4)',
            Replaces='mlnx-ofed-kernel-utils (<< 5.4), mlnx-en-utils (<< 5.4)'),
        pkg('ofed-scripts', rel['scripts'], 'net', 'ofed-scripts', 'MLNX_OFED utilities',
            files={'usr/bin/ofed_info': (0o755, ofed_info(rel['ofed'], 'ofed-scripts', rel['scripts'])),
                   'usr/sbin/ofed_uninstall.sh': (0o755, stand_in('/usr/sbin/ofed_uninstall.sh', 'ofed-scripts',
                                                                  rel['scripts'], '; it removes nothing'))}),
        pkg('mlnx-ofed-kernel-utils', kernel, 'net', 'mlnx-ofed-kernel',
            'Userspace tools to restart and tune mlnx-ofed kernel modules',
            ['coreutils', 'pciutils', 'grep', 'procps', 'module-init-tools | kmod', 'lsof', 'mlnx-tools (>= 5.2.0)'],
            Conflicts='mlnx-en-utils',
            files={'etc/infiniband/openib.conf': (0o644, OPENIB_CONF),
                   'etc/modprobe.d/ib_ipoib.conf': (0o644, IB_IPOIB_CONF),
                   'etc/init.d/openibd': (0o755, OPENIBD % dict(package='mlnx-ofed-kernel-utils', version=kernel)),
                   'lib/systemd/system/openibd.service': (0o644, OPENIBD_UNIT)},
            conffiles=['/etc/infiniband/openib.conf', '/etc/modprobe.d/ib_ipoib.conf'],
            scripts={'postinst': UTILS_POSTINST, 'prerm': UTILS_PRERM}),
        pkg('mlnx-ofed-kernel-dkms', kernel, 'kernel', 'mlnx-ofed-kernel', 'DKMS support for mlnx-ofed kernel modules',
            ['mlnx-ofed-kernel-utils'], arch='all', Provides='mlnx-rdma-rxe-dkms', Conflicts='mlnx-rdma-rxe-dkms',
            Replaces='mlnx-rdma-rxe-dkms',
            files={'usr/share/doc/mlnx-ofed-kernel-dkms/README.gpuops': (0o644, (
                'Stand-in for NVIDIA\'s mlnx-ofed-kernel-dkms %s (DOCA %s), built by gpuops.node\'s tests. It ships '
                'no DKMS sources and builds no kernel module: on the simulated nodes the gpuops simulator plays the '
                'loaded driver stack.\n') % (kernel, release))}),
    ]


def write_release(repo):
    """Release as NVIDIA's DOCA repositories have it: Date and the MD5Sum, SHA1 and SHA256 sums, nothing else."""
    release = base.run(['apt-ftparchive', '-o', 'APT::FTPArchive::Release::SHA512=false',
                        '-o', 'APT::FTPArchive::Release::Date=' + email.utils.formatdate(base.EPOCH, usegmt=True),
                        'release', '.'], cwd=repo)
    base.write(os.path.join(repo, 'Release'), release)


def inputs_hash(release):
    digest = hashlib.sha256()
    for script in (os.path.abspath(__file__), os.path.abspath(base.__file__)):
        with open(script, 'rb') as handle:
            digest.update(handle.read() + b'\0')
    digest.update(json.dumps({'release': release}).encode('utf-8'))
    return digest.hexdigest()


def build(out, release, force=False):
    """Build the repository in out; returns False when it is already built from the same inputs."""
    def fill(staging, workdir):
        for spec in packages(release):
            base.build_deb(spec, workdir, staging)
        base.write_packages(staging)
        write_release(staging)
        shutil.copyfile(os.path.join(out, 'key.asc'), os.path.join(staging, KEY_FILE))
        os.chmod(os.path.join(staging, KEY_FILE), 0o644)

    return base.build_signed_repo(out, inputs_hash(release), {'release': release}, fill, KEY_UID, WRONG_KEY_UID,
                                  force=force, inrelease=False, tmp_prefix='gpuops-doca-repo.')


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument('--release', choices=sorted(RELEASES), default=DEFAULT_RELEASE,
                            help='DOCA release whose package versions the stand-ins carry (default: %(default)s)')

    return base.cli(argv, __doc__, lambda out, args: build(out, args.release, args.force), add_arguments,
                    lambda args: 'DOCA %s, OFED %s' % (args.release, RELEASES[args.release]['ofed']))


if __name__ == '__main__':
    sys.exit(main())
