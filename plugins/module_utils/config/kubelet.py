# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's configuration file (``KubeletConfiguration``, ``kubelet.config.k8s.io/v1beta1``): read, changed, written.

Pure functions; ``plugins/modules/kubelet_config.py`` uses them to change ``/var/lib/kubelet/config.yaml`` (the file
kubeadm writes when a node joins) or to write a drop-in of the kubelet's ``--config-dir``.

- :func:`load` reads a document and refuses anything but a ``KubeletConfiguration``.
- :func:`merge` replaces top-level keys (a value given replaces the whole value, ``None`` removes the key) and keeps
  the order of the others.
- :func:`dump` writes the way kubeadm does (``sigs.k8s.io/yaml``: block style, lists not indented under their key,
  ``""`` for an empty string, keys in the document's order, no document marker), so a file kubeadm wrote loads and
  dumps back byte for byte.
- :func:`effective` is what the kubelet runs with when it reads drop-ins over its main file (see its docstring).
- :func:`parse_quantity` / :func:`format_quantity` for ``resource.Quantity`` values (``1Gi``, ``100Mi``, ``512M``),
  :func:`parse_cpuset` / :func:`format_cpuset` for CPU lists (``0-3,8,10-11``).

PyYAML is needed for :func:`load` and :func:`dump` only; it comes through ``ansible.module_utils.common.yaml`` so that
importing this file works without it (``HAS_YAML`` tells).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import math
import re
from fractions import Fraction

from ansible.module_utils.common.yaml import HAS_YAML, SafeDumper
from ansible.module_utils.six import integer_types, string_types

API_VERSION = 'kubelet.config.k8s.io/v1beta1'
KIND = 'KubeletConfiguration'


class KubeletConfigError(ValueError):
    """A file that is not a kubelet configuration, or a value this module cannot read; the text says which."""


# ---------------------------------------------------------------------------------------------------------------
# resource.Quantity (k8s.io/apimachinery/pkg/api/resource): <sign><digits>[.<digits>]<suffix>, the suffix a binary
# SI one (Ki Mi Gi Ti Pi Ei), a decimal SI one (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
BINARY_SUFFIXES = (('Ki', 1), ('Mi', 2), ('Gi', 3), ('Ti', 4), ('Pi', 5), ('Ei', 6))
DECIMAL_SUFFIXES = {'n': -9, 'u': -6, 'm': -3, '': 0, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18}
QUANTITY_RE = re.compile(r'^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)'
                         r'(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$')


def parse_quantity(value):
    """The integer value of a Kubernetes quantity (``'1Gi'`` -> 1073741824, ``'512M'``, ``'1e3'``, ``1000``).

    Like ``Quantity.Value()``, a fraction is rounded up away from zero (``'100m'`` -> 1). Raises ``ValueError``.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError('%r is not a quantity (a number with an optional suffix such as Ki, Mi, Gi, k, M, G)'
                         % (value,))
    if isinstance(value, integer_types):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError('%r is not a quantity' % (value,))
        value = repr(value)
    if not isinstance(value, string_types):
        raise ValueError('%r is not a quantity' % (value,))
    match = QUANTITY_RE.match(value.strip())
    if not match:
        raise ValueError('%r is not a quantity (a number with an optional suffix such as Ki, Mi, Gi, k, M, G)'
                         % (value,))
    sign, number, suffix = match.groups()
    amount = Fraction(number)
    suffix = suffix or ''
    binary = dict(BINARY_SUFFIXES)
    if suffix in binary:
        amount *= 1024 ** binary[suffix]
    elif suffix in DECIMAL_SUFFIXES:
        amount *= Fraction(10) ** DECIMAL_SUFFIXES[suffix]
    else:
        amount *= Fraction(10) ** int(suffix[1:])
    whole = -(-amount.numerator // amount.denominator)  # rounded up
    return -whole if sign == '-' else whole


def format_quantity(value):
    """The shortest exact binary form of an integer quantity: ``'1Gi'``, ``'1100Mi'``, else the plain number."""
    if isinstance(value, bool) or not isinstance(value, integer_types):
        raise ValueError('%r is not a whole number of bytes' % (value,))
    if value == 0:
        return '0'
    for suffix, power in reversed(BINARY_SUFFIXES):
        unit = 1024 ** power
        if value % unit == 0:
            return '%d%s' % (value // unit, suffix)
    return '%d' % value


# ---------------------------------------------------------------------------------------------------------------
# CPU sets in the Linux list format (k8s.io/utils/cpuset): "0-3,8,10-11"; "" is the empty set.
def parse_cpuset(value):
    """The sorted CPU numbers of a list like ``'0-3,8,10-11'`` (also an int, or a list of ints). Raises ``ValueError``."""
    if isinstance(value, bool) or value is None:
        raise ValueError('%r is not a CPU list (like 0-3,8,10-11)' % (value,))
    if isinstance(value, integer_types):
        value = str(value)
    if isinstance(value, (list, tuple)):
        cpus = set()
        for item in value:
            if isinstance(item, bool) or not isinstance(item, integer_types) or item < 0:
                raise ValueError('%r is not a CPU number' % (item,))
            cpus.add(int(item))
        return sorted(cpus)
    if not isinstance(value, string_types):
        raise ValueError('%r is not a CPU list (like 0-3,8,10-11)' % (value,))
    text = value.strip()
    if not text:
        return []
    cpus = set()
    for part in text.split(','):
        part = part.strip()
        bounds = part.split('-', 1)
        if not all(b.strip().isdigit() for b in bounds):
            raise ValueError('%r is not a CPU list (like 0-3,8,10-11): %r is neither a number nor a range'
                             % (value, part))
        first, last = int(bounds[0]), int(bounds[-1])
        if first > last:
            raise ValueError('%r is not a CPU list: the range %r goes backwards' % (value, part))
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpuset(cpus):
    """The list form of CPU numbers (any order, duplicates allowed): ``[0, 1, 2, 3, 8, 10, 11]`` -> ``'0-3,8,10-11'``."""
    numbers = parse_cpuset(list(cpus))
    parts = []
    start = prev = None
    for cpu in numbers + [None]:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append('%d' % start if start == prev else '%d-%d' % (start, prev))
        start = prev = cpu
    return ','.join(parts)


# ---------------------------------------------------------------------------------------------------------------
def _type(value):
    if value is None:
        return 'nothing (an empty document)'
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    return 'a %s (%r)' % (type(value).__name__, value)


def check(doc, what):
    """Raises ``KubeletConfigError`` unless ``doc`` is a mapping of kind KubeletConfiguration, kubelet.config.k8s.io/v1beta1."""
    if not isinstance(doc, dict):
        raise KubeletConfigError('%s: a kubelet configuration is a mapping with kind %s, found %s'
                                 % (what, KIND, _type(doc)))
    found = (doc.get('apiVersion'), doc.get('kind'))
    if found != (API_VERSION, KIND):
        raise KubeletConfigError('%s: not a kubelet configuration: apiVersion %s and kind %s, where %s and %s are needed'
                                 % (what, found[0] if found[0] is not None else '(none)',
                                    found[1] if found[1] is not None else '(none)', API_VERSION, KIND))
    return doc


def load(text, what='the kubelet configuration'):
    """The document of a kubelet configuration file's text (``what`` names the file in errors)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode('utf-8', 'replace')
    if not HAS_YAML:
        raise KubeletConfigError('%s: PyYAML is needed to read a kubelet configuration' % what)
    try:
        docs = list(_load_all(text))
    except Exception as exc:  # the YAML library's own errors: name the problem, not a traceback
        raise KubeletConfigError('%s: not YAML: %s' % (what, ' '.join(str(exc).split())))
    if len(docs) > 1:
        raise KubeletConfigError('%s: %d YAML documents, where the kubelet reads one' % (what, len(docs)))
    return check(docs[0] if docs else None, what)


def _load_all(text):
    import yaml  # HAS_YAML says it is there
    return yaml.load_all(text, Loader=_KubeLoader)


# ---------------------------------------------------------------------------------------------------------------
def same(a, b):
    """Equal data, types included (``1`` is not ``True``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b) and not (isinstance(a, string_types) and isinstance(b, string_types)):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def _is_sorted(keys):
    keys = [str(k) for k in keys]
    return keys == sorted(keys)


def merge(doc, settings):
    """``doc`` with the top-level keys of ``settings`` replaced (None removes the key); returns (new_doc, changed_keys).

    A value replaces the whole value of its key (``cpuManagerPolicyOptions`` is exactly what is given). The other keys
    keep their values and order. A new key goes where it sorts when the document's keys are sorted (kubeadm writes
    them sorted), else at the end. ``changed_keys`` is sorted; ``doc`` is not modified.
    """
    new = copy.deepcopy(doc) if doc is not None else {}
    changed = []
    for key in sorted(settings, key=str):
        value = settings[key]
        if value is None:
            if key in new:
                del new[key]
                changed.append(key)
            continue
        if key in new:
            if not same(new[key], value):
                new[key] = copy.deepcopy(value)
                changed.append(key)
            continue
        changed.append(key)
        if _is_sorted(new):
            items = list(new.items())
            at = len([k for k, v in items if str(k) < str(key)])
            items.insert(at, (key, copy.deepcopy(value)))
            new = dict(items)
        else:
            new[key] = copy.deepcopy(value)
    return new, sorted(changed, key=str)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch: mappings merged key by key, None removes a key, anything else replaces the value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def effective(main_doc, dropin_docs):
    """What the kubelet runs with: the drop-ins of ``--config-dir`` applied over its main file, in order.

    ``dropin_docs`` is a list of documents in the order the kubelet reads them, or a mapping of file names to
    documents (read in the lexical order of the names). The kubelet (``cmd/kubelet/app/server.go``,
    ``mergeKubeletConfigurations``, since 1.28) reads the ``*.conf`` files of the directory in alphanumeric order and
    applies each one over the configuration so far as a JSON merge patch: mappings (``authorization``,
    ``evictionHard``, ``kubeReserved``, ``featureGates``...) are merged field by field, lists (``clusterDNS``,
    ``reservedMemory``, ``cpuManagerPolicyOptions`` is a mapping) and scalars are replaced as a whole; the
    Kubernetes documentation "Kubelet Configuration Directory Merging" shows both. Command-line flags override the
    result; they are not part of this.
    """
    if isinstance(dropin_docs, dict):
        dropin_docs = [dropin_docs[name] for name in sorted(dropin_docs)]
    result = copy.deepcopy(main_doc) if main_doc is not None else {}
    for doc in dropin_docs or []:
        result = merge_patch(result, doc)
    return result


def dropin(settings):
    """The document of a drop-in holding ``settings`` (None values left out), keys sorted like kubeadm's."""
    doc = dict((k, v) for k, v in settings.items() if v is not None)
    doc['apiVersion'] = API_VERSION
    doc['kind'] = KIND
    return dict((k, doc[k]) for k in sorted(doc, key=str))


