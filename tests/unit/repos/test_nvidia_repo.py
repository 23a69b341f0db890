# -*- coding: utf-8 -*-
"""tests/repo/build_nvidia_repo.py: the local, signed, flat apt repository of stand-ins for NVIDIA's debian12 driver
packages is built, signed, laid out like NVIDIA's, version-coupled, and accepted by apt (in a scratch apt root, no
container), and a second run with the same arguments does nothing. Its pinning packages' pin file makes real apt
choose the pinned version, and the plan module (through ansible-playbook) plans the target's pinning package on
Debian as on Ubuntu (the role installs it on its own, first: the scenario nvidia_driver runs that). What it cannot
prove: NVIDIA's own pin file beyond the stanza a real one is quoted with, or the pinning packages' revisions
(tests/repo/README.md says what is guessed)."""
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

from apt_root import AptRoot
from repo_paths import REPO as ROOT

from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging

SCRIPT = os.path.join(ROOT, 'tests', 'repo', 'build_nvidia_repo.py')
MISSING = [tool for tool in ('dpkg-deb', 'apt-ftparchive', 'gpg') if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason='needs %s (Debian: apt-utils, gpg)' % ', '.join(MISSING))

C_LOCALE = dict(os.environ, LC_ALL='C')  # the checks read English messages
# what the base image has installed that the packages depend on
BASE = (('adduser', '3.134', 'all'), ('libc6', '2.36-9+deb12u4', 'amd64'))
OLD, NEW = '580.126.20-1', '580.159.04-1'
NAMES = ['firmware-nvidia-gsp', 'libcuda1', 'libnvidia-ml1', 'libnvidia-pkcs11-openssl3', 'libnvidia-ptxjitcompiler1',
         'nvidia-alternative', 'nvidia-driver-cuda', 'nvidia-fabricmanager', 'nvidia-kernel-dkms',
         'nvidia-kernel-open-dkms', 'nvidia-kernel-support', 'nvidia-modprobe', 'nvidia-persistenced', 'nvidia-smi']
PINS = [('nvidia-driver-pinning-580', '580-1'), ('nvidia-driver-pinning-580.126.20', OLD),
        ('nvidia-driver-pinning-580.159.04', NEW)]
# Debian's relations (nvidia-graphics-drivers, which NVIDIA's debian12 repository rebuilds): {v} the package version,
# {u} the upstream version
ALTERNATIVE = 'nvidia-alternative (= {v})'
DEPENDS = {
    'libnvidia-ml1': ALTERNATIVE,
    'libnvidia-ptxjitcompiler1': ALTERNATIVE,
    'libnvidia-pkcs11-openssl3': ALTERNATIVE,
    'libcuda1': ALTERNATIVE + ', libnvidia-ptxjitcompiler1 (= {v}), libnvidia-pkcs11-openssl3 (= {v})',
    'nvidia-smi': ALTERNATIVE + ', libnvidia-ml1 (= {v})',
    'nvidia-kernel-support': ALTERNATIVE + ', nvidia-modprobe (>= 580)',
    'nvidia-kernel-dkms': 'firmware-nvidia-gsp (= {u}) | firmware-nvidia-gsp-{u}, nvidia-kernel-support--v1',
    'nvidia-kernel-open-dkms': 'firmware-nvidia-gsp (= {u}) | firmware-nvidia-gsp-{u}, nvidia-kernel-support--v1',
    'nvidia-driver-cuda': 'nvidia-smi (= {v}), libcuda1 (= {v})',
    'nvidia-persistenced': 'libnvidia-ml1 (= {v}), adduser',
    'nvidia-fabricmanager': 'libc6 (>= 2.2.1)',
}


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


def deb(repo, name, version):
    arch = 'all' if name.startswith('nvidia-driver-pinning-') else 'amd64'
    return os.path.join(str(repo), 'repo', '%s_%s_%s.deb' % (name, version, arch))


