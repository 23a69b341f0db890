# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the kubelet on simulated nodes (there is no kubelet to run in a node container).

    python3 sim_kubelet.py install [--root /] [--config FILE]
    kubelet --config=FILE [--config-dir=DIR] [--root-dir=/var/lib/kubelet] [other flags: ignored]

``install`` writes /usr/bin/kubelet (this file, self-contained, ``#!/usr/bin/python3``), the unit and the
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

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from fractions import Fraction

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover - Python 2 is not a node Python
    BaseHTTPRequestHandler = HTTPServer = object

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


# --- quantities (k8s.io/apimachinery/pkg/api/resource/quantity.go) and CPU sets (k8s.io/utils/cpuset) ---
_SUFFIX = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60,
           'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15, 'E': 10 ** 18, '': 1}


def parse_quantity(text):
    """(value rounded up to an integer, 'BinarySI' or 'DecimalSI'); ValueError when not a quantity."""
    match = re.match(r'^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$', str(text).strip())
    if not match:
        raise ValueError('quantities must match the regular expression '
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, exp, suffix = match.group(1), match.group(2), match.group(3) or ''
    whole, _dot, frac = number.lstrip('+').partition('.')
    sign = -1 if whole.startswith('-') else 1
    digits = int((whole.lstrip('-') or '0') + frac)
    num, den = digits, 10 ** len(frac)
    if exp:
        power = int(exp[1:])
        num, den = (num * 10 ** power, den) if power >= 0 else (num, den * 10 ** -power)
    elif suffix == 'm':
        den *= 1000
    else:
        num *= _SUFFIX[suffix]
    return sign * -(-num // den), ('BinarySI' if suffix.endswith('i') else 'DecimalSI')


def format_quantity(value, fmt='DecimalSI'):
    """Quantity.String() of an integer: the canonical form of its format (BinarySI below 1024 prints decimal)."""
    if value == 0:
        return '0'
    sign, value = ('-' if value < 0 else ''), abs(value)
    if fmt == 'BinarySI' and value >= 1024:
        for suffix in ('Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'):
            if value % _SUFFIX[suffix] == 0:
                return '%s%d%s' % (sign, value // _SUFFIX[suffix], suffix)
        return sign + str(value)
    for suffix in ('E', 'P', 'T', 'G', 'M', 'k'):
        if value % _SUFFIX[suffix] == 0:
            return '%s%d%s' % (sign, value // _SUFFIX[suffix], suffix)
    return sign + str(value)


def add_quantities(texts):
    """Sum of quantities as Quantity.Add does: the result keeps the format of the first non-zero term."""
    total, fmt = 0, 'DecimalSI'
    for text in texts:
        if text is None:
            continue
        value, this = parse_quantity(text)
        if total == 0:
            fmt = this
        total += value
    return total, fmt


def parse_cpuset(text):
    cpus = set()
    for part in str(text).split(','):
        part = part.strip()
        if not part:
            continue
        low, _dash, high = part.partition('-')
        if not low.isdigit() or (high and not high.isdigit()) or (high and int(high) < int(low)):
            raise ValueError('invalid range: %s' % part if _dash else 'strconv.Atoi: parsing %s: invalid syntax'
                             % quote(part))
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def format_cpuset(cpus):
    out, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else '%d-%d' % (cpus[i], cpus[j]))
        i = j + 1
    return ','.join(out)


# --- the machine ---
def sysfs_root(environ=None):
    environ = os.environ if environ is None else environ
    if environ.get('GPUOPS_SIM_SYSFS'):
        return environ['GPUOPS_SIM_SYSFS']
    sim = os.path.join(environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/sys')
    return sim if os.path.isdir(sim) else '/sys'


def _read_bytes(path):
    with open(path, 'rb') as handle:
        return handle.read()


def _read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return default


def machine(sysfs):
    """{'cpus': set, 'nodes': {id: {'memory': bytes, 'hugepages': {size_bytes: count}}}} of the (simulated) node."""
    node_dirs = sorted(glob.glob(os.path.join(sysfs, 'devices/system/node/node[0-9]*')))
    online = _read(os.path.join(sysfs, 'devices/system/cpu/online'))
    cpus = parse_cpuset(online) if online else set()
    if not cpus:
        for node in node_dirs:
            cpus |= parse_cpuset(_read(os.path.join(node, 'cpulist'), ''))
    if not cpus:
        cpus = parse_cpuset(_read('/sys/devices/system/cpu/online', '') or '0-%d' % ((os.cpu_count() or 1) - 1))
    total = re.search(r'^MemTotal:\s+(\d+) kB', _read('/proc/meminfo', ''), re.M)
    total = int(total.group(1)) * 1024 if total else 0
    nodes = {}
    for node in node_dirs or ['node0']:
        meminfo = re.search(r'MemTotal:\s+(\d+) kB', _read(os.path.join(node, 'meminfo'), '') if node_dirs else '')
        pages = {}
        for size_dir in glob.glob(os.path.join(node, 'hugepages/hugepages-*kB')):
            size = int(re.search(r'(\d+)kB$', size_dir).group(1)) * 1024
            pages[size] = int((_read(os.path.join(size_dir, 'nr_hugepages'), '0') or '0').strip() or 0)
        # APPROXIMATION: a node without its own meminfo (the simulated sysfs) gets an even share of MemTotal
        memory = int(meminfo.group(1)) * 1024 if meminfo else total // max(1, len(node_dirs))
        nodes[int(os.path.basename(node)[4:])] = {'memory': memory, 'hugepages': pages}
    return {'cpus': cpus, 'nodes': nodes}


# --- configuration ---
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
        text = _read(path)
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
                    drop = _yaml_load(_read(path, '')) or {}
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


# --- checkpoints (pkg/kubelet/checkpointmanager) ---
def fnv32a(text):
    value = 0x811c9dc5
    for byte in text.encode('utf-8'):
        value = ((value ^ byte) * 0x01000193) & 0xffffffff
    return value


def _spew_map(mapping, render):
    return 'map[' + ' '.join('%s:%s' % (key, render(mapping[key])) for key in sorted(mapping)) + ']'


def cpu_checksum(policy, default_cpus, entries=None):
    """checksum.New(cp): FNV-1a 32 of dump.ForHash(cp), spew's %#v of the struct (the kubelet's algorithm; the
    none-policy file {"policyName":"none","defaultCpuSet":"","checksum":1353318690} of many nodes gives the same)."""
    entries = _spew_map(entries or {}, lambda inner: _spew_map(inner, str))
    return fnv32a('(*state.CPUManagerCheckpoint){PolicyName:(string)%s DefaultCPUSet:(string)%s '
                  'Entries:(map[string]map[string]string)%s Checksum:(checksum.Checksum)0}'
                  % (policy, default_cpus, entries))


def memory_checksum(policy, machine_state):
    """The same for MemoryManagerCheckpoint (verified on the None state: 4236770233; the Static form follows the
    same spew rules, NUMANodeState and MemoryTable field names from memorymanager/state/state.go)."""
    def table(t):
        return ('<*>{TotalMemSize:(uint64)%(total)d SystemReserved:(uint64)%(systemReserved)d '
                'Allocatable:(uint64)%(allocatable)d Reserved:(uint64)%(reserved)d Free:(uint64)%(free)d}' % t)

    def node(n):
        return ('<*>{NumberOfAssignments:(int)%d MemoryMap:(map[v1.ResourceName]*state.MemoryTable)%s '
                'Cells:([]int)[%s]}' % (n['numberOfAssignments'], _spew_map(n['memoryMap'], table),
                                        ' '.join(str(c) for c in n['cells'])))
    state = 'map[' + ' '.join('%d:%s' % (k, node(machine_state[str(k)]))
                              for k in sorted(int(k) for k in machine_state)) + ']'
    return fnv32a('(*state.MemoryManagerCheckpoint){PolicyName:(string)%s MachineState:(state.NUMANodeMap)%s '
                  'Entries:(state.ContainerMemoryAssignments)map[] Checksum:(checksum.Checksum)0}' % (policy, state))


def machine_state(mach, by_node):
    """memorymanager policy_static.go initializeMachineState: per NUMA node, memory and each hugepage size."""
    out = {}
    for nid, node in mach['nodes'].items():
        reserved = by_node.get(nid, {})
        tables, huge_total = {}, 0
        for size, count in node['hugepages'].items():
            name = 'hugepages-' + format_quantity(size, 'BinarySI')
            total = size * count
            huge_total += total
            free = total - reserved.get(name, 0)
            tables[name] = {'total': total, 'systemReserved': reserved.get(name, 0), 'allocatable': free,
                            'reserved': 0, 'free': free}
        free = node['memory'] - reserved.get('memory', 0) - huge_total
        tables['memory'] = {'total': node['memory'], 'systemReserved': reserved.get('memory', 0),
                            'allocatable': free, 'reserved': 0, 'free': free}
        out[str(nid)] = {'numberOfAssignments': 0, 'memoryMap': dict(sorted(tables.items())), 'cells': [nid]}
    return dict(sorted(out.items()))  # encoding/json writes map keys sorted as strings ("10" before "2")


def _write_state(path, data):
    """CreateCheckpoint: compact JSON (Go's encoding/json: map keys sorted as strings), mode 0600, atomically."""
    tmp = path + '.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as handle:
        handle.write(data)
    os.rename(tmp, path)


def _json(value):
    return json.dumps(value, separators=(',', ':'), sort_keys=False)


def start_cpu_manager(root_dir, policy, cpus):
    path = os.path.join(root_dir, 'cpu_manager_state')
    klog('I', 'cpu_manager.go:221', 'Starting CPU manager', policy=policy)
    text = _read(path)
    default = format_cpuset(cpus) if policy == 'static' else ''
    if text is not None:
        try:
            saved = json.loads(text)
            err = None
            if saved.get('policyName') != policy:
                err = CPU_DIFFERS % (quote(policy), quote(str(saved.get('policyName'))))
        except ValueError:
            saved, err = {}, 'checkpoint is corrupted'  # APPROXIMATION: the checkpoint manager's text
        if err:
            err = RESTORE % (err, 'CPU manager', quote(path))
            klog('E', 'cpu_manager.go:223', CHECKPOINT, err=err)
            raise KubeletError(START_CPU % err, 'kubelet.go:1567', 'Failed to start ContainerManager')
        known = parse_cpuset(saved.get('defaultCpuSet') or '')
        for containers in (saved.get('entries') or {}).values():
            for cset in containers.values():
                known |= parse_cpuset(cset)
        if policy == 'static' and known and known != cpus:
            err = CPUS_CHANGED % (quote(format_cpuset(cpus)), quote(format_cpuset(known)))
            klog('E', 'cpu_manager.go:230', 'Policy start error', err=err)
            raise KubeletError(START_CPU % err, 'kubelet.go:1567', 'Failed to start ContainerManager')
        if known or policy != 'static':
            return
    data = {'policyName': policy, 'defaultCpuSet': default, 'checksum': cpu_checksum(policy, default)}
    _write_state(path, _json(data))


def start_memory_manager(root_dir, policy, state):
    path = os.path.join(root_dir, 'memory_manager_state')
    klog('I', 'memory_manager.go:174', 'Starting memorymanager', policy=policy)
    text = _read(path)
    if text is not None:
        try:
            saved = json.loads(text)
        except ValueError:
            saved = {}
        if saved.get('policyName') != policy:
            err = RESTORE % (MEM_DIFFERS % (quote(policy), quote(str(saved.get('policyName')))), 'memory manager',
                             quote(path))
            klog('E', 'memory_manager.go:182', CHECKPOINT, err=err)
            raise KubeletError(START_MEM % err, 'kubelet.go:1567', 'Failed to start ContainerManager')
        # policy_static.go validateState: reservations or memory changed since the state was written
        if policy == 'Static' and saved.get('machineState') and saved['machineState'] != state:
            klog('E', 'memory_manager.go:189', 'Policy start error', err=MEM_CHANGED)
            raise KubeletError(START_MEM % MEM_CHANGED, 'kubelet.go:1567', 'Failed to start ContainerManager')
        if saved.get('machineState') or policy != 'Static':
            return
    state = state if policy == 'Static' else {}
    _write_state(path, _json({'policyName': policy, 'machineState': state,
                              'checksum': memory_checksum(policy, state)}))


# --- running ---
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


# --- install ---
def _script(python='/usr/bin/python3'):
    with open(os.path.realpath(__file__), 'rb') as handle:
        body = handle.read()
    if body.startswith(b'#!'):
        body = body.split(b'\n', 1)[1]
    return ('#!%s\n' % python).encode('utf-8') + body


def install(root='/', config=None, python='/usr/bin/python3'):
    changed_paths, files = [], []
    for rel, text, mode in FILES:
        path = os.path.join(root, rel)
        files.append('/' + rel)
        if rel == 'usr/bin/kubelet':
            data = _script(python)
        elif rel == 'var/lib/kubelet/config.yaml':
            if config is None and os.path.exists(path):
                continue  # the node's own (kubeadm's) file stays
            data = _read_bytes(config) if config else text.encode('utf-8')
        else:
            data = text.encode('utf-8')
        old = _read_bytes(path) if os.path.exists(path) else None
        if old is not None and (rel in KEEP or old == data):
            continue
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        with open(path + '.tmp', 'wb') as handle:
            handle.write(data)
        os.chmod(path + '.tmp', mode)
        os.rename(path + '.tmp', path)
        changed_paths.append('/' + rel)
    manifests = os.path.join(root, 'etc/kubernetes/manifests')
    if not os.path.isdir(manifests):
        os.makedirs(manifests)
    if changed_paths and os.path.abspath(root) == '/' and os.path.isdir('/run/systemd/system'):
        subprocess.call(['systemctl', 'daemon-reload'])
    return {'changed': bool(changed_paths), 'files': files, 'written': changed_paths}


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) > 1 and argv[1] == 'install':
        import argparse
        parser = argparse.ArgumentParser(prog='sim_kubelet.py install')
        parser.add_argument('--root', default='/')
        parser.add_argument('--config')
        parser.add_argument('--python', default='/usr/bin/python3')
        args = parser.parse_args(argv[2:])
        print(json.dumps(install(args.root, args.config, args.python), sort_keys=True))
        return 0
    return run(argv[1:])


if __name__ == '__main__':
    sys.exit(main())
