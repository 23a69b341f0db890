# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``gpuops.node.mps`` role will write on a node, decided before it changes anything.

Pure functions over the role's variables and the ``gpu_topology`` facts (``gpus``: index, uuid, pci_bus_id,
mig_mode, mig_mode_pending, compute_mode); ``plugins/modules/mps_plan.py`` calls :func:`plan`. Every refusal
starts with the variable to change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import posixpath
import re

from ansible.module_utils.six import integer_types, string_types

from ansible_collections.gpuops.node.plugins.module_utils.pci import sysfs_pci_address

EXCLUSIVE = 'Exclusive_Process'
DEFAULT = 'Default'

SET_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9-]{0,31}$')
GROUP_RE = re.compile(r'^[a-z_][a-z0-9_-]{0,31}$')
# NVIDIA's documented form: <device ordinal>=<limit>[,...], the limit a number with an optional unit (1G, 512M, 512MB)
PINNED_RE = re.compile(r'^([0-9]+)=([1-9][0-9]*)([KMGT]B?)?$')
# the directories of the control pipe must not be where any local user can create files
UNSAFE_ROOTS = ('/tmp', '/var/tmp', '/dev/shm')
SERVICE_RE = re.compile(r'^[A-Za-z0-9:_.@-]+[.](service|scope)$')


def _gpu_label(gpu):
    return 'GPU%s (%s)' % (gpu.get('index'), gpu.get('pci_bus_id'))


def check_directory(name, value):
    """An error for a pipe or log directory that is relative, the root, or under a world-writable directory."""
    if not isinstance(value, string_types) or not value.startswith('/'):
        return '%s: %r must be an absolute path' % (name, value)
    path = posixpath.normpath(value)
    if path == '/' or path != value or value.startswith('//'):
        return '%s: %r must be a normalized absolute path other than /' % (name, value)
    for root in UNSAFE_ROOTS:
        if path == root or path.startswith(root + '/'):
            return ('%s: %s is under %s, where any local user can create the control pipe first and take it over '
                    'or deny it; use a directory only root can create entries in, such as /run/nvidia-mps'
                    % (name, value, root))
    return None


def parse_pinned_limit(value):
    """``(entries, error)``: ``[(ordinal, limit), ...]`` of ``mps_pinned_memory_limit``, or the reason it is bad."""
    entries = []
    for part in value.split(','):
        match = PINNED_RE.match(part.strip())
        if not match:
            return None, ("mps_pinned_memory_limit: %r must be <device>=<limit>[,...] with the limit a number and an "
                          "optional unit K, M, G or T (e.g. \"0=1G,1=2G\")" % value)
        ordinal = int(match.group(1))
        if ordinal in [o for o, _l in entries]:
            return None, 'mps_pinned_memory_limit: %r names device %d twice' % (value, ordinal)
        entries.append((ordinal, match.group(2) + (match.group(3) or '')))
    return entries, None


def check_values(values):
    """Errors of the variables that do not depend on the node."""
    errors = []
    percent = values.get('mps_active_thread_percentage')
    if percent is not None and (isinstance(percent, bool) or not isinstance(percent, integer_types) or not 1 <= percent <= 100):
        errors.append('mps_active_thread_percentage: %r is not a percentage from 1 to 100 (or null for all threads)'
                      % (percent,))
    for name in ('mps_pipe_dir', 'mps_log_dir'):
        error = check_directory(name, values.get(name))
        if error:
            errors.append(error)
    if values.get('mps_pipe_dir') and values.get('mps_pipe_dir') == values.get('mps_log_dir'):
        errors.append('mps_log_dir: must not be mps_pipe_dir (%s)' % values.get('mps_pipe_dir'))
    group = values.get('mps_group')
    if not isinstance(group, string_types) or not GROUP_RE.match(group):
        errors.append('mps_group: %r is not a group name (lowercase letters, digits, _ and -)' % (group,))
    for unit in values.get('mps_client_services') or []:
        if not isinstance(unit, string_types) or not SERVICE_RE.match(unit) or unit.startswith('gpuops-mps@'):
            errors.append('mps_client_services: %r is not the name of a service unit (e.g. inference.service)'
                          % (unit,))
    return errors


