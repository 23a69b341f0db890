# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet configuration: the config file and its drop-ins decoded as the kubelet decodes them,
defaults, validation, and what NewContainerManager checks (CPU, memory and topology managers, reservations,
Node Allocatable). PyYAML (python3-yaml) is imported only when a file is read.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
from fractions import Fraction

from .machine import read_text
from .messages import (ALLOCATABLE, BAD_HEALTHZ, BAD_RESERVED_CPUS, BAD_TM_POLICY, BAD_TM_SCOPE, CPU_NO_RESERVATION,
                       CPU_UNKNOWN, DECODE_FAILED, DROPIN_FAILED, DROPIN_KIND, DROPIN_NO_KIND, EMPTY, INVALID,
                       KubeletError, LENIENT, LENIENT_FAILED, LOAD_FAILED, MEM_NOT_EQUAL, MEM_NO_NODE,
                       MEM_NO_RESERVATION, MEM_UNKNOWN, MISSING, NOT_REGISTERED, NOT_SUBSET, OVER_CAPACITY, READ_FAILED,
                       RUN_FAILED, STRICT, TM_TOO_MANY_NODES, klog, quote)
from .quantity import add_quantities, format_cpuset, format_quantity, parse_cpuset, parse_quantity

API_VERSION = 'kubelet.config.k8s.io/v1beta1'
KIND = 'KubeletConfiguration'
# json names of KubeletConfiguration v1beta1 (staging/src/k8s.io/kubelet/config/v1beta1/types.go, v1.34), TypeMeta first
FIELDS = frozenset('''apiVersion kind enableServer staticPodPath podLogsDir syncFrequency fileCheckFrequency
httpCheckFrequency staticPodURL staticPodURLHeader address port readOnlyPort tlsCertFile tlsPrivateKeyFile
tlsCipherSuites tlsMinVersion rotateCertificates serverTLSBootstrap authentication authorization registryPullQPS
registryBurst imagePullCredentialsVerificationPolicy preloadedImagesVerificationAllowlist eventRecordQPS eventBurst
enableDebuggingHandlers enableContentionProfiling healthzPort healthzBindAddress oomScoreAdj clusterDomain clusterDNS
streamingConnectionIdleTimeout nodeStatusUpdateFrequency nodeStatusReportFrequency nodeLeaseDurationSeconds
imageMinimumGCAge imageMaximumGCAge imageGCHighThresholdPercent imageGCLowThresholdPercent volumeStatsAggPeriod
kubeletCgroups systemCgroups cgroupRoot cgroupsPerQOS cgroupDriver cpuManagerPolicy singleProcessOOMKill
cpuManagerPolicyOptions cpuManagerReconcilePeriod memoryManagerPolicy topologyManagerPolicy topologyManagerScope
topologyManagerPolicyOptions qosReserved runtimeRequestTimeout hairpinMode maxPods podCIDR podPidsLimit resolvConf
runOnce cpuCFSQuota cpuCFSQuotaPeriod nodeStatusMaxImages maxOpenFiles contentType kubeAPIQPS kubeAPIBurst
serializeImagePulls maxParallelImagePulls evictionHard evictionSoft evictionSoftGracePeriod
evictionPressureTransitionPeriod evictionMaxPodGracePeriod evictionMinimumReclaim mergeDefaultEvictionSettings
podsPerCore enableControllerAttachDetach protectKernelDefaults makeIPTablesUtilChains iptablesMasqueradeBit
iptablesDropBit featureGates failSwapOn memorySwap containerLogMaxSize containerLogMaxFiles containerLogMaxWorkers
containerLogMonitorInterval configMapAndSecretChangeDetectionStrategy systemReserved kubeReserved reservedSystemCPUs
showHiddenMetricsForVersion systemReservedCgroup kubeReservedCgroup enforceNodeAllocatable allowedUnsafeSysctls
volumePluginDir providerID kernelMemcgNotification logging enableSystemLogHandler enableSystemLogQuery
shutdownGracePeriod shutdownGracePeriodCriticalPods shutdownGracePeriodByPodPriority crashLoopBackOff reservedMemory
enableProfilingHandler enableDebugFlagsHandler seccompDefault memoryThrottlingFactor registerWithTaints registerNode
tracing localStorageCapacityIsolation containerRuntimeEndpoint imageServiceEndpoint failCgroupV1
userNamespaces'''.split())
# pkg/kubelet/eviction/defaults_linux.go: DefaultEvictionHard (only memory.available matters here)
DEFAULT_MEMORY_AVAILABLE = '100Mi'
# topologymanager/policy_options.go: defaultMaxAllowableNUMANodes (option max-allowable-numa-nodes)
DEFAULT_MAX_NUMA_NODES = 8
# seconds from /healthz to ContainerManager.Start (GPUOPS_SIM_KUBELET_RUNTIME_DELAY); see runtime_delay()
DEFAULT_RUNTIME_DELAY = 2


