# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The path-to-scenario table of `make molecule-affected` (tests/affected/scenarios.yml) is complete and true to the
tree: every scenario in a row, every tracked file in a row, no row naming what does not exist.

What this cannot prove: that a row lists every scenario a path can break (that is read from the scenarios when the
row is written); a change to a path under an `all` row runs every scenario.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess

import pytest

import affected  # tests/affected  pylint: disable=import-error
from repo_paths import REPO as ROOT

TABLE = affected.load_table()
NAMES = affected.scenario_names()


def tracked_files():
    try:
        out = subprocess.check_output(['git', 'ls-files'], cwd=ROOT)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail('git ls-files failed: %s' % exc)
    files = [f for f in out.decode('utf-8').splitlines() if f and os.path.exists(os.path.join(ROOT, f))]
    assert len(files) > 100, 'git ls-files listed %d files' % len(files)
    return files


def test_rows_are_well_formed():
    for row in TABLE:
        assert sorted(row) in (['paths', 'scenarios'], ['paths', 'scenarios', 'why']), row
        assert row['paths'], row
        assert row['scenarios'] or row.get('why'), 'a row without scenarios says why: %r' % row


def test_every_scenario_is_in_a_row_of_its_own():
    named = set(s for row in TABLE for s in row['scenarios'] if s != 'all')
    assert sorted(set(NAMES) - named) == []
    # its own folder runs it
    for name in NAMES:
        assert name in affected.scenarios_for(TABLE, ['molecule/%s/molecule.yml' % name], NAMES)[0]


def test_rows_name_only_what_exists():
    for row in TABLE:
        for scenario in row['scenarios']:
            assert scenario == 'all' or scenario in NAMES, 'no scenario %s (row %r)' % (scenario, row['paths'])
        for path in row['paths']:
            assert os.path.exists(os.path.join(ROOT, path)), 'no path %s in the tree' % path


def test_every_tracked_file_is_in_a_row():
    _wanted, _unused, unknown = affected.scenarios_for(TABLE, tracked_files(), NAMES)
    assert unknown == [], 'files in no row of tests/affected/scenarios.yml: %s' % unknown


def test_a_change_chooses_its_scenarios():
    assert affected.scenarios_for(TABLE, ['roles/rdma/tasks/main.yml'], NAMES) == (['rdma'], [], [])
    wanted, unused, unknown = affected.scenarios_for(TABLE, ['README.md', 'roles/gpuops/tasks/main.yml'], NAMES)
    assert (wanted, unused, unknown) == (NAMES, ['README.md'], [])
    assert affected.scenarios_for(TABLE, ['nowhere/file'], NAMES) == ([], [], ['nowhere/file'])


def test_cli_refuses_a_path_in_no_row(capsys):
    assert affected.main(['nowhere/file']) == 1
    assert 'in no row of tests/affected/scenarios.yml (add one): nowhere/file' in capsys.readouterr().err
    assert affected.main(['roles/mig/tasks/main.yml', 'docs/index.md']) == 0
    out, err = capsys.readouterr()
    assert out == 'mig\n' and 'no scenario uses: docs/index.md' in err
