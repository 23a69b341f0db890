# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a MIG layout needs on each GPU: mode change, instances to destroy and to create.

``gpu_states`` joins what nvidia-smi reports (``-q -x``, ``mig -lgi``, ``mig -lci``) per GPU;
``plan`` compares it with the wanted state of ``config.mig_parted.expand`` and the GPU-instance profiles
of each GPU (``mig_profiles.profiles_for``).

Per GPU: instances equal to the wanted ones: nothing; existing instances that are part of the
wanted ones (each with its one default compute instance), none of them smaller than a missing one:
create only the missing; otherwise destroy every compute and GPU instance of the GPU and create the
whole wanted set, the way mig-parted rebuilds a GPU, so that the placements stay packable. GPU
instances are created largest first. MIG disabled: destroy everything, then disable the mode.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import normalize_bus_id
from ansible_collections.gpuops.node.plugins.module_utils.node.mig_profiles import compute_slices, fits


def gpu_states(xml_gpus, lgi_rows=None, lci_rows=None):
    """Per GPU of ``parse_nvsmi_xml``'s ``gpus``: ``{index, bus_id, name, pci_device_id, mig_mode,
    mig_mode_pending, instances: [{gi, name, profile_id, start, size, cis: [{id, name, profile_id}]}]}``
    with the rows of ``parse_lgi`` and ``parse_lci`` (matched by GPU index)."""
    lgi_rows = lgi_rows or []
    lci_rows = lci_rows or []
    result = []
    for gpu in xml_gpus:
        instances = []
        for row in lgi_rows:
            if row['gpu'] != gpu['index']:
                continue
            cis = [{'id': ci['id'], 'name': ci['name'], 'profile_id': ci['profile_id']}
                   for ci in lci_rows if ci['gpu'] == gpu['index'] and ci['gi'] == row['id']]
            instances.append({'gi': row['id'], 'name': row['name'], 'profile_id': row['profile_id'],
                              'start': row['start'], 'size': row['size'], 'cis': sorted(cis, key=lambda c: c['id'])})
        result.append({
            'index': gpu['index'],
            'bus_id': gpu.get('pci_bus_id') or gpu.get('bus_id'),
            'name': gpu.get('name'),
            'pci_device_id': gpu.get('pci_device_id'),
            'mig_mode': gpu.get('mig_mode'),
            'mig_mode_pending': gpu.get('mig_mode_pending'),
            'instances': sorted(instances, key=lambda i: i['gi']),
        })
    return result


def counts(names):
    """``['1g.10gb', '1g.10gb', '3g.40gb']`` -> ``{'1g.10gb': 2, '3g.40gb': 1}``."""
    result = {}
    for name in names:
        result[name] = result.get(name, 0) + 1
    return result


def _memory(name, profiles):
    for row in profiles or []:
        if row['name'] == name and row.get('memory_gib') is not None:
            return float(row['memory_gib'])
    try:
        return float(name.split('.', 1)[1].split('gb', 1)[0])
    except (IndexError, ValueError):
        return 0.0


def creation_order(wanted, profiles=None):
    """The names of ``{profile: count}`` one per instance, largest profile first (compute slices, then memory)."""
    names = sorted(wanted, key=lambda n: (-compute_slices(n), -_memory(n, profiles), n))
    result = []
    for name in names:
        result.extend([name] * wanted[name])
    return result


def describe(instances):
    """``{'1g.10gb': 3, '3g.40gb': 1}`` -> ``'1x 3g.40gb, 3x 1g.10gb'`` (largest first); ``'none'``."""
    if not instances:
        return 'none'
    return ', '.join('%dx %s' % (instances[n], n) for n in creation_order(dict((k, 1) for k in instances)))


def _usable(instance):
    """A GPU instance with exactly its default compute instance (the whole GPU instance)."""
    return len(instance['cis']) == 1 and instance['cis'][0]['name'] == instance['name']


def _sub_multiset(have, want):
    return all(want.get(name, 0) >= count for name, count in have.items())


def _size(name, profiles):
    return (compute_slices(name), _memory(name, profiles))


def _fits_after(have, wanted, profiles):
    """None of the missing instances is larger than an existing one: created after them, the whole set is still
    created largest first, which keeps the placements packable (a 4g.40gb after three 1g.10gb may find no
    placement left, "Insufficient Resources")."""
    missing = [name for name in wanted if wanted[name] > have.get(name, 0)]
    if not have or not missing:
        return True
    return max(_size(n, profiles) for n in missing) <= min(_size(n, profiles) for n in have)


