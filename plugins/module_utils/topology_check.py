# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compares a ``gpu_topology`` snapshot with a node-class profile and with a baseline snapshot."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import re

from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_topo import (
    PCIE_RELATION_RANK, closest_nics, is_gpu)

_INT = 'int'
_BOOL = 'bool'
_STR = 'str'
_NUM = 'number'
_LIST = 'list of str'

# key -> (type, description); the single source for validation and docs
PROFILE_KEYS = {
    'gpu_count': (_INT, 'number of GPUs'),
    'gpu_model': (_STR, 'glob matched against every GPU name, e.g. "NVIDIA H100*"'),
    'driver_version': (_STR, 'glob matched against the driver version, e.g. "550.*"'),
    'pcie_gen_min': (_INT, 'lowest acceptable PCIe generation: supported (gen_max), and current when busy'),
    'pcie_width_min': (_INT, 'lowest acceptable current PCIe link width'),
    'nvlink_relation': (_STR, 'topology relation required between every GPU pair, e.g. "NV18"'),
    'nvlink_active_links': (_INT, 'active NVLink links required on every GPU'),
    'persistence_mode': (_STR, '"Enabled" or "Disabled" on every GPU'),
    'ecc_mode': (_STR, '"Enabled" or "Disabled" on every GPU'),
    'mig_mode': (_STR, '"Enabled" or "Disabled" on every GPU'),
    'compute_mode': (_STR, 'compute mode on every GPU, e.g. "Default"'),
    'max_ecc_uncorrected': (_INT, 'most uncorrectable ECC errors tolerated per GPU (volatile and aggregate)'),
    'allow_retired_pages_pending': (_BOOL, 'whether a GPU may have page retirement pending'),
    'allow_remapped_rows_pending': (_BOOL, 'whether a GPU may have row remapping pending or failed'),
    'nic_names': (_LIST, 'globs selecting the NICs the NIC checks apply to (default all)'),
    'nic_count': (_INT, 'number of selected NICs'),
    'nic_port_state': (_STR, 'state every port of the selected NICs must be in, e.g. "ACTIVE"'),
    'nic_link_layer': (_STR, '"InfiniBand" or "Ethernet" for every port of the selected NICs'),
    'nic_rate_min_gbps': (_NUM, 'lowest acceptable port rate in Gb/s'),
    'nic_link_downed_max': (_INT, 'most link_downed events tolerated per port of the selected NICs'),
    'gpu_nic_relation_max': (_STR, 'worst allowed relation from each GPU to its closest selected NIC'),
    'numa_balance': (_BOOL, 'GPUs must be spread evenly over the NUMA nodes that hold GPUs'),
}
_MODES = {'persistence_mode': ('Enabled', 'Disabled'), 'ecc_mode': ('Enabled', 'Disabled'),
          'mig_mode': ('Enabled', 'Disabled')}


def validate_profile(expected):
    """Error strings for a profile: unknown keys, wrong types, bad values."""
    if not isinstance(expected, dict):
        return ['expected must be a dict (the node-class profile), got %s' % type(expected).__name__]
    errors = []
    unknown = sorted(k for k in expected if k not in PROFILE_KEYS)
    if unknown:
        errors.append('unknown profile key(s): %s; known keys: %s'
                      % (', '.join(unknown), ', '.join(sorted(PROFILE_KEYS))))
    for key, value in expected.items():
        if key not in PROFILE_KEYS or value is None:
            continue
        kind = PROFILE_KEYS[key][0]
        good = {
            _INT: isinstance(value, int) and not isinstance(value, bool) and value >= 0,
            _BOOL: isinstance(value, bool),
            _STR: isinstance(value, str) and value != '',
            _NUM: isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
            _LIST: isinstance(value, list) and all(isinstance(v, str) for v in value),
        }[kind]
        if not good:
            errors.append('profile key %s must be a %s%s, got %r'
                          % (key, 'non-negative ' if kind in (_INT, _NUM) else '', kind, value))
            continue
        if key in _MODES and value not in _MODES[key]:
            errors.append('profile key %s must be one of %s, got %r' % (key, ', '.join(_MODES[key]), value))
        if key == 'gpu_nic_relation_max' and value not in PCIE_RELATION_RANK:
            errors.append('profile key gpu_nic_relation_max must be one of PIX, PXB, PHB, NODE, SYS, got %r'
                          % value)
        if key == 'nvlink_relation' and not re.match(r'^(NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$', value):
            errors.append('profile key nvlink_relation must be a relation such as NV18, got %r' % value)
    return errors


