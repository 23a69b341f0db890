# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compares a ``gpu_topology`` snapshot with a node-class profile.

``CHECKS`` is the one table of checks: the module documentation, the profile
table of docs/topology.md and the rollout's role ownership are generated from it or tested
against it. A check passes only what it read: an input it could not read, or a
GPU one output lists and another does not, is a failure whose ``actual`` is
``not checked``, never a silent pass.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import re

from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import ConfigError, validate_entries
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import (
    PCIE_RELATION_RANK, closest_nics, is_gpu)
from ansible_collections.gpuops.node.plugins.module_utils.node.rdma_sysfs import RETRANS_COUNTERS, retrans_ratio
from ansible_collections.gpuops.node.plugins.module_utils.topology.check_functions import (
    check_compute_mode, check_dcgm_health, check_driver_loaded, check_ecc_uncorrected, check_gpu_error,
    check_gpu_model, check_mig_devices, check_mode, check_next_boot_driver, check_nvlink_active_links,
    check_nvsmi_exit, check_nvsmi_timeout, check_output_unreadable, check_outputs_disagree, check_pcie_gen,
    check_pcie_width, check_remapped_rows, check_retired_pages, failure, not_checked, per_gpu)

INT = 'int'
BOOL = 'bool'
STR = 'str'
GLOB = 'glob'
NUM = 'number'
GLOBS = 'list of globs'
MODE = 'Enabled or Disabled'
RELATION = 'PCIe relation'
LINK = 'relation such as NV18'
PRIO = 'priority 0-7'
MIG_ENTRIES = 'mig-parted entries'
PER_GPU_STR = 'str, or GPU index -> str'


class Check(object):
    """One row of the table.

    ``name`` is the ``check`` of the failures it gives; ``key`` the profile key
    that turns it on (None: it always runs); ``kind`` the key's type; ``doc``
    one line for operators; ``role`` the role of this collection that converges
    what it checks (None: hardware or cabling, no role can change it); ``reads``
    the outputs it needs; ``func(ctx, value)`` returns its failures.
    """

    def __init__(self, name, key, kind, doc, role, reads, func):
        self.name = name
        self.key = key
        self.kind = kind
        self.doc = doc
        self.role = role
        self.reads = reads
        self.func = func


def _count(ctx, wanted):
    actual = len(ctx.gpus) if ctx.pci_view else ctx.topology.get('gpu_count')
    if actual == wanted:
        return []
    return [failure('gpu_count', 'node', wanted, actual, 'expected %d GPUs, found %s' % (wanted, actual))]


def _driver_version(ctx, pattern):
    actual = ctx.topology.get('driver_version')
    if actual is None:
        return [not_checked('driver_version', 'node', pattern, 'no readable %s and no %s'
                            % (ctx.source('xml'), '/proc/driver/nvidia/version'))]
    if actual is not None and fnmatch.fnmatchcase(actual, pattern):
        return []
    return [failure('driver_version', 'node', pattern, actual, 'driver %s does not match %s' % (actual, pattern))]


def _matrix_gpus(ctx, check, wanted):
    """GPU rows of the matrix, GPU0 first, and ``not checked`` for every GPU the matrix lacks."""
    matrix = ctx.topology.get('matrix') or {}
    gpus = sorted((n for n in matrix if is_gpu(n)), key=lambda n: int(n[3:]))
    gaps = []
    if gpus:
        gaps = [not_checked(check, 'GPU%d' % g['index'], wanted, 'GPU%d is not in %s' % (g['index'], ctx.source('topo')))
                for g in ctx.gpus if 'GPU%d' % g['index'] not in matrix]
    return gpus, gaps


