# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes API stand-in (tests/k8s_api/apiserver.py): its answers over HTTP, and kubernetes.core.k8s_drain
(cordon, drain, uncordon) run by ansible-playbook against it, checked by the requests it recorded and its state."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_cli import ansible_playbook, collections_path
from k8s_standin import NODE, StandIn
from repo_paths import REPO

ANSWERS = os.path.join(REPO, 'tests', 'k8s_api', 'answers')
RECORDED_NODE = 'ip-10-0-10-170.ec2.internal'

DAEMONSET_POD = ('kube-system', 'kube-proxy-psxbf')
REPLICASET_POD = ('kube-system', 'coredns-789f8477df-knmwr')
BARE_POD = ('default', 'nccl-allreduce-check')
MIRROR_POD = ('default', 'static-web-' + NODE)
OTHER_NODE_POD = ('kube-system', 'kube-proxy-82mb2')
PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def standin(tmp_path):
    started = []

    def _start(*extra):
        server = StandIn(str(tmp_path), *extra)
        started.append(server)
        return server
    yield _start
    for server in started:
        server.stop()


def pod_names(server, selector='spec.nodeName=' + NODE):
    status, body, _headers = server.call('GET', '/api/v1/pods?fieldSelector=' + selector.replace('=', '%3D'))
    assert status == 200
    return [(pod['metadata']['namespace'], pod['metadata']['name']) for pod in body['items']]


# ---------------------------------------------------------------- answers over HTTP

def test_start_writes_kubeconfig_and_port_and_stops_on_sigterm(standin):
    server = standin()
    with open(server.kubeconfig) as handle:
        text = handle.read()
    assert '    server: http://127.0.0.1:%d\n' % server.port in text
    assert 'current-context: gpuops-k8s-api-standin\n' in text
    status, version, headers = server.call('GET', '/version')
    assert (status, version['major'], headers['Content-Type']) == (200, '1', 'application/json')
    assert server.stop() == 0


def test_discovery_answers(standin):
    server = standin()
    assert server.call('GET', '/api')[1]['versions'] == ['v1']
    groups = server.call('GET', '/apis')[1]
    assert groups['kind'] == 'APIGroupList'
    assert {'groupVersion': 'policy/v1', 'version': 'v1'} in [g['preferredVersion'] for g in groups['groups']]
    resources = server.call('GET', '/api/v1')[1]['resources']
    eviction = [r for r in resources if r['name'] == 'pods/eviction'][0]
    assert (eviction['group'], eviction['version'], eviction['kind']) == ('policy', 'v1', 'Eviction')


def test_node_is_the_recorded_node_renamed(standin):
    server = standin()
    status, node, _headers = server.call('GET', '/api/v1/nodes/' + NODE)
    with open(os.path.join(ANSWERS, 'node.json')) as handle:
        recorded = json.load(handle)
    assert status == 200
    assert (node['kind'], node['metadata']['name']) == ('Node', NODE)
    assert node['metadata']['labels']['kubernetes.io/hostname'] == NODE
    assert 'unschedulable' not in node['spec']
    assert node['status'] == json.loads(json.dumps(recorded['status']).replace(RECORDED_NODE, NODE))
    assert server.call('GET', '/api/v1/nodes')[1]['items'][0]['metadata']['name'] == NODE


def test_unknown_node_pod_and_path_answer_the_real_not_found(standin):
    server = standin()
    status, body, _headers = server.call('GET', '/api/v1/nodes/other')
    assert (status, body['message'], body['details']) == (404, 'nodes "other" not found', {'name': 'other', 'kind': 'nodes'})
    status, body, _headers = server.call('GET', '/api/v1/namespaces/default/pods/nothere')
    assert (status, body['reason'], body['message']) == (404, 'NotFound', 'pods "nothere" not found')
    status, body, _headers = server.call('GET', '/api/v1/configmaps')
    assert (status, body['message']) == (404, 'the server could not find the requested resource')


