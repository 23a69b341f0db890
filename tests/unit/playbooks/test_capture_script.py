# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/files/gpuops-capture.sh and capture.yml with an nvidia-smi that hangs.

The fake nvidia-smi answers from real captures; the call named HANG prints the first lines of its capture and
then never ends (``sleep``), or with IGNORE_TERM also ignores TERM, so that only KILL stops it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from ansible_cli import ansible_playbook, collections_path
from real_captures import extract_ttar, real_path, real_text
from repo_paths import REPO

SCRIPT = os.path.join(REPO, 'playbooks', 'files', 'gpuops-capture.sh')
PLAYBOOK = os.path.join(REPO, 'playbooks', 'capture.yml')

XML = 'nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml'
TOPO = 'topo/pcie-8gpu-all-sys-no-nic-cluster1.txt'
NVLINK = 'nvlink/v100-sxm2-32gb-nvlink-s-2-inactive-links-ELIDED.txt'
IB_TTAR = 'ib-sysfs/procfs-fixture-mlx4_0-connectx3-2port-qdr.ttar'

# bundle file and arguments of every nvidia-smi call the script makes
CAPTURED = {
    'q': ('nvidia-smi-q-x.xml', '-q -x', XML),
    'topo': ('nvidia-smi-topo-m.txt', 'topo -m', TOPO),
    'nvlink': ('nvidia-smi-nvlink-s.txt', 'nvlink -s', NVLINK),
}
QUERIES = {
    'bus_id': '--query-gpu=pci.bus_id --format=csv,noheader',
    'driver': '--query-gpu=driver_version --format=csv,noheader',
}
# the guard: a run that hangs fails the test instead of blocking it
GUARD_S = 30

FAKE = '''#!/bin/sh
# fake nvidia-smi: real captures; the call named HANG ({hang}) prints {lines} line(s) and never ends
case "$*" in
{cases}
    *) echo "fake nvidia-smi: unknown arguments: $*" >&2; exit 2 ;;
esac
'''


def _xml_field(tag):
    return re.search(r'<%s>([^<]*)</%s>' % (tag, tag), real_text(XML)).group(1).strip()


def _answers(tmp):
    """Path of the file the fake prints, by call."""
    answers = dict((call, real_path(rel)) for call, (_f, _a, rel) in CAPTURED.items())
    # what the queries print, from the same capture: 00000000:00:04.0 and 510.47.03
    for call, tag in (('bus_id', 'pci_bus_id'), ('driver', 'driver_version')):
        path = os.path.join(tmp, call + '.txt')
        with open(path, 'w') as handle:
            handle.write(_xml_field(tag) + '\n')
        answers[call] = path
    return answers


def write_fake(tmp, hang=None, lines=3, ignore_term=False):
    """A fake nvidia-smi in tmp; returns its path."""
    answers = _answers(tmp)
    args = dict((call, spec[1]) for call, spec in CAPTURED.items())
    args.update(QUERIES)
    cases = []
    for call in sorted(args):
        if call == hang:
            body = '%shead -n %d %s; exec sleep 60' % ("trap '' TERM; " if ignore_term else '', lines, answers[call])
        else:
            body = 'cat %s' % answers[call]
        cases.append('    "%s") %s ;;' % (args[call], body))
    path = os.path.join(tmp, 'nvidia-smi')
    with open(path, 'w') as handle:
        handle.write(FAKE.format(hang=hang, lines=lines, cases='\n'.join(cases)))
    os.chmod(path, 0o755)
    return path


def make_sysfs(tmp):
    """A sysfs root: a real ConnectX-3 port tree and the GPU's PCI function."""
    root = os.path.join(tmp, 'sys')
    extract_ttar(real_path(IB_TTAR), root)
    gpu = os.path.join(root, 'bus', 'pci', 'devices', '0000:00:04.0')
    os.makedirs(gpu)
    for name, value in (('vendor', '0x10de'), ('class', '0x030200'), ('current_link_speed', '8.0 GT/s PCIe'),
                        ('current_link_width', '16')):
        with open(os.path.join(gpu, name), 'w') as handle:
            handle.write(value + '\n')
    return root


def run_script(work, smi, sysfs, *extra, **kwargs):
    return subprocess.run(['sh', SCRIPT, work, smi, sysfs, 'node-1'] + list(extra), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=GUARD_S,
                          env=kwargs.get('env'), check=False)


def _read(path):
    with open(path) as handle:
        return handle.read()


def _head(rel, lines):
    return ''.join(real_text(rel).splitlines(True)[:lines])


