# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The DCGM stand-ins: host engine, dcgmi, dcgm-exporter, their install and the DCGM faults."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from simhelpers import REPO, profile_path, real_text

from simulator import admin
from simulator import bundle
from simulator import faults
from simulator import install_node
from simulator import sim_dcgm
from simulator import sim_dcgm_core
from simulator import sim_dcgm_exporter
from simulator import sim_dcgmi


H100 = 'h100-sxm-8gpu-ib'
PCIE = 'pcie-4gpu-roce'
CSV = ('# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n'
       'DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n'
       'DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n'
       'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.\n'
       'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, Total number of NVLink flow-control CRC errors.\n'
       'DCGM_FI_DRIVER_VERSION, label, Driver Version\n')


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def dcgm_node(tmp_path, monkeypatch):
    """install(name, faults) -> root: a replayed node with the DCGM packages' files diverted and the stand-ins."""
    def _install(name=H100, faults=()):
        root = str(tmp_path / 'node')
        install_node.install(profile_path(name), root, faults, sys.executable)
        for rel in sim_dcgm.STANDINS:
            with open(os.path.join(root, rel + '.distrib'), 'w') as handle:
                handle.write('package file\n')
        assert sorted(sim_dcgm.sync(root)['placed']) == sorted('/' + rel for rel in sim_dcgm.STANDINS)
        monkeypatch.setenv('GPUOPS_SIM_ROOT', root)
        monkeypatch.setenv('GPUOPS_SIM_DCGM_VERSION', '4.2.3')
        return root
    return _install


@pytest.fixture
def engine(dcgm_node):
    """A host engine (in a thread) on a free port: yields (root, port)."""
    roots = []

    def _start(name=H100, faults=()):
        root = dcgm_node(name, faults)
        port = _free_port()
        stop = threading.Event()
        ready = threading.Event()
        thread = threading.Thread(target=sim_dcgm.serve, args=(root, '127.0.0.1', port, lambda _a: ready.set(), stop))
        thread.start()
        assert ready.wait(5)
        roots.append((stop, thread))
        return root, port
    yield _start
    for stop, thread in roots:
        stop.set()
        thread.join(5)


def dcgmi(port, *argv):
    out = io.StringIO()
    rc = sim_dcgm.dcgmi_main(['--host', '127.0.0.1:%d' % port] + list(argv), out=out)
    return rc, out.getvalue()


def _parsers(name):
    return pytest.importorskip('ansible_collections.gpuops.node.plugins.module_utils.' + name)


# ---------------------------------------------------------------- host engine

