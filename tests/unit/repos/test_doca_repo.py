# -*- coding: utf-8 -*-
"""tests/repo/build_doca_repo.py: the local, signed, flat apt repository of stand-ins for NVIDIA's DOCA-OFED packages
for Debian 12 is built and signed, laid out like NVIDIA's DOCA repositories (Release and Release.gpg, no InRelease,
GPG-KEY-Mellanox.pub), carries NVIDIA's names, versions and relations, ships openib.conf, openibd and mlnx_qos as the
role meets them, is accepted by apt (scratch apt root, no container) for a fresh install and as an upgrade of
Debian's RDMA stack, and is rebuilt byte for byte."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import gzip
import hashlib
import os
import shutil
import stat
import subprocess
import sys

import pytest

from repo_paths import REPO as ROOT

SCRIPT = os.path.join(ROOT, 'tests', 'repo', 'build_doca_repo.py')
MISSING = [tool for tool in ('dpkg-deb', 'apt-ftparchive', 'gpg') if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason='needs %s (Debian: apt-utils, gpg)' % ', '.join(MISSING))

C_LOCALE = dict(os.environ, LC_ALL='C')  # the checks read English messages
CORE = '2410mlnx54-1.2410068'
KERNEL = '24.10.OFED.24.10.1.1.4.1-1'
VERSIONS = {
    'doca-ofed': '2.9.1-018000', 'mlnx-tools': '24.10-0.2410068', 'perftest': '24.10.0-0.65.g9093bae.2410068',
    'mlnx-ofed-kernel-utils': KERNEL, 'mlnx-ofed-kernel-dkms': KERNEL, 'ofed-scripts': '24.10.OFED.24.10.1.1.4-1',
}
FAMILY = ['ibverbs-providers', 'ibverbs-utils', 'infiniband-diags', 'libibmad5', 'libibnetdisc5', 'libibumad3',
          'libibverbs1', 'librdmacm1', 'rdma-core']
VERSIONS.update((name, CORE) for name in FAMILY)
NAMES = sorted(VERSIONS)
LIBC, LIBNL = 'libc6 (>= 2.34)', 'libnl-3-200 (>= 3.2.7)'


def ge(name, version=CORE):
    return '%s (>= %s)' % (name, version)


DEPENDS = {
    'doca-ofed': ', '.join([ge('rdma-core'), ge('libibverbs1'), ge('ibverbs-providers'), ge('ibverbs-utils'),
                            ge('libibumad3'), ge('librdmacm1'), ge('libibmad5'), ge('libibnetdisc5'),
                            ge('infiniband-diags'), ge('perftest', VERSIONS['perftest']),
                            ge('mlnx-tools', VERSIONS['mlnx-tools']), ge('ofed-scripts', VERSIONS['ofed-scripts']),
                            ge('mlnx-ofed-kernel-utils', KERNEL), ge('mlnx-ofed-kernel-dkms', KERNEL)]),
    'rdma-core': 'lsb-base (>= 3.2-14~), udev, %s, %s, libsystemd0, libudev1 (>= 183)' % (LIBC, LIBNL),
    'libibverbs1': 'adduser, %s, libnl-route-3-200 (>= 3.2.7), %s' % (LIBNL, LIBC),
    'ibverbs-providers': '%s, %s' % (ge('libibverbs1'), LIBC),
    'ibverbs-utils': '%s, %s' % (ge('libibverbs1'), LIBC),
    'libibumad3': LIBC,
    'librdmacm1': '%s, %s' % (ge('libibverbs1'), LIBC),
    'libibmad5': '%s, %s' % (ge('libibumad3'), LIBC),
    'libibnetdisc5': '%s, %s, %s' % (ge('libibmad5'), ge('libibumad3'), LIBC),
    'infiniband-diags': 'libibnetdisc5 (= %s), perl:any, %s, %s, %s' % (CORE, ge('libibmad5'), ge('libibumad3'), LIBC),
    'perftest': 'ibverbs-providers, %s, %s, %s, libpci3, %s' % (
        ge('libibverbs1'), ge('librdmacm1'), ge('libibumad3'), LIBC),
    'mlnx-tools': 'python3, pciutils, procps',
    'mlnx-ofed-kernel-utils': 'coreutils, pciutils, grep, procps, module-init-tools | kmod, lsof, '
                              'mlnx-tools (>= 5.2.0)',
    'mlnx-ofed-kernel-dkms': 'mlnx-ofed-kernel-utils',
    'ofed-scripts': '',
}
# The keys and defaults of openib.conf as mlnx-ofed-kernel-utils (DKMS build) ships it in OFED 24.10.
OPENIB = {'ONBOOT': 'yes', 'ALLOW_STOP': 'yes', 'FORCE_MODE': 'no', 'NODE_DESC': '$(hostname -s)',
          'NODE_DESC_TIME_BEFORE_UPDATE': '20', 'NODE_DESC_UPDATE_TIMEOUT': '120', 'POST_START_DELAY': '0',
          'RUN_AFFINITY_TUNER': 'no', 'RUN_MLNX_TUNE': 'no', 'LOAD_EIPOIB': 'no', 'RENICE_IB_MAD': 'no',
          'RUN_SYSCTL': 'no', 'ENABLE_FW_TRACER': 'yes'}
# What Debian 12 has installed that the packages depend on (the base image and Debian's RDMA stack).
DEBIAN = [('adduser', '3.134', 'all'), ('libc6', '2.36-9+deb12u4', 'amd64'),
          ('libsystemd0', '252.39-1~deb12u2', 'amd64'), ('libudev1', '252.39-1~deb12u2', 'amd64'),
          ('udev', '252.39-1~deb12u2', 'amd64'), ('lsb-base', '11.6', 'all'),
          ('libnl-3-200', '3.7.0-0.2+b1', 'amd64'), ('libnl-route-3-200', '3.7.0-0.2+b1', 'amd64'),
          ('perl', '5.36.0-7+deb12u3', 'amd64'), ('libpci3', '1:3.9.0-4', 'amd64'), ('pciutils', '1:3.9.0-4', 'amd64'),
          ('procps', '2:4.0.2-3', 'amd64'), ('coreutils', '9.1-1', 'amd64'), ('grep', '3.8-5', 'amd64'),
          ('python3', '3.11.2-1+b1', 'amd64'), ('kmod', '30+20221128-1', 'amd64'), ('lsof', '4.95.0-1', 'amd64')]
MULTI_ARCH = {'lib': 'Multi-Arch: same\n', 'per': 'Multi-Arch: allowed\n'}  # perl: for perl:any
DEBIAN_RDMA = [(name, '44.0-2', 'amd64') for name in FAMILY] + [('perftest', '4.5+0.17-1', 'amd64')]


def build(out, *args):
    return subprocess.run([sys.executable, SCRIPT, '--out', str(out)] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def stanzas(text):
    """Deb822 paragraphs as dicts (continuation lines kept, joined with newlines)."""
    result = []
    for block in text.strip().split('\n\n'):
        fields, last = {}, None
        for line in block.splitlines():
            if line[:1] in (' ', '\t') and last:
                fields[last] += '\n' + line
            else:
                last, value = line.split(':', 1)
                fields[last] = value.strip()
        result.append(fields)
    return result


def sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def deb(repo, name, version=None):
    arch = 'all' if name == 'mlnx-ofed-kernel-dkms' else 'amd64'
    return os.path.join(str(repo), 'repo', '%s_%s_%s.deb' % (name, version or VERSIONS[name], arch))


def files(path):
    listing = subprocess.run(['dpkg-deb', '-c', path], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    return dict((line.split()[-1][1:], line.split()[0]) for line in listing.splitlines() if line[0] in '-l')


def member(path, name):
    tar = subprocess.run(['dpkg-deb', '--fsys-tarfile', path], stdout=subprocess.PIPE, check=True).stdout
    return subprocess.run(['tar', '-xO', '.' + name], input=tar, stdout=subprocess.PIPE, check=True).stdout.decode()


def control_member(path, name):
    return subprocess.run(['dpkg-deb', '-I', path, name], stdout=subprocess.PIPE, universal_newlines=True,
                          check=False).stdout


def run_script(text, *args):
    return subprocess.run(['sh', '-c', text, 'stand-in'] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


@pytest.fixture(scope='module')
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp('doca-repo') / 'out'
    result = build(out)
    assert result.returncode == 0, result.stderr
    return out


def test_layout_and_modes(repo):
    for path in ('repo/Packages', 'repo/Packages.gz', 'repo/Release', 'repo/Release.gpg', 'repo/GPG-KEY-Mellanox.pub',
                 'key.asc', 'wrong-key.asc', '.inputs'):
        assert os.path.isfile(os.path.join(str(repo), path)), path
    assert not os.path.exists(os.path.join(str(repo), 'repo', 'InRelease'))  # NVIDIA's DOCA repositories have none
    for root, dirs, names in os.walk(str(repo)):
        dirs[:] = [d for d in dirs if d != 'gnupg']  # gpg's home stays private
        for name in dirs + names + ['.']:
            mode = os.stat(os.path.join(root, name)).st_mode
            assert mode & stat.S_IROTH and (not stat.S_ISDIR(mode) or mode & stat.S_IXOTH), os.path.join(root, name)
    with open(os.path.join(str(repo), 'key.asc')) as key, open(os.path.join(str(repo), 'wrong-key.asc')) as wrong:
        key, wrong = key.read(), wrong.read()
    assert key.startswith('-----BEGIN PGP PUBLIC KEY BLOCK-----') and wrong.startswith('-----BEGIN PGP PUBLIC KEY')
    assert key != wrong
    with open(os.path.join(str(repo), 'repo', 'GPG-KEY-Mellanox.pub')) as handle:
        assert handle.read() == key


def test_packages_index(repo):
    with open(os.path.join(str(repo), 'repo', 'Packages')) as handle:
        text = handle.read()
    with gzip.open(os.path.join(str(repo), 'repo', 'Packages.gz'), 'rt') as handle:
        assert handle.read() == text
    index = dict((s['Package'], s) for s in stanzas(text))
    assert sorted((s['Package'], s['Version']) for s in index.values()) == sorted(VERSIONS.items())
    for name, s in index.items():
        assert s['Architecture'] == ('all' if name == 'mlnx-ofed-kernel-dkms' else 'amd64')
        assert s['Maintainer'] == 'gpuops.node test repository <repo@gpuops.invalid>'
        assert s['Priority'] == 'optional' and s['Section'] and s['Source']
        assert s.get('Depends', '') == DEPENDS[name], name
        assert s['Filename'] == './' + os.path.basename(deb(repo, name))
        assert sha256(os.path.join(str(repo), 'repo', s['Filename'])) == s['SHA256']
        assert "stand-in" in s['Description'] and "NVIDIA's package %s %s from its DOCA 2.9.1 repository" % (
            name, VERSIONS[name]) in ' '.join(s['Description'].split())
    for name in ('libibverbs1', 'ibverbs-providers', 'libibumad3', 'librdmacm1', 'libibmad5', 'libibnetdisc5'):
        assert index[name]['Multi-Arch'] == 'same', name
    assert index['rdma-core']['Breaks'] == index['rdma-core']['Replaces'] == 'infiniband-diags (<< 2.0.0)'
    assert index['mlnx-ofed-kernel-utils']['Conflicts'] == 'mlnx-en-utils'
    assert index['mlnx-tools']['Replaces'] == 'mlnx-ofed-kernel-utils (<< 5.4), mlnx-en-utils (<< 5.4)'
    assert index['mlnx-ofed-kernel-dkms']['Provides'] == 'mlnx-rdma-rxe-dkms'


@pytest.mark.skipif(shutil.which('dpkg') is None, reason='needs dpkg')
def test_versions_sort_above_debian_12():
    """apt upgrades Debian's RDMA stack to OFED's because OFED's versions sort higher."""
    for ours, debian in ((CORE, '44.0-2'), (CORE, '56.1-1'), (VERSIONS['perftest'], '4.5+0.17-1')):
        assert subprocess.run(['dpkg', '--compare-versions', ours, 'gt', debian], check=False).returncode == 0


