# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``python3 -m simulator.build_profiles [--check] [--out DIR] [--unpacked]``: build every profile, write it
(``bundle.pack``: sysfs as sys.ttar) or compare it with what is committed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import os

from .. import bundle
from .profiles import PROFILES
from .sources import PROFILES_DIR


def build_all():
    """name -> bundle tree (sysfs under sys/; ``bundle.pack`` gives the committed form)."""
    return dict((name, builder()) for name, builder in PROFILES.items())


def compare(expected, actual):
    """Differences between two trees (list of messages)."""
    problems = []
    for rel in sorted(set(expected) | set(actual)):
        if rel not in actual:
            problems.append('missing: %s' % rel)
        elif rel not in expected:
            problems.append('unexpected: %s' % rel)
        elif expected[rel] != actual[rel]:
            problems.append('differs: %s' % rel)
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description="Derive the simulator's hardware profiles from the real captures.")
    parser.add_argument('--check', action='store_true', help='compare with the committed profiles')
    parser.add_argument('--out', default=PROFILES_DIR, help='output directory (default simulator/profiles)')
    parser.add_argument('--unpacked', action='store_true',
                        help='write capture bundles with a sys/ tree instead of sys.ttar (not for committing)')
    args = parser.parse_args(argv)
    failed = False
    for name, tree in sorted(build_all().items()):
        target = os.path.join(args.out, name)
        if args.unpacked:
            bundle.write_tree(tree, target)
            print('wrote %s (unpacked bundle, %d files)' % (target, len(tree)))
            continue
        tree = bundle.pack(tree)
        if args.check:
            problems = compare(tree, bundle.read_tree(target) if os.path.isdir(target) else {})
            for problem in problems:
                print('%s: %s' % (name, problem))
            failed = failed or bool(problems)
        else:
            bundle.write_tree(tree, target)
            print('wrote %s (%d files)' % (target, len(tree)))
    return 1 if failed else 0