def _find_gpu(gpus, token):
    """The GPU an entry of ``devices`` names: an index (int or digits), a UUID or a PCI bus id."""
    if isinstance(token, bool):
        return None
    if isinstance(token, integer_types) or (isinstance(token, string_types) and token.strip().isdigit()):
        index = int(token)
        return next((g for g in gpus if g.get('index') == index), None)
    if not isinstance(token, string_types):
        return None
    if token.strip().upper().startswith('GPU-'):
        return next((g for g in gpus if (g.get('uuid') or '').lower() == token.strip().lower()), None)
    address = sysfs_pci_address(token)
    if address is None:
        return None
    return next((g for g in gpus if sysfs_pci_address(g.get('pci_bus_id')) == address), None)


def resolve_sets(sets, gpus):
    """``(resolved, errors)``: each set of ``mps_gpu_sets`` with its GPUs, in the order given."""
    errors, resolved, owner = [], [], {}
    if not isinstance(sets, list) or not sets:
        return [], ['mps_gpu_sets: must list at least one set ({name: all, devices: all}), or set mps_enabled: false']
    for position, entry in enumerate(sets):
        where = 'mps_gpu_sets[%d]' % position
        if not isinstance(entry, dict) or sorted(entry) != ['devices', 'name']:
            errors.append('%s: %r must have exactly the keys name and devices' % (where, entry))
            continue
        name, devices = entry['name'], entry['devices']
        if not isinstance(name, string_types) or not SET_NAME_RE.match(name):
            errors.append('%s.name: %r must be 1-32 lowercase letters, digits and -, starting with a letter or digit'
                          % (where, name))
            continue
        if name in [s['name'] for s in resolved]:
            errors.append('%s.name: %s names two sets' % (where, name))
            continue
        if devices == 'all':
            chosen = list(gpus)
        elif isinstance(devices, list) and devices:
            chosen = []
            for token in devices:
                gpu = _find_gpu(gpus, token)
                if gpu is None:
                    errors.append('%s.devices: %r is not a GPU of this node (an index, a UUID or a PCI bus id; the '
                                  'node has %s)' % (where, token, ', '.join(_gpu_label(g) for g in gpus) or 'none'))
                elif gpu not in chosen:
                    chosen.append(gpu)
        else:
            errors.append('%s.devices: %r must be all or a non-empty list of GPU indexes, UUIDs or PCI bus ids'
                          % (where, devices))
            continue
        for gpu in chosen:
            if gpu.get('index') in owner:
                errors.append('%s.devices: %s is in the sets %s and %s; a GPU belongs to one set'
                              % (where, _gpu_label(gpu), owner[gpu.get('index')], name))
            owner.setdefault(gpu.get('index'), name)
            migs = [m for m in (gpu.get('mig_mode'), gpu.get('mig_mode_pending')) if m]
            if any(m.lower() == 'enabled' for m in migs):
                errors.append('mps_gpu_sets: %s of set %s has MIG mode %s (current %s, pending %s); this role runs MPS '
                              'on whole GPUs only: take the GPU out of the set or disable MIG on it'
                              % (_gpu_label(gpu), name, 'Enabled', gpu.get('mig_mode'), gpu.get('mig_mode_pending')))
            if not gpu.get('uuid') or not gpu.get('pci_bus_id'):
                errors.append('mps_gpu_sets: the UUID or PCI bus id of GPU%s (set %s) could not be read'
                              % (gpu.get('index'), name))
        if not chosen and devices == 'all':
            errors.append('%s.devices: all selects no GPU: the driver lists none (is it loaded?)' % where)
        resolved.append({'name': name, 'gpus': chosen})
    return resolved, errors