def _yaml_load(text):
    import yaml  # python3-yaml on the node; imported here so that `install` runs without it
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        problem = getattr(exc, 'problem', None) or str(exc)
        # APPROXIMATION: sigs.k8s.io/yaml's wording of the parser error
        raise ValueError('error converting YAML to JSON: yaml: %s%s'
                         % ('line %d: ' % (mark.line + 1) if mark else '', problem))


def decode(path, text, strict):
    """The document of a config file, as DecodeKubeletConfiguration reads it. Raises ValueError(text)."""
    if not text:
        raise ValueError(EMPTY % quote(path))
    try:
        doc = _yaml_load(text)
    except ValueError as exc:
        raise ValueError(DECODE_FAILED % exc)
    if not isinstance(doc, dict):  # APPROXIMATION: apimachinery's text for a document that is not an object
        raise ValueError(DECODE_FAILED % 'couldn\'t get version/kind; json parse error: json: cannot unmarshal %s '
                         'into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind '
                         'string "json:\\"kind,omitempty\\"" }' % ('array' if isinstance(doc, list) else 'string'))
    for key in ('kind', 'apiVersion'):
        if not doc.get(key):
            # REAL for a missing kind; APPROXIMATION for a missing apiVersion (the same form assumed)
            raise ValueError(DECODE_FAILED % (MISSING % (key if key == 'apiVersion' else 'Kind', json.dumps(
                doc, separators=(',', ':'), sort_keys=True, default=str))))
    if doc['kind'] != KIND or doc['apiVersion'] != API_VERSION:
        raise ValueError(DECODE_FAILED % (NOT_REGISTERED % (quote(str(doc['kind'])), quote(str(doc['apiVersion'])))))
    unknown = [key for key in doc if key not in FIELDS]
    if unknown:
        err = STRICT % ', '.join('unknown field %s' % quote(key) for key in unknown)
        if strict:
            raise ValueError(LENIENT_FAILED % err)
        klog('I', 'codec.go:94', LENIENT, err=err)
        doc = dict((k, v) for k, v in doc.items() if k in FIELDS)
    return doc


