# -*- coding: utf-8 -*-
"""What the documentation generators (check_table.py, variables_table.py) share: compare or rewrite.

Each generator gives ``rendered()``: path -> (current text, generated text).
"""

from __future__ import (absolute_import, division, print_function)

import difflib
import os


class MarkerError(ValueError):
    """A document has no START ... END block for its generated lines."""


def replace_block(text, path, start_marker, end_marker, body):
    """``text`` with the lines between the line ``start_marker`` and the next ``end_marker`` set to ``body`` (a list
    of lines); MarkerError, naming ``path`` and the missing line, without them."""
    lines = text.split('\n')
    if start_marker not in lines:
        raise MarkerError('%s: no marker line %s (the table goes between it and %s)' % (path, start_marker, end_marker))
    start = lines.index(start_marker)
    if end_marker not in lines[start + 1:]:
        raise MarkerError('%s: no %s after the marker line %s' % (path, end_marker, start_marker))
    end = lines.index(end_marker, start + 1)
    return '\n'.join(lines[:start + 1] + body + lines[end:])


def current(path):
    """The text of ``path`` as it is now: '' while the file does not exist (a generated file not yet written)."""
    if not os.path.exists(path):
        return ''
    with open(path) as handle:
        return handle.read()


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
