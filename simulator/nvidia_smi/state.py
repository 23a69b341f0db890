# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The installed profile (a capture bundle plus ``sim/``), the persisted device state, and the effective XML
(the profile's XML with the state's modes, MIG devices and processes).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import hashlib
import json
import os
import re
import tempfile

from .common import MIG_FILE, RC_OTHER, RUNTIME_FILE, SIM_VERSION, XML_FILE, Exit, read_text, sim_driver
from .mig import mig_devices_element
from .xmldoc import XmlDoc, block_unit, element_indent, get_value, has_element, replace_element, set_value


# ---------------------------------------------------------------------------
# Profile
# ---------------------------------------------------------------------------

class Profile(object):
    """The installed hardware profile (a capture bundle plus sim/ data)."""

    def __init__(self, path):
        self.path = path
        if not os.path.isdir(path):
            raise Exit(RC_OTHER, '', 'gpuops-sim: no simulator profile installed at %s\n' % path)
        self.runtime = {}
        runtime_path = os.path.join(path, RUNTIME_FILE)
        if os.path.isfile(runtime_path):
            self.runtime = json.loads(read_text(runtime_path))
        self.mig_tables = {}
        mig_path = os.path.join(path, MIG_FILE)
        if os.path.isfile(mig_path):
            self.mig_tables = json.loads(read_text(mig_path))
        self._xml = None

    def file(self, name):
        """(rc, text) of a bundle file, or None when absent."""
        path = os.path.join(self.path, name)
        if not os.path.isfile(path):
            return None
        rc = 0
        if os.path.isfile(path + '.rc'):
            value = read_text(path + '.rc').strip()
            rc = int(value) if value.lstrip('-').isdigit() else 1
        return rc, read_text(path)

    def failure(self):
        """Whole-tool failure every invocation reports (driver not loaded ...)."""
        return self.runtime.get('failure')

    @property
    def xml(self):
        if self._xml is None:
            found = self.file(XML_FILE)
            if found is None:
                raise Exit(RC_OTHER, '', 'gpuops-sim: profile has no %s\n' % XML_FILE)
            rc, text = found
            if rc:
                raise Exit(rc, text)
            self._xml = XmlDoc(text)
        return self._xml

    def digest(self):
        found = self.file(XML_FILE)
        text = found[1] if found else ''
        return hashlib.sha256((text + json.dumps(self.runtime, sort_keys=True)).encode('utf-8')).hexdigest()

    def gpus(self):
        """Static per-GPU facts from the profile XML, in enumeration order."""
        result = []
        for index, block in enumerate(self.xml.blocks):
            result.append(GpuInfo(index, block))
        return result

    def mig_table(self, product_name):
        return self.mig_tables.get(product_name)


class GpuInfo(object):
    def __init__(self, index, block):
        self.index = index
        self.block = block
        self.bus_id = re.match(r'[ \t]*<gpu id="([^"]*)">', block).group(1)
        self.name = get_value(block, 'product_name')
        self.uuid = get_value(block, 'uuid')

    def value(self, path):
        return get_value(self.block, path)


# ---------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------

class State(object):
    """Mutable device state, persisted as JSON."""

    def __init__(self, path, profile):
        self.path = path
        self.profile = profile
        self.data = None
        self._lock = None

    def _initial(self):
        gpus = {}
        for gpu in self.profile.gpus():
            gpus[gpu.bus_id] = {
                'persistence_mode': gpu.value('persistence_mode'),
                'compute_mode': gpu.value('compute_mode'),
                'mig_current': gpu.value('mig_mode/current_mig'),
                'mig_pending': gpu.value('mig_mode/pending_mig'),
                'busy': False,
                'gpu_instances': [],
            }
        return {'version': SIM_VERSION, 'profile_digest': self.profile.digest(), 'gpus': gpus}

    def load(self, lock=False):
        if lock:
            directory = os.path.dirname(self.path) or '.'
            if not os.path.isdir(directory):
                os.makedirs(directory)
            self._lock = open(self.path + '.lock', 'a')
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX)
        data = None
        if os.path.isfile(self.path):
            try:
                data = json.loads(read_text(self.path))
            except ValueError:
                data = None
        if (not isinstance(data, dict) or data.get('version') != SIM_VERSION
                or data.get('profile_digest') != self.profile.digest()):
            data = self._initial()
        # GPUs of the profile missing from the state (should not happen) get defaults
        initial = None
        for gpu in self.profile.gpus():
            if gpu.bus_id not in data['gpus']:
                initial = initial or self._initial()
                data['gpus'][gpu.bus_id] = initial['gpus'][gpu.bus_id]
        self.data = data
        return self

    def save(self):
        directory = os.path.dirname(self.path) or '.'
        if not os.path.isdir(directory):
            os.makedirs(directory)
        fd, tmp = tempfile.mkstemp(prefix='.state.', dir=directory)
        with os.fdopen(fd, 'w') as handle:
            json.dump(self.data, handle, indent=2, sort_keys=True)
            handle.write('\n')
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)

    def release(self):
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def gpu(self, bus_id):
        return self.data['gpus'][bus_id]


# ---------------------------------------------------------------------------
# Effective XML (profile XML + state)
# ---------------------------------------------------------------------------

def mib(value):
    match = re.match(r'^\s*(\d+)\s*MiB', value or '')
    return int(match.group(1)) if match else None


def apply_state(block, gpu_state, table):
    """One <gpu> block with the state's modes and MIG devices."""
    for path, key in (('persistence_mode', 'persistence_mode'), ('compute_mode', 'compute_mode'),
                      ('mig_mode/current_mig', 'mig_current'), ('mig_mode/pending_mig', 'mig_pending')):
        if gpu_state.get(key) is not None and has_element(block, path):
            block = set_value(block, path, gpu_state[key])
    if has_element(block, 'mig_devices'):
        indent = element_indent(block, 'mig_devices')
        unit = block_unit(block)
        gis = gpu_state.get('gpu_instances') or [] if gpu_state.get('mig_current') == 'Enabled' else []
        bar1 = mib(get_value(block, 'bar1_memory_usage/total'))
        block = replace_element(block, 'mig_devices', mig_devices_element(indent, unit, table, gis, bar1))
    if gpu_state.get('processes') and sim_driver is not None and has_element(block, 'processes'):
        block = replace_element(block, 'processes', sim_driver.processes_element(
            element_indent(block, 'processes'), block_unit(block), gpu_state['processes']))
    return block


def effective_blocks(profile, state):
    blocks = []
    for gpu in profile.gpus():
        blocks.append(apply_state(gpu.block, state.gpu(gpu.bus_id), profile.mig_table(gpu.name)))
    return blocks