def test_release_is_flat_and_signed(repo, tmp_path):
    folder = os.path.join(str(repo), 'repo')
    with open(os.path.join(folder, 'Release')) as handle:
        text = handle.read()
    head = stanzas(text.split('MD5Sum:')[0])[0]
    assert sorted(head) == ['Date'] and head['Date'] == 'Wed, 01 Jan 2025 00:00:00 GMT'
    assert [line for line in text.splitlines() if not line.startswith(' ')][1:] == ['MD5Sum:', 'SHA1:', 'SHA256:']
    sums = text.split('SHA256:\n')[1].split()
    for name in ('Packages', 'Packages.gz'):
        digest, size = sums[sums.index(name) - 2], sums[sums.index(name) - 1]
        assert (digest, int(size)) == (sha256(os.path.join(folder, name)), os.path.getsize(os.path.join(folder, name)))
    keyrings = {}
    for key in ('key', 'wrong-key'):
        keyrings[key] = str(tmp_path / (key + '.gpg'))
        subprocess.run(['gpg', '--homedir', str(tmp_path), '--batch', '--yes', '--output', keyrings[key], '--dearmor',
                        os.path.join(str(repo), key + '.asc')], check=True)
    signature = [os.path.join(folder, f) for f in ('Release.gpg', 'Release')]
    good = subprocess.run(['gpgv', '--keyring', keyrings['key']] + signature, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert good.returncode == 0, good.stderr
    bad = subprocess.run(['gpgv', '--keyring', keyrings['wrong-key']] + signature, stderr=subprocess.PIPE,
                         universal_newlines=True, env=C_LOCALE, check=False)
    assert bad.returncode != 0 and 'No public key' in bad.stderr


def test_openib_conf_and_openibd(repo):
    utils = deb(repo, 'mlnx-ofed-kernel-utils')
    shipped = files(utils)
    for path in ('/etc/infiniband/openib.conf', '/etc/modprobe.d/ib_ipoib.conf', '/lib/systemd/system/openibd.service'):
        assert shipped[path] == '-rw-r--r--', path
    assert shipped['/etc/init.d/openibd'] == '-rwxr-xr-x'
    conf = member(utils, '/etc/infiniband/openib.conf')
    keys = [line.split('=', 1) for line in conf.splitlines() if line and not line.startswith('#')]
    assert [pair[0] for pair in keys] == list(OPENIB) and dict(keys) == OPENIB  # real keys, order and defaults
    assert 'IPOIB_LOAD' not in conf and '_LOAD=' not in conf.replace('LOAD_EIPOIB', '')  # the DKMS build has none
    assert control_member(utils, 'conffiles') == '/etc/infiniband/openib.conf\n/etc/modprobe.d/ib_ipoib.conf\n'
    assert 'alias netdev-ib* ib_ipoib\n' in member(utils, '/etc/modprobe.d/ib_ipoib.conf')

    unit = member(utils, '/lib/systemd/system/openibd.service')
    for line in ('Type=oneshot', 'RemainAfterExit=yes', 'ExecStart=/etc/init.d/openibd start bootid=%b',
                 'ExecStop=/etc/init.d/openibd stop', 'WantedBy=sysinit.target'):
        assert line + '\n' in unit
    openibd = member(utils, '/etc/init.d/openibd')
    assert '# Provides:          openibd\n' in openibd  # LSB header: update-rc.d takes it
    started = run_script(openibd, 'start')
    assert started.returncode == 0 and 'stand-in' in started.stderr and started.stdout == ''
    assert run_script(openibd, 'bogus').returncode == 1

    postinst = control_member(utils, 'postinst')
    assert 'update-rc.d openibd defaults' in postinst and 'systemctl enable openibd' in postinst
    assert ('echo "options ib_ipoib send_queue_size=128 recv_queue_size=128" >> /etc/modprobe.d/ib_ipoib.conf'
            in postinst)
    assert 'echo "* soft memlock unlimited" >> /etc/security/limits.conf' in postinst and '/.dockerenv' in postinst
    prerm = control_member(utils, 'prerm')
    assert 'update-rc.d -f openibd remove' in prerm and 'systemctl disable openibd' in prerm


def test_programs_and_layout(repo):
    tools = deb(repo, 'mlnx-tools')
    assert files(tools)['/usr/bin/mlnx_qos'] == '-rwxr-xr-x'
    qos = run_script(member(tools, '/usr/bin/mlnx_qos'), '-i', 'eth0')
    assert qos.returncode == 1 and qos.stdout == '' and 'mlnx_qos: package stand-in' in qos.stderr

    scripts = deb(repo, 'ofed-scripts')
    assert files(scripts)['/usr/bin/ofed_info'] == '-rwxr-xr-x'
    info = member(scripts, '/usr/bin/ofed_info')
    assert run_script(info, '-s').stdout == 'OFED-internal-24.10-1.1.4.0:\n'
    assert run_script(info, '-n').stdout == '24.10-1.1.4.0\n'
    assert run_script(member(scripts, '/usr/sbin/ofed_uninstall.sh')).returncode == 1

    assert list(files(deb(repo, 'mlnx-ofed-kernel-dkms'))) == [
        '/usr/share/doc/mlnx-ofed-kernel-dkms/README.gpuops']  # no DKMS sources: builds nothing
    for name in FAMILY + ['doca-ofed', 'perftest']:
        # OFED's rdma-core ships no /etc/rdma/modules and no rdma-load-modules@.service: openibd loads the modules
        assert list(files(deb(repo, name))) == ['/usr/share/doc/%s/README.gpuops' % name], name


@pytest.mark.skipif(shutil.which('apt-get') is None, reason='needs apt-get')
def test_apt_installs_fresh_and_over_debian(repo, tmp_path):
    """apt-get update, and simulated installs of doca-ofed against a scratch apt root that has only this repository:
    on a host without an RDMA stack, and on one with Debian 12's, which it upgrades."""
    root = tmp_path / 'apt'
    for folder in ('etc/apt/sources.list.d', 'etc/apt/preferences.d', 'etc/apt/apt.conf.d', 'var/lib/dpkg',
                   'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial'):
        (root / folder).mkdir(parents=True)
    status = root / 'var/lib/dpkg/status'
    sources = root / 'etc/apt/sources.list.d/gpuops-doca.sources'

    def installed(packages):
        status.write_text(''.join(
            'Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: %s\n%sMaintainer: x\n'
            'Description: x\n\n' % (name, version, arch, MULTI_ARCH.get(name[:3], ''))
            for name, version, arch in packages))

    def point_at(key):
        sources.write_text('Types: deb\nURIs: file://%s/repo/\nSuites: /\nSigned-By: %s/%s\n' % (repo, repo, key))

    def apt(*args):
        argv = [args[0], '-o', 'Dir=' + str(root), '-o', 'Dir::State::status=%s' % status,
                '-o', 'Dir::Etc::SourceList=/dev/null', '-o', 'APT::Architecture=amd64', '-o', 'Debug::NoLocking=1',
                '-o', 'APT::Sandbox::User=' + ('root' if os.geteuid() == 0 else 'nobody')] + list(args[1:])
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=C_LOCALE, check=False)

    def inst(result):
        """{package: (old version or None, new version)} from apt-get -s."""
        plan = {}
        for line in result.stdout.splitlines():
            if line.startswith('Inst '):
                words = line.split()
                old = words[2][1:-1] if words[2].startswith('[') else None
                plan[words[1]] = (old, words[3 if old else 2].lstrip('('))
        return plan

    installed(DEBIAN)
    point_at('key.asc')
    update = apt('apt-get', 'update', '--error-on=any')
    assert update.returncode == 0, update.stdout
    assert 'Release.gpg' in update.stdout

    fresh = apt('apt-get', '-s', 'install', '--no-install-recommends', 'doca-ofed')
    assert fresh.returncode == 0, fresh.stdout
    assert inst(fresh) == dict((name, (None, version)) for name, version in VERSIONS.items())

    installed(DEBIAN + DEBIAN_RDMA)
    over = apt('apt-get', '-s', 'install', '--no-install-recommends', 'doca-ofed')
    assert over.returncode == 0, over.stdout
    upgraded = dict((entry[0], (entry[1], VERSIONS[entry[0]])) for entry in DEBIAN_RDMA)
    new = dict((name, (None, VERSIONS[name])) for name in set(VERSIONS) - set(upgraded))
    assert inst(over) == dict(upgraded, **new)
    assert 'Remv ' not in over.stdout

    point_at('wrong-key.asc')
    wrong = apt('apt-get', 'update', '--error-on=any')
    assert wrong.returncode != 0 and 'NO_PUBKEY' in wrong.stdout