def test_field_and_label_selectors(standin):
    server = standin()
    assert pod_names(server) == [BARE_POD, MIRROR_POD, REPLICASET_POD, DAEMONSET_POD]
    assert pod_names(server, 'spec.nodeName=ip-10-0-20-143.ec2.internal') == [OTHER_NODE_POD]
    assert pod_names(server, 'spec.nodeName=%s,metadata.namespace=default' % NODE) == [BARE_POD, MIRROR_POD]
    status, body, _headers = server.call('GET', '/api/v1/pods?fieldSelector=spec.nodeNam%3Dx')
    assert (status, body['reason'], body['message']) == (400, 'BadRequest', 'field label not supported: spec.nodeNam')
    status, body, _headers = server.call('GET', '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%20in%20(kube-dns)')
    assert [pod['metadata']['name'] for pod in body['items']] == [REPLICASET_POD[1]]
    assert all('kind' not in pod for pod in body['items'])
    status, pod, _headers = server.call('GET', '/api/v1/namespaces/%s/pods/%s' % MIRROR_POD)
    owner = pod['metadata']['ownerReferences'][0]
    assert (pod['kind'], owner['kind'], owner['name']) == ('Pod', 'Node', NODE)


@pytest.mark.parametrize('content_type, cordon, uncordon', [
    ('application/strategic-merge-patch+json', {'spec': {'unschedulable': True}}, {'spec': {'unschedulable': False}}),
    ('application/merge-patch+json', {'spec': {'unschedulable': True}}, {'spec': {'unschedulable': None}}),
    ('application/json-patch+json', [{'op': 'add', 'path': '/spec/unschedulable', 'value': True}],
     [{'op': 'remove', 'path': '/spec/unschedulable'}]),
])
def test_patch_node_keeps_the_state(standin, content_type, cordon, uncordon):
    server = standin()
    version = server.call('GET', '/api/v1/nodes/' + NODE)[1]['metadata']['resourceVersion']
    status, node, _headers = server.call('PATCH', '/api/v1/nodes/' + NODE, cordon, content_type)
    assert (status, node['spec'].get('unschedulable')) == (200, True)
    assert int(node['metadata']['resourceVersion']) > int(version)
    assert server.call('GET', '/api/v1/nodes/' + NODE)[1]['spec']['unschedulable'] is True
    status, node, _headers = server.call('PATCH', '/api/v1/nodes/' + NODE, uncordon, content_type)
    assert status == 200 and 'unschedulable' not in node['spec']
    assert 'unschedulable' not in server.call('GET', '/api/v1/nodes/' + NODE)[1]['spec']


def test_patch_with_an_unknown_media_type_is_refused(standin):
    server = standin()
    status, body, _headers = server.call('PATCH', '/api/v1/nodes/' + NODE, {'spec': {}}, 'application/json')
    assert (status, body['reason']) == (415, 'UnsupportedMediaType')


