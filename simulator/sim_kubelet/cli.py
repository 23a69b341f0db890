# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the kubelet on simulated nodes (there is no kubelet to run in a node container).

    python3 simulator/sim_kubelet install [--root /] [--config FILE]
    kubelet --config=FILE [--config-dir=DIR] [--root-dir=/var/lib/kubelet] [other flags: ignored]

``install`` writes /usr/bin/kubelet (simulator/sim_kubelet/__main__.py with ``#!/usr/bin/python3``, which runs
this package from /usr/share/gpuops-sim/lib/sim_kubelet/, written too), the unit and the
kubeadm drop-in of the Kubernetes packages (pkgs.k8s.io: both under /usr/lib/systemd/system), /etc/default/kubelet
(kept when present), /var/lib/kubelet/kubeadm-flags.env and /var/lib/kubelet/config.yaml (``--config``, else a
kubeadm 1.27 file); it enables and starts nothing. Prints ``{"changed": ..., "files": [...], "written": [...]}``.

What it does as the kubelet does (the texts marked REAL are the kubelet's, in klog's line format on stderr), in the
order of server.go run(): loads the config file and the ``*.conf`` drop-ins of ``--config-dir`` (JSON merge patch,
lexical order), logs unknown top-level fields and goes on (the lenient v1beta1 decoding), validates, then does what
NewContainerManager does (reserved CPUs online, the topology, CPU and memory managers' policies and reservations):
any of these refusals exits 1 before /healthz is served. It then serves ``GET /healthz`` -> ``ok`` on
healthzBindAddress:healthzPort, and only after ``GPUOPS_SIM_KUBELET_RUNTIME_DELAY`` seconds (default 2: the
container runtime coming up; APPROXIMATION of that time) does what ContainerManager.Start does: the CPU manager
(cpu_manager_state: its policy, its CPUs), the memory manager (memory_manager_state: its policy, its machine state)
and the Node Allocatable check, writing the states that are missing (the kubelet's JSON, with the kubelet's checksum
algorithm); a refusal there is "Failed to start ContainerManager" and exit 1, after /healthz has answered ``ok``,
as the real kubelet does (kubelet.go initializeRuntimeDependentModules: os.Exit(1)). It exits 0 on SIGTERM.
What it does not: no API server, no pods, no container runtime, no cgroups, no port 10250, no certificates,
no other validation of the configuration than named here. ``GPUOPS_SIM_KUBELET_STRICT=1`` (e.g. in
/etc/default/kubelet) makes an unknown field fatal, which the real kubelet is not (APPROXIMATION of an error).

CPUs and NUMA nodes: the simulated sysfs when there is one (``GPUOPS_SIM_SYSFS``, else
/usr/share/gpuops-sim/sys under ``GPUOPS_SIM_ROOT``), else /sys. Stdlib + PyYAML (python3-yaml); Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import signal
import socket
import sys
import threading
import time

from .checkpoints import machine_state, start_cpu_manager, start_memory_manager
from .config import DEFAULT_RUNTIME_DELAY, load, managers, validate, validate_node_allocatable
from .install import install
from .machine import machine, sysfs_root
from .messages import KubeletError, klog

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover - Python 2 is not a node Python
    BaseHTTPRequestHandler = HTTPServer = object


class Healthz(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        ok = self.path.split('?')[0] in ('/healthz', '/healthz/')
        body = b'ok' if ok else b'404 page not found\n'
        self.send_response(200 if ok else 404)
        self.send_header('Content-Type', 'text/plain; charset=utf-8')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve_healthz(address, port):
    """Serve in a thread; as server.go does, retry every 5 s while the port cannot be bound."""
    def loop():
        while True:
            try:
                server_class = type('Server', (HTTPServer,), {'address_family': socket.AF_INET6 if ':' in address
                                                              else socket.AF_INET, 'allow_reuse_address': True})
                server = server_class((address, port), Healthz)
            except (OSError, socket.error) as exc:
                klog('E', 'server.go:1225', 'Failed to start healthz server', err='listen tcp %s:%d: %s'
                     % (address, port, exc.strerror or exc))
                time.sleep(5)
                continue
            server.serve_forever()
    thread = threading.Thread(target=loop)
    thread.daemon = True
    thread.start()


def parse_flags(argv):
    flags = {'config': None, 'config-dir': None, 'root-dir': '/var/lib/kubelet', 'version': False, 'help': False}
    i = 0
    while i < len(argv):
        if not argv[i].startswith('-'):
            i += 1
            continue
        name, eq, value = argv[i].lstrip('-').partition('=')
        name = name.replace('_', '-')
        if name in ('config', 'config-dir', 'root-dir'):
            if not eq and i + 1 < len(argv):
                i += 1
                value = argv[i]
            flags[name] = value
        elif name in ('version', 'help', 'h'):
            flags['help' if name == 'h' else name] = True
        i += 1
    return flags


def runtime_delay(environ):
    """Seconds between /healthz and ContainerManager.Start: GPUOPS_SIM_KUBELET_RUNTIME_DELAY, default 2.
    APPROXIMATION: the kubelet starts the container manager once the runtime answers (updateRuntimeUp, every 5 s)."""
    try:
        return max(0.0, float(environ.get('GPUOPS_SIM_KUBELET_RUNTIME_DELAY', DEFAULT_RUNTIME_DELAY)))
    except ValueError:
        return float(DEFAULT_RUNTIME_DELAY)


def start_container_manager(doc, mach, root_dir, cpu_policy, mem_policy, by_node):
    """cm/container_manager_linux.go Start: CPU manager, memory manager, then validateNodeAllocatable."""
    if not os.path.isdir(root_dir):
        os.makedirs(root_dir)
    start_cpu_manager(root_dir, cpu_policy, mach['cpus'])
    start_memory_manager(root_dir, mem_policy, machine_state(mach, by_node))
    validate_node_allocatable(doc, mach)


def run(argv, environ=None):
    """server.go run(): the config and NewContainerManager, RunKubelet (k.Run in a goroutine), then /healthz;
    k.Run -> updateRuntimeUp -> initializeRuntimeDependentModules -> ContainerManager.Start, os.Exit(1) on error."""
    environ = os.environ if environ is None else environ
    flags = parse_flags(argv)
    if flags['version']:
        sys.stdout.write('Kubernetes v1.31.0 (gpuops-sim kubelet stand-in)\n')  # APPROXIMATION
        return 0
    if flags['help']:
        sys.stdout.write(__doc__)
        return 0
    try:
        doc = load(flags['config'], flags['config-dir'], environ.get('GPUOPS_SIM_KUBELET_STRICT') == '1')
        validate(doc)
        mach = machine(sysfs_root(environ))
        cpu_policy, mem_policy, by_node = managers(doc, mach)
    except KubeletError as exc:
        klog('E', exc.where, exc.message, err=exc.err)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_args: stop.set())
    signal.signal(signal.SIGINT, lambda *_args: stop.set())
    klog('I', 'server.go:1259', 'Started kubelet')
    if doc['healthzPort']:
        serve_healthz(doc['healthzBindAddress'], doc['healthzPort'])
    if stop.wait(runtime_delay(environ)):
        return 0
    try:
        start_container_manager(doc, mach, flags['root-dir'], cpu_policy, mem_policy, by_node)
    except KubeletError as exc:
        klog('E', exc.where, exc.message, err=exc.err)
        return 1
    klog('I', 'kubelet.go:1629', 'Container manager started (gpuops-sim stand-in: no API server, no pods)')
    while not stop.is_set():
        stop.wait(1)
    return 0


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) > 1 and argv[1] == 'install':
        import argparse
        parser = argparse.ArgumentParser(prog='sim_kubelet install')
        parser.add_argument('--root', default='/')
        parser.add_argument('--config')
        parser.add_argument('--python', default='/usr/bin/python3')
        args = parser.parse_args(argv[2:])
        print(json.dumps(install(args.root, args.config, args.python), sort_keys=True))
        return 0
    return run(argv[1:])
