# -*- coding: utf-8 -*-
"""gpuops.node.slurm_node with scontrol answered from real Slurm 22.05.8 outputs (tests/fixtures/real/slurm).

A node's answer is a real capture of a node in that state. States the captures do not hold are derived from them by
one transform (``_derive``): the State= value replaced and the Reason= line set or removed, as Slurm prints them in
the drained and down captures.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

import pytest

from ansible_collections.gpuops.node.plugins.modules import slurm_node

from module_harness import answer_commands, patch_module, run  # noqa: F401 pylint: disable=unused-import
from real_captures import real_text

CAPTURE = 'slurm/scontrol-show-node-%s-debian12-22.05.8.txt'
NOT_FOUND = real_text(CAPTURE % 'notfound-ERROR')


def _derive(text, state, reason):
    """A real capture with another State= and Reason= (None: no Reason line)."""
    text = re.sub(r'State=\S+', 'State=' + state, text, count=1)
    text = re.sub(r'\n   Reason=[^\n]*', '', text)
    if reason is not None:
        text = text.rstrip('\n') + '\n   Reason=%s [root@2026-12-01T10:41:47]\n\n' % reason
    return text


class FakeSlurm(object):
    """scontrol show/update over nodes kept as (state, reason); a busy node's jobs end after ``busy_reads`` reads."""

    def __init__(self, nodes, busy_reads=0):
        self.nodes = dict(nodes)
        self.busy_reads = busy_reads
        self.calls = []

    def text(self, name):
        state, reason = self.nodes[name]
        base = real_text(CAPTURE % 'idle').replace('slurmx-n2', name)
        return _derive(base, state, reason)

    def __call__(self, argv):
        self.calls.append(list(argv[1:]))
        if argv[1:3] == ['show', 'node']:
            out, rc = '', 0
            for name in argv[3].split(','):
                if name not in self.nodes:
                    out, rc = out + NOT_FOUND.replace('nosuch', name), 1
                    continue
                state, reason = self.nodes[name]
                if state.startswith('ALLOCATED'):
                    if self.busy_reads <= 0:
                        self.nodes[name] = (state.replace('ALLOCATED', 'IDLE'), reason)
                    self.busy_reads -= 1
                out += self.text(name)
            return rc, out, ''
        name = argv[2].split('=', 1)[1]
        state, reason = self.nodes[name]
        if argv[3] == 'state=drain':
            base = state.split('+')[0]
            self.nodes[name] = (base + '+DRAIN', argv[4].split('=', 1)[1])
        elif argv[3] == 'state=resume':
            if 'DRAIN' not in state and not state.startswith('DOWN'):
                return 1, '', 'slurm_update error: Invalid node state specified\n'
            self.nodes[name] = ('IDLE', None)
        return 0, '', ''


@pytest.fixture
def slurm(monkeypatch):
    def make(nodes, busy_reads=0):
        fake = FakeSlurm(nodes, busy_reads)
        answer_commands(monkeypatch, fake)
        monkeypatch.setattr(slurm_node.time, 'sleep', lambda _s: None)
        return fake
    return make


def updates(fake):
    return [call for call in fake.calls if call[0] == 'update']


def test_the_capture_of_two_nodes_reads_back_through_the_module(monkeypatch):
    calls = []

    def scontrol(argv):
        calls.append(argv)
        return 0, real_text(CAPTURE % 'two').replace('slurmx-', ''), ''
    answer_commands(monkeypatch, scontrol)
    result = run(slurm_node, {'name': ['n1', 'n2']})
    assert calls == [['scontrol', 'show', 'node', 'n1,n2']]
    assert result['changed'] is False
    assert result['nodes']['n1']['draining'] and result['nodes']['n2']['in_service']


