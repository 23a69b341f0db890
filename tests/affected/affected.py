# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Molecule scenarios a change can break, from the table tests/affected/scenarios.yml.

    affected.py [--base REV] [PATH ...]

With paths, the scenarios of those paths; without, of every file that differs from REV (default HEAD: the work
tree's changes, staged or not, and its untracked files). Prints one scenario a line, in name order; says on
stderr which files it read and which of them no scenario uses. Exits 1 when no file differs from REV or a path is
in no row of the table (the table is then incomplete: add a row).
"""

from __future__ import print_function

import argparse
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, 'tests', 'affected', 'scenarios.yml')


def load_table(path=TABLE):
    with open(path) as handle:
        return yaml.safe_load(handle)


def scenario_names(root=ROOT):
    base = os.path.join(root, 'molecule')
    return sorted(d for d in os.listdir(base) if os.path.isfile(os.path.join(base, d, 'molecule.yml')))


def covers(row_path, path):
    """Whether the row's path is ``path`` or a folder above it."""
    row_path = row_path.rstrip('/')
    return path == row_path or path.startswith(row_path + '/')


def rows_of(table, path):
    return [row for row in table if any(covers(p, path) for p in row['paths'])]


def scenarios_for(table, paths, names):
    """(scenarios, unused, unknown): the scenarios the paths can break, the paths no scenario uses, the paths in
    no row."""
    wanted, unused, unknown = set(), [], []
    for path in paths:
        rows = rows_of(table, path)
        if not rows:
            unknown.append(path)
            continue
        found = set()
        for row in rows:
            found.update(names if 'all' in row['scenarios'] else row['scenarios'])
        if not found:
            unused.append(path)
        wanted |= found
    return sorted(wanted), unused, unknown


def changed_files(base):
    def git(*argv):
        out = subprocess.check_output(('git',) + argv, cwd=ROOT)
        return [line for line in out.decode('utf-8', 'replace').splitlines() if line]
    return sorted(set(git('diff', '--name-only', base, '--') + git('ls-files', '--others', '--exclude-standard')))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--base', default='HEAD', help='the revision to compare the work tree with (default HEAD)')
    parser.add_argument('paths', nargs='*', help='paths relative to the repository root (default: the changed files)')
    args = parser.parse_args(argv)
    paths = args.paths or changed_files(args.base or 'HEAD')
    if not paths:
        print('affected: no file differs from %s: nothing to choose scenarios from (set AFFECTED_BASE)'
              % (args.base or 'HEAD'), file=sys.stderr)
        return 1
    scenarios, unused, unknown = scenarios_for(load_table(), paths, scenario_names())
    print('affected: %d changed file(s): %s' % (len(paths), ' '.join(paths)), file=sys.stderr)
    if unused:
        print('affected: no scenario uses: %s' % ' '.join(unused), file=sys.stderr)
    if unknown:
        print('affected: in no row of %s (add one): %s' % (os.path.relpath(TABLE, ROOT), ' '.join(unknown)),
              file=sys.stderr)
        return 1
    print('affected: scenarios: %s' % (' '.join(scenarios) or 'none'), file=sys.stderr)
    for name in scenarios:
        print(name)
    return 0


if __name__ == '__main__':
    sys.exit(main())
