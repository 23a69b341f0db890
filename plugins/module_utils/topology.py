# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Assembles parsed nvidia-smi and sysfs outputs into the ``gpu_topology`` facts.

Sources give raw text: a live node (commands plus sysfs under ``sysfs_root``)
or a capture bundle (files). Nothing here knows which.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
from collections import Counter

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_errors import (
    WHOLE_OUTPUT_RE, device_errors, exit_meaning)
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_topo import closest_nics, numa_from_affinity
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import bounded, decode
from ansible_collections.gpuops.node.plugins.module_utils.nvidia_proc import parse_driver_version
from ansible_collections.gpuops.node.plugins.module_utils.sysfs import (
    read_infiniband, read_numa_nodes, read_pci_device, read_pci_nvidia, read_value, sysfs_pci_address)
from ansible_collections.gpuops.node.plugins.module_utils.topology_sources import (
    DRIVER_FAILURES, PARSERS, PARTS, BundleSource, CommandSource, judge_output)

SCHEMA_VERSION = 2
# the facts keys every snapshot has, in this schema
TOP_KEYS = ('schema_version', 'driver_loaded', 'driver_error', 'driver_version', 'driver_installed_version',
            'driver_installed', 'kernel_module', 'cuda_version',
            'gpu_count', 'gpus', 'gpu_processes', 'pci_gpus', 'nvswitch_count', 'matrix', 'gpu_nic_affinity', 'nics',
            'numa_nodes', 'outputs', 'device_errors', 'missing', 'errors', 'warnings')


def _empty():
    return {
        'schema_version': SCHEMA_VERSION,
        'driver_loaded': False,
        'driver_error': None,
        'driver_version': None,
        'driver_installed_version': None,
        'driver_installed': None,
        'kernel_module': None,
        'cuda_version': None,
        'gpu_count': 0,
        'gpus': [],
        'gpu_processes': [],
        'pci_gpus': None,
        'nvswitch_count': None,
        'matrix': {},
        'gpu_nic_affinity': {},
        'nics': [],
        'numa_nodes': {},
        'outputs': {},
        'device_errors': [],
        'missing': [],
        'errors': [],
        'warnings': [],
    }


def gather(source, sysfs_root, proc_root=None):
    """Build the ``gpu_topology`` dict from a source and a sysfs root.

    Never raises on bad input: each output's status is in ``outputs`` (see
    ``topology_sources.judge_output``), unreadable outputs are listed in
    ``errors`` (command, line and reason) and the facts they would have given
    are left out; absent outputs are listed in ``missing``.
    """
    topo = _empty()
    parsed = {}
    seen_errors = set()
    for part in PARTS:
        label = source.label(part)
        if topo['driver_error'] is not None and topo['driver_error']['kind'] == 'driver_not_loaded':
            # every other query fails the same way; nothing more to read
            topo['outputs'][part] = _output(label, 'skipped')
            continue
        warnings = []
        result = source.read(part, warnings)
        if result is None:
            topo['missing'].append(label)
            topo['outputs'][part] = _output(label, 'missing')
            topo['warnings'].extend(warnings)
            continue
        parsed_part = _read_part(topo, part, label, result, warnings, seen_errors, source.limit)
        if parsed_part is not None:
            parsed[part] = parsed_part
        topo['warnings'].extend(bounded(warnings, label))

    _assemble_gpus(topo, parsed, sysfs_root)
    _assemble_nics(topo, parsed.get('topo'), sysfs_root)
    _assemble_bare(topo, sysfs_root, proc_root)
    return topo


def _assemble_bare(topo, sysfs_root, proc_root):
    """What the node says without nvidia-smi: GPUs and NVSwitches on the PCI bus, the loaded kernel module."""
    pci = read_pci_nvidia(sysfs_root, topo['warnings']) if sysfs_root else None
    if pci is None:
        topo['missing'].append('sys/bus/pci/devices')
    else:
        topo['pci_gpus'] = pci['gpus']
        topo['nvswitch_count'] = len(pci['nvswitches'])
    path = os.path.join(proc_root, 'driver', 'nvidia', 'version') if proc_root else None
    text = read_value(path, topo['warnings']) if path else None
    if text is None:
        return          # no loaded module (or no procfs in a bundle): nothing to say
    try:
        module = parse_driver_version(text)
    except ParseError as exc:
        topo['errors'].append(exc.to_dict())
        return
    topo['kernel_module'] = module['kernel_module']
    if topo['driver_version'] is None:
        topo['driver_version'] = module['version']
    elif topo['driver_version'] != module['version']:
        topo['warnings'].append('nvidia-smi reports driver %s but the loaded kernel module is %s'
                                % (topo['driver_version'], module['version']))