def _listening(port):
    """Local addresses in LISTEN state on ``port`` (/proc/net/tcp)."""
    found = []
    with open('/proc/net/tcp') as handle:
        for line in handle.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(':')
            if state == '0A' and int(hexport, 16) == port:
                found.append('.'.join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def test_hostengine_listens_on_loopback_and_terminates(dcgm_node, tmp_path):
    root = dcgm_node()
    port, pid_file = _free_port(), str(tmp_path / 'he.pid')
    env = dict(os.environ, GPUOPS_SIM_ROOT=root)
    proc = subprocess.Popen([os.path.join(root, 'usr/bin/nv-hostengine'), '-n', '--service-account', 'nobody',
                             '-p', str(port), '--pid', pid_file], env=env)
    try:
        for _i in range(100):
            if _listening(port):
                break
            time.sleep(0.05)
        assert _listening(port) == ['127.0.0.1']
        done = subprocess.run([os.path.join(root, 'usr/bin/dcgmi'), '--host', 'localhost:%d' % port, 'discovery',
                               '-l'], env=env, stdout=subprocess.PIPE, check=False)
        assert done.returncode == 0 and done.stdout.decode().startswith('8 GPUs found.\n')
        term = subprocess.run([os.path.join(root, 'usr/bin/nv-hostengine'), '--term', '--pid', pid_file], env=env,
                              stdout=subprocess.PIPE, check=False)
        assert term.returncode == 0
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_hostengine_refuses_without_driver(dcgm_node):
    root = dcgm_node(PCIE, ['driver_not_loaded'])
    done = subprocess.run([os.path.join(root, 'usr/bin/nv-hostengine'), '-n', '-p', str(_free_port())],
                          env=dict(os.environ, GPUOPS_SIM_ROOT=root), stdout=subprocess.PIPE, check=False)
    assert (done.returncode, done.stdout.decode()) == (1, 'Error: Failed to initialize NVML\n')


def test_dcgmi_without_host_engine(dcgm_node):
    dcgm_node()
    port = _free_port()
    assert dcgmi(port, 'discovery', '-l') == (250, (
        'Error: unable to establish a connection to the specified host: 127.0.0.1:%d\n'
        'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n' % port))


# ---------------------------------------------------------------- dcgmi outputs

def test_discovery_in_the_real_layout(engine):
    root, port = engine(PCIE)
    rc, out = dcgmi(port, 'discovery', '-l')
    assert rc == 0
    real = real_text('dcgmi/discovery-l-v100-pcie-1gpu.txt').splitlines()
    lines = out.splitlines()
    assert lines[0] == '4 GPUs found.' and lines[-10:] == real[-10:]
    gpus = sim_dcgm_core.gpus(root)
    assert '| 3      | Name: %s' % gpus[3]['name'] in out and 'PCI Bus ID: %s' % gpus[3]['bus_id'] in out
    assert all(len(line) == len(real[1]) for line in lines if line.startswith('|') and 'Switch' not in line)
    health = _parsers('parsers.dcgmi_health')
    parsed = health.parse_discovery(out)
    assert out == health.render_discovery(parsed)
    assert [(g['gpu'], g['bus_id'], g['uuid']) for g in parsed] == [(g['id'], g['bus_id'], g['uuid']) for g in gpus]


@pytest.mark.parametrize('level', [1, 2, 3, 4])
def test_diag_pass(engine, level):
    _root, port = engine()
    rc, out = dcgmi(port, 'diag', '-r', str(level))
    assert rc == 0 and out.startswith('Successfully ran diagnostic for group.\n')
    real = real_text('dcgmi/diag-r2-dcgm441-b200-8gpu-pcie-FAIL-slurm.txt').splitlines()
    assert all(len(line) == len(real[0]) for line in out.splitlines()[1:])
    names = [name for _c, name in sim_dcgmi.level_tests(level)]
    assert ('| memory ' in out) == (level >= 2) and len(names) == {1: 1, 2: 3, 3: 7, 4: 9}[level]
    rc, text = dcgmi(port, 'diag', '-r', str(level), '-j')
    document = json.loads(text)
    tests = [t['name'] for c in document['DCGM Diagnostic']['test_categories'] for t in c['tests']]
    assert sorted(tests) == sorted(names) and rc == 0
    diag = _parsers('parsers.dcgmi_diag')
    for output, fmt in ((out, 'text-dcgm4'), (text, 'json-dcgm4')):
        parsed = diag.parse_diag(output)
        assert (parsed['format'], parsed['verdict'], parsed['gpus']) == (fmt, 'Pass', list(range(8)))


def test_diag_fault_at_run_time_and_from_the_profile(engine):
    _root, port = engine(PCIE, ['dcgm_diag_fail:gpu=3,test=pcie'])
    rc, out = dcgmi(port, 'diag', '-r', '2')
    assert rc == sim_dcgmi.RC_NVVS_ERROR and '| pcie                      | Fail ' in out and 'GPU3: Fail' in out
    assert '| Warning                   | There was an internal error during the test:   |' in out
    assert admin.run(['fault', 'dcgm_diag_fail']).out == (
        'gpuops-sim: fault dcgm_diag_fail armed (gpu=1, test=default)\n')
    rc, out = dcgmi(port, 'diag', '-r', '2', '-j', '-i', '1,3')
    document = json.loads(out)
    by_name = dict((t['name'], t) for c in document['DCGM Diagnostic']['test_categories'] for t in c['tests'])
    assert by_name['memory']['test_summary']['status'] == 'Fail' and rc == sim_dcgmi.RC_NVVS_ERROR
    assert [r['status'] for r in by_name['memory']['results']] == ['Fail', 'Pass']
    assert [r['entity_id'] for r in by_name['pcie']['results']] == [1, 3]
    assert dcgmi(port, 'diag', '-r', '1')[0] == sim_dcgmi.RC_NVVS_ERROR   # software at level 1
    listed = json.loads(admin.run(['fault']).out)
    assert listed['profile'] == {'dcgm_diag_fail': [{'gpu': 3, 'test': 'pcie'}]}
    assert listed['runtime']['dcgm_diag_fail'] == {'gpu': 1, 'test': None}
    diag = _parsers('parsers.dcgmi_diag')
    parsed = diag.parse_diag(dcgmi(port, 'diag', '-r', '2')[1])
    assert parsed['verdict'] == 'Fail'
    assert set(f['subject'] for f in diag.diag_failures(parsed)) >= {'GPU 1', 'GPU 3'}
    assert admin.run(['fault', 'clear', 'dcgm_diag_fail']).rc == 0
    assert dcgmi(port, 'diag', '-r', '1')[0] == 0


def test_diag_bad_arguments(engine):
    _root, port = engine(PCIE)
    assert dcgmi(port, 'diag', '-r', '5')[0] == sim_dcgmi.RC_BADPARAM
    assert 'no GPU 9' in dcgmi(port, 'diag', '-r', '1', '-i', '9')[1]
    assert dcgmi(port, 'nvlink', '-s')[0] == 1


def test_policy_set_get_clear_is_state(engine):
    root, port = engine()
    assert '| Violation conditions        | None ' in dcgmi(port, 'policy', '--get')[1]
    assert dcgmi(port, 'policy', '--set', '1,1', '-e', '-p', '-M', '60', '-T', '90', '-P', '700', '-n', '-x') == (
        0, 'Policy successfully set.\n')
    with open(os.path.join(root, sim_dcgm_core.STATE_FILE)) as handle:
        state = json.load(handle)
    assert state['groups']['0']['policy'] == {'action': 1, 'validation': 1, 'conditions': {
        'dbe': True, 'pcie': True, 'max_pages': 60, 'thermal': 90, 'power': 700, 'nvlink': True, 'xid': True}}
    rc, out = dcgmi(port, 'policy', '--get')
    assert rc == 0 and out.startswith('Policy information\n')
    policy_mod = pytest.importorskip('ansible_collections.gpuops.node.plugins.module_utils.config.dcgm_policy')
    parsed = policy_mod.parse_policy_get(out)
    assert parsed['conditions'] == state['groups']['0']['policy']['conditions']
    assert (parsed['action'], parsed['validation']) == ('reset', 'short')
    assert out == policy_mod.render_policy_get(parsed)
    assert dcgmi(port, 'policy', '--get', '-j')[1] == policy_mod.render_policy_get(parsed, json_output=True)
    assert policy_mod.parse_policy_get(dcgmi(port, 'policy', '--get', '-j')[1]) == parsed
    assert [(c['name'], c['flag'], c['label']) for c in policy_mod.CONDITIONS] == list(sim_dcgmi.CONDITIONS)
    assert dcgmi(port, 'policy', '-g', '0', '--clear')[0] == 0
    assert not policy_mod.parse_policy_get(dcgmi(port, 'policy', '--get')[1]).get('conditions')
    assert dcgmi(port, 'policy', '--set', '0,0')[0] == sim_dcgmi.RC_BADPARAM


def test_health(engine):
    _root, port = engine(PCIE, ['ecc_uncorrectable:gpu=2'])
    assert dcgmi(port, 'health', '-s', 'a') == (0, real_text('dcgmi/health-s-a-set-message.txt'))
    rc, out = dcgmi(port, 'health', '-c')
    assert rc == 0 and out.startswith('+---') and 'Failure' in out
    rc, text = dcgmi(port, 'health', '-c', '-j')
    assert json.loads(text)['body']['Overall Health'] == {'value': 'Failure'}
    health = _parsers('parsers.dcgmi_health')
    for output in (out, text):
        parsed = health.parse_health_check(output)
        assert parsed['overall'] == 'Failure' and parsed['gpus'][2]['incidents'][0]['system'].startswith('Memory')
        assert list(parsed['gpus']) == [2] or all(not v['incidents'] for k, v in parsed['gpus'].items() if k != 2)
    assert out == health.render_health_check(parsed['gpus'])
    assert text == health.render_health_check(parsed['gpus'], json_output=True)
    assert dcgmi(port, 'health', '-s', 'p')[0] == 0
    for args in (('-c',), ('-c', '-j')):
        assert health.parse_health_check(dcgmi(port, 'health', *args)[1])['overall'] == 'Healthy'


def test_styled_json_matches_the_capture():
    fragment = real_text('dcgmi/diag-r3-j-dcgm4-8gpu-diagnostic-test-object-FRAGMENT.json').rstrip().rstrip(',')
    value = json.loads(fragment)
    lines = fragment.splitlines()
    depth = len(lines[0]) - len(lines[0].lstrip())
    expected = [line[depth:].replace(' ' * 8, '\t') for line in lines]
    # the posted fragment lost the trailing space after "key :" (the health capture keeps it)
    assert [line.rstrip() for line in sim_dcgmi.styled(value).splitlines()] == expected
    health = real_text('dcgmi/health-c-j-healthy-despite-gpu1-recovery-reset.json')
    assert sim_dcgmi.styled(json.loads(health)) == health.rstrip('\n').replace(' ' * 8, '\t')


# ---------------------------------------------------------------- faults and install

def test_dcgm_diag_fail_profile_fault():
    tree = bundle.read_profile(profile_path(H100))
    assert faults.FAULTS['dcgm_diag_fail'].apply(tree, gpu=2) == ['sim/dcgm.json']
    assert json.loads(bundle.text(tree, 'sim/dcgm.json')) == {'diag_fail': [{'gpu': 2, 'test': None}]}
    with pytest.raises(faults.FaultError, match='unknown DCGM test'):
        faults.FAULTS['dcgm_diag_fail'].apply(tree, test='bogus')
    with pytest.raises(faults.FaultError, match='no GPU 8'):
        faults.FAULTS['dcgm_diag_fail'].apply(tree, gpu=8)


def test_runtime_faults_file(dcgm_node):
    root = dcgm_node(PCIE)
    assert admin.run(['fault', 'nccl_slow', 'factor=0.5']).rc == 0
    assert admin.run(['fault', 'dcgm_diag_fail', 'gpu=2', 'test=pcie']).rc == 0
    with open(os.path.join(root, sim_dcgm_core.RUNTIME_FAULTS_FILE)) as handle:
        assert json.load(handle) == {'nccl_slow': {'factor': 0.5}, 'dcgm_diag_fail': {'gpu': 2, 'test': 'pcie'}}
    assert admin.run(['fault', 'nccl_slow', 'factor=2']).rc == 1
    assert admin.run(['fault', 'dcgm_diag_fail', 'gpu=4']).err == (
        'gpuops-sim: fault: no GPU 4 (the profile has 4)\n')
    assert 'dcgm_diag_fail' in admin.run(['fault', '-h']).out
    assert admin.run(['fault', 'roce_retrans_high']).rc == 0
    assert admin.run(['fault', 'clear']).rc == 0
    assert json.loads(admin.run(['fault']).out) == {'profile': {}, 'runtime': {}}


def test_standins_follow_the_packages_and_uninstall(dcgm_node):
    root = dcgm_node(PCIE)
    for rel in sim_dcgm.STANDINS:
        with open(os.path.join(root, rel), 'rb') as handle:
            assert handle.readline() == ('#!%s\n' % sys.executable).encode()
    with open(os.path.join(root, 'etc/dpkg/dpkg.cfg.d/gpuops-sim-dcgm')) as handle:
        assert 'post-invoke=if [ -f /usr/share/gpuops-sim/lib/sim_dcgm.py ]; then' in handle.read()
    os.remove(os.path.join(root, 'usr/bin/dcgm-exporter.distrib'))   # the exporter package removed
    assert sim_dcgm.sync(root) == {'placed': [], 'removed': ['/usr/bin/dcgm-exporter'],
                                   'kept': ['/usr/bin/dcgmi', '/usr/bin/nv-hostengine']}
    summary = install_node.install(profile_path(PCIE), root, (), sys.executable)
    assert [d['argv'][-1] for d in summary['dcgm_diversions']] == ['/' + rel for rel in sim_dcgm.STANDINS]
    removed = install_node.uninstall(root)['removed']
    assert os.path.join(root, 'usr/bin/dcgmi') in removed and not os.path.exists(os.path.join(root, 'usr/bin/dcgmi'))
    assert not os.path.exists(os.path.join(root, 'etc/dpkg/dpkg.cfg.d/gpuops-sim-dcgm'))


# ---------------------------------------------------------------- dcgm-exporter

def parse_exposition(text):
    """{name: {'help', 'type', 'samples': [(labels dict, float)]}} of the Prometheus text format (strict)."""
    metrics = {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\} (\S+)$')
    for line in text.splitlines():
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            _hash, kind, name, rest = line.split(' ', 3)
            metrics.setdefault(name, {'samples': []})[kind.lower()] = rest
            continue
        match = sample.match(line)
        assert match, 'not an exposition line: %r' % line
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(2)))
        assert match.group(1) in metrics and metrics[match.group(1)]['type'] in ('gauge', 'counter')
        metrics[match.group(1)]['samples'].append((labels, float(match.group(3))))
    return metrics


