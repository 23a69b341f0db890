# -*- coding: utf-8 -*-
"""gpuops.node.nccl: its argument spec is its defaults, its README documents every variable, every OS vars file has
the same keys, and its defaults are what nccl_plan accepts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'nccl')


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def _options(entry='main'):
    return _load('meta', 'argument_specs.yml')['argument_specs'][entry]['options']


def test_defaults_are_the_spec_defaults():
    assert _load('defaults', 'main.yml') == dict((name, opt.get('default')) for name, opt in _options().items())
    assert _options('gate') == _options()


def test_every_variable_is_public_and_documented_in_the_readme():
    with open(os.path.join(ROLE, 'README.md')) as handle:
        readme = handle.read()
    for name, opt in _options().items():
        assert re.match(r'nccl_[a-z0-9_]+\Z', name), name
        assert opt.get('description') and opt.get('type'), name
        row = re.search(r'^\| `%s` \| `([^`]*)` \|' % name, readme, re.M)
        assert row, name
        assert yaml.safe_load(row.group(1) or '""') == opt.get('default'), name


def test_os_vars_have_the_same_keys():
    files = [f for f in glob.glob(os.path.join(ROLE, 'vars', '*.yml')) if os.path.basename(f) != 'main.yml']
    keys = None
    assert len(files) >= 4
    for path in files:
        data = _load('vars', os.path.basename(path))
        assert all(name.startswith('__nccl_') for name in data), path
        keys = keys or sorted(data)
        assert sorted(data) == keys, path


def test_the_defaults_pass_the_plan():
    from ansible_collections.gpuops.node.plugins.module_utils.nccl_conf import validate
    assert validate(_load('defaults', 'main.yml')) == ([], [])


def test_the_reported_facts_are_not_variables():
    """set_fact outranks the inventory: a reported fact named like a variable would replace it in later runs of the
    play (the gate reads the variables again)."""
    with open(os.path.join(ROLE, 'tasks', 'report.yml')) as handle:
        reported = re.findall(r'^    (nccl_[a-z_]+):', handle.read(), re.M)
    assert reported and not set(reported) & set(_options())