def _failure(check, subject, expected, actual, message):
    return {'check': check, 'subject': subject, 'expected': expected, 'actual': actual, 'message': message}


def _not_checked(check, subject, expected, why):
    return _failure(check, subject, expected, 'not checked', 'not checked: %s' % why)


def selected_nics(topology, expected):
    patterns = expected.get('nic_names')
    nics = topology.get('nics') or []
    if not patterns:
        return list(nics)
    return [n for n in nics if any(fnmatch.fnmatchcase(n['name'], p) for p in patterns)]


def check_profile(topology, expected):
    """Failures of ``topology`` against the node-class profile ``expected``."""
    failures = []
    exp = dict((k, v) for k, v in expected.items() if v is not None)
    gpu_keys = [k for k in exp if not k.startswith('nic_')]
    for error in topology.get('errors') or []:
        failures.append(_failure('output_unreadable', error.get('command'), 'readable output',
                                 'line %s' % error.get('line_no'), error.get('message')))
    for error in topology.get('device_errors') or []:
        subject = 'GPU%d' % error['gpu'] if error.get('gpu') is not None else error.get('pci_bus_id')
        failures.append(_failure('gpu_error', subject, 'readable', error.get('reason'),
                                 'nvidia-smi could not read %s (%s): %s'
                                 % (subject, error.get('pci_bus_id'), error.get('reason'))))
    if not topology.get('driver_loaded'):
        err = topology.get('driver_error') or {}
        if gpu_keys:
            failures.append(_failure('driver_loaded', 'node', True, False,
                                     err.get('message') or 'no nvidia-smi output was available'))
    else:
        failures.extend(_gpu_checks(topology, exp))
    failures.extend(_nic_checks(topology, exp))
    return failures


