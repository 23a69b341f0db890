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

from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcb import pfc_priorities
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import (
    WHOLE_OUTPUT_RE, device_errors, exit_meaning)
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import closest_nics, numa_from_affinity
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import bounded, decode
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvidia_proc import parse_driver_version
from ansible_collections.gpuops.node.plugins.module_utils.node.rdma_sysfs import (
    ARPHRD_ETHER, active_netdevs, ipoib_module_loaded, ipoib_netdevs, netdev_type, netdevs, read_ecn, read_hw_counters,
    read_rdma_cm)
from ansible_collections.gpuops.node.plugins.module_utils.node import boot_kernel
from ansible_collections.gpuops.node.plugins.module_utils.node.efi import read_secure_boot
from ansible_collections.gpuops.node.plugins.module_utils.node.sysfs import (
    read_infiniband, read_numa_nodes, read_pci_device, read_pci_nvidia, read_value, sysfs_pci_address)
from ansible_collections.gpuops.node.plugins.module_utils.topology import dcgm as topology_dcgm
from ansible_collections.gpuops.node.plugins.module_utils.topology import mig as topology_mig
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import (
    DRIVER_FAILURES, PARSERS, PARTS, BundleSource, CommandSource, judge_dcb, judge_output)

SCHEMA_VERSION = 3
# the facts keys every snapshot has, in this schema
TOP_KEYS = ('schema_version', 'driver_loaded', 'driver_error', 'driver_version', 'driver_installed_version',
            'driver_installed', 'kernel_module', 'cuda_version',
            'gpu_count', 'gpus', 'gpu_processes', 'pci_gpus', 'nvswitch_count', 'matrix', 'gpu_nic_affinity', 'nics',
            'numa_nodes', 'ipoib_module_loaded', 'secure_boot', 'next_boot', 'outputs', 'device_errors', 'missing', 'errors',
            'warnings')
# keys added within this schema: a snapshot taken by an earlier release has none, and a baseline may lack them
OPTIONAL_KEYS = ('secure_boot', 'next_boot')


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
        'secure_boot': None,
        'next_boot': None,
        'matrix': {},
        'gpu_nic_affinity': {},
        'nics': [],
        'numa_nodes': {},
        'ipoib_module_loaded': None,
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
    _assemble_rdma(topo, source, sysfs_root)
    _assemble_bare(topo, sysfs_root, proc_root)
    if sysfs_root and not isinstance(source, BundleSource):
        # a bundle's sys tree holds what the capture took, never the firmware: nothing to say there
        topo['secure_boot'] = read_secure_boot(sysfs_root)
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
        topo['nics'] = [{'name': n, 'numa_node': None, 'pci_bus_id': None, 'netdevs': [], 'ports': [],
                         'ipoib': None, 'ipoib_active': None, 'roce': None} for n in names]
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


def _assemble_rdma(topo, source, sysfs_root):
    """IPoIB netdevs and ib_ipoib, per-port hw_counters and, for Ethernet NICs, the RoCE settings.

    What cannot be read is None (with the reason in ``roce.unreadable``), never a default: a check
    says ``not checked`` for it.
    """
    modules = bool(sysfs_root) and os.path.isdir(os.path.join(sysfs_root, 'module'))
    if modules:
        topo['ipoib_module_loaded'] = ipoib_module_loaded(sysfs_root)
    if not sysfs_root or not os.path.isdir(os.path.join(sysfs_root, 'class', 'infiniband')):
        return
    warnings = []
    for nic in topo['nics']:
        name = nic['name']
        hca = os.path.join(sysfs_root, 'class', 'infiniband', name)
        for port in nic['ports']:
            port['hw_counters'] = read_hw_counters(os.path.join(hca, 'ports', str(port['port'])), warnings)
        if os.path.isdir(os.path.join(hca, 'device', 'net')) or modules:
            # a capture bundle that did not copy the netdevs (and has no module/) cannot tell
            nic['ipoib'] = ipoib_netdevs(sysfs_root, name, warnings)
            nic['ipoib_active'] = active_netdevs(sysfs_root, nic['ipoib'], warnings)
        else:
            nic['ipoib'] = nic['ipoib_active'] = None
        ethernet = any((p.get('link_layer') or '').lower() == 'ethernet' for p in nic['ports'])
        nic['roce'] = _roce(topo, source, sysfs_root, nic, warnings) if ethernet else None
    topo['warnings'].extend(bounded(warnings, 'sysfs RDMA'))


def _roce_netdev(sysfs_root, nic, warnings):
    """The HCA's Ethernet netdev (type 1), else its first netdev; None without one."""
    names = netdevs(sysfs_root, nic['name'])
    for name in names:
        if netdev_type(sysfs_root, name, warnings) == ARPHRD_ETHER:
            return name
    return names[0] if names else None