def _output(label, status, failure=None):
    failure = failure or {}
    return {'source': label, 'status': status, 'rc': failure.get('rc', 0 if status == 'ok' else None),
            'kind': failure.get('kind'), 'message': failure.get('message'), 'gpus': None, 'uuids': None,
            'complete': status in ('ok', 'exit')}


def _read_part(topo, part, label, result, warnings, seen_errors, limit):
    """Judge and parse one output; record its status. Returns the parsed output or None."""
    rc, out, err, timed_out = result
    out = decode(out, label, warnings)
    err = decode(err, label + ' (stderr)', warnings)
    for error in device_errors(out + '\n' + err):
        key = (error['gpu'], error['pci_bus_id'], error['reason'])
        if key not in seen_errors:
            seen_errors.add(key)
            topo['device_errors'].append(error)
    status, failure, text = judge_output(label, rc, out, err, timed_out, limit)
    if status == 'failed' and failure['kind'] in DRIVER_FAILURES and topo['driver_error'] is None:
        topo['driver_error'] = failure
    topo['outputs'][part] = _output(label, status, failure)
    if text is None:
        return None
    try:
        result = PARSERS[part](_strip_device_errors(text))
    except ParseError as exc:
        if status == 'exit':
            # what a failing command printed is its error text, not a damaged output
            topo['outputs'][part].update(status='failed', complete=False)
            return None
        topo['errors'].append(exc.to_dict())
        topo['outputs'][part].update(status='unreadable', message=str(exc), complete=False)
        return None
    if status == 'exit' and not WHOLE_OUTPUT_RE.match(failure['message']):
        # the output was complete: its first line is not an error text
        topo['outputs'][part]['message'] = exit_meaning(rc)
    if status == 'ok' and err.strip():
        warnings.append('%s exited 0 but wrote to stderr: %s' % (label, err.strip().splitlines()[0]))
    warnings.extend(result.get('warnings', []))
    return result


def _assemble_gpus(topo, parsed, sysfs_root):
    """One entry per GPU any output lists: the XML's entries, then what only the matrix or NVLink names."""
    xml, matrix, nvlink = parsed.get('xml'), parsed.get('topo'), parsed.get('nvlink')
    listing = [p for p in parsed if topo['outputs'][p]['status'] in ('ok', 'exit') and parsed[p].get('gpus')]
    gpus = []
    if xml is not None:
        topo['driver_version'] = xml['driver_version']
        topo['cuda_version'] = xml['cuda_version']
        gpus = xml['gpus']
        if xml['attached_gpus'] != len(gpus):
            # a GPU is missing from the XML: the others keep their real index
            _renumber_around_failed(gpus, topo['device_errors'])
        _name_warned_gpus(gpus, topo['device_errors'])
        for gpu in gpus:
            gpu['sources'] = ['xml']
        _record(topo, 'xml', [g['index'] for g in gpus], [g.get('uuid') for g in gpus])
        topo['outputs']['xml']['attached'] = xml['attached_gpus']
        counts = Counter(g['uuid'] for g in gpus if g.get('uuid'))
        for uuid in sorted(u for u, n in counts.items() if n > 1):
            topo['warnings'].append('%s: UUID %s is printed for more than one GPU'
                                    % (topo['outputs']['xml']['source'], uuid))
    by_index = dict((g['index'], g) for g in gpus)
    if matrix is not None:
        indices = [int(name[3:]) for name in matrix['gpus']]
        _record(topo, 'topo', indices, None)
        for index in indices:
            if index not in by_index:
                by_index[index] = _stub(index)
                gpus.append(by_index[index])
            by_index[index]['sources'].append('topo')
    nvlink_by_gpu = {}
    if nvlink is not None:
        _record(topo, 'nvlink', [g['index'] for g in nvlink['gpus']], [g['uuid'] for g in nvlink['gpus']])
        topo['outputs']['nvlink']['complete'] = topo['outputs']['nvlink']['complete'] and not nvlink['elided']
        by_uuid = dict((g['uuid'], g) for g in gpus if g.get('uuid'))
        for entry in nvlink['gpus']:
            gpu = by_uuid.get(entry['uuid']) if entry['uuid'] else None
            if gpu is None and not (entry['uuid'] and by_index.get(entry['index'], {}).get('uuid')):
                gpu = by_index.get(entry['index'])
            if gpu is None and entry['index'] not in by_index:
                gpu = by_index[entry['index']] = _stub(entry['index'], entry['name'], entry['uuid'])
                gpus.append(gpu)
            if gpu is not None:
                gpu['sources'].append('nvlink')
                nvlink_by_gpu[id(gpu)] = entry
    gpus.sort(key=lambda g: g['index'])

    for gpu in gpus:
        _place_gpu(topo, gpu, matrix, nvlink_by_gpu.get(id(gpu)), sysfs_root)
    topo['gpus'] = gpus
    topo['gpu_count'] = len(gpus)
    topo['gpu_processes'] = [dict(proc, gpu=gpu['index']) for gpu in gpus for proc in gpu.get('processes') or []]
    if matrix is not None:
        topo['matrix'] = matrix['matrix']
    # the driver answers when an output it printed was read and lists at least one GPU
    topo['driver_loaded'] = topo['driver_error'] is None and bool(listing) and bool(gpus)


