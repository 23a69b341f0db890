# -*- coding: utf-8 -*-
"""gpuops.node.nvidia_driver: its argument spec is its defaults, its README documents every variable, and every OS
vars file describes each source the same way (the keys tasks and nvidia_driver_plan read)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'nvidia_driver')


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
        assert re.match(r'nvidia_driver_[a-z0-9_]+\Z', name), name
        assert opt.get('description') and opt.get('type'), name
        assert '`%s`' % name in readme, name


def test_os_vars_describe_every_source_alike():
    choices = _options()['nvidia_driver_source']['choices']
    files = [f for f in glob.glob(os.path.join(ROLE, 'vars', '*.yml')) if os.path.basename(f) not in ('main.yml',)]
    assert len(files) >= 4
    for path in files:
        with open(path) as handle:
            data = yaml.safe_load(handle)
        for name in data:
            assert name.startswith('__nvidia_driver_'), (path, name)
        for source, spec in data['__nvidia_driver_sources'].items():
            assert source in choices, (path, source)
            keys = sorted(set(spec) - {'module_names'})
            assert keys == ['dkms_modules', 'fabricmanager', 'packages', 'persistenced'], (path, source)
            for flavour, names in (spec.get('module_names') or {}).items():
                assert flavour in ('open', 'proprietary') and all(n.startswith('nvidia') for n in names), (path, source)
            assert sorted(spec['packages']) == ['open', 'proprietary'], (path, source)
            # the first package of each flavour is the kernel module package that decides the version
            assert 'dkms' in spec['packages']['open'][0] and 'dkms' in spec['packages']['proprietary'][0], (path, source)
            assert spec['packages']['open'][0] != spec['packages']['proprietary'][0], (path, source)
            for entry in spec['fabricmanager']:
                assert sorted(entry) == ['name', 'since_branch'], (path, source)
