# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that derive node-class profiles from ``gpu_topology`` snapshots (documented in the .yml beside)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpuops.node.plugins.module_utils.topology.profile import (
    ProfileError, derive, differences, document, file_state)


def _snapshot(topology, name):
    if not isinstance(topology, dict) or 'schema_version' not in topology:
        raise AnsibleFilterError('%s: the input must be a gpu_topology snapshot (the gpu_topology fact, or the '
                                 'gpu_topology a check returned), got %s' % (name, type(topology).__name__))
    return topology


def profile_from_topology(topology, nic_names='exact', driver_version='branch', gpu_model='exact', explain=False):
    try:
        derivation = derive(_snapshot(topology, 'profile_from_topology'),
                            {'nic_names': nic_names, 'driver_version': driver_version, 'gpu_model': gpu_model})
    except ValueError as exc:
        raise AnsibleFilterError('profile_from_topology: %s' % to_native(exc))
    except ProfileError as exc:
        if not explain:
            raise AnsibleFilterError('profile_from_topology: %s' % to_native(exc))
        return {'error': to_native(exc), 'profile': {}, 'notes': {}, 'left_out': {}, 'options': {}, 'failures': []}
    derivation['error'] = None
    return derivation if explain else derivation['profile']


def profile_differences(profiles):
    if not isinstance(profiles, dict) or not all(isinstance(p, dict) for p in profiles.values()):
        raise AnsibleFilterError('profile_differences: the input must map each host to its profile')
    return differences(profiles)


def profile_document(derivation, node_class, nodes, when):
    if not isinstance(derivation, dict) or not set(('profile', 'notes', 'left_out', 'options', 'failures')) <= set(derivation):
        raise AnsibleFilterError('profile_document: the input must be what profile_from_topology(explain=true) '
                                 'returns')
    return document(node_class, derivation, list(nodes), when)


def profile_file_state(text):
    if not isinstance(text, str):
        raise AnsibleFilterError('profile_file_state: the input must be the text of a file')
    return file_state(text)


class FilterModule(object):
    def filters(self):
        return {
            'profile_file_state': profile_file_state,
            'profile_from_topology': profile_from_topology,
            'profile_differences': profile_differences,
            'profile_document': profile_document,
        }
