# -*- coding: utf-8 -*-
"""site.yml with gpuops_scheduler kubernetes, against the Kubernetes API stand-in (tests/k8s_api: recorded answers of
a real API server; there is no API server on the test machines). One capture-bundle host (local connection) whose
node the stand-in serves; a test role in the rollout makes a change, and breaks the host's bundle when asked, so its
post-change check fails. Each run is read back from the report and from the node the stand-in keeps."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_cli import ansible_playbook, collections_path
from k8s_standin import StandIn
from repo_paths import REPO as ROOT
from simhelpers import profile_path, profile_tree
from simulator import bundle

pytest.importorskip('kubernetes')

H100 = 'h100-sxm-8gpu-ib'
HOST = 'gpu-k01'
ANNOTATION = 'gpuops.node/drain-reason'

ROLE = """---
- name: Make a change
  ansible.builtin.set_fact:
    change_hook_changed: 1
    change_hook_reboot_required: false

- name: Break the host after its change (its bundle replaced by one with NVLink down on GPU 3)
  ansible.builtin.command:
    argv: [cp, -a, --remove-destination, "{{ change_hook_broken }}/.", "{{ gpuops_bundle_dir }}/"]
  changed_when: true
  when: change_hook_break | default(false) | bool
"""


@pytest.fixture
def rack(tmp_path):
    tmp = str(tmp_path)
    from simulator import faults
    bundle_dir, broken = os.path.join(tmp, 'bundle'), os.path.join(tmp, 'broken')
    bundle.write_tree(profile_tree(H100), bundle_dir)
    tree = profile_tree(H100)
    faults.FAULTS['nvlink_down'].apply(tree, gpu=3)
    bundle.write_tree(tree, broken)
    role = os.path.join(tmp, 'roles', 'change_hook', 'tasks')
    os.makedirs(role)
    with open(os.path.join(role, 'main.yml'), 'w') as handle:
        handle.write(ROLE)
    os.makedirs(os.path.join(tmp, 'api'))
    server = StandIn(os.path.join(tmp, 'api'), '--node', HOST)
    with open(os.path.join(profile_path(H100), 'profile.yml')) as handle:
        profile = bundle.load_yaml(handle.read())['expected_node_class']
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'gpuops_report_dir': os.path.join(tmp, 'reports'), 'gpuops_scheduler': 'kubernetes',
                 'gpuops_kubectl_host': 'localhost', 'gpuops_kubeconfig': server.kubeconfig,
                 'gpuops_drain_timeout': 20, 'change_hook_broken': broken,
                 'gpuops_roles': [{'name': 'change_hook', 'role': os.path.dirname(role)}]},
        'children': {'rack_k': {'hosts': {HOST: {'gpuops_bundle_dir': bundle_dir}}},
                     'dgx_h100': {'hosts': {HOST: None},
                                  'vars': {'gpuops_node_class': 'dgx_h100', 'gpuops_node_class_profile': profile}}}}}
    path = os.path.join(tmp, 'hosts.yml')
    with open(path, 'w') as handle:
        yaml.safe_dump(inventory, handle)
    yield {'tmp': tmp, 'inventory': path, 'server': server, 'bundle': bundle_dir}
    server.stop()


def site(rack, *args):
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_COLLECTIONS_PATH=collections_path())
    proc = subprocess.run([ansible_playbook(), '-i', rack['inventory'], os.path.join(ROOT, 'site.yml')] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                          cwd=rack['tmp'], check=False)
    with open(os.path.join(rack['tmp'], 'reports', 'rack-report.json')) as handle:
        record = json.load(handle)['racks'][0]['hosts'][0]
    return proc, record


def node(rack):
    status, body, _headers = rack['server'].call('GET', '/api/v1/nodes/' + HOST)
    assert status == 200
    return bool(body['spec'].get('unschedulable')), (body['metadata'].get('annotations') or {}).get(ANNOTATION)


def test_drain_change_and_return_through_the_api(rack):
    # a pod without a controller: k8s_drain refuses without force, and makes the node schedulable again
    proc, record = site(rack)
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'held_back'
    assert 'drain:' in record['error'] and 'gpuops_kubernetes_drain_options' in record['error']
    assert record['changes'] == {}
    assert record['service']['action'] == 'none'
    assert node(rack) == (False, None)

    # with force the pods are evicted, the change made, the node passes and is uncordoned, its mark removed
    proc, record = site(rack, '-e', '{"gpuops_kubernetes_drain_options": {"force": true, "ignore_daemonsets": true}}')
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'provisioned'
    assert record['scheduler']['drained'] is True and record['service']['action'] == 'resume'
    assert node(rack) == (False, None)
    paths = [(r['method'], r['path']) for r in rack['server'].requests()]
    assert ('POST', '/api/v1/namespaces/kube-system/pods/coredns-789f8477df-knmwr/eviction') in paths


def test_a_node_that_fails_after_its_change_stays_cordoned_with_its_failures(rack):
    force = '{"gpuops_kubernetes_drain_options": {"force": true, "ignore_daemonsets": true}}'
    proc, record = site(rack, '-e', force, '-e', 'change_hook_break=true')
    assert proc.returncode == 2, proc.stdout
    # NVLink down after the change: a regression against the pre-change snapshot
    assert record['status'] == 'regressed'
    assert record['service']['action'] == 'keep'
    cordoned, reason = node(rack)
    assert cordoned and reason == record['service']['reason'] and reason.startswith('regressed: ')
    assert 'GPU3' in reason or 'nvlink' in reason

    # the host repaired (its bundle back), a run that passes uncordons the node an earlier run left cordoned
    shutil.rmtree(rack['bundle'])
    bundle.write_tree(profile_tree(H100), rack['bundle'])
    proc, record = site(rack, '-e', force)
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'provisioned' and record['service']['action'] == 'resume'
    assert record['scheduler']['before']['ours'] is True
    assert node(rack) == (False, None)


def test_a_node_an_operator_cordoned_stays_cordoned(rack):
    rack['server'].call('PATCH', '/api/v1/nodes/' + HOST, {'spec': {'unschedulable': True}},
                        'application/merge-patch+json')
    proc, record = site(rack, '-e', '{"gpuops_kubernetes_drain_options": {"force": true, "ignore_daemonsets": true}}')
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'provisioned'
    assert record['service']['action'] == 'left'
    assert node(rack) == (True, None)


def test_a_run_that_needs_no_drain_touches_no_node(rack):
    proc, record = site(rack, '-e', '{"gpuops_drain_exempt_roles": ["change_hook"]}')
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'provisioned'
    assert record['scheduler']['drained'] is False and record['service']['action'] == 'none'
    assert record['service']['text'] == 'in service, not drained'
    assert [r['method'] for r in rack['server'].requests() if r['path'].startswith('/api/v1/nodes')] == ['GET']


def test_an_api_server_that_cannot_be_reached_holds_the_host_back_and_the_report_says_why(rack):
    rack['server'].stop()
    proc, record = site(rack)
    assert proc.returncode == 0, proc.stdout
    assert record['status'] == 'held_back'
    assert record['error'].startswith('held back, nothing changed: the scheduler could not be read: ')
    assert record['changes'] == {}