def _state(mode, pending, instances):
    return {'mig_mode': mode, 'mig_mode_pending': pending, 'instances': instances}


class _Errors(object):
    """Errors of the same path and reason on several GPUs of one model, said once."""

    def __init__(self):
        self.order = []
        self.gpus = {}

    def add(self, path, model, reason, index):
        key = (path, model, reason)
        if key not in self.gpus:
            self.order.append(key)
            self.gpus[key] = []
        self.gpus[key].append(index)

    def messages(self):
        return ['%s: GPU %s (%s) %s' % (path, ', '.join(str(i) for i in self.gpus[(path, model, reason)]), model,
                                        reason)
                for path, model, reason in self.order]


def _validate(gpu, want, profiles, where, errors, warnings):
    path = '%s[%d]' % (where, want['entry'])
    model = gpu['name'] or 'unknown model'
    if not want['enabled']:
        return
    if gpu['mig_mode'] in (None, 'N/A'):
        errors.add(path + '.mig-enabled', model, 'does not support MIG', gpu['index'])
        return
    if profiles is None:
        if want['devices']:
            warnings.append('GPU %s (%s): the GPU-instance profiles of %s are not known while MIG is disabled; '
                            'nvidia-smi checks %s when it creates them'
                            % (gpu['index'], gpu['bus_id'], model, describe(want['devices'])))
        return
    known = [row['name'] for row in profiles]
    unknown = sorted(name for name in want['devices'] if name not in known)
    for name in unknown:
        errors.add('%s.mig-devices.%s' % (path, name), model,
                   'has no GPU-instance profile %s; its profiles: %s' % (name, ', '.join(known)), gpu['index'])
    if not unknown:
        reason = fits(profiles, want['devices'])
        if reason:
            errors.add(path + '.mig-devices', model, 'cannot hold them: %s' % reason, gpu['index'])


def _gpu_plan(gpu, want, profiles):
    mode, pending = gpu['mig_mode'], gpu['mig_mode_pending']
    existing = gpu['instances'] if mode == 'Enabled' else []
    have = counts(i['name'] for i in existing)
    entry = {
        'index': gpu['index'], 'bus_id': gpu['bus_id'], 'name': gpu['name'], 'entry': want['entry'],
        'mode': {'current': mode, 'pending': pending}, 'mode_change': None, 'destroy': [], 'create': [],
        'before': _state(mode, pending, have),
        # the model's profiles were known when planning; when not (MIG disabled on a model mig_profiles does not
        # know), mig_layout checks the instances against -lgip once MIG is on, before it creates any
        'profiles_known': profiles is not None,
    }
    destroy_all = [{'gi': i['gi'], 'name': i['name'], 'cis': [c['id'] for c in i['cis']]} for i in existing]
    if not want['enabled']:
        wanted_mode = 'Disabled' if mode not in (None, 'N/A') else mode
        entry['mode']['wanted'] = wanted_mode
        entry['destroy'] = destroy_all
        if wanted_mode == 'Disabled' and (mode != 'Disabled' or pending != 'Disabled'):
            entry['mode_change'] = 'disable'
        entry['after'] = _state(wanted_mode, wanted_mode, {})
        return entry
    entry['mode']['wanted'] = 'Enabled'
    if mode != 'Enabled' or pending != 'Enabled':
        entry['mode_change'] = 'enable'
    wanted = dict(want['devices'])
    usable = all(_usable(i) for i in existing)
    if usable and have == wanted:
        pass
    elif usable and _sub_multiset(have, wanted) and _fits_after(have, wanted, profiles):
        missing = dict((name, wanted[name] - have.get(name, 0)) for name in wanted)
        entry['create'] = creation_order(dict((k, v) for k, v in missing.items() if v), profiles)
    else:
        entry['destroy'] = destroy_all
        entry['create'] = creation_order(wanted, profiles)
    entry['after'] = _state('Enabled', 'Enabled', wanted)
    return entry


