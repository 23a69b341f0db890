# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A STAND-IN for the Kubernetes API server, answering with recorded answers, for tests only.

There is no Kubernetes API server on the test machines. This plain-HTTP server answers the requests that
``kubernetes.core.k8s_drain`` (cordon, drain, uncordon) and the kubernetes Python client it uses make, with
objects of the shape the real API server gives: the node and most pods are real objects recorded from a
cluster, the discovery documents are excerpts of the ones kube-apiserver serves, the error answers are the
``Status`` objects the API server builds for them (tests/k8s_api/README.md says where each answer comes
from and which ones are constructed). It keeps state: the node's ``spec.unschedulable``, the pods on it
(evicted or deleted pods go away), and records every request in a JSON lines log.

It is not an API server: no authentication or authorization, no admission, no watch, no PodDisruptionBudget
objects (an eviction is refused with 429 only for the pods named by ``--refuse-eviction``), no other
resources than the node and the pods, no node controller (cordoning adds no taint), no kubelet (pods evicted
are gone after ``--terminating-reads`` reads of them, nothing is started elsewhere).

    python3 tests/k8s_api/apiserver.py --node NAME [--pods FILE] [--port 0] [--port-file F] [--log F]
        [--kubeconfig F] [--refuse-eviction NAMESPACE/NAME|*] [--terminating-reads N] [--unschedulable]

runs in the foreground until SIGTERM or SIGINT (exit 0). The port file is written (atomically) once the
server answers, after the kubeconfig. Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import copy
import datetime
import json
import os
import re
import signal
import sys
import threading
import uuid

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ANSWERS = os.path.join(HERE, 'answers')
KUBECONFIG_NAME = 'gpuops-k8s-api-standin'

# Field labels the real API server accepts in a pod field selector (pkg/registry/core/pod/strategy.go,
# ToSelectableFields, and the generic metadata.name / metadata.namespace), with where they are in a pod.
POD_FIELDS = {
    'metadata.name': ('metadata', 'name'),
    'metadata.namespace': ('metadata', 'namespace'),
    'spec.nodeName': ('spec', 'nodeName'),
    'spec.restartPolicy': ('spec', 'restartPolicy'),
    'spec.schedulerName': ('spec', 'schedulerName'),
    'spec.serviceAccountName': ('spec', 'serviceAccountName'),
    'status.phase': ('status', 'phase'),
    'status.podIP': ('status', 'podIP'),
    'status.nominatedNodeName': ('status', 'nominatedNodeName'),
}

PATCH_TYPES = ('application/json-patch+json', 'application/merge-patch+json',
               'application/strategic-merge-patch+json')

# The eviction refusal of pkg/registry/core/pod/storage/eviction.go (checkAndDecrement).
EVICTION_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
EVICTION_CAUSE = 'The disruption budget %s needs %d healthy pods and has %d currently'


class ApiError(Exception):
    """An answer other than success: a metav1.Status, as k8s.io/apimachinery/pkg/api/errors builds it."""

    def __init__(self, code, reason, message, details=None):
        super(ApiError, self).__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': self.message,
                'reason': self.reason}
        if self.details is not None:
            body['details'] = self.details
        body['code'] = self.code
        return body


def not_found(resource, name):
    return ApiError(404, 'NotFound', '%s "%s" not found' % (resource, name), {'name': name, 'kind': resource})


def no_route():
    return ApiError(404, 'NotFound', 'the server could not find the requested resource', {})


def bad_request(message):
    return ApiError(400, 'BadRequest', message)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def load_json(path):
    with open(path) as handle:
        return json.load(handle)


# ---------------------------------------------------------------- selectors

def split_terms(text):
    """Comma-separated terms, commas inside parentheses (set-based label selectors) kept."""
    terms, depth, current = [], 0, ''
    for char in text:
        if char == ',' and depth == 0:
            terms.append(current.strip())
            current = ''
            continue
        depth += {'(': 1, ')': -1}.get(char, 0)
        current += char
    if current.strip():
        terms.append(current.strip())
    return [term for term in terms if term]