def _record(topo, part, indices, uuids):
    topo['outputs'][part]['gpus'] = sorted(indices)
    topo['outputs'][part]['uuids'] = uuids


def _stub(index, name=None, uuid=None):
    """A GPU that only the matrix or NVLink output names: what -q -x would tell is unknown."""
    return {'index': index, 'uuid': uuid, 'name': name, 'pci_bus_id': None, 'sources': []}


def _place_gpu(topo, gpu, matrix, links, sysfs_root):
    """NUMA node, CPU affinity, PCIe link (XML, else sysfs) and NVLink counts of one GPU."""
    label = 'GPU%d' % gpu['index']
    affinity = (matrix or {}).get('affinity', {}).get(label, {})
    gpu['cpu_affinity'] = affinity.get('cpu_affinity', '')
    numa = numa_from_affinity(affinity.get('numa_affinity'))
    pci = read_pci_device(sysfs_root, gpu.get('pci_bus_id'), topo['warnings']) if sysfs_root else None
    if pci is not None and pci['numa_node'] is not None:
        numa = pci['numa_node']
    gpu['numa_node'] = numa
    pcie = gpu.get('pcie') or {}
    if pci is not None:
        for key in ('gen_current', 'gen_max', 'width_current', 'width_max'):
            if pcie.get(key) is None:
                pcie[key] = pci[key]
    gpu['pcie'] = dict((k, pcie.get(k)) for k in ('gen_current', 'gen_max', 'width_current', 'width_max'))
    if links is None:
        gpu['nvlink_active'] = None
        gpu['nvlink_total'] = None
    else:
        gpu['nvlink_active'] = sum(1 for link in links['links'] if link['active'])
        gpu['nvlink_total'] = len(links['links'])


def _assemble_nics(topo, matrix, sysfs_root):
    ib = read_infiniband(sysfs_root) if sysfs_root else None
    if ib is None:
        topo['missing'].append('sys/class/infiniband')
        names = matrix['nics'] if matrix is not None else []
        topo['nics'] = [{'name': n, 'numa_node': None, 'pci_bus_id': None, 'netdevs': [], 'ports': []}
                        for n in names]
    else:
        topo['warnings'].extend(bounded(ib['warnings'], 'sysfs class/infiniband'))
        topo['nics'] = ib['nics']
        if matrix is not None:
            known = set(n['name'] for n in ib['nics'])
            for name in matrix['nics']:
                if name not in known:
                    topo['warnings'].append('%s is in the topology matrix but not in sysfs class/infiniband'
                                            % name)
    for nic in topo['nics']:
        if nic.get('numa_node') is None and nic.get('pci_bus_id'):
            pci = read_pci_device(sysfs_root, nic['pci_bus_id'], topo['warnings'])
            if pci is not None:
                nic['numa_node'] = pci['numa_node']

    numa_nodes = read_numa_nodes(sysfs_root, topo['warnings']) if sysfs_root else None
    if numa_nodes is None:
        topo['missing'].append('sys/devices/system/node')
    else:
        topo['numa_nodes'] = numa_nodes

    if matrix is not None and matrix['nics']:
        for gpu_name in matrix['gpus']:
            relation, nics = closest_nics(matrix['matrix'], gpu_name, matrix['nics'])
            topo['gpu_nic_affinity'][gpu_name] = {'relation': relation, 'nics': nics}


