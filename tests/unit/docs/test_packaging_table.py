# -*- coding: utf-8 -*-
"""docs/packaging.md is generated from the one table of NVIDIA's packaging (tests/scripts/packaging_table.py)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import packaging_table  # tests/scripts


def test_packaging_page_is_current():
    diffs = packaging_table.stale()
    assert diffs == [], 'run: python3 tests/scripts/packaging_table.py --write\n' + '\n'.join(diffs)


def test_every_row_and_source_is_on_the_page():
    from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging as P
    page = packaging_table.page()
    for key in P.SOURCES:
        assert '### %s\n' % key in page
    for repo in P.REPOSITORIES:
        assert '| `%s` |' % repo.os in page
    # a header row per table (three), and a row per entry of each
    assert page.count("\n| ") - 3 == len(P.REPOSITORIES) + len(P.DRIVER) + len(P.LIBRARIES)