@pytest.fixture
def exporter(tmp_path):
    servers = []

    def _start(root, *argv):
        csv = tmp_path / 'counters.csv'
        csv.write_text(CSV)
        port = _free_port()
        box = {}
        ready = threading.Event()

        def run():
            box['rc'] = sim_dcgm_exporter.start(['-f', str(csv), '-a', '127.0.0.1:%d' % port] + list(argv), root,
                                                ready=lambda server: (box.update(server=server), ready.set()))
            ready.set()
        thread = threading.Thread(target=run)
        thread.start()
        ready.wait(10)
        if 'server' in box:
            servers.append((box['server'], thread))
        else:
            thread.join(5)
        return port, box.get('rc')
    yield _start
    for server, thread in servers:
        server.shutdown()
        thread.join(5)


def _get(port, auth=None):
    req = urllib.request.Request('http://127.0.0.1:%d/metrics' % port)
    if auth:
        req.add_header('Authorization', 'Basic ' + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_exporter_serves_the_csv_fields(engine, exporter):
    root, he_port = engine(H100, ['ecc_uncorrectable:gpu=1,count=3'])
    port, rc = exporter(root, '-r', '127.0.0.1:%d' % he_port)
    assert rc is None
    status, text = _get(port)
    metrics = parse_exposition(text)
    assert status == 200 and sorted(metrics) == sorted(line.split(',')[0] for line in CSV.splitlines()
                                                       if line.startswith('DCGM') and 'label' not in line)
    assert metrics['DCGM_FI_DEV_GPU_TEMP']['help'] == 'GPU temperature (in C).'
    gpus = sim_dcgm_core.gpus(root)
    labels, value = metrics['DCGM_FI_DEV_SM_CLOCK']['samples'][3]
    assert list(labels) == ['gpu', 'UUID', 'pci_bus_id', 'device', 'modelName', 'Hostname', 'DCGM_FI_DRIVER_VERSION']
    assert (labels['gpu'], labels['UUID'], labels['pci_bus_id'], labels['device'], labels['modelName']) == (
        '3', gpus[3]['uuid'], gpus[3]['bus_id'], 'nvidia3', 'NVIDIA H100 80GB HBM3')
    assert labels['DCGM_FI_DRIVER_VERSION'] == '545.23.08' and value >= 0
    dbe = [v for _l, v in metrics['DCGM_FI_DEV_ECC_DBE_VOL_TOTAL']['samples']]
    assert dbe[1] >= 3 and dbe[0] == 0
    assert all(v == 0 for _l, v in metrics['DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL']['samples'])


def test_exporter_refuses_to_start(dcgm_node, exporter, tmp_path, capsys):
    root = dcgm_node(PCIE)
    port, rc = exporter(root, '-r', '127.0.0.1:%d' % _free_port())
    assert rc == 1 and 'error connecting to nv-hostengine: Host engine connection invalid/disconnected' in \
        capsys.readouterr().err
    bad = tmp_path / 'bad.csv'
    bad.write_text('DCGM_FI_DEV_NO_SUCH_FIELD, gauge, nothing\n')
    assert sim_dcgm_exporter.start(['-f', str(bad)], root) == 1
    assert 'could not find DCGM field DCGM_FI_DEV_NO_SUCH_FIELD' in capsys.readouterr().err
    web = tmp_path / 'web.yml'
    web.write_text('basic_auth_users:\n  prometheus: plaintext\n')
    assert sim_dcgm_exporter.start(['-f', str(bad), '--web-config-file', str(web)], root) == 1


def test_exporter_reads_the_test_repository_counters(tmp_path):
    sys.path.insert(0, os.path.join(REPO, 'tests', 'repo'))
    try:
        import build_cuda_repo  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    for version in ('4.1.3-4.1.0', '4.6.0-4.7.1'):
        csv = tmp_path / ('%s.csv' % version)
        csv.write_text(build_cuda_repo.counters(version))
        assert len(sim_dcgm_exporter.read_collectors(str(csv))) >= 25


def test_exporter_basic_auth(dcgm_node, exporter, tmp_path):
    root = dcgm_node(PCIE)
    crypt = sim_dcgm_exporter._crypt()  # pylint: disable=protected-access
    hashed = crypt.crypt('s3cret', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)).replace('$2b$', '$2y$')
    web = tmp_path / 'web.yml'
    web.write_text('# exporter-toolkit\nbasic_auth_users:\n  prometheus: "%s"\n' % hashed)
    port, rc = exporter(root, '--web-config-file', str(web))
    assert rc is None
    assert _get(port)[0] == 401
    assert _get(port, 'prometheus:wrong')[0] == 401
    status, text = _get(port, 'prometheus:s3cret')
    assert status == 200 and len(parse_exposition(text)['DCGM_FI_DEV_SM_CLOCK']['samples']) == 4
