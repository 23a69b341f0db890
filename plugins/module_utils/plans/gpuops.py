# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the rollout does with a node's scheduler: which nodes of a batch it drains, and what becomes of each after
the report (returned to service, kept drained with its failures as the reason, or left alone).

A node's scheduler state is one dict whatever the scheduler (parsers/scontrol.py node_status, k8s_node_status):
found, drain (drained or draining: no new work goes there), busy, down, in_service, reason, ours (the rollout's own
drain, told by its mark).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.parsers.scontrol import drain_reason, one_line, unknown_node

SCHEDULERS = ('none', 'slurm', 'kubernetes')
# the start of every drain reason the rollout writes: what tells its drains from others'
MARK = u'gpuops:'
# the annotation that carries the rollout's drain reason on a Kubernetes node it cordoned
K8S_ANNOTATION = 'gpuops.node/drain-reason'
# statuses after which a node the rollout drained goes back to service
SERVING_STATUSES = ('provisioned', 'validated')


class SchedulerError(ValueError):
    """Input a plan cannot be made from."""


def k8s_node_status(resource, annotation=K8S_ANNOTATION):
    """The scheduler state of a Kubernetes Node object (None: the API server has no such node).

    Cordoned (spec.unschedulable) is drain; the rollout's own cordon carries ``annotation`` with its reason. A node
    whose Ready condition is not True is down. Whether pods still run is the drain's business (k8s_drain waits), so
    busy is always False here.
    """
    if not resource:
        return unknown_node(None)
    metadata = resource.get('metadata') or {}
    annotations = metadata.get('annotations') or {}
    cordoned = bool((resource.get('spec') or {}).get('unschedulable'))
    ready = [c.get('status') for c in (resource.get('status') or {}).get('conditions') or [] if c.get('type') == 'Ready']
    down = not ready or ready[0] != 'True'
    reason = annotations.get(annotation)
    ours = cordoned and reason is not None
    state = ('Ready' if not down else 'NotReady') + (',SchedulingDisabled' if cordoned else '')
    return {'name': metadata.get('name'), 'found': True, 'state': state, 'drain': cordoned, 'busy': False,
            'down': down, 'drained': cordoned, 'draining': False, 'in_service': not cordoned and not down,
            'reason': reason if ours else None, 'ours': ours, 'theirs': cordoned and not ours}


def _int(value, name):
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SchedulerError('%s must be a whole number, got %r' % (name, value))
    if number < 0:
        raise SchedulerError('%s must be 0 or more, got %r' % (name, value))
    return number


def rack_batches(sizes, max_unavailable=0):
    """The play's serial list: each rack's size, split in batches of at most max_unavailable hosts (0: whole)."""
    limit = _int(max_unavailable, 'gpuops_max_unavailable_per_rack')
    batches = []
    for size in sizes:
        size = _int(size, 'a rack size')
        step = limit or size
        batches.extend(min(step, size - start) for start in range(0, size, step))
    return batches


def drain_plan(batch, states, max_unavailable):
    """Which hosts of a batch the rollout drains now.

    batch: [{host, node, wants (the host's change needs a drain), rack_nodes (the nodes of its rack, its own
    included)}] in rollout order. states: {node: state} of every node of those racks. max_unavailable: nodes of a rack
    allowed out of service at once (0: no bound). A node already out of service (drained, down) counts, whoever took
    it out; a host whose drain would go over the bound is held back, naming the nodes out of service.

    Returns {host: {'drain': bool, 'hold': None or why}}.
    """
    limit = _int(max_unavailable, 'gpuops_max_unavailable_per_rack')
    out_by_rack = {}
    plan = {}
    for item in batch:
        rack = tuple(sorted(item.get('rack_nodes') or [item['node']]))
        if rack not in out_by_rack:
            out_by_rack[rack] = sorted(node for node in rack
                                       if (states.get(node) or {}).get('found') and not states[node]['in_service'])
        out = out_by_rack[rack]
        state = states.get(item['node']) or {}
        if not item.get('wants'):
            plan[item['host']] = {'drain': False, 'hold': None}
        elif not state.get('found'):
            plan[item['host']] = {'drain': False, 'hold': 'the scheduler does not know the node %s' % item['node']}
        elif not state['in_service'] or not limit or len(out) < limit:
            plan[item['host']] = {'drain': True, 'hold': None}
            if state['in_service']:
                out.append(item['node'])
        else:
            plan[item['host']] = {
                'drain': False,
                'hold': 'held back, nothing changed: %d node%s of its rack out of service (%s), '
                        'gpuops_max_unavailable_per_rack is %d'
                        % (len(out), '' if len(out) == 1 else 's', ', '.join(sorted(out)), limit)}
    return plan


