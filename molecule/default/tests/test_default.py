# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify of scenario default: a simulated DGX H100 node after site.yml.

Runs under molecule's testinfra verifier (connection ansible, molecule's inventory), with the
environment molecule exports (MOLECULE_PROJECT_DIRECTORY, MOLECULE_EPHEMERAL_DIRECTORY,
MOLECULE_INVENTORY_FILE, ANSIBLE_CONFIG) and the Makefile's ANSIBLE_COLLECTIONS_PATH, so
host.ansible() can call the collection's modules on the node.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import time

import yaml

import testinfra.utils.ansible_runner

PROJECT = os.environ['MOLECULE_PROJECT_DIRECTORY']
EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
PROFILE_NAME = 'h100-sxm-8gpu-ib'
PROFILE_DIR = os.path.join(PROJECT, 'simulator', 'profiles', PROFILE_NAME)
INSTALLED_PROFILE = '/usr/share/gpuops-sim/profile'
SYSFS_ROOT = '/usr/share/gpuops-sim/sys'
REPORT = os.path.join(EPHEMERAL, 'reports', 'rack-report')

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ['MOLECULE_INVENTORY_FILE']).get_hosts('all')


def _load_profile():
    with open(os.path.join(PROFILE_DIR, 'profile.yml')) as handle:
        return yaml.safe_load(handle)


PROFILE = _load_profile()
EXPECTED = PROFILE['expected_node_class']


def _sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _check(host, expected):
    """Run gpuops.node.gpu_topology_check on the node; return its result."""
    args = {'expected': expected, 'sysfs_root': SYSFS_ROOT, 'fail_on_mismatch': False}
    result = host.ansible('gpuops.node.gpu_topology_check', json.dumps(args), check=False)
    assert not result.get('failed'), result.get('msg', result)
    return result


def test_profile_expects_a_healthy_dgx_h100():
    # the node class profile the scenario's inventory uses; guards against an empty profile passing trivially
    assert PROFILE['name'] == PROFILE_NAME
    assert EXPECTED['gpu_count'] == 8
    assert EXPECTED['nic_count'] == 8
    assert EXPECTED['persistence_mode'] == 'Enabled'
    assert EXPECTED['mig_mode'] == 'Disabled'


def test_replaying_nvidia_smi_installed(host):
    # one stat call for both files (every testinfra call is an ansible run over podman)
    cmd = host.run('stat -c "%n %F %U %G %a" /usr/bin/nvidia-smi /usr/local/sbin/gpuops-sim')
    assert cmd.rc == 0, cmd.stderr
    assert cmd.stdout.splitlines() == [
        '/usr/bin/nvidia-smi regular file root root 755',
        '/usr/local/sbin/gpuops-sim regular file root root 755',
    ]
    assert host.file('/usr/bin/nvidia-smi').content_string.startswith('#!/usr/bin/python3\n')


def test_node_services_running(host):
    # the node booted systemd and nothing failed, before and after the rollout
    cmd = host.run('systemctl is-system-running; systemctl --failed --no-legend --plain')
    assert cmd.stdout.splitlines() == ['running'], cmd.stdout


def test_simulator_state_persists_between_invocations(host):
    # modes live in /var/lib/gpuops-sim/state.json: a later nvidia-smi reads what an earlier one set
    cmd = host.run('nvidia-smi -i 7 -c 3 && nvidia-smi -i 7 --query-gpu=compute_mode --format=csv,noheader; '
                   'nvidia-smi -i 7 -c 0 >/dev/null; nvidia-smi -i 7 --query-gpu=compute_mode --format=csv,noheader')
    assert cmd.rc == 0, cmd.stderr
    lines = cmd.stdout.splitlines()
    assert lines[-2:] == ['Exclusive_Process', 'Default'], lines


def test_profile_installed_without_faults(host):
    # no fault requested: the installed bundle is the committed profile, byte for byte
    names = ['profile.yml', 'nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt']
    cmd = host.run('cd %s && sha256sum %s' % (INSTALLED_PROFILE, ' '.join(names)))
    assert cmd.rc == 0, cmd.stderr
    installed = dict(reversed(line.split()) for line in cmd.stdout.splitlines())
    assert installed == dict((name, _sha256(os.path.join(PROFILE_DIR, name))) for name in names)


def test_sysfs_tree_installed(host):
    # a compute NIC port of the profile, and the device link a live kernel has
    cmd = host.run('cat %(r)s/class/infiniband/mlx5_0/ports/1/state && readlink %(r)s/class/infiniband/mlx5_0/device'
                   % {'r': SYSFS_ROOT})
    assert cmd.rc == 0, cmd.stderr
    state, device = cmd.stdout.splitlines()
    assert state == '4: ACTIVE'
    assert device.startswith('../../../bus/pci/devices/0000:')


def test_gpu_modes_as_the_profile_says(host):
    cmd = host.run('nvidia-smi --query-gpu=index,name,persistence_mode,compute_mode,mig.mode.current '
                   '--format=csv,noheader')
    assert cmd.rc == 0, cmd.stderr
    rows = [[field.strip() for field in line.split(',')] for line in cmd.stdout.splitlines()]
    assert [row[0] for row in rows] == [str(i) for i in range(EXPECTED['gpu_count'])]
    for index, name, persistence, compute, mig in rows:
        assert fnmatch.fnmatchcase(name, EXPECTED['gpu_model']), (index, name)
        assert persistence == EXPECTED['persistence_mode'], (index, persistence)
        assert compute == EXPECTED['compute_mode'], (index, compute)
        assert mig == EXPECTED['mig_mode'], (index, mig)