def _gpu_checks(topology, exp):
    failures = []
    gpus = topology.get('gpus') or []
    if 'gpu_count' in exp and topology.get('gpu_count') != exp['gpu_count']:
        failures.append(_failure('gpu_count', 'node', exp['gpu_count'], topology.get('gpu_count'),
                                 'expected %d GPUs, found %s' % (exp['gpu_count'], topology.get('gpu_count'))))
    if 'driver_version' in exp:
        actual = topology.get('driver_version')
        if actual is None or not fnmatch.fnmatchcase(actual, exp['driver_version']):
            failures.append(_failure('driver_version', 'node', exp['driver_version'], actual,
                                     'driver %s does not match %s' % (actual, exp['driver_version'])))
    for gpu in gpus:
        subject = 'GPU%d' % gpu['index']
        if 'gpu_model' in exp:
            name = gpu.get('name')
            if name is None or not fnmatch.fnmatchcase(name, exp['gpu_model']):
                failures.append(_failure('gpu_model', subject, exp['gpu_model'], name,
                                         '%s is %s, expected %s' % (subject, name, exp['gpu_model'])))
        pcie = gpu.get('pcie') or {}
        if 'pcie_gen_min' in exp and gpu.get('gpu_idle') is False and pcie.get('gen_current') is not None \
                and (pcie.get('gen_max') or 0) >= exp['pcie_gen_min'] and pcie['gen_current'] < exp['pcie_gen_min']:
            # a busy GPU runs its link at the trained speed; an idle one drops it to save power
            failures.append(_failure('pcie_gen', subject, '>= %s' % exp['pcie_gen_min'], pcie['gen_current'],
                                     '%s PCIe link runs at generation %s under load, expected at least %s'
                                     % (subject, pcie['gen_current'], exp['pcie_gen_min'])))
        for key, field, check, what in (('pcie_gen_min', 'gen_max', 'pcie_gen', 'PCIe generation'),
                                        ('pcie_width_min', 'width_current', 'pcie_width', 'PCIe width')):
            if key not in exp:
                continue
            actual = pcie.get(field)
            if actual is None:
                failures.append(_not_checked(check, subject, '>= %s' % exp[key], '%s of %s unknown' % (what, subject)))
            elif actual < exp[key]:
                failures.append(_failure(check, subject, '>= %s' % exp[key], actual,
                                         '%s %s is %s, expected at least %s' % (subject, what, actual, exp[key])))
        if 'nvlink_active_links' in exp:
            active = gpu.get('nvlink_active')
            if active is None:
                failures.append(_not_checked('nvlink_active_links', subject, exp['nvlink_active_links'],
                                             'no nvidia-smi nvlink -s output for %s' % subject))
            elif active < exp['nvlink_active_links']:
                failures.append(_failure('nvlink_active_links', subject, exp['nvlink_active_links'], active,
                                         '%s has %d active NVLink links, expected %d'
                                         % (subject, active, exp['nvlink_active_links'])))
        for key in ('persistence_mode', 'ecc_mode', 'mig_mode', 'compute_mode'):
            if key not in exp:
                continue
            actual = gpu.get(key)
            if actual is None or actual.lower() != exp[key].lower():
                failures.append(_failure(key, subject, exp[key], actual,
                                         '%s %s is %s, expected %s' % (subject, key.replace('_', ' '), actual, exp[key])))
        if 'max_ecc_uncorrected' in exp:
            values = [v for v in (gpu.get('ecc_uncorrected_volatile'), gpu.get('ecc_uncorrected_aggregate'))
                      if v is not None]
            if not values:
                failures.append(_not_checked('ecc_uncorrected', subject, '<= %d' % exp['max_ecc_uncorrected'],
                                             'ECC counters of %s are N/A' % subject))
            elif max(values) > exp['max_ecc_uncorrected']:
                failures.append(_failure('ecc_uncorrected', subject, '<= %d' % exp['max_ecc_uncorrected'], max(values),
                                         '%s has %d uncorrectable ECC errors' % (subject, max(values))))
        if exp.get('allow_retired_pages_pending') is False and gpu.get('retired_pages_pending'):
            failures.append(_failure('retired_pages_pending', subject, False, True,
                                     '%s has page retirement pending (reset the GPU)' % subject))
        if (exp.get('allow_remapped_rows_pending') is False and gpu.get('remapped_rows_pending') is None
                and gpu.get('retired_pages_pending') is None):
            failures.append(_not_checked('remapped_rows_pending', subject, False,
                                         'neither remapped rows nor retired pages are reported for %s' % subject))
        if exp.get('allow_remapped_rows_pending') is False and (gpu.get('remapped_rows_pending')
                                                                or gpu.get('remapping_failure')):
            what = 'row remapping failed' if gpu.get('remapping_failure') else 'row remapping pending (reset the GPU)'
            failures.append(_failure('remapped_rows_pending', subject, False, True, '%s has %s' % (subject, what)))
    if 'nvlink_relation' in exp:
        failures.extend(_nvlink_pairs(topology, exp['nvlink_relation']))
    if 'gpu_nic_relation_max' in exp:
        failures.extend(_gpu_nic(topology, exp))
    if exp.get('numa_balance'):
        failures.extend(_numa_balance(gpus))
    return failures


def _matrix_gpus(matrix):
    """GPU rows of the topo -m matrix, GPU0 first."""
    return sorted((n for n in matrix if is_gpu(n)), key=lambda n: int(n[3:]))


