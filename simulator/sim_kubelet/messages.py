# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet stand-in's texts: the kubelet's own messages (REAL, in klog's line format on stderr),
KubeletError (the kubelet exits 1) and klog.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import sys
import time

# --- REAL texts; the file:line of a klog header varies between releases (APPROXIMATION of the line numbers) ---
# cmd/kubelet/app/server.go (loadConfigFile, NewKubeletCommand), pkg/kubelet/kubeletconfig/configfiles/configfiles.go
LOAD_FAILED = 'failed to load kubelet config file, path: %s, error: failed to load Kubelet config file %s, error %s'
READ_FAILED = 'failed to read kubelet config file %s, error: open %s: %s'
EMPTY = 'kubelet config file %s was empty'
# pkg/kubelet/kubeletconfig/util/codec/codec.go and apimachinery's runtime errors
DECODE_FAILED = 'failed to decode: %s'
NOT_REGISTERED = 'no kind %s is registered for version %s in scheme "pkg/kubelet/apis/config/scheme/scheme.go:33"'
MISSING = "Object '%s' is missing in '%s'"
LENIENT = 'Using lenient decoding as strict decoding failed'
STRICT = 'strict decoding error: %s'
LENIENT_FAILED = 'failed lenient decoding: %s'
# server.go mergeKubeletConfigurations
DROPIN_FAILED = 'failed to merge kubelet configs: failed to walk through kubelet dropin directory %s: %s'
DROPIN_NO_KIND = 'failed to load kubelet dropin file, path: %s, no apiVersion/kind'
DROPIN_KIND = 'failed to load kubelet dropin file, path: %s, unknown apiVersion/kind: %s, Kind=%s'
# server.go + pkg/kubelet/apis/config/validation/validation.go (errors aggregated: "[a, b]" when more than one)
INVALID = 'failed to validate kubelet configuration, error: %s, path: &TypeMeta{Kind:,APIVersion:,}'
BAD_TM_POLICY = ('invalid configuration: topologyManagerPolicy (--topology-manager-policy) %s must be one of: '
                 '["none" "best-effort" "restricted" "single-numa-node"]')
BAD_TM_SCOPE = ('invalid configuration: topologyManagerScope (--topology-manager-scope) %s must be one of: '
                '"container", or "pod"')
BAD_HEALTHZ = 'invalid configuration: healthzPort (--healthz-port) %s must be between 1 and 65535, inclusive'
BAD_RESERVED_CPUS = 'invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) %s, error: %s'
# server.go Run / run / getReservedCPUs; cpumanager/cpu_manager.go and memorymanager/memory_manager.go NewManager
RUN_FAILED = 'failed to run Kubelet: %s'
NOT_SUBSET = 'reserved-cpus: %s is not a subset of online-cpus: %s'
CPU_UNKNOWN = 'unknown policy: "%s"'
CPU_NO_RESERVATION = '[cpumanager] unable to determine reserved CPU resources for static policy'
MEM_UNKNOWN = 'unknown policy: %s'
MEM_NO_NODE = 'the reserved memory configuration references a NUMA node %d that does not exist on this machine'
MEM_NOT_EQUAL = 'the total amount %s of type %s is not equal to the value %s determined by Node Allocatable feature'
MEM_NO_RESERVATION = '[memorymanager] you should specify the system reserved memory'
# topologymanager/topology_manager.go NewManager
TM_TOO_MANY_NODES = 'unsupported on machines with more than %d NUMA Nodes'
# cpumanager/state/state_checkpoint.go, memorymanager/state/state_checkpoint.go, policy_static.go validateState,
# cm/container_manager_linux.go Start, kubelet.go initializeRuntimeDependentModules ("Failed to start ContainerManager")
RESTORE = ('could not restore state from checkpoint: %s, please drain this node and delete the %s checkpoint file '
           '%s before restarting Kubelet')
CPU_DIFFERS = 'configured policy %s differs from state checkpoint policy %s'
MEM_DIFFERS = '[memorymanager] configured policy %s differs from state checkpoint policy %s'
CPUS_CHANGED = "current set of available CPUs %s doesn't match with CPUs in state %s"
START_CPU = 'start cpu manager error: %s'
START_MEM = 'start memory manager error: %s'
MEM_CHANGED = '[memorymanager] the expected machine state is different from the real one'
CHECKPOINT = 'Could not initialize checkpoint manager, please drain node and remove policy state file'
# cm/node_container_manager_linux.go validateNodeAllocatable (called by ContainerManager.Start)
ALLOCATABLE = 'invalid Node Allocatable configuration. %s'
OVER_CAPACITY = 'Resource %s has a reservation of %s but capacity of %s. Expected capacity >= reservation.'


class KubeletError(Exception):
    """The kubelet exits 1: ``where`` is the klog file:line, ``message`` the klog message, ``err`` its error."""

    def __init__(self, err, where='run.go:72', message='command failed'):
        Exception.__init__(self, err)
        self.err, self.where, self.message = err, where, message


def quote(text):
    """Go's %q for the texts here (json's escaping: the same for printable ASCII)."""
    return json.dumps(text, ensure_ascii=False)


def klog(level, where, message, **values):
    """One klog line (``E1201 03:20:00.123456    1234 run.go:72] "msg" key="value"``) on stderr."""
    now = time.time()
    stamp = time.strftime('%m%d %H:%M:%S', time.localtime(now)) + '.%06d' % int((now % 1) * 1e6)
    line = '%s%s %7d %s] %s' % (level, stamp, os.getpid(), where, quote(message))
    for key in sorted(values):
        line += ' %s=%s' % (key, quote(str(values[key])))
    sys.stderr.write(line + '\n')
    sys.stderr.flush()