def test_eviction_and_delete_remove_pods(standin):
    server = standin()
    path = '/api/v1/namespaces/%s/pods/%s' % REPLICASET_POD
    status, body, _headers = server.call('POST', path + '/eviction', {'metadata': {'name': 'other'}})
    assert (status, body['message']) == (400, 'name in URL does not match name in Eviction object')
    status, body, _headers = server.call('POST', path + '/eviction', {'metadata': {'name': REPLICASET_POD[1]}})
    assert (status, body) == (201, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success', 'code': 201})
    assert server.call('GET', path)[0] == 404
    status, pod, _headers = server.call('DELETE', '/api/v1/namespaces/%s/pods/%s' % BARE_POD, {'gracePeriodSeconds': 0})
    assert (status, pod['metadata']['name']) == (200, BARE_POD[1])
    assert pod_names(server) == [MIRROR_POD, DAEMONSET_POD]
    assert server.call('POST', '/api/v1/namespaces/default/pods/gone/eviction', {'metadata': {'name': 'gone'}})[0] == 404


def test_terminating_pods_are_read_before_they_are_gone(standin):
    server = standin('--terminating-reads', '2')
    path = '/api/v1/namespaces/%s/pods/%s' % REPLICASET_POD
    assert server.call('POST', path + '/eviction', {'metadata': {'name': REPLICASET_POD[1]}})[0] == 201
    for _read in range(2):
        status, pod, _headers = server.call('GET', path)
        assert status == 200 and pod['metadata']['deletionGracePeriodSeconds'] == 30
        assert pod['metadata']['deletionTimestamp'].endswith('Z')
    assert server.call('GET', path)[0] == 404


def test_refused_eviction_is_the_real_429(standin):
    server = standin('--refuse-eviction', '%s/%s' % REPLICASET_POD, '--pdb-name', 'coredns-pdb')
    path = '/api/v1/namespaces/%s/pods/%s' % REPLICASET_POD
    status, body, headers = server.call('POST', path + '/eviction', {'metadata': {'name': REPLICASET_POD[1]}})
    assert status == 429 and headers['Content-Type'] == 'application/json'
    assert body == {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': PDB_MESSAGE,
                    'reason': 'TooManyRequests', 'details': {'causes': [{
                        'reason': 'DisruptionBudget',
                        'message': 'The disruption budget coredns-pdb needs 2 healthy pods and has 2 currently'}]},
                    'code': 429}
    assert server.call('GET', path)[0] == 200
    assert server.call('POST', '/api/v1/namespaces/%s/pods/%s/eviction' % BARE_POD,
                       {'metadata': {'name': BARE_POD[1]}})[0] == 201


def test_every_request_is_logged(standin):
    server = standin()
    server.call('PATCH', '/api/v1/nodes/' + NODE, {'spec': {'unschedulable': True}},
                'application/strategic-merge-patch+json')
    server.call('GET', '/api/v1/nodes/nope')
    assert [(r['seq'], r['method'], r['path'], r['status'], r['body'], r['message']) for r in server.requests()] == [
        (1, 'PATCH', '/api/v1/nodes/' + NODE, 200, {'spec': {'unschedulable': True}}, None),
        (2, 'GET', '/api/v1/nodes/nope', 404, None, 'nodes "nope" not found'),
    ]


def test_pods_file_places_recorded_pods_on_the_node():
    with open(os.path.join(ANSWERS, 'pods.json')) as handle:
        data = json.load(handle)
    assert data['recordedNode'] == RECORDED_NODE
    kinds = dict((pod['metadata']['name'], [o['kind'] for o in pod['metadata'].get('ownerReferences', [])])
                 for pod in data['items'])
    assert kinds == {'kube-proxy-psxbf': ['DaemonSet'], 'coredns-789f8477df-knmwr': ['ReplicaSet'],
                     'nccl-allreduce-check': [], 'static-web-' + RECORDED_NODE: ['Node'],
                     'kube-proxy-82mb2': ['DaemonSet']}


# ---------------------------------------------------------------- kubernetes.core.k8s_drain through ansible-playbook

PLAYBOOK_HEAD = """\
- name: Drain path against the Kubernetes API stand-in
  hosts: controller
  gather_facts: false
  tasks:
"""

TASK = """\
    - name: %(name)s
      kubernetes.core.k8s_drain:
        kubeconfig: "%(kubeconfig)s"
        name: %(node)s
        state: %(state)s
%(options)s      register: %(name)s
      ignore_errors: %(ignore)s
"""

DRAIN_OPTIONS = """\
        delete_options:
          ignore_daemonsets: true
          force: %s
          wait_timeout: 30
          wait_sleep: 1
"""

RESULTS = """\
    - name: Results
      ansible.builtin.copy:
        content: "{{ results | to_json }}"
        dest: "%s"
        mode: "0644"
      vars:
        results:
"""


def run_playbook(tmp, server, steps):
    """steps: (register name, state, force or None for no delete_options); returns what each step registered."""
    exe = ansible_playbook()
    pytest.importorskip('kubernetes')
    results = os.path.join(tmp, 'results.json')
    text = PLAYBOOK_HEAD
    for name, state, force in steps:
        text += TASK % {'name': name, 'kubeconfig': server.kubeconfig, 'node': NODE, 'state': state,
                        'options': '' if force is None else DRAIN_OPTIONS % str(force).lower(),
                        'ignore': 'true' if state == 'drain' else 'false'}
    text += RESULTS % results
    for name, _state, _force in steps:
        text += '          %s: "{{ %s }}"\n' % (name, name)
    playbook = os.path.join(tmp, 'drain.yml')
    with open(playbook, 'w') as handle:
        handle.write(text)
    inventory = os.path.join(tmp, 'inventory')
    with open(inventory, 'w') as handle:
        handle.write('controller ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    module_tmp = os.path.join(tmp, 'module-tmp')  # where the dynamic client keeps its discovery cache
    os.mkdir(module_tmp)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, 'ansible-local'),
               ANSIBLE_RETRY_FILES_ENABLED='0', TMPDIR=module_tmp)
    run = subprocess.run([exe, '-i', inventory, playbook], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=300, env=env, check=False)
    assert run.returncode == 0, run.stdout
    with open(results) as handle:
        return json.load(handle)


def calls(server):
    """(method, path) of the requests after discovery, with the field selector of lists."""
    out = []
    for request in server.requests():
        if request['path'] in ('/version', '/api', '/apis'):
            continue
        out.append((request['method'], request['path'] + ('?' + request['query']['fieldSelector']
                                                          if 'fieldSelector' in request['query'] else '')))
    return out


