# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/ci_plan.yml, what `make test` runs in its two lanes: every stage once, the scenarios that share a podman
volume in one lane, a measured time for every stage within the budget, docs/testing.md's table the plan's.

What this cannot prove: that the times are still true (they are what the last CI run measured, written by hand);
that two scenarios of different lanes share nothing else on the host (their containers, networks and volumes are
checked here, nothing else).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import yaml

import affected  # tests/affected  pylint: disable=import-error
import lanes  # tests/scripts  pylint: disable=import-error
from repo_paths import REPO as ROOT

PLAN = lanes.load_plan()
ENTRIES = [(lane, e) for lane, entries in PLAN['lanes'].items() for e in entries] + \
    [('after', e) for e in PLAN.get('after') or []]
SCENARIOS = affected.scenario_names()


def makefile_prerequisites(target):
    with open(os.path.join(ROOT, 'Makefile')) as handle:
        found = re.search(r'^%s:([^\n]*)$' % re.escape(target), handle.read(), re.M)
    assert found, 'no target %s in the Makefile' % target
    return found.group(1).split()


def test_every_stage_once():
    stages = [e['stage'] for _lane, e in ENTRIES]
    assert len(stages) == len(set(stages)), stages
    wanted = set(makefile_prerequisites('check')) | {'bench', 'demo-check'} | set('molecule-' + s for s in SCENARIOS)
    assert sorted(set(stages) ^ wanted) == []


def test_scenarios_that_share_a_volume_are_in_one_lane():
    lane_of = dict((e['stage'][len('molecule-'):], lane) for lane, e in ENTRIES if e['stage'].startswith('molecule-'))
    shared, containers = {}, {}
    for name in SCENARIOS:
        with open(os.path.join(ROOT, 'molecule', name, 'molecule.yml')) as handle:
            text = handle.read()
        for volume in set(re.findall(r'\b(gpuops-apt-[a-z]+):', text)):
            shared.setdefault(volume, set()).add(lane_of[name])
        # the containers of two scenarios never have the same name
        for platform in yaml.safe_load(text).get('platforms') or []:
            assert platform['name'] not in containers, (name, platform['name'], containers[platform['name']])
            containers[platform['name']] = name
    assert shared, 'no scenario mounts an apt cache volume: the rule checks nothing'
    assert dict((v, len(l)) for v, l in shared.items()) == dict((v, 1) for v in shared), shared


def test_every_stage_has_its_time_and_each_lane_is_within_the_budget():
    for _lane, entry in ENTRIES:
        assert sorted(entry) == ['measured_s', 'stage'] and isinstance(entry['measured_s'], int), entry
        assert entry['measured_s'] > 0, entry
    after = sum(e['measured_s'] for e in PLAN.get('after') or [])
    for lane, entries in PLAN['lanes'].items():
        assert sum(e['measured_s'] for e in entries) + after <= PLAN['budget_s'], lane
    # the budget is a ratchet: raising it past 50 minutes is a change of this test
    assert PLAN['goal_s'] <= PLAN['target_s'] <= 2700 and PLAN['budget_s'] <= 3000


def test_docs_show_the_plan():
    with open(os.path.join(ROOT, 'docs', 'testing.md')) as handle:
        text = handle.read()
    assert lanes.markdown(PLAN) in text, 'docs/testing.md: write the table of tests/scripts/lanes.py --markdown'


def test_lanes_run_in_parallel_and_stop_at_a_failure(tmp_path):
    make = tmp_path / 'make'
    log = tmp_path / 'log'
    # `bad` fails only once lane b's `two` has started, however slowly the machine schedules the lanes: the stop
    # at a failure is then what keeps `never` and `last` from running, not the order the lanes happened to start in
    make.write_text('#!/bin/sh\necho "$2" >> %s\n[ "$2" != bad ] && exit 0\n'
                    'i=0; while ! grep -qx two %s && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\nexit 1\n'
                    % (log, log))
    make.chmod(0o755)
    plan = tmp_path / 'plan.yml'
    plan.write_text('budget_s: 10\ngoal_s: 5\nlanes:\n  a: [{stage: one, measured_s: 1}, {stage: bad, measured_s: 1},'
                    ' {stage: never, measured_s: 1}]\n  b: [{stage: two, measured_s: 1}]\n'
                    'after: [{stage: last, measured_s: 1}]\n')
    assert lanes.main(['--plan', str(plan), '--make', str(make)]) == 1
    ran = log.read_text().split()
    assert sorted(ran) == ['bad', 'one', 'two'] and 'never' not in ran and 'last' not in ran
    plan.write_text('budget_s: 10\ngoal_s: 5\nlanes:\n  a: [{stage: one, measured_s: 1}]\n'
                    '  b: [{stage: two, measured_s: 1}]\nafter: [{stage: last, measured_s: 1}]\n')
    log.write_text('')
    assert lanes.main(['--plan', str(plan), '--make', str(make)]) == 0
    assert log.read_text().split()[-1] == 'last'
    # a stage that prints a deprecation fails, though its command passed
    make.write_text('#!/bin/sh\necho "$2" >> %s\n[ "$2" != two ] || echo "[DEPRECATION WARNING]: x is deprecated"\n'
                    % log)
    assert lanes.main(['--plan', str(plan), '--make', str(make)]) == 1
