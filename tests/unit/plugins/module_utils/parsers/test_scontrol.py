# -*- coding: utf-8 -*-
"""The ``scontrol show node`` parser on real outputs of Debian's Slurm 22.05.8 (tests/fixtures/real/parsers_scontrol)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers import scontrol as parsers_scontrol

from real_captures import real_text

CAPTURE = 'slurm/scontrol-show-node-%s-debian12-22.05.8.txt'
MARK = 'gpuops:'

# capture: (node, State=, in_service, drain, busy, drained, draining, down, reason, ours)
CASES = {
    'idle': ('slurmx-n2', 'IDLE', True, False, False, False, False, False, None, False),
    'allocated': ('slurmx-n1', 'ALLOCATED', True, False, True, False, False, False, None, False),
    'draining': ('slurmx-n1', 'ALLOCATED+DRAIN', False, True, True, False, True, False,
                 'gpuops: rollout of nvidia_driver, mig', True),
    'drained': ('slurmx-n1', 'IDLE+DRAIN', False, True, False, True, False, False,
                'gpuops: rollout of nvidia_driver, mig', True),
    'down': ('slurmx-n2', 'DOWN', False, False, False, False, False, True, 'operator: bad PSU', False),
}


@pytest.mark.parametrize('capture', sorted(CASES))
def test_one_node_per_capture(capture):
    node, state, in_service, drain, busy, drained, draining, down, reason, ours = CASES[capture]
    parsed = parsers_scontrol.parse_show_node(real_text(CAPTURE % capture))
    assert parsed['not_found'] == []
    assert [record['NodeName'] for record in parsed['nodes']] == [node]
    status = parsers_scontrol.node_status(parsed['nodes'][0], MARK)
    assert (status['state'], status['in_service'], status['drain'], status['busy'], status['drained'],
            status['draining'], status['down'], status['reason'], status['ours']) == (
        state, in_service, drain, busy, drained, draining, down, reason, ours)


def test_keys_that_take_the_rest_of_the_line():
    record = parsers_scontrol.parse_show_node(real_text(CAPTURE % 'drained'))['nodes'][0]
    assert record['OS'] == 'Linux 6.18.44-fc-v769 #1 SMP PREEMPT_DYNAMIC @0'
    assert record['Reason'] == 'gpuops: rollout of nvidia_driver, mig [root@2026-12-01T10:41:47]'
    assert record['CPUAlloc'] == '0' and record['AllocTRES'] == '' and record['Partitions'] == 'gpu'
    status = parsers_scontrol.node_status(record, MARK)
    assert (status['reason_user'], status['reason_time']) == ('root', '2026-12-01T10:41:47')


def test_two_nodes_in_one_call():
    text = real_text(CAPTURE % 'two')
    found = parsers_scontrol.statuses(text, ['slurmx-n1', 'slurmx-n2', 'slurmx-n9'], MARK)
    assert found['slurmx-n1']['draining'] and found['slurmx-n1']['ours']
    assert found['slurmx-n2']['in_service'] and not found['slurmx-n2']['busy']
    assert found['slurmx-n9']['found'] is False and not found['slurmx-n9']['in_service']


def test_a_node_slurm_does_not_know():
    parsed = parsers_scontrol.parse_show_node(real_text(CAPTURE % 'notfound-ERROR'))
    assert parsed == {'nodes': [], 'not_found': ['nosuch']}


def test_another_mark_is_not_ours():
    record = parsers_scontrol.parse_show_node(real_text(CAPTURE % 'drained'))['nodes'][0]
    assert parsers_scontrol.node_status(record, 'ops:')['ours'] is False


@pytest.mark.parametrize('text', [
    real_text('slurm/scontrol-update-resume-idle-ERROR-debian12-22.05.8.txt'),
    'NodeName=x State=IDLE\nnot indented\n',
    'PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n',
])
def test_text_that_is_not_show_node_is_refused(text):
    with pytest.raises(parsers_scontrol.SlurmParseError):
        parsers_scontrol.parse_show_node(text)


@pytest.mark.parametrize('transform', [
    lambda text: text[:text.index('State=') + len('State=ID')] + '\n',     # cut inside State=
    lambda text: text[:text.index('   State=')],                           # cut before State=
    lambda text: text.replace('State=IDLE', 'State=I?LE'),                 # garbled
])
def test_a_truncated_or_garbled_state_is_refused_not_taken_for_a_node_in_service(transform):
    record = parsers_scontrol.parse_show_node(transform(real_text(CAPTURE % 'idle')))['nodes'][0]
    with pytest.raises(parsers_scontrol.SlurmParseError):
        parsers_scontrol.node_status(record, MARK)


def test_empty_output_finds_no_node():
    assert parsers_scontrol.statuses('', ['n1'], MARK)['n1'] == parsers_scontrol.unknown_node('n1')


@pytest.mark.parametrize('state, base, flags', [
    ('IDLE', 'IDLE', []),
    ('MIXED+DRAIN', 'MIXED', ['DRAIN']),
    ('DOWN+NOT_RESPONDING', 'DOWN', ['NOT_RESPONDING']),
    ('IDLE*', 'IDLE', ['NOT_RESPONDING']),
    ('idle~', 'IDLE', ['POWERED_DOWN']),
])
def test_states_and_flags(state, base, flags):
    assert parsers_scontrol.split_state(state) == (base, flags)


def test_whose_drain_or_down_it_is():
    down = parsers_scontrol.node_status(parsers_scontrol.parse_show_node(real_text(CAPTURE % 'down'))['nodes'][0], MARK)
    drained = parsers_scontrol.node_status(parsers_scontrol.parse_show_node(real_text(CAPTURE % 'drained'))['nodes'][0], MARK)
    idle = parsers_scontrol.node_status(parsers_scontrol.parse_show_node(real_text(CAPTURE % 'idle'))['nodes'][0], MARK)
    assert (down['theirs'], down['ours']) == (True, False)
    assert (drained['theirs'], drained['ours']) == (False, True)
    assert (idle['theirs'], idle['ours']) == (False, False)


def test_a_not_responding_node_is_out_of_service():
    status = parsers_scontrol.node_status({'NodeName': 'n', 'State': 'IDLE+NOT_RESPONDING'}, MARK)
    assert status['down'] and not status['in_service'] and not status['drain']


def test_drain_reason_is_one_line_and_bounded():
    assert parsers_scontrol.drain_reason(MARK, 'failed:\n  nvlink  down') == 'gpuops: failed: nvlink down'
    long = parsers_scontrol.drain_reason(MARK, 'x' * 400)
    assert len(long) == 240 and long.endswith('...') and long.startswith('gpuops: ')
