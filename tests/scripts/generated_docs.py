# -*- coding: utf-8 -*-
"""What the documentation generators (check_table.py, variables_table.py) share: compare or rewrite.

Each generator gives ``rendered()``: path -> (current text, generated text).
"""

from __future__ import (absolute_import, division, print_function)

import difflib
import os


def stale(rendered):
    """Unified diffs of every stale document (empty when all are current)."""
    diffs = []
    for path, (current, generated) in sorted(rendered.items()):
        if current != generated:
            diffs.extend(difflib.unified_diff(current.splitlines(), generated.splitlines(), path, path + ' (generated)',
                                              lineterm=''))
    return diffs


def main(argv, rendered, root):
    """``--write``: rewrite the stale documents; else print their diffs and return 1 when any is stale."""
    if '--write' in argv:
        for path, (current, generated) in sorted(rendered.items()):
            if current != generated:
                with open(path, 'w') as handle:
                    handle.write(generated)
                print('wrote %s' % os.path.relpath(path, root))
        return 0
    diffs = stale(rendered)
    for line in diffs:
        print(line)
    return 1 if diffs else 0