def merge_patch(base, patch):
    """RFC 7386 JSON merge patch (gopkg.in/evanphx/json-patch MergePatch): maps merge, null deletes, rest replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def load(config, config_dir=None, strict=False):
    """The effective configuration (config file, then the drop-ins of config_dir). Raises KubeletError."""
    doc = {}
    if config:
        path = os.path.abspath(config)
        text = read_text(path)
        try:
            if text is None:
                reason = 'no such file or directory' if not os.path.exists(path) else 'permission denied'
                raise ValueError(READ_FAILED % (quote(path), path, reason))
            doc = decode(path, text, strict)
        except ValueError as exc:
            raise KubeletError(LOAD_FAILED % (config, config, exc))
    if config_dir:
        for dirpath, dirnames, filenames in os.walk(config_dir):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith('.conf'):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    drop = _yaml_load(read_text(path, '')) or {}
                except ValueError as exc:  # APPROXIMATION: the drop-in's own decoding error
                    raise KubeletError(DROPIN_FAILED % (quote(config_dir), exc))
                if not isinstance(drop, dict) or not drop.get('kind') or not drop.get('apiVersion'):
                    raise KubeletError(DROPIN_FAILED % (quote(config_dir), DROPIN_NO_KIND % path))
                if drop['kind'] != KIND or drop['apiVersion'] != API_VERSION:
                    raise KubeletError(DROPIN_FAILED % (quote(config_dir),
                                                        DROPIN_KIND % (path, drop['apiVersion'], drop['kind'])))
                doc = merge_patch(doc, drop)
    return defaults(doc)


def defaults(doc):
    """pkg/kubelet/apis/config/v1beta1/defaults.go for the fields used here."""
    out = dict(doc)
    for key, value in (('cpuManagerPolicy', 'none'), ('memoryManagerPolicy', 'None'),
                       ('topologyManagerPolicy', 'none'), ('topologyManagerScope', 'container'),
                       ('healthzBindAddress', '127.0.0.1')):
        if not out.get(key):
            out[key] = value
    if out.get('healthzPort') is None:
        out['healthzPort'] = 10248
    return out


def validate(doc):
    """ValidateKubeletConfiguration (the checks simulated here)."""
    errors = []
    if doc['topologyManagerPolicy'] not in ('none', 'best-effort', 'restricted', 'single-numa-node'):
        errors.append(BAD_TM_POLICY % quote(str(doc['topologyManagerPolicy'])))
    if doc['topologyManagerScope'] not in ('container', 'pod'):
        errors.append(BAD_TM_SCOPE % quote(str(doc['topologyManagerScope'])))
    port = doc['healthzPort']
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        errors.append(BAD_HEALTHZ % port)
    if doc.get('reservedSystemCPUs'):
        try:
            parse_cpuset(doc['reservedSystemCPUs'])
        except ValueError as exc:
            errors.append(BAD_RESERVED_CPUS % (doc['reservedSystemCPUs'], exc))
    if errors:
        raise KubeletError(INVALID % (errors[0] if len(errors) == 1 else '[%s]' % ', '.join(errors)))


def _reserved(doc, name, key):
    return (doc.get(name) or {}).get(key)


def managers(doc, mach):
    """server.go run() up to NewContainerManager (before /healthz): getReservedCPUs, then the topology, CPU and
    memory managers' NewManager. Returns (cpu policy, memory policy, reserved memory by node)."""
    cpus = mach['cpus']
    reserved_cpus = parse_cpuset(doc.get('reservedSystemCPUs') or '')
    system_cpu = _reserved(doc, 'systemReserved', 'cpu')
    kube_cpu = _reserved(doc, 'kubeReserved', 'cpu')
    if reserved_cpus:
        if not reserved_cpus <= cpus:
            raise KubeletError(RUN_FAILED % (NOT_SUBSET % (doc['reservedSystemCPUs'], format_cpuset(cpus))))
        system_cpu, kube_cpu = str(len(reserved_cpus)), None  # server.go: --reserved-cpus overwrites the cpu settings
    topology_manager(doc, mach)
    policy = doc['cpuManagerPolicy']
    if policy not in ('none', 'static'):
        raise KubeletError(RUN_FAILED % (CPU_UNKNOWN % policy))
    try:
        cpu_total = add_quantities([system_cpu, kube_cpu])[0]
        add_quantities([_reserved(doc, 'systemReserved', 'memory'), _reserved(doc, 'kubeReserved', 'memory')])
        if policy == 'static' and cpu_total == 0:
            raise KubeletError(RUN_FAILED % CPU_NO_RESERVATION)
        mem_policy = doc['memoryManagerPolicy']
        if mem_policy not in ('None', 'Static'):
            raise KubeletError(RUN_FAILED % (MEM_UNKNOWN % quote(str(mem_policy))))
        by_node = static_memory(doc, mach) if mem_policy == 'Static' else {}
    except ValueError as exc:  # server.go parseResourceList (APPROXIMATION: which of the two names the kubelet gives)
        raise KubeletError(RUN_FAILED % ('--system-reserved value failed to parse: %s' % exc))
    return policy, mem_policy, by_node


def topology_manager(doc, mach):
    """topologymanager NewManager (its policy and scope names are checked by the validation before)."""
    policy = doc['topologyManagerPolicy']
    klog('I', 'topology_manager.go:138', 'Creating topology manager with policy per scope',
         topologyPolicyName=policy, topologyScopeName=doc['topologyManagerScope'])
    options = doc.get('topologyManagerPolicyOptions') or {}
    try:
        most = int(options.get('max-allowable-numa-nodes', DEFAULT_MAX_NUMA_NODES))
    except ValueError:  # APPROXIMATION: the option parser's own text is not simulated
        most = DEFAULT_MAX_NUMA_NODES
    if policy != 'none' and len(mach['nodes']) > most:
        raise KubeletError(RUN_FAILED % (TM_TOO_MANY_NODES % most))


