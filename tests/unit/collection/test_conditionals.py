# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every conditional of the collection's playbooks, roles and Molecule scenarios is a string (or a boolean), as
ansible-core 2.19 requires: an unquoted `a == {b: c}` in an assert's `that` is a YAML mapping, which Ansible refuses
only when the task runs ("Conditional expressions must be strings"), and yamllint and ansible-lint accept.

What this cannot prove: that the expressions are right; only that each reaches Ansible as an expression.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import yaml

from repo_paths import REPO as ROOT

KEYS = ('when', 'failed_when', 'changed_when', 'until')


def conditionals(node):
    if isinstance(node, list):
        for item in node:
            yield from conditionals(item)
    elif isinstance(node, dict):
        for key in ('ansible.builtin.assert', 'assert'):
            if isinstance(node.get(key), dict) and 'that' in node[key]:
                that = node[key]['that']
                yield from ((node.get('name'), 'that', c) for c in (that if isinstance(that, list) else [that]))
        for key in KEYS:
            if key in node and not isinstance(node[key], dict):
                value = node[key]
                yield from ((node.get('name'), key, c) for c in (value if isinstance(value, list) else [value]))
            elif isinstance(node.get(key), dict):
                yield node.get('name'), key, node[key]
        for value in node.values():
            if isinstance(value, (list, dict)):
                yield from conditionals(value)


def yaml_files():
    found = []
    for pattern in ('molecule/**/*.yml', 'roles/**/*.yml', 'playbooks/*.yml', 'bench/*.yml', '*.yml'):
        found.extend(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return sorted(set(found))


def test_every_conditional_is_an_expression():
    wrong, seen = [], 0
    for path in yaml_files():
        with open(path) as handle:
            data = yaml.safe_load(handle)
        for name, key, condition in conditionals(data):
            seen += 1
            if not isinstance(condition, (str, bool)):
                wrong.append('%s: %s (%s): %r' % (os.path.relpath(path, ROOT), name, key, condition))
    assert seen > 500, 'only %d conditionals found: the walk misses them' % seen
    assert wrong == []
