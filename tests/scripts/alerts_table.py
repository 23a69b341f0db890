# -*- coding: utf-8 -*-
"""Render the alerts table of roles/dcgm/README.md from its one table (``dcgm_alerts.ALERTS``).

    python3 tests/scripts/alerts_table.py            exit 1 and show what differs when the README is stale
    python3 tests/scripts/alerts_table.py --write    rewrite the block

The block sits between the lines ``<!-- alerts:start -->`` and ``<!-- alerts:end -->``; the unit test
tests/unit/plugins/module_utils/config/test_dcgm_alerts.py fails when it is stale. Run from the repository root with the
collection importable (``make units`` sets that up; tests/unit/conftest.py does too).
"""

from __future__ import (absolute_import, division, print_function)

import os
import sys

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'roles', 'dcgm', 'README.md')
START, END = '<!-- alerts:start -->', '<!-- alerts:end -->'


def block(text, table):
    """``text`` with the lines between the markers set to ``table``; raises ValueError without the markers."""
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise ValueError('%s: no %s ... %s block' % (README, START, END))
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return '%s%s\n%s%s%s' % (head, START, table, END, tail)


def rendered():
    from ansible_collections.gpuops.node.plugins.module_utils.config.dcgm_alerts import alerts_markdown
    with open(README) as handle:
        current = handle.read()
    return {README: (current, block(current, alerts_markdown()))}


if __name__ == '__main__':
    sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))
    try:
        RENDERED = rendered()
    except (IOError, OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    sys.exit(generated_docs.main(sys.argv[1:], RENDERED, ROOT))
