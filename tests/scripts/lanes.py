# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the stages of tests/ci_plan.yml: its lanes at once, each lane's stages in order, then the `after` stages.

    python3 tests/scripts/lanes.py [--plan tests/ci_plan.yml] [--make make] [--list | --markdown]

Each stage is `make --no-print-directory STAGE`; its output lines are printed as they come, prefixed with the lane's
name. A stage that prints a `[DEPRECATION WARNING]` line fails. A lane stops at its first failed stage; the other
lanes finish the stage they are in and stop. At the end a table of every stage: its lane, status and seconds, against
the plan's measured_s, and each lane's total.
Exits 0 only when every stage of every lane, and then every `after` stage, passed; 1 otherwise (2 for a bad plan).
--markdown prints the plan as the table of docs/testing.md (tests/unit/ci/test_ci_plan.py keeps the two the same).
"""

from __future__ import print_function

import argparse
import os
import subprocess
import sys
import threading
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, 'tests', 'ci_plan.yml')
DEPRECATION = '[DEPRECATION WARNING]'


def load_plan(path=PLAN):
    with open(path) as handle:
        plan = yaml.safe_load(handle)
    if not isinstance(plan, dict) or not isinstance(plan.get('lanes'), dict) or not plan['lanes']:
        raise ValueError('%s: no lanes' % path)
    return plan


class Runner(object):
    def __init__(self, make):
        self.make = make
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.results = []

    def say(self, lane, line):
        with self.lock:
            sys.stdout.write('[%s] %s' % (lane, line if line.endswith('\n') else line + '\n'))
            sys.stdout.flush()

    def stage(self, lane, entry):
        name = entry['stage']
        start = time.time()
        self.say(lane, '== stage %s' % name)
        proc = subprocess.Popen([self.make, '--no-print-directory', name], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True, errors='replace')
        deprecated = 0
        for line in proc.stdout:
            deprecated += DEPRECATION in line
            self.say(lane, line)
        rc = proc.wait()
        seconds = time.time() - start
        if rc == 0 and deprecated:
            # what the pinned ansible-core deprecates, the next one removes: a stage that prints one fails
            self.say(lane, '== stage %s printed %d %s line(s)' % (name, deprecated, DEPRECATION))
            rc = 1
        self.say(lane, '== stage %s: %s in %.0fs' % (name, 'passed' if rc == 0 else 'FAILED (exit %d)' % rc, seconds))
        with self.lock:
            self.results.append((lane, name, rc, seconds, entry.get('measured_s')))
        return rc == 0

    def lane(self, lane, entries):
        for entry in entries:
            if self.stop.is_set():
                with self.lock:
                    self.results.append((lane, entry['stage'], None, 0.0, entry.get('measured_s')))
                continue
            if not self.stage(lane, entry):
                self.stop.set()


def table(results, plan):
    lines = ['== lanes: %-10s %-32s %-8s %8s %10s' % ('lane', 'stage', 'status', 'seconds', 'measured')]
    totals = {}
    for lane, name, rc, seconds, measured in results:
        status = 'not run' if rc is None else 'passed' if rc == 0 else 'FAILED'
        shown = '-' if measured is None else measured
        lines.append('== lanes: %-10s %-32s %-8s %8.0f %10s' % (lane, name, status, seconds, shown))
        totals[lane] = totals.get(lane, 0.0) + seconds
    for lane in sorted(totals):
        lines.append('== lanes: lane %s: %.0fs (budget %ss)' % (lane, totals[lane], plan.get('budget_s')))
    return lines


def markdown(plan):
    """The plan as a Markdown table: each lane's stages with their measured seconds, and each lane's total."""
    lines = ['| lane | stage | measured |', '|---|---|---|']
    groups = sorted(plan['lanes'].items()) + ([('after', plan['after'])] if plan.get('after') else [])
    for lane, entries in groups:
        for entry in entries:
            lines.append('| %s | `%s` | %s s |' % (lane, entry['stage'], entry['measured_s']))
    for lane, entries in groups:
        lines.append('| %s | **total** | %s s |' % (lane, sum(e['measured_s'] for e in entries)))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--plan', default=PLAN)
    parser.add_argument('--make', default=os.environ.get('MAKE', 'make'))
    parser.add_argument('--list', action='store_true', help='print the stages of each lane and exit')
    parser.add_argument('--markdown', action='store_true', help='print the plan as a Markdown table and exit')
    args = parser.parse_args(argv)
    try:
        plan = load_plan(args.plan)
    except (IOError, OSError, ValueError, yaml.YAMLError) as exc:
        print('lanes: cannot read the plan: %s' % exc, file=sys.stderr)
        return 2
    if args.markdown:
        sys.stdout.write(markdown(plan))
        return 0
    if args.list:
        for lane, entries in sorted(plan['lanes'].items()):
            print('%s: %s' % (lane, ' '.join(e['stage'] for e in entries)))
        print('after: %s' % ' '.join(e['stage'] for e in plan.get('after') or []))
        return 0
    runner = Runner(args.make)
    start = time.time()
    threads = [threading.Thread(target=runner.lane, args=(lane, entries), name=lane)
               for lane, entries in sorted(plan['lanes'].items())]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runner.lane('after', plan.get('after') or [])
    for line in table(runner.results, plan):
        print(line)
    failed = [name for _lane, name, rc, _s, _m in runner.results if rc != 0]
    verdict = 'FAILED: %s' % ' '.join(failed) if failed else 'every stage passed'
    print('== lanes: %s in %.0fs' % (verdict, time.time() - start))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
