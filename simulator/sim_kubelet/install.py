# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sim_kubelet install``: the Kubernetes packages' files for the stand-in (/usr/bin/kubelet, the unit,
the kubeadm drop-in, /etc/default/kubelet, kubeadm's flags and config files) and this package under the simulator's
lib directory.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import compileall
import os
import subprocess

from .machine import read_bytes

# kubernetes/release f618b2a308bc76e90e987e45ab17c85778dd5993, cmd/krel/templates/latest/kubelet/kubelet.service (REAL)
UNIT_TEXT = '''[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
'''
# the same commit, cmd/krel/templates/latest/kubeadm/10-kubeadm.conf (REAL), with the Debian packages' edit of
# cmd/krel/templates/latest/kubeadm/kubeadm.spec (debbuild: sed 's;/etc/sysconfig/kubelet;/etc/default/kubelet;g')
DROPIN_TEXT = '''# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
'''
# the same commit, cmd/krel/templates/latest/kubelet/kubelet.env, installed as /etc/default/kubelet on Debian (REAL)
DEFAULT_TEXT = 'KUBELET_EXTRA_ARGS=\n'
# kubeadm's file on a 1.31-era node with containerd, quoted in public setup notes (REAL form)
FLAGS_TEXT = ('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
              '--pod-infra-container-image=registry.k8s.io/pause:3.10"\n')
# tests/fixtures/real/kubelet/kubeadm-1.27-playwithk8s-node2.yaml (REAL, written by kubeadm 1.27 join)
CONFIG_TEXT = '''apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
'''
FILES = (('usr/bin/kubelet', None, 0o755), ('usr/lib/systemd/system/kubelet.service', UNIT_TEXT, 0o644),
         ('usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf', DROPIN_TEXT, 0o644),
         ('etc/default/kubelet', DEFAULT_TEXT, 0o644), ('var/lib/kubelet/kubeadm-flags.env', FLAGS_TEXT, 0o644),
         ('var/lib/kubelet/config.yaml', CONFIG_TEXT, 0o644))
KEEP = ('etc/default/kubelet',)  # a conffile (%config(noreplace) in kubelet.spec): never overwritten


HERE = os.path.dirname(os.path.abspath(__file__))
LIB = 'usr/share/gpuops-sim/lib'  # the simulator's lib directory: /usr/bin/kubelet runs this package from there


def _script(python='/usr/bin/python3'):
    """/usr/bin/kubelet: this package's __main__.py with a shebang (it finds the package under LIB)."""
    body = read_bytes(os.path.join(HERE, '__main__.py'))
    if body.startswith(b'#!'):
        body = body.split(b'\n', 1)[1]
    return ('#!%s\n' % python).encode('utf-8') + body


def package_files():
    """(rel, bytes, mode) of this package's modules under LIB (as the stand-in imports it: ``sim_kubelet``)."""
    return [(os.path.join(LIB, 'sim_kubelet', name), read_bytes(os.path.join(HERE, name)), 0o644)
            for name in sorted(os.listdir(HERE)) if name.endswith('.py')]


def install(root='/', config=None, python='/usr/bin/python3'):
    changed_paths, files = [], []
    for rel, text, mode in list(FILES) + package_files():
        path = os.path.join(root, rel)
        files.append('/' + rel)
        if isinstance(text, bytes):
            data = text
        elif rel == 'usr/bin/kubelet':
            data = _script(python)
        elif rel == 'var/lib/kubelet/config.yaml':
            if config is None and os.path.exists(path):
                continue  # the node's own (kubeadm's) file stays
            data = read_bytes(config) if config else text.encode('utf-8')
        else:
            data = text.encode('utf-8')
        old = read_bytes(path) if os.path.exists(path) else None
        if old is not None and (rel in KEEP or old == data):
            continue
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        with open(path + '.tmp', 'wb') as handle:
            handle.write(data)
        os.chmod(path + '.tmp', mode)
        os.rename(path + '.tmp', path)
        changed_paths.append('/' + rel)
    if any(rel.startswith('/' + LIB + '/') for rel in changed_paths):
        # compiled now: the kubelet run later writes nothing under the simulator's files
        compileall.compile_dir(os.path.join(root, LIB, 'sim_kubelet'), quiet=1)
    manifests = os.path.join(root, 'etc/kubernetes/manifests')
    if not os.path.isdir(manifests):
        os.makedirs(manifests)
    if changed_paths and os.path.abspath(root) == '/' and os.path.isdir('/run/systemd/system'):
        subprocess.call(['systemctl', 'daemon-reload'])
    return {'changed': bool(changed_paths), 'files': files, 'written': changed_paths}