def _nvlink_relation(ctx, wanted):
    gpus, gaps = _matrix_gpus(ctx, 'nvlink_relation', wanted)
    if not gpus:
        return [not_checked('nvlink_relation', 'node', wanted, 'no readable %s' % ctx.source('topo'))]
    matrix = ctx.topology['matrix']
    failures = []
    for i, left in enumerate(gpus):
        for right in gpus[i + 1:]:
            actual = matrix[left].get(right)
            if actual != wanted:
                failures.append(failure('nvlink_relation', '%s-%s' % (left, right), wanted, actual,
                                        '%s to %s is %s, expected %s' % (left, right, actual, wanted)))
    return failures + gaps


def _gpu_nic_relation(ctx, limit):
    expected = '<= %s' % limit
    gpus, gaps = _matrix_gpus(ctx, 'gpu_nic_relation', expected)
    if 'sys/class/infiniband' in ctx.missing:
        return [not_checked('gpu_nic_relation', 'node', expected,
                            'sysfs class/infiniband is not available: cannot tell which NICs of the matrix exist')]
    existing = [n['name'] for n in selected_nics(ctx.topology, ctx.expected)]
    matrix = ctx.topology.get('matrix') or {}
    in_matrix = [n for n in matrix.get(gpus[0], {}) if n in existing] if gpus else []
    if not gpus or not in_matrix:
        return [not_checked('gpu_nic_relation', 'node', expected,
                            'no GPU-to-NIC relation in %s for a NIC present in sysfs' % ctx.source('topo'))]
    failures = []
    for gpu in gpus:
        relation, closest = closest_nics(matrix, gpu, in_matrix)
        if relation is None or PCIE_RELATION_RANK[relation] > PCIE_RELATION_RANK[limit]:
            failures.append(failure('gpu_nic_relation', gpu, expected, relation,
                                    '%s is %s from its closest NIC (%s), expected %s or closer'
                                    % (gpu, relation, ', '.join(closest), limit)))
    return failures + gaps


def _numa_balance(ctx, wanted):
    if not wanted:
        return []
    unknown = ['GPU%d' % g['index'] for g in ctx.gpus if g.get('numa_node') is None]
    if unknown:
        return [not_checked('numa_balance', 'node', 'even', 'NUMA node unknown for %s' % ', '.join(unknown))]
    counts = {}
    for gpu in ctx.gpus:
        counts[gpu['numa_node']] = counts.get(gpu['numa_node'], 0) + 1
    if len(set(counts.values())) <= 1:
        return []
    shown = dict(('numa%d' % k, v) for k, v in sorted(counts.items()))
    return [failure('numa_balance', 'node', 'even', shown,
                    'GPUs per NUMA node are uneven: %s' % ', '.join('%s=%d' % kv for kv in sorted(shown.items())))]


def selected_nics(topology, expected):
    patterns = expected.get('nic_names')
    nics = topology.get('nics') or []
    if patterns is None:
        return list(nics)
    return [n for n in nics if any(fnmatch.fnmatchcase(n['name'], p) for p in patterns)]


def _nic_missing(ctx, _value):
    """Every NIC the matrix names exists in sysfs (a dead HCA or one whose driver is not loaded does not)."""
    named = [n for n in (ctx.topology.get('matrix') or {}) if not is_gpu(n)]
    if 'sys/class/infiniband' in ctx.missing:
        if not named:
            return []
        return [not_checked('nic_missing', 'node', 'in sysfs class/infiniband',
                            'sysfs class/infiniband is not available: cannot tell whether the %d NICs %s names exist '
                            '(no RDMA stack loaded?)' % (len(named), ctx.source('topo')))]
    present = set(n['name'] for n in ctx.topology.get('nics') or [])
    return [failure('nic_missing', name, 'in sysfs class/infiniband', None,
                    '%s is in %s but not in sysfs class/infiniband (HCA dead, or its driver not loaded)'
                    % (name, ctx.source('topo'))) for name in sorted(n for n in named if n not in present)]