def field_matcher(selector):
    """A predicate on pods for a fieldSelector (=, ==, !=); unknown field labels answer 400 as the real server."""
    tests = []
    for term in split_terms(selector or ''):
        match = re.match(r'^([^=!]+)(==|=|!=)(.*)$', term)
        if not match:
            raise bad_request('invalid selector: \'%s\'; can\'t understand \'%s\'' % (selector, term))
        label, operator, value = match.group(1).strip(), match.group(2), match.group(3).strip()
        if label not in POD_FIELDS:
            raise bad_request('field label not supported: %s' % label)
        tests.append((POD_FIELDS[label], operator == '!=', value))

    def matches(pod):
        for (part, key), negate, value in tests:
            actual = str((pod.get(part) or {}).get(key) or '')
            if (actual == value) == negate:
                return False
        return True
    return matches


def label_matcher(selector):
    """A predicate on pods for a labelSelector: key=value, key==value, key!=value, key, !key, key in (..), key notin (..)."""
    tests = []
    for term in split_terms(selector or ''):
        match = re.match(r'^([^\s=!]+)\s+(in|notin)\s+\((.*)\)$', term)
        if match:
            values = set(v.strip() for v in match.group(3).split(',') if v.strip())
            tests.append((match.group(1), match.group(2), values))
            continue
        match = re.match(r'^([^=!]+)(==|=|!=)(.*)$', term)
        if match:
            tests.append((match.group(1).strip(), '!=' if match.group(2) == '!=' else '=', match.group(3).strip()))
        elif term.startswith('!'):
            tests.append((term[1:].strip(), 'absent', None))
        else:
            tests.append((term, 'present', None))

    def matches(pod):
        labels = pod['metadata'].get('labels') or {}
        for key, operator, value in tests:
            ok = {
                '=': lambda k, v: labels.get(k) == v,
                '!=': lambda k, v: labels.get(k) != v,
                'in': lambda k, v: k in labels and labels[k] in v,
                'notin': lambda k, v: labels.get(k) not in v,
                'present': lambda k, v: k in labels,
                'absent': lambda k, v: k not in labels,
            }[operator](key, value)
            if not ok:
                return False
        return True
    return matches


# ---------------------------------------------------------------- patches

def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (a strategic merge patch of scalar fields does the same)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target, operations):
    """RFC 6902 add / replace / remove / test on objects (enough for spec fields of a node)."""
    result = copy.deepcopy(target)
    for operation in operations:
        op, path = operation.get('op'), operation.get('path', '')
        keys = [key.replace('~1', '/').replace('~0', '~') for key in path.split('/')[1:]]
        if not keys:
            raise bad_request('the JSON patch path "%s" is not supported by this stand-in' % path)
        parent = result
        for key in keys[:-1]:
            if op in ('add', 'replace') and key not in parent:
                parent[key] = {}
            parent = parent.get(key) if isinstance(parent, dict) else None
            if not isinstance(parent, dict):
                raise ApiError(422, 'Invalid', 'doc is missing path: "%s": missing value' % path)
        last = keys[-1]
        if op in ('add', 'replace'):
            if op == 'replace' and last not in parent:
                raise ApiError(422, 'Invalid', 'replace operation does not apply: doc is missing key: %s: missing value' % path)
            parent[last] = operation.get('value')
        elif op == 'remove':
            if last not in parent:
                raise ApiError(422, 'Invalid', 'remove operation does not apply: doc is missing key: %s: missing value' % path)
            del parent[last]
        elif op == 'test':
            if parent.get(last) != operation.get('value'):
                raise ApiError(422, 'Invalid', 'testing value %s failed: test failed' % path)
        else:
            raise bad_request('Unexpected kind: %s' % op)
    return result


# ---------------------------------------------------------------- state

