# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``gpuops-sim``, the simulator's admin tool on a simulated node (``/usr/local/sbin/gpuops-sim``: this file with
a shebang, simulator/install_node.py).

    gpuops-sim {reboot|busy GPU [PID [NAME]]|idle GPU|state|reset-state|profile|boot|sync|fault ...}

It changes what the replaying ``nvidia-smi`` (simulator/nvidia_smi/) answers: the state file (``reboot``,
``busy``/``idle``, ``reset-state``), the emulated driver of a bare node (``boot``, ``sync``: simulator/sim_driver.py),
the HCAs' RDMA state after a reboot (simulator/sim_rdma.py) and the faults armed at run time (``fault``:
simulator/sim_dcgm_core.py, simulator/sim_rdma.py). Paths as nvidia-smi's (``GPUOPS_SIM_ROOT``,
``GPUOPS_SIM_PROFILE``, ``GPUOPS_SIM_STATE``).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import sys

try:
    from . import nvidia_smi
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'nvidia_smi', '__init__.py')):
            sys.path.insert(0, _lib)
            break
    import nvidia_smi  # noqa: E402
try:  # driver emulation and GPU processes (simulator/sim_driver.py), optional for replayed nodes
    from . import sim_driver
except ImportError:
    try:
        import sim_driver  # noqa: E402
    except ImportError:
        sim_driver = None
try:  # RDMA state of the HCAs (simulator/sim_rdma.py): gpuops-sim fault, RDMA reset on reboot
    from . import sim_rdma
except ImportError:
    try:
        import sim_rdma  # noqa: E402
    except ImportError:
        sim_rdma = None
try:  # the run-time faults dcgm_diag_fail and nccl_slow (simulator/sim_dcgm_core.py)
    from . import sim_dcgm_core
except ImportError:
    try:
        import sim_dcgm_core  # noqa: E402
    except ImportError:
        sim_dcgm_core = None

Exit, Profile, Result, State = nvidia_smi.Exit, nvidia_smi.Profile, nvidia_smi.Result, nvidia_smi.State
read_text, select_gpus = nvidia_smi.read_text, nvidia_smi.select_gpus

ADMIN_USAGE = ('usage: gpuops-sim {reboot|busy GPU [PID [NAME]]|idle GPU|state|reset-state|profile|boot|sync|fault}\n'
               '  reboot       apply pending MIG modes; GPU/compute instances, persistence and compute\n'
               '               mode return to their boot values (as on a real reboot); on a bare node: boot;\n'
               '               the HCAs\' RDMA state as after a boot (sim_rdma.py)\n'
               '  fault [roce_retrans_high [nic=HCA] | dcgm_diag_fail [gpu=N] [test=T] | nccl_slow [factor=F]\n'
               '         | clear [NAME]]\n'
               '               arm a fault at run time (gpuops-sim fault -h), or list the armed ones\n'
               '  busy GPU     mark GPU (index) as in use: -mig then only sets the pending mode; with PID\n'
               '               (and NAME, default python3) -q -x also lists that compute process\n'
               '  idle GPU     clear the busy mark and the processes\n'
               '  state        print the simulator state (JSON), with the driver state\n'
               '  boot         bare node: decide which NVIDIA module loads on this boot (newest kernel,\n'
               '               its DKMS module or the user space), write /run/gpuops-sim, GPU state of a boot\n'
               '  sync         bare node: place the stand-ins where packages shipped <path>.distrib\n'
               '  reset-state  forget all changes (fresh boot of a freshly installed node)\n'
               '  profile      print the installed profile.yml\n')