def _nic_count(ctx, wanted):
    if 'sys/class/infiniband' in ctx.missing:
        return [not_checked('nic_count', 'node', wanted, 'sysfs class/infiniband is not available')]
    nics = selected_nics(ctx.topology, ctx.expected)
    if len(nics) == wanted:
        return []
    patterns = ctx.expected.get('nic_names')
    return [failure('nic_count', 'node', wanted, len(nics),
                    'expected %d NICs%s, found %d (%s)' % (wanted, ' matching %s' % patterns if patterns else '',
                                                           len(nics), ', '.join(n['name'] for n in nics) or 'none'))]


def _ports(ctx, check, wanted):
    """(subject, port) for every port of the selected NICs, and ``not checked`` where there is none."""
    if 'sys/class/infiniband' in ctx.missing:
        return [], [not_checked(check, 'node', wanted, 'sysfs class/infiniband is not available')]
    nics = selected_nics(ctx.topology, ctx.expected)
    if not nics:
        return [], [not_checked(check, 'node', wanted, 'no NIC matches %s' % (ctx.expected.get('nic_names') or '*'))]
    ports, gaps = [], []
    for nic in nics:
        if not nic.get('ports'):
            gaps.append(not_checked(check, nic['name'], wanted, '%s has no ports in sysfs' % nic['name']))
        for port in nic.get('ports') or []:
            ports.append(('%s/%s' % (nic['name'], port['port']), port))
    return ports, gaps


_PORT_COUNTERS = ('link_downed', 'symbol_error', 'port_rcv_errors')


def _port_check(check, field, compare, describe):
    """A check over one field of every selected port: ``compare(actual, wanted)`` True when it passes."""
    def run(ctx, wanted):
        ports, failures = _ports(ctx, check, wanted)
        for subject, port in ports:
            actual = (port.get('counters') or {}).get(field) if field in _PORT_COUNTERS else port.get(field)
            if actual is None:
                failures.append(not_checked(check, subject, wanted, '%s of %s is not in sysfs' % (field, subject)))
            elif not compare(actual, wanted):
                expected, message = describe(subject, actual, wanted, port)
                failures.append(failure(check, subject, expected, actual, message))
        return failures
    return run


_nic_port_state = _port_check(
    'nic_port_state', 'state', lambda a, w: a.upper() == w.upper(),
    lambda s, a, w, p: (w, '%s is %s (%s), expected %s' % (s, a, p.get('phys_state'), w)))
_nic_link_layer = _port_check(
    'nic_link_layer', 'link_layer', lambda a, w: a.lower() == w.lower(),
    lambda s, a, w, p: (w, '%s link layer is %s, expected %s' % (s, a, w)))
_nic_rate = _port_check(
    'nic_rate', 'rate_gbps', lambda a, w: a >= w,
    lambda s, a, w, p: ('>= %s' % w, '%s runs at %s Gb/s, expected at least %s' % (s, a, w)))
_nic_link_downed = _port_check(
    'nic_link_downed', 'link_downed', lambda a, w: a <= w,
    lambda s, a, w, p: ('<= %d' % w, '%s link went down %d time(s)' % (s, a)))
_nic_symbol_errors = _port_check(
    'nic_symbol_errors', 'symbol_error', lambda a, w: a <= w,
    lambda s, a, w, p: ('<= %d' % w, '%s counted %d symbol errors (bad cable, connector or transceiver)' % (s, a)))
_nic_rcv_errors = _port_check(
    'nic_rcv_errors', 'port_rcv_errors', lambda a, w: a <= w,
    lambda s, a, w, p: ('<= %d' % w, '%s received %d packets with errors' % (s, a)))


def _link_layer_nics(ctx, check, wanted, layer):
    """The selected NICs with a port of link layer ``layer``, and ``not checked`` when there is none."""
    if 'sys/class/infiniband' in ctx.missing:
        return [], [not_checked(check, 'node', wanted, 'sysfs class/infiniband is not available')]
    selected = selected_nics(ctx.topology, ctx.expected)
    nics = [n for n in selected if any((p.get('link_layer') or '').lower() == layer.lower()
                                       for p in n.get('ports') or [])]
    if not nics:
        which = 'no NIC matches %s' % (ctx.expected.get('nic_names') or '*') if not selected else \
            'none of the selected NICs (%s) has an %s port' % (', '.join(n['name'] for n in selected), layer)
        return [], [not_checked(check, 'node', wanted, which)]
    return nics, []


