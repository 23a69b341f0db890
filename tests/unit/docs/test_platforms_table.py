# -*- coding: utf-8 -*-
"""The README's supported platforms are generated from the roles' meta and the Molecule scenarios
(tests/scripts/platforms_table.py): current, every declared release named, and "tested" only where a scenario boots
it (or, for Ubuntu, a scenario whose Debian nodes say they are Ubuntu). What it cannot prove: that a release marked
"not run" works."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

import platforms_table  # tests/scripts


def test_readme_table_is_current():
    diffs = platforms_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/platforms_table.py --write\n' + '\n'.join(diffs)


def test_a_release_is_tested_only_where_a_scenario_boots_it():
    rows = platforms_table.table().splitlines()[2:]
    by_suite = platforms_table.scenarios_by_suite()
    assert set(by_suite) == {'bookworm', 'trixie'}
    for (os_name, version), (_name, release, _also) in platforms_table.RELEASES.items():
        row = [r for r in rows if ('| %s |' % release) in r]
        assert len(row) == 1, release
        if os_name == 'Debian':
            for scenario in by_suite[version]:
                assert '`%s`' % scenario in row[0]
        elif os_name == 'Ubuntu' and platforms_table.scenarios_by_ubuntu().get(version):
            # nodes that only say they are Ubuntu: the row says what is not run
            assert 'Ubuntu\'s own packages and kernel are not run' in row[0], row[0]
        else:
            assert 'not run' in row[0], row[0]


def test_an_unknown_release_fails(tmp_path):
    role = tmp_path / 'roles' / 'x' / 'meta'
    role.mkdir(parents=True)
    (role / 'main.yml').write_text('galaxy_info:\n  platforms:\n    - {name: SLES, versions: ["15"]}\n')
    with pytest.raises(ValueError, match='SLES 15'):
        platforms_table.table(roles_dir=str(tmp_path / 'roles'))


def test_a_readme_without_the_marker_fails(tmp_path):
    readme = tmp_path / 'README.md'
    readme.write_text('# nothing\n')
    with pytest.raises(ValueError, match='no marker line'):
        platforms_table.rendered(str(readme))


def test_the_readme_is_a_front_door():
    with open(os.path.join(platforms_table.ROOT, 'README.md')) as handle:
        lines = handle.read().splitlines()
    assert len(lines) < 250, 'README.md has %d lines: the reference belongs in docs/' % len(lines)
