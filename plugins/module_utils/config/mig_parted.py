# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG layout in NVIDIA mig-parted's configuration format.

::

    version: v1
    mig-configs:
      half-1g.10gb:
        - devices: [0, 1, 2, 3]          # or "all"; GPU indexes and/or PCI bus ids
          mig-enabled: true
          mig-devices: {"1g.10gb": 7}    # GPU-instance profile -> count
        - devices: ["0000:1B:00.0"]
          mig-enabled: false

``load`` validates a whole document, ``validate_entries`` the entry list of one
configuration, ``select`` picks a configuration by name and ``expand`` maps its
entries onto the GPUs of a node. Every error is a ``ConfigError`` whose message
starts with the path of the bad part (``mig-configs.half-1g.10gb[1].devices[0]``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import profile_name as _strip_mig

try:
    from ansible.module_utils.six import string_types, integer_types
except ImportError:  # pragma: no cover
    string_types = (str,)
    integer_types = (int,)

ENTRY_KEYS = ('devices', 'mig-enabled', 'mig-devices', 'device-filter')
# GPU-instance profile names as nvidia-smi prints them: 1g.10gb, 3g.40gb, 1g.12gb+me, 7g.80gb
_PROFILE_RE = re.compile(r"^[1-9][0-9]*g\.[0-9]+gb([+-][a-z0-9.]+)*$")
# compute-instance profile names: 1c.3g.40gb
_CI_PROFILE_RE = re.compile(r'^[0-9]+c\.[0-9]+g\.', re.IGNORECASE)
_BUS_RE = re.compile(r'^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')
_DEVICE_ID_RE = re.compile(r'^(0x)?[0-9a-fA-F]{8}$')


class ConfigError(Exception):
    """A mig-parted configuration that cannot be used; ``path`` names the bad part."""

    def __init__(self, path, reason):
        self.path = path
        self.reason = reason
        super(ConfigError, self).__init__('%s: %s' % (path, reason) if path else reason)


class UnsupportedProfile(ConfigError):
    """A compute-instance profile: valid mig-parted, not something this collection applies."""


def normalize_bus_id(bus_id):
    """``00000000:1B:00.0``, ``0000:1b:00.0`` and ``1b:00.0`` -> ``0000:1b:00.0``; None when not a bus id."""
    if not isinstance(bus_id, string_types):
        return None
    match = _BUS_RE.match(bus_id.strip())
    if not match:
        return None
    domain = (match.group(1) or '0000')[-4:]
    if match.group(1) and int(match.group(1)[:-4] or '0', 16):
        return None
    return ('%s:%s:%s.%s' % (domain, match.group(2), match.group(3), match.group(4))).lower()


def profile_name(name):
    """``MIG 1g.10gb`` -> ``1g.10gb``; None when ``name`` is not a GPU-instance profile name."""
    if not isinstance(name, string_types):
        return None
    text = _strip_mig(name).lower()
    return text if _PROFILE_RE.match(text) else None


def _type(value):
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, integer_types):
        return 'an integer'
    if isinstance(value, string_types):
        return 'a string'
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    if value is None:
        return 'empty'
    return type(value).__name__


def _devices(value, where):
    if isinstance(value, string_types) and value.strip().lower() == 'all':
        return 'all'
    if not isinstance(value, list):
        raise ConfigError(where, 'must be "all" or a list of GPU indexes and PCI bus ids, got %s' % _type(value))
    if not value:
        raise ConfigError(where, 'must name at least one GPU (or be "all")')
    result = []
    for pos, item in enumerate(value):
        here = '%s[%d]' % (where, pos)
        if isinstance(item, integer_types) and not isinstance(item, bool):
            if item < 0:
                raise ConfigError(here, 'a GPU index is 0 or more, got %d' % item)
            result.append(item)
        elif isinstance(item, string_types) and item.strip().isdigit():
            result.append(int(item.strip()))
        elif isinstance(item, string_types) and normalize_bus_id(item):
            result.append(normalize_bus_id(item))
        else:
            raise ConfigError(here, 'expected a GPU index or a PCI bus id like 0000:1b:00.0, got %r' % (item,))
        if result[-1] in result[:-1]:
            raise ConfigError(here, '%s is listed twice' % (item,))
    return result


