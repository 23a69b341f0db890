# -*- coding: utf-8 -*-
"""The playbooks' variables are documented in one place, the argument spec of the internal role gpuops.node.gpuops:
the Variables table of docs/variables.md is generated from it, the role's defaults hold exactly its defaults, and the roles the
rollout defers checks for are the check module's."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import yaml

import variables_table  # tests/scripts

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import ROLES

ROLE = os.path.join(variables_table.ROOT, 'roles', 'gpuops')


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def test_readme_table_is_current():
    diffs = variables_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/variables_table.py --write\n' + '\n'.join(diffs)


def test_defaults_are_the_spec_defaults():
    spec = variables_table.options()
    defaults = _load('defaults', 'main.yml')
    assert defaults == dict((name, opt['default']) for name, opt in spec.items() if 'default' in opt)


def test_every_option_is_documented_and_public():
    for name, opt in variables_table.options().items():
        assert re.match(r'gpuops_[a-z0-9_]+\Z', name), name
        assert opt.get('type'), name
        assert opt.get('description'), name
        # a default is given once: in the spec, or as a "Default:" line
        lines = [line for line in opt['description'] if line.startswith('Default:')]
        assert len(lines) <= 1 and not (lines and ('default' in opt or opt.get('required'))), name


def test_every_variable_the_playbooks_read_is_in_the_spec():
    spec = set(variables_table.options())
    texts = []
    for directory in (os.path.join(ROLE, 'tasks'), os.path.join(ROLE, 'vars'),
                      os.path.join(variables_table.ROOT, 'playbooks')):
        for name in os.listdir(directory):
            if name.endswith('.yml'):
                with open(os.path.join(directory, name)) as handle:
                    texts.append(handle.read())
    used = set(re.findall(r'(?<![_\w])gpuops_[a-z0-9_]+', '\n'.join(texts)))
    # gpuops_<name>_enabled is per role (documented with gpuops_roles); gpuops_sim_* belong to the simulator
    used = set(u for u in used if not u.endswith('_enabled') and not u.startswith('gpuops_sim_'))
    assert sorted(used - spec) == []


def test_generated_table_has_no_raw_markup():
    text = '\n'.join(variables_table.table())
    outside_code = re.sub(r'`[^`]*`', '', text)
    assert '<' not in outside_code and 'C(' not in outside_code and 'V(' not in outside_code


def test_deferrable_roles_are_the_check_modules():
    assert _load('vars', 'main.yml')['__gpuops_check_roles'] == list(ROLES)


def test_gate_roles_are_the_roles_with_a_gate():
    roles_dir = os.path.dirname(ROLE)
    with_gate = sorted(name for name in os.listdir(roles_dir)
                       if os.path.exists(os.path.join(roles_dir, name, 'tasks', 'gate.yml')))
    assert sorted(_load('vars', 'main.yml')['__gpuops_gate_roles']) == with_gate


def test_spec_entry_point_is_not_a_task_file():
    # the spec is validated inside the rollout (tasks/variables.yml), so that a wrong value fails that host in the
    # report; an entry point named like a task file would also be validated by Ansible, outside any rescue
    specs = _load('meta', 'argument_specs.yml')['argument_specs']
    assert list(specs) == ['main']
    assert not os.path.exists(os.path.join(ROLE, 'tasks', 'main.yml'))