def _unread(nic, field, what):
    roce = nic.get('roce') or {}
    why = (roce.get('unreadable') or {}).get(field) or 'not in the facts'
    return '%s of %s could not be read: %s' % (what, nic['name'], why)


def _nic_ipoib(ctx, allowed):
    """With ``nic_ipoib: false`` no selected InfiniBand NIC has an IPoIB netdev that is up (one set down, as the
    rdma role leaves those of HCAs outside rdma_ipoib_hcas when ib_ipoib loads for others, carries nothing)."""
    if allowed:
        return []
    nics, failures = _link_layer_nics(ctx, 'nic_ipoib', False, 'InfiniBand')
    for nic in nics:
        active = nic.get('ipoib_active')
        if nic.get('ipoib') is None:
            failures.append(not_checked('nic_ipoib', nic['name'], [], 'the IPoIB netdevs of %s cannot be told from '
                                        'this source (no netdevs or sys/module in it)' % nic['name']))
        elif active is None:
            failures.append(not_checked('nic_ipoib', nic['name'], [], 'the flags of IPoIB netdev(s) %s could not '
                                        'be read' % ', '.join(nic['ipoib'])))
        elif active:
            failures.append(failure('nic_ipoib', nic['name'], [], active, '%s carries IPoIB: netdev(s) %s up '
                                    '(ib_ipoib is loaded); the node class has none' % (nic['name'], ', '.join(active))))
    return failures


def _nic_roce_dcqcn(ctx, prio):
    nics, failures = _link_layer_nics(ctx, 'nic_roce_dcqcn', prio, 'Ethernet')
    key = str(prio)
    for nic in nics:
        ecn = (nic.get('roce') or {}).get('ecn')
        if ecn is None:
            failures.append(not_checked('nic_roce_dcqcn', nic['name'], prio, _unread(nic, 'ecn', 'DCQCN')))
            continue
        actual = dict((point, (ecn.get(point) or {}).get(key)) for point in ('rp', 'np'))
        unknown = [point for point, on in sorted(actual.items()) if on is None]
        if unknown:
            failures.append(not_checked('nic_roce_dcqcn', nic['name'], prio, 'roce_%s/enable/%s of %s could not be '
                                        'read' % (' and roce_'.join(unknown), key, nic['roce'].get('netdev'))))
        elif not all(actual.values()):
            off = ' and '.join('roce_%s' % point for point, on in sorted(actual.items()) if not on)
            failures.append(failure('nic_roce_dcqcn', nic['name'], prio, actual, '%s (%s): DCQCN %s off on '
                                    'priority %s' % (nic['name'], nic['roce'].get('netdev'), off, prio)))
    return failures


def _nic_pfc_priority(ctx, prio):
    nics, failures = _link_layer_nics(ctx, 'nic_pfc_priority', prio, 'Ethernet')
    for nic in nics:
        pfc = (nic.get('roce') or {}).get('pfc')
        if pfc is None:
            failures.append(not_checked('nic_pfc_priority', nic['name'], [prio], _unread(nic, 'pfc', 'PFC')))
        elif pfc != [prio]:
            failures.append(failure('nic_pfc_priority', nic['name'], [prio], pfc, '%s (%s): PFC is on for priorities '
                                    '%s, expected only %s' % (nic['name'], nic['roce'].get('netdev'),
                                                              pfc or 'none', prio)))
    return failures


