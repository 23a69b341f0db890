# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the simulator tests: the repository root on sys.path, the
collection importable as ansible_collections.gpuops.node, simulated nodes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
REAL = os.path.join(REPO, 'tests', 'fixtures', 'real')
PROFILES = os.path.join(REPO, 'simulator', 'profiles')
NVIDIA_SMI = os.path.join(REPO, 'simulator', 'nvidia_smi')  # the package directory, run as a program

if REPO not in sys.path:
    sys.path.insert(0, REPO)

# The collection's parsers import themselves as ansible_collections.gpuops.node...
_COLLECTIONS = os.path.join(REPO, '.build', 'collections')
_LINK = os.path.join(_COLLECTIONS, 'ansible_collections', 'gpuops', 'node')
if not os.path.lexists(_LINK):
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    os.symlink(REPO, _LINK)
if _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)

from simulator import admin  # noqa: E402
from simulator import bundle  # noqa: E402
from simulator import nvidia_smi  # noqa: E402

PROFILE_NAMES = ('h100-sxm-8gpu-ib', 'a100-sxm-8gpu-ib', 'pcie-4gpu-roce')


def real_text(rel):
    with open(os.path.join(REAL, rel), 'rb') as handle:
        return handle.read().decode('utf-8')


def profile_path(name):
    return os.path.join(PROFILES, name)


def profile_tree(name):
    """The bundle tree of a simulator profile (path -> bytes), to put faults or transforms through."""
    return bundle.read_profile(profile_path(name))


def gather_tree(tree, tmp_path, label):
    """The collection's ``gpu_topology`` of a bundle tree, written under ``tmp_path/label``."""
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    target = str(tmp_path / label)
    bundle.write_tree(tree, target)
    return gather_bundle(target)


class Node(object):
    """A simulated node: a profile (possibly with faults) and its own state file."""

    def __init__(self, tmp_path, name, with_faults=()):
        self.dir = str(tmp_path / ('profile-' + name))
        tree = bundle.read_profile(profile_path(name))
        if with_faults:
            from simulator import faults
            for fault, params in with_faults:
                faults.FAULTS[fault].apply(tree, **params)
        bundle.write_tree(tree, self.dir)
        self.state = str(tmp_path / 'state' / name / 'state.json')
        self.env = {'GPUOPS_SIM_PROFILE': self.dir, 'GPUOPS_SIM_STATE': self.state,
                    'GPUOPS_SIM_ALLOW_NONROOT': '1'}

    def run(self, *argv):
        """In-process invocation (fast)."""
        return nvidia_smi.run(list(argv), dict(self.env))

    def admin(self, *argv):
        return admin.run(list(argv), dict(self.env))

    def proc(self, *argv):
        """A separate process, as on a node (state must survive between processes)."""
        env = dict(os.environ)
        env.update(self.env)
        done = subprocess.run([sys.executable, NVIDIA_SMI] + list(argv), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
        return nvidia_smi.Result(done.returncode, done.stdout.decode('utf-8'), done.stderr.decode('utf-8'))

    def file(self, rel):
        with open(os.path.join(self.dir, rel), 'rb') as handle:
            return handle.read().decode('utf-8')
