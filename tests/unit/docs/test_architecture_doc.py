# -*- coding: utf-8 -*-
"""docs/architecture.md lists every file of plugins/module_utils, and only those, with what it holds."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
MODULE_UTILS = os.path.join(REPO, 'plugins', 'module_utils')
DOC = os.path.join(REPO, 'docs', 'architecture.md')


def _files():
    found = set()
    for dirpath, _dirs, names in os.walk(MODULE_UTILS):
        for name in names:
            if name.endswith('.py') and name != '__init__.py':
                found.add(os.path.relpath(os.path.join(dirpath, name), MODULE_UTILS).replace(os.sep, '/'))
    return found


def _table():
    rows = {}
    with open(DOC) as handle:
        for line in handle:
            match = re.match(r'^\| `([\w/]+\.py)` \| (.*) \|$', line.rstrip('\n'))
            if match:
                assert match.group(1) not in rows, 'docs/architecture.md lists %s twice' % match.group(1)
                rows[match.group(1)] = match.group(2).strip()
    return rows


def test_every_module_utils_file_is_in_the_table():
    missing = sorted(_files() - set(_table()))
    assert not missing, 'docs/architecture.md, "The files": no row for %s' % ', '.join(missing)


def test_the_table_names_no_file_that_is_gone():
    gone = sorted(set(_table()) - _files())
    assert not gone, 'docs/architecture.md, "The files": %s no longer exist' % ', '.join(gone)


def test_every_row_says_what_the_file_holds():
    empty = sorted(name for name, what in _table().items() if len(what) < 10)
    assert not empty, 'docs/architecture.md: say what %s holds' % ', '.join(empty)


def test_every_layer_has_its_paragraph():
    with open(DOC) as handle:
        text = handle.read()
    layers = sorted(name for name in os.listdir(MODULE_UTILS) if os.path.isdir(os.path.join(MODULE_UTILS, name))
                    and name != '__pycache__')
    missing = [layer for layer in layers if '- **`%s/' % layer not in text]
    assert not missing, 'docs/architecture.md: no paragraph for the layer(s) %s' % ', '.join(missing)