def _nvlink_pairs(topology, wanted):
    matrix = topology.get('matrix') or {}
    gpus = _matrix_gpus(matrix)
    if not gpus:
        return [_not_checked('nvlink_relation', 'node', wanted, 'no nvidia-smi topo -m output')]
    failures = []
    for i, left in enumerate(gpus):
        for right in gpus[i + 1:]:
            actual = matrix[left].get(right)
            if actual != wanted:
                failures.append(_failure('nvlink_relation', '%s-%s' % (left, right), wanted, actual,
                                         '%s to %s is %s, expected %s' % (left, right, actual, wanted)))
    return failures


def _gpu_nic(topology, exp):
    matrix = topology.get('matrix') or {}
    limit = exp['gpu_nic_relation_max']
    gpus = _matrix_gpus(matrix)
    patterns = exp.get('nic_names') or ['*']
    in_matrix = [n for n in matrix.get(gpus[0], {}) if not is_gpu(n)
                 and any(fnmatch.fnmatchcase(n, p) for p in patterns)] if gpus else []
    if not gpus or not in_matrix:
        return [_not_checked('gpu_nic_relation', 'node', '<= %s' % limit,
                             'no GPU-to-NIC relations in nvidia-smi topo -m output')]
    failures = []
    for gpu in gpus:
        relation, closest = closest_nics(matrix, gpu, in_matrix)
        if relation is None or PCIE_RELATION_RANK[relation] > PCIE_RELATION_RANK[limit]:
            failures.append(_failure('gpu_nic_relation', gpu, '<= %s' % limit, relation,
                                     '%s is %s from its closest NIC (%s), expected %s or closer'
                                     % (gpu, relation, ', '.join(closest), limit)))
    return failures


def _numa_balance(gpus):
    unknown = ['GPU%d' % g['index'] for g in gpus if g.get('numa_node') is None]
    if unknown:
        return [_not_checked('numa_balance', 'node', 'even', 'NUMA node unknown for %s' % ', '.join(unknown))]
    counts = {}
    for gpu in gpus:
        counts[gpu['numa_node']] = counts.get(gpu['numa_node'], 0) + 1
    if len(set(counts.values())) > 1:
        shown = dict(('numa%d' % k, v) for k, v in sorted(counts.items()))
        return [_failure('numa_balance', 'node', 'even', shown,
                         'GPUs per NUMA node are uneven: %s' % ', '.join('%s=%d' % kv for kv in sorted(shown.items())))]
    return []


_PORT_FIELDS = {'nic_port_state': 'state', 'nic_link_layer': 'link_layer', 'nic_rate_min_gbps': 'rate_gbps',
                'nic_link_downed_max': 'link_downed'}
_PORT_CHECKS = {'nic_port_state': 'nic_port_state', 'nic_link_layer': 'nic_link_layer',
                'nic_rate_min_gbps': 'nic_rate', 'nic_link_downed_max': 'nic_link_downed'}


