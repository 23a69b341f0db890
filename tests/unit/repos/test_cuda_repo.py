# -*- coding: utf-8 -*-
"""tests/repo/build_cuda_repo.py: the local, signed, flat apt repository of stand-ins for NVIDIA's DCGM,
dcgm-exporter and NCCL packages is built and signed, carries NVIDIA's names, versions (epoch 1 for DCGM) and
relations, ships the units, the core postinst, the counters file and the stand-in programs at NVIDIA's paths, and is
accepted by apt (scratch apt root, no container): pinned installs, strict version coupling, the DCGM 3 downgrade
trap of the unversioned name, and a wrong key that fails."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import gzip
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from repo_paths import REPO as ROOT

SCRIPT = os.path.join(ROOT, 'tests', 'repo', 'build_cuda_repo.py')
MISSING = [tool for tool in ('dpkg-deb', 'apt-ftparchive', 'gpg', 'gpgv') if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason='needs %s (Debian: apt-utils, gpg)' % ', '.join(MISSING))

C_LOCALE = dict(os.environ, LC_ALL='C')  # the checks read English messages
OLD, MID, NEW, DCGM3 = '1:4.2.3', '1:4.4.1-1', '1:4.6.0-1', '1:3.3.9'
EXPORTER = {OLD: '4.1.3-1', MID: '4.6.0-1', NEW: '4.8.3-1'}
UPSTREAM = {OLD: '4.2.3', MID: '4.4.1', NEW: '4.6.0'}
NCCL_OLD, NCCL_NEW = '2.23.4-1+cuda12.6', '2.26.2-1+cuda12.8'
D4 = 'datacenter-gpu-manager-4'
CORE = D4 + '-core'


def expected():
    """{(package, version): Depends} of every package the repository must hold."""
    result = {('datacenter-gpu-manager', DCGM3): 'libc6 (>= 2.17)'}
    for v, cudas in ((OLD, (11, 12)), (MID, (11, 12, 13)), (NEW, (11, 12, 13))):
        eq = '(= %s)' % v
        result[(CORE, v)] = 'libc6 (>= 2.27)' + (', lshw' if v != OLD else '')
        for c in cudas:
            result[('%s-cuda%d' % (D4, c), v)] = '%s %s' % (CORE, eq)
            result[('%s-proprietary-cuda%d' % (D4, c), v)] = '%s-proprietary %s, %s-cuda%d %s' % (D4, eq, D4, c, eq)
        result[(D4 + '-cuda-all', v)] = ', '.join('%s-cuda%d %s' % (D4, c, eq) for c in cudas)
        result[(D4 + '-proprietary', v)] = result[(D4 + '-dev', v)] = '%s %s' % (CORE, eq)
        result[('datacenter-gpu-manager-exporter', EXPORTER[v])] = '%s %s' % (CORE, eq)
    for v in (NCCL_OLD, NCCL_NEW):
        result[('libnccl2', v)] = ''
        result[('libnccl-dev', v)] = 'libnccl2 (= %s)' % v
    return result


def build(out, *args):
    return subprocess.run([sys.executable, SCRIPT, '--out', str(out)] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def stanzas(text):
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


def deb(repo, name, version):
    return os.path.join(str(repo), 'repo', '%s_%s_amd64.deb' % (name, version.split(':', 1)[-1]))


def files(path):
    listing = subprocess.run(['dpkg-deb', '-c', path], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    return dict((line.split()[5][1:], line.split()[0]) for line in listing.splitlines() if line[0] in '-l')


def links(path):
    listing = subprocess.run(['dpkg-deb', '-c', path], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    return dict((line.split()[5][1:], line.split()[7]) for line in listing.splitlines() if line[0] == 'l')


def member(path, name):
    tar = subprocess.run(['dpkg-deb', '--fsys-tarfile', path], stdout=subprocess.PIPE, check=True).stdout
    return subprocess.run(['tar', '-xO', '.' + name], input=tar, stdout=subprocess.PIPE, check=True).stdout.decode()


def control(path, name):
    return subprocess.run(['dpkg-deb', '-I', path, name], stdout=subprocess.PIPE, universal_newlines=True,
                          check=False).stdout


@pytest.fixture(scope='module')
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp('cuda-repo') / 'out'
    result = build(out)
    assert result.returncode == 0, result.stderr
    return out


def test_packages_index(repo):
    with open(os.path.join(str(repo), 'repo', 'Packages')) as handle:
        text = handle.read()
    with gzip.open(os.path.join(str(repo), 'repo', 'Packages.gz'), 'rt') as handle:
        assert handle.read() == text
    index = stanzas(text)
    want = expected()
    assert sorted((s['Package'], s['Version']) for s in index) == sorted(want)
    for s in index:
        assert s.get('Depends', '') == want[(s['Package'], s['Version'])], s['Package']
        assert s['Architecture'] == 'amd64' and s['Section'] and s['Source']
        assert s['Filename'] == './%s_%s_amd64.deb' % (s['Package'], s['Version'].split(':', 1)[-1])  # no epoch
        assert sha256(os.path.join(str(repo), 'repo', s['Filename'])) == s['SHA256']
        assert "NVIDIA's package %s %s" % (s['Package'], s['Version']) in ' '.join(s['Description'].split())
    by = dict(((s['Package'], s['Version']), s) for s in index)
    assert by[(CORE, OLD)]['Conflicts'] == by[(CORE, NEW)]['Conflicts'] == 'datacenter-gpu-manager'
    assert by[(CORE, NEW)]['Pre-Depends'] == 'passwd, login' and 'Pre-Depends' not in by[(CORE, OLD)]
    assert by[(D4 + '-cuda12', NEW)]['Provides'] == '%s (= %s)' % (D4, NEW)
    assert by[(D4 + '-cuda12', NEW)]['Recommends'] == 'libnuma1' and 'Recommends' not in by[(D4 + '-cuda12', OLD)]
    old3 = by[('datacenter-gpu-manager', DCGM3)]
    assert old3['Provides'] == 'datacenter-gpu-manager' and old3['Conflicts'] == old3['Replaces']
    assert old3['Conflicts'].startswith('datacenter-gpu-manager, datacenter-gpu-manager-fabricmanager (<< 2.0)')


def test_release_is_signed(repo, tmp_path):
    folder = os.path.join(str(repo), 'repo')
    with open(os.path.join(folder, 'Release')) as handle:
        head = stanzas(handle.read().split('MD5Sum:')[0])[0]
    assert head['Origin'] == 'NVIDIA' and head['Label'] == 'NVIDIA CUDA' and 'Components' not in head
    keyrings = {}
    for key in ('key', 'wrong-key'):
        keyrings[key] = str(tmp_path / (key + '.gpg'))
        subprocess.run(['gpg', '--homedir', str(tmp_path), '--batch', '--yes', '--output', keyrings[key], '--dearmor',
                        os.path.join(str(repo), key + '.asc')], check=True)
    for signature in (['InRelease'], ['Release.gpg', 'Release']):
        paths = [os.path.join(folder, f) for f in signature]
        good = subprocess.run(['gpgv', '--keyring', keyrings['key']] + paths, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
        assert good.returncode == 0, good.stderr
        bad = subprocess.run(['gpgv', '--keyring', keyrings['wrong-key']] + paths, stderr=subprocess.PIPE,
                             universal_newlines=True, env=C_LOCALE, check=False)
        assert bad.returncode != 0 and 'No public key' in bad.stderr


def test_dcgm_contents(repo):
    lib = '/usr/lib/x86_64-linux-gnu/'
    for v, up in sorted(UPSTREAM.items()):
        core = deb(repo, CORE, v)
        assert links(core) == {lib + 'libdcgm.so.4': 'libdcgm.so.' + up}
        listed = files(core)
        for program in ('/usr/bin/dcgmi', '/usr/bin/nv-hostengine'):
            assert listed[program] == '-rwxr-xr-x'
            result = subprocess.run(['sh', '-c', member(core, program)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, universal_newlines=True, check=False)
            assert result.returncode == 1 and result.stdout == '' and 'stand-in' in result.stderr
        unit = member(core, '/usr/lib/systemd/system/nvidia-dcgm.service')
        assert 'ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm\n' in unit
        assert 'Alias=dcgm.service\n' in unit and 'WantedBy=multi-user.target\n' in unit
        postinst = control(core, 'postinst')
        assert 'useradd -Urs /usr/sbin/nologin nvidia-dcgm' in postinst and '/var/log/nvidia-dcgm' in postinst
        assert 'systemctl' not in postinst  # NVIDIA's enables and starts nothing
    assert lib + 'libdcgm.so' in links(deb(repo, D4 + '-dev', NEW))
    assert lib + 'libdcgmmoduleprofiling.so.4.6.0' in files(deb(repo, D4 + '-proprietary', NEW))
    old3 = deb(repo, 'datacenter-gpu-manager', DCGM3)
    assert links(old3) == {lib + 'libdcgm.so.3': 'libdcgm.so.3.3.9'}
    assert 'Conflicts=dcgm.service\n' in member(old3, '/usr/lib/systemd/system/nvidia-dcgm.service')


def test_exporter_contents(repo):
    for v, log in ((OLD, '/var/dcgm-exporter.log'), (MID, '/var/log/dcgm-exporter.log'),
                   (NEW, '/var/log/dcgm-exporter.log')):
        path = deb(repo, 'datacenter-gpu-manager-exporter', EXPORTER[v])
        assert files(path)['/usr/bin/dcgm-exporter'] == '-rwxr-xr-x'
        unit = member(path, '/lib/systemd/system/nvidia-dcgm-exporter.service')
        assert 'ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv\n' in unit
        assert 'StandardOutput=append:%s\n' % log in unit and 'After=nvidia-dcgm.service\n' in unit
        assert control(path, 'conffiles') == '/etc/dcgm-exporter/default-counters.csv\n'
        csv = member(path, '/etc/dcgm-exporter/default-counters.csv')
        enabled = [line.split(',')[0].strip() for line in csv.splitlines() if line and not line.startswith('#')]
        assert len(enabled) == (25 if v == OLD else 26)
        assert enabled[:3] == ['DCGM_FI_DEV_SM_CLOCK', 'DCGM_FI_DEV_MEM_CLOCK', 'DCGM_FI_DEV_MEMORY_TEMP']
        assert 'DCGM_FI_DEV_XID_ERRORS' in enabled and 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' in enabled
        assert ('DCGM_FI_DEV_FB_RESERVED' in enabled) == (v != OLD)
        assert all(len(line.split(',')) >= 3 for line in csv.splitlines() if line and not line.startswith('#'))


def test_nccl_contents(repo):
    lib = '/usr/lib/x86_64-linux-gnu/'
    assert links(deb(repo, 'libnccl2', NCCL_OLD)) == {lib + 'libnccl.so.2': 'libnccl.so.2.23.4'}
    assert links(deb(repo, 'libnccl2', NCCL_NEW)) == {lib + 'libnccl.so.2': 'libnccl.so.2.26.2'}
    old, new = files(deb(repo, 'libnccl-dev', NCCL_OLD)), files(deb(repo, 'libnccl-dev', NCCL_NEW))
    assert '/usr/include/nccl.h' in old and '/usr/include/nccl_net.h' in old and '/usr/bin/ncclras' not in old
    assert '/usr/include/nccl.h' in new and '/usr/bin/ncclras' in new
    assert links(deb(repo, 'libnccl-dev', NCCL_NEW)) == {lib + 'libnccl.so': 'libnccl.so.2'}


@pytest.mark.skipif(shutil.which('apt-get') is None, reason='needs apt-get')
def test_apt_pins_couples_and_traps(repo, tmp_path):
    """apt-get update, madison and simulated installs against a scratch apt root that only has this repository."""
    root = tmp_path / 'apt'
    for folder in ('etc/apt/sources.list.d', 'etc/apt/preferences.d', 'etc/apt/apt.conf.d', 'var/lib/dpkg',
                   'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial'):
        (root / folder).mkdir(parents=True)
    status = root / 'var/lib/dpkg/status'
    base = ''.join('Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\nMaintainer: x\n'
                   'Description: x\n\n' % pkg for pkg in (
                       ('libc6', '2.36-9+deb12u4'), ('lshw', '02.19.git.2021.06.19.996aaad9c7-2'),
                       ('passwd', '1:4.13+dfsg1-1'), ('login', '1:4.13+dfsg1-1')))
    status.write_text(base)
    sources = root / 'etc/apt/sources.list.d/gpuops-cuda.sources'

    def point_at(key):
        sources.write_text('Types: deb\nURIs: file://%s/repo/\nSuites: /\nSigned-By: %s/%s\n' % (repo, repo, key))

    def apt(*args):
        argv = [args[0], '-o', 'Dir=' + str(root), '-o', 'Dir::State::status=%s' % status,
                '-o', 'Dir::Etc::SourceList=/dev/null', '-o', 'APT::Architecture=amd64', '-o', 'Debug::NoLocking=1',
                '-o', 'APT::Sandbox::User=' + ('root' if os.geteuid() == 0 else 'nobody')] + list(args[1:])
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=C_LOCALE, check=False)

    def install(*names):
        result = apt('apt-get', '-s', 'install', '--no-install-recommends', *names)
        return result, dict((l.split()[1], l.split()[2].strip('([')) for l in result.stdout.splitlines()
                            if l.startswith('Inst '))

    point_at('key.asc')
    update = apt('apt-get', 'update', '--error-on=any')
    assert update.returncode == 0, update.stdout
    madison = apt('apt-cache', 'madison', CORE).stdout
    assert [line.split('|')[1].strip() for line in madison.splitlines()] == [NEW, MID, OLD]

    newest, inst = install(D4 + '-cuda12')  # unversioned: the newest, core coupled to it
    assert newest.returncode == 0, newest.stdout
    assert inst == {CORE: NEW, D4 + '-cuda12': NEW}
    pinned, inst = install('%s=%s' % (CORE, OLD), '%s-cuda12=%s' % (D4, OLD),
                           'datacenter-gpu-manager-exporter=' + EXPORTER[OLD])
    assert pinned.returncode == 0, pinned.stdout
    assert inst == {CORE: OLD, D4 + '-cuda12': OLD, 'datacenter-gpu-manager-exporter': EXPORTER[OLD]}
    mixed = install('%s=%s' % (CORE, NEW), '%s-cuda12=%s' % (D4, OLD))[0]
    assert mixed.returncode != 0 and 'Depends: %s (= %s)' % (CORE, OLD) in mixed.stdout
    unpaired = install('datacenter-gpu-manager-exporter=' + EXPORTER[OLD])[0]  # core's candidate is NEW
    assert unpaired.returncode != 0 and 'Depends: %s (= %s)' % (CORE, OLD) in unpaired.stdout

    # the trap: the unversioned DCGM name is DCGM 3, and installing it removes DCGM 4
    trap, inst = install('datacenter-gpu-manager')
    assert trap.returncode == 0 and inst == {'datacenter-gpu-manager': DCGM3}
    status.write_text(base + 'Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n'
                      'Maintainer: x\nDepends: libc6 (>= 2.27)\nConflicts: datacenter-gpu-manager\n'
                      'Description: x\n\n' % (CORE, OLD))
    trap = apt('apt-get', '-s', 'install', '--no-install-recommends', 'datacenter-gpu-manager')
    assert trap.returncode == 0 and 'Remv %s [%s]' % (CORE, OLD) in trap.stdout
    upgrade = apt('apt-get', '-s', 'install', '--no-install-recommends', '%s=%s' % (CORE, NEW))
    assert upgrade.returncode == 0 and 'Inst %s [%s] (%s ' % (CORE, OLD, NEW) in upgrade.stdout
    status.write_text(base)

    nccl, inst = install('libnccl-dev=' + NCCL_OLD, 'libnccl2=' + NCCL_OLD)
    assert nccl.returncode == 0 and inst == {'libnccl2': NCCL_OLD, 'libnccl-dev': NCCL_OLD}
    nccl, inst = install('libnccl-dev')
    assert nccl.returncode == 0 and inst == {'libnccl2': NCCL_NEW, 'libnccl-dev': NCCL_NEW}

    point_at('wrong-key.asc')
    wrong = apt('apt-get', 'update', '--error-on=any')
    assert wrong.returncode != 0 and 'NO_PUBKEY' in wrong.stdout


def test_second_run_does_nothing(repo):
    record = {p: os.stat(os.path.join(str(repo), p)).st_mtime_ns for p in ('repo/InRelease', 'key.asc', '.inputs')}
    again = build(repo)
    assert again.returncode == 0 and 'is current' in again.stdout
    assert record == {p: os.stat(os.path.join(str(repo), p)).st_mtime_ns for p in record}
    debs = dict((name, sha256(os.path.join(str(repo), 'repo', name)))
                for name in os.listdir(os.path.join(str(repo), 'repo')) if name.endswith('.deb'))
    forced = build(repo, '--force')
    assert forced.returncode == 0 and 'built' in forced.stdout
    assert debs == dict((name, sha256(os.path.join(str(repo), 'repo', name))) for name in debs)


def test_driver_versions_make_one_repository_like_nvidias(tmp_path):
    out = tmp_path / 'with-driver'
    result = build(out, '--driver-versions', '580.126.20-1')
    assert result.returncode == 0, result.stderr
    with open(os.path.join(str(out), 'repo', 'Packages')) as handle:
        names = set((s['Package'], s['Version']) for s in stanzas(handle.read()))
    assert ('nvidia-smi', '580.126.20-1') in names and ('nvidia-kernel-open-dkms', '580.126.20-1') in names
    assert ('datacenter-gpu-manager-4-core', '1:4.4.1-1') in names and ('libnccl2', '2.23.4-1+cuda12.6') in names
    # another driver list is another repository
    assert 'built' in build(out, '--driver-versions', '580.159.04-1').stdout
