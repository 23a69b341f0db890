# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A baseline ``gpu_topology`` snapshot: what it must look like, and what got worse since it was taken."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.node.rdma_sysfs import RETRANS_COUNTERS
from ansible_collections.gpuops.node.plugins.module_utils.node.sysfs import ERROR_COUNTERS
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import OPTIONAL_KEYS, SCHEMA_VERSION, TOP_KEYS
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import PARTS

_RESULT_KEYS = ('gpu_topology', 'ansible_facts', 'failures', 'regressions', 'passed', 'changed')
_OPT_INT = ('int', 'null')
_OPT_STR = ('str', 'null')
_OPT_BOOL = ('bool', 'null')
# field -> allowed types, for the parts of a snapshot the regressions read
_GPU_FIELDS = {'index': ('int',), 'uuid': _OPT_STR, 'serial': _OPT_STR, 'name': _OPT_STR, 'pci_bus_id': _OPT_STR,
               'nvlink_active': _OPT_INT, 'pcie': ('dict', 'null'), 'ecc_uncorrected_volatile': _OPT_INT,
               'ecc_uncorrected_aggregate': _OPT_INT, 'retired_pages_pending': _OPT_BOOL,
               'remapped_rows_pending': _OPT_BOOL, 'remapping_failure': _OPT_BOOL}
_PCIE_FIELDS = ('gen_current', 'gen_max', 'width_current', 'width_max')
_NIC_FIELDS = {'name': ('str',), 'ports': ('list',)}
_PORT_FIELDS = {'port': ('int',), 'state': _OPT_STR, 'rate_gbps': ('number', 'null'), 'counters': ('dict', 'null'),
                'hw_counters': ('dict', 'null')}
WANTED = ('a gpu_topology snapshot of schema_version %d, such as the gpu_topology a gpu_topology_check task '
          'returned before the change' % SCHEMA_VERSION)


def _kind(value):
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'number'
    if isinstance(value, str):
        return 'str'
    if isinstance(value, dict):
        return 'dict'
    if isinstance(value, list):
        return 'list'
    return type(value).__name__


def _fits(value, allowed):
    kind = _kind(value)
    return kind in allowed or (kind == 'int' and 'number' in allowed)


def _fields(where, item, fields, errors):
    if not isinstance(item, dict):
        errors.append('%s is a %s, not a dict' % (where, _kind(item)))
        return
    for name, allowed in sorted(fields.items()):
        if name not in item and 'null' in allowed:
            continue
        if name not in item:
            errors.append('%s has no %s' % (where, name))
        elif not _fits(item[name], allowed):
            errors.append('%s.%s is %r, expected %s' % (where, name, item[name], ' or '.join(allowed)))


