# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes API stand-in (tests/k8s_api/apiserver.py) as a background process, for the tests that talk to it
(k8s_api/test_k8s_api_standin.py, playbooks/test_site_kubernetes.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import signal
import subprocess
import sys
import time

from urllib.error import HTTPError
from urllib.request import Request, urlopen

from repo_paths import REPO

STANDIN = os.path.join(REPO, 'tests', 'k8s_api', 'apiserver.py')
# the node the stand-in serves unless told another (--node)
NODE = 'gpu-node-07'


class StandIn(object):
    """The stand-in as a background process, as a test (or a Molecule playbook) starts it."""

    def __init__(self, tmp, *extra):
        self.tmp = tmp
        self.log = os.path.join(tmp, 'requests.jsonl')
        self.kubeconfig = os.path.join(tmp, 'kubeconfig')
        port_file = os.path.join(tmp, 'port')
        self.proc = subprocess.Popen(
            [sys.executable, STANDIN, '--node', NODE, '--port', '0', '--port-file', port_file, '--log', self.log,
             '--kubeconfig', self.kubeconfig] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        deadline = time.time() + 20
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise AssertionError('the stand-in did not start: %s' % self.proc.stdout.read())
            time.sleep(0.05)
        with open(port_file) as handle:
            self.port = int(handle.read())
        self.url = 'http://127.0.0.1:%d' % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def call(self, method, path, body=None, content_type='application/json'):
        data = None if body is None else json.dumps(body).encode('utf-8')
        request = Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header('Content-Type', content_type)
        try:
            response = urlopen(request, timeout=10)
        except HTTPError as exc:
            return exc.code, json.loads(exc.read().decode('utf-8')), exc.headers
        return response.status, json.loads(response.read().decode('utf-8')), response.headers

    def requests(self):
        with open(self.log) as handle:
            return [json.loads(line) for line in handle]
