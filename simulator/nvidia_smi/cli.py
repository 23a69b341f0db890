# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``nvidia-smi`` command line: the top-level options, the queries and setters, ``run`` and ``main``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import sys

from .common import (HELP_HINT, INVALID_COMBINATION, NOT_SIMULATED, RC_DRIVER, RC_NO_PERMISSION, RC_NOT_FOUND,
                     RC_OTHER, Exit, Result, bad_argument, not_simulated, parse_options, require_root, select_gpus,
                     sim_driver, sim_paths)
from .mig import mig_devices, mig_uuid
from .mig_commands import MigCommands
from .qtext import render_q_text
from .query_gpu import render_query_gpu
from .state import Profile, State, effective_blocks
from .table import render_table
from .topo import TopoCommands
from .xmldoc import get_value, has_element, set_value

# option -> (canonical key, takes value)
TOP_OPTIONS = {
    '-h': ('help', False), '--help': ('help', False), '--version': ('version', False),
    '-L': ('list', False), '--list-gpus': ('list', False),
    '-q': ('query', False), '--query': ('query', False),
    '-x': ('xml', False), '--xml-format': ('xml', False),
    '-i': ('id', True), '--id': ('id', True),
    '--query-gpu': ('query_gpu', True), '--format': ('format', True),
    '-pm': ('pm', True), '--persistence-mode': ('pm', True),
    '-c': ('compute_mode', True), '--compute-mode': ('compute_mode', True),
    '-mig': ('mig', True), '--multi-instance-gpu': ('mig', True),
}

COMPUTE_MODES = {
    '0': ('Default', 'DEFAULT'), 'DEFAULT': ('Default', 'DEFAULT'),
    '2': ('Prohibited', 'PROHIBITED'), 'PROHIBITED': ('Prohibited', 'PROHIBITED'),
    '3': ('Exclusive_Process', 'EXCLUSIVE_PROCESS'), 'EXCLUSIVE_PROCESS': ('Exclusive_Process', 'EXCLUSIVE_PROCESS'),
}


