# -*- coding: utf-8 -*-
"""Render CONTRIBUTING.md's table of the Molecule scenarios from the first comment of each molecule/*/molecule.yml.

    python3 tests/scripts/scenarios_table.py            exit 1 and show what differs when the table is stale
    python3 tests/scripts/scenarios_table.py --write    rewrite it

The table sits between the line START and the next END line of CONTRIBUTING.md; the unit test
tests/unit/docs/test_scenarios_table.py fails when it is stale. One row a scenario (every molecule/<name>/molecule.yml),
sorted by name as the Makefile sorts them:

* scenario: ``make molecule-<name>``;
* what it proves: the comment that opens the scenario's molecule.yml (after ``---``), one sentence
  ``# <name>: <text>``, which may go on over further comment lines; molecule/README.md has the details;
* CI lane: the lane of tests/ci_plan.yml whose stages include ``molecule-<name>`` (``after both lanes`` for a stage of
  ``after``), or "-" when the plan does not run it.

Standard library and PyYAML only; run from anywhere.
"""

from __future__ import (absolute_import, division, print_function)

import glob
import os
import re
import sys

import yaml

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CONTRIBUTING = os.path.join(ROOT, 'CONTRIBUTING.md')
MOLECULE_DIR = os.path.join(ROOT, 'molecule')
CI_PLAN = os.path.join(ROOT, 'tests', 'ci_plan.yml')
START = '<!-- generated from molecule/*/molecule.yml by tests/scripts/scenarios_table.py -->'
END = '<!-- end of generated lines -->'
_SUMMARY = re.compile(r'^(?P<name>[A-Za-z0-9_-]+): (?P<text>\S.*)$')


MarkerError = generated_docs.MarkerError


class SummaryError(ValueError):
    """A molecule.yml does not open with ``# <name>: <text>``."""


def scenario_names(molecule_dir=None):
    """The scenarios: the directories of molecule/ with a molecule.yml, sorted."""
    molecule_dir = molecule_dir or MOLECULE_DIR
    paths = glob.glob(os.path.join(molecule_dir, '*', 'molecule.yml'))
    return sorted(os.path.basename(os.path.dirname(p)) for p in paths)


def leading_comment(path):
    """The text of the comment lines that open a YAML file (after ``---``), joined with spaces."""
    parts = []
    with open(path) as handle:
        for number, line in enumerate(handle):
            line = line.rstrip('\n')
            if number == 0 and line.strip() == '---':
                continue
            if not line.startswith('#'):
                break
            parts.append(line[1:].strip())
    return ' '.join(p for p in parts if p)


def summary(name, molecule_dir=None):
    """What the scenario proves, from ``# <name>: <text>``; SummaryError when the comment is missing or names another
    scenario."""
    path = os.path.join(molecule_dir or MOLECULE_DIR, name, 'molecule.yml')
    comment = leading_comment(path)
    match = _SUMMARY.match(comment)
    if not match or match.group('name') != name:
        raise SummaryError('%s: the file must open with "# %s: <what the scenario proves>." after "---" (found %r)'
                           % (path, name, comment))
    return match.group('text')


def lanes(ci_plan=None):
    """{stage: lane} of tests/ci_plan.yml (``after both lanes`` for the stages of ``after``)."""
    with open(ci_plan or CI_PLAN) as handle:
        plan = yaml.safe_load(handle) or {}
    found = {}
    for lane, stages in (plan.get('lanes') or {}).items():
        for stage in stages or []:
            found[stage['stage']] = '`%s`' % lane
    for stage in plan.get('after') or []:
        found[stage['stage'] if isinstance(stage, dict) else stage] = 'after both lanes'
    return found


def _cell(text):
    return ' '.join(text.split()).replace('|', '\\|').replace('<', '&lt;')


def table(molecule_dir=None, ci_plan=None):
    stage_lanes = lanes(ci_plan)
    lines = ['| scenario | what it proves | CI lane |', '|---|---|---|']
    for name in scenario_names(molecule_dir):
        row = (name, _cell(summary(name, molecule_dir)), stage_lanes.get('molecule-' + name, '-'))
        lines.append('| `make molecule-%s` | %s | %s |' % row)
    return lines


def replace_block(text, path, body):
    """``text`` with the lines between START and the next END set to ``body``; MarkerError without them."""
    return generated_docs.replace_block(text, path, START, END, body)


def rendered(path=None, molecule_dir=None, ci_plan=None):
    """{CONTRIBUTING.md (or ``path``): (current text, text with the generated table)}, read now."""
    path = path or CONTRIBUTING
    with open(path) as handle:
        text = handle.read()
    return {path: (text, replace_block(text, path, table(molecule_dir, ci_plan)))}


def stale(path=None):
    """Unified diff of CONTRIBUTING.md when its table is stale (empty when current)."""
    return generated_docs.stale(rendered(path))


if __name__ == '__main__':
    try:
        documents = rendered()
    except (MarkerError, SummaryError) as exc:
        sys.exit(str(exc))
    sys.exit(generated_docs.main(sys.argv[1:], documents, ROOT))
