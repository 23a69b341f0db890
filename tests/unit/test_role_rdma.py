# -*- coding: utf-8 -*-
"""gpuops.node.rdma: its argument spec is its defaults, its README documents every variable, and every OS vars file
has the same keys."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'rdma')


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def _options():
    return _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']


def test_defaults_are_the_spec_defaults():
    assert _load('defaults', 'main.yml') == dict((name, opt['default']) for name, opt in _options().items())


def test_every_variable_is_public_and_documented_in_the_readme():
    with open(os.path.join(ROLE, 'README.md')) as handle:
        readme = handle.read()
    for name, opt in _options().items():
        assert re.match(r'rdma_[a-z0-9_]+\Z', name), name
        assert opt.get('description') and opt.get('type'), name
        row = re.search(r'^\| `%s` \| `([^`]*)` \|' % name, readme, re.M)
        assert row, name
        assert yaml.safe_load(row.group(1) or '""') == opt['default'], name


def test_os_vars_have_the_same_keys():
    files = [f for f in glob.glob(os.path.join(ROLE, 'vars', '*.yml')) if os.path.basename(f) != 'main.yml']
    keys = None
    assert len(files) >= 4
    for path in files:
        data = _load('vars', os.path.basename(path))
        assert all(name.startswith('__rdma_') for name in data), path
        keys = keys or sorted(data)
        assert sorted(data) == keys, path


def test_the_plan_checks_every_numeric_variable_the_spec_declares():
    from ansible_collections.gpuops.node.plugins.module_utils.rdma_plan import _RANGES
    ints = sorted(name for name, opt in _options().items() if opt['type'] == 'int')
    assert sorted(name for name, _low, _high in _RANGES) == ints