# ---------------------------------------------------------------------------------------------------------------
# kubeadm writes the file with sigs.k8s.io/yaml (go-yaml v2): a string that would read back as another type is
# double-quoted (""), a string the plain style cannot hold falls back to single quotes, a multi-line string is a
# literal block; lists sit at their key's indentation; an empty mapping is {}.
if HAS_YAML:
    from ansible.module_utils.common.yaml import SafeLoader

    class _KubeLoader(SafeLoader):
        pass

    class _KubeDumper(SafeDumper):
        pass

    def _represent_str(dumper, data):
        tag = 'tag:yaml.org,2002:str'
        if '\n' in data:
            return dumper.represent_scalar(tag, data, style='|')
        if data == '' or dumper.resolve(_ScalarNode, data, (True, False)) != tag:
            return dumper.represent_scalar(tag, data, style='"')
        return dumper.represent_scalar(tag, data)

    def _represent_none(dumper, data):
        return dumper.represent_scalar('tag:yaml.org,2002:null', 'null')

    import yaml as _yaml  # HAS_YAML says it is there
    _ScalarNode = _yaml.ScalarNode
    _KubeDumper.add_representer(str, _represent_str)
    _KubeDumper.add_representer(type(None), _represent_none)
    # Go reads dates into string fields, and go-yaml has no tag for PyYAML's '=' (value) and '!', '&', '*' (yaml)
    _NOT_GO = ('tag:yaml.org,2002:timestamp', 'tag:yaml.org,2002:value', 'tag:yaml.org,2002:yaml')

    def _go_resolvers(resolvers):
        return dict((first, [(tag, regexp) for tag, regexp in found if tag not in _NOT_GO])
                    for first, found in resolvers.items())
    _KubeLoader.yaml_implicit_resolvers = _go_resolvers(SafeLoader.yaml_implicit_resolvers)
    # the dumper keeps timestamps: a date-like string is double-quoted, as go-yaml quotes it
    _KubeDumper.yaml_implicit_resolvers = dict(
        (first, [(tag, regexp) for tag, regexp in found if tag not in _NOT_GO[1:]])
        for first, found in SafeDumper.yaml_implicit_resolvers.items())
else:  # pragma: no cover - the module reports the missing library before calling load or dump
    _KubeLoader = _KubeDumper = None


def dump(doc):
    """The text of ``doc`` as kubeadm writes a kubelet configuration."""
    if not HAS_YAML:
        raise KubeletConfigError('PyYAML is needed to write a kubelet configuration')
    import yaml  # HAS_YAML says it is there
    return yaml.dump(doc, Dumper=_KubeDumper, default_flow_style=False, sort_keys=False, indent=2,
                     width=2147483647, allow_unicode=True, explicit_start=False)