def _nic_retrans_ratio(ctx, limit):
    nics, failures = _link_layer_nics(ctx, 'nic_retrans_ratio', '<= %s%%' % limit, 'Ethernet')
    for nic in nics:
        for port in nic.get('ports') or []:
            if (port.get('link_layer') or '').lower() != 'ethernet':
                continue
            subject = '%s/%s' % (nic['name'], port['port'])
            ratio = retrans_ratio(port)
            if ratio is None:
                hw = port.get('hw_counters') or {}
                lacking = [c for c in RETRANS_COUNTERS if hw.get(c) is None]
                why = ('hw_counters %s of %s are not in sysfs' % (', '.join(lacking), subject) if lacking else
                       'no packet sent from %s since its counters were cleared (port_xmit_packets %s)'
                       % (subject, (port.get('counters') or {}).get('port_xmit_packets', 'not in sysfs')))
                failures.append(not_checked('nic_retrans_ratio', subject, '<= %s%%' % limit, why))
            elif ratio > limit:
                failures.append(failure('nic_retrans_ratio', subject, '<= %s%%' % limit, round(ratio, 4),
                                        '%s retransmitted %.4f%% of its packets (%s), expected at most %s%%'
                                        % (subject, ratio, ', '.join('%s %d' % (c, port['hw_counters'][c])
                                                                     for c in RETRANS_COUNTERS), limit)))
    return failures


def _selector(_ctx, _value):
    return []