def test_drain_an_idle_node(slurm):
    fake = slurm({'n1': ('IDLE', None)})
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'rollout of nvidia_driver'}, diff=True)
    assert updates(fake) == [['update', 'nodename=n1', 'state=drain', 'reason=gpuops: rollout of nvidia_driver']]
    assert result['changed'] and result['drained'] == ['n1'] and result['left'] == {}
    assert result['before']['n1']['in_service'] and result['nodes']['n1']['drained']
    assert result['diff'] == {'before': 'n1: IDLE\n', 'after': 'n1: IDLE+DRAIN (gpuops: rollout of nvidia_driver)\n'}


def test_drain_again_with_the_same_reason_changes_nothing(slurm):
    fake = slurm({'n1': ('IDLE+DRAIN', 'gpuops: rollout of mig')})
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'rollout of mig'})
    assert updates(fake) == [] and result['changed'] is False


def test_drain_waits_for_the_jobs(slurm):
    fake = slurm({'n1': ('ALLOCATED', None)}, busy_reads=3)
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r', 'wait': True, 'poll_interval': 1})
    assert result['before']['n1']['busy'] and result['nodes']['n1']['drained']
    assert len([c for c in fake.calls if c[0] == 'show']) >= 4


def test_drain_that_times_out_fails_and_says_the_node_stays_drained(slurm):
    slurm({'n1': ('ALLOCATED', None)}, busy_reads=10 ** 6)
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r', 'wait': True, 'wait_timeout': 0},
                 expect_fail=True)
    assert 'jobs still run on n1 (ALLOCATED+DRAIN) after 0 s (wait_timeout)' in result['msg']
    assert result['drained'] == ['n1'] and result['changed'] is True


def test_an_operators_drain_keeps_its_reason_but_its_jobs_are_waited_for(slurm):
    fake = slurm({'n1': ('ALLOCATED+DRAIN', 'operator: fan swap')}, busy_reads=2)
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r', 'wait': True})
    assert updates(fake) == []
    assert result['left'] == {'n1': 'operator: fan swap'} and result['changed'] is False
    assert result['nodes']['n1']['drained']


def test_resume_only_what_the_rollout_drained(slurm):
    fake = slurm({'n1': ('IDLE+DRAIN', 'gpuops: failed: nvlink'), 'n2': ('IDLE+DRAIN', 'operator: PSU'),
                  'n3': ('IDLE', None)})
    result = run(slurm_node, {'name': ['n1', 'n2', 'n3'], 'state': 'resume'})
    assert updates(fake) == [['update', 'nodename=n1', 'state=resume']]
    assert result['resumed'] == ['n1'] and result['left'] == {'n2': 'operator: PSU'}
    assert result['nodes']['n1']['in_service'] and result['nodes']['n2']['drained']


def test_check_mode_changes_nothing(slurm):
    fake = slurm({'n1': ('IDLE', None), 'n2': ('IDLE+DRAIN', 'gpuops: x')})
    drained = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r', 'wait': True}, check_mode=True, diff=True)
    resumed = run(slurm_node, {'name': ['n2'], 'state': 'resume'}, check_mode=True)
    assert updates(fake) == []
    assert drained['changed'] and drained['drained'] == ['n1'] and drained['diff']['after'] == 'n1: (drain) gpuops: r\n'
    assert resumed['changed'] and resumed['resumed'] == ['n2']


def test_a_node_slurm_does_not_know_fails_naming_it(slurm):
    slurm({'n1': ('IDLE', None)})
    result = run(slurm_node, {'name': ['gpu-x9']}, expect_fail=True)
    assert result['msg'].startswith('Slurm does not know the node gpu-x9 (scontrol show node: Node gpu-x9 not found')


def test_a_refused_update_fails_with_scontrols_words(slurm, monkeypatch):
    fake = slurm({'n1': ('IDLE', None)})

    def refuse(argv):
        if argv[1] == 'update':
            return 1, '', 'slurm_update error: Invalid node state specified\n'
        return fake(argv)
    answer_commands(monkeypatch, refuse)
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r'}, expect_fail=True)
    assert result['msg'] == ("scontrol update nodename=n1 state=drain 'reason=gpuops: r' exited 1: slurm_update error: "
                             'Invalid node state specified')
    assert result['rc'] == 1