def _renumber_around_failed(gpus, errors):
    """nvidia-smi keeps the real index of every GPU and skips one whose handle failed.

    ``-q -x`` only lists the GPUs it could read, so after "Unable to determine
    the device handle for GPU1" the XML's second GPU is GPU2. The new message
    form names the index; a GPU the old form names by bus id only is placed in
    PCI bus order, the order nvidia-smi numbers GPUs in, when the XML's GPUs
    are in that order. Only called when the XML prints fewer GPUs than its
    ``attached_gpus``.
    """
    lost = [e for e in errors if not e.get('readable')]
    failed = set(e['gpu'] for e in lost if e.get('gpu') is not None)
    buses = [sysfs_pci_address(g.get('pci_bus_id')) for g in gpus]
    unplaced = [e for e in lost if e.get('gpu') is None and sysfs_pci_address(e.get('pci_bus_id'))]
    if unplaced and None not in buses and buses == sorted(buses):
        everything = sorted(buses + [sysfs_pci_address(e['pci_bus_id']) for e in lost])
        for error in unplaced:
            error['gpu'] = everything.index(sysfs_pci_address(error['pci_bus_id']))
            failed.add(error['gpu'])
    if not failed:
        return
    index = 0
    for gpu in gpus:
        while index in failed:
            index += 1
        gpu['index'] = index
        index += 1


def _name_warned_gpus(gpus, errors):
    """A warning about a GPU nvidia-smi still read (infoROM) names it by bus id: give it the GPU's index."""
    by_bus = dict((sysfs_pci_address(g.get('pci_bus_id')), g['index']) for g in gpus if g.get('pci_bus_id'))
    for error in errors:
        if error.get('gpu') is None:
            error['gpu'] = by_bus.get(sysfs_pci_address(error.get('pci_bus_id')))


def _strip_device_errors(text):
    """Drop the per-GPU error lines (device handle, infoROM) that precede real output: ``device_errors`` has them."""
    marks = ('Unable to determine the device handle', 'WARNING: infoROM is corrupted')
    if not any(mark in text for mark in marks):
        return text
    return '\n'.join(l for l in text.splitlines() if not any(mark in l for mark in marks))


def gather_bundle(bundle_dir, sysfs_root=None):
    """Facts from a capture bundle; sysfs defaults to ``<bundle>/sys``, procfs is ``<bundle>/proc``."""
    if sysfs_root is None:
        sysfs_root = os.path.join(bundle_dir, 'sys')
    topo = gather(BundleSource(bundle_dir), sysfs_root, os.path.join(bundle_dir, 'proc'))
    if not os.path.isdir(sysfs_root):
        topo['missing'].append('sys')
    return topo


def gather_live(run_command, nvidia_smi, sysfs_root='/sys', nvidia_smi_problem=None, limit=None, proc_root='/proc'):
    """Facts from the running node.

    ``run_command(argv)`` returns ``(rc, out, err)`` or ``(rc, out, err,
    timed_out)``. ``nvidia_smi`` None means the binary could not be used;
    ``nvidia_smi_problem`` says why (default: not found); ``limit`` is the
    time limit ``run_command`` applies to each call, for messages.
    """
    topo = gather(CommandSource(run_command, nvidia_smi, limit), sysfs_root, proc_root)
    if nvidia_smi is None:
        kind = 'nvidia_smi_missing' if nvidia_smi_problem is None else 'nvidia_smi_unusable'
        topo['driver_error'] = {'kind': kind, 'rc': None,
                                'message': nvidia_smi_problem or 'nvidia-smi was not found on the node'}
    return topo
