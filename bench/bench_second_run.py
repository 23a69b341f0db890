"""A second run of site.yml on converged nodes, against a play of as many no-op tasks.

Reads what a run of site.yml printed with the ansible.posix.json callback (the Molecule scenarios keep it as
``<ephemeral dir>/<run>/output.json``, molecule/shared/tasks/run_playbook.yml) and prints the roles it applied,
its task count and its time, then runs a no-op play of the same shape against the same hosts, inventory and
ansible.cfg, and prints its time and the ratio of the two (goal: under 2). Never asserts a time.

The no-op play has one task for every task of the run, in order, on the hosts it ran on: ``ansible.builtin.ping``
(one module on the node, the least a task that looks at the node costs) where the run's task ran a module, a
``set_fact`` where it ran an action on the controller only (set_fact, assert, include_*, ...), and the task is
skipped where the run skipped it. A loop counts as one task (conservative: the no-op play does less). Both times
are the plays' durations as the json callback records them (ansible-playbook's start-up left out of both).

    python3 bench/bench_second_run.py --run DIR_OR_OUTPUT_JSON --inventory INVENTORY [--config ANSIBLE_CFG]
"""

from __future__ import print_function

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import yaml

from _common import bin_path

# actions that run on the controller only (no module on the node)
CONTROLLER_ONLY = ('set_fact', 'assert', 'fail', 'debug', 'meta', 'set_stats', 'include_tasks', 'include_role',
                   'import_tasks', 'import_role', 'include_vars', 'validate_argument_spec', 'add_host', 'group_by',
                   'pause', 'wait_for_connection', 'end_play', 'end_host')


def _short(action):
    return (action or '').rsplit('.', 1)[-1]


def _seconds(duration):
    fmt = '%Y-%m-%dT%H:%M:%S.%fZ'
    start = datetime.datetime.strptime(duration['start'], fmt)
    end = datetime.datetime.strptime(duration['end'], fmt)
    return (end - start).total_seconds()


def read_run(path):
    """(plays' seconds, tasks [(name, action, ran hosts, skipped hosts)], hosts) of a json callback output."""
    with open(path) as handle:
        text = handle.read()
    doc = json.loads(text[text.index('{'):])
    seconds, tasks, hosts = 0.0, [], []
    for play in doc['plays']:
        seconds += _seconds(play['play']['duration'])
        for task in play['tasks']:
            ran, skipped, action = [], [], None
            for host, result in sorted(task['hosts'].items()):
                if host not in hosts:
                    hosts.append(host)
                action = action or result.get('action')
                (skipped if result.get('skipped') else ran).append(host)
            tasks.append((task['task']['name'], action, ran, skipped))
    return seconds, tasks, hosts


def roles_of(tasks):
    """The roles of gpuops_roles whose tasks ran, in order (task names are 'role : task' inside a role; gpuops is
    the rollout's own)."""
    roles = []
    for name, _action, ran, _skipped in tasks:
        if ' : ' in name and ran:
            role = name.split(' : ', 1)[0].rsplit('.', 1)[-1]
            if role != 'gpuops' and role not in roles:
                roles.append(role)
    return roles


def noop_play(tasks, hosts):
    """The no-op play of the same shape as ``tasks``."""
    body = []
    for i, (_name, action, ran, _skipped) in enumerate(tasks):
        task = {'name': 'no-op %d' % (i + 1), 'when': 'inventory_hostname in %s' % json.dumps(ran)}
        if _short(action) in CONTROLLER_ONLY:
            task['ansible.builtin.set_fact'] = {'bench_noop': i}
        else:
            task['ansible.builtin.ping'] = {}
        body.append(task)
    return [{'name': 'No-op tasks', 'hosts': ','.join(hosts), 'gather_facts': False, 'tasks': body}]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--run', required=True, help='output.json of the run, or the directory holding it')
    parser.add_argument('--inventory', required=True)
    parser.add_argument('--config', help='ansible.cfg of the run (default: ANSIBLE_CONFIG)')
    parser.add_argument('--label', default='site.yml second run')
    args = parser.parse_args()
    output = os.path.join(args.run, 'output.json') if os.path.isdir(args.run) else args.run
    run_s, tasks, hosts = read_run(output)
    ran = sum(len(t[2]) for t in tasks)
    skipped = sum(len(t[3]) for t in tasks)
    controller = sum(len(t[2]) for t in tasks if _short(t[1]) in CONTROLLER_ONLY)

    work = tempfile.mkdtemp(prefix='gpuops-bench-noop-')
    playbook = os.path.join(work, 'noop.yml')
    with open(playbook, 'w') as handle:
        yaml.safe_dump(noop_play(tasks, hosts), handle, default_flow_style=False)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='ansible.posix.json')
    if args.config:
        env['ANSIBLE_CONFIG'] = args.config
    proc = subprocess.Popen([bin_path('ansible-playbook'), '-i', args.inventory, playbook], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    with open(os.path.join(work, 'output.json'), 'wb') as handle:
        handle.write(out)
    if proc.returncode != 0:
        print('bench_second_run: the no-op play exited %d: %s %s' % (proc.returncode, out[-2000:], err[-2000:]),
              file=sys.stderr)
        return 1
    noop_s, noop_tasks, _hosts = read_run(os.path.join(work, 'output.json'))
    os.remove(os.path.join(work, 'output.json'))
    os.remove(playbook)
    os.rmdir(work)

    roles = ', '.join(roles_of(tasks)) or 'none'
    print('%s: roles %s on %d host(s) (%s)' % (args.label, roles, len(hosts), ', '.join(hosts)))
    print('  tasks: %d, results %d (%d ran: %d on the controller only, %d skipped)'
          % (len(tasks), ran + skipped, ran, controller, skipped))
    print('  %s: %.1f s; no-op play of %d tasks of the same shape: %.1f s; ratio %.2f (goal: under 2)'
          % (args.label, run_s, len(noop_tasks), noop_s, run_s / noop_s))
    return 0


if __name__ == '__main__':
    sys.exit(main())
