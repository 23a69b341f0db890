# -*- coding: utf-8 -*-
"""gpuops.node.mps: its argument spec is its defaults, its README documents every variable, every OS vars file has
the same keys, the defaults pass mps_plan on the simulated DGX A100, and the unit starts the daemon the way the
package's binary runs (forking, quit on stop)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import yaml

from real_captures import profile_text

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'mps')


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def _text(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return handle.read()


def _options():
    return _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']


def test_defaults_are_the_spec_defaults():
    assert _load('defaults', 'main.yml') == dict((name, opt['default']) for name, opt in _options().items())


def test_every_variable_is_public_and_documented_in_the_readme():
    readme = _text('README.md')
    for name, opt in _options().items():
        assert re.match(r'mps_[a-z0-9_]+\Z', name), name
        assert opt.get('description') and opt.get('type'), name
        row = re.search(r'^\| `%s` \| `([^`]*)` \|' % name, readme, re.M)
        assert row, name
        assert yaml.safe_load(row.group(1) or '""') == opt['default'], name
    rows = re.findall(r'^\| `(mps_[a-z0-9_]+)` \|', readme, re.M)
    facts = re.findall(r'^\| `(mps_[a-z0-9_]+)` \| [^`]', readme, re.M)
    assert sorted(set(rows) - set(facts)) == sorted(_options()), 'README rows that are not variables'


def test_os_vars_have_the_same_keys():
    files = [f for f in glob.glob(os.path.join(ROLE, 'vars', '*.yml')) if os.path.basename(f) != 'main.yml']
    keys = None
    assert len(files) >= 4
    for path in files:
        data = _load('vars', os.path.basename(path))
        assert all(name.startswith('__mps_') for name in data), path
        keys = keys or sorted(data)
        assert sorted(data) == keys, path


def test_private_variables_are_prefixed():
    assert all(name.startswith('__mps_') for name in _load('vars', 'main.yml'))


def test_the_defaults_plan_one_set_of_every_gpu():
    from ansible_collections.gpuops.node.plugins.module_utils.mps_plan import plan
    from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_xml import parse_nvsmi_xml
    gpus = parse_nvsmi_xml(profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-q-x.xml'))['gpus']
    result = plan(_load('defaults', 'main.yml'), {'gpus': gpus})
    assert result['errors'] == []
    assert [s['name'] for s in result['sets']] == ['all']
    assert len(result['exclusive']) == 8


def test_the_unit_runs_the_daemon_from_its_environment_and_stops_it_with_quit():
    unit = _text('templates', 'gpuops-mps@.service.j2')
    assert unit.startswith('{{ ansible_managed | comment }}\n')
    lines = dict(line.split('=', 1) for line in unit.splitlines() if re.match(r'^[A-Za-z]+=', line))
    assert lines['Type'] == 'forking'
    assert lines['ExecStart'] == '{{ __mps_control }} -d'
    assert lines['ExecStop'] == ("/bin/sh -c 'echo quit | {{ __mps_control }}; "
                                 "while kill -0 \"$MAINPID\" 2>/dev/null; do sleep 0.2; done'")
    assert lines['EnvironmentFile'] == '{{ __mps_conf_dir }}/%i.env'
    assert 'ExecStartPre={{ mps_nvidia_smi }} -i ${GPUOPS_MPS_GPUS} -c EXCLUSIVE_PROCESS' in unit
    assert '-m 0770 ${CUDA_MPS_PIPE_DIRECTORY} ${CUDA_MPS_LOG_DIRECTORY}' in unit


def test_templates_say_they_are_managed():
    for path in glob.glob(os.path.join(ROLE, 'templates', '*.j2')):
        with open(path) as handle:
            assert handle.readline() == '{{ ansible_managed | comment }}\n', path
