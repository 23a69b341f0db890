# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``gpuops.node.rdma`` role will change, decided before it changes anything.

Pure functions over the role's variables, the ``gpu_topology`` facts (``nics``) and the installed packages;
``plugins/modules/rdma_plan.py`` reads the node and calls :func:`plan`. Every refusal starts with the variable to
change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import bad_glob

STACKS = ('distro', 'doca_ofed')
IB = 'infiniband'
ETH = 'ethernet'

# (variable, low, high) of the numeric variables
_RANGES = (
    ('rdma_roce_priority', 0, 7),
    ('rdma_roce_cnp_priority', 0, 7),
    ('rdma_roce_dscp', 0, 63),
    ('rdma_roce_cnp_dscp', 0, 63),
    ('rdma_roce_tos', 0, 255),
)


def _integers(values):
    """The numeric variables as ints where they are digit strings (``-e rdma_roce_priority=4`` gives a string)."""
    values = dict(values)
    for name, _low, _high in _RANGES:
        value = values.get(name)
        if isinstance(value, str) and value.strip().isdigit():
            values[name] = int(value)
    return values


def validate(values):
    """Errors of the role's variables a spec cannot express (ranges, combinations), each naming the variable."""
    values = _integers(values)
    errors = []
    if values.get('rdma_stack') not in STACKS:
        errors.append('rdma_stack must be one of %s, got %r' % (', '.join(STACKS), values.get('rdma_stack')))
    for name, low, high in _RANGES:
        value = values.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            errors.append('%s must be an integer from %d to %d, got %r' % (name, low, high, value))
    for name in ('rdma_roce_hcas', 'rdma_ipoib_hcas'):
        for pattern in values.get(name) or []:
            if bad_glob(pattern):
                errors.append('%s: %r is not a glob (empty, or an unclosed [)' % (name, pattern))
    if errors:
        return errors
    if values['rdma_roce_tos'] >> 2 != values['rdma_roce_dscp']:
        errors.append('rdma_roce_tos %d carries DSCP %d (its upper six bits), but rdma_roce_dscp is %d: set '
                      'rdma_roce_tos to %d (ECT(0)) or %d' % (
                          values['rdma_roce_tos'], values['rdma_roce_tos'] >> 2, values['rdma_roce_dscp'],
                          values['rdma_roce_dscp'] * 4 + 2, values['rdma_roce_dscp'] * 4))
    tos = values['rdma_roce_tos']
    if tos & 3 == 3:
        errors.append('rdma_roce_tos %d sets both ECN bits (CE, congestion experienced), which only a congested '
                      'switch may set: use %d (ECT(0)) or %d' % (tos, tos - 1, tos - 3))
    if values['rdma_roce_cnp_dscp'] == values['rdma_roce_dscp'] and \
            values['rdma_roce_cnp_priority'] != values['rdma_roce_priority']:
        errors.append('rdma_roce_cnp_dscp %d is rdma_roce_dscp too: one DSCP cannot map to priority %d for RoCE '
                      'and %d for congestion notifications' % (values['rdma_roce_cnp_dscp'],
                                                               values['rdma_roce_priority'],
                                                               values['rdma_roce_cnp_priority']))
    if values['rdma_stack'] == 'doca_ofed':
        url = values.get('rdma_doca_repo_url') or ''
        if not url.startswith(('http://', 'https://', 'file://')):
            errors.append('rdma_doca_repo_url must be the http(s):// or file:// URL of the DOCA mirror for '
                          'rdma_stack doca_ofed, got %r' % url)
        key = values.get('rdma_doca_repo_key') or ''
        if not key and not values.get('rdma_doca_repo_key_url'):
            errors.append('rdma_doca_repo_key (or rdma_doca_repo_key_url) must give the DOCA mirror\'s signing key '
                          'for rdma_stack doca_ofed')
        elif key and '-----BEGIN PGP PUBLIC KEY BLOCK-----' not in key:
            errors.append('rdma_doca_repo_key must be an ASCII-armoured public key (-----BEGIN PGP PUBLIC KEY '
                          'BLOCK-----)')
        if not values.get('rdma_doca_packages'):
            errors.append('rdma_doca_packages must name at least one package for rdma_stack doca_ofed')
    return errors


def link_layer(nic):
    """``infiniband``, ``ethernet`` or None: the link layer its ports agree on."""
    layers = set((p.get('link_layer') or '').lower() for p in nic.get('ports') or [])
    return layers.pop() if len(layers) == 1 and layers <= set((IB, ETH)) else None


