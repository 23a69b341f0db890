# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A node-class profile derived from a ``gpu_topology`` snapshot of a node the operator trusts.

Every key written is a key of ``topology_check.CHECKS``, with the value this node has for the class: the value most
of its GPUs (or ports) have, so that a GPU or port unlike the others makes the node fail its own profile instead of
lowering the class to it. A key whose input could not be read is left out and said why (``left_out``), never
guessed. ``self_check`` runs the derived profile against the same snapshot: a node that fails it is no golden
node. ``differences`` compares the profiles of several nodes of one class key by key.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import fnmatch
import hashlib
import json
import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import PCIE_RELATION_RANK, closest_nics, is_gpu
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import CHECKS, check_profile

# option -> its choices, the first the default
OPTIONS = dict([
    ('nic_names', ('exact', 'glob')),
    ('driver_version', ('branch', 'exact', 'none')),
    ('gpu_model', ('exact', 'family')),
])
_MODES = ('Enabled', 'Disabled')


class ProfileError(Exception):
    """The snapshot cannot give a profile (no driver answering, no GPU)."""


def option_errors(options):
    """Messages for unknown options and bad choices."""
    errors = []
    for name, value in sorted(options.items()):
        if name not in OPTIONS:
            errors.append('unknown option %s; known: %s' % (name, ', '.join(OPTIONS)))
        elif value not in OPTIONS[name]:
            errors.append('option %s must be one of %s, got %r' % (name, ', '.join(OPTIONS[name]), value))
    return errors