@pytest.mark.parametrize('hang, ignore_term, rc', [
    ('topo', False, 124),
    ('q', False, 124),
    ('nvlink', False, 124),
    # only KILL ends it: timeout's status is then 128 + 9
    ('topo', True, 137),
])
def test_a_hung_command_times_out_and_the_rest_is_captured(tmp_path, hang, ignore_term, rc):
    tmp = str(tmp_path)
    smi = write_fake(tmp, hang=hang, ignore_term=ignore_term)
    work = os.path.join(tmp, 'work')
    run = run_script(work, smi, make_sysfs(tmp), '1')
    assert run.returncode == 0, run.stderr
    assert run.stdout == os.path.join(work, 'bundle.tar.gz') + '\n'
    bundle = os.path.join(work, 'bundle')
    for call, (name, args, rel) in CAPTURED.items():
        path = os.path.join(bundle, name)
        if call == hang:
            # what it printed before it was stopped is kept
            assert _read(path) == _head(rel, 3)
            assert _read(path + '.rc') == '%d\n' % rc
        else:
            assert _read(path) == real_text(rel)
            assert not os.path.exists(path + '.rc')
    source = _read(os.path.join(bundle, 'capture.source'))
    assert 'Commands (LC_ALL=C; each nvidia-smi call under timeout -k 5 1):' in source
    note = 'timed out after 1 s' + (', killed 5 s later' if rc == 137 else '')
    for call, (name, args, _rel) in CAPTURED.items():
        status = '%d: %s' % (rc, note) if call == hang else '0'
        assert '%s %s > %s   (exit status %s)\n' % (smi, args, name, status) in source
    # the helper queries still ran: the GPU address came from nvidia-smi, and the sysfs copy is complete
    assert 'GPU PCI addresses: 0000:00:04.0\n' in source
    assert 'RDMA devices: mlx4_0\n' in source
    assert _read(os.path.join(bundle, 'sys', 'bus', 'pci', 'devices', '0000:00:04.0', 'current_link_width')) == '16\n'
    for port in ('1', '2'):
        for name in ('state', 'phys_state', 'rate', 'link_layer', 'counters/link_downed'):
            rel = os.path.join('class', 'infiniband', 'mlx4_0', 'ports', port, name)
            assert _read(os.path.join(bundle, 'sys', rel)) == _read(os.path.join(tmp, 'sys', rel))
    with tarfile.open(os.path.join(work, 'bundle.tar.gz')) as archive:
        names = set(n[2:] if n.startswith('./') else n for n in archive.getnames())
    assert set(spec[0] for spec in CAPTURED.values()) | {'capture.source', CAPTURED[hang][0] + '.rc'} <= names
    assert not os.path.exists(os.path.join(work, 'query.out'))


@pytest.mark.parametrize('hang', ['bus_id', 'driver'])
def test_a_hung_query_times_out(tmp_path, hang):
    if hang == 'driver' and os.path.exists('/proc/driver/nvidia/version'):
        pytest.skip('the driver version comes from /proc/driver/nvidia/version here, not from nvidia-smi')
    tmp = str(tmp_path)
    smi = write_fake(tmp, hang=hang, lines=0)
    work = os.path.join(tmp, 'work')
    run = run_script(work, smi, make_sysfs(tmp), '1')
    assert run.returncode == 0, run.stderr
    bundle = os.path.join(work, 'bundle')
    for name, _args, rel in CAPTURED.values():
        assert _read(os.path.join(bundle, name)) == real_text(rel)
        assert not os.path.exists(os.path.join(bundle, name + '.rc'))
    source = _read(os.path.join(bundle, 'capture.source'))
    assert '  %s %s   (exit status 124: timed out after 1 s)\n' % (smi, QUERIES[hang]) in source
    if hang == 'bus_id':
        # the GPU is still found in sysfs
        assert 'GPU PCI addresses: 0000:00:04.0\n' in source
    else:
        assert 'Driver: unknown (nvidia module not loaded?)\n' in source


def test_no_hang_no_rc_and_the_driver_from_nvidia_smi(tmp_path):
    tmp = str(tmp_path)
    smi = write_fake(tmp)
    work = os.path.join(tmp, 'work')
    # default TIMEOUT (60)
    run = run_script(work, smi, make_sysfs(tmp))
    assert run.returncode == 0, run.stderr
    bundle = os.path.join(work, 'bundle')
    assert sorted(n for n in os.listdir(bundle) if n != 'sys') == sorted(
        ['capture.source'] + [spec[0] for spec in CAPTURED.values()])
    source = _read(os.path.join(bundle, 'capture.source'))
    assert 'each nvidia-smi call under timeout -k 5 60)' in source
    assert 'timed out' not in source
    if not os.path.exists('/proc/driver/nvidia/version'):
        assert 'Driver: 510.47.03\n' in source