def select(nics, patterns, layer, variable):
    """``(names, errors)``: the NICs of ``layer`` that match a glob of ``patterns`` (all of that layer when empty).

    A glob that selects no NIC of that layer is an error naming ``variable``.
    """
    of_layer = [n for n in nics if link_layer(n) == layer]
    if not patterns:
        return [n['name'] for n in of_layer], []
    names, errors = [], []
    for pattern in patterns:
        hits = [n['name'] for n in of_layer if fnmatch.fnmatchcase(n['name'], pattern)]
        if not hits:
            errors.append('%s: %r selects no %s HCA; the host has %s' % (
                variable, pattern, 'InfiniBand' if layer == IB else 'Ethernet (RoCE)',
                ', '.join('%s (%s)' % (n['name'], link_layer(n) or 'link layer unknown') for n in nics) or 'none'))
        names.extend(h for h in hits if h not in names)
    order = [n['name'] for n in nics]
    return sorted(names, key=order.index), errors


def installed_stack(installed, markers):
    """``doca_ofed``, ``distro`` or None from ``{package: version}``.

    DOCA-OFED and MLNX_OFED are told by packages only they ship (``markers``) or an rdma-core whose version
    carries ``mlnx``; the distribution's stack by its rdma-core.
    """
    found = sorted(p for p in markers if p in installed)
    core = installed.get('rdma-core')
    if found or (core and 'mlnx' in core):
        return 'doca_ofed', found + (['rdma-core %s' % core] if core and 'mlnx' in core else [])
    if core:
        return 'distro', ['rdma-core %s' % core]
    return None, []


def plan(values, facts, installed, markers):
    """The plan of the role, or errors.

    ``values``: the role's variables; ``facts``: the ``gpu_topology`` fact; ``installed``: ``{package: version}``;
    ``markers``: the package names that only DOCA-OFED/MLNX_OFED ship. Returns ``{errors, stack, roce, ipoib}``.
    """
    errors = validate(values)
    result = {'errors': errors, 'stack': None, 'roce': [], 'ipoib': None}
    if errors:
        return result
    nics = facts.get('nics') or []
    if 'sys/class/infiniband' in (facts.get('missing') or []):
        errors.append('rdma_sysfs_root: %s/class/infiniband does not exist: no RDMA device is bound to a driver '
                      '(set gpuops_rdma_enabled: false for a node without HCAs)' % values.get('rdma_sysfs_root', '/sys'))
        return result
    unknown = [n['name'] for n in nics if link_layer(n) is None]
    if unknown:
        errors.append('rdma_sysfs_root: the link layer of %s cannot be read (ports/*/link_layer): the role cannot tell '
                      'InfiniBand from RoCE there' % ', '.join(unknown))
        return result
    current, evidence = installed_stack(installed, markers)
    wanted = values['rdma_stack']
    replace = current is not None and current != wanted
    if replace and not values.get('rdma_stack_replace'):
        errors.append('rdma_stack: the host has the %s RDMA stack (%s) and %s was asked for; set '
                      'rdma_stack_replace: true to replace it' % (
                          'DOCA-OFED/MLNX_OFED' if current == 'doca_ofed' else "distribution's",
                          ', '.join(evidence), wanted))
    result['stack'] = {'installed': current, 'evidence': evidence, 'wanted': wanted, 'replace': replace,
                       'remove': sorted(p for p, v in installed.items() if p in markers or 'mlnx' in v)
                       if replace and current == 'doca_ofed' and values.get('rdma_stack_replace') else []}
    if values.get('rdma_roce'):
        names, problems = select(nics, values.get('rdma_roce_hcas'), ETH, 'rdma_roce_hcas')
        errors.extend(problems)
        for name in names:
            nic = [n for n in nics if n['name'] == name][0]
            netdevs = list(nic.get('netdevs') or [])
            if not netdevs:
                errors.append('rdma_roce_hcas: %s has no network interface in sysfs (device/net): its Ethernet '
                              'driver is not bound' % name)
                continue
            result['roce'].append({'hca': name, 'netdev': netdevs[0],
                                   'ports': [p['port'] for p in nic.get('ports') or []]})
    keep, problems = select(nics, values.get('rdma_ipoib_hcas'), IB, 'rdma_ipoib_hcas') \
        if values.get('rdma_ipoib_hcas') else ([], [])
    errors.extend(problems)
    infiniband = [n['name'] for n in nics if link_layer(n) == IB]
    result['ipoib'] = {
        'module': bool(keep),
        'keep': keep,
        'down': [n for n in infiniband if n not in keep] if keep else [],
        'loaded': facts.get('ipoib_module_loaded'),
    }
    return result
