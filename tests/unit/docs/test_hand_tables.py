# -*- coding: utf-8 -*-
"""The tables of the README, docs/ and CONTRIBUTING.md that are written by hand are tested against what they list:
the playbooks, the `gpu_topology` fact's keys, the report's statuses, the roles' converged checks, the make
targets. A table that misses a thing, or names one that does not exist, fails here."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from repo_paths import REPO


def _read(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return handle.read()


def _section(text, heading):
    """The lines of a section, from its heading to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip('#'))
    lines = text.splitlines()
    start = lines.index(heading)
    out = []
    for line in lines[start + 1:]:
        match = re.match(r'^(#+) ', line)
        if match and len(match.group(1)) <= level:
            break
        out.append(line)
    return out


def _first_cells(lines):
    """The code spans of each table row's first cell."""
    rows = [l for l in lines if l.startswith('| ') and not l.startswith('| ---') and not re.match(r'^\|-', l)]
    return [re.findall(r'`([^`]+)`', row.split('|')[1]) for row in rows[1:]]


def test_the_readme_lists_every_playbook():
    cells = _first_cells(_section(_read('README.md'), '## Playbooks'))
    named = sorted(c[0] for c in cells)
    playbooks = sorted('gpuops.node.%s' % name[:-4] for name in os.listdir(os.path.join(REPO, 'playbooks'))
                       if name.endswith('.yml'))
    assert named == playbooks


def test_the_fact_table_names_every_key_the_facts_have(tmp_path):
    from simhelpers import gather_tree, profile_tree
    keys = set()
    for profile in ('h100-sxm-8gpu-ib', 'a100-sxm-8gpu-ib', 'pcie-4gpu-roce'):
        keys.update(gather_tree(profile_tree(profile), tmp_path, profile))
    cells = _first_cells(_section(_read('docs', 'topology.md'), '## The `gpu_topology` fact'))
    documented = set(name for row in cells for name in row)
    assert sorted(keys - documented) == [], 'keys of gpu_topology the table does not describe'
    assert sorted(documented - keys) == [], 'rows of the table that are no key of gpu_topology'


def test_the_status_table_is_the_reports_statuses():
    from ansible_collections.gpuops.node.plugins.module_utils.report.model import STATUSES
    cells = _first_cells(_section(_read('docs', 'rollout.md'), '## The rack report'))
    statuses = [row[0] for row in cells if row and row[0] in STATUSES or row and row[0] == 'not_started']
    assert sorted(statuses) == sorted(set(STATUSES) | {'not_started'})


def test_the_roles_table_says_what_each_role_converges():
    from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import CHECKS
    text = _read('docs', 'roles.md')
    rows = [l for l in text.splitlines() if l.startswith('| [`')]
    assert rows, 'docs/roles.md has no roles table'
    seen = set()
    for row in rows:
        cells = row.split('|')
        role = re.match(r'^ \[`(\w+)`\]', cells[1]).group(1)
        seen.add(role)
        documented = sorted(re.findall(r'`(\w+)`', cells[3]))
        converged = sorted(c.name for c in CHECKS if c.role == role)
        assert documented == converged, role
    roles = set(n for n in os.listdir(os.path.join(REPO, 'roles')) if n != 'gpuops')
    assert seen == roles


def test_the_targets_table_is_the_makefiles():
    makefile = _read('Makefile')
    targets = set(re.findall(r'^([a-z][a-z-]*):', makefile, re.M))
    helped = set(re.findall(r'^#   make ([a-z][a-zA-Z-]*)', makefile, re.M))
    cells = _first_cells(_section(_read('CONTRIBUTING.md'), '## Targets'))
    documented = set(row[0].split()[1] for row in cells if row and row[0].startswith('make '))
    pattern_targets = set(t for t in documented if t.endswith('-NAME'))
    assert sorted(documented - targets - pattern_targets) == [], 'rows naming no Makefile target'
    assert sorted(helped - documented) == [], "targets of the Makefile's help the table leaves out"


def test_the_readme_states_the_ansible_core_the_collection_requires():
    import yaml
    requires = yaml.safe_load(_read('meta', 'runtime.yml'))['requires_ansible']
    minimum = re.match(r'^>=(\d+\.\d+)(\.0)?$', requires).group(1)
    assert 'ansible-core %s or newer' % minimum in ' '.join(_read('README.md').split())
    with open(os.path.join(REPO, 'tests', 'requirements.txt')) as handle:
        core = re.search(r'^ansible-core==(\S+)$', handle.read(), re.M).group(1)
    assert 'CI runs %s' % core in _read('README.md')
