# -*- coding: utf-8 -*-
"""Render the Variables table of docs/variables.md from the playbooks' one argument spec (roles/gpuops/meta/argument_specs.yml).

    python3 tests/scripts/variables_table.py            exit 1 and show what differs when the table is stale
    python3 tests/scripts/variables_table.py --write    rewrite it

The table sits between a start and an end marker line in docs/variables.md; the unit test
tests/unit/docs/test_variables_table.py fails when it is stale, and checks the spec against the role's defaults.
A variable's default is the spec's ``default``, else the description line that starts with "Default:", else
"required" or "unset". Standard library and PyYAML only; run from anywhere.
"""

from __future__ import (absolute_import, division, print_function)

import json
import os
import re
import sys

import yaml

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'docs', 'variables.md')
SPEC = os.path.join(ROOT, 'roles', 'gpuops', 'meta', 'argument_specs.yml')
DEFAULTS = os.path.join(ROOT, 'roles', 'gpuops', 'defaults', 'main.yml')
START = '<!-- generated from roles/gpuops/meta/argument_specs.yml by tests/scripts/variables_table.py -->'
END = '<!-- end of generated lines -->'
_DEFAULT_LINE = re.compile(r'^Default: (.*)$')


def load_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def options():
    """The options of the spec's entry point main, in file order."""
    return load_yaml(SPEC)['argument_specs']['main']['options']


def _inline(text):
    """Description markup (C(), V(), I(), O(), RV()) as Markdown code."""
    return re.sub(r'\b(?:[CVIO]|RV)\(([^)]*)\)', r'`\1`', text).replace('|', '\\|')


def _value(value):
    if isinstance(value, str):
        return '`%s`' % value
    return '`%s`' % json.dumps(value, separators=(', ', ': '))


def row(name, spec):
    description = spec.get('description') or []
    if isinstance(description, str):
        description = [description]
    default = None
    meaning = []
    for line in description:
        match = _DEFAULT_LINE.match(line)
        if match:
            default = _inline(match.group(1))
        else:
            meaning.append(_inline(line))
    if 'default' in spec:
        default = _value(spec['default'])
    if default is None:
        default = 'required' if spec.get('required') else 'unset'
    kind = spec.get('type', 'str')
    if kind == 'list' and spec.get('elements'):
        kind = 'list of %s' % spec['elements']
    for sub, sub_spec in (spec.get('options') or {}).items():
        sub_lines = [_inline(line) for line in (sub_spec.get('description') or [])]
        meaning.append('`%s`: %s' % (sub, ' '.join(sub_lines)))
    return '| `%s` | %s | %s | %s |' % (name, kind, default, ' '.join(meaning))


def table():
    lines = ['| variable | type | default | meaning |', '|---|---|---|---|']
    lines.extend(row(name, spec) for name, spec in options().items())
    return lines


def rendered():
    """{README: (current text, text with the generated table)}."""
    with open(README) as handle:
        text = handle.read()
    lines = text.split('\n')
    try:
        start = lines.index(START)
        end = lines.index(END, start)
    except ValueError:
        raise SystemExit('%s: no "%s" ... "%s" markers' % (README, START, END))
    return {README: (text, '\n'.join(lines[:start + 1] + table() + lines[end:]))}


def stale():
    """Unified diff of the README when its table is stale (empty when current)."""
    return generated_docs.stale(rendered())


if __name__ == '__main__':
    sys.exit(generated_docs.main(sys.argv[1:], rendered(), ROOT))