def _env(values, name, gpus):
    env = [('CUDA_VISIBLE_DEVICES', ','.join(g['uuid'] for g in gpus)),
           ('CUDA_MPS_PIPE_DIRECTORY', posixpath.join(values['mps_pipe_dir'], name)),
           ('CUDA_MPS_LOG_DIRECTORY', posixpath.join(values['mps_log_dir'], name))]
    if values.get('mps_active_thread_percentage') is not None:
        env.append(('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', str(values['mps_active_thread_percentage'])))
    if values.get('mps_pinned_memory_limit'):
        env.append(('CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', values['mps_pinned_memory_limit'].replace(' ', '')))
    # for the unit's ExecStartPre: nvidia-smi -i takes the bus ids comma separated
    env.append(('GPUOPS_MPS_GPUS', ','.join(g['pci_bus_id'] for g in gpus)))
    return env


def plan(values, facts, recorded=None):
    """The role's plan: ``errors``, ``sets`` (name, gpus, env lines), ``compute_modes`` (bus id -> the mode
    wanted on every GPU the role sets or had set), ``exclusive`` (the bus ids it sets), ``client_env``."""
    errors = check_values(values)
    gpus = [g for g in (facts or {}).get('gpus') or [] if g.get('index') is not None]
    enabled = bool(values.get('mps_enabled'))
    # a bare node whose driver this run installs: no GPU answers yet; the values are checked, the sets wait for the
    # rollout's reboot (the role is applied again after it)
    waits = (facts or {}).get('driver_loaded') is False
    result = {'enabled': enabled, 'sets': [], 'compute_modes': {}, 'exclusive': [], 'client_env': [],
              'errors': errors, 'waits_for_driver': waits}
    if waits:
        limit = values.get('mps_pinned_memory_limit')
        error = parse_pinned_limit(limit)[1] if limit else None
        if error:
            errors.append(error)
        return result
    by_bus = dict((sysfs_pci_address(g.get('pci_bus_id')), g) for g in gpus)
    recorded_gpus = [by_bus[sysfs_pci_address(b)] for b in recorded or [] if sysfs_pci_address(b) in by_bus]
    if enabled:
        resolved, set_errors = resolve_sets(values.get('mps_gpu_sets'), gpus)
        errors.extend(set_errors)
        limit = values.get('mps_pinned_memory_limit')
        if limit:
            entries, error = parse_pinned_limit(limit)
            if error:
                errors.append(error)
            else:
                for ordinal, _value in entries:
                    short = [s['name'] for s in resolved if s['gpus'] and ordinal >= len(s['gpus'])]
                    if short:
                        errors.append('mps_pinned_memory_limit: device %d does not exist in the set(s) %s (devices '
                                      'are numbered 0.. within each set)' % (ordinal, ', '.join(short)))
        if errors:
            return result
        for entry in resolved:
            env = _env(values, entry['name'], entry['gpus'])
            result['sets'].append({
                'name': entry['name'],
                'gpus': [{'index': g['index'], 'uuid': g['uuid'], 'pci_bus_id': g['pci_bus_id'],
                          'compute_mode': g.get('compute_mode')} for g in entry['gpus']],
                'pipe_dir': dict(env)['CUDA_MPS_PIPE_DIRECTORY'],
                'log_dir': dict(env)['CUDA_MPS_LOG_DIRECTORY'],
                'env_lines': ['%s=%s' % pair for pair in env],
            })
        wanted = [g for s in resolved for g in s['gpus']]
        result['exclusive'] = sorted(g['pci_bus_id'] for g in wanted)
        first = result['sets'][0]
        result['client_env'] = ['CUDA_MPS_PIPE_DIRECTORY=%s' % first['pipe_dir'],
                                'CUDA_MPS_LOG_DIRECTORY=%s' % first['log_dir']]
    elif errors:
        return result
    else:
        wanted = []
    modes = dict((g['pci_bus_id'], DEFAULT) for g in recorded_gpus)
    modes.update((g['pci_bus_id'], EXCLUSIVE) for g in wanted)
    result['compute_modes'] = modes
    return result
