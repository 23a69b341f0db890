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

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_errors import (
    classify_nvsmi_failure, device_errors)
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_nvlink import parse_nvlink_status
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_topo import (
    closest_nics, numa_from_affinity, parse_topo_matrix)
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_xml import parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.module_utils.sysfs import (
    read_infiniband, read_numa_nodes, read_pci_device)

# part -> (bundle file name, nvidia-smi arguments, parser)
OUTPUTS = (
    ('xml', 'nvidia-smi-q-x.xml', ['-q', '-x'], parse_nvsmi_xml),
    ('topo', 'nvidia-smi-topo-m.txt', ['topo', '-m'], parse_topo_matrix),
    ('nvlink', 'nvidia-smi-nvlink-s.txt', ['nvlink', '-s'], parse_nvlink_status),
)
# failures that mean nvidia-smi cannot talk to the GPUs at all, whatever was asked
DRIVER_FAILURES = ('driver_not_loaded', 'nvml_mismatch', 'nvml_missing', 'no_devices', 'permission_denied')
BUNDLE_FILES = dict((part, fname) for part, fname, _args, _parser in OUTPUTS)
NVSMI_ARGS = dict((part, args) for part, _fname, args, _parser in OUTPUTS)


class BundleSource(object):
    """Reads outputs from a capture bundle directory.

    ``<file>.rc`` beside an output holds nvidia-smi's exit status when the
    capture recorded a failure; without it the status is taken as 0.
    """

    def __init__(self, bundle_dir):
        self.bundle_dir = bundle_dir

    def label(self, part):
        return BUNDLE_FILES[part]

    def read(self, part):
        path = os.path.join(self.bundle_dir, BUNDLE_FILES[part])
        if not os.path.isfile(path):
            return None
        with open(path, 'rb') as handle:
            text = handle.read().decode('utf-8', 'replace')
        rc = 0
        rc_path = path + '.rc'
        if os.path.isfile(rc_path):
            with open(rc_path) as handle:
                value = handle.read().strip()
            rc = int(value) if value.lstrip('-').isdigit() else 1
        return rc, text, ''