class Cluster(object):
    """One node and the pods the stand-in knows, behind one lock."""

    def __init__(self, node_name, node, pods, refuse=(), pdb_name='workload-pdb', terminating_reads=0,
                 unschedulable=False):
        self.lock = threading.Lock()
        self.node_name = node_name
        self.refuse = set(refuse)
        self.pdb_name = pdb_name
        self.terminating_reads = terminating_reads
        recorded = node['metadata']['name']
        node = copy.deepcopy(node)
        node['metadata']['name'] = node_name
        labels = node['metadata'].setdefault('labels', {})
        if 'kubernetes.io/hostname' in labels:
            labels['kubernetes.io/hostname'] = node_name
        for address in node.get('status', {}).get('addresses', []):
            if address.get('type') in ('Hostname', 'InternalDNS') and address.get('address') == recorded:
                address['address'] = node_name
        node.setdefault('spec', {}).pop('unschedulable', None)
        if unschedulable:
            node['spec']['unschedulable'] = True
        self.node = node
        self.pods = {}
        self.left = {}
        versions = [int(node['metadata'].get('resourceVersion') or 0)]
        for pod in pods:
            key = (pod['metadata'].get('namespace', 'default'), pod['metadata']['name'])
            self.pods[key] = pod
            versions.append(int(pod['metadata'].get('resourceVersion') or 0))
        self.version = max(versions)

    @classmethod
    def from_files(cls, node_name, node_file, pods_file, **kwargs):
        node = load_json(node_file)
        data = load_json(pods_file)
        items = data if isinstance(data, list) else data.get('items') or []
        recorded = None if isinstance(data, list) else data.get('recordedNode')
        node_uid = node['metadata'].get('uid', '')
        pods = []
        for pod in copy.deepcopy(items):
            pod.pop('kind', None)
            pod.pop('apiVersion', None)
            spec = pod.setdefault('spec', {})
            if recorded is None and not spec.get('nodeName'):
                spec['nodeName'] = node_name
            elif recorded is not None and spec.get('nodeName') == recorded:
                spec['nodeName'] = node_name
                pod['metadata']['name'] = pod['metadata']['name'].replace(recorded, node_name)
                for owner in pod['metadata'].get('ownerReferences') or []:
                    if owner.get('kind') == 'Node':
                        owner['name'] = node_name
                        owner['uid'] = node_uid
            pods.append(pod)
        return cls(node_name, node, pods, **kwargs)

    def bump(self, obj):
        self.version += 1
        obj['metadata']['resourceVersion'] = str(self.version)

    # nodes
    def get_node(self, name):
        if name != self.node_name:
            raise not_found('nodes', name)
        return copy.deepcopy(self.node)

    def list_nodes(self):
        return {'kind': 'NodeList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': str(self.version)},
                'items': [self.item(self.node)]}

    def patch_node(self, name, content_type, patch):
        if name != self.node_name:
            raise not_found('nodes', name)
        if content_type == 'application/json-patch+json':
            if not isinstance(patch, list):
                raise bad_request('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
            node = json_patch(self.node, patch)
        else:
            node = merge_patch(self.node, patch)
        node['metadata']['name'] = name
        if node.get('spec', {}).get('unschedulable') is False:  # omitempty: false is not written
            del node['spec']['unschedulable']
        self.bump(node)
        self.node = node
        return copy.deepcopy(node)

    # pods
    @staticmethod
    def item(obj):
        """List items carry no kind and apiVersion (the list does)."""
        obj = copy.deepcopy(obj)
        obj.pop('kind', None)
        obj.pop('apiVersion', None)
        return obj

    @staticmethod
    def pod_object(pod):
        obj = {'kind': 'Pod', 'apiVersion': 'v1'}
        obj.update(copy.deepcopy(pod))
        return obj

    def list_pods(self, namespace=None, field_selector=None, label_selector=None):
        by_field, by_label = field_matcher(field_selector), label_matcher(label_selector)
        items = [self.item(pod) for (ns, _name), pod in sorted(self.pods.items())
                 if (namespace is None or ns == namespace) and by_field(pod) and by_label(pod)]
        return {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': str(self.version)},
                'items': items}

    def get_pod(self, namespace, name):
        key = (namespace, name)
        if key not in self.pods:
            raise not_found('pods', name)
        if key in self.left:  # terminating: gone after its last read
            if self.left[key] <= 0:
                del self.pods[key]
                del self.left[key]
                raise not_found('pods', name)
            self.left[key] -= 1
        return self.pod_object(self.pods[key])

    def remove_pod(self, namespace, name, grace=None):
        """What deleting a pod does: gone at once (grace 0 or no terminating reads), else terminating."""
        key = (namespace, name)
        pod = self.pods[key]
        if grace is None:
            grace = pod.get('spec', {}).get('terminationGracePeriodSeconds', 30)
        if grace == 0 or self.terminating_reads <= 0:
            del self.pods[key]
            self.left.pop(key, None)
            return self.pod_object(pod)
        if key not in self.left:
            pod['metadata']['deletionTimestamp'] = now_rfc3339()
            pod['metadata']['deletionGracePeriodSeconds'] = grace
            self.bump(pod)
            self.left[key] = self.terminating_reads
        return self.pod_object(pod)

    def delete_pod(self, namespace, name, options):
        if (namespace, name) not in self.pods:
            raise not_found('pods', name)
        grace = (options or {}).get('gracePeriodSeconds')
        return self.remove_pod(namespace, name, grace)

    def evict_pod(self, namespace, name, eviction):
        eviction = eviction or {}
        if (eviction.get('metadata') or {}).get('name', name) != name:
            raise bad_request('name in URL does not match name in Eviction object')
        if (namespace, name) not in self.pods:
            raise not_found('pods', name)
        if '*' in self.refuse or '%s/%s' % (namespace, name) in self.refuse:
            raise ApiError(429, 'TooManyRequests', EVICTION_REFUSED,
                           {'causes': [{'reason': 'DisruptionBudget', 'message': EVICTION_CAUSE % (self.pdb_name, 2, 2)}]})
        options = eviction.get('deleteOptions') or {}
        self.remove_pod(namespace, name, options.get('gracePeriodSeconds'))
        return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success', 'code': 201}


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    """Routes of the core API the drain uses; anything else answers 404 as the real server does."""

    protocol_version = 'HTTP/1.1'

    def version_string(self):
        """The Server header says what answers: not a kube-apiserver."""
        return 'gpuops-k8s-api-standin'

    def log_message(self, *args):  # pylint: disable=arguments-differ
        """No access log on stderr: the JSON lines log records every request."""

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if not raw:
            return raw, None
        try:
            return raw, json.loads(raw.decode('utf-8'))
        except ValueError:
            return raw, raw.decode('utf-8', 'replace')[:200]

    def _send(self, code, body):
        data = (json.dumps(body) + '\n').encode('utf-8')
        self.send_response(code)
        self.send_header('Audit-Id', str(uuid.uuid4()))
        self.send_header('Cache-Control', 'no-cache, private')
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self):
        url = urlsplit(self.path)
        path = unquote(url.path).rstrip('/') or '/'
        query = dict((key, values[-1]) for key, values in parse_qs(url.query).items())
        raw, body = self._body()
        content_type = (self.headers.get('Content-Type') or '').split(';')[0].strip()
        try:
            code, answer = self.server.route(self.command, path, query, content_type, body)
        except ApiError as exc:
            code, answer = exc.code, exc.status()
        self.server.record({'method': self.command, 'path': path, 'query': query,
                            'content_type': content_type or None, 'body': summary(raw, body), 'status': code,
                            'message': answer.get('message') if answer.get('kind') == 'Status' else None})
        self._send(code, answer)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle


