# -*- coding: utf-8 -*-
"""The README's table of roles is generated from roles/*/meta/main.yml (tests/scripts/roles_table.py): current, one
row a role, every role described with its platforms and its README."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest

import roles_table  # tests/scripts


def _roles():
    return sorted(n for n in os.listdir(roles_table.ROLES_DIR) if os.path.isdir(os.path.join(roles_table.ROLES_DIR, n)))


def test_readme_roles_table_is_current():
    diffs = roles_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/roles_table.py --write\n' + '\n'.join(diffs)


def test_every_role_is_described_with_its_platforms_and_readme():
    for name in _roles():
        assert os.path.isfile(os.path.join(roles_table.ROLES_DIR, name, 'meta', 'main.yml')), name
        assert os.path.isfile(os.path.join(roles_table.ROLES_DIR, name, 'README.md')), name
        info = roles_table.galaxy_info(name)
        assert info.get('description'), name
        assert info.get('platforms'), name
        assert all(p.get('name') and p.get('versions') for p in info['platforms']), name


def test_table_has_one_row_per_role():
    rows = roles_table.table()[2:]
    named = [re.match(r'\| \[`(\w+)`\]\(roles/(\w+)/README\.md\)', row).groups() for row in rows]
    assert all(a == b for a, b in named)
    assert sorted(a for a, _b in named) == _roles()
    assert len(rows) == len(_roles())
    # the internal role last, marked so
    assert rows[-1].startswith('| [`gpuops`](roles/gpuops/README.md) (internal) |')
    assert sum('(internal)' in row for row in rows) == 1


def test_platforms_cell():
    info = {'platforms': [{'name': 'Debian', 'versions': ['bookworm', 'trixie']},
                          {'name': 'EL', 'versions': [8, '9']}, {'name': 'Ubuntu', 'versions': ['all']}]}
    assert roles_table.platforms(info) == 'Debian bookworm, trixie; EL 8, 9; Ubuntu (all versions)'


def _readme_copy(tmp_path, block):
    with open(roles_table.README) as handle:
        text = handle.read()
    path = str(tmp_path / 'README.md')
    with open(path, 'w') as handle:
        handle.write('# Title\n\n' + block + '\n' + text)
    return path


def test_rendered_fills_a_marker_block_and_is_then_current(tmp_path):
    path = _readme_copy(tmp_path, '%s\n| stale |\n%s\n' % (roles_table.START, roles_table.END))
    (current, generated), = roles_table.rendered(path).values()
    assert current != generated and roles_table.stale(path)
    assert '\n'.join([roles_table.START] + roles_table.table() + [roles_table.END]) in generated
    assert '| stale |' not in generated
    # the other END markers of the README are untouched
    assert generated.count(roles_table.END) == current.count(roles_table.END)
    with open(path, 'w') as handle:
        handle.write(generated)
    assert roles_table.stale(path) == []


def test_rendered_names_a_missing_marker(tmp_path):
    path = str(tmp_path / 'README.md')
    with open(path, 'w') as handle:
        handle.write('# no block\n%s\n' % roles_table.END)
    with pytest.raises(roles_table.MarkerError, match=re.escape(roles_table.START)):
        roles_table.rendered(path)
    with open(path, 'w') as handle:
        handle.write('# no end\n%s\n| x |\n' % roles_table.START)
    with pytest.raises(roles_table.MarkerError, match=re.escape(roles_table.END)):
        roles_table.rendered(path)