def listing(path):
    return subprocess.run(['dpkg-deb', '-c', path], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout


def member(path, name):
    tar = subprocess.run(['dpkg-deb', '--fsys-tarfile', path], stdout=subprocess.PIPE, check=True).stdout
    return subprocess.run(['tar', '-xO', '.' + name], input=tar, stdout=subprocess.PIPE, check=True).stdout.decode()


@pytest.fixture(scope='module')
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp('nvidia-repo') / 'out'
    result = build(out)
    assert result.returncode == 0, result.stderr
    return out


def test_layout_and_modes(repo):
    for path in ('repo/Packages', 'repo/Packages.gz', 'repo/Release', 'repo/Release.gpg', 'repo/InRelease',
                 'key.asc', 'wrong-key.asc', '.inputs'):
        assert os.path.isfile(os.path.join(str(repo), path)), path
    for root, dirs, files in os.walk(str(repo)):
        dirs[:] = [d for d in dirs if d != 'gnupg']  # gpg's home stays private
        for name in dirs + files + ['.']:
            mode = os.stat(os.path.join(root, name)).st_mode
            assert mode & stat.S_IROTH and (not stat.S_ISDIR(mode) or mode & stat.S_IXOTH), os.path.join(root, name)
    with open(os.path.join(str(repo), 'key.asc')) as key, open(os.path.join(str(repo), 'wrong-key.asc')) as wrong:
        key, wrong = key.read(), wrong.read()
    assert key.startswith('-----BEGIN PGP PUBLIC KEY BLOCK-----') and wrong.startswith('-----BEGIN PGP PUBLIC KEY')
    assert key != wrong


def test_packages_index(repo):
    with open(os.path.join(str(repo), 'repo', 'Packages')) as handle:
        text = handle.read()
    with gzip.open(os.path.join(str(repo), 'repo', 'Packages.gz'), 'rt') as handle:
        assert handle.read() == text
    index = stanzas(text)
    assert sorted((s['Package'], s['Version']) for s in index) == sorted(
        [(name, v) for name in NAMES for v in (OLD, NEW)] + PINS)
    for s in index:
        v = s['Version']
        if s['Package'].startswith('nvidia-driver-pinning-'):
            assert s['Architecture'] == 'all' and 'Depends' not in s
            assert s['Provides'] == s['Conflicts'] == s['Replaces'] == 'nvidia-driver-pinning'
            assert s['Filename'] == './%s_%s_all.deb' % (s['Package'], v)
            assert sha256(os.path.join(str(repo), 'repo', s['Filename'])) == s['SHA256']
            assert 'guessed' in s['Description'] and "NVIDIA's package %s %s" % (s['Package'], v) in ' '.join(
                s['Description'].split())
            continue
        assert s['Architecture'] == 'amd64'
        assert s['Maintainer'] == 'gpuops.node test repository <repo@gpuops.invalid>'
        assert s['Priority'] == 'optional' and s['Section'] and s['Source']
        assert s.get('Depends', '') == DEPENDS.get(s['Package'], '').format(v=v, u=v.rsplit('-', 1)[0])
        assert s['Filename'] == './%s_%s_amd64.deb' % (s['Package'], v)
        assert sha256(os.path.join(str(repo), 'repo', s['Filename'])) == s['SHA256']
        assert 'stand-in' in s['Description'] and "NVIDIA's package %s %s" % (s['Package'], v) in ' '.join(
            s['Description'].split())
    multi_arch = dict((s['Package'], s.get('Multi-Arch')) for s in index)
    assert multi_arch['libnvidia-ml1'] == multi_arch['libcuda1'] == 'same'


def test_release_is_flat_and_signed(repo, tmp_path):
    folder = os.path.join(str(repo), 'repo')
    with open(os.path.join(folder, 'Release')) as handle:
        text = handle.read()
    head = stanzas(text.split('MD5Sum:')[0])[0]
    assert head['Origin'] == 'NVIDIA' and head['Label'] == 'NVIDIA CUDA' and head['Architecture'] == 'amd64'
    assert head['Acquire-By-Hash'] == 'no' and head['Date']
    assert 'Components' not in head and 'Suite' not in head
    sums = text.split('SHA256:\n')[1].split('SHA512:')[0].split()
    for name in ('Packages', 'Packages.gz'):
        digest, size = sums[sums.index(name) - 2], sums[sums.index(name) - 1]
        assert (digest, int(size)) == (sha256(os.path.join(folder, name)), os.path.getsize(os.path.join(folder, name)))
    keyrings = {}
    for key in ('key', 'wrong-key'):
        keyrings[key] = str(tmp_path / (key + '.gpg'))
        subprocess.run(['gpg', '--homedir', str(tmp_path), '--batch', '--yes', '--output', keyrings[key], '--dearmor',
                        os.path.join(str(repo), key + '.asc')], check=True)
    signed = str(tmp_path / 'signed')
    good = subprocess.run(['gpgv', '--keyring', keyrings['key'], '--output', signed, os.path.join(folder, 'InRelease')],
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert good.returncode == 0, good.stderr
    with open(signed) as handle:
        assert handle.read() == text
    detached = ['Release.gpg', 'Release']
    assert subprocess.run(['gpgv', '--keyring', keyrings['key']] + [os.path.join(folder, f) for f in detached],
                          stderr=subprocess.DEVNULL, check=False).returncode == 0
    for signature in (['InRelease'], detached):
        files = [os.path.join(folder, f) for f in signature]
        bad = subprocess.run(['gpgv', '--keyring', keyrings['wrong-key']] + files,
                             stderr=subprocess.PIPE, universal_newlines=True, env=C_LOCALE, check=False)
        assert bad.returncode != 0 and 'No public key' in bad.stderr


def test_package_contents(repo):
    lib = './usr/lib/x86_64-linux-gnu/'
    ml = listing(deb(repo, 'libnvidia-ml1', OLD))
    assert lib + 'libnvidia-ml.so.1 -> libnvidia-ml.so.580.126.20' in ml and lib + 'libnvidia-ml.so.580.126.20' in ml
    assert lib + 'libcuda.so.1 -> libcuda.so.580.159.04' in listing(deb(repo, 'libcuda1', NEW))
    assert 'placeholder' in member(deb(repo, 'libnvidia-ml1', OLD), lib[1:] + 'libnvidia-ml.so.580.126.20')
    assert './usr/lib/firmware/nvidia/580.126.20/gsp_ga10x.bin' in listing(deb(repo, 'firmware-nvidia-gsp', OLD))
    for name in ('nvidia-kernel-dkms', 'nvidia-kernel-open-dkms'):
        files = [line.split()[-1] for line in listing(deb(repo, name, OLD)).splitlines() if line.startswith('-')]
        assert files == ['./usr/share/doc/%s/README.gpuops' % name]  # no DKMS sources: builds nothing
    smi = deb(repo, 'nvidia-smi', OLD)
    assert '-rwxr-xr-x root/root' in [l for l in listing(smi).splitlines() if l.endswith('./usr/bin/nvidia-smi')][0]
    result = subprocess.run(['sh', '-c', member(smi, '/usr/bin/nvidia-smi')], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert result.returncode == 1 and result.stdout == ''
    assert 'stand-in' in result.stderr and 'gpuops GPU simulator' in result.stderr

    persistenced = deb(repo, 'nvidia-persistenced', OLD)
    unit = member(persistenced, '/lib/systemd/system/nvidia-persistenced.service')
    assert 'ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced\n' in unit and 'Type=forking\n' in unit
    postinst = subprocess.run(['dpkg-deb', '-I', persistenced, 'postinst'], stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout
    assert 'adduser --system --group' in postinst and '[ -d /run/systemd/system ]' in postinst
    assert 'daemon-reload' in postinst and 'enable' not in postinst and 'start' not in postinst

    fm = deb(repo, 'nvidia-fabricmanager', NEW)
    unit = member(fm, '/lib/systemd/system/nvidia-fabricmanager.service')
    assert 'Type=forking\n' in unit
    assert 'ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg\n' in unit
    cfg = dict(line.split('=', 1) for line in member(fm, '/usr/share/nvidia/nvswitch/fabricmanager.cfg').splitlines()
               if line and not line.startswith('#'))
    assert cfg['LOG_LEVEL'] == '4' and cfg['DAEMONIZE'] == '1' and cfg['FABRIC_MODE'] == '0'
    assert cfg['LOG_FILE_NAME'] == '/var/log/fabricmanager.log' and cfg['STARTING_TCP_PORT'] == '16000'
    assert cfg['BIND_INTERFACE_IP'] == '127.0.0.1'
    conffiles = subprocess.run(['dpkg-deb', '-I', fm, 'conffiles'], stdout=subprocess.PIPE, universal_newlines=True,
                               check=False)
    assert conffiles.stdout == '/usr/share/nvidia/nvswitch/fabricmanager.cfg\n'
    assert '-rwxr-xr-x root/root' in [l for l in listing(fm).splitlines() if l.endswith('/usr/bin/nv-fabricmanager')][0]


@pytest.mark.skipif(shutil.which('apt-get') is None, reason='needs apt-get')
def test_apt_accepts_it_and_couples_versions(repo, tmp_path):
    """apt-get update, madison and a simulated install against a scratch apt root that only has this repository."""
    root = tmp_path / 'apt'
    for folder in ('etc/apt/sources.list.d', 'etc/apt/preferences.d', 'etc/apt/apt.conf.d', 'var/lib/dpkg',
                   'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial'):
        (root / folder).mkdir(parents=True)
    (root / 'var/lib/dpkg/status').write_text(''.join(
        'Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: %s\nMaintainer: x\nDescription: x\n\n'
        % pkg for pkg in BASE))
    sources = root / 'etc/apt/sources.list.d/gpuops-nvidia-driver.sources'

    def point_at(key):
        sources.write_text('Types: deb\nURIs: file://%s/repo/\nSuites: /\nSigned-By: %s/%s\n' % (repo, repo, key))

    def apt(*args):
        argv = [args[0], '-o', 'Dir=' + str(root), '-o', 'Dir::State::status=%s/var/lib/dpkg/status' % root,
                '-o', 'Dir::Etc::SourceList=/dev/null', '-o', 'APT::Architecture=amd64', '-o', 'Debug::NoLocking=1',
                '-o', 'APT::Sandbox::User=' + ('root' if os.geteuid() == 0 else 'nobody')] + list(args[1:])
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=C_LOCALE, check=False)

    point_at('key.asc')
    update = apt('apt-get', 'update', '--error-on=any')
    assert update.returncode == 0, update.stdout
    madison = apt('apt-cache', 'madison', 'nvidia-kernel-open-dkms').stdout
    assert [line.split('|')[1].strip() for line in madison.splitlines()] == [NEW, OLD]

    def install(*pins):
        return apt('apt-get', '-s', 'install', '--no-install-recommends', *pins)

    newest = install('nvidia-kernel-open-dkms', 'nvidia-driver-cuda', 'nvidia-persistenced', 'nvidia-fabricmanager')
    assert newest.returncode == 0, newest.stdout
    assert sorted(l.split()[1] for l in newest.stdout.splitlines() if l.startswith('Inst ')) == sorted(
        set(NAMES) - {'nvidia-kernel-dkms'})
    # an older version installs when every package is pinned to it (apt takes the newest for the others)
    closure = [name for name in NAMES if name != 'nvidia-kernel-dkms']
    old = install(*('%s=%s' % (name, OLD) for name in closure))
    assert old.returncode == 0, old.stdout
    assert all('(%s ' % OLD in l for l in old.stdout.splitlines() if l.startswith('Inst '))
    # the packaging table's list for this repository (the plan module's) is that closure: an older version installs
    role = nvidia_packaging.driver_packages('Debian', 'cuda_repo', '580')
    for flavour in ('open', 'proprietary'):
        names = role['packages'][flavour] + [role['persistenced']['name']]
        pinned = install(*('%s=%s' % (name, OLD) for name in names))
        assert pinned.returncode == 0, (flavour, pinned.stdout)
    # leaving one out (the list before the repository had Debian's relations) breaks the install, as on NVIDIA's
    short = [n for n in role['packages']['open'] if n not in ('nvidia-alternative', 'libnvidia-ptxjitcompiler1')]
    broken = install(*('%s=%s' % (name, OLD) for name in short))
    assert broken.returncode != 0 and 'Depends: nvidia-alternative (= %s) but %s is to be installed' % (OLD, NEW) in (
        broken.stdout)
    mixed = install('nvidia-smi=' + OLD, 'libnvidia-ml1=' + NEW)
    assert mixed.returncode != 0 and 'Depends: libnvidia-ml1 (= %s)' % OLD in mixed.stdout
    # proprietary and open DKMS packages: co-installable (NVIDIA's Conflicts, if any, unconfirmed)
    assert install('nvidia-kernel-dkms', 'nvidia-kernel-open-dkms').returncode == 0

    point_at('wrong-key.asc')
    wrong = apt('apt-get', 'update', '--error-on=any')
    assert wrong.returncode != 0 and 'NO_PUBKEY' in wrong.stdout


def index(repo):
    with open(os.path.join(str(repo), 'repo', 'Packages')) as handle:
        return dict(((s['Package'], s['Version']), s) for s in stanzas(handle.read()))


@pytest.mark.skipif(shutil.which('apt-get') is None or shutil.which('dpkg-query') is None,
                    reason='needs apt-get and dpkg-query')
def test_a_pinning_package_pins_the_driver_for_apt(repo, tmp_path):
    root = AptRoot(tmp_path / 'root', repo, index(repo), BASE, 'Debian', 'debian12')
    pin = '/etc/apt/preferences.d/nvidia-driver-pin'
    text = member(deb(repo, 'nvidia-driver-pinning-580.126.20', OLD), pin)
    assert 'Package: cuda-drivers* src:nvidia-open:any\nPin: version 580.126.20-*\nPin-Priority: 1000\n' in text
    names = [name for name in NAMES if name != 'nvidia-kernel-dkms']
    # no pin: the newest
    assert all('(%s ' % NEW in l for l in root.simulate(names).stdout.splitlines() if l.startswith('Inst '))
    # the version's pin file, as dpkg would unpack it: apt reads it (a stanza it cannot parse fails apt), and every
    # package of the set, named without a version, is taken at the pinned one, the older
    (root.root / pin.lstrip('/')).write_text(text)
    policy = root.apt('apt-cache', 'policy', 'nvidia-smi')
    assert policy.returncode == 0 and 'Candidate: %s' % OLD in policy.stdout, policy.stdout
    done = root.simulate(names)
    inst = [l for l in done.stdout.splitlines() if l.startswith('Inst ')]
    assert done.returncode == 0 and len(inst) == len(names) and all('(%s ' % OLD in l for l in inst), done.stdout
    assert ' %s 1000' % OLD in policy.stdout and ' %s 1000' % NEW not in policy.stdout, policy.stdout
    # the branch's pin file: every version of the branch at 1000, so the newest of the branch
    (root.root / pin.lstrip('/')).write_text(member(deb(repo, 'nvidia-driver-pinning-580', '580-1'), pin))
    policy = root.apt('apt-cache', 'policy', 'nvidia-smi')
    assert policy.returncode == 0 and 'Candidate: %s' % NEW in policy.stdout, policy.stdout
    assert ' %s 1000' % OLD in policy.stdout and ' %s 1000' % NEW in policy.stdout, policy.stdout


@pytest.mark.skipif(shutil.which('apt-get') is None or shutil.which('dpkg-query') is None,
                    reason='needs apt-get and dpkg-query')
def test_the_plan_installs_the_pinning_package_of_the_target_on_debian(repo, tmp_path):
    root = AptRoot(tmp_path / 'root', repo, index(repo), BASE, 'Debian', 'debian12')
    older = root.plan(tmp_path, version='580.126.20')
    assert not older.get('failed'), older.get('msg')
    plan = older['plan']
    assert plan['pinning'] == {'package': 'nvidia-driver-pinning-580.126.20', 'package_version': OLD,
                               'install': True, 'target_version': '580.126.20'}
    assert 'nvidia-driver-pinning-580.126.20' in plan['hold']
    assert set(spec.split('=', 1)[1] for spec in plan['install']) == {OLD}
    done = root.simulate(plan['install'])
    assert done.returncode == 0, done.stdout
    # the branch: the newest version, and that version's own pinning package chosen over the branch's
    newest = root.plan(tmp_path, branch='580')['plan']
    assert newest['target_package_version'] == NEW
    assert newest['pinning']['package'] == 'nvidia-driver-pinning-580.159.04'
    # an upgrade from the older driver, pinned and held: the old pinning package is released and planned for
    # removal; as the role does, the new pinning package goes in its own run first, where apt swaps the two
    # (Conflicts and Replaces nvidia-driver-pinning), then the driver
    installed = [(name, OLD) for name in plan['hold'] if name != 'nvidia-driver-pinning-580.126.20']
    installed.append(('nvidia-driver-pinning-580.126.20', OLD))
    root.status(installed, held=[name for name, _v in installed])
    upgrade = root.plan(tmp_path, version='580.159.04', facts={'driver_installed_version': '580.126.20'})['plan']
    assert upgrade['action'] == 'upgrade'
    assert 'nvidia-driver-pinning-580.126.20' in upgrade['remove'] and 'nvidia-driver-pinning-580.126.20' in (
        upgrade['unhold'])
    root.status(installed)
    pinning = upgrade['pinning']
    assert pinning['package'] == 'nvidia-driver-pinning-580.159.04' and pinning['install']
    swapped = root.simulate(['%s=%s' % (pinning['package'], pinning['package_version'])])
    assert swapped.returncode == 0, swapped.stdout
    assert 'Remv nvidia-driver-pinning-580.126.20' in swapped.stdout
    root.status([(n, v) for n, v in installed if n != 'nvidia-driver-pinning-580.126.20']
                + [(pinning['package'], pinning['package_version'])])
    driver = root.simulate(upgrade['install'])
    inst = [l for l in driver.stdout.splitlines() if l.startswith('Inst ')]
    assert driver.returncode == 0 and inst and all('(%s ' % NEW in l for l in inst), driver.stdout


def test_second_run_does_nothing_and_key_is_kept(tmp_path):
    out = tmp_path / 'out'
    assert build(out, '--versions', OLD).returncode == 0
    record = {p: os.stat(os.path.join(str(out), p)).st_mtime_ns for p in ('repo/InRelease', 'key.asc', '.inputs')}
    debs = dict((name, sha256(deb(out, name, version))) for name, version in
                [(name, OLD) for name in NAMES] + PINS[:2])
    again = build(out, '--versions', OLD)
    assert again.returncode == 0 and 'is current' in again.stdout
    assert record == {p: os.stat(os.path.join(str(out), p)).st_mtime_ns for p in record}
    with open(os.path.join(str(out), 'key.asc')) as handle:
        key = handle.read()
    # other arguments: rebuilt, same key, and byte-identical packages for the version both builds hold
    other = build(out, '--versions', '%s,%s' % (OLD, NEW))
    assert other.returncode == 0 and 'built' in other.stdout
    with open(os.path.join(str(out), 'key.asc')) as handle:
        assert handle.read() == key
    assert debs == dict((name, sha256(deb(out, name, version))) for name, version in
                        [(name, OLD) for name in NAMES] + PINS[:2])
    assert os.path.exists(deb(out, 'nvidia-smi', NEW))


def test_fabricmanager_name_before_580_and_bad_versions(tmp_path):
    out = tmp_path / 'out'
    assert build(out, '--versions', '575.57.08-1').returncode == 0
    assert os.path.exists(deb(out, 'nvidia-fabricmanager-575', '575.57.08-1'))
    assert not os.path.exists(deb(out, 'nvidia-fabricmanager', '575.57.08-1'))
    bad = build(tmp_path / 'bad', '--versions', '580.126.20')
    assert bad.returncode == 2 and 'like 580.126.20-1' in bad.stderr
