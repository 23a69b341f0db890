# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Install the GPU simulator into a node (a container, or a directory tree).

    python3 simulator/install_node.py --profile simulator/profiles/h100-sxm-8gpu-ib \\
        [--fault nvlink_down:gpu=3] [--fault ib_port_down] [--root /] [--keep-state]

Writes, under ``--root``:

* ``/usr/bin/nvidia-smi``: simulator/nvidia_smi.py with a ``#!/usr/bin/python3`` shebang
* ``/usr/local/sbin/gpuops-sim``: the same file (admin tool: reboot, busy/idle, state)
* ``/usr/share/gpuops-sim/profile/``: the profile (capture bundle + profile.yml + sim/),
  with the faults applied and recorded in profile.yml
* ``/usr/share/gpuops-sim/sys``: the profile's sysfs tree; point the modules'
  ``sysfs_root`` option here
* removes ``/var/lib/gpuops-sim/state.json`` (a fresh node) unless ``--keep-state``

Prints one JSON line: ``{"changed": ..., "profile_name": ..., "faults": [...], "profile": <dir>, "sysfs_root": <dir>, ...}``.
Nothing is rewritten (and the state is kept) when the result would be identical,
so an Ansible task can use ``changed_when: (result.stdout | from_json).changed``.

The committed profiles keep their sysfs tree in ``sys.ttar``; the installed profile
is an unpacked capture bundle (``sys/`` included) and the sysfs root has the links
a live kernel has (``class/infiniband/<hca>/device -> ../../../bus/pci/devices/<slot>``).

From Ansible: copy the simulator/ directory to the node (any name) and run this
file with ``ansible.builtin.command``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import json
import os
import shutil
import stat
import sys

try:
    from . import bundle as B
    from . import faults as F
    from . import nvidia_smi as N
except ImportError:  # run as a script, or from a copy of the directory under another name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bundle as B  # noqa: E402
    import faults as F  # noqa: E402
    import nvidia_smi as N  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NVIDIA_SMI = 'usr/bin/nvidia-smi'
ADMIN = 'usr/local/sbin/gpuops-sim'
PROFILE = N.DEFAULT_PROFILE
SYSFS = 'usr/share/gpuops-sim/sys'
STATE = N.DEFAULT_STATE


def script(python):
    with open(os.path.join(HERE, 'nvidia_smi.py'), 'rb') as handle:
        body = handle.read()
    if body.startswith(b'#!'):
        body = body.split(b'\n', 1)[1]
    return ('#!%s\n' % python).encode('utf-8') + body


def _same_tree(tree, path):
    return os.path.isdir(path) and B.read_tree(path) == tree


def _same_file(content, path):
    if not os.path.isfile(path):
        return False
    with open(path, 'rb') as handle:
        return handle.read() == content


def _write_exec(content, path):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    tmp = path + '.gpuops-sim.tmp'
    with open(tmp, 'wb') as handle:
        handle.write(content)
    os.chmod(tmp, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    os.replace(tmp, path)


def install(profile_dir, root='/', faults=(), python='/usr/bin/python3', keep_state=False):
    """Install the simulator; returns the summary dict."""
    tree = B.read_profile(profile_dir)
    applied = []
    for spec in faults:
        name, params = F.parse_spec(spec)
        F.FAULTS[name].apply(tree, **params)
        applied.append({'name': name, 'params': params})
    sys_tree = dict((rel[len('sys/'):], value) for rel, value in tree.items() if rel.startswith('sys/'))
    smi = script(python)
    paths = {
        'nvidia_smi': os.path.join(root, NVIDIA_SMI),
        'admin': os.path.join(root, ADMIN),
        'profile': os.path.join(root, PROFILE),
        'sysfs_root': os.path.join(root, SYSFS),
        'state': os.path.join(root, STATE),
    }
    changed = False
    if not _same_tree(tree, paths['profile']):
        B.write_tree(tree, paths['profile'])
        changed = True
    if not _same_tree(sys_tree, paths['sysfs_root']):
        B.write_tree(sys_tree, paths['sysfs_root'])
        changed = True
    for key in ('nvidia_smi', 'admin'):
        if not _same_file(smi, paths[key]) or not os.access(paths[key], os.X_OK):
            _write_exec(smi, paths[key])
            changed = True
    state_dir = os.path.dirname(paths['state'])
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir)
    if changed and not keep_state and os.path.exists(paths['state']):
        os.remove(paths['state'])
    meta = B.load_yaml(B.text(tree, 'profile.yml'))
    summary = {'changed': changed, 'profile_name': meta.get('name'), 'node_class': meta.get('node_class'),
               'faults': [f['name'] for f in meta.get('faults') or []], 'requested_faults': applied}
    summary.update(paths)
    return summary


def uninstall(root='/'):
    removed = []
    for rel in (NVIDIA_SMI, ADMIN, STATE, STATE + '.lock'):
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            os.remove(path)
            removed.append(path)
    for rel in (PROFILE, SYSFS):
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            shutil.rmtree(path)
            removed.append(path)
    return {'changed': bool(removed), 'removed': removed}


def main(argv=None):
    parser = argparse.ArgumentParser(description='Install the gpuops GPU simulator into a node.')
    parser.add_argument('--profile', help='profile directory (simulator/profiles/<name> or a name)')
    parser.add_argument('--fault', action='append', default=[], metavar='NAME[:KEY=VALUE,...]',
                        help='fault to apply (repeatable); see python3 simulator/faults.py list')
    parser.add_argument('--root', default='/', help='install under this root (default /)')
    parser.add_argument('--python', default='/usr/bin/python3', help='interpreter for the nvidia-smi shebang')
    parser.add_argument('--keep-state', action='store_true', help='keep /var/lib/gpuops-sim/state.json')
    parser.add_argument('--uninstall', action='store_true', help='remove what an install wrote')
    args = parser.parse_args(argv)
    if args.uninstall:
        print(json.dumps(uninstall(args.root), sort_keys=True))
        return 0
    if not args.profile:
        parser.error('--profile is required')
    profile = args.profile
    if not os.path.isdir(profile) and os.path.isdir(os.path.join(HERE, 'profiles', profile)):
        profile = os.path.join(HERE, 'profiles', profile)
    if not os.path.isfile(os.path.join(profile, 'profile.yml')):  # committed or unpacked profile
        parser.error('%s is not a simulator profile (no profile.yml)' % profile)
    try:
        summary = install(profile, args.root, args.fault, args.python, args.keep_state)
    except F.FaultError as exc:
        print('install_node: %s' % exc, file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