class CommandSource(object):
    """Runs nvidia-smi on the node through a ``run_command(argv) -> (rc, out, err)`` callable."""

    def __init__(self, run_command, nvidia_smi):
        self.run_command = run_command
        self.nvidia_smi = nvidia_smi

    def label(self, part):
        return ' '.join(['nvidia-smi'] + NVSMI_ARGS[part])

    def read(self, part):
        if self.nvidia_smi is None:
            return None
        rc, out, err = self.run_command([self.nvidia_smi] + NVSMI_ARGS[part])
        return rc, out or '', err or ''


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def gather(source, sysfs_root):
    """Build the ``gpu_topology`` dict from a source and a sysfs root.

    Never raises on bad input: unreadable outputs are listed in ``errors``
    (command, line and reason) and the facts they would have given are left
    out; absent outputs are listed in ``missing``.
    """
    topo = {
        'driver_loaded': False,
        'driver_error': None,
        'driver_version': None,
        'cuda_version': None,
        'gpu_count': 0,
        'gpus': [],
        'matrix': {},
        'gpu_nic_affinity': {},
        'nics': [],
        'numa_nodes': {},
        'device_errors': [],
        'missing': [],
        'errors': [],
        'warnings': [],
    }
    parsed = {}
    for part, _fname, _args, parser in OUTPUTS:
        result = source.read(part)
        if result is None:
            topo['missing'].append(source.label(part))
            continue
        rc, out, err = result
        both = out + ('\n' if out and err else '') + err
        failure = classify_nvsmi_failure(rc, both)
        topo['device_errors'].extend(e for e in device_errors(both) if e not in topo['device_errors'])
        if failure is not None:
            failed = '%s failed (exit %s): %s' % (source.label(part), rc, failure['message'])
        if failure is not None and (failure['kind'] in DRIVER_FAILURES or not out.strip()):
            if topo['driver_error'] is None and (part == 'xml' or failure['kind'] in DRIVER_FAILURES):
                topo['driver_error'] = failure
            elif part != 'xml':
                topo['warnings'].append(failed)
            if failure['kind'] == 'driver_not_loaded':
                # every other query fails the same way; nothing more to read
                break
            continue
        try:
            parsed[part] = parser(_strip_device_errors(out))
        except ParseError as exc:
            if failure is None:
                topo['errors'].append(exc.to_dict())
            elif part == 'xml':
                topo['driver_error'] = topo['driver_error'] or failure
            else:
                topo['warnings'].append(failed)
            continue
        if failure is not None:
            # a per-GPU failure (GPU lost, one query unsupported): what was printed for the other GPUs is kept
            topo['warnings'].append('%s exited %s (%s); kept the output it printed'
                                    % (source.label(part), rc, failure['message']))
        topo['warnings'].extend(parsed[part].get('warnings', []))

    xml = parsed.get('xml')
    matrix = parsed.get('topo')
    nvlink = parsed.get('nvlink')
    topo['driver_loaded'] = topo['driver_error'] is None and (xml is not None or matrix is not None
                                                              or nvlink is not None)
    if xml is not None:
        topo['driver_version'] = xml['driver_version']
        topo['cuda_version'] = xml['cuda_version']
        gpus = xml['gpus']
        _renumber_around_failed(gpus, topo['device_errors'])
    elif matrix is not None:
        gpus = [{'index': int(name[3:]), 'uuid': None, 'name': None, 'pci_bus_id': None}
                for name in matrix['gpus']]
    else:
        gpus = []

    nvlink_by_index = {}
    nvlink_by_uuid = {}
    if nvlink is not None:
        nvlink_by_index = dict((g['index'], g) for g in nvlink['gpus'])
        nvlink_by_uuid = dict((g['uuid'], g) for g in nvlink['gpus'] if g['uuid'])

    for gpu in gpus:
        label = 'GPU%d' % gpu['index']
        affinity = (matrix or {}).get('affinity', {}).get(label, {})
        gpu['cpu_affinity'] = affinity.get('cpu_affinity', '')
        numa = numa_from_affinity(affinity.get('numa_affinity'))
        pci = read_pci_device(sysfs_root, gpu.get('pci_bus_id')) if sysfs_root else None
        if pci is not None and pci['numa_node'] is not None:
            numa = pci['numa_node']
        gpu['numa_node'] = numa
        pcie = gpu.get('pcie') or {}
        if pci is not None:
            for key in ('gen_current', 'gen_max', 'width_current', 'width_max'):
                if pcie.get(key) is None:
                    pcie[key] = pci[key]
        gpu['pcie'] = dict((k, pcie.get(k)) for k in ('gen_current', 'gen_max', 'width_current', 'width_max'))
        links = nvlink_by_uuid.get(gpu.get('uuid')) or nvlink_by_index.get(gpu['index'])
        if links is None:
            gpu['nvlink_active'] = None
            gpu['nvlink_total'] = None
        else:
            gpu['nvlink_active'] = sum(1 for link in links['links'] if link['active'])
            gpu['nvlink_total'] = len(links['links'])
    topo['gpus'] = gpus
    topo['gpu_count'] = len(gpus)

    if matrix is not None:
        topo['matrix'] = matrix['matrix']

    ib = read_infiniband(sysfs_root) if sysfs_root else None
    if ib is None:
        topo['missing'].append('sys/class/infiniband')
        names = matrix['nics'] if matrix is not None else []
        topo['nics'] = [{'name': n, 'numa_node': None, 'pci_bus_id': None, 'netdevs': [], 'ports': []}
                        for n in names]
    else:
        topo['warnings'].extend(ib['warnings'])
        topo['nics'] = ib['nics']
        if matrix is not None:
            known = set(n['name'] for n in ib['nics'])
            for name in matrix['nics']:
                if name not in known:
                    topo['warnings'].append('%s is in the topology matrix but not in sysfs class/infiniband'
                                            % name)
    for nic in topo['nics']:
        if nic.get('numa_node') is None and nic.get('pci_bus_id'):
            pci = read_pci_device(sysfs_root, nic['pci_bus_id'])
            if pci is not None:
                nic['numa_node'] = pci['numa_node']

    numa_nodes = read_numa_nodes(sysfs_root) if sysfs_root else None
    if numa_nodes is None:
        topo['missing'].append('sys/devices/system/node')
    else:
        topo['numa_nodes'] = numa_nodes

    if matrix is not None and matrix['nics']:
        for gpu_name in matrix['gpus']:
            relation, nics = closest_nics(matrix['matrix'], gpu_name, matrix['nics'])
            topo['gpu_nic_affinity'][gpu_name] = {'relation': relation, 'nics': nics}
    return topo


def _renumber_around_failed(gpus, errors):
    """nvidia-smi keeps the real index of every GPU and skips one whose handle failed.

    ``-q -x`` only lists the GPUs it could read, so after "Unable to determine
    the device handle for GPU1" the XML's second GPU is GPU2. The new message
    form names the index; the old one (bus id only) cannot be placed.
    """
    failed = set(e['gpu'] for e in errors if e.get('gpu') is not None)
    if not failed:
        return
    index = 0
    for gpu in gpus:
        while index in failed:
            index += 1
        gpu['index'] = index
        index += 1


def _strip_device_errors(text):
    """Drop "Unable to determine the device handle ..." lines that precede real output."""
    if 'Unable to determine the device handle' not in text:
        return text
    return '\n'.join(l for l in text.splitlines() if 'Unable to determine the device handle' not in l)


def gather_bundle(bundle_dir, sysfs_root=None):
    """Facts from a capture bundle; sysfs defaults to ``<bundle>/sys``."""
    if sysfs_root is None:
        sysfs_root = os.path.join(bundle_dir, 'sys')
    topo = gather(BundleSource(bundle_dir), sysfs_root)
    if not os.path.isdir(sysfs_root):
        topo['missing'].append('sys')
    return topo


def gather_live(run_command, nvidia_smi, sysfs_root='/sys'):
    """Facts from the running node. ``nvidia_smi`` None means the binary was not found."""
    topo = gather(CommandSource(run_command, nvidia_smi), sysfs_root)
    if nvidia_smi is None:
        topo['driver_error'] = {'kind': 'nvidia_smi_missing', 'rc': None,
                                'message': 'nvidia-smi was not found on the node'}
    return topo