def summary(raw, body):
    """The request body for the log: the JSON itself when small, else its top-level keys and size."""
    if body is None:
        return None
    if len(raw) <= 4096:
        return body
    return {'keys': sorted(body) if isinstance(body, dict) else None, 'bytes': len(raw)}


class StandInServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, cluster, log_path=None):
        ThreadingHTTPServer.__init__(self, address, Handler)
        self.cluster = cluster
        self.log_lock = threading.Lock()
        self.seq = 0
        self.log = open(log_path, 'w') if log_path else None

    def record(self, entry):
        with self.log_lock:
            self.seq += 1
            if self.log:
                line = {'seq': self.seq}
                line.update(entry)
                self.log.write(json.dumps(line, sort_keys=False) + '\n')
                self.log.flush()

    def route(self, method, path, query, content_type, body):
        cluster = self.cluster
        static = {'/version': 'version.json', '/api': 'api.json', '/apis': 'apis.json', '/api/v1': 'api_v1.json'}
        if path in static:
            if method != 'GET':
                raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
            return 200, load_json(os.path.join(ANSWERS, static[path]))
        parts = path.strip('/').split('/')
        if parts[:2] != ['api', 'v1']:
            raise no_route()
        rest = parts[2:]
        with cluster.lock:
            if rest == ['nodes'] and method == 'GET':
                return 200, cluster.list_nodes()
            if len(rest) == 2 and rest[0] == 'nodes':
                if method == 'GET':
                    return 200, cluster.get_node(rest[1])
                if method == 'PATCH':
                    if content_type not in PATCH_TYPES:
                        raise ApiError(415, 'UnsupportedMediaType',
                                       'the body of the request was in an unknown format - accepted media types include: '
                                       'application/json-patch+json, application/merge-patch+json, '
                                       'application/apply-patch+yaml, application/strategic-merge-patch+json')
                    return 200, cluster.patch_node(rest[1], content_type, body)
            if rest == ['pods'] and method == 'GET':
                return 200, cluster.list_pods(None, query.get('fieldSelector'), query.get('labelSelector'))
            if len(rest) >= 3 and rest[0] == 'namespaces' and rest[2] == 'pods':
                namespace = rest[1]
                if len(rest) == 3 and method == 'GET':
                    return 200, cluster.list_pods(namespace, query.get('fieldSelector'), query.get('labelSelector'))
                if len(rest) == 4 and method == 'GET':
                    return 200, cluster.get_pod(namespace, rest[3])
                if len(rest) == 4 and method == 'DELETE':
                    return 200, cluster.delete_pod(namespace, rest[3], body if isinstance(body, dict) else None)
                if len(rest) == 5 and rest[4] == 'eviction' and method == 'POST':
                    return 201, cluster.evict_pod(namespace, rest[3], body if isinstance(body, dict) else None)
        if method not in ('GET', 'POST', 'PATCH', 'DELETE', 'PUT'):
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        raise no_route()


