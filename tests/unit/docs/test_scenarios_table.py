# -*- coding: utf-8 -*-
"""CONTRIBUTING.md's table of the Molecule scenarios is generated from the comment that opens each
molecule/*/molecule.yml (tests/scripts/scenarios_table.py); molecule/README.md's own tables are written by hand and
list exactly the scenario directories."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil

import pytest

import scenarios_table  # tests/scripts

MOLECULE_README = os.path.join(scenarios_table.MOLECULE_DIR, 'README.md')


def _scenario_dirs():
    """The directories of molecule/ that hold a molecule.yml (shared/ holds the pieces they share)."""
    return sorted(n for n in os.listdir(scenarios_table.MOLECULE_DIR)
                  if os.path.isfile(os.path.join(scenarios_table.MOLECULE_DIR, n, 'molecule.yml')))


def test_contributing_scenarios_table_is_current():
    diffs = scenarios_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/scenarios_table.py --write\n' + '\n'.join(diffs)


def test_every_scenario_opens_with_its_one_sentence():
    names = _scenario_dirs()
    assert names and scenarios_table.scenario_names() == names
    for name in names:
        path = os.path.join(scenarios_table.MOLECULE_DIR, name, 'molecule.yml')
        with open(path) as handle:
            first, second = handle.readline(), handle.readline()
        assert first == '---\n', path
        assert second.startswith('# %s: ' % name), path
        text = scenarios_table.summary(name)
        # one sentence
        assert text.endswith('.') and '. ' not in text.rstrip('.'), path


def test_every_scenario_has_a_ci_lane():
    rows = scenarios_table.table()[2:]
    assert [re.match(r'\| `make molecule-(\w+)` \|', row).group(1) for row in rows] == _scenario_dirs()
    assert [row for row in rows if row.endswith('| - |')] == []


def _tables(text):
    """[(header line, [first cells])] of the Markdown tables of ``text``."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith('|'):
            if current is None:
                current = (line, [])
                tables.append(current)
            elif not re.match(r'^\|[-| :]+\|$', line):
                current[1].append(line.split('|')[1].strip())
        else:
            current = None
    return tables


def test_molecule_readme_tables_list_exactly_the_scenarios():
    with open(MOLECULE_README) as handle:
        tables = [t for t in _tables(handle.read()) if t[0].startswith('| scenario |')]
    assert len(tables) >= 1
    for header, cells in tables:
        names = [c.strip('`') for c in cells]
        assert all(re.match(r'^`\w+`$', c) for c in cells), header
        assert sorted(set(n for n in names if names.count(n) > 1)) == [], header
        assert sorted(names) == _scenario_dirs(), header


def _contributing_copy(tmp_path, block):
    with open(scenarios_table.CONTRIBUTING) as handle:
        text = handle.read()
    if scenarios_table.START in text:  # the real block taken out: the copy has only the block under test
        head, rest = text.split(scenarios_table.START, 1)
        text = head + rest.split(scenarios_table.END, 1)[1]
    path = str(tmp_path / 'CONTRIBUTING.md')
    with open(path, 'w') as handle:
        handle.write(text + '\n' + block + '\nafter\n%s\n' % scenarios_table.END)
    return path


def test_rendered_fills_a_marker_block_and_is_then_current(tmp_path):
    path = _contributing_copy(tmp_path, '%s\n| stale |\n%s\n' % (scenarios_table.START, scenarios_table.END))
    (current, generated), = scenarios_table.rendered(path).values()
    assert current != generated and scenarios_table.stale(path)
    assert '\n'.join([scenarios_table.START] + scenarios_table.table() + [scenarios_table.END]) in generated
    assert '| stale |' not in generated and generated.endswith('after\n%s\n' % scenarios_table.END)
    with open(path, 'w') as handle:
        handle.write(generated)
    assert scenarios_table.stale(path) == []


def test_rendered_names_a_missing_marker(tmp_path):
    path = str(tmp_path / 'CONTRIBUTING.md')
    with open(path, 'w') as handle:
        handle.write('# no block\n%s\n' % scenarios_table.END)
    with pytest.raises(scenarios_table.MarkerError, match=re.escape(scenarios_table.START)):
        scenarios_table.rendered(path)
    with open(path, 'w') as handle:
        handle.write('# no end\n%s\n' % scenarios_table.START)
    with pytest.raises(scenarios_table.MarkerError, match=re.escape(scenarios_table.END)):
        scenarios_table.rendered(path)


def test_summary_refuses_a_missing_or_misnamed_comment(tmp_path):
    for name, text in (('alpha', '---\n# alpha: proves a thing,\n# over two lines.\nplatforms: []\n'),
                       ('beta', '---\nplatforms: []\n'), ('gamma', '---\n# default: copied from another.\n')):
        os.makedirs(str(tmp_path / name))
        with open(str(tmp_path / name / 'molecule.yml'), 'w') as handle:
            handle.write(text)
    assert scenarios_table.summary('alpha', str(tmp_path)) == 'proves a thing, over two lines.'
    for name in ('beta', 'gamma'):
        with pytest.raises(scenarios_table.SummaryError, match='# %s: ' % name):
            scenarios_table.summary(name, str(tmp_path))
    shutil.rmtree(str(tmp_path / 'beta'))
    shutil.rmtree(str(tmp_path / 'gamma'))
    assert scenarios_table.scenario_names(str(tmp_path)) == ['alpha']