def validate_baseline(baseline):
    """Error strings for a baseline: anything but a snapshot of this schema is refused, saying what it got."""
    if not isinstance(baseline, dict):
        return ['baseline is a %s; wanted %s' % (_kind(baseline), WANTED)]
    if not baseline:
        return ['baseline is empty ({}); wanted %s' % WANTED]
    if any(k in baseline for k in _RESULT_KEYS if k not in TOP_KEYS) and 'gpus' not in baseline:
        keys = ', '.join(sorted(k for k in baseline if k in _RESULT_KEYS))
        return ['baseline is a registered task result or a wrapper (keys %s), not a snapshot: pass its gpu_topology, '
                'for example baseline: "{{ pre_check.gpu_topology }}"' % keys]
    version = baseline.get('schema_version')
    if version != SCHEMA_VERSION:
        return ['baseline has schema_version %r; this collection reads %d: take a new snapshot with it (a snapshot '
                'from an older collection or a hand-written dict cannot be compared safely)'
                % (version, SCHEMA_VERSION)]
    missing = [k for k in TOP_KEYS if k not in baseline and k not in OPTIONAL_KEYS]
    if missing:
        return ['baseline lacks %s; wanted %s' % (', '.join(missing), WANTED)]
    errors = []
    if not isinstance(baseline['driver_loaded'], bool):
        errors.append('baseline.driver_loaded is %r, expected bool' % baseline['driver_loaded'])
    for name in ('gpus', 'nics'):
        if not isinstance(baseline[name], list):
            errors.append('baseline.%s is a %s, expected list' % (name, _kind(baseline[name])))
    for name in ('matrix', 'outputs'):
        if not isinstance(baseline[name], dict):
            errors.append('baseline.%s is a %s, expected dict' % (name, _kind(baseline[name])))
    if errors:
        return errors
    for i, gpu in enumerate(baseline['gpus']):
        _fields('baseline.gpus[%d]' % i, gpu, _GPU_FIELDS, errors)
        if isinstance(gpu, dict) and isinstance(gpu.get('pcie'), dict):
            _fields('baseline.gpus[%d].pcie' % i, gpu['pcie'], dict((k, _OPT_INT) for k in _PCIE_FIELDS), errors)
    for i, nic in enumerate(baseline['nics']):
        _fields('baseline.nics[%d]' % i, nic, _NIC_FIELDS, errors)
        for j, port in enumerate(nic.get('ports') or [] if isinstance(nic, dict) else []):
            where = 'baseline.nics[%d].ports[%d]' % (i, j)
            _fields(where, port, _PORT_FIELDS, errors)
            for field in ('counters', 'hw_counters'):
                counters = port.get(field) if isinstance(port, dict) else None
                for name, value in sorted((counters if isinstance(counters, dict) else {}).items()):
                    if _kind(value) != 'int' or value < 0:
                        errors.append('%s.%s.%s is %r, expected a non-negative int' % (where, field, name, value))
    for left, row in sorted(baseline['matrix'].items()):
        if not isinstance(row, dict) or not all(isinstance(v, str) for v in row.values()):
            errors.append('baseline.matrix.%s must map device names to relation strings' % left)
    for part, out in sorted(baseline['outputs'].items()):
        if not isinstance(out, dict) or not isinstance(out.get('status'), str):
            errors.append('baseline.outputs.%s must be a dict with a status string, got %r' % (part, out))
    _unique('baseline.gpus', [g.get('index') for g in baseline['gpus'] if isinstance(g, dict)], errors)
    _unique('baseline.nics', [n.get('name') for n in baseline['nics'] if isinstance(n, dict)], errors)
    return errors[:10] + (['... %d more' % (len(errors) - 10)] if len(errors) > 10 else [])


def _unique(where, values, errors):
    seen = set()
    for value in values:
        if value in seen:
            errors.append('%s lists %r twice' % (where, value))
        seen.add(value)


def baseline_gaps(baseline, current):
    """Outputs the baseline could not read and the node can now: what they cover was not compared.

    Not a regression (a bare node before its driver is installed has nothing to compare), but said."""
    gaps = []
    for part in PARTS:
        before_ok, before = _readable(baseline, part)
        after_ok, after = _readable(current, part)
        if after_ok and not before_ok:
            gaps.append('%s was %s in the baseline: %s regressions were not compared'
                        % (after.get('source') or part, before.get('status') or 'missing', _COVERS[part]))
    return gaps


def other_node(baseline, current):
    """A message when the baseline was taken on another node (no GPU UUID or serial in common), else None."""
    def ids(snapshot):
        found = set()
        for gpu in snapshot.get('gpus') or []:
            found.update(v for v in (gpu.get('uuid'), gpu.get('serial')) if v)
        return found
    before, after = ids(baseline), ids(current)
    if before and after and not before & after:
        return ('baseline belongs to another node: no GPU UUID or serial in common (baseline %s; this node %s)'
                % (', '.join(sorted(before)[:2]), ', '.join(sorted(after)[:2])))
    return None


def _gpu_label(gpu):
    return 'GPU%d' % gpu['index']


def _gpu_key(gpu):
    return gpu.get('uuid') or gpu.get('pci_bus_id') or _gpu_label(gpu)


