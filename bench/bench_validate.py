"""validate.yml at fleet scale, against the ping floor.

Cheap simulated hosts: local connection, each reading a capture bundle of the simulator's H100 profile instead of
a live node (``gpuops_bundle_dir``), in racks of 32; 2 % of them with an InfiniBand port down (they fail their
check, so the run exits 2 as on a real fleet with a bad node). The bundles are written once, every host gets its
own directory (a symlink to the shared bundle of its kind), and the inventory is generated. For 50, 200 and 1000
hosts it runs, with the same inventory, forks and ansible.cfg (the repository's):

* ``ansible all -m ansible.builtin.ping``: the floor, one module per host;
* ``ansible-playbook playbooks/validate.yml``: the variables checked, the topology checked, the report written,

and prints the seconds per host of each and the ratio of the two (goal: at most 2 at every size, and a flat time
per host). Never asserts a time; exits 1 only when a run does not do what it should (ping failing, validate.yml
not reporting every host with the expected status).

    python3 bench/bench_validate.py [--sizes 50,200,1000] [--forks N] [--keep DIR]
"""

from __future__ import print_function

import argparse
import json
import os
import shutil
import sys
import tempfile

import yaml

from _common import ANSIBLE_CFG, ROOT, _importable, ansible_env, bin_path, timed_run

PROFILE = 'h100-sxm-8gpu-ib'
FAULT = ('ib_port_down', {'nic': 'mlx5_6'})
RACK_SIZE = 32
EVERY = 50          # 2 % of the hosts with the fault


def write_bundles(work):
    """The healthy bundle and the faulty one, each written once; and the node class profile."""
    from simulator import bundle
    from simulator import faults
    tree = bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', PROFILE))
    profile = bundle.load_yaml(bundle.text(tree, 'profile.yml'))['expected_node_class']
    bundle.write_tree(tree, os.path.join(work, 'bundles', 'healthy'))
    faults.FAULTS[FAULT[0]].apply(tree, **FAULT[1])
    bundle.write_tree(tree, os.path.join(work, 'bundles', 'faulty'))
    return profile


def host_name(i):
    return 'gpu-%04d' % i


def write_inventory(work, count, profile):
    """hosts.yml of ``count`` hosts, each with its own bundle directory; returns the hosts that must fail."""
    hosts_dir = os.path.join(work, 'hosts')
    if not os.path.isdir(hosts_dir):
        os.makedirs(hosts_dir)
    racks, faulty = {}, []
    for i in range(count):
        name = host_name(i)
        kind = 'faulty' if i % EVERY == EVERY - 1 else 'healthy'
        if kind == 'faulty':
            faulty.append(name)
        link = os.path.join(hosts_dir, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(work, 'bundles', kind), link)
        racks.setdefault('rack_%02d' % (i // RACK_SIZE), {})[name] = {'gpuops_bundle_dir': link}
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'children': dict([(rack, {'hosts': hosts}) for rack, hosts in sorted(racks.items())] + [
            ('dgx_h100', {'children': dict((rack, None) for rack in racks),
                          'vars': {'gpuops_node_class': 'dgx_h100', 'gpuops_node_class_profile': profile}})])}}
    path = os.path.join(work, 'inventory-%d' % count)
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle, default_flow_style=False)
    return path, faulty


def check_report(reports, count, faulty):
    """None when validate.yml's report has every host, the faulty ones failed on their port, the others validated."""
    with open(os.path.join(reports, 'validate.json')) as handle:
        doc = json.load(handle)
    statuses = dict((h['host'], h['status']) for r in doc['racks'] for h in r['hosts'])
    expected = dict((host_name(i), 'validated') for i in range(count))
    expected.update((h, 'failed') for h in faulty)
    if statuses != expected:
        wrong = sorted(h for h in set(expected) | set(statuses) if statuses.get(h) != expected.get(h))
        return 'report statuses differ on %d hosts, e.g. %s' % (
            len(wrong), ', '.join('%s: %s' % (h, statuses.get(h)) for h in wrong[:3]))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='50,200,1000')
    parser.add_argument('--forks', type=int, default=0, help="forks for both commands (default: ansible.cfg's)")
    parser.add_argument('--keep', help='work directory to keep (inventories, bundles, reports, logs)')
    parser.add_argument('--extra', default='', help='extra ansible-playbook arguments for validate.yml')
    args = parser.parse_args()
    _importable()
    sizes = [int(s) for s in args.sizes.split(',') if s]
    work = args.keep or tempfile.mkdtemp(prefix='gpuops-bench-validate-')
    if not os.path.isdir(work):
        os.makedirs(work)
    env = ansible_env(os.environ.get('BENCH_ANSIBLE_CONFIG', ANSIBLE_CFG))
    forks = ['--forks', str(args.forks)] if args.forks else []
    problems = []
    rows = []
    try:
        profile = write_bundles(work)
        print('validate.yml vs ping: %s hosts, profile %s, %d%% with %s, ansible.cfg %s, forks %s'
              % ('/'.join(str(s) for s in sizes), PROFILE, 100 // EVERY, FAULT[0], env.get('ANSIBLE_CONFIG'),
                 args.forks or "ansible.cfg's"))
        for count in sizes:
            inventory, faulty = write_inventory(work, count, profile)
            reports = os.path.join(work, 'reports-%d' % count)
            ping_s, ping_cpu, ping_rc, ping_out = timed_run(
                [bin_path('ansible'), 'all', '-i', inventory, '-m', 'ansible.builtin.ping'] + forks, env,
                log=os.path.join(work, 'ping-%d.log' % count))
            if ping_rc != 0:
                problems.append('ping on %d hosts exited %d: %s' % (count, ping_rc, ping_out[-2000:]))
            val_s, val_cpu, val_rc, val_out = timed_run(
                [bin_path('ansible-playbook'), '-i', inventory, os.path.join(ROOT, 'playbooks', 'validate.yml'),
                 '-e', 'gpuops_report_dir=%s' % reports] + forks + args.extra.split(), env,
                log=os.path.join(work, 'validate-%d.log' % count))
            expected_rc = 2 if faulty else 0
            if val_rc != expected_rc:
                problems.append('validate.yml on %d hosts exited %d, expected %d: %s'
                                % (count, val_rc, expected_rc, val_out[-2000:]))
            else:
                wrong = check_report(reports, count, faulty)
                if wrong:
                    problems.append('validate.yml on %d hosts: %s' % (count, wrong))
            rows.append((count, ping_s, val_s))
            print('%5d hosts: ping %6.1f s (%5.1f ms/host), validate.yml %6.1f s (%5.1f ms/host): ratio %.2f; '
                  'CPU seconds %.1f and %.1f: ratio %.2f'
                  % (count, ping_s, ping_s * 1000 / count, val_s, val_s * 1000 / count, val_s / ping_s,
                     ping_cpu, val_cpu, val_cpu / ping_cpu))
            sys.stdout.flush()
        for (small, _p1, v1), (large, _p2, v2) in zip(rows, rows[1:]):
            print('%5d -> %5d hosts: validate.yml time per host ratio %.2f (1 is flat)'
                  % (small, large, (v2 / large) / (v1 / small)))
        print('goal: ratio at most 2 at every size: %s' % (
            'met' if all(v / p <= 2 for _c, p, v in rows) else 'NOT met'))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print('bench_validate: %s' % problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