def _keys_as_text(value):
    """Dict keys as strings, as JSON keeps them: the fact reads the same before and after a round trip."""
    if isinstance(value, dict):
        return dict((str(k), _keys_as_text(v)) for k, v in value.items())
    return value


def _roce(topo, source, sysfs_root, nic, warnings):
    """``{netdev, ecn, pfc, dscp_prio, rdma_cm, unreadable}`` of an Ethernet-link-layer NIC."""
    netdev = _roce_netdev(sysfs_root, nic, warnings)
    roce = {'netdev': netdev, 'ecn': None, 'pfc': None, 'dscp_prio': None,
            'rdma_cm': _keys_as_text(read_rdma_cm(sysfs_root, nic['name'], warnings)), 'unreadable': {}}
    if roce['rdma_cm'] is None:
        roce['unreadable']['rdma_cm'] = ('kernel/config/rdma_cm/%s does not exist (not created, or configfs not '
                                         'mounted)' % nic['name'])
    if netdev is None:
        for field in ('ecn', 'pfc', 'dscp_prio'):
            roce['unreadable'][field] = '%s has no netdev in sysfs' % nic['name']
        return roce
    roce['ecn'] = _keys_as_text(read_ecn(sysfs_root, netdev, warnings))
    if roce['ecn'] is None:
        roce['unreadable']['ecn'] = 'class/net/%s/ecn does not exist (no DCQCN support in its driver)' % netdev
    for query, field in (('pfc', 'pfc'), ('dscp_prio', 'dscp_prio')):
        label = source.dcb_label(query, netdev)
        result = source.read_dcb(query, netdev, warnings)
        if result is None:
            parsed, why = None, source.dcb_absent(query, netdev)
        else:
            rc, out, err, timed_out = result
            out = decode(out, label, warnings)
            err = decode(err, label + ' (stderr)', warnings)
            parsed, why = judge_dcb(label, (query, rc, out, err, timed_out), source.limit)
        if why is not None:
            roce['unreadable'][field] = why
            warnings.append('%s of %s not read: %s' % (field, netdev, why))
        elif field == 'pfc':
            roce['pfc'] = pfc_priorities(parsed)
        else:
            roce['dscp_prio'] = _keys_as_text(parsed)
    return roce


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
    topo['dcgm'] = topology_dcgm.read_bundle(bundle_dir, topo['warnings'])
    topo['mig'] = topology_mig.read_bundle(bundle_dir, topo, topo['warnings'])
    if not os.path.isdir(sysfs_root):
        topo['missing'].append('sys')
    return topo


def gather_live(run, nvidia_smi, sysfs_root='/sys', nvidia_smi_problem=None, limit=None, proc_root='/proc',
                dcb=None, dcb_problem=None, dcgmi=None, dcgmi_problem=None, boot=None):
    """Facts from the running node.

    ``run(argv)`` returns ``(rc, out, err)`` or ``(rc, out, err,
    timed_out)``, as the function of ``module_utils.command.runner`` does.
    ``nvidia_smi`` None means the binary could not be used;
    ``nvidia_smi_problem`` says why (default: not found); ``limit`` is the
    time limit ``run`` applies to each call, for messages. ``dcb`` is
    the dcb binary run for each RoCE netdev (None: not found, or
    ``dcb_problem``); ``dcgmi`` the dcgmi binary asked for the host engine's health report (None: not found, or
    ``dcgmi_problem``). ``boot`` (``{running, modinfo, boot_dir, modules_dir}``) has ``next_boot`` read
    (module_utils/node/boot_kernel.py); None leaves it null.
    """
    topo = gather(CommandSource(run, nvidia_smi, limit, dcb, dcb_problem), sysfs_root, proc_root)
    if boot is not None:
        topo['next_boot'] = boot_kernel.read_live(run, boot['running'], boot['modinfo'], boot['boot_dir'],
                                                  boot['modules_dir'], topo['warnings'])
    topo['dcgm'] = topology_dcgm.read_live(run, dcgmi, dcgmi_problem, limit, topo['warnings'])
    topo['mig'] = topology_mig.read_live(run, nvidia_smi, topo, limit, topo['warnings'])
    if nvidia_smi is None:
        kind = 'nvidia_smi_missing' if nvidia_smi_problem is None else 'nvidia_smi_unusable'
        topo['driver_error'] = {'kind': kind, 'rc': None,
                                'message': nvidia_smi_problem or 'nvidia-smi was not found on the node'}
    return topo
