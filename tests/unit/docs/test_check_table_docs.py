# -*- coding: utf-8 -*-
"""The check tables of docs/topology.md and the check module's documentation are generated from the one table of checks."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import check_table  # tests/scripts

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import CHECKS, ROLES


def test_generated_documents_are_current():
    diffs = check_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/check_table.py --write\n' + '\n'.join(diffs)


def test_every_check_has_a_troubleshooting_row():
    with open(os.path.join(check_table.ROOT, 'docs', 'troubleshooting.md')) as handle:
        section = handle.read()
    first_cells = ''.join(l.split('|')[1] for l in section.splitlines() if l.startswith('| `'))
    named = set(re.findall(r'`([a-z_]+)`', first_cells))
    assert sorted(c.name for c in CHECKS if c.name != 'nic_names' and c.name not in named) == []


def test_module_documentation_parses_with_every_key():
    import yaml
    from ansible_collections.gpuops.node.plugins.modules import gpu_topology_check
    doc = yaml.safe_load(gpu_topology_check.DOCUMENTATION)
    text = ' '.join(doc['options']['expected']['description'])
    assert all('C(%s)' % c.key in text for c in CHECKS if c.key)


def test_defer_roles_choices_are_the_roles_of_the_table():
    import yaml
    from ansible_collections.gpuops.node.plugins.modules import gpu_topology_check
    doc = yaml.safe_load(gpu_topology_check.DOCUMENTATION)
    assert doc['options']['defer_roles']['choices'] == list(ROLES)