def test_without_timeout_the_calls_run_unbounded(tmp_path):
    """No timeout command on the node: every call runs as before, and capture.source says so."""
    tmp = str(tmp_path)
    smi = write_fake(tmp)
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(bindir)
    for tool in ('sh', 'cat', 'head', 'sleep', 'tr', 'sed', 'grep', 'mkdir', 'rm', 'tail', 'tar', 'gzip', 'date',
                 'uname', 'hostname', 'basename', 'dirname', 'readlink', 'ln', 'printf'):
        found = shutil.which(tool)
        if found:
            os.symlink(found, os.path.join(bindir, tool))
    assert shutil.which('timeout', path=bindir) is None
    work = os.path.join(tmp, 'work')
    run = run_script(work, smi, make_sysfs(tmp), '1', env=dict(os.environ, PATH=bindir))
    assert run.returncode == 0, run.stderr
    bundle = os.path.join(work, 'bundle')
    for name, _args, rel in CAPTURED.values():
        assert _read(os.path.join(bundle, name)) == real_text(rel)
    source = _read(os.path.join(bundle, 'capture.source'))
    assert 'Commands (LC_ALL=C; no timeout command on the node: nvidia-smi calls ran without a time limit):' \
        in source


@pytest.mark.parametrize('value', ['0', '00', '-1', '1.5', 'abc', ' 5', '5s', '1e3'])
def test_invalid_timeout_fails_before_anything_runs(tmp_path, value):
    tmp = str(tmp_path)
    smi = write_fake(tmp, hang='q')
    work = os.path.join(tmp, 'work')
    run = run_script(work, smi, make_sysfs(tmp), value)
    assert run.returncode == 2
    assert run.stderr.splitlines()[0] == \
        "gpuops-capture.sh: TIMEOUT must be a positive whole number of seconds, got '%s'" % value
    assert not os.path.exists(work)


@pytest.mark.parametrize('value, seconds', [('007', '7'), ('1', '1')])
def test_timeout_leading_zeros(tmp_path, value, seconds):
    tmp = str(tmp_path)
    work = os.path.join(tmp, 'work')
    run = run_script(work, write_fake(tmp), make_sysfs(tmp), value)
    assert run.returncode == 0, run.stderr
    source = _read(os.path.join(work, 'bundle', 'capture.source'))
    assert 'each nvidia-smi call under timeout -k 5 %s)' % seconds in source


# ---------------------------------------------------------------- capture.yml

def _playbook(tmp, *extra_vars):
    """capture.yml against this machine (local connection)."""
    exe = ansible_playbook()
    inventory = os.path.join(tmp, 'inventory')
    with open(inventory, 'w') as handle:
        handle.write('node-1 ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    cmd = [exe, '-i', inventory, PLAYBOOK, '-e', 'gpuops_capture_dir=' + os.path.join(tmp, 'captures')]
    for var in extra_vars:
        cmd += ['-e', var]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, 'ansible-local'), ANSIBLE_RETRY_FILES_ENABLED='0')
    return subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=120, env=env, check=False)


@pytest.mark.parametrize('extra_var, shown', [
    ('gpuops_command_timeout=0', '"0"'),
    ('gpuops_command_timeout=abc', '"abc"'),
    ('{"gpuops_command_timeout": 0}', '0'),
    ('{"gpuops_command_timeout": -5}', '-5'),
    ('{"gpuops_command_timeout": 1.5}', '1.5'),
    ('{"gpuops_command_timeout": true}', 'true'),
    ('{"gpuops_command_timeout": null}', 'null'),
])
def test_playbook_rejects_an_invalid_timeout_before_touching_the_node(tmp_path, extra_var, shown):
    run = _playbook(str(tmp_path), extra_var)
    assert run.returncode == 2, run.stdout
    assert 'gpuops_command_timeout must be a positive whole number of seconds, got %s' % shown in run.stdout
    assert re.findall(r'^TASK \[([^\]]*)\]', run.stdout, re.M) == ['Check gpuops_command_timeout']
    assert not os.path.exists(os.path.join(str(tmp_path), 'captures'))


def test_playbook_passes_the_timeout_to_the_node(tmp_path):
    tmp = str(tmp_path)
    smi = write_fake(tmp, hang='topo')
    run = _playbook(tmp, 'gpuops_command_timeout=1', 'gpuops_nvidia_smi=' + smi,
                    'gpuops_sysfs_root=' + make_sysfs(tmp))
    assert run.returncode == 0, run.stdout
    host = os.path.join(tmp, 'captures', 'node-1')
    assert _read(os.path.join(host, 'nvidia-smi-topo-m.txt.rc')) == '124\n'
    assert _read(os.path.join(host, 'nvidia-smi-q-x.xml')) == real_text(XML)
    assert '(exit status 124: timed out after 1 s)' in _read(os.path.join(host, 'capture.source'))