def _nic_checks(topology, exp):
    nic_keys = [k for k in exp if k.startswith('nic_') and k != 'nic_names']
    if not nic_keys:
        return []
    failures = []
    nics = selected_nics(topology, exp)
    if 'nic_count' in exp and len(nics) != exp['nic_count']:
        failures.append(_failure('nic_count', 'node', exp['nic_count'], len(nics),
                                 'expected %d NICs%s, found %d (%s)'
                                 % (exp['nic_count'], ' matching %s' % exp['nic_names'] if exp.get('nic_names') else '',
                                    len(nics), ', '.join(n['name'] for n in nics) or 'none')))
    port_keys = [k for k in ('nic_port_state', 'nic_link_layer', 'nic_rate_min_gbps', 'nic_link_downed_max') if k in exp]
    if port_keys and 'sys/class/infiniband' in (topology.get('missing') or []):
        return failures + [_not_checked(_PORT_CHECKS[k], 'node', exp[k], 'sysfs class/infiniband is not available')
                           for k in port_keys]
    if port_keys and not nics:
        failures.extend(_not_checked(_PORT_CHECKS[k], 'node', exp[k], 'no NIC matches %s' % (exp.get('nic_names') or '*'))
                        for k in port_keys)
    for nic in nics:
        if port_keys and not nic.get('ports'):
            failures.append(_not_checked(_PORT_CHECKS[port_keys[0]], nic['name'], exp[port_keys[0]],
                                         '%s has no ports in sysfs' % nic['name']))
        for port in nic.get('ports') or []:
            subject = '%s/%s' % (nic['name'], port['port'])
            for key in port_keys:
                field = _PORT_FIELDS[key]
                value = (port.get('counters') or {}).get(field) if field == 'link_downed' else port.get(field)
                if value is None:
                    failures.append(_not_checked(_PORT_CHECKS[key], subject, exp[key],
                                                 '%s of %s is not in sysfs' % (field, subject)))
            if 'nic_port_state' in exp and port.get('state') not in (None, exp['nic_port_state']):
                message = '%s is %s (%s), expected %s' % (subject, port['state'], port.get('phys_state'),
                                                          exp['nic_port_state'])
                failures.append(_failure('nic_port_state', subject, exp['nic_port_state'], port['state'], message))
            if 'nic_link_layer' in exp and port.get('link_layer') not in (None, exp['nic_link_layer']):
                message = '%s link layer is %s, expected %s' % (subject, port['link_layer'], exp['nic_link_layer'])
                failures.append(_failure('nic_link_layer', subject, exp['nic_link_layer'], port['link_layer'], message))
            downed = (port.get('counters') or {}).get('link_downed')
            if 'nic_link_downed_max' in exp and downed is not None and downed > exp['nic_link_downed_max']:
                failures.append(_failure('nic_link_downed', subject, '<= %d' % exp['nic_link_downed_max'], downed,
                                         '%s link went down %d time(s)' % (subject, downed)))
            if 'nic_rate_min_gbps' in exp:
                rate = port.get('rate_gbps')
                if rate is not None and rate < exp['nic_rate_min_gbps']:
                    failures.append(_failure('nic_rate', subject, '>= %s' % exp['nic_rate_min_gbps'], rate,
                                             '%s runs at %s Gb/s, expected at least %s'
                                             % (subject, rate, exp['nic_rate_min_gbps'])))
    return failures


def _gpu_label(gpu):
    return 'GPU%d' % gpu['index']


def _gpu_key(gpu):
    return gpu.get('uuid') or gpu.get('pci_bus_id') or _gpu_label(gpu)


def _regression(check, subject, before, after, message):
    return {'check': check, 'subject': subject, 'before': before, 'after': after, 'message': message}