def _device_filter(value, where):
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    result = []
    for pos, item in enumerate(items):
        here = '%s[%d]' % (where, pos) if isinstance(value, list) else where
        if not isinstance(item, string_types) or not _DEVICE_ID_RE.match(item.strip()):
            raise ConfigError(here, 'expected a PCI device id like 0x233010DE, got %r' % (item,))
        text = item.strip().lower()
        result.append(text if text.startswith('0x') else '0x' + text)
    if not result:
        raise ConfigError(where, 'an empty list matches no GPU')
    return result


def _mig_devices(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(where, 'must be a mapping of GPU-instance profile names to counts, got %s' % _type(value))
    result = {}
    for key in sorted(value, key=str):
        count = value[key]
        here = '%s.%s' % (where, key)
        name = profile_name(key)
        if name is None and isinstance(key, string_types) and _CI_PROFILE_RE.match(key.strip().replace('MIG ', '')):
            raise UnsupportedProfile(here, 'compute-instance profiles are not supported: give GPU-instance profiles '
                                           '(like 3g.40gb), each gets its default compute instance')
        if name is None:
            raise ConfigError(here, 'not a GPU-instance profile name (like 1g.10gb or 3g.40gb)')
        if isinstance(count, bool) or not isinstance(count, integer_types) or count < 0:
            raise ConfigError(here, 'the count must be an integer, 0 or more, got %r' % (count,))
        if name in result:
            raise ConfigError(here, 'profile %s is given twice' % name)
        if count:
            result[name] = count
    return result


def validate_entries(entries, where):
    """The entries of one configuration, checked and normalized.

    Each becomes ``{'devices': 'all' | [index or normalized bus id], 'mig-enabled': bool,
    'mig-devices': {profile: count}, 'device-filter': None | ['0x233010de']}``; ``where`` is the path
    the error messages start with (``mig-configs.all-1g.10gb``). Normalized entries validate again unchanged.
    """
    if not isinstance(entries, list):
        raise ConfigError(where, 'must be a list of entries (devices, mig-enabled, mig-devices), got %s'
                          % _type(entries))
    if not entries:
        raise ConfigError(where, 'has no entry')
    result = []
    for pos, entry in enumerate(entries):
        here = '%s[%d]' % (where, pos)
        if not isinstance(entry, dict):
            raise ConfigError(here, 'must be a mapping with devices and mig-enabled, got %s' % _type(entry))
        unknown = sorted(str(k) for k in entry if k not in ENTRY_KEYS)
        if unknown:
            raise ConfigError('%s.%s' % (here, unknown[0]), 'unknown key; an entry has %s' % ', '.join(ENTRY_KEYS))
        for key in ('devices', 'mig-enabled'):
            if key not in entry:
                raise ConfigError(here, '%s is required' % key)
        enabled = entry['mig-enabled']
        if not isinstance(enabled, bool):
            raise ConfigError(here + '.mig-enabled', 'must be true or false, got %r' % (enabled,))
        wanted = _mig_devices(entry.get('mig-devices'), here + '.mig-devices')
        if wanted and not enabled:
            raise ConfigError(here + '.mig-devices', 'MIG devices need mig-enabled: true')
        result.append({
            'devices': _devices(entry['devices'], here + '.devices'),
            'mig-enabled': enabled,
            'mig-devices': wanted,
            'device-filter': _device_filter(entry.get('device-filter'), here + '.device-filter'),
        })
    return result


def load(data_or_text):
    """A mig-parted document (a mapping, or its YAML text) checked and normalized; raises ``ConfigError``."""
    data = data_or_text
    if isinstance(data_or_text, (bytes, bytearray)):
        data = data_or_text.decode('utf-8', 'replace')
    if isinstance(data, string_types):
        from ansible.module_utils.common.yaml import HAS_YAML, yaml_load
        if not HAS_YAML:
            raise ConfigError('', 'PyYAML is needed to read a mig-parted file')
        try:
            data = yaml_load(data)
        except Exception as exc:  # the YAML library's own errors: name the problem, not a traceback
            raise ConfigError('', 'not YAML: %s' % ' '.join(str(exc).split()))
    if not isinstance(data, dict):
        raise ConfigError('', 'a mig-parted configuration is a mapping with version and mig-configs, got %s'
                          % _type(data))
    unknown = sorted(str(k) for k in data if k not in ('version', 'mig-configs'))
    if unknown:
        raise ConfigError(unknown[0], 'unknown key; the document has version and mig-configs')
    if data.get('version') != 'v1':
        raise ConfigError('version', 'must be v1, got %r' % (data.get('version'),))
    configs = data.get('mig-configs')
    if not isinstance(configs, dict) or not configs:
        raise ConfigError('mig-configs', 'must be a mapping of configuration names to entry lists, got %s'
                          % ('an empty mapping' if isinstance(configs, dict) else _type(configs)))
    result = {}
    for name in sorted(configs, key=str):
        if not isinstance(name, string_types) or not name.strip():
            raise ConfigError('mig-configs', 'configuration names are strings, got %r' % (name,))
        try:
            result[name] = validate_entries(configs[name], 'mig-configs.%s' % name)
        except UnsupportedProfile as exc:
            # a site's file may hold configurations with compute-instance profiles: refused only when selected
            result[name] = {'unsupported': {'path': exc.path, 'reason': exc.reason}}
    return {'version': 'v1', 'mig-configs': result}


def select(doc, name):
    """The entries of configuration ``name`` of a loaded document."""
    configs = doc['mig-configs']
    if name not in configs:
        raise ConfigError('selected', 'no configuration %r in mig-configs; known: %s'
                          % (name, ', '.join(sorted(configs))))
    found = configs[name]
    if isinstance(found, dict) and 'unsupported' in found:
        raise UnsupportedProfile(found['unsupported']['path'], found['unsupported']['reason'])
    return found


def _gpu_bus(gpu):
    return normalize_bus_id(gpu.get('bus_id') or gpu.get('pci_bus_id'))


def _device_id(gpu):
    value = (gpu.get('pci_device_id') or '').strip().lower()
    return value if not value or value.startswith('0x') else '0x' + value


def expand(entries, gpus, where='entries'):
    """The wanted state of each GPU an entry matches: ``{bus_id: {'index', 'enabled', 'devices', 'entry'}}``.

    ``gpus``: ``[{'index', 'bus_id' (or 'pci_bus_id'), 'pci_device_id', 'name'}]``. Keys are normalized bus ids
    (``0000:1b:00.0``); ``entry`` is the position of the matching entry. A GPU no entry matches is absent.
    Indexes and bus ids that are not on the node, and GPUs matched twice, raise ``ConfigError``.
    """
    entries = validate_entries(entries, where)
    by_index = dict((gpu['index'], gpu) for gpu in gpus)
    by_bus = dict((_gpu_bus(gpu), gpu) for gpu in gpus)
    result = {}
    for pos, entry in enumerate(entries):
        here = '%s[%d]' % (where, pos)
        if entry['devices'] == 'all':
            chosen = [(here + '.devices', gpu) for gpu in gpus]
        else:
            chosen = []
            for num, item in enumerate(entry['devices']):
                dev_where = '%s.devices[%d]' % (here, num)
                gpu = by_index.get(item) if isinstance(item, integer_types) else by_bus.get(item)
                if gpu is None:
                    raise ConfigError(dev_where, 'no GPU %s on this node (GPUs: %s)' % (item, ', '.join(
                        '%s %s' % (g['index'], _gpu_bus(g)) for g in gpus) or 'none'))
                chosen.append((dev_where, gpu))
        for dev_where, gpu in chosen:
            if entry['device-filter'] and _device_id(gpu) not in entry['device-filter']:
                continue
            bus = _gpu_bus(gpu)
            if bus in result and result[bus]['entry'] == pos:
                raise ConfigError(dev_where, 'GPU %s (%s) is listed twice' % (gpu['index'], bus))
            if bus in result:
                raise ConfigError(dev_where, 'GPU %s (%s) is also matched by %s[%d]' % (
                    gpu['index'], bus, where, result[bus]['entry']))
            result[bus] = {'index': gpu['index'], 'enabled': entry['mig-enabled'],
                           'devices': dict(entry['mig-devices']), 'entry': pos}
    return result