def test_nvswitches_are_captured_and_read_back(tmp_path):
    """An NVSwitch on the PCI bus (class 0x0680) is copied into the bundle and counted by the facts."""
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    tmp = str(tmp_path)
    sysfs = make_sysfs(tmp)
    switch = os.path.join(sysfs, 'bus', 'pci', 'devices', '0000:05:00.0')
    os.makedirs(switch)
    for name, value in (('vendor', '0x10de'), ('class', '0x068000'), ('device', '0x22a3')):
        with open(os.path.join(switch, name), 'w') as handle:
            handle.write(value + '\n')
    work = os.path.join(tmp, 'work')
    run = run_script(work, write_fake(tmp), sysfs)
    assert run.returncode == 0, run.stderr
    bundle = os.path.join(work, 'bundle')
    assert _read(os.path.join(bundle, 'sys', 'bus', 'pci', 'devices', '0000:05:00.0', 'class')) == '0x068000\n'
    assert 'NVSwitch PCI addresses: 0000:05:00.0\n' in _read(os.path.join(bundle, 'capture.source'))
    facts = gather_bundle(bundle)
    assert facts['nvswitch_count'] == 1
    assert [g['pci_bus_id'] for g in facts['pci_gpus']] == ['0000:00:04.0']


def test_a_roce_node_is_captured_and_replays_the_same_rdma_facts(tmp_path):
    """An RDMA node (a RoCE HCA with DCQCN and rdma_cm, an InfiniBand HCA with IPoIB): the bundle gives the facts the
    node gives, dcb outputs included (a stand-in dcb answers from real captures)."""
    from rdma_tree import PFC3, roce_and_ib_node
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    tmp = str(tmp_path)
    node = roce_and_ib_node(os.path.join(tmp, 'node'))
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(bindir)
    with open(os.path.join(bindir, 'dcb'), 'w') as handle:
        handle.write('#!/bin/sh\ncase "$*" in\n    "pfc show dev ens6") cat %s ;;\n'
                     '    "-N app show dev ens6 dscp-prio") ;;\n'
                     '    *) echo "Attribute read: No such device" >&2; exit 1 ;;\nesac\n' % real_path(PFC3))
    os.chmod(os.path.join(bindir, 'dcb'), 0o755)
    work = os.path.join(tmp, 'work')
    os.makedirs(work)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get('PATH', ''))
    done = run_script(work, write_fake(tmp), os.path.join(node, 'sys'), env=env)
    assert done.returncode == 0, done.stderr
    bundle = os.path.join(work, 'bundle')
    assert sorted(n for n in os.listdir(bundle) if n.startswith('dcb-')) == [
        'dcb-app-dscp-prio-ens6.txt', 'dcb-pfc-ens6.txt']
    captured, original = gather_bundle(bundle), gather_bundle(node)
    assert captured['ipoib_module_loaded'] is True
    assert captured['nics'] == original['nics']
    assert captured['nics'][0]['roce']['pfc'] == [3]
    assert 'dcb pfc show dev ens6 > dcb-pfc-ens6.txt   (exit status 0' in _read(os.path.join(bundle, 'capture.source'))


def test_dcgm_health_is_captured_and_read_back(tmp_path):
    """With dcgmi on the node, the bundle holds `dcgmi health -c -j` and the facts read it as the node's."""
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    tmp = str(tmp_path)
    sysfs = make_sysfs(tmp)
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(bindir)
    health = real_path('dcgmi/health-c-j-healthy-despite-gpu1-recovery-reset.json')
    with open(os.path.join(bindir, 'dcgmi'), 'w') as handle:
        handle.write('#!/bin/sh\n[ "$*" = "health -c -j" ] && exec cat %s\nexit 1\n' % health)
    os.chmod(os.path.join(bindir, 'dcgmi'), 0o755)
    work = os.path.join(tmp, 'work')
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get('PATH', ''))
    run = run_script(work, write_fake(tmp), sysfs, env=env)
    assert run.returncode == 0, run.stderr
    bundle = os.path.join(work, 'bundle')
    with open(health, 'rb') as handle:
        assert open(os.path.join(bundle, 'dcgmi-health-c.json'), 'rb').read() == handle.read()
    assert gather_bundle(bundle)['dcgm'] == {'health': {'overall': 'Healthy', 'gpus': {}}, 'unreadable': None}
    # without dcgmi, no file: the facts say why
    work2 = os.path.join(tmp, 'work2')
    assert run_script(work2, write_fake(tmp), sysfs).returncode == 0
    assert 'dcgmi was not on the node' in gather_bundle(os.path.join(work2, 'bundle'))['dcgm']['unreadable']