def _regression(check, subject, before, after, message):
    return {'check': check, 'subject': subject, 'before': before, 'after': after, 'message': message}


NOT_CHECKED = 'not checked'
_READABLE = ('ok', 'exit')
_COVERS = {'xml': 'GPU, PCIe and ECC', 'topo': 'NVLink pair', 'nvlink': 'NVLink link'}


def _readable(snapshot, part):
    out = (snapshot.get('outputs') or {}).get(part) or {}
    return out.get('status') in _READABLE and out.get('complete', True), out


def _not_compared(baseline, current):
    """An output read before the change and not now: what it covers cannot be compared, which is not a pass."""
    regressions = []
    for part in PARTS:
        before_ok, before = _readable(baseline, part)
        after_ok, after = _readable(current, part)
        if before_ok and not after_ok:
            source = after.get('source') or before.get('source') or part
            regressions.append(_regression(
                'not_compared', source, before.get('status'), after.get('status') or 'missing',
                '%s was read before the change and is %s now: %s regressions not checked'
                % (source, after.get('status') or 'missing', _COVERS[part])))
    return regressions


def _gone(check, label, what, old, new):
    """A value read before the change that cannot be read now."""
    if old is not None and new is None:
        return [_regression(check, label, old, NOT_CHECKED, '%s %s was %s before the change and cannot be read now'
                            % (label, what, old))]
    return []


def find_regressions(baseline, current):
    """What got worse between the ``baseline`` snapshot and ``current``.

    A value read before the change that cannot be read now is a regression
    whose ``after`` is ``not checked``; an output read before and not now is a
    ``not_compared`` regression. Only a real driver failure (``driver_error``)
    reports every GPU lost.
    """
    regressions = _not_compared(baseline, current)
    key = _gpu_key
    if not all(g.get('uuid') for g in (baseline.get('gpus') or []) + (current.get('gpus') or [])):
        # one side has no -q -x output (GPUs from the matrix only): match by index
        key = _gpu_label
    before_gpus = dict((key(g), g) for g in baseline.get('gpus') or [])
    after_gpus = dict((key(g), g) for g in current.get('gpus') or [])
    if baseline.get('driver_loaded') and not current.get('driver_loaded'):
        err = (current.get('driver_error') or {}).get('message')
        if err:
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
        regressions.extend(_gpu_regressions(label, old, new))
    return regressions + _matrix_regressions(baseline, current) + _nic_regressions(baseline, current)


def _gpu_regressions(label, old, new):
    regressions = _gone('nvlink_lost', label, 'active NVLink links', old.get('nvlink_active'), new.get('nvlink_active'))
    if old.get('nvlink_active') is not None and new.get('nvlink_active') is not None \
            and new['nvlink_active'] < old['nvlink_active']:
        regressions.append(_regression('nvlink_lost', label, old['nvlink_active'], new.get('nvlink_active'),
                                       '%s active NVLink links dropped from %d to %s'
                                       % (label, old['nvlink_active'], new.get('nvlink_active'))))
    opcie, npcie = old.get('pcie') or {}, new.get('pcie') or {}
    for field, what in (('width_current', 'width'), ('gen_max', 'generation')):
        regressions.extend(_gone('pcie_downtrained', label, 'PCIe ' + what, opcie.get(field), npcie.get(field)))
        if opcie.get(field) is not None and npcie.get(field) is not None and npcie[field] < opcie[field]:
            regressions.append(_regression('pcie_downtrained', label, opcie[field], npcie[field],
                                           '%s PCIe %s dropped from %s to %s' % (label, what, opcie[field], npcie[field])))
    for field in ('ecc_uncorrected_volatile', 'ecc_uncorrected_aggregate'):
        what = field.replace('_', ' ')
        regressions.extend(_gone('ecc_errors_new', label, what, old.get(field), new.get(field)))
        if new.get(field) is not None and new[field] > (old.get(field) or 0):
            regressions.append(_regression('ecc_errors_new', label, old.get(field), new.get(field),
                                           '%s %s rose from %s to %s' % (label, what, old.get(field), new.get(field))))
    for field in ('retired_pages_pending', 'remapped_rows_pending', 'remapping_failure'):
        regressions.extend(_gone('ecc_errors_new', label, field.replace('_', ' '), old.get(field), new.get(field)))
        if new.get(field) and not old.get(field):
            regressions.append(_regression('ecc_errors_new', label, old.get(field), True,
                                           '%s now has %s' % (label, field.replace('_', ' '))))
    return regressions