def test_drain_needs_a_reason(slurm):
    slurm({'n1': ('IDLE', None)})
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain'}, expect_fail=True)
    assert 'reason' in result['msg']


def test_an_operators_down_node_keeps_its_reason_and_is_never_resumed(slurm):
    fake = slurm({'n1': ('DOWN', 'operator: bad PSU')})
    drained = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r'})
    resumed = run(slurm_node, {'name': ['n1'], 'state': 'resume'})
    assert updates(fake) == []
    assert drained['left'] == {'n1': 'operator: bad PSU'} and resumed['left'] == {'n1': 'operator: bad PSU'}


def test_an_earlier_failure_reason_is_kept_when_asked(slurm):
    fake = slurm({'n1': ('IDLE+DRAIN', 'gpuops: failed: gate dcgm')})
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'rollout of mps', 'update_reason': False})
    assert updates(fake) == [] and result['changed'] is False and result['nodes']['n1']['reason'] == 'gpuops: failed: gate dcgm'


def test_a_failure_after_the_drain_still_says_what_was_drained(slurm, monkeypatch):
    fake = slurm({'n1': ('ALLOCATED', None)}, busy_reads=10 ** 6)
    reads = []

    def controller_gone(argv):
        if argv[1] == 'show':
            reads.append(argv)
            if len(reads) > 2:
                return 1, '', 'slurm_load_node error: Unable to contact slurm controller (connect failure)\n'
        return fake(argv)
    answer_commands(monkeypatch, controller_gone)
    result = run(slurm_node, {'name': ['n1'], 'state': 'drain', 'reason': 'r', 'wait': True}, expect_fail=True)
    assert 'Unable to contact slurm controller' in result['msg']
    assert result['drained'] == ['n1'] and result['before']['n1']['in_service']


def test_an_unreachable_controller_is_not_an_unknown_node(monkeypatch):
    answer_commands(monkeypatch, lambda argv: (
        1, '', 'slurm_load_node error: Unable to contact slurm controller (connect failure)\n'))
    result = run(slurm_node, {'name': ['n1', 'n2']}, expect_fail=True)
    assert result['msg'] == ('scontrol show node n1,n2 exited 1: slurm_load_node error: Unable to contact '
                             'slurm controller (connect failure)')


def test_unknown_nodes_reported_when_asked(slurm):
    slurm({'n1': ('IDLE', None)})
    result = run(slurm_node, {'name': ['n1', 'n9'], 'missing': 'report'})
    assert result['nodes']['n9']['found'] is False and result['nodes']['n1']['in_service']


def test_an_output_it_cannot_read_fails_instead_of_passing_the_node(monkeypatch):
    cut = real_text(CAPTURE % 'draining')
    cut = cut[:cut.index('State=') + len('State=ALLOC')] + '\n'
    answer_commands(monkeypatch, lambda argv: (0, cut, ''))
    result = run(slurm_node, {'name': ['slurmx-n1'], 'state': 'drain', 'reason': 'r', 'wait': True},
                 expect_fail=True)
    assert result['msg'].startswith("scontrol show node slurmx-n1 exited 0: its output is not a node list (an unknown "
                                    "node state 'ALLOC'): ")
    assert result['drained'] == []


def test_a_hung_scontrol_is_stopped_and_named(monkeypatch):
    calls = answer_commands(monkeypatch, lambda argv: (None, '', '', True))
    result = run(slurm_node, {'name': ['n1']}, expect_fail=True)
    assert result['msg'] == 'scontrol show node n1 did not finish within 300 s and was killed'
    assert result['rc'] is None and result['drained'] == []
    assert calls[0]['timeout'] == 300 and calls[0]['env']['LC_ALL'] in ('C.UTF-8', 'C.utf8', 'C', 'POSIX')


def test_no_scontrol_is_named(monkeypatch, tmp_path):
    result = run(slurm_node, {'name': ['n1'], 'scontrol': str(tmp_path / 'scontrol')}, expect_fail=True)
    assert result['msg'] == 'scontrol not found at %s' % (tmp_path / 'scontrol')