def _most_common(values, prefer=None):
    """The value most of ``values`` have (ties: ``prefer`` when it is one of them, else the larger, so that a lone
    better GPU cannot lower the class); None when there is none."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    counts = collections.Counter(values)
    top = max(counts.values())
    tied = [v for v, n in counts.items() if n == top]
    return prefer if prefer in tied else max(tied)


class _Derivation(object):
    def __init__(self, topology, options):
        self.topology = topology
        self.options = dict((name, choices[0]) for name, choices in OPTIONS.items())
        self.options.update(dict((k, v) for k, v in options.items() if v is not None))
        self.profile = {}
        self.notes = {}
        self.left_out = {}
        self.gpus = topology.get('gpus') or []

    def put(self, key, value, note):
        self.profile[key] = value
        self.notes[key] = note

    def skip(self, key, why):
        self.left_out[key] = why

    # ------------------------------------------------------------ GPUs

    def gpu_keys(self):
        gpus = self.gpus
        self.put('gpu_count', len(gpus), 'the %d GPUs nvidia-smi lists' % len(gpus))
        name = _most_common(g.get('name') for g in gpus)
        if name is None:
            self.skip('gpu_model', 'no GPU name could be read')
        elif self.options['gpu_model'] == 'family':
            family = gpu_family(name)
            glob = _glob_literal(family) + ('[ -]*' if name != family else '')
            self.put('gpu_model', glob, 'the model of %s (option gpu_model: family)' % name)
        else:
            self.put('gpu_model', _glob_literal(name), 'the GPU name')
        version = self.topology.get('driver_version')
        how = self.options['driver_version']
        if how == 'none':
            self.skip('driver_version', 'not pinned (option driver_version: none)')
        elif version is None:
            self.skip('driver_version', 'the driver version could not be read')
        elif how == 'exact':
            self.put('driver_version', _glob_literal(version), 'driver %s exactly (option driver_version: exact)'
                     % version)
        else:
            self.put('driver_version', version.split('.')[0] + '.*', 'the branch of driver %s' % version)
        self._per_gpu('pcie_gen_min', lambda g: (g.get('pcie') or {}).get('gen_max'), 'PCIe generation')
        self._per_gpu('pcie_width_min', lambda g: (g.get('pcie') or {}).get('width_current'), 'PCIe link width')
        for key in ('persistence_mode', 'ecc_mode', 'mig_mode'):
            self._per_gpu(key, lambda g, key=key: g.get(key) if g.get(key) in _MODES else None,
                          key.replace('_', ' '))
        self.compute_mode()
        self.error_budgets()

    def _per_gpu(self, key, read, what):
        values = [read(g) for g in self.gpus]
        value = _most_common(values)
        if value is None:
            self.skip(key, '%s is N/A or unreadable on every GPU' % what)
            return
        alike = values.count(value)
        self.put(key, value, '%s of %d of %d GPUs' % (what, alike, len(values)))

    def compute_mode(self):
        modes = dict((g['index'], g.get('compute_mode')) for g in self.gpus)
        if not modes or None in modes.values():
            self.skip('compute_mode', 'the compute mode of a GPU could not be read')
            return
        common = _most_common(list(modes.values()))
        others = dict((index, mode) for index, mode in sorted(modes.items()) if mode != common)
        if not others:
            self.put('compute_mode', common, 'every GPU')
            return
        value = dict(others)
        value['*'] = common
        self.put('compute_mode', value, 'GPUs %s differ from the others (%s)'
                 % (', '.join(str(i) for i in sorted(others)), common))

    def error_budgets(self):
        if any(g.get('ecc_uncorrected_volatile') is not None or g.get('ecc_uncorrected_aggregate') is not None
               for g in self.gpus):
            self.put('max_ecc_uncorrected', 0, 'no uncorrectable ECC error tolerated')
        else:
            self.skip('max_ecc_uncorrected', 'no GPU reports ECC counters')
        if any(g.get('retired_pages_pending') is not None for g in self.gpus):
            self.put('allow_retired_pages_pending', False, 'no page retirement may be pending')
        else:
            self.skip('allow_retired_pages_pending', 'no GPU reports page retirement')
        if any(g.get('remapped_rows_pending') is not None for g in self.gpus):
            self.put('allow_remapped_rows_pending', False, 'no row remapping may be pending or failed')
        else:
            self.skip('allow_remapped_rows_pending', 'no GPU reports row remapping (before Ampere)')

    # ------------------------------------------------------------ NVLink and MIG

    def nvlink_keys(self):
        matrix = self.topology.get('matrix') or {}
        names = sorted((n for n in matrix if is_gpu(n)), key=lambda n: int(n[3:]))
        pairs = [matrix[a].get(b) for i, a in enumerate(names) for b in names[i + 1:]]
        if not names:
            self.skip('nvlink_relation', 'no readable topo -m matrix')
        elif len(names) < 2:
            self.skip('nvlink_relation', 'one GPU: no GPU pair')
        elif len(set(pairs)) == 1 and (pairs[0] or '').startswith('NV'):
            self.put('nvlink_relation', pairs[0], 'every GPU pair of the matrix')
        elif any((p or '').startswith('NV') for p in pairs):
            self.skip('nvlink_relation', 'the GPU pairs differ (%s): no one relation holds for every pair'
                      % ', '.join(sorted(set(str(p) for p in pairs))))
        else:
            self.skip('nvlink_relation', 'no NVLink between the GPUs (%s)' % ', '.join(sorted(set(map(str, pairs)))))
        active = [g.get('nvlink_active') for g in self.gpus]
        if (self.topology.get('outputs', {}).get('nvlink') or {}).get('complete') is False:
            self.skip('nvlink_active_links', 'nvidia-smi nvlink -s was elided or incomplete')
        elif _most_common(active):
            self.put('nvlink_active_links', _most_common(active), 'active links of %d of %d GPUs'
                     % (active.count(_most_common(active)), len(active)))
        else:
            self.skip('nvlink_active_links', 'no GPU has an active NVLink link')

    def mig_devices(self):
        """With MIG on a GPU: the entries of a mig-parted configuration, the GPUs grouped by their GPU instances. A
        GPU whose MIG mode could not be read is in no entry: ``mig_mode`` (kept) fails it as ``not checked``."""
        modes = dict((g['index'], g.get('mig_mode')) for g in self.gpus if g.get('mig_mode') in _MODES)
        if 'Enabled' not in modes.values():
            return
        mig = self.topology.get('mig') or {}
        if mig.get('unreadable') or mig.get('instances') is None:
            why = mig.get('unreadable') or 'no nvidia-smi mig -lgi in the facts'
            self.skip('mig_devices', 'the GPU instances could not be listed: %s' % why)
            return
        groups = {}
        for index, mode in sorted(modes.items()):
            if mode == 'Enabled':
                counts = collections.Counter(i.get('name') for i in mig['instances'].get(str(index)) or [])
                state = (True, tuple(sorted(counts.items())))
            else:
                state = (False, ())
            groups.setdefault(state, []).append(index)
        entries = []
        for (enabled, devices), indices in groups.items():
            entry = {'devices': indices, 'mig-enabled': enabled}
            if enabled:
                entry['mig-devices'] = dict(devices)
            entries.append(entry)
        if len(set(modes.values())) > 1 and len(modes) == len(self.gpus):
            self.profile.pop('mig_mode', None)
            self.notes.pop('mig_mode', None)
            self.skip('mig_mode', 'MIG is on some GPUs only: mig_devices says which GPU has which mode')
        self.put('mig_devices', entries, 'the GPU instances of each GPU, as mig-parted entries')

    # ------------------------------------------------------------ NICs

    def compute_nics(self):
        """``(compute NICs, the class's GPU-to-NIC relation, why not)``: each GPU's closest NICs that exist in sysfs,
        at the relation most GPUs have to their closest NIC; a GPU whose closest NIC is farther (its rail lost) adds
        none, and fails ``gpu_nic_relation_max`` against the profile instead of widening the class to storage NICs."""
        if 'sys/class/infiniband' in (self.topology.get('missing') or []):
            return None, None, 'sysfs class/infiniband is not available (no RDMA stack loaded?)'
        nics = dict((n['name'], n) for n in self.topology.get('nics') or [])
        if not nics:
            return None, None, 'the node has no RDMA NIC'
        matrix = self.topology.get('matrix') or {}
        gpus = [n for n in matrix if is_gpu(n)]
        if not gpus:
            return None, None, 'no readable topo -m matrix: the NICs closest to the GPUs cannot be told'
        closest = dict((gpu, closest_nics(matrix, gpu, [n for n in matrix.get(gpu, {}) if n in nics])) for gpu in gpus)
        ranks = [PCIE_RELATION_RANK[rel] for rel, _names in closest.values() if rel is not None]
        if not ranks:
            return None, None, 'topo -m relates no GPU to a NIC present in sysfs'
        counts = collections.Counter(ranks)
        top = max(counts.values())
        rank = min(r for r, n in counts.items() if n == top)     # a tie: the closer, so that the node is refused
        relation = [rel for rel, r in sorted(PCIE_RELATION_RANK.items()) if r == rank][0]
        chosen = set()
        for rel, names in closest.values():
            if rel is not None and PCIE_RELATION_RANK[rel] <= rank:
                chosen.update(names)
        return [nics[n] for n in sorted(chosen, key=_natural)], relation, None

    def nic_keys(self):
        compute, relation, why = self.compute_nics()
        nic_keys = [c.key for c in CHECKS if c.key and (c.key.startswith('nic_') or c.key == 'gpu_nic_relation_max')]
        if compute is None:
            for key in nic_keys:
                self.skip(key, why)
            return
        names = [n['name'] for n in compute]
        others = sorted((n['name'] for n in self.topology.get('nics') or [] if n['name'] not in names), key=_natural)
        left = ' (left out: %s)' % ', '.join(others) if others else ''
        if self.options['nic_names'] == 'glob':
            self.put('nic_names', nic_globs(names, others), 'globs matching the NICs closest to the GPUs%s' % left)
        else:
            self.put('nic_names', names, 'the NICs closest to the GPUs%s' % left)
        self.put('nic_count', len(names), 'the NICs closest to the GPUs')
        ports = [p for n in compute for p in n.get('ports') or []]
        for key, field, what in (('nic_port_state', 'state', 'state'), ('nic_link_layer', 'link_layer', 'link layer'),
                                 ('nic_rate_min_gbps', 'rate_gbps', 'rate')):
            values = [p.get(field) for p in ports]
            value = _most_common(values, prefer='ACTIVE' if field == 'state' else None)
            if value is None:
                self.skip(key, 'no port %s could be read' % what)
            else:
                self.put(key, value, 'the %s of %d of %d ports' % (what, values.count(value), len(values)))
        for key, counter in (('nic_symbol_errors_max', 'symbol_error'), ('nic_rcv_errors_max', 'port_rcv_errors')):
            if ports and all((p.get('counters') or {}).get(counter) is not None for p in ports):
                self.put(key, 0, 'no %s tolerated' % counter)
            else:
                self.skip(key, '%s is not readable on every port' % counter)
        self.skip('nic_link_downed_max', 'site policy: link_downed counts every switch or cable event since the HCA '
                                         'came up; set a budget if the fabric team has one')
        self.skip('nic_retrans_ratio_max', 'site policy: a RoCE retransmission budget in percent (0.1 is common)')
        self.rdma_modes(compute)
        self.put('gpu_nic_relation_max', relation, 'the relation most GPUs have to their closest NIC')

    def rdma_modes(self, compute):
        layer = self.profile.get('nic_link_layer')
        ib = [n for n in compute if layer == 'InfiniBand']
        if ib and all(n.get('ipoib') is not None and n.get('ipoib_active') == [] for n in ib):
            self.put('nic_ipoib', False, 'no IPoIB netdev up on the NICs')
        else:
            self.skip('nic_ipoib', 'IPoIB is up on a NIC, or its netdevs cannot be read, or the NICs are not '
                                   'InfiniBand')
        eth = [n for n in compute if layer == 'Ethernet']
        pfc = [tuple((n.get('roce') or {}).get('pfc') or ()) for n in eth]
        if eth and len(set(pfc)) == 1 and len(pfc[0]) == 1:
            prio = pfc[0][0]
            self.put('nic_pfc_priority', prio, 'PFC on priority %d only, on every NIC' % prio)
            ecn = [(n.get('roce') or {}).get('ecn') or {} for n in eth]
            if all((e.get('rp') or {}).get(str(prio)) and (e.get('np') or {}).get(str(prio)) for e in ecn):
                self.put('nic_roce_dcqcn', prio, 'DCQCN on priority %d on every NIC' % prio)
            else:
                self.skip('nic_roce_dcqcn', 'DCQCN is not on for priority %d on every NIC' % prio)
        else:
            why = 'the NICs are not Ethernet' if not eth else 'PFC is not on for exactly one priority, the same on ' \
                'every NIC (the rdma role sets it: rdma_roce_priority)'
            self.skip('nic_pfc_priority', why)
            self.skip('nic_roce_dcqcn', why)

    # ------------------------------------------------------------ node

    def node_keys(self):
        numa = [g.get('numa_node') for g in self.gpus]
        if None in numa or not numa:
            self.skip('numa_balance', 'the NUMA node of a GPU is unknown')
        elif len(set(numa)) < 2:
            self.skip('numa_balance', 'every GPU is on NUMA node %s (or the node boots with numa=off)' % numa[0])
        else:
            counts = collections.Counter(numa)
            if len(set(counts.values())) == 1:
                self.put('numa_balance', True, '%d GPUs on each of NUMA nodes %s'
                         % (list(counts.values())[0], ', '.join(str(n) for n in sorted(counts))))
            else:
                self.skip('numa_balance', 'the GPUs are not spread evenly over NUMA nodes (%s)'
                          % ', '.join('%s: %d' % kv for kv in sorted(counts.items())))
        health = (self.topology.get('dcgm') or {}).get('health')
        if health and health.get('overall') in ('Healthy', 'Warning'):
            self.put('dcgm_health', True, 'DCGM answers, overall %s' % health['overall'])
        else:
            self.skip('dcgm_health', (self.topology.get('dcgm') or {}).get('unreadable') or
                      'DCGM health overall %s' % (health or {}).get('overall'))
        boot = self.topology.get('next_boot') or {}
        installed = self.topology.get('driver_installed_version')
        if boot.get('module') and not boot.get('unreadable') and installed is not None \
                and boot.get('module_version') == installed:
            self.put('next_boot_driver', True, 'kernel %s, booted next, has NVIDIA module %s'
                     % (boot['kernel'], installed))
        else:
            self.skip('next_boot_driver', boot.get('unreadable') or (
                'kernel %s, booted next, has no NVIDIA module of the installed driver' % boot['kernel']
                if boot.get('kernel') else 'the boot kernel was not read'))


def gpu_family(name):
    """The words of a GPU name up to its model number, cut at the first ``-`` of that word: ``NVIDIA H100`` of
    ``NVIDIA H100 80GB HBM3``, ``NVIDIA A100`` of ``NVIDIA A100-SXM4-40GB``, ``Tesla P100`` of
    ``Tesla P100-PCIE-16GB``."""
    words = []
    for word in name.split():
        if re.search(r'\d', word):
            words.append(word.split('-')[0])
            break
        words.append(word)
    return ' '.join(words)


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


def _glob_literal(text):
    """``text`` as a glob that matches only itself (``[`` ``*`` ``?`` quoted)."""
    return re.sub(r'([\[\]*?])', r'[\1]', text)


def _digit_class(digits):
    """``[0-25-7]`` for the digits 0 1 2 5 6 7."""
    values = sorted(set(int(d) for d in digits))
    runs, start = [], values[0]
    for prev, cur in zip(values, values[1:] + [None]):
        if cur != prev + 1:
            runs.append('%d' % start if start == prev else '%d-%d' % (start, prev))
            start = cur
    return '[%s]' % ''.join(runs) if len(values) > 1 else str(values[0])


def nic_globs(names, others):
    """Globs that match every name of ``names`` and none of ``others``: ``prefix*`` when that is enough, else one
    character class per prefix and number of digits (``mlx5_[0-25-8]``, ``mlx5_1[1]``), else the names."""
    def clean(globs):
        return all(not fnmatch.fnmatchcase(o, g) for g in globs for o in others) and \
            all(any(fnmatch.fnmatchcase(n, g) for g in globs) for n in names)
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    prefix = prefix.rstrip('0123456789')
    if prefix and clean([_glob_literal(prefix) + '*']):
        return [_glob_literal(prefix) + '*']
    groups = dict()
    for name in names:
        match = re.match(r'^(.*?)(\d+)$', name)
        if not match:
            groups.setdefault((name, None), []).append('')
            continue
        head, digits = match.group(1) + match.group(2)[:-1], match.group(2)[-1]
        groups.setdefault((head, len(match.group(2))), []).append(digits)
    globs = [_glob_literal(head) + (_digit_class(digits) if size else '') for (head, size), digits in groups.items()]
    return globs if clean(globs) else [_glob_literal(n) for n in names]


def derive(topology, options=None):
    """``{profile, notes, left_out, options, failures}`` of the snapshot: ``profile`` in the table's key order,
    ``notes`` why each value, ``left_out`` each key not written and why, ``failures`` the node's own failures
    against the profile (``self_check``: a golden node has none). Raises ProfileError when the snapshot cannot give a profile
    and ValueError for bad options."""
    options = dict(options or {})
    errors = option_errors(options)
    if errors:
        raise ValueError('; '.join(errors))
    if not topology.get('driver_loaded') or not topology.get('gpus'):
        said = '; '.join(f['message'] for f in check_profile(topology, {})) or 'nvidia-smi lists no GPU'
        raise ProfileError('no profile from a node whose GPUs nvidia-smi cannot list (%s): derive it from a node of '
                           'the class with its driver loaded' % said)
    work = _Derivation(topology, options)
    work.gpu_keys()
    work.nvlink_keys()
    work.mig_devices()
    work.nic_keys()
    work.node_keys()
    order = [c.key for c in CHECKS if c.key]
    profile = dict((k, work.profile[k]) for k in order if k in work.profile)
    left_out = dict((k, work.left_out[k]) for k in order if k in work.left_out and k not in profile)
    return {'profile': profile, 'notes': dict((k, work.notes[k]) for k in profile), 'left_out': left_out,
            'options': work.options, 'failures': self_check(topology, profile)}


def self_check(topology, profile):
    """The failures of the node against the profile derived from it: a golden node has none."""
    return check_profile(topology, profile)


def differences(profiles):
    """``{key: {host: value}}`` for every key on which the profiles (``{host: profile}``) differ; a key one host
    has and another lacks differs too (the lacking host's value is None)."""
    keys = set()
    for profile in profiles.values():
        keys.update(profile)
    order = [c.key for c in CHECKS if c.key in keys]
    diff = dict()
    for key in order:
        values = dict((host, profile.get(key)) for host, profile in profiles.items())
        if len(set(repr(_plain(v)) for v in values.values())) > 1:
            diff[key] = dict(sorted(values.items()))
    return diff


def _plain(value):
    if isinstance(value, dict):
        return sorted((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _flow(value):
    """``value`` as one line of YAML (flow style; strings double-quoted as JSON, which YAML reads)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return '{%s}' % ', '.join('%s: %s' % (k if isinstance(k, int) else json.dumps(str(k)), _flow(v))
                                  for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return '[%s]' % ', '.join(_flow(v) for v in value)
    return json.dumps(str(value))


def _comment(text, width=116):
    lines, line = [], '#'
    for word in text.split():
        if len(line) + 1 + len(word) > width and line != '#':
            lines.append(line)
            line = '#  '
        line += ' ' + word
    return lines + [line]


def document(node_class, derivation, nodes, when=None, by='playbooks/profile.yml'):
    """The group_vars file of the class: a header (which nodes, when, the options, what to review), then
    ``gpuops_node_class`` and ``gpuops_node_class_profile``, each value under a comment saying why."""
    options = ', '.join('%s: %s' % kv for kv in sorted(derivation['options'].items()))
    head = ['---'] + _comment('Node class %s: profile derived by %s from %s%s (options %s).'
                              % (node_class, by, ', '.join(nodes), ' on %s' % when if when else '', options))
    head += _comment(derivation.get('review') or 'Every node listed passed this profile when it was derived. Review '
                     'before committing: the values are what the node has, not what the class should have. Pin or '
                     'loosen gpu_model and driver_version, check that nic_names leaves out storage and in-band NICs, '
                     'and set the site policy keys below that a node cannot tell.')
    for key, why in derivation['left_out'].items():
        head += _comment('%s not written: %s' % (key, why))
    body = ['gpuops_node_class: %s' % json.dumps(node_class), 'gpuops_node_class_profile:']
    for key, value in derivation['profile'].items():
        note = derivation['notes'][key]
        line = '  %s: %s' % (key, _flow(value))
        if len(line) + len(note) + 4 <= 116:
            body.append('%s  # %s' % (line, note))
            continue
        body.extend('  ' + text for text in _comment(note, width=114))
        if len(line) > 116 and isinstance(value, (list, tuple)):
            body.append('  %s:' % key)
            body.extend('    - %s' % _flow(item) for item in value)
        else:
            body.append(line)
    head += ['# playbooks/profile.yml replaces this file only while what follows is unchanged:',
             _SUM + hashlib.sha256('\n'.join(body).encode('utf-8')).hexdigest()]
    return '\n'.join(head + body) + '\n'


_SUM = '# sha256 of the profile: '


def file_state(text):
    """What a class file on disk is to ``document``: ``ours`` (written by it, unchanged since), ``edited`` (written
    by it, changed since: a review's edits) or ``foreign`` (not written by it)."""
    match = re.search(r'^%s([0-9a-f]{64})\b' % re.escape(_SUM), text, re.M)
    start = re.search(r'^gpuops_node_class:', text, re.M)
    if not match or not start:
        return 'foreign'
    body = text[start.start():].rstrip('\n')
    return 'ours' if hashlib.sha256(body.encode('utf-8')).hexdigest() == match.group(1) else 'edited'