def admin(argv, profile_dir, state_file):
    if not argv or argv[0] in ('-h', '--help'):
        return Result(0 if argv else 2, ADMIN_USAGE)
    cmd = argv[0]
    if cmd == 'fault':
        if sim_dcgm_core is not None:
            return Result(*sim_dcgm_core.admin_fault(argv[1:]))
        if sim_rdma is None:
            return Result(1, '', 'gpuops-sim: fault needs sim_rdma.py\n')
        return Result(*sim_rdma.admin_fault(argv[1:]))
    if cmd == 'reboot' and sim_rdma is not None:
        try:
            sim_rdma.boot(sim_rdma.sim_driver.sim_root())
        except (sim_rdma.RdmaError, OSError) as exc:
            return Result(1, '', 'gpuops-sim: reboot: %s\n' % exc)
    profile = Profile(profile_dir)
    if cmd == 'profile':
        path = os.path.join(profile_dir, 'profile.yml')
        return Result(0, read_text(path) if os.path.isfile(path) else '')
    if cmd == 'reset-state':
        if os.path.exists(state_file):
            os.remove(state_file)
        return Result(0, 'gpuops-sim: state reset\n')
    emulated, out = profile.runtime.get('driver') == 'emulated', 'gpuops-sim: rebooted\n'
    if cmd in ('boot', 'sync') or (cmd == 'reboot' and emulated):
        if sim_driver is None:
            return Result(1, '', 'gpuops-sim: %s needs sim_driver.py\n' % cmd)
        try:
            done = sim_driver.sync(sim_driver.sim_root()) if cmd == 'sync' else sim_driver.boot(sim_driver.sim_root())
        except (sim_driver.DriverError, OSError) as exc:
            return Result(1, '', 'gpuops-sim: %s: %s\n' % (cmd, exc))
        cmd, out = 'reboot' if cmd != 'sync' else cmd, json.dumps(done, sort_keys=True) + '\n'
        if cmd == 'sync' or profile.failure():
            return Result(0, out)
    if profile.failure():
        return Result(1, '', 'gpuops-sim: profile simulates a failed driver; no GPU state\n')
    state = State(state_file, profile).load(lock=True)
    try:
        if cmd == 'state':
            driver = sim_driver.status(sim_driver.sim_root()) if emulated and sim_driver is not None else {'mode': 'replayed'}
            return Result(0, json.dumps(dict(state.data, driver=driver), indent=2, sort_keys=True) + '\n')
        if cmd == 'reboot':
            boot = State(state_file, profile)._initial()
            for bus_id, st in state.data['gpus'].items():
                fresh = boot['gpus'].get(bus_id, {})
                st['mig_current'] = st.get('mig_pending')
                st['gpu_instances'] = []
                st['persistence_mode'] = fresh.get('persistence_mode', st.get('persistence_mode'))
                if emulated and st['persistence_mode'] == 'Enabled':  # a freshly loaded driver: off until set
                    st['persistence_mode'] = 'Disabled'
                st['compute_mode'] = fresh.get('compute_mode', st.get('compute_mode'))
                st['busy'], st['processes'] = False, []
            state.save()
            return Result(0, out)
        if cmd in ('busy', 'idle') and 2 <= len(argv) <= (4 if cmd == 'busy' else 2):
            try:
                gpus = select_gpus(profile.gpus(), argv[1])
                proc = sim_driver.new_process(argv[2:]) if len(argv) > 2 and sim_driver is not None else None
            except Exit as exc:
                return exc.result
            except sim_driver.DriverError as exc:
                return Result(2, '', 'gpuops-sim: %s\n' % exc)
            if len(argv) > 2 and proc is None:
                return Result(1, '', 'gpuops-sim: a GPU process needs sim_driver.py\n')
            for gpu in gpus:
                st = state.gpu(gpu.bus_id)
                st['busy'] = cmd == 'busy'
                procs = [] if cmd == 'idle' else [p for p in st.get('processes') or [] if proc is None
                                                  or p['pid'] != proc['pid']] + ([proc] if proc else [])
                st['processes'] = procs
            state.save()
            return Result(0, 'gpuops-sim: GPU %s marked %s\n' % (argv[1], cmd))
        return Result(2, ADMIN_USAGE)
    finally:
        state.release()


def run(argv, environ=None):
    """Run one invocation in-process; returns a Result (used by the tests)."""
    profile_dir, state_file = nvidia_smi.sim_paths(environ)
    if environ is not None:
        saved = dict(os.environ)
        os.environ.update(environ)
    try:
        try:
            return admin(list(argv), profile_dir, state_file)
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


if __name__ == '__main__':
    sys.exit(main())
