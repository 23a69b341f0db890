# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""dcgm_policy: NVIDIA's documented ``dcgmi policy --get`` outputs read and rendered back, every condition of the
table round-tripping through ``--set`` and ``--get``, and bad data named by its variable."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

import pytest

from real_captures import real_text
from transforms import damage_line, truncate_after_line

from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_policy as config_dcgm_policy

GROUP2 = 'dcgmi/policy-get-group-pcie-DOCEXAMPLE-indented.txt'
GROUP1 = 'dcgmi/policy-get-group1-dbe-reset-DOCEXAMPLE-indented.txt'


def unindent(text, width=4):
    """The documented transform of the DOCEXAMPLE files: the conversion's code-block indent removed."""
    return '\n'.join(line[width:] if line.startswith(' ' * width) else line for line in text.split('\n'))


def table_body(text):
    """The rows from the ``+===`` rule to the closing border."""
    lines = text.split('\n')
    start = next(i for i, l in enumerate(lines) if l.startswith('+='))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith('+'))
    return lines[start:end + 1]


def test_documented_group_policy_is_read():
    assert config_dcgm_policy.parse_policy_get(real_text(GROUP2)) == {
        'conditions': {'pcie': True}, 'action': 'none', 'validation': 'none'}
    assert config_dcgm_policy.parse_policy_get(real_text(GROUP1)) == {
        'conditions': {'dbe': True}, 'action': 'reset', 'validation': 'short'}


def test_rendering_the_documented_group_policy_gives_it_back():
    text = unindent(real_text(GROUP2))
    assert config_dcgm_policy.render_policy_get(config_dcgm_policy.parse_policy_get(text), 2, 'GPU_Group', layout='doc') == text


def test_rendering_the_documented_per_gpu_policy_gives_its_table_back():
    """The group-1 example is hand-edited in the documentation (title ``for group 1``, a top border without the
    column split, ``Violation Conditions`` capitalised, ``...`` after the table): its table body is compared,
    the field names without regard to case."""
    text = unindent(real_text(GROUP1))
    rendered = config_dcgm_policy.render_policy_get(config_dcgm_policy.parse_policy_get(text), 1, 'group1', layout='doc', entity='GPU ID: 0')
    assert [l.lower() for l in table_body(rendered)] == [l.lower() for l in table_body(text)]
    assert rendered.split('\n')[2] == '| GPU ID: 0                 | Policy Information                             |'


EVERY = {'dbe': True, 'pcie': True, 'max_pages': 60, 'thermal': 90, 'power': 700, 'nvlink': True, 'xid': True}


def _single(cond):
    return {'conditions': {cond['name']: True if cond['type'] == 'bool' else 77}, 'action': 'none',
            'validation': 'none'}


CASES = [(c['name'], _single(c)) for c in config_dcgm_policy.CONDITIONS] + [
    ('every-condition', {'conditions': dict(EVERY), 'action': 'reset', 'validation': 'long'}),
    ('medium', {'conditions': {'xid': True, 'thermal': 85}, 'action': 'none', 'validation': 'medium'}),
    ('short', {'conditions': {'dbe': True}, 'action': 'reset', 'validation': 'short'}),
]


@pytest.mark.parametrize('layout,json_output', [('dcgm4', False), ('dcgm4', True), ('doc', False)])
@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_every_condition_round_trips(case, layout, json_output):
    policy, errors = config_dcgm_policy.validate(case[1])
    assert errors == []
    argv = config_dcgm_policy.set_argv('dcgmi', policy, 0, '127.0.0.1')
    assert argv[:6] == ['dcgmi', 'policy', '-g', '0', '--set', '%d,%d' % (
        config_dcgm_policy.ACTIONS.index(policy['action']), config_dcgm_policy.VALIDATIONS.index(policy['validation']))]
    assert argv[-2:] == ['--host', '127.0.0.1']
    set_policy = config_dcgm_policy.policy_from_set_argv(argv)
    assert set_policy == policy
    text = config_dcgm_policy.render_policy_get(set_policy, 0, layout=layout, json_output=json_output)
    back = config_dcgm_policy.parse_policy_get(text)
    assert back == policy
    assert config_dcgm_policy.same(back, policy)


def test_condition_flags_are_dcgmis():
    flags = dict((c['name'], (c['flag'], c['long_flag'])) for c in config_dcgm_policy.CONDITIONS)
    assert flags == {'dbe': ('-e', '--eccerrors'), 'pcie': ('-p', '--pcierrors'), 'max_pages': ('-M', '--maxpages'),
                     'thermal': ('-T', '--maxtemp'), 'power': ('-P', '--maxpower'),
                     'nvlink': ('-n', '--nvlinkerrors'), 'xid': ('-x', '--xiderrors')}
    policy, _errors = config_dcgm_policy.validate({'conditions': dict(EVERY)})
    assert config_dcgm_policy.set_argv('dcgmi', policy) == ['dcgmi', 'policy', '-g', '0', '--set', '0,0', '-e', '-p', '-M', '60',
                                                            '-T', '90', '-P', '700', '-n', '-x']
    long_flags = ['dcgmi', 'policy', '--set', '1,3', '--eccerrors', '--maxtemp', '80']
    assert config_dcgm_policy.policy_from_set_argv(long_flags) == {'conditions': {'dbe': True, 'thermal': 80}, 'action': 'reset',
                                                                   'validation': 'long'}


