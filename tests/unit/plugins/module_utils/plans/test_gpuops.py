# -*- coding: utf-8 -*-
"""What the rollout does with a node's scheduler: the batches, the drains within a rack's bound, what becomes of
each node after the report, and a Kubernetes node read in the form of a Slurm one."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.plans import gpuops
from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.report import render
from repo_paths import REPO

NODE_JSON = os.path.join(REPO, 'tests', 'k8s_api', 'answers', 'node.json')

IN_SERVICE = {'found': True, 'in_service': True, 'drain': False, 'ours': False, 'state': 'IDLE', 'reason': None}
DRAINED_OURS = {'found': True, 'in_service': False, 'drain': True, 'ours': True, 'state': 'IDLE+DRAIN',
                'reason': 'gpuops: failed: nvlink'}
DRAINED_OTHER = {'found': True, 'in_service': False, 'drain': True, 'ours': False, 'theirs': True,
                 'state': 'IDLE+DRAIN', 'reason': 'operator: fan swap'}
DOWN = {'found': True, 'in_service': False, 'drain': False, 'ours': False, 'theirs': True, 'state': 'DOWN',
        'reason': 'psu'}
DOWN_UNEXPLAINED = {'found': True, 'in_service': False, 'drain': False, 'ours': False, 'theirs': False,
                    'state': 'DOWN', 'reason': None}


@pytest.mark.parametrize('sizes, limit, batches', [
    ([4, 3], 0, [4, 3]),
    ([4, 3], 2, [2, 2, 2, 1]),
    ([4, 3], 1, [1, 1, 1, 1, 1, 1, 1]),
    ([2], 5, [2]),
    ([], 2, []),
])
def test_rack_batches(sizes, limit, batches):
    assert gpuops.rack_batches(sizes, limit) == batches


def item(host, wants=True, rack=('a1', 'a2', 'a3', 'a4')):
    return {'host': host, 'node': host, 'wants': wants, 'rack_nodes': list(rack)}


def test_no_bound_drains_every_host_that_wants_it():
    states = dict((n, IN_SERVICE) for n in ('a1', 'a2', 'a3', 'a4'))
    plan = gpuops.drain_plan([item('a1'), item('a2', wants=False), item('a3')], states, 0)
    assert plan == {'a1': {'drain': True, 'hold': None}, 'a2': {'drain': False, 'hold': None},
                    'a3': {'drain': True, 'hold': None}}


def test_nodes_out_of_service_count_toward_the_bound_whoever_took_them_out():
    states = {'a1': IN_SERVICE, 'a2': IN_SERVICE, 'a3': DRAINED_OTHER, 'a4': DOWN}
    plan = gpuops.drain_plan([item('a1'), item('a2')], states, 3)
    assert plan['a1'] == {'drain': True, 'hold': None}
    hold = ('held back, nothing changed: 3 nodes of its rack out of service (a1, a3, a4), '
            'gpuops_max_unavailable_per_rack is 3')
    assert plan['a2'] == {'drain': False, 'hold': hold}


def test_a_node_already_out_of_service_is_drained_without_taking_from_the_bound():
    states = {'a1': DRAINED_OURS, 'a2': IN_SERVICE, 'a3': IN_SERVICE, 'a4': IN_SERVICE}
    plan = gpuops.drain_plan([item('a1'), item('a2')], states, 2)
    assert plan == {'a1': {'drain': True, 'hold': None}, 'a2': {'drain': True, 'hold': None}}
    plan = gpuops.drain_plan([item('a2')], states, 1)
    assert plan['a2']['hold'].endswith('1 node of its rack out of service (a1), gpuops_max_unavailable_per_rack is 1')


def test_racks_are_counted_apart():
    states = dict((n, IN_SERVICE) for n in ('a1', 'a2', 'b1', 'b2'))
    batch = [item('a1', rack=('a1', 'a2')), item('a2', rack=('a1', 'a2')), item('b1', rack=('b1', 'b2'))]
    plan = gpuops.drain_plan(batch, states, 1)
    assert [plan[h]['drain'] for h in ('a1', 'a2', 'b1')] == [True, False, True]


def test_a_node_the_scheduler_does_not_know_is_held_back():
    plan = gpuops.drain_plan([item('a1')], {'a1': {'found': False}}, 0)
    assert plan['a1'] == {'drain': False, 'hold': 'the scheduler does not know the node a1'}


def test_a_bad_bound_is_refused_naming_the_variable():
    with pytest.raises(gpuops.SchedulerError, match='gpuops_max_unavailable_per_rack'):
        gpuops.drain_plan([], {}, -1)


def record(status, before, drained=True, applied=True, error=None, check_mode=False, full_run=True):
    raw = {'host': 'a1', 'rack': 'rack_a', 'roles': ['mps'], 'phase': 'done', 'check_mode': check_mode,
           'pre_check': {'passed': status != 'held_back', 'failures': []},
           'scheduler': {'name': 'slurm', 'node': 'a1', 'before': before, 'drained': drained, 'applied': applied,
                         'full_run': full_run, 'error': error}}
    if status == 'provisioned':
        raw['post_check'] = {'passed': True, 'failures': [], 'regressions': []}
    elif status == 'failed':
        raw['post_check'] = {'passed': False, 'failures': [{'check': 'compute_mode', 'message': 'GPU 3 mode'}],
                             'regressions': []}
    elif status == 'held_back' and drained:
        raw['held_back'] = True
        raw['errors'] = ['drain: jobs still run']
    return model.build_report([raw])['racks'][0]['hosts'][0]


def test_a_host_that_passed_goes_back_to_service():
    rec = record('provisioned', IN_SERVICE)
    assert rec['status'] == 'provisioned'
    assert rec['service'] == {'action': 'resume', 'node': 'a1', 'reason': None, 'text': 'returned to service'}


def test_a_host_that_failed_stays_drained_with_its_failures():
    rec = record('failed', IN_SERVICE)
    assert rec['service']['action'] == 'keep'
    assert rec['service']['reason'] == 'failed: GPU 3 mode'
    assert rec['service']['text'] == 'stays drained: gpuops: failed: GPU 3 mode'


def test_a_node_drained_and_not_changed_goes_back():
    rec = record('held_back', IN_SERVICE, drained=True, applied=False)
    assert rec['status'] == 'held_back'
    assert rec['service']['action'] == 'resume'
    assert rec['service']['text'] == 'returned to service (nothing was changed on it)'


def test_an_earlier_runs_drain_is_ended_by_a_passing_run_and_kept_by_a_failing_one():
    assert record('provisioned', DRAINED_OURS, drained=False)['service']['action'] == 'resume'
    kept = record('held_back', DRAINED_OURS, drained=False, applied=False)
    assert kept['service']['action'] == 'keep'


def test_someone_elses_drain_is_left():
    rec = record('provisioned', DRAINED_OTHER, drained=False)
    assert rec['service']['action'] == 'left'
    assert rec['service']['text'] == 'drained by someone else before the run (operator: fan swap): left as it was'
    rec = record('provisioned', DOWN, drained=False)
    assert rec['service']['action'] == 'left'
    assert rec['service']['text'] == 'out of service by someone else before the run (psu): left as it was'


def test_an_earlier_failure_is_cleared_only_by_a_run_of_every_role():
    failed = dict(DRAINED_OURS, reason='gpuops: failed: gate dcgm: level 3 Fail on GPU2')
    narrow = record('provisioned', failed, drained=False, full_run=False)
    assert narrow['service']['action'] == 'keep'
    assert narrow['service']['reason'] == 'failed: gate dcgm: level 3 Fail on GPU2'
    assert 'run every role of gpuops_roles' in narrow['service']['text']
    assert record('provisioned', failed, drained=False, full_run=True)['service']['action'] == 'resume'
    # an interrupted rollout's drain is not a failure
    interrupted = dict(DRAINED_OURS, reason='gpuops: rollout of mps')
    assert record('provisioned', interrupted, drained=False, full_run=False)['service']['action'] == 'resume'


def test_a_node_the_rollout_did_not_drain_is_not_touched():
    assert record('held_back', IN_SERVICE, drained=False, applied=False)['service']['action'] == 'none'
    assert record('failed', DOWN_UNEXPLAINED, drained=False)['service']['text'] == (
        'out of service (DOWN), not drained by the rollout')


def test_check_mode_says_would():
    assert record('provisioned', IN_SERVICE, check_mode=True)['service']['text'] == (
        'would drain, then return to service')
    assert record('failed', IN_SERVICE, check_mode=True)['service']['text'].startswith(
        'would drain, then stay drained: gpuops: ')
    assert record('provisioned', IN_SERVICE, drained=False, check_mode=True)['service']['text'] == (
        'in service, not drained')


def test_the_report_has_a_scheduler_section_and_keeps_it_in_json():
    raw = {'host': 'a1', 'rack': 'rack_a', 'roles': ['mps'], 'phase': 'done',
           'pre_check': {'passed': True, 'failures': []},
           'post_check': {'passed': True, 'failures': [], 'regressions': []},
           'scheduler': {'name': 'slurm', 'node': 'a1', 'before': IN_SERVICE, 'drained': True, 'applied': True}}
    rep, rendered = render.render_all([raw])
    assert '## Scheduler (slurm)' in rendered['markdown']
    assert '| a1 | a1 | IDLE | returned to service |' in rendered['markdown']
    host = json.loads(rendered['json'])['racks'][0]['hosts'][0]
    assert host['service']['action'] == 'resume' and host['scheduler']['drained'] is True
    plain = dict(raw)
    del plain['scheduler']
    rep, rendered = render.render_all([plain])
    assert 'Scheduler' not in rendered['markdown']
    assert 'scheduler' not in json.loads(rendered['json'])['racks'][0]['hosts'][0]
    assert rep['racks'][0]['hosts'][0]['service'] is None


def test_a_bad_scheduler_field_is_refused():
    with pytest.raises(model.ReportError, match='scheduler name'):
        model.build_report([{'host': 'a1', 'scheduler': {'name': 'pbs'}}])


def k8s_node():
    with open(NODE_JSON) as handle:
        return json.load(handle)


def test_a_recorded_ready_node_is_in_service():
    status = gpuops.k8s_node_status(k8s_node())
    assert status['found'] and status['in_service'] and not status['drain'] and status['state'] == 'Ready'


def test_a_cordoned_node_is_the_rollouts_only_with_its_annotation():
    node = k8s_node()
    node['spec']['unschedulable'] = True
    status = gpuops.k8s_node_status(node)
    assert status['drain'] and not status['ours'] and status['state'] == 'Ready,SchedulingDisabled'
    node = copy.deepcopy(node)
    node['metadata'].setdefault('annotations', {})[gpuops.K8S_ANNOTATION] = 'failed: nvlink'
    status = gpuops.k8s_node_status(node)
    assert status['ours'] and status['reason'] == 'failed: nvlink'


def test_a_node_not_ready_is_down_and_a_missing_one_not_found():
    node = k8s_node()
    for condition in node['status']['conditions']:
        if condition['type'] == 'Ready':
            condition['status'] = 'Unknown'
    assert gpuops.k8s_node_status(node)['down']
    assert gpuops.k8s_node_status(None)['found'] is False
