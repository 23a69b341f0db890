#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_node
short_description: Read, drain and return to service Slurm nodes with scontrol, telling the rollout's drains from others
version_added: 0.1.0
description:
  - Runs C(scontrol) where it is installed (the controller, or any host with C(slurm-client) and the cluster's munge key),
    usually delegated to it.
  - Reads each node of O(name) with C(scontrol show node) and says whether it is in service, drained, still running jobs,
    down, and whether its drain is the rollout's own (its reason starts with O(mark)) or someone else's.
  - V(drain) drains a node in service with O(reason) after O(mark); on a node the rollout drained before it only updates
    the reason; a node drained by someone else keeps its reason and is reported in RV(left). With O(wait) it then waits
    until no job runs on the drained nodes, at most O(wait_timeout) seconds, and fails when jobs still run.
  - V(resume) returns to service only the nodes the rollout drained (C(state=resume)); a node drained or down by someone
    else stays as it is (RV(left)), a node in service is left alone.
  - A node drained or down by someone else (its reason does not start with O(mark)) never gets the rollout's reason.
  - A node Slurm does not know fails the module, naming it, unless O(missing=report).
  - When C(scontrol) fails after a node was drained, the failure still says which nodes were (RV(drained)).
author:
  - gpuops.node maintainers (@gpuops)
requirements:
  - C(scontrol) (Debian's C(slurm-client)) able to reach C(slurmctld)
attributes:
  check_mode:
    support: full
    description: Reads the nodes and reports what it would change; drains, resumes and waits for nothing.
  diff_mode:
    support: full
    description: Each node's state and reason before and after.
options:
  name:
    description: The nodes' names in Slurm (C(NodeName)).
    type: list
    elements: str
    required: true
  state:
    description:
      - V(query) reads the nodes and changes nothing.
      - V(drain) drains them with O(reason).
      - V(resume) returns to service those the rollout drained.
    type: str
    choices: [query, drain, resume]
    default: query
  reason:
    description: The drain's reason, written after O(mark) on one line (at most 240 characters). Required with V(drain).
    type: str
  update_reason:
    description:
      - With V(drain), write O(reason) also on a node the rollout drained before (its reason starts with O(mark)).
      - V(false) keeps that node's reason (the failure an earlier run left it drained for).
    type: bool
    default: true
  missing:
    description: A node Slurm does not know fails the module (V(fail)), or is returned with C(found=false) (V(report)).
    type: str
    choices: [fail, report]
    default: fail
  mark:
    description: The start of every reason the rollout writes, which tells its drains from others'.
    type: str
    default: 'gpuops:'
  wait:
    description: With V(drain), wait until no job runs on the nodes.
    type: bool
    default: false
  wait_timeout:
    description: The longest wait, in seconds; when jobs still run after it the module fails (the nodes stay drained).
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two reads while waiting.
    type: int
    default: 10
  scontrol:
    description: The C(scontrol) command.
    type: path
    default: scontrol
'''

EXAMPLES = r'''
- name: Drain the node before its change and wait for its jobs
  gpuops.node.slurm_node:
    name: ["{{ inventory_hostname }}"]
    state: drain
    reason: rollout of nvidia_driver
    wait: true
    wait_timeout: 7200
  delegate_to: slurm-controller

- name: Return it to service after its post-change check passed
  gpuops.node.slurm_node:
    name: ["{{ inventory_hostname }}"]
    state: resume
  delegate_to: slurm-controller
'''

RETURN = r'''
nodes:
  description: Each node after the module, by name (in check mode, as read).
  returned: always
  type: dict
  sample:
    gpu-a01:
      state: ALLOCATED+DRAIN
      base: ALLOCATED
      flags: [DRAIN]
      drain: true
      busy: true
      down: false
      drained: false
      draining: true
      in_service: false
      reason: 'gpuops: rollout of nvidia_driver'
      ours: true
before:
  description: Each node as read before any change, by name, in the same form as RV(nodes).
  returned: always
  type: dict
drained:
  description: The nodes this call drained or whose drain reason it changed.
  returned: always
  type: list
  elements: str
resumed:
  description: The nodes this call returned to service.
  returned: always
  type: list
  elements: str
left:
  description: The nodes drained or down by someone else (their reason does not start with O(mark)), left as they were, with their reason.
  returned: always
  type: dict
  sample: {gpu-a02: 'operator: bad PSU'}
waited:
  description: Seconds spent waiting for jobs to end.
  returned: always
  type: float
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers.scontrol import (
    SlurmParseError, drain_reason, statuses)


# what a failure says too: the nodes read and drained so far, so that a caller knows what to undo
STATE = {'before': {}, 'drained': [], 'resumed': [], 'left': {}}


def fail(module, msg, rc=None):
    module.fail_json(msg=msg, rc=rc, changed=bool(STATE['drained'] or STATE['resumed']), **STATE)


def read(module, names):
    argv = [module.params['scontrol'], 'show', 'node', ','.join(names)]
    result = command.run(module, argv)
    rc, out, err = result.rc, result.out, result.err
    if result.error is not None or result.timed_out:
        fail(module, command.failure(result), rc)
    try:
        found = statuses(out, names, module.params['mark'])
    except SlurmParseError as exc:
        fail(module, command.failure(result, output='its output is not a node list (%s): %s'
                                     % (exc, command.said(out, err))), rc)
    missing = sorted(name for name, node in found.items() if not node['found'])
    if rc != 0 and len(missing) == len(names) and 'not found' not in out:
        fail(module, command.failure(result), rc)
    if missing and module.params['missing'] == 'fail':
        fail(module, 'Slurm does not know the node%s %s (scontrol show node: %s)'
             % ('' if len(missing) == 1 else 's', ', '.join(missing), (out or err).strip()[:400]), rc)
    return found


def update(module, name, words):
    argv = [module.params['scontrol'], 'update', 'nodename=%s' % name] + words
    result = command.run(module, argv)
    if not result.ok():
        fail(module, command.failure(result), result.rc)


def describe(node):
    return '%s%s\n' % (node['state'], ' (%s)' % node['reason'] if node['reason'] else '')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='list', elements='str', required=True),
            state=dict(type='str', choices=['query', 'drain', 'resume'], default='query'),
            reason=dict(type='str'),
            mark=dict(type='str', default='gpuops:'),
            wait=dict(type='bool', default=False),
            wait_timeout=dict(type='int', default=3600),
            poll_interval=dict(type='int', default=10),
            update_reason=dict(type='bool', default=True),
            missing=dict(type='str', choices=['fail', 'report'], default='fail'),
            scontrol=dict(type='path', default='scontrol'),
        ),
        required_if=[('state', 'drain', ['reason'])],
        supports_check_mode=True,
    )
    params = module.params
    STATE.update(before={}, drained=[], resumed=[], left={})
    names = [name for name in params['name'] if name]
    if not names:
        module.fail_json(msg='name: no node given')
    if not params['mark'].strip():
        module.fail_json(msg='mark: empty; it is what tells the rollout\'s drains from others\'')
    if params['wait_timeout'] < 0 or params['poll_interval'] < 1:
        module.fail_json(msg='wait_timeout must be 0 or more and poll_interval 1 or more')
    before = read(module, names)
    STATE['before'] = before
    drained, resumed, left = STATE['drained'], STATE['resumed'], STATE['left']

    if params['state'] == 'drain':
        reason = drain_reason(params['mark'], params['reason'])
        for name in names:
            node = before[name]
            if not node['found']:
                continue
            if node['theirs']:
                left[name] = node['reason']
            elif not node['drain'] or (node['reason'] != reason and params['update_reason']):
                if not module.check_mode:
                    update(module, name, ['state=drain', 'reason=%s' % reason])
                drained.append(name)
    elif params['state'] == 'resume':
        for name in names:
            node = before[name]
            if node['theirs']:
                left[name] = node['reason']
            elif node['drain'] and node['ours']:
                if not module.check_mode:
                    update(module, name, ['state=resume'])
                resumed.append(name)

    after = before
    waited = 0.0
    if (drained or resumed) and not module.check_mode:
        after = read(module, names)
    if params['state'] == 'drain' and params['wait'] and not module.check_mode:
        started = time.time()
        # a node drained by someone else is waited for too: its jobs must end before the change
        watched = [name for name in names if after[name]['found']]
        while any(after[name]['busy'] for name in watched):
            waited = time.time() - started
            if waited >= params['wait_timeout']:
                busy = sorted(name for name in watched if after[name]['busy'])
                module.fail_json(msg='jobs still run on %s after %d s (wait_timeout)'
                                 % (', '.join('%s (%s)' % (name, after[name]['state']) for name in busy), waited),
                                 nodes=after, waited=round(waited, 1), changed=bool(drained), **STATE)
            time.sleep(min(params['poll_interval'], max(1, params['wait_timeout'] - waited)))
            after = read(module, names)
        waited = time.time() - started

    result = dict(changed=bool(drained or resumed), nodes=after, before=before, drained=drained, resumed=resumed,
                  left=left, waited=round(waited, 1))
    if module._diff:
        result['diff'] = dict(
            before=''.join('%s: %s' % (name, describe(before[name])) for name in names),
            after=''.join('%s: %s' % (name, describe(after[name]) if not module.check_mode or name not in drained + resumed
                                      else ('(drain) %s\n' % drain_reason(params['mark'], params['reason'])
                                            if name in drained else '(resume)\n')) for name in names))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