def test_dcgm4_layout_is_eighty_columns_with_the_all_gpus_group():
    text = config_dcgm_policy.render_policy_get({'conditions': dict(EVERY)})
    lines = text.rstrip('\n').split('\n')
    assert lines[0] == 'Policy information'
    assert lines[3] == '| DCGM_ALL_SUPPORTED_GPUS'.ljust(79) + '|'
    assert all(len(l) == 80 for l in lines[1:-1])
    assert lines[-1] == config_dcgm_policy.NOT_HOMOGENEOUS


def test_no_condition_clears_and_reads_back_as_none():
    policy, errors = config_dcgm_policy.validate({'conditions': {'dbe': False, 'thermal': None}, 'action': 'reset'})
    assert errors == [] and policy == config_dcgm_policy.empty_policy()
    assert config_dcgm_policy.set_argv('dcgmi', policy) is None
    assert config_dcgm_policy.clear_argv('dcgmi', 3, 'h') == ['dcgmi', 'policy', '-g', '3', '--clear', '--host', 'h']
    assert config_dcgm_policy.get_argv('dcgmi') == ['dcgmi', 'policy', '-g', '0', '--get']
    text = config_dcgm_policy.render_policy_get(policy)
    assert '| Violation conditions        | None ' in text
    assert config_dcgm_policy.parse_policy_get(text) == policy


def test_validation_errors_name_the_variable():
    _policy, errors = config_dcgm_policy.validate({'conditions': {'sm_utilization': 90, 'ecc': True, 'thermal': 'hot', 'power': 0,
                                                                  'dbe': 'yes', 'max_pages': True},
                                                   'action': 'kill', 'validation': 7, 'when': 'now'})
    assert errors == [
        'dcgm_policy.when: unknown key (known: action, conditions, validation)',
        'dcgm_policy.conditions.dbe: must be true or false, not \'yes\'',
        'dcgm_policy.conditions.ecc: unknown policy condition (known: dbe, pcie, max_pages, thermal, power, nvlink, '
        'xid)',
        'dcgm_policy.conditions.max_pages: must be a whole number (retired pages above this count), or false to turn '
        'it off; got True',
        'dcgm_policy.conditions.power: 0 is outside 1..10000 (GPU power above this many watts)',
        'dcgm_policy.conditions.sm_utilization: ' + config_dcgm_policy.SM_UTIL_MESSAGE,
        'dcgm_policy.conditions.thermal: must be a whole number (GPU temperature above this many degrees Celsius), '
        'or false to turn it off; got \'hot\'',
        'dcgm_policy.action: must be one of none, reset (or 0..1), not \'kill\'',
        'dcgm_policy.validation: must be one of none, short, medium, long (or 0..3), not 7',
    ]
    assert config_dcgm_policy.validate({'conditions': {'sm_util_max': 90}})[1] == [
        'dcgm_policy.conditions.sm_util_max: ' + config_dcgm_policy.SM_UTIL_MESSAGE]
    assert config_dcgm_policy.validate({'conditions': {'thermal': '85'}, 'action': 1, 'validation': 2})[0] == {
        'conditions': {'thermal': 85}, 'action': 'reset', 'validation': 'medium'}
    assert config_dcgm_policy.validate(['dbe'])[1] == ['dcgm_policy: must be a dict with conditions, action and validation']


def test_fields_that_differ_between_gpus_never_match():
    text = unindent(real_text(GROUP2))
    text = damage_line(text, 5, '| Violation conditions      | ****                                           |')
    parsed = config_dcgm_policy.parse_policy_get(text)
    assert parsed['mixed'] == ['Violation conditions']
    assert not config_dcgm_policy.same(parsed, {'conditions': {'pcie': True}, 'action': 'none', 'validation': 'none'})


@pytest.mark.parametrize('text,match', [
    ('', 'empty output'),
    ('Error: unable to establish a connection to the specified host: localhost\n'
     'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n', 'connect'),
    ('Error: Cannot get group info from remote node. Return: The Group is not found\n', 'Group is not found'),
    ('Policy information\n', 'no policy table'),
    (truncate_after_line(unindent(real_text(GROUP2)), 6), 'cut short'),
    (damage_line(unindent(real_text(GROUP2)), 5, '| Violation conditions      | Gremlins |'), 'unknown violation'),
    (damage_line(unindent(real_text(GROUP2)), 7, '| Action on violation       | Reboot     |'), 'unknown action'),
])
def test_unreadable_get_output_is_an_error(text, match):
    with pytest.raises(config_dcgm_policy.PolicyParseError, match=match):
        config_dcgm_policy.parse_policy_get(text)


def test_module_documentation_follows_the_table():
    """The module's description lists every condition of CONDITIONS with its dcgmi flag, and nothing else."""
    import yaml
    from ansible_collections.gpuops.node.plugins.modules import dcgm_policy as module_dcgm_policy
    doc = ' '.join(yaml.safe_load(module_dcgm_policy.DOCUMENTATION)['description'])
    for cond in config_dcgm_policy.CONDITIONS:
        assert 'C(%s)' % cond['name'] in doc
        assert 'C(%s' % cond['flag'] in doc
    listed = doc.split('The conditions are ')[1].split('. An absent')[0]
    assert re.findall(r'C\(([a-z_]+)\) \(', listed) == [c['name'] for c in config_dcgm_policy.CONDITIONS]
