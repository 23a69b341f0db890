# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``make demo``: a virtual GPU rack of simulated nodes, rolled out with site.yml.

    python3 simulator/demo.py host        # podman runtime setting (runc), as root
    .venv/bin/python simulator/demo.py up [--layout FILE] [--racks SPEC] [--fault SPEC] [--suite bookworm]
    python3 simulator/demo.py clean       # remove the demo containers and .build/demo

``up``:

1. builds the base image ``localhost/gpuops-base:SUITE`` (tests/images/build-image.sh) when it is absent;
2. starts one podman systemd container per node of the layout (simulator/demo-layout.yml), or reuses it
   when it is already running from the current image; containers of nodes no longer in the layout are removed;
3. installs the simulator into every node as a bare node (install_node.py --bare: no NVIDIA user space, the
   driver emulated; the node's profile, the injected fault), and copies in the local signed repository of
   NVIDIA's driver, DCGM and NCCL packages (tests/repo/build_cuda_repo.py --driver-versions) that the roles
   install from, with the nccl-tests source tree the nccl role builds;
4. writes an inventory under .build/demo/inventory (demo_inventory.py: the `podman` connection, which
   simulator/connection_plugins/podman.py makes containers.podman's with pipelining,
   rack_* groups, node-class groups with gpuops_node_class and gpuops_node_class_profile from the profile's
   profile.yml, gpuops_roles with the nvidia_driver, rdma, dcgm and nccl roles and reboots allowed);
5. runs ``ansible-playbook site.yml -i .build/demo/inventory``;
6. checks the rack report (.build/demo/reports/rack-report.json): every node provisioned or validated, its
   acceptance gates (the DCGM diagnostic, the NCCL bus bandwidth) passed, except the faulty node, which must be
   held back by failures of the checks its fault breaks, and nothing else (a fault only a gate sees,
   dcgm_diag_fail or nccl_slow, must fail its node by that gate); prints the Markdown report and the path of the
   HTML page (rack-report.html: each node's topology drawn, failures marked). Exit status 0 only when the report
   says exactly that.

Stdlib only (PyYAML is used for the layout file when importable); Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import collections
import errno
import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

try:
    from . import bundle
    from . import faults
    from .demo_inventory import NODE_REPO_DIR, build_repo, repo_tar, write_inventory
    from .demo_report import GATE_FAULTS, check_report
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bundle  # noqa: E402
    import faults  # noqa: E402
    from demo_inventory import NODE_REPO_DIR, build_repo, repo_tar, write_inventory  # noqa: E402
    from demo_report import GATE_FAULTS, check_report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PROFILES = os.path.join(HERE, 'profiles')
DEFAULT_LAYOUT = os.path.join(HERE, 'demo-layout.yml')
DEFAULT_DIR = os.path.join(REPO, '.build', 'demo')
CONTAINER_PREFIX = 'gpuops-demo-'
LABEL = 'gpuops.demo'
LOCK = '/tmp/gpuops-node-demo.lock'
NODE_SIM_DIR = '/opt/gpuops-sim'
# --restart=always: a node rebooted by the rollout (systemctl reboot ends its systemd) is started again
PODMAN_RUN_OPTIONS = ['--privileged', '--systemd=always', '--restart=always', '--ulimit', 'nproc=1000:1000',
                      '--ulimit', 'nofile=1024:4096']
BOOT_TIMEOUT = 120


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


def log(message):
    print('[demo] %s' % message)
    sys.stdout.flush()


def run(cmd, check=True, data=None, stream=False, cwd=None, env=None):
    """Run a command; returns (rc, stdout text). ``stream`` lets its output through to ours."""
    if stream:
        sys.stdout.flush()
        proc = subprocess.run(cmd, cwd=cwd, env=env, check=False)
        out = ''
    else:
        proc = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                              check=False)
        out = proc.stdout.decode('utf-8', 'replace') if proc.stdout is not None else ''
    if check and proc.returncode != 0:
        raise DemoError('%s failed (exit %d)%s' % (' '.join(cmd), proc.returncode, (':\n' + out.rstrip()) if out else ''))
    return proc.returncode, out


# ---------------------------------------------------------------- layout

def profile_names():
    return sorted(n for n in os.listdir(PROFILES) if os.path.isfile(os.path.join(PROFILES, n, 'profile.yml')))


def resolve_profile(name):
    names = profile_names()
    if name in names:
        return name
    matches = [n for n in names if n.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    raise DemoError('profile %r: %s (profiles: %s)'
                    % (name, 'ambiguous' if matches else 'unknown', ', '.join(names)))


def load_layout(path):
    with open(path) as handle:
        text = handle.read()
    try:
        import yaml
    except ImportError:
        layout = bundle.load_yaml(text)
    else:
        layout = yaml.safe_load(text)
    if not isinstance(layout, dict) or not isinstance(layout.get('racks'), dict) or not layout['racks']:
        raise DemoError('%s: needs a mapping `racks:` of rack group -> list of {profile, count}' % path)
    return layout


def racks_from_layout(layout, path):
    racks = collections.OrderedDict()
    for rack, entries in layout['racks'].items():
        if not isinstance(entries, list) or not entries:
            raise DemoError('%s: rack %s needs a list of {profile, count}' % (path, rack))
        racks[rack] = []
        for entry in entries:
            if isinstance(entry, str):
                entry = {'profile': entry}
            if not isinstance(entry, dict) or 'profile' not in entry:
                raise DemoError('%s: rack %s: each entry needs `profile:`, got %r' % (path, rack, entry))
            racks[rack].append((entry['profile'], int(entry.get('count', 1))))
    return racks


def parse_racks(spec):
    """``rack_a=h100-sxm-8gpu-ib*2 rack_b=a100,pcie`` (racks separated by spaces or ';')."""
    racks = collections.OrderedDict()
    for part in re.split(r'[;\s]+', spec.strip()):
        if not part:
            continue
        rack, sep, nodes = part.partition('=')
        if not sep or not nodes:
            raise DemoError('DEMO_RACKS: expected RACK=PROFILE[*COUNT][,PROFILE...], got %r' % part)
        racks[rack] = []
        for node in nodes.split(','):
            match = re.match(r'^([A-Za-z0-9_.-]+?)(?:[*x](\d+))?$', node)
            if not match:
                raise DemoError('DEMO_RACKS: bad node entry %r in %r' % (node, part))
            racks[rack].append((match.group(1), int(match.group(2) or 1)))
    if not racks:
        raise DemoError('DEMO_RACKS is empty')
    return racks


def build_nodes(racks):
    nodes = []
    for rack, entries in racks.items():
        if not re.match(r'^rack_[A-Za-z0-9_]+$', rack):
            raise DemoError('rack %r: rack groups are named rack_<name> (letters, digits, _)' % rack)
        serial = collections.Counter()
        for profile, count in entries:
            profile = resolve_profile(profile)
            meta = bundle.load_yaml(open(os.path.join(PROFILES, profile, 'profile.yml')).read())
            short = profile.split('-')[0]
            for dummy in range(count):
                serial[short] += 1
                name = '%s-%s-%d' % (rack, short, serial[short])
                nodes.append({
                    'name': name,
                    'rack': rack,
                    'profile': profile,
                    'container': CONTAINER_PREFIX + name,
                    'hostname': name.replace('_', '-'),
                    'node_class': meta['node_class'],
                    'expected': meta['expected_node_class'],
                    'faults': [],
                })
    if not nodes:
        raise DemoError('the layout has no nodes')
    return nodes


def fault_from_layout(layout):
    fault = layout.get('fault')
    if fault in (None, 'none', False):
        return None
    if not isinstance(fault, dict) or not fault.get('name'):
        raise DemoError('layout: `fault:` needs name (and node, params), or `none`')
    params = fault.get('params') or {}
    spec = fault['name'] + (':' + ','.join('%s=%s' % item for item in sorted(params.items())) if params else '')
    return {'spec': spec, 'node': fault.get('node')}


def parse_fault(spec):
    """``none`` or ``NAME[:KEY=VALUE,...][@NODE]``."""
    spec = spec.strip()
    if spec in ('none', ''):
        return None
    fault, sep, node = spec.rpartition('@')
    if not sep:
        fault, node = spec, None
    return {'spec': fault, 'node': node or None}


def place_fault(nodes, fault):
    """Attach the fault to its node (default: the last node); check it applies to the node's profile."""
    if fault is None:
        return None
    by_name = dict((n['name'], n) for n in nodes)
    node_name = fault['node'] if fault['node'] in by_name else None
    if fault['node'] and node_name is None:
        log('fault node %s is not in this layout: injecting %s into the last node instead'
            % (fault['node'], fault['spec']))
    node = by_name[node_name] if node_name else nodes[-1]
    try:
        name, params = faults.parse_spec(fault['spec'])
        faults.FAULTS[name].apply(bundle.read_profile(os.path.join(PROFILES, node['profile'])), **params)
    except (faults.FaultError, argparse.ArgumentTypeError) as exc:
        raise DemoError('fault %s on %s (%s): %s' % (fault['spec'], node['name'], node['profile'], exc))
    node['faults'] = [fault['spec']]
    return {'node': node['name'], 'spec': fault['spec'], 'name': name, 'params': params}


# ---------------------------------------------------------------- podman

def podman(*args, **kwargs):
    return run(['podman'] + list(args), **kwargs)


def image_id(image):
    rc, out = podman('image', 'inspect', '--format', '{{.Id}}', image, check=False)
    return out.strip() if rc == 0 else None


def ensure_image(suite):
    image = 'localhost/gpuops-base:%s' % suite
    rebuild = os.environ.get('GPUOPS_IMAGE_REBUILD') == '1'
    if image_id(image) and not rebuild:
        log('base image %s present (reused)' % image)
        return image
    log('building image %s (debootstrap from the Debian mirror; a few minutes)...' % image)
    start = time.time()
    run(['bash', os.path.join(REPO, 'tests', 'images', 'build-image.sh'), suite], stream=True)
    log('image %s built in %ds' % (image, time.time() - start))
    return image


def demo_containers():
    """{name: {running, image}} of every demo container on this host."""
    rc, out = podman('ps', '-a', '--filter', 'label=%s=1' % LABEL, '--format', '{{.Names}}', check=False)
    names = [n for n in out.split() if n] if rc == 0 else []
    found = {}
    for name in names:
        rc, info = podman('container', 'inspect', '--format', '{{.State.Running}} {{.Image}}', name, check=False)
        if rc == 0 and info.strip():
            running, image = (info.split() + [''])[:2]
            found[name] = {'running': running == 'true', 'image': image}
    return found


def remove_containers(names):
    if names:
        podman('rm', '--force', '--time', '5', *names, check=False)


def start_nodes(nodes, image):
    wanted_image = image_id(image)
    existing = demo_containers()
    stale = sorted(set(existing) - set(n['container'] for n in nodes))
    for name in stale:
        log('removing container %s (not in this layout)' % name)
    remove_containers(stale)
    for node in nodes:
        current = existing.get(node['container'])
        if current and current['running'] and current['image'] == wanted_image:
            log('reusing node %s (container %s, running)' % (node['name'], node['container']))
            node['reused'] = True
            continue
        if current:
            log('recreating node %s (container %s %s)' % (
                node['name'], node['container'], 'from an older image' if current['running'] else 'not running'))
            remove_containers([node['container']])
        else:
            rc, dummy = podman('container', 'exists', node['container'], check=False)
            if rc == 0:  # a container of that name without our label: not ours to remove
                raise DemoError('a container named %s exists and is not a demo container; remove it first'
                                % node['container'])
            log('starting node %s (%s, %s) ...' % (node['name'], node['profile'], node['rack']))
        podman('run', '--detach', '--name', node['container'], '--hostname', node['hostname'],
               '--label', '%s=1' % LABEL, '--label', '%s.node=%s' % (LABEL, node['name']),
               '--label', '%s.profile=%s' % (LABEL, node['profile']), *(PODMAN_RUN_OPTIONS + [image, '/sbin/init']))
        node['reused'] = False


def wait_booted(node):
    deadline = time.time() + BOOT_TIMEOUT
    state = ''
    while time.time() < deadline:
        rc, out = podman('exec', node['container'], 'systemctl', 'is-system-running', '--wait', check=False)
        state = out.strip().splitlines()[-1] if out.strip() else ''
        if state in ('running', 'degraded'):
            break
        time.sleep(1)
    else:
        raise DemoError('node %s: systemd did not finish booting in %ds (state %r)' % (node['name'], BOOT_TIMEOUT, state))
    if state == 'degraded':
        rc, failed = podman('exec', node['container'], 'systemctl', '--failed', '--no-legend', '--plain', check=False)
        log('node %s: systemd is degraded (failed units: %s); going on'
            % (node['name'], ', '.join(line.split()[0] for line in failed.splitlines() if line.strip()) or '?'))


def simulator_tar():
    """simulator/ (sources and committed profiles, no caches) as an uncompressed tar stream."""
    buf = io.BytesIO()

    def keep(info):
        base = os.path.basename(info.name)
        if base == '__pycache__' or base.endswith('.pyc'):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = 'root'
        return info

    with tarfile.open(fileobj=buf, mode='w') as tar:
        for name in sorted(os.listdir(HERE)):
            tar.add(os.path.join(HERE, name), arcname=name, filter=keep)
    return buf.getvalue()


def install_simulator(node, payload, repo_payload):
    """The simulator as a bare node (no NVIDIA user space: the rollout installs the driver), and the local
    repository of NVIDIA's driver packages it installs from."""
    for directory, data in ((NODE_SIM_DIR, payload), (NODE_REPO_DIR, repo_payload)):
        podman('exec', node['container'], 'sh', '-c', 'rm -rf %s && mkdir -p %s' % (directory, directory))
        podman('exec', '-i', node['container'], 'tar', '-x', '-C', directory, '-f', '-', data=data)
    cmd = ['exec', node['container'], 'python3', NODE_SIM_DIR + '/install_node.py', '--profile', node['profile'],
           '--bare']
    for spec in node['faults']:
        cmd += ['--fault', spec]
    dummy, out = podman(*cmd)
    summary = json.loads(out.strip().splitlines()[-1])
    log('node %s: bare node simulator %s (profile %s, node class %s%s)' % (
        node['name'], 'installed' if summary['changed'] else 'already installed, unchanged', summary['profile_name'],
        summary['node_class'], ', fault %s' % ', '.join(node['faults']) if node['faults'] else ', healthy'))


# ---------------------------------------------------------------- inventory

# ---------------------------------------------------------------- playbook and report

def ansible_env():
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env['PATH'] = bindir + os.pathsep + env.get('PATH', '')
    if not env.get('ANSIBLE_COLLECTIONS_PATH'):
        site = [p for p in sys.path if p.endswith('site-packages') and os.path.isdir(p)]
        env['ANSIBLE_COLLECTIONS_PATH'] = os.pathsep.join([os.path.join(REPO, '.build', 'collections')] + site[:1])
    env.setdefault('ANSIBLE_DISPLAY_SKIPPED_HOSTS', 'false')
    env.setdefault('ANSIBLE_NOCOLOR', '1')
    env.setdefault('ANSIBLE_HOST_KEY_CHECKING', 'false')
    env.setdefault('ANSIBLE_RETRY_FILES_ENABLED', 'false')
    env.setdefault('ANSIBLE_CONNECTION_PLUGINS', os.path.join(REPO, 'simulator', 'connection_plugins'))
    return env


def cmd_up(args):
    start = time.time()
    layout_path = os.path.abspath(args.layout)
    layout = load_layout(layout_path)
    racks = parse_racks(args.racks) if args.racks else racks_from_layout(layout, layout_path)
    nodes = build_nodes(racks)
    fault = fault_from_layout(layout)
    if args.fault:
        override = parse_fault(args.fault)
        if override and not override['node'] and fault:
            override['node'] = fault['node']  # the layout's faulty node gets the other fault
        fault = override
    fault = place_fault(nodes, fault)
    log('layout: %s%s' % ('DEMO_RACKS=%s' % args.racks if args.racks else os.path.relpath(layout_path, REPO),
                          '' if not args.fault else ', DEMO_FAULT=%s' % args.fault))
    for rack in racks:
        members = ['%s (%s%s)' % (n['name'], n['profile'], (', fault ' + n['faults'][0]) if n['faults'] else '')
                   for n in nodes if n['rack'] == rack]
        log('  %s: %s' % (rack, ', '.join(members)))
    if fault is None:
        log('  no injected fault: every node must be provisioned')

    image = ensure_image(args.suite)
    directory = os.path.abspath(args.dir)
    log('local signed repository of NVIDIA driver packages: %s'
        % os.path.relpath(build_repo(directory), REPO))
    start_nodes(nodes, image)
    payload = simulator_tar()
    repo_payload = repo_tar(os.path.join(directory, 'nvidia-repo'))
    for node in nodes:
        if not node['reused']:
            log('waiting for node %s to boot ...' % node['name'])
        wait_booted(node)
        install_simulator(node, payload, repo_payload)

    report_dir = os.path.join(directory, 'reports')
    inventory = write_inventory(nodes, directory, report_dir)
    if os.path.isdir(report_dir):
        shutil.rmtree(report_dir)
    log('inventory written to %s' % os.path.relpath(inventory, REPO))
    cmd = ['ansible-playbook', 'site.yml', '-i', os.path.relpath(inventory, REPO)] + args.ansible_args
    log('running: %s' % ' '.join(cmd))
    playbook_start = time.time()
    rc, dummy = run(cmd, check=False, stream=True, cwd=REPO, env=ansible_env())
    log('ansible-playbook finished in %ds (exit %d)' % (time.time() - playbook_start, rc))

    json_path = os.path.join(report_dir, 'rack-report.json')
    md_path = os.path.join(report_dir, 'rack-report.md')
    html_path = os.path.join(report_dir, 'rack-report.html')
    if not os.path.isfile(json_path):
        raise DemoError('no rack report was written (%s); see the ansible-playbook output above' % json_path)
    with open(json_path) as handle:
        report = json.load(handle)
    problems = check_report(report, nodes, fault)
    if rc != 0:
        problems.insert(0, 'ansible-playbook exited %d' % rc)
    if not os.path.isfile(html_path):
        problems.append('no HTML page was written (%s)' % html_path)

    log('rack report: %s (also .json, .xml)' % os.path.relpath(md_path, REPO))
    print('')
    with open(md_path) as handle:
        print(handle.read().rstrip('\n'))
    print('')
    statuses = collections.Counter(h['status'] for r in report['racks'] for h in r['hosts'])
    counts = ', '.join('%d %s' % (statuses[s], s) for s in sorted(statuses))
    elapsed = time.time() - start
    if problems:
        for problem in problems:
            log('UNEXPECTED: %s' % problem)
        log('FAILED: the rollout did not end as the layout predicts (%s) after %ds' % (counts, elapsed))
        return 1
    gates = ['%s %s' % (g['name'], g['summary']) for r in report['racks'] for h in r['hosts']
             for g in h.get('gates') or [] if g.get('passed')]
    if gates:
        log('gates passed: %d (%s)' % (len(gates), '; '.join(sorted(set(gates))[:4])))
    if fault and fault['name'] in GATE_FAULTS:
        log('OK: %s; %s failed by its %s gate after its changes (fault %s); done in %ds'
            % (counts, fault['node'], GATE_FAULTS[fault['name']], fault['spec'], elapsed))
    elif fault:
        held = [h for r in report['racks'] for h in r['hosts'] if h['host'] == fault['node']][0]
        failures = ['%s %s' % (f['check'], f['subject']) for f in held['pre_check']['failures']]
        named = ', '.join(failures[:3]) + (', and %d more' % (len(failures) - 3) if len(failures) > 3 else '')
        log('OK: %s; %s held back by its injected fault %s (%s); done in %ds'
            % (counts, fault['node'], fault['spec'], named, elapsed))
    else:
        log('OK: %s; done in %ds' % (counts, elapsed))
    log('the rack report as a page, each node\'s topology drawn: %s' % html_path)
    return 0


# ---------------------------------------------------------------- host and clean

def set_runc(path):
    """Make podman use runc: `runtime = "runc"` under [engine] in containers.conf. Returns True if changed."""
    text = open(path).read() if os.path.exists(path) else ''
    out, in_engine, done = [], False, False
    for line in text.splitlines():
        section = re.match(r'\s*\[([^\]]+)\]\s*$', line)
        if section:
            if in_engine and not done:
                out.append('runtime = "runc"')
                done = True
            in_engine = section.group(1).strip() == 'engine'
        elif in_engine and re.match(r'\s*runtime\s*=', line):
            line, done = 'runtime = "runc"', True
        out.append(line)
    if in_engine and not done:
        out.append('runtime = "runc"')
        done = True
    if not done:
        out += ['', '[engine]', 'runtime = "runc"']
    new = '\n'.join(out).lstrip('\n') + '\n'
    if new == text:
        return False
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory)
    with open(path, 'w') as handle:
        handle.write(new)
    return True


def cmd_host(args):
    if set_runc(args.containers_conf):
        log('podman runtime set to runc in %s' % args.containers_conf)
    else:
        log('podman runtime is runc (%s)' % args.containers_conf)
    return 0


def cmd_clean(args):
    names = sorted(demo_containers()) if shutil.which('podman') else []
    if names:
        log('removing containers %s' % ', '.join(names))
        remove_containers(names)
    else:
        log('no demo containers')
    directory = os.path.abspath(args.dir)
    if os.path.isdir(directory):
        log('removing %s' % os.path.relpath(directory, REPO))
        shutil.rmtree(directory)
    return 0


def lock():
    handle = open(LOCK, 'a')
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except IOError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise DemoError('another make demo / demo-clean is running on this host (lock %s)' % LOCK)
        raise
    return handle


def main(argv=None):
    parser = argparse.ArgumentParser(description='gpuops.node demo: a virtual rack of simulated GPU nodes.')
    sub = parser.add_subparsers(dest='cmd')
    up = sub.add_parser('up', help='bring the rack up and roll it out with site.yml')
    up.add_argument('--layout', default=os.environ.get('DEMO_LAYOUT') or DEFAULT_LAYOUT,
                    help='layout file (default simulator/demo-layout.yml, env DEMO_LAYOUT)')
    up.add_argument('--racks', default=os.environ.get('DEMO_RACKS') or None,
                    help='racks instead of the layout\'s, e.g. "rack_a=h100-sxm-8gpu-ib*2 rack_b=a100,pcie" '
                         '(env DEMO_RACKS; profile names or unique prefixes, *N = N nodes)')
    up.add_argument('--fault', default=os.environ.get('DEMO_FAULT') or None,
                    help='fault instead of the layout\'s: none, or NAME[:KEY=VALUE,...][@NODE] '
                         '(env DEMO_FAULT; default node: the layout\'s, else the last node)')
    up.add_argument('--suite', default=os.environ.get('DEMO_SUITE') or 'bookworm',
                    help='base image suite, localhost/gpuops-base:SUITE (default bookworm)')
    up.add_argument('--dir', default=DEFAULT_DIR, help='work directory (default .build/demo)')
    up.add_argument('ansible_args', nargs='*', help='extra ansible-playbook arguments (after --)')
    host = sub.add_parser('host', help='host setting the demo needs: podman runtime runc')
    host.add_argument('--containers-conf', default='/etc/containers/containers.conf')
    clean = sub.add_parser('clean', help='remove the demo containers and the work directory')
    clean.add_argument('--dir', default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    if not args.cmd:
        parser.error('a command is required: up, host or clean')
    try:
        if args.cmd == 'host':
            return cmd_host(args)
        handle = lock()
        try:
            return cmd_up(args) if args.cmd == 'up' else cmd_clean(args)
        finally:
            handle.close()
    except DemoError as exc:
        log('ERROR: %s' % exc)
        return 1


if __name__ == '__main__':
    sys.exit(main())
