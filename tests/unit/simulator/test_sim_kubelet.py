# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet stand-in (simulator/sim_kubelet/), run as the unit runs it: a subprocess on a tmp root."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from simhelpers import REPO, REAL

from simulator import sim_kubelet

SCRIPT = os.path.join(REPO, 'simulator', 'sim_kubelet')  # the package directory, run as a program
FIXTURE = os.path.join(REAL, 'kubelet', 'kubeadm-1.27-playwithk8s-node2.yaml')
GIB = 2 ** 30

pytest.importorskip('yaml')


def free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Node(object):
    """A tmp root: a simulated sysfs (8 CPUs, 2 NUMA nodes of 16 GiB, 2 MiB hugepages on node 0), a state dir."""

    def __init__(self, tmp_path, cpus='0-7'):
        self.tmp = tmp_path
        self.sysfs = str(tmp_path / 'sys')
        self.state = str(tmp_path / 'var-lib-kubelet')
        self.port = free_port()
        os.makedirs(os.path.join(self.sysfs, 'devices/system/cpu'))
        with open(os.path.join(self.sysfs, 'devices/system/cpu/online'), 'w') as handle:
            handle.write(cpus + '\n')
        for node, cpulist in ((0, '0-3'), (1, '4-7')):
            base = os.path.join(self.sysfs, 'devices/system/node/node%d' % node)
            os.makedirs(os.path.join(base, 'hugepages/hugepages-2048kB'))
            with open(os.path.join(base, 'cpulist'), 'w') as handle:
                handle.write(cpulist + '\n')
            with open(os.path.join(base, 'meminfo'), 'w') as handle:
                handle.write('Node %d MemTotal:       %d kB\n' % (node, 16 * GIB // 1024))
            with open(os.path.join(base, 'hugepages/hugepages-2048kB/nr_hugepages'), 'w') as handle:
                handle.write('512\n' if node == 0 else '0\n')
        # no wait for a container runtime: the container manager starts right after /healthz
        self.env = dict(os.environ, GPUOPS_SIM_SYSFS=self.sysfs, GPUOPS_SIM_KUBELET_RUNTIME_DELAY='0')
        self.env.pop('GPUOPS_SIM_KUBELET_STRICT', None)
        self.err = ''

    def config(self, extra='', base=None, name='config.yaml'):
        with open(base or FIXTURE) as handle:
            text = handle.read().replace('healthzPort: 10248', 'healthzPort: %d' % self.port)
        path = str(self.tmp / name)
        with open(path, 'w') as handle:
            handle.write(text + extra)
        return path

    def argv(self, config, *more):
        return [sys.executable, SCRIPT, '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
                '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=%s' % config, '--root-dir=%s' % self.state,
                '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock'] + list(more)

    def fail(self, config, *more, **env):
        """A start that must fail: (exit status, last stderr line); the whole stderr in self.err."""
        proc = subprocess.run(self.argv(config, *more), env=dict(self.env, **env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=30, universal_newlines=True, check=False)
        assert proc.returncode == 1, proc.stderr
        self.err = proc.stderr
        return proc.stderr.strip().splitlines()[-1]

    def popen(self, config, *more, **env):
        """The kubelet running, its stderr collected in proc.lines by a thread."""
        proc = subprocess.Popen(self.argv(config, *more), env=dict(self.env, **env), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, universal_newlines=True)
        proc.lines = []
        proc.reader = threading.Thread(target=lambda: proc.lines.extend(iter(proc.stderr.readline, '')))
        proc.reader.daemon = True
        proc.reader.start()
        return proc

    def start(self, config, *more, **env):
        """Started: /healthz answers ok and the container manager has started (the state files are written)."""
        proc = self.popen(config, *more, **env)
        deadline = time.time() + 20
        while time.time() < deadline:
            if proc.poll() is not None:
                proc.reader.join(5)
                raise AssertionError('exited %s: %s' % (proc.returncode, ''.join(proc.lines)))
            try:
                if healthz(self.port) == (200, 'ok') and any('Container manager started' in x for x in proc.lines):
                    return proc
            except (IOError, OSError):
                pass
            time.sleep(0.1)
        proc.kill()
        raise AssertionError('not started: %s' % ''.join(proc.lines))

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        proc.reader.join(5)
        err = ''.join(proc.lines)
        assert proc.returncode == 0, err
        return err

    def read(self, name):
        with open(os.path.join(self.state, name)) as handle:
            return handle.read()

    def write(self, name, text):
        if not os.path.isdir(self.state):
            os.makedirs(self.state)
        with open(os.path.join(self.state, name), 'w') as handle:
            handle.write(text)


def healthz(port):
    import http.client
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=2)
    try:
        conn.request('GET', '/healthz')
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


# --- the kubelet's checkpoint checksums (real files) ---

@pytest.mark.parametrize('policy, cpus, entries, expected', [
    ('none', '', {}, 1353318690),   # the none-policy cpu_manager_state of every default node
    ('static', '0,4-27', {'39b37746-7f5e-4064-b8e1-eebd2bfaa003': {'app': '1-3'}}, 3300516549),  # a blog's node
])
def test_cpu_checksum_is_the_kubelets(policy, cpus, entries, expected):
    assert sim_kubelet.cpu_checksum(policy, cpus, entries) == expected


def test_memory_checksum_of_the_none_state_is_the_kubelets():
    # {"policyName":"None","machineState":{},"checksum":4236770233} written by a kubelet (public notes)
    assert sim_kubelet.memory_checksum('None', {}) == 4236770233


@pytest.mark.parametrize('text, value, fmt', [
    ('100Mi', 100 * 2 ** 20, 'BinarySI'), ('1Gi', GIB, 'BinarySI'), ('512M', 512 * 10 ** 6, 'DecimalSI'),
    ('1e3', 1000, 'DecimalSI'), ('1000', 1000, 'DecimalSI'), ('500m', 1, 'DecimalSI'), ('1.5Gi', 3 * 2 ** 29, 'BinarySI'),
])
def test_parse_quantity(text, value, fmt):
    assert sim_kubelet.parse_quantity(text) == (value, fmt)


@pytest.mark.parametrize('value, fmt, text', [
    (0, 'DecimalSI', '0'), (GIB, 'BinarySI', '1Gi'), (GIB + 100 * 2 ** 20, 'BinarySI', '1124Mi'),
    (1500 * 10 ** 3, 'DecimalSI', '1500k'), (1000, 'BinarySI', '1k'), (1025, 'BinarySI', '1025'),
])
def test_format_quantity(value, fmt, text):
    assert sim_kubelet.format_quantity(value, fmt) == text


def test_cpusets():
    assert sim_kubelet.parse_cpuset('0-3,8,10-11') == {0, 1, 2, 3, 8, 10, 11}
    assert sim_kubelet.format_cpuset({0, 1, 2, 3, 8, 10, 11}) == '0-3,8,10-11'
    with pytest.raises(ValueError):
        sim_kubelet.parse_cpuset('3-1')


def test_merge_patch():
    base = {'a': {'b': 1, 'c': [1]}, 'd': 1}
    assert sim_kubelet.merge_patch(base, {'a': {'c': [2], 'e': None}, 'd': None}) == {'a': {'b': 1, 'c': [2]}}


# --- install ---

def test_install_writes_the_package_files_and_is_idempotent(tmp_path):
    root = str(tmp_path / 'root')
    out = json.loads(subprocess.check_output([sys.executable, SCRIPT, 'install', '--root', root, '--config', FIXTURE]))
    assert out['changed'] and '/usr/bin/kubelet' in out['files']
    with open(os.path.join(root, 'usr/lib/systemd/system/kubelet.service')) as handle:
        assert 'Description=kubelet: The Kubernetes Node Agent\n' in handle.read()
    with open(os.path.join(root, 'usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf')) as handle:
        dropin = handle.read()
    assert 'EnvironmentFile=-/etc/default/kubelet\n' in dropin
    assert dropin.endswith('ExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS '
                           '$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n')
    with open(os.path.join(root, 'var/lib/kubelet/config.yaml')) as handle, open(FIXTURE) as fixture:
        assert handle.read() == fixture.read()
    kubelet = os.path.join(root, 'usr/bin/kubelet')
    with open(kubelet) as handle:
        assert handle.readline() == '#!/usr/bin/python3\n'
    assert os.access(kubelet, os.X_OK)
    again = json.loads(subprocess.check_output([sys.executable, SCRIPT, 'install', '--root', root,
                                                '--config', FIXTURE]))
    assert again['changed'] is False and again['written'] == []
    # without --config the node's own file stays; /etc/default/kubelet is a conffile
    with open(os.path.join(root, 'etc/default/kubelet'), 'w') as handle:
        handle.write('KUBELET_EXTRA_ARGS=--v=2\n')
    with open(os.path.join(root, 'var/lib/kubelet/config.yaml'), 'a') as handle:
        handle.write('maxPods: 50\n')
    assert sim_kubelet.install(root)['changed'] is False


def test_installed_copy_runs_on_its_own(node):
    root = str(node.tmp / 'root')
    sim_kubelet.install(root)
    kubelet = os.path.join(root, 'usr/bin/kubelet')
    proc = subprocess.run([sys.executable, kubelet, '--version'], stdout=subprocess.PIPE, universal_newlines=True,
                          cwd=str(node.tmp), check=False)
    assert proc.returncode == 0 and proc.stdout.startswith('Kubernetes v1.')


# --- running ---

def test_default_config_starts_writes_the_states_serves_healthz_and_stops(node):
    proc = node.start(node.config())
    assert node.read('cpu_manager_state') == '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}'
    assert node.read('memory_manager_state') == '{"policyName":"None","machineState":{},"checksum":4236770233}'
    assert oct(os.stat(os.path.join(node.state, 'cpu_manager_state')).st_mode & 0o777) == '0o600'
    err = node.stop(proc)
    assert '"Starting CPU manager" policy="none"' in err


def test_static_policies_write_their_states(node):
    extra = ('cpuManagerPolicy: static\nreservedSystemCPUs: "0,4"\nmemoryManagerPolicy: Static\n'
             'topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n'
             'kubeReserved:\n  memory: 512Mi\nsystemReserved:\n  memory: 412Mi\n'
             'reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 512Mi\n- numaNode: 1\n  limits:\n    memory: 512Mi\n')
    proc = node.start(node.config(extra))
    cpu = json.loads(node.read('cpu_manager_state'))
    assert cpu == {'policyName': 'static', 'defaultCpuSet': '0-7', 'checksum': sim_kubelet.cpu_checksum('static', '0-7')}
    text = node.read('memory_manager_state')
    mem = json.loads(text)
    assert text.startswith('{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":'
                           '{"hugepages-2Mi":{"total":1073741824,"systemReserved":0,"allocatable":1073741824,')
    assert mem['machineState']['0']['memoryMap']['memory'] == {
        'total': 16 * GIB, 'systemReserved': 512 * 2 ** 20, 'allocatable': 15 * GIB - 512 * 2 ** 20,
        'reserved': 0, 'free': 15 * GIB - 512 * 2 ** 20}
    assert mem['machineState']['1']['cells'] == [1]
    assert mem['checksum'] == sim_kubelet.memory_checksum('Static', mem['machineState'])
    err = node.stop(proc)
    assert 'topologyPolicyName="single-numa-node" topologyScopeName="pod"' in err
    # a restart with the same policies keeps the states
    proc = node.start(node.config(extra))
    assert json.loads(node.read('cpu_manager_state')) == cpu
    node.stop(proc)


def test_healthz_port_zero_disables_it(node):
    path = node.config('', name='zero.yaml')
    with open(path) as handle:
        text = handle.read().replace('healthzPort: %d' % node.port, 'healthzPort: 0')
    with open(path, 'w') as handle:
        handle.write(text)
    proc = node.popen(path)
    deadline = time.time() + 20
    while not os.path.exists(os.path.join(node.state, 'memory_manager_state')) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    with pytest.raises((IOError, OSError)):
        healthz(node.port)
    node.stop(proc)


def test_drop_ins_merge_over_the_config(node):
    dropins = node.tmp / 'kubelet.conf.d'
    dropins.mkdir()
    (dropins / '90-gpuops.conf').write_text(
        'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n'
        'reservedSystemCPUs: "0"\n')
    (dropins / '95-later.conf').write_text(
        'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedSystemCPUs: "0-1"\n')
    (dropins / 'README').write_text('not read: only *.conf')
    proc = node.start(node.config(), '--config-dir', str(dropins))
    assert json.loads(node.read('cpu_manager_state'))['policyName'] == 'static'
    node.stop(proc)


def test_unknown_field_is_logged_and_ignored_as_the_lenient_decoding_does(node):
    proc = node.start(node.config('cpuManagerPolicyy: static\n'))
    err = node.stop(proc)
    assert ('"Using lenient decoding as strict decoding failed" '
            'err="strict decoding error: unknown field \\"cpuManagerPolicyy\\""') in err
    assert json.loads(node.read('cpu_manager_state'))['policyName'] == 'none'


def test_unknown_field_fails_when_strict(node):
    config = node.config('cpuManagerPolicyy: static\n')
    line = node.fail(config, GPUOPS_SIM_KUBELET_STRICT='1')
    assert line.endswith('"command failed" err="failed to load kubelet config file, path: %s, error: failed to load '
                         'Kubelet config file %s, error failed lenient decoding: strict decoding error: unknown field '
                         '\\"cpuManagerPolicyy\\""' % (config, config))


REFUSALS = [
    ('not a KubeletConfiguration', None, 'kind: KubeletConfiguration', 'kind: KubeProxyConfiguration',
     'failed to decode: no kind \\"KubeProxyConfiguration\\" is registered for version '
     '\\"kubelet.config.k8s.io/v1beta1\\" in scheme \\"pkg/kubelet/apis/config/scheme/scheme.go:33\\""'),
    ('cpu policy', 'cpuManagerPolicy: dynamic\n', None, None,
     '"command failed" err="failed to run Kubelet: unknown policy: \\"dynamic\\""'),
    ('topology policy', 'topologyManagerPolicy: numa\n', None, None,
     '"command failed" err="failed to validate kubelet configuration, error: invalid configuration: '
     'topologyManagerPolicy (--topology-manager-policy) \\"numa\\" must be one of: [\\"none\\" \\"best-effort\\" '
     '\\"restricted\\" \\"single-numa-node\\"], path: &TypeMeta{Kind:,APIVersion:,}"'),
    ('topology scope', 'topologyManagerScope: node\n', None, None,
     'error: invalid configuration: topologyManagerScope (--topology-manager-scope) \\"node\\" must be one of: '
     '\\"container\\", or \\"pod\\", path: &TypeMeta{Kind:,APIVersion:,}"'),
    ('memory policy', 'memoryManagerPolicy: static\n', None, None,
     '"command failed" err="failed to run Kubelet: unknown policy: \\"static\\""'),
    ('static cpu without reservation', 'cpuManagerPolicy: static\n', None, None,
     '"command failed" err="failed to run Kubelet: [cpumanager] unable to determine reserved CPU resources for '
     'static policy"'),
    ('reserved cpus not online', 'cpuManagerPolicy: static\nreservedSystemCPUs: "8-9"\n', None, None,
     'err="failed to run Kubelet: reserved-cpus: 8-9 is not a subset of online-cpus: 0-7"'),
    ('static memory, default eviction only', 'memoryManagerPolicy: Static\n', None, None,
     '"command failed" err="failed to run Kubelet: the total amount \\"0\\" of type \\"memory\\" is not equal to '
     'the value \\"100Mi\\" determined by Node Allocatable feature"'),
    ('static memory, reservations short', 'memoryManagerPolicy: Static\nkubeReserved:\n  memory: 1Gi\n'
     'reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\n', None, None,
     'the total amount \\"1Gi\\" of type \\"memory\\" is not equal to the value \\"1124Mi\\" determined by Node '
     'Allocatable feature"'),
    ('static memory, no such NUMA node', 'memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 2\n  limits:\n'
     '    memory: 100Mi\n', None, None,
     'the reserved memory configuration references a NUMA node 2 that does not exist on this machine"'),
    ('topology policy on more NUMA nodes than allowed', 'topologyManagerPolicy: restricted\n'
     'topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: "1"\n', None, None,
     'err="failed to run Kubelet: unsupported on machines with more than 1 NUMA Nodes"'),
    ('static memory, evictionHard set without memory.available', 'memoryManagerPolicy: Static\nevictionHard:\n'
     '  nodefs.available: 10%\n', None, None,
     'err="failed to run Kubelet: [memorymanager] you should specify the system reserved memory"'),
]


@pytest.mark.parametrize('what, extra, old, new, tail', REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_with_the_kubelets_texts(node, what, extra, old, new, tail):
    config = node.config(extra or '')
    if old:
        with open(config) as handle:
            text = handle.read().replace(old, new)
        with open(config, 'w') as handle:
            handle.write(text)
    line = node.fail(config)
    assert line.startswith('E') and ' run.go:72] "command failed" err="' in line
    assert line.endswith(tail)
    assert not os.path.exists(os.path.join(node.state, 'cpu_manager_state'))
    assert '"Started kubelet"' not in node.err  # refused before /healthz is served


def test_missing_config_file(node):
    path = str(node.tmp / 'nope.yaml')
    assert node.fail(path).endswith(
        'err="failed to load kubelet config file, path: %s, error: failed to load Kubelet config file %s, error '
        'failed to read kubelet config file \\"%s\\", error: open %s: no such file or directory"'
        % (path, path, path, path))


def test_cpu_state_of_another_policy_is_refused_until_removed(node):
    node.write('cpu_manager_state', '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}')
    config = node.config('cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n')
    line = node.fail(config)
    path = os.path.join(node.state, 'cpu_manager_state')
    assert line.endswith(
        ' "Failed to start ContainerManager" err="start cpu manager error: could not restore state from checkpoint: '
        'configured policy \\"static\\" differs from state checkpoint policy \\"none\\", please drain this node and '
        'delete the CPU manager checkpoint file \\"%s\\" before restarting Kubelet"' % path)
    assert ' kubelet.go:' in line
    assert '"Started kubelet"' in node.err  # after /healthz, as the kubelet's ContainerManager.Start
    os.remove(path)
    node.stop(node.start(config))
    assert json.loads(node.read('cpu_manager_state'))['policyName'] == 'static'


def test_memory_state_of_another_policy_is_refused(node):
    node.write('memory_manager_state', '{"policyName":"None","machineState":{},"checksum":4236770233}')
    config = node.config('memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 100Mi\n')
    line = node.fail(config)
    assert line.endswith(
        '"Failed to start ContainerManager" err="start memory manager error: could not restore state from checkpoint: '
        '[memorymanager] configured policy \\"Static\\" differs from state checkpoint policy \\"None\\", please drain '
        'this node and delete the memory manager checkpoint file \\"%s\\" before restarting Kubelet"'
        % os.path.join(node.state, 'memory_manager_state'))
    assert '"Started kubelet"' in node.err
    # the CPU manager started first and wrote its state, as the kubelet does
    assert json.loads(node.read('cpu_manager_state'))['policyName'] == 'none'


def test_static_memory_state_of_other_reservations_is_refused(node):
    extra = 'memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: %s\n'
    node.stop(node.start(node.config(extra % '100Mi')))
    line = node.fail(node.config('kubeReserved:\n  memory: 100Mi\n' + extra % '200Mi'))
    assert line.endswith('"Failed to start ContainerManager" err="start memory manager error: [memorymanager] the '
                         'expected machine state is different from the real one"')


def test_static_cpu_state_of_other_cpus_is_refused(node):
    node.write('cpu_manager_state', '{"policyName":"static","defaultCpuSet":"0-3","checksum":1}')
    line = node.fail(node.config('cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n'))
    assert line.endswith('err="start cpu manager error: current set of available CPUs \\"0-7\\" doesn\'t match with '
                         'CPUs in state \\"0-3\\""')
    assert '"Started kubelet"' in node.err


def test_cpus_of_the_simulated_sysfs(tmp_path):
    sysfs = tmp_path / 'sys'
    for node, cpus in ((1, '16-31,144-159'), (3, '48-63')):
        (sysfs / ('devices/system/node/node%d' % node)).mkdir(parents=True)
        (sysfs / ('devices/system/node/node%d/cpulist' % node)).write_text(cpus + '\n')
    mach = sim_kubelet.machine(str(sysfs))
    assert sim_kubelet.format_cpuset(mach['cpus']) == '16-31,48-63,144-159'
    assert sorted(mach['nodes']) == [1, 3]
    assert sim_kubelet.sysfs_root({'GPUOPS_SIM_SYSFS': str(sysfs)}) == str(sysfs)
    assert sim_kubelet.sysfs_root({'GPUOPS_SIM_ROOT': str(tmp_path / 'none')}) == '/sys'


def test_runtime_delay():
    assert sim_kubelet.runtime_delay({}) == 2
    assert sim_kubelet.runtime_delay({'GPUOPS_SIM_KUBELET_RUNTIME_DELAY': '0.5'}) == 0.5
    assert sim_kubelet.runtime_delay({'GPUOPS_SIM_KUBELET_RUNTIME_DELAY': 'soon'}) == 2


def test_healthz_answers_ok_then_a_bad_state_file_exits_it(node):
    """As the kubelet: /healthz is served before ContainerManager.Start, which exits 1 on a bad checkpoint."""
    node.write('cpu_manager_state', '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}')
    proc = node.popen(node.config('cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n'),
                      GPUOPS_SIM_KUBELET_RUNTIME_DELAY='1.5')
    deadline, answered = time.time() + 20, False
    while time.time() < deadline and proc.poll() is None and not answered:
        try:
            answered = healthz(node.port) == (200, 'ok')
        except (IOError, OSError):
            time.sleep(0.05)
    assert answered and proc.poll() is None, ''.join(proc.lines)
    assert proc.wait(timeout=20) == 1
    proc.reader.join(5)
    assert proc.lines[-1].rstrip().endswith(
        '"Failed to start ContainerManager" err="start cpu manager error: could not restore state from checkpoint: '
        'configured policy \\"static\\" differs from state checkpoint policy \\"none\\", please drain this node and '
        'delete the CPU manager checkpoint file \\"%s\\" before restarting Kubelet"'
        % os.path.join(node.state, 'cpu_manager_state'))
    with pytest.raises((IOError, OSError)):
        healthz(node.port)


def test_sigterm_while_the_runtime_comes_up_writes_no_state(node):
    proc = node.popen(node.config(), GPUOPS_SIM_KUBELET_RUNTIME_DELAY='30')
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if healthz(node.port) == (200, 'ok'):
                break
        except (IOError, OSError):
            time.sleep(0.05)
    node.stop(proc)
    assert not os.path.exists(os.path.join(node.state, 'cpu_manager_state'))


@pytest.mark.parametrize('extra, tail', [
    ('kubeReserved:\n  memory: 40Gi\n', 'Resource \\"memory\\" has a reservation of 41060Mi but capacity of 32Gi.'),
    ('systemReserved:\n  cpu: 6500m\nkubeReserved:\n  cpu: "2"\n',
     'Resource \\"cpu\\" has a reservation of 8500m but capacity of 8.'),
], ids=['memory', 'cpu'])
def test_reservation_over_capacity_exits_after_healthz(node, extra, tail):
    line = node.fail(node.config(extra))
    assert line.endswith('"Failed to start ContainerManager" err="invalid Node Allocatable configuration. %s '
                         'Expected capacity >= reservation."' % tail)
    assert '"Started kubelet"' in node.err
    # the CPU and memory managers started before the check, as in ContainerManager.Start
    assert json.loads(node.read('memory_manager_state'))['policyName'] == 'None'