def _matrix_regressions(baseline, current):
    regressions = []
    old_matrix, new_matrix = baseline.get('matrix') or {}, current.get('matrix') or {}
    if not new_matrix:
        return regressions         # no matrix now: a not_compared regression says so when there was one
    present = set('GPU%d' % g['index'] for g in current.get('gpus') or [])
    for left, row in sorted(old_matrix.items()):
        for right, rel in sorted(row.items()):
            if not (rel.startswith('NV') and left < right):
                continue
            new_rel = new_matrix.get(left, {}).get(right)
            if new_rel is None and not (left in present and right in present):
                continue           # a GPU that is gone: gpu_lost says so
            if new_rel is None:
                regressions.append(_regression('nvlink_lost', '%s-%s' % (left, right), rel, NOT_CHECKED,
                                               '%s to %s was %s before the change and is not in the matrix now'
                                               % (left, right, rel)))
            elif new_rel != rel:
                regressions.append(_regression('nvlink_lost', '%s-%s' % (left, right), rel, new_rel,
                                               '%s to %s changed from %s to %s' % (left, right, rel, new_rel)))
    return regressions


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
            state = (now or {}).get('state') or NOT_CHECKED
            rate = (now or {}).get('rate_gbps')
            if port.get('state') == 'ACTIVE' and state != 'ACTIVE':
                gone = 'port gone from sysfs' if now is None else 'state unreadable in sysfs'
                why = '' if state != NOT_CHECKED else ' (%s)' % gone
                regressions.append(_regression('nic_port_down', subject, 'ACTIVE', state,
                                               '%s went from ACTIVE to %s%s' % (subject, state, why)))
            elif now is not None and port.get('rate_gbps') and rate is None:
                regressions.extend(_gone('nic_port_down', subject, 'rate (Gb/s)', port['rate_gbps'], None))
            elif now is not None and port.get('rate_gbps') and rate < port['rate_gbps']:
                regressions.append(_regression('nic_port_down', subject, port['rate_gbps'], rate,
                                               '%s rate dropped from %s to %s Gb/s' % (subject, port['rate_gbps'], rate)))
            for name, old in sorted((port.get('counters') or {}).items()):
                if name not in ERROR_COUNTERS:
                    continue        # traffic (port_xmit_packets) rises by itself
                new_value = ((now or {}).get('counters') or {}).get(name)
                regressions.extend(_gone('nic_errors_new', subject, name, old, new_value) if now else [])
                if new_value is not None and new_value > old:
                    regressions.append(_regression('nic_errors_new', subject, old, new_value,
                                                   '%s %s rose from %d to %d' % (subject, name, old, new_value)))
            regressions.extend(_retrans_regressions(subject, port, now))
    return regressions


def _retrans_regressions(subject, port, now):
    """A RoCE retransmission counter (hw_counters) that rose between the snapshots: the fabric drops packets."""
    regressions = []
    for name in RETRANS_COUNTERS:
        old = (port.get('hw_counters') or {}).get(name)
        new_value = ((now or {}).get('hw_counters') or {}).get(name)
        regressions.extend(_gone('nic_retrans_new', subject, name, old, new_value) if now else [])
        if old is not None and new_value is not None and new_value > old:
            regressions.append(_regression('nic_retrans_new', subject, old, new_value,
                                           '%s %s rose from %d to %d (RoCE retransmissions: packets lost on the '
                                           'fabric)' % (subject, name, old, new_value)))
    return regressions