# The table. Built-in checks (key None) run on every profile, the empty one included.
CHECKS = (
    Check('output_unreadable', None, None, 'an nvidia-smi output the parser could not read, naming the line',
          None, (), check_output_unreadable),
    Check('nvsmi_exit', None, None, 'nvidia-smi exited with a status other than 0 (its own error text quoted)',
          None, (), check_nvsmi_exit),
    Check('nvsmi_timeout', None, None, 'an nvidia-smi query did not finish within command_timeout and was killed',
          None, (), check_nvsmi_timeout),
    Check('outputs_disagree', None, None, 'the outputs list different GPUs (counts and GPUs named)',
          None, (), check_outputs_disagree),
    Check('gpu_error', None, None, 'nvidia-smi could not read a GPU (GPU lost, unknown error)',
          None, (), check_gpu_error),
    Check('nic_missing', None, None,
          'a NIC that topo -m names has no device in sysfs class/infiniband (HCA dead, or its driver not loaded)',
          None, ('topo', 'sysfs'), _nic_missing),
    Check('driver_loaded', None, None, 'nvidia-smi cannot talk to the driver, or nothing it printed could be read',
          'nvidia_driver', (), check_driver_loaded),
    Check('gpu_count', 'gpu_count', INT, 'number of GPUs (on the PCI bus when no driver answers)', None,
          ('xml', 'topo', 'nvlink', 'pci'), _count),
    Check('gpu_model', 'gpu_model', GLOB, 'glob matched against every GPU name, e.g. "NVIDIA H100*"',
          None, ('xml', 'nvlink', 'pci'), per_gpu(('xml', 'nvlink', 'pci'), check_gpu_model)),
    Check('driver_version', 'driver_version', GLOB, 'glob matched against the driver version, e.g. "550.*"',
          'nvidia_driver', ('xml',), _driver_version),
    Check('pcie_gen', 'pcie_gen_min', INT,
          'lowest acceptable PCIe generation: supported (gen_max), and current when busy',
          None, ('xml', 'pci'), per_gpu(('xml', 'pci'), check_pcie_gen)),
    Check('pcie_width', 'pcie_width_min', INT, 'lowest acceptable current PCIe link width',
          None, ('xml', 'pci'), per_gpu(('xml', 'pci'), check_pcie_width)),
    Check('nvlink_relation', 'nvlink_relation', LINK,
          'topology relation required between every GPU pair, e.g. "NV18"', None, ('topo',), _nvlink_relation),
    Check('nvlink_active_links', 'nvlink_active_links', INT, 'active NVLink links required on every GPU',
          None, ('nvlink',), per_gpu(('nvlink',), check_nvlink_active_links)),
    Check('persistence_mode', 'persistence_mode', MODE, '"Enabled" or "Disabled" on every GPU',
          'nvidia_driver', ('xml',), per_gpu(('xml',), check_mode('persistence_mode'))),
    Check('ecc_mode', 'ecc_mode', MODE, '"Enabled" or "Disabled" on every GPU',
          None, ('xml',), per_gpu(('xml',), check_mode('ecc_mode'))),
    Check('mig_mode', 'mig_mode', MODE, '"Enabled" or "Disabled" on every GPU',
          'mig', ('xml',), per_gpu(('xml',), check_mode('mig_mode'))),
    Check('mig_devices', 'mig_devices', MIG_ENTRIES,
          'the entries of one mig-parted configuration: the MIG mode and exact GPU instances of each GPU they match',
          'mig', ('xml', 'mig'), check_mig_devices),
    Check('compute_mode', 'compute_mode', PER_GPU_STR,
          'one compute mode for every GPU ("Default"), or one per GPU index, "*" for the others',
          'mps', ('xml',), per_gpu(('xml',), check_compute_mode)),
    Check('ecc_uncorrected', 'max_ecc_uncorrected', INT,
          'most uncorrectable ECC errors tolerated per GPU (volatile and aggregate)',
          None, ('xml',), per_gpu(('xml',), check_ecc_uncorrected)),
    Check('retired_pages_pending', 'allow_retired_pages_pending', BOOL,
          'whether a GPU may have page retirement pending', None, ('xml',), per_gpu(('xml',), check_retired_pages)),
    Check('remapped_rows_pending', 'allow_remapped_rows_pending', BOOL,
          'whether a GPU may have row remapping pending or failed', None, ('xml',), per_gpu(('xml',), check_remapped_rows)),
    Check('nic_names', 'nic_names', GLOBS,
          'globs selecting the NICs the NIC checks apply to (leave out to select all)', None, (), _selector),
    Check('nic_count', 'nic_count', INT, 'number of selected NICs', None, ('sysfs',), _nic_count),
    Check('nic_port_state', 'nic_port_state', STR,
          'state every port of the selected NICs must be in, e.g. "ACTIVE"', None, ('sysfs',), _nic_port_state),
    Check('nic_link_layer', 'nic_link_layer', STR,
          '"InfiniBand" or "Ethernet" for every port of the selected NICs', None, ('sysfs',), _nic_link_layer),
    Check('nic_rate', 'nic_rate_min_gbps', NUM, 'lowest acceptable port rate in Gb/s', None, ('sysfs',), _nic_rate),
    Check('nic_link_downed', 'nic_link_downed_max', INT,
          'most link_downed events tolerated per port of the selected NICs', None, ('sysfs',), _nic_link_downed),
    Check('nic_symbol_errors', 'nic_symbol_errors_max', INT,
          'most symbol_error counts tolerated per port of the selected NICs', None, ('sysfs',), _nic_symbol_errors),
    Check('nic_rcv_errors', 'nic_rcv_errors_max', INT,
          'most port_rcv_errors tolerated per port of the selected NICs', None, ('sysfs',), _nic_rcv_errors),
    Check('nic_retrans_ratio', 'nic_retrans_ratio_max', NUM,
          'most RoCE retransmissions per packet sent, in percent, on each Ethernet port of the selected NICs',
          None, ('sysfs',), _nic_retrans_ratio),
    Check('nic_ipoib', 'nic_ipoib', BOOL,
          'whether the selected InfiniBand NICs may carry IPoIB (false: no IPoIB netdev of theirs is up)', 'rdma',
          ('sysfs',), _nic_ipoib),
    Check('nic_roce_dcqcn', 'nic_roce_dcqcn', PRIO,
          'priority on which DCQCN (roce_rp and roce_np) is enabled on every selected Ethernet NIC', 'rdma',
          ('sysfs',), _nic_roce_dcqcn),
    Check('nic_pfc_priority', 'nic_pfc_priority', PRIO,
          'the one priority with PFC on (dcb) on every selected Ethernet NIC', 'rdma', ('sysfs', 'dcb'),
          _nic_pfc_priority),
    Check('dcgm_health', 'dcgm_health', BOOL,
          'true: the DCGM host engine answers and its health watches (dcgmi health -c) report no failure', 'dcgm',
          ('dcgm',), check_dcgm_health),
    Check('next_boot_driver', 'next_boot_driver', BOOL,
          'true: the kernel the node boots next (newest in /boot) has an NVIDIA module, of the installed version',
          'nvidia_driver', ('boot',), check_next_boot_driver),
    Check('gpu_nic_relation', 'gpu_nic_relation_max', RELATION,
          'worst allowed relation from each GPU to its closest selected NIC that exists in sysfs',
          None, ('topo', 'sysfs'), _gpu_nic_relation),
    Check('numa_balance', 'numa_balance', BOOL, 'GPUs must be spread evenly over the NUMA nodes that hold GPUs',
          None, ('topo', 'sysfs'), _numa_balance),
)
BY_KEY = dict((c.key, c) for c in CHECKS if c.key is not None)
BY_NAME = dict((c.name, c) for c in CHECKS)
PROFILE_KEYS = dict((c.key, (c.kind, c.doc)) for c in CHECKS if c.key is not None)
# checks that read what the GPUs say through nvidia-smi: left out when the driver cannot be reached
_NEEDS_DRIVER = ('xml', 'topo', 'nvlink')
_CHOICES = {MODE: ('Enabled', 'Disabled'), RELATION: ('PIX', 'PXB', 'PHB', 'NODE', 'SYS', 'SOC')}