def plan(gpus_state, desired, profiles_by_gpu, where='entries'):
    """``{'errors': [...], 'warnings': [...], 'gpus': [per GPU an entry matches]}``.

    ``gpus_state``: ``gpu_states()``; ``desired``: ``config.mig_parted.expand()``; ``profiles_by_gpu``: normalized bus
    id -> the GPU's profiles (``mig_profiles.profiles_for``), None when not known. ``where`` starts the error
    paths (``mig-configs.half-1g.10gb``). Each GPU entry: ``index, bus_id, name, entry`` (the config entry),
    ``mode: {current, pending, wanted}``, ``mode_change`` (None, ``enable`` or ``disable``), ``destroy``
    (``[{gi, name, cis}]``), ``create`` (profile names, largest first), ``before`` and ``after``
    (``{mig_mode, mig_mode_pending, instances: {profile: count}}``). With any error nothing may be changed.
    """
    errors = _Errors()
    warnings = []
    gpus = []
    for gpu in sorted(gpus_state, key=lambda g: g['index']):
        bus = normalize_bus_id(gpu['bus_id'])
        want = desired.get(bus)
        if want is None:
            continue
        profiles = profiles_by_gpu.get(bus)
        _validate(gpu, want, profiles, where, errors, warnings)
        gpus.append(_gpu_plan(gpu, want, profiles))
    return {'errors': errors.messages(), 'warnings': warnings, 'gpus': gpus}


def recheck(checked, where='entries'):
    """Errors of GPUs' wanted instances against their profiles read once MIG is on, for GPUs planned without them
    (``profiles_known`` false): ``checked`` is ``[(gpu plan entry, profiles from its -lgip or None)]``; the same
    messages as ``plan``, an error shared by several GPUs said once."""
    errors = _Errors()
    for gpu_plan, profiles in checked:
        gpu = {'index': gpu_plan['index'], 'bus_id': gpu_plan['bus_id'], 'name': gpu_plan['name'],
               'mig_mode': 'Enabled'}
        want = {'enabled': True, 'devices': gpu_plan['after']['instances'], 'entry': gpu_plan['entry']}
        if profiles is None:
            errors.add('%s[%d]' % (where, gpu_plan['entry']), gpu_plan['name'] or 'unknown model',
                       'lists no GPU-instance profile (nvidia-smi mig -lgip) although MIG is on', gpu_plan['index'])
            continue
        _validate(gpu, want, profiles, where, errors, [])
    return errors.messages()


def pending_work(gpu_plan):
    """Whether a GPU's plan changes anything."""
    return bool(gpu_plan['mode_change'] or gpu_plan['destroy'] or gpu_plan['create'])


def state_text(gpus, key):
    """The ``before`` or ``after`` of plan entries as YAML-like text for ``--diff``, one block per GPU."""
    lines = []
    for gpu in gpus:
        state = gpu[key]
        lines.append('GPU %s %s (%s):' % (gpu['index'], gpu['bus_id'], gpu['name']))
        lines.append('  mig_mode: %s' % (state['mig_mode'] or 'N/A'))
        lines.append('  mig_mode_pending: %s' % (state['mig_mode_pending'] or 'N/A'))
        lines.append('  instances: %s' % describe(state['instances']))
    return '\n'.join(lines) + '\n' if lines else ''


_SCRIPT_BODY = r'''
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
NVIDIA_SMI=%(nvidia_smi)s

# create_instances BUS PROFILES: the GPU instances (each with its default compute instance) of a GPU that has none
create_instances() {
    if listed=$("$NVIDIA_SMI" mig -i "$1" -lgi 2>&1); then
        echo "GPU $1: GPU instances exist already, left as they are"
        return 0
    fi
    case "$listed" in
        *"No GPU instances found"*) ;;
        *)
            echo "GPU $1: cannot list its GPU instances (nvidia-smi mig -i $1 -lgi): $listed" >&2
            return 1
            ;;
    esac
    if ! created=$("$NVIDIA_SMI" mig -i "$1" -cgi "$2" -C 2>&1); then
        echo "GPU $1: nvidia-smi mig -i $1 -cgi $2 -C failed: $created" >&2
        return 1
    fi
    echo "GPU $1: created $2"
}

status=0
'''


def _quote(text):
    return "'%s'" % text.replace("'", "'\"'\"'")


def boot_script(gpus, nvidia_smi, header):
    """A ``/bin/sh`` script creating the wanted GPU instances of each GPU at boot (they do not survive a reboot),
    or None when no GPU wants any. ``gpus``: ``[(bus_id, ['3g.40gb', '1g.10gb', ...])]`` in creation order."""
    gpus = [(bus, names) for bus, names in gpus if names]
    if not gpus:
        return None
    lines = ['#!/bin/sh', header, _SCRIPT_BODY.strip('\n') % {'nvidia_smi': _quote(nvidia_smi)}]
    for bus, names in gpus:
        lines.append('create_instances %s %s || status=1' % (bus, ','.join(names)))
    lines.append('exit $status')
    return '\n'.join(lines) + '\n'