def test_second_run_does_nothing_rebuild_is_identical_other_release(tmp_path):
    out = tmp_path / 'out'
    assert build(out).returncode == 0
    record = {p: os.stat(os.path.join(str(out), p)).st_mtime_ns for p in ('repo/Release.gpg', 'key.asc', '.inputs')}
    debs = dict((name, sha256(deb(out, name))) for name in NAMES)
    indexes = dict((name, sha256(os.path.join(str(out), 'repo', name))) for name in ('Packages', 'Release'))
    again = build(out)
    assert again.returncode == 0 and 'is current' in again.stdout
    assert record == {p: os.stat(os.path.join(str(out), p)).st_mtime_ns for p in record}
    with open(os.path.join(str(out), 'key.asc')) as handle:
        key = handle.read()
    forced = build(out, '--force')
    assert forced.returncode == 0 and 'built' in forced.stdout
    assert debs == dict((name, sha256(deb(out, name))) for name in NAMES)  # the same bytes
    assert indexes == dict((name, sha256(os.path.join(str(out), 'repo', name))) for name in ('Packages', 'Release'))
    # another release: rebuilt in place with its versions, same key
    other = build(out, '--release', '2.10.0')
    assert other.returncode == 0 and 'DOCA 2.10.0, OFED 25.01-0.6.0.0' in other.stdout
    with open(os.path.join(str(out), 'key.asc')) as handle:
        assert handle.read() == key
    assert os.path.exists(deb(out, 'rdma-core', '2501mlnx56-1.2501060'))
    assert os.path.exists(deb(out, 'mlnx-ofed-kernel-utils', '25.01.OFED.25.01.0.6.0.1-1'))
    assert not os.path.exists(deb(out, 'rdma-core'))
    bad = build(tmp_path / 'bad', '--release', '9.9.9')
    assert bad.returncode == 2 and "invalid choice: '9.9.9'" in bad.stderr