def owned_keys(role):
    """Profile keys (and built-in check names) the role converges."""
    return sorted((c.key or c.name) for c in CHECKS if c.role == role)


def bad_glob(pattern):
    """An empty glob, or one with an unclosed ``[``: fnmatch would take it literally or never match."""
    depth = 0
    for char in pattern:
        if char == '[':
            depth += 1
        elif char == ']' and depth:
            depth -= 1
    return pattern == '' or depth != 0


def _type_error(key, kind, value):
    if kind == MIG_ENTRIES:
        try:
            validate_entries(value, key)
        except ConfigError as exc:
            return 'profile key %s' % exc
        return None
    if kind == PER_GPU_STR:
        good_keys = isinstance(value, dict) and len(value) > 0 and all(
            (isinstance(k, int) and not isinstance(k, bool) and k >= 0)
            or (isinstance(k, str) and (k.isdigit() or k == '*')) for k in value)
        values = list(value.values()) if isinstance(value, dict) else [value]
        if (good_keys or not isinstance(value, dict)) and all(isinstance(v, str) and v != '' for v in values):
            return None
        return ('profile key %s must be a compute mode for every GPU, or a mapping of GPU index (or "*" for the '
                'others) to a compute mode, got %r' % (key, value))
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    good = {
        INT: number and isinstance(value, int) and value >= 0,
        BOOL: isinstance(value, bool),
        STR: isinstance(value, str) and value != '',
        GLOB: isinstance(value, str) and not bad_glob(value),
        MODE: isinstance(value, str) and value in _CHOICES[MODE],
        NUM: number and value >= 0,
        GLOBS: isinstance(value, list) and len(value) > 0 and all(
            isinstance(v, str) and not bad_glob(v) for v in value),
        RELATION: isinstance(value, str) and value in _CHOICES[RELATION],
        LINK: isinstance(value, str) and re.match(r'^(NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$', value) is not None,
        PRIO: number and isinstance(value, int) and 0 <= value <= 7,
    }[kind]
    if good:
        return None
    if kind in _CHOICES:
        return 'profile key %s must be one of %s, got %r' % (key, ', '.join(_CHOICES[kind]), value)
    if kind == GLOBS:
        return ('profile key %s must be a non-empty list of globs (leave the key out to select every NIC; '
                'a glob must not be empty or have an unclosed [), got %r' % (key, value))
    if kind == LINK:
        return 'profile key %s must be a relation such as NV18, got %r' % (key, value)
    if kind == PRIO:
        return 'profile key %s must be a priority, a whole number 0-7, got %r' % (key, value)
    if kind == GLOB:
        return 'profile key %s must be a glob (not empty, no unclosed [), got %r' % (key, value)
    return 'profile key %s must be a %s%s, got %r' % (key, 'non-negative ' if kind in (INT, NUM) else '', kind, value)