def normalize(raw, host):
    """The ``scheduler`` field of a host record: None (no scheduler) or {name, node, before, drained, applied,
    full_run, error}."""
    if raw is None or raw == {}:
        return None
    if not isinstance(raw, dict):
        raise SchedulerError('host %s: scheduler must be a dict, got %r' % (host, raw))
    name = raw.get('name')
    if name not in SCHEDULERS[1:]:
        raise SchedulerError('host %s: scheduler name must be one of %s, got %r' % (host, ', '.join(SCHEDULERS[1:]), name))
    before = raw.get('before') or {}
    if not isinstance(before, dict):
        raise SchedulerError('host %s: scheduler before must be a dict, got %r' % (host, before))
    return {
        'name': name,
        'node': raw.get('node') or host,
        'before': before,
        'drained': bool(raw.get('drained')),
        'applied': bool(raw.get('applied')),
        'full_run': bool(raw.get('full_run', True)),
        'error': raw.get('error') or None,
    }


def _earlier_failure(before, mark):
    """The reason of a failure an earlier run left the node drained for (None: not drained by the rollout for a
    failure; a drain for a rollout that did not finish says 'rollout of ...')."""
    reason = before.get('reason') or ''
    if not before.get('ours') or not reason.startswith(mark):
        return None
    text = reason[len(mark):].strip()
    return None if text.startswith('rollout of ') else text


def service_plan(record, reason, mark, check_mode=False):
    """What becomes of a host's node after the report, from its status (decided by the report) and its scheduler.

    - a node drained or down by someone else before the run stays as it is (``left``);
    - a node the rollout drained goes back to service when the host passed (``resume``), or when this run drained it
      and changed nothing (its drain timed out, its rack was full);
    - a node an earlier run left drained for a failure goes back only after a run of every role of the rollout
      (``full_run``: no --tags) passed; a narrower run keeps it drained with that failure as the reason;
    - otherwise a node the rollout drained stays drained, its reason the host's failures (``keep``);
    - a node the rollout did not drain stays as it is (``none``).
    Returns {action, node, reason (for keep: the new reason, without the mark), text (one line for the report)}.
    """
    sched = record.get('scheduler')
    if not sched:
        return None
    before, status = sched['before'], record['status']
    ours = sched['drained'] or bool(before.get('ours'))
    earlier = _earlier_failure(before, mark)
    # in check mode nothing was drained: "drained" is what the run would have drained
    drain_first = 'drain, then ' if check_mode and sched['drained'] and before.get('in_service') else ''
    plan = {'action': 'none', 'node': sched['node'], 'reason': None}
    if before.get('theirs', before.get('drain') and not before.get('ours')):
        plan['action'] = 'left'
        plan['text'] = '%s by someone else before the run (%s): left as it was' % (
            'drained' if before.get('drain') else 'out of service', before.get('reason') or 'no reason')
    elif earlier and status in SERVING_STATUSES and not sched.get('full_run', True):
        plan['action'] = 'keep'
        plan['reason'] = earlier
        plan['text'] = ('%s drained: an earlier run left it drained (%s); a run of only some roles does not clear '
                        'it: run every role of gpuops_roles' % ('would stay' if check_mode else 'stays', earlier))
    elif ours and (status in SERVING_STATUSES or (sched['drained'] and not sched['applied'])):
        plan['action'] = 'resume'
        plan['text'] = ('would %sreturn to service' % drain_first) if check_mode else 'returned to service'
        if status not in SERVING_STATUSES:
            plan['text'] += ' (nothing was changed on it)'
    elif ours:
        plan['action'] = 'keep'
        # the scheduler's reason, without the mark (slurm_node writes it first; on Kubernetes the annotation is the mark)
        plan['reason'] = one_line('%s: %s' % (status, reason), 240 - len(mark) - 1)
        plan['text'] = '%s drained: %s' % (('would %sstay' % drain_first) if check_mode else 'stays',
                                           drain_reason(mark, plan['reason']))
    else:
        plan['text'] = 'in service, not drained' if before.get('in_service', True) else (
            'out of service (%s), not drained by the rollout' % (before.get('state') or 'unknown'))
    if sched['error']:
        plan['text'] += '; %s' % sched['error']
    return plan


def markdown(report, cell):
    """The report's scheduler section: every host whose node the rollout read in its scheduler, and what became of
    it, each cell escaped by ``cell`` (the report's). [] when no host has a scheduler."""
    hosts = [r for rack in report['racks'] for r in rack['hosts'] if r.get('service')]
    if not hosts:
        return []
    names = sorted(set(r['scheduler']['name'] for r in hosts))
    lines = [u'## Scheduler (%s)' % u', '.join(names), u'',
             u'Nodes are drained before a change and returned to service only when the host passed; a node that '
             u'failed stays drained with its failures as the reason.', u'',
             u'| Host | Node | Before the run | After the run |', u'| --- | --- | --- | --- |']
    for rec in hosts:
        before = rec['scheduler']['before']
        text = before.get('state') or u'not read'
        if before.get('reason'):
            text += u' (%s)' % before['reason']
        lines.append(u'| %s | %s | %s | %s |' % (cell(rec['host']), cell(rec['service']['node']), cell(text),
                                                 cell(rec['service']['text'])))
    return lines + [u'']