class Nvsmi(TopoCommands, MigCommands):
    """One nvidia-smi invocation against a profile and its state."""

    def __init__(self, profile_dir, state_file):
        self.profile = Profile(profile_dir)
        self.state_file = state_file

    # -- helpers ----------------------------------------------------------
    def _state(self, lock=False):
        return State(self.state_file, self.profile).load(lock=lock)

    def _meta(self):
        head = self.profile.xml.head
        return {
            'driver_version': get_value(head, 'driver_version') or get_value(head, 'kmd_version'),
            'cuda_version': get_value(head, 'cuda_version'),
            'timestamp': get_value(head, 'timestamp'),
            'count': len(self.profile.xml.blocks),
        }

    def _driver_version(self):
        """The profile XML's driver version; None when the profile has no usable XML."""
        try:
            return self._meta()['driver_version']
        except Exit:
            return None

    # -- entry -----------------------------------------------------------
    def run(self, argv):
        failure = self.profile.failure()
        if failure:
            return Result(int(failure.get('rc', RC_DRIVER)), failure.get('stdout', ''), failure.get('stderr', ''))
        if self.profile.runtime.get('driver') == 'emulated':
            if sim_driver is None:
                return Result(RC_OTHER, '', 'gpuops-sim: driver emulation needs sim_driver.py\n')
            gate = sim_driver.nvsmi_gate(sim_driver.sim_root())
            if isinstance(gate, tuple):
                return Result(*gate)
            for tag in ('driver_version', 'cuda_version'):
                if has_element(self.profile.xml.head, tag):
                    self.profile.xml.head = set_value(self.profile.xml.head, tag, gate[tag] or 'N/A')
        try:
            return self._dispatch(list(argv))
        except Exit as exc:
            return exc.result

    def _dispatch(self, argv):
        if argv and argv[0] == 'topo':
            return self.cmd_topo(argv[1:])
        if argv and argv[0] == 'nvlink':
            return self.cmd_nvlink(argv[1:])
        if argv and argv[0] == 'mig':
            return self.cmd_mig(argv[1:])
        if argv and argv[0] in NOT_SIMULATED:
            raise not_simulated(argv[0])
        opts, _pos = parse_options(argv, TOP_OPTIONS)
        actions = [k for k in ('help', 'version', 'list', 'query', 'query_gpu', 'pm', 'compute_mode', 'mig')
                   if k in opts]
        if len(actions) > 1 or ('xml' in opts and actions != ['query']) or (
                'format' in opts and actions != ['query_gpu']):
            raise bad_argument(INVALID_COMBINATION)
        action = actions[0] if actions else 'table'
        if action == 'help':
            return Result(0, self.help_text())
        if action == 'version':
            meta = self._meta()
            driver = meta['driver_version'] or 'N/A'
            lines = ['NVIDIA-SMI version  : %s' % driver,
                     'NVML version        : %s' % '.'.join(driver.split('.')[:2]),
                     'DRIVER version      : %s' % driver,
                     'CUDA Version        : %s' % (meta['cuda_version'] or 'N/A')]
            return Result(0, '\n'.join(lines) + '\n')
        if action == 'query_gpu' and 'format' not in opts:
            raise bad_argument('"--format=" switch is missing. %s' % HELP_HINT)
        gpus = self.profile.gpus()
        if not gpus:
            raise Exit(RC_NOT_FOUND, 'No devices were found\n')
        selected = select_gpus(gpus, opts.get('id'))
        handler = getattr(self, 'do_' + action)
        return handler(opts, gpus, selected)

    # -- queries ----------------------------------------------------------
    def _effective(self, state):
        return effective_blocks(self.profile, state)

    def do_query(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        text = self.profile.xml.render([blocks[g.index] for g in selected])
        if opts.get('xml'):
            return Result(0, text)
        return Result(0, render_q_text(text))

    def do_list(self, opts, gpus, selected):
        state = self._state()
        lines = []
        for gpu in selected:
            lines.append('GPU %d: %s (UUID: %s)' % (gpu.index, gpu.name, gpu.uuid))
            st = state.gpu(gpu.bus_id)
            table = self.profile.mig_table(gpu.name)
            if st.get('mig_current') == 'Enabled' and table:
                for dev_index, (gi, ci, prof) in enumerate(mig_devices(table, st['gpu_instances'])):
                    lines.append('  MIG %s Device %2d: (UUID: %s)' % (
                        prof['name'].ljust(11), dev_index, mig_uuid(gpu.uuid, gi['id'], ci['id'])))
        return Result(0, '\n'.join(lines) + '\n')

    def do_query_gpu(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        text = render_query_gpu(opts['query_gpu'], opts['format'], selected,
                                [blocks[g.index] for g in selected], self._meta())
        return Result(0, text)

    def do_table(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        return Result(0, render_table(self.profile, state, selected, [blocks[g.index] for g in selected]))

    # -- setters ----------------------------------------------------------
    def do_pm(self, opts, gpus, selected):
        value = opts['pm']
        if value not in ('0', '1', 'ENABLED', 'DISABLED', 'Enabled', 'Disabled'):
            raise bad_argument(INVALID_COMBINATION)
        enable = value in ('1', 'ENABLED', 'Enabled')
        require_root(Exit(RC_NO_PERMISSION, 'Unable to set persistence mode for GPU %s: Insufficient Permissions\n'
                          'Terminating early due to previous errors.\n' % selected[0].bus_id))
        state = self._state(lock=True)
        try:
            out = []
            for gpu in selected:
                st = state.gpu(gpu.bus_id)
                current = st.get('persistence_mode')
                if enable and current == 'Enabled':
                    out.append('Persistence mode is already Enabled for GPU %s.' % gpu.bus_id)
                elif not enable and current == 'Disabled':
                    out.append('Persistence mode is already Disabled for GPU %s.' % gpu.bus_id)
                elif enable:
                    st['persistence_mode'] = 'Enabled'
                    out.append('Enabled Legacy persistence mode for GPU %s.' % gpu.bus_id)
                else:
                    st['persistence_mode'] = 'Disabled'
                    out.append('Disabled persistence mode for GPU %s.' % gpu.bus_id)
            out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(0, '\n'.join(out) + '\n')

    def do_compute_mode(self, opts, gpus, selected):
        mode = COMPUTE_MODES.get(opts['compute_mode'].upper())
        if mode is None:
            raise bad_argument(INVALID_COMBINATION)
        require_root(Exit(RC_NO_PERMISSION, 'Unable to set compute mode for GPU %s: Insufficient Permissions\n'
                          'Terminating early due to previous errors.\n' % selected[0].bus_id))
        state = self._state(lock=True)
        try:
            out = []
            for gpu in selected:
                state.gpu(gpu.bus_id)['compute_mode'] = mode[0]
                out.append('Set compute mode to %s for GPU %s.' % (mode[1], gpu.bus_id))
            out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(0, '\n'.join(out) + '\n')

    def do_mig(self, opts, gpus, selected):
        value = opts['mig']
        if value not in ('0', '1', 'ENABLED', 'DISABLED', 'Enabled', 'Disabled'):
            raise bad_argument(INVALID_COMBINATION)
        enable = value in ('1', 'ENABLED', 'Enabled')
        verb = 'enable' if enable else 'disable'
        require_root(Exit(RC_NO_PERMISSION, 'Unable to %s MIG Mode for GPU %s: Insufficient Permissions\n'
                          'Terminating early due to previous errors.\n'
                          % (verb, selected[0].bus_id)))
        state = self._state(lock=True)
        rc = 0
        try:
            out = []
            for gpu in selected:
                st = state.gpu(gpu.bus_id)
                target = 'Enabled' if enable else 'Disabled'
                if st.get('mig_current') in (None, 'N/A') or not self.profile.mig_table(gpu.name):
                    out.append('Unable to %s MIG Mode for GPU %s: Not Supported' % (verb, gpu.bus_id))
                    out.append('Treating as warning and moving on.')
                    continue
                if not enable and st.get('gpu_instances'):
                    out.append('Unable to disable MIG Mode for GPU %s: In use by another client' % gpu.bus_id)
                    out.append('Terminating early due to previous errors.')
                    rc = RC_OTHER
                    break
                st['mig_pending'] = target
                if st.get('busy') and st.get('mig_current') != target:
                    out.append('Warning: MIG mode is in pending %s state for GPU %s:In use by another client'
                               % (verb, gpu.bus_id))
                    out.append('%s is currently being used by one or more other processes (e.g. CUDA application '
                               'or a monitoring application such as another instance of nvidia-smi). Please first '
                               'kill all processes using the device and retry the command or reboot the system to '
                               'make MIG mode effective.' % gpu.bus_id)
                    continue
                st['mig_current'] = target
                if not enable:
                    st['gpu_instances'] = []
                out.append('%s MIG Mode for GPU %s' % ('Enabled' if enable else 'Disabled', gpu.bus_id))
                if enable and st.get('persistence_mode') == 'Disabled':
                    out.append('')
                    out.append('Warning: persistence mode is disabled on device %s. See the Known Issues section '
                               'of the nvidia-smi(1) man page for more information. Run with [--help | -h] switch '
                               'to get more information on how to enable persistence mode.' % gpu.bus_id)
            if rc == 0:
                out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(rc, '\n'.join(out) + '\n')

    # -- help -------------------------------------------------------------------
    def help_text(self):
        driver = self._meta()['driver_version'] or 'N/A'
        return ('NVIDIA System Management Interface -- v%s (gpuops-sim replay)\n\n'
                'Simulated options: -L, -q [-x], -i, --query-gpu=... --format=csv[,noheader][,nounits],\n'
                '  -pm 0|1, -c MODE, -mig 0|1, --version, topo -m, nvlink -s [-i N],\n'
                '  mig -lgip | -lgi | -lci | -cgi LIST [-C] | -cci [-gi IDS] | -dci [-gi IDS] [-ci IDS] | -dgi [-gi IDS]\n'
                % driver)


def run(argv, environ=None):
    """Run one invocation in-process; returns a Result (used by the tests)."""
    profile_dir, state_file = sim_paths(environ)
    if environ is not None:
        saved = dict(os.environ)
        os.environ.update(environ)
    try:
        try:
            return Nvsmi(profile_dir, state_file).run(argv)
        except Exit as exc:
            return exc.result
    finally:
        if environ is not None:
            os.environ.clear()
            os.environ.update(saved)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    result = run(argv[1:])
    if result.out:
        sys.stdout.write(result.out)
        sys.stdout.flush()
    if result.err:
        sys.stderr.write(result.err)
        sys.stderr.flush()
    return result.rc
