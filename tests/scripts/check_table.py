# -*- coding: utf-8 -*-
"""Render the documentation of the topology checks from their one table (``topology_check.CHECKS``).

    python3 tests/scripts/check_table.py            exit 1 and show what differs when a document is stale
    python3 tests/scripts/check_table.py --write    rewrite the generated parts

Generated parts: the two check tables of docs/topology.md, and in plugins/modules/gpu_topology_check.py the profile keys of
``expected`` and the check names of ``failures``. Each sits between a start and an end marker line; the unit test
tests/unit/docs/test_check_table_docs.py fails when one is stale. Run from the repository root with the collection
importable (``make units`` sets that up; tests/unit/conftest.py does too).
"""

from __future__ import (absolute_import, division, print_function)

import json
import os
import sys
import textwrap

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'docs', 'topology.md')
MODULE = os.path.join(ROOT, 'plugins', 'modules', 'gpu_topology_check.py')
START = 'generated from topology_check.CHECKS by tests/scripts/check_table.py'
END = 'end of generated lines'


def _checks():
    from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import CHECKS
    return CHECKS


def _role(check):
    return '`%s`' % check.role if check.role else '—'


def profile_table():
    lines = ['| key | type | check | converged by | what it asks |', '|---|---|---|---|---|']
    for check in _checks():
        if check.key is None:
            continue
        name = '—' if check.name == check.key and check.name == 'nic_names' else '`%s`' % check.name
        lines.append('| `%s` | %s | %s | %s | %s |' % (check.key, check.kind, name, _role(check), check.doc))
    return lines


def builtin_table():
    lines = ['| check | converged by | fails when |', '|---|---|---|']
    for check in _checks():
        if check.key is None:
            lines.append('| `%s` | %s | %s |' % (check.name, _role(check), check.doc))
    return lines


def _doc(text):
    """A line of the table for ansible-doc: code in C(), quotes kept."""
    return text.replace('`', '')


def module_expected(indent):
    lines = []
    for check in _checks():
        if check.key is not None:
            line = 'C(%s) (%s): %s.' % (check.key, check.kind, _doc(check.doc))
            lines.append('%s- %s' % (indent, json.dumps(line)))
    return lines


def module_failures(indent):
    names = ', '.join('C(%s)' % c.name for c in _checks() if c.name != 'nic_names')
    # plain YAML (the names hold no ': ' or ' #'), wrapped to stay readable
    return textwrap.wrap('C(check) is one of %s.' % names, 110, initial_indent=indent + '- ',
                         subsequent_indent=indent + '  ')


def _replace(text, start_line, end_line, bodies, path):
    """``text`` with the lines between each ``start_line`` and the next ``end_line`` (compared without their
    indentation) set to the next of ``bodies``, a function of the marker's indentation."""
    lines = text.split('\n')
    out = []
    i = 0
    bodies = list(bodies)
    while i < len(lines):
        out.append(lines[i])
        if lines[i].strip() == start_line:
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == end_line), None)
            if end is None or not bodies:
                raise SystemExit('%s: line %d: no end marker, or more markers than generated parts' % (path, i + 1))
            out.extend(bodies.pop(0)(indent))
            i = end
            continue
        i += 1
    if bodies:
        raise SystemExit('%s: %d generated part(s) have no marker' % (path, len(bodies)))
    return '\n'.join(out)


def rendered():
    """path -> (current text, generated text)."""
    result = {}
    with open(README) as handle:
        text = handle.read()
    result[README] = (text, _replace(text, '<!-- %s -->' % START, '<!-- %s -->' % END,
                                     [lambda _i: profile_table(), lambda _i: builtin_table()], README))
    with open(MODULE) as handle:
        text = handle.read()
    result[MODULE] = (text, _replace(text, '# %s' % START, '# %s' % END, [module_expected, module_failures], MODULE))
    return result


def stale():
    """Unified diffs of every stale document (empty when all are current)."""
    return generated_docs.stale(rendered())


if __name__ == '__main__':
    sys.exit(generated_docs.main(sys.argv[1:], rendered(), ROOT))