NODE_PATH = '/api/v1/nodes/' + NODE


def pod_path(pod, sub=''):
    return '/api/v1/namespaces/%s/pods/%s%s' % (pod[0], pod[1], sub)


def test_cordon_drain_uncordon_through_k8s_drain(tmp_path, standin):
    server = standin('--terminating-reads', '1')
    results = run_playbook(str(tmp_path), server, [('cordon', 'cordon', None), ('drain', 'drain', True),
                                                   ('uncordon', 'uncordon', None)])
    assert results['cordon']['result'] == 'node %s marked unschedulable.' % NODE
    assert results['drain']['result'] == 'node %s already marked unschedulable. 2 Pod(s) deleted from node.' % NODE
    assert 'failed' not in results['drain'] or not results['drain']['failed']
    assert results['uncordon']['result'] == 'node %s marked schedulable.' % NODE
    assert [r['path'] for r in server.requests()[:2]] == ['/version', '/apis']  # the dynamic client's discovery
    assert calls(server) == [
        ('GET', NODE_PATH), ('PATCH', NODE_PATH),                       # cordon
        ('GET', NODE_PATH), ('GET', '/api/v1/pods?spec.nodeName=' + NODE),  # drain: node already cordoned
        ('POST', pod_path(REPLICASET_POD, '/eviction')), ('POST', pod_path(BARE_POD, '/eviction')),
        ('GET', pod_path(BARE_POD)), ('GET', pod_path(BARE_POD)),           # terminating, then gone
        ('GET', pod_path(REPLICASET_POD)), ('GET', pod_path(REPLICASET_POD)),
        ('GET', NODE_PATH), ('PATCH', NODE_PATH),                       # uncordon
    ]
    patches = [r['body'] for r in server.requests() if r['method'] == 'PATCH']
    assert patches == [{'spec': {'unschedulable': True}}, {'spec': {'unschedulable': False}}]
    assert all(r['content_type'] == 'application/strategic-merge-patch+json'
               for r in server.requests() if r['method'] == 'PATCH')
    evictions = [r['body'] for r in server.requests() if r['path'].endswith('/eviction')]
    assert evictions == [{'metadata': {'name': pod[1], 'namespace': pod[0]}} for pod in (REPLICASET_POD, BARE_POD)]
    assert pod_names(server) == [MIRROR_POD, DAEMONSET_POD]
    assert pod_names(server, 'spec.nodeName=ip-10-0-20-143.ec2.internal') == [OTHER_NODE_POD]
    assert 'unschedulable' not in server.call('GET', NODE_PATH)[1]['spec']


def test_refused_eviction_fails_the_drain_with_the_api_message(tmp_path, standin):
    server = standin('--refuse-eviction', '%s/%s' % REPLICASET_POD)
    results = run_playbook(str(tmp_path), server, [('drain', 'drain', True)])
    assert results['drain']['failed'] is True
    assert results['drain']['msg'] == 'Failed to delete pod %s/%s due to: %s' % (REPLICASET_POD + (PDB_MESSAGE,))
    assert calls(server) == [
        ('GET', NODE_PATH), ('PATCH', NODE_PATH), ('GET', '/api/v1/pods?spec.nodeName=' + NODE),
        ('POST', pod_path(REPLICASET_POD, '/eviction')),
    ]
    assert [r['status'] for r in server.requests()][-1] == 429
    assert server.call('GET', NODE_PATH)[1]['spec']['unschedulable'] is True  # k8s_drain leaves it cordoned
    assert pod_names(server) == [BARE_POD, MIRROR_POD, REPLICASET_POD, DAEMONSET_POD]


def test_unmanaged_pod_without_force_fails_and_uncordons(tmp_path, standin):
    server = standin()
    results = run_playbook(str(tmp_path), server, [('drain', 'drain', False)])
    assert results['drain']['failed'] is True
    assert ('cannot delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet '
            '(use option force set to yes): %s/%s.' % BARE_POD) in results['drain']['msg']
    assert calls(server) == [('GET', NODE_PATH), ('PATCH', NODE_PATH), ('GET', '/api/v1/pods?spec.nodeName=' + NODE),
                             ('PATCH', NODE_PATH)]
    assert [r['body'] for r in server.requests() if r['method'] == 'PATCH'] == [
        {'spec': {'unschedulable': True}}, {'spec': {'unschedulable': False}}]
    assert len(pod_names(server)) == 4