def eviction_memory(doc, capacity):
    """The hard eviction threshold of memory.available (a quantity text) or None: evictionHard's, or the default
    one when evictionHard is unset (or mergeDefaultEvictionSettings fills it in); a percentage is of capacity."""
    hard = doc.get('evictionHard')
    if hard is None:
        available = DEFAULT_MEMORY_AVAILABLE
    else:
        available = hard.get('memory.available')
        if available is None and doc.get('mergeDefaultEvictionSettings'):
            available = DEFAULT_MEMORY_AVAILABLE
    if available is not None and str(available).endswith('%'):
        available = str(int(capacity * float(str(available)[:-1]) / 100))
    return available


def static_memory(doc, mach):
    """memorymanager NewManager with the Static policy: validateReservedMemory, then the reserved-memory check."""
    available = eviction_memory(doc, sum(node['memory'] for node in mach['nodes'].values()))
    allocatable = add_quantities([_reserved(doc, 'systemReserved', 'memory'), _reserved(doc, 'kubeReserved', 'memory'),
                                  available])
    totals, by_node = {}, {}
    for entry in doc.get('reservedMemory') or []:
        node = int(entry.get('numaNode', 0))
        if node not in mach['nodes']:
            raise KubeletError(RUN_FAILED % (MEM_NO_NODE % node))
        for resource, text in sorted((entry.get('limits') or {}).items()):
            value, fmt = parse_quantity(text)
            old = totals.get(resource, (0, fmt))
            totals[resource] = (old[0] + value, fmt if value else old[1])
            by_node.setdefault(node, {})[resource] = by_node.get(node, {}).get(resource, 0) + value
    wanted = {'memory': allocatable}
    for resource in sorted(set(totals) | set(wanted)):
        have = totals.get(resource, (0, 'DecimalSI'))
        need = wanted.get(resource, (0, 'DecimalSI'))
        if have[0] != need[0]:
            raise KubeletError(RUN_FAILED % (MEM_NOT_EQUAL % (quote(format_quantity(*have)), quote(resource),
                                                              quote(format_quantity(*need)))))
    if sum(values.get('memory', 0) for values in by_node.values()) <= 0:
        raise KubeletError(RUN_FAILED % MEM_NO_RESERVATION)
    return by_node


def _millicores(text):
    """A CPU quantity in millicores, rounded up as Quantity.MilliValue does."""
    text = str(text).strip()
    match = re.match(r'^([0-9]+(?:\.[0-9]*)?)(m?)$', text)
    if not match:
        return parse_quantity(text)[0] * 1000
    value = Fraction(match.group(1)) * (1 if match.group(2) else 1000)
    return -(-value.numerator // value.denominator)


def _format_millicores(value):
    return str(value // 1000) if value % 1000 == 0 else '%dm' % value


def validate_node_allocatable(doc, mach):
    """cm/node_container_manager_linux.go validateNodeAllocatable (ContainerManager.Start, after the CPU and memory
    managers started): kubeReserved + systemReserved (+ the hard eviction threshold for memory) <= capacity.
    The reservation as GetNodeAllocatableReservation sums it (reservedSystemCPUs replaces the cpu reservations)."""
    reserved_cpus = parse_cpuset(doc.get('reservedSystemCPUs') or '')
    if reserved_cpus:
        cpu_terms = [str(len(reserved_cpus))]
    else:
        cpu_terms = [t for t in (_reserved(doc, 'systemReserved', 'cpu'), _reserved(doc, 'kubeReserved', 'cpu'))
                     if t is not None]
    capacity = sum(node['memory'] for node in mach['nodes'].values())
    errors = []
    if cpu_terms:
        millis = sum(_millicores(t) for t in cpu_terms)
        if millis > len(mach['cpus']) * 1000:
            errors.append(OVER_CAPACITY % (quote('cpu'), _format_millicores(millis), len(mach['cpus'])))
    mem_terms = [t for t in (_reserved(doc, 'systemReserved', 'memory'), _reserved(doc, 'kubeReserved', 'memory'),
                             eviction_memory(doc, capacity)) if t is not None]
    if mem_terms:
        total, fmt = add_quantities(mem_terms)
        if total > capacity:
            errors.append(OVER_CAPACITY % (quote('memory'), format_quantity(total, fmt),
                                           format_quantity(capacity, 'BinarySI')))
    if errors:
        raise KubeletError(ALLOCATABLE % ' '.join(errors), 'kubelet.go:1567', 'Failed to start ContainerManager')