def validate_profile(expected):
    """Error strings for a profile: unknown keys, wrong types, bad values."""
    if not isinstance(expected, dict):
        return ['expected must be a dict (the node-class profile), got %s' % type(expected).__name__]
    errors = []
    unknown = sorted(str(k) for k in expected if k not in BY_KEY)
    if unknown:
        errors.append('unknown profile key(s): %s; known keys: %s' % (', '.join(unknown), ', '.join(sorted(BY_KEY))))
    for key, value in sorted(expected.items(), key=lambda kv: str(kv[0])):
        if key in BY_KEY and value is not None:
            problem = _type_error(key, BY_KEY[key].kind, value)
            if problem:
                errors.append(problem)
    return errors


class Context(object):
    """What every check function reads: the snapshot, the profile and the outputs' coverage.

    ``gpus`` is what nvidia-smi lists; on a node whose driver does not answer it is the GPUs on the PCI bus
    (``pci_view``), numbered in bus order as nvidia-smi would number them, each with ``sources: [pci]``.
    """

    def __init__(self, topology, expected):
        self.topology = topology
        self.expected = expected
        self.outputs = topology.get('outputs') or {}
        self.missing = topology.get('missing') or []
        self.pci_view = not topology.get('driver_loaded') and topology.get('pci_gpus') is not None
        if self.pci_view:
            self.gpus = [{'index': i, 'name': g.get('model'), 'pci_bus_id': g['pci_bus_id'], 'pcie': g.get('pcie'),
                          'numa_node': g.get('numa_node'), 'sources': ['pci']}
                         for i, g in enumerate(topology['pci_gpus'])]
        else:
            self.gpus = topology.get('gpus') or []

    def source(self, part):
        return (self.outputs.get(part) or {}).get('source') or part


ROLES = tuple(sorted(set(c.role for c in CHECKS if c.role)))


def run_checks(topology, expected, defer_roles=()):
    """``(failures, deferred)`` of ``topology`` against the profile ``expected``, in table order.

    The checks owned by ``defer_roles`` (roles about to converge them in this run) are not made; each is
    listed in ``deferred`` as ``{check, key, role, why}``, never dropped silently. When ``driver_loaded`` is
    deferred and the driver is not loaded, the checks that need nvidia-smi are deferred with it.
    """
    exp = dict((k, v) for k, v in expected.items() if v is not None)
    ctx = Context(topology, exp)
    failures = []
    deferred = []
    driver_deferred = BY_NAME['driver_loaded'].role in defer_roles
    for check in CHECKS:
        if check.key is not None and check.key not in exp or check.name == 'nic_names':
            continue
        needs_driver = any(part in _NEEDS_DRIVER for part in check.reads) and not (
            ctx.pci_view and 'pci' in check.reads)
        if check.role in defer_roles:
            deferred.append({'check': check.name, 'key': check.key, 'role': check.role,
                             'why': 'converged by the %s role in this run' % check.role})
            continue
        if not topology.get('driver_loaded') and needs_driver:
            if driver_deferred:
                deferred.append({'check': check.name, 'key': check.key, 'role': BY_NAME['driver_loaded'].role,
                                 'why': 'needs the driver the %s role installs in this run'
                                        % BY_NAME['driver_loaded'].role})
            continue        # otherwise the driver_loaded failure says why
        failures.extend(check.func(ctx, exp.get(check.key) if check.key else None))
    return failures, deferred


def check_profile(topology, expected):
    """Failures of ``topology`` against the node-class profile ``expected``, in table order."""
    return run_checks(topology, expected)[0]