def test_gpu_topology_check_passes(host):
    result = _check(host, EXPECTED)
    assert result['failures'] == []
    assert result['regressions'] == []
    assert result['passed'] is True
    topology = result['gpu_topology']
    assert topology['driver_loaded'] is True
    assert topology['driver_error'] is None
    assert topology['gpu_count'] == 8
    assert topology['missing'] == []


def test_gpu_topology_check_can_fail_here(host):
    # control: the same call with a node class this node does not meet must fail, and only on that key
    expected = copy.deepcopy(EXPECTED)
    expected['gpu_count'] = 16
    result = _check(host, expected)
    assert result['passed'] is False
    assert [(f['check'], f['expected'], f['actual']) for f in result['failures']] == [('gpu_count', 16, 8)]


def test_rack_report_says_provisioned(host):
    with open(REPORT + '.json') as handle:
        report = json.load(handle)
    assert [rack['name'] for rack in report['racks']] == ['rack_r01']
    records = report['racks'][0]['hosts']
    assert [record['host'] for record in records] == [host.backend.host]
    record = records[0]
    assert record['status'] == 'provisioned'
    assert record['node_class'] == 'dgx_h100'
    assert record['held_back'] is False
    assert record['unreachable'] is False
    assert record['error'] is None
    assert record['phase'] == 'done'
    # no roles in this rollout: nothing deferred, nothing changed, no reboot
    assert record['pre_check'] == {'passed': True, 'failures': [], 'deferred': []}
    assert record['changes'] == {}
    assert record['reboot'] is None
    assert record['check_mode'] is False
    assert record['post_check'] == {'passed': True, 'failures': [], 'regressions': []}
    assert report['summary']['healthy'] is True
    assert report['summary']['by_status']['provisioned'] == 1
    for ext in ('.md', '.xml'):
        assert os.path.isfile(REPORT + ext)


def test_capture_bundle_reads_back_like_the_node(host):
    # playbooks/capture.yml turns the node into a bundle; the facts read from the bundle on the controller
    # are the facts the node gives
    dest = os.path.join(EPHEMERAL, 'captures')
    run = subprocess.run(['ansible-playbook', '-i', os.path.join(EPHEMERAL, 'inventory'),
                          os.path.join(PROJECT, 'playbooks', 'capture.yml'), '-e', 'gpuops_capture_dir=' + dest],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:]
    sys.path.insert(0, os.path.join(PROJECT, '.build', 'collections'))
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    bundle = gather_bundle(os.path.join(dest, host.backend.host))
    node = _check(host, {})['gpu_topology']
    assert bundle['missing'] == [] and bundle['errors'] == []
    for key in ('driver_version', 'gpu_count', 'gpus', 'matrix', 'gpu_nic_affinity'):
        assert bundle[key] == node[key], key
    assert _still(bundle['nics']) == _still(node['nics'])


def _still(nics):
    """The NICs without the counters the simulated traffic moves between the capture and the check
    (simulator/sim_rdma.py TRAFFIC_COUNTERS)."""
    sys.path.insert(0, PROJECT)
    from simulator.sim_rdma import TRAFFIC_COUNTERS
    moving = [name for name, _rate in TRAFFIC_COUNTERS] + ['hw_counters/rx_write_requests']
    nics = json.loads(json.dumps(nics))
    for nic in nics:
        for port in nic.get('ports') or []:
            for name in moving:
                group, counter = name.split('/')
                (port.get(group) or {}).pop(counter, None)
    return nics


def test_ansible_features(host):
    # verify.yml: the features of this verify written as Ansible tasks (tasks/verify_<feature>.yml), run as
    # molecule's ansible verifier would run them, against the scenario's inventory
    run = subprocess.run(['ansible-playbook', '-i', os.path.join(EPHEMERAL, 'inventory'), '--limit', host.backend.host,
                          os.path.join(PROJECT, 'molecule', 'default', 'verify.yml')],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert run.returncode == 0, run.stdout[-6000:]


def test_simulator_state_survives_a_container_restart(host):
    # runs last: restarts the node. A mode set before the restart is what nvidia-smi reports after it.
    assert host.run('nvidia-smi -i 6 -c 3').rc == 0
    subprocess.check_call(['podman', 'restart', host.backend.host], stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    state = ''
    while time.time() < deadline:
        probe = subprocess.run(['podman', 'exec', host.backend.host, 'systemctl', 'is-system-running'],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
        state = probe.stdout.strip()
        if state in ('running', 'degraded'):
            break
        time.sleep(1)
    assert state == 'running'
    cmd = host.run('nvidia-smi -i 6 --query-gpu=compute_mode --format=csv,noheader && nvidia-smi -i 6 -c 0')
    assert cmd.rc == 0, cmd.stderr
    assert cmd.stdout.splitlines()[0] == 'Exclusive_Process'