def find_regressions(baseline, current):
    """What got worse between the ``baseline`` snapshot and ``current``."""
    regressions = []
    key = _gpu_key
    if not all(g.get('uuid') for g in (baseline.get('gpus') or []) + (current.get('gpus') or [])):
        # one side has no -q -x output (GPUs from the matrix only): match by index
        key = _gpu_label
    before_gpus = dict((key(g), g) for g in baseline.get('gpus') or [])
    after_gpus = dict((key(g), g) for g in current.get('gpus') or [])
    if baseline.get('driver_loaded') and not current.get('driver_loaded'):
        err = (current.get('driver_error') or {}).get('message', 'driver not loaded')
        for gpu in baseline.get('gpus') or []:
            regressions.append(_regression('gpu_lost', 'GPU%d' % gpu['index'], gpu.get('pci_bus_id'), None,
                                           'GPU%d (%s) is gone: %s' % (gpu['index'], gpu.get('pci_bus_id'), err)))
        return regressions + _nic_regressions(baseline, current)
    for key, old in before_gpus.items():
        label = 'GPU%d' % old['index']
        new = after_gpus.get(key)
        if new is None:
            regressions.append(_regression('gpu_lost', label, old.get('pci_bus_id'), None,
                                           '%s (%s, %s) is gone' % (label, old.get('uuid'), old.get('pci_bus_id'))))
            continue
        if old.get('nvlink_active') is not None and new.get('nvlink_active') is not None \
                and new['nvlink_active'] < old['nvlink_active']:
            regressions.append(_regression('nvlink_lost', label, old['nvlink_active'], new.get('nvlink_active'),
                                           '%s active NVLink links dropped from %d to %s'
                                           % (label, old['nvlink_active'], new.get('nvlink_active'))))
        opcie, npcie = old.get('pcie') or {}, new.get('pcie') or {}
        for field, what in (('width_current', 'width'), ('gen_max', 'generation')):
            if opcie.get(field) is not None and npcie.get(field) is not None and npcie[field] < opcie[field]:
                regressions.append(_regression('pcie_downtrained', label, opcie[field], npcie[field],
                                               '%s PCIe %s dropped from %s to %s' % (label, what, opcie[field], npcie[field])))
        for field in ('ecc_uncorrected_volatile', 'ecc_uncorrected_aggregate'):
            if (new.get(field) or 0) > (old.get(field) or 0):
                regressions.append(_regression('ecc_errors_new', label, old.get(field), new.get(field),
                                               '%s %s rose from %s to %s' % (label, field.replace('_', ' '), old.get(field), new.get(field))))
        for field in ('retired_pages_pending', 'remapped_rows_pending', 'remapping_failure'):
            if new.get(field) and not old.get(field):
                regressions.append(_regression('ecc_errors_new', label, old.get(field), True,
                                               '%s now has %s' % (label, field.replace('_', ' '))))
    old_matrix, new_matrix = baseline.get('matrix') or {}, current.get('matrix') or {}
    for left, row in sorted(old_matrix.items()):
        for right, rel in sorted(row.items()):
            if not (rel.startswith('NV') and left < right and left in new_matrix):
                continue
            new_rel = new_matrix.get(left, {}).get(right)
            if right in new_matrix and new_rel != rel:
                regressions.append(_regression('nvlink_lost', '%s-%s' % (left, right), rel, new_rel,
                                               '%s to %s changed from %s to %s' % (left, right, rel, new_rel)))
    return regressions + _nic_regressions(baseline, current)


def _nic_regressions(baseline, current):
    regressions = []
    after = dict((n['name'], n) for n in current.get('nics') or [])
    for nic in baseline.get('nics') or []:
        new = after.get(nic['name'])
        if new is None:
            regressions.append(_regression('nic_lost', nic['name'], nic['name'], None, '%s is gone' % nic['name']))
            continue
        ports = dict((p['port'], p) for p in new.get('ports') or [])
        for port in nic.get('ports') or []:
            subject = '%s/%s' % (nic['name'], port['port'])
            now = ports.get(port['port'])
            if port.get('state') == 'ACTIVE' and (now is None or now.get('state') != 'ACTIVE'):
                regressions.append(_regression('nic_port_down', subject, 'ACTIVE', now and now.get('state'),
                                               '%s went from ACTIVE to %s' % (subject, now and now.get('state'))))
            elif now is not None and port.get('rate_gbps') and (now.get('rate_gbps') or 0) < port['rate_gbps']:
                regressions.append(_regression('nic_port_down', subject, port['rate_gbps'], now.get('rate_gbps'),
                                               '%s rate dropped from %s to %s Gb/s' % (subject, port['rate_gbps'], now.get('rate_gbps'))))
            for name, old in sorted((port.get('counters') or {}).items()):
                new_value = ((now or {}).get('counters') or {}).get(name)
                if new_value is not None and new_value > old:
                    regressions.append(_regression('nic_errors_new', subject, old, new_value,
                                                   '%s %s rose from %d to %d' % (subject, name, old, new_value)))
    return regressions
