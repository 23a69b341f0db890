# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Create and destroy a scenario's podman containers: what molecule-plugins' podman driver does for the platform
keys the scenarios use, with one podman command per container and no asynchronous wait (the driver's playbooks poll
every 5 seconds).

    python3 containers.py create|destroy < platforms.json      (molecule_yml.platforms, as JSON)
    python3 containers.py prune EPHEMERAL_DIRECTORY

create: the scenario's network when a platform names one and it does not exist; then, per platform, a container
started as the driver starts it (`podman run -d --name NAME --hostname NAME --label owner=molecule` with
`--privileged`, `--systemd`, `--ulimit`, `--volume`, `--network`, `extra_opts`, the image and its command). A
platform key it does not know is refused before anything is created. destroy: every platform's container that exists removed at
once (no stop timeout: the containers are thrown away), then the scenario's networks.
prune: what Molecule's own pruning does at the end of a test, done before a create: everything in the scenario's
ephemeral directory but Molecule's files (ansible.cfg, inventory, molecule.yml, state.yml, a Dockerfile) removed, so
that the reports and runs an interrupted test left there are never read as this test's.
Prints one JSON object: {"changed": bool, "commands": [...]}; exits 1 with the failing command's output.
"""

from __future__ import print_function

import json
import os
import shutil
import subprocess
import sys

PODMAN = 'podman'
KNOWN = {'name', 'groups', 'image', 'pre_build_image', 'privileged', 'systemd', 'command', 'ulimits', 'volumes',
         'extra_opts', 'network', 'children'}
BUILT_IN_NETWORKS = {'bridge', 'none', 'host', 'ns', 'private', 'slirp4netns'}
MOLECULE_FILES = {'ansible.cfg', 'inventory', 'molecule.yml', 'state.yml', 'Dockerfile'}


class Failed(Exception):
    pass


def run(argv, done, check=True):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    if check and proc.returncode != 0:
        raise Failed('%s exited %d: %s' % (' '.join(argv), proc.returncode, proc.stdout.strip()[-2000:]))
    done.append(argv)
    return proc


def exists(kind, name):
    """Whether podman has the container or network ``name`` (``kind``: container, network)."""
    return run([PODMAN, kind, 'exists', name], [], check=False).returncode == 0


def run_argv(platform):
    """The podman run command of one platform."""
    if not platform.get('pre_build_image', False):
        raise Failed('platform %s: only pre-built images (pre_build_image: true)' % platform['name'])
    argv = [PODMAN, 'run', '-d', '--name', platform['name'], '--hostname', platform['name'],
            '--label', 'owner=molecule']
    if platform.get('privileged'):
        argv.append('--privileged')
    if 'systemd' in platform:
        systemd = platform['systemd']
        argv.append('--systemd=%s' % (str(systemd).lower() if isinstance(systemd, bool) else systemd))
    for limit in platform.get('ulimits') or []:
        argv += ['--ulimit', limit]
    for volume in platform.get('volumes') or []:
        argv += ['--volume', volume]
    if platform.get('network'):
        argv += ['--network', platform['network']]
    argv += list(platform.get('extra_opts') or [])
    argv.append(platform['image'])
    command = platform.get('command')
    if command:
        argv += command.split() if isinstance(command, str) else list(command)
    return argv


def networks(platforms):
    return sorted(set(p['network'] for p in platforms if p.get('network') and p['network'] not in BUILT_IN_NETWORKS))


def create(platforms):
    done = []
    for platform in platforms:
        unknown = sorted(set(platform) - KNOWN)
        if unknown:
            raise Failed('platform %s: keys %s are not applied by molecule/shared/files/containers.py'
                         % (platform.get('name'), ', '.join(unknown)))
    commands = [run_argv(p) for p in platforms]
    for network in networks(platforms):
        if not exists('network', network):
            run([PODMAN, 'network', 'create', network], done)
    for argv in commands:
        run(argv, done)
    return done


def destroy(platforms):
    done = []
    names = [p['name'] for p in platforms if exists('container', p['name'])]
    if names:
        run([PODMAN, 'rm', '--force', '--ignore', '--time', '0'] + names, done)
    for network in networks(platforms):
        if exists('network', network):
            run([PODMAN, 'network', 'rm', '--force', network], done)
    return done


def prune(directory):
    """Remove what an earlier test left in the ephemeral directory; returns what was removed."""
    removed = []
    for name in sorted(os.listdir(directory)):
        if name in MOLECULE_FILES:
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
        removed.append(['rm', '-r', path])
    return removed


def main(argv):
    if len(argv) == 3 and argv[1] == 'prune':
        done = prune(argv[2])
        print(json.dumps({'changed': bool(done), 'commands': [' '.join(c) for c in done]}))
        return 0
    if len(argv) != 2 or argv[1] not in ('create', 'destroy'):
        print('usage: containers.py create|destroy < platforms.json, or containers.py prune DIRECTORY',
              file=sys.stderr)
        return 2
    platforms = json.load(sys.stdin)
    try:
        done = (create if argv[1] == 'create' else destroy)(platforms)
    except Failed as exc:
        print(json.dumps({'changed': True, 'failed': True, 'msg': str(exc)}))
        return 1
    print(json.dumps({'changed': bool(done), 'commands': [' '.join(c) for c in done]}))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
