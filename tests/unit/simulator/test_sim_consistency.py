# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator agrees with the rest of the repository: the files it names exist, and the node classes
of its profiles (the classes make demo rolls out) are node classes of the example inventory, with the
same hardware."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from simhelpers import PROFILE_NAMES, REPO, profile_path

from simulator import bundle

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import validate_profile

EXAMPLE = os.path.join(REPO, 'inventories', 'example')

# The keys of a node class profile that say what hardware the class is (the others are site policy:
# persistence and compute mode, driver pin, NIC names, GPU-NIC distance, NUMA balance, error budgets).
HARDWARE_KEYS = ('gpu_count', 'gpu_model', 'pcie_gen_min', 'pcie_width_min', 'nvlink_relation',
                 'nvlink_active_links', 'ecc_mode', 'mig_mode', 'nic_count', 'nic_link_layer', 'nic_rate_min_gbps')

# A repository path in the simulator's sources and documents (not part of a URL or of a longer path).
PATH_RE = re.compile(r'(?<![\w/.:-])((?:\.build|bench|changelogs|docs|inventories|meta|molecule|playbooks|plugins|'
                     r'roles|simulator|tests)/[\w./-]*\w)')


def _meta(name):
    with open(os.path.join(profile_path(name), 'profile.yml')) as handle:
        return bundle.load_yaml(handle.read())


def _example_classes():
    """{class name: (its variables, the file of its profile)}: the files of group_vars/<class>/ merged."""
    classes = {}
    for directory in sorted(glob.glob(os.path.join(EXAMPLE, 'group_vars', '*'))):
        if not os.path.isdir(directory):
            continue
        data = {}
        for path in sorted(glob.glob(os.path.join(directory, '*.yml'))):
            with open(path) as handle:
                data.update(yaml.safe_load(handle) or {})
        if 'gpuops_node_class' in data:
            classes[data['gpuops_node_class']] = (data, os.path.join(directory, data['gpuops_node_class'] + '.yml'))
    return classes


def _example_groups():
    """{group name: set of host names} of the example inventory, nested groups flattened."""
    with open(os.path.join(EXAMPLE, 'hosts.yml')) as handle:
        inventory = yaml.safe_load(handle)
    groups = {}

    def walk(name, group):
        group = group or {}
        hosts = set(group.get('hosts') or {})
        for child, sub in (group.get('children') or {}).items():
            hosts |= walk(child, sub)
        groups.setdefault(name, set()).update(hosts)
        return hosts

    walk('all', inventory['all'])
    return groups


def _simulator_classes():
    return dict((name, _meta(name)['node_class']) for name in PROFILE_NAMES)


def test_example_inventory_node_classes_are_complete_and_valid():
    """Every class directory has the class's profile file (naming itself, a valid gpu_topology_check profile, nothing
    else) and settings of the collection's roles, and the class has hosts, each in one rack."""
    classes = _example_classes()
    groups = _example_groups()
    racks = dict((name, hosts) for name, hosts in groups.items() if name.startswith('rack_'))
    assert classes
    for name, (data, path) in classes.items():
        assert os.path.basename(os.path.dirname(path)) == name
        with open(path) as handle:
            assert sorted(yaml.safe_load(handle)) == ['gpuops_node_class', 'gpuops_node_class_profile'], path
        assert sorted(k for k in data if k.startswith('gpuops_')) == ['gpuops_node_class', 'gpuops_node_class_profile']
        # anything else is a setting of the class for a role of the collection (nccl_test_min_busbw_gbps, ...)
        roles = os.listdir(os.path.join(REPO, 'roles'))
        assert [k for k in data if not k.startswith('gpuops_') and k.split('_')[0] not in roles] == [], name
        assert validate_profile(data['gpuops_node_class_profile']) == [], name
        assert groups.get(name), 'node class %s has no hosts in hosts.yml' % name
        for host in groups[name]:
            assert [rack for rack, hosts in racks.items() if host in hosts] != [], host
    for host in groups['all']:
        assert len([rack for rack, hosts in racks.items() if host in hosts]) == 1, host
        assert len([c for c in classes if host in groups.get(c, ())]) == 1, host


def test_simulator_node_classes_are_example_inventory_classes():
    """A class a simulator profile (and so make demo) uses is defined by the example inventory."""
    classes = _example_classes()
    missing = dict((name, cls) for name, cls in _simulator_classes().items() if cls not in classes)
    assert missing == {}, 'simulator profiles name node classes the example inventory does not define: %s' % missing


def test_demo_layout_uses_only_simulator_profiles():
    with open(os.path.join(REPO, 'simulator', 'demo-layout.yml')) as handle:
        layout = yaml.safe_load(handle)
    used = [entry['profile'] for entries in layout['racks'].values() for entry in entries]
    assert used and set(used) <= set(PROFILE_NAMES)


@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_example_class_is_the_simulated_hardware(name):
    """The example inventory's class and the profile's expected_node_class agree on the hardware keys."""
    meta = _meta(name)
    data = _example_classes()[meta['node_class']][0]
    example = data['gpuops_node_class_profile']
    expected = meta['expected_node_class']
    assert dict((k, example.get(k)) for k in HARDWARE_KEYS) == dict((k, expected.get(k)) for k in HARDWARE_KEYS)


def _source_files():
    files = glob.glob(os.path.join(REPO, 'simulator', '*.py'))
    files += [os.path.join(REPO, 'simulator', 'README.md'), os.path.join(REPO, 'simulator', 'demo-layout.yml')]
    files += glob.glob(os.path.join(REPO, 'tests', 'unit', 'simulator', '*.py'))
    return sorted(files)


def test_paths_named_by_the_simulator_exist():
    """Files and folders the simulator's code, tests and documents name are in the repository (.build/demo
    is what make demo writes)."""
    dangling = []
    for path in _source_files():
        with open(path, 'rb') as handle:
            text = handle.read().decode('utf-8')
        for match in PATH_RE.finditer(text):
            named = match.group(1)
            if named.startswith('.build/'):
                if not named.startswith('.build/demo'):
                    dangling.append((os.path.relpath(path, REPO), named))
            elif not os.path.exists(os.path.join(REPO, named)):
                dangling.append((os.path.relpath(path, REPO), named))
    assert dangling == []