def write_atomic(path, text):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(text)
    os.rename(tmp, path)


def kubeconfig_text(host, port):
    return '\n'.join([
        '# kubeconfig of the Kubernetes API stand-in (tests/k8s_api/apiserver.py): not a cluster',
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: %s' % KUBECONFIG_NAME,
        '  cluster:',
        '    server: http://%s:%d' % (host, port),
        'contexts:',
        '- name: %s' % KUBECONFIG_NAME,
        '  context:',
        '    cluster: %s' % KUBECONFIG_NAME,
        '    user: %s' % KUBECONFIG_NAME,
        'current-context: %s' % KUBECONFIG_NAME,
        'preferences: {}',
        'users:',
        '- name: %s' % KUBECONFIG_NAME,
        '  user:',
        '    token: stand-in',
        '',
    ])


def parse_args(argv):
    parser = argparse.ArgumentParser(description='Kubernetes API stand-in (recorded answers) for tests.')
    parser.add_argument('--node', required=True, help='name of the node it serves')
    parser.add_argument('--pods', default=os.path.join(ANSWERS, 'pods.json'),
                        help='pods: {"recordedNode": NAME, "items": [...]}, a PodList or a list (default: %(default)s)')
    parser.add_argument('--node-object', default=os.path.join(ANSWERS, 'node.json'),
                        help='the Node object answered, renamed to --node (default: %(default)s)')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0, help='0: any free port')
    parser.add_argument('--port-file', help='written with the port once the server answers')
    parser.add_argument('--log', help='JSON lines log of every request')
    parser.add_argument('--kubeconfig', help='kubeconfig to write (server: http://HOST:PORT)')
    parser.add_argument('--refuse-eviction', action='append', default=[], metavar='NAMESPACE/NAME',
                        help="answer this pod's eviction 429 (PodDisruptionBudget); '*' for every pod; repeatable")
    parser.add_argument('--pdb-name', default='workload-pdb', help='the PodDisruptionBudget named in the 429 answer')
    parser.add_argument('--terminating-reads', type=int, default=0,
                        help='reads of an evicted or deleted pod that still find it (terminating) before it is gone')
    parser.add_argument('--unschedulable', action='store_true', help='the node starts cordoned')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cluster = Cluster.from_files(args.node, args.node_object, args.pods, refuse=args.refuse_eviction,
                                 pdb_name=args.pdb_name, terminating_reads=args.terminating_reads,
                                 unschedulable=args.unschedulable)
    server = StandInServer((args.host, args.port), cluster, args.log)
    port = server.server_address[1]
    if args.kubeconfig:
        write_atomic(args.kubeconfig, kubeconfig_text(args.host, port))

    def on_signal(_signum, _frame):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.port_file:
        write_atomic(args.port_file, '%d\n' % port)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        if server.log:
            server.log.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
