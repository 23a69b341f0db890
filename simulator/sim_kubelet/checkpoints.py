# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU and memory managers' checkpoints (pkg/kubelet/checkpointmanager): the kubelet's JSON and
checksum algorithm, written when missing, refused when they disagree with the configuration.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

from .machine import read_text
from .messages import (CHECKPOINT, CPUS_CHANGED, CPU_DIFFERS, KubeletError, MEM_CHANGED, MEM_DIFFERS, RESTORE,
                       START_CPU, START_MEM, klog, quote)
from .quantity import format_cpuset, format_quantity, parse_cpuset


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
    text = read_text(path)
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
    text = read_text(path)
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
