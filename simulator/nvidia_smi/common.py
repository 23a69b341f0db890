# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every part of the replaying ``nvidia-smi`` shares: the profile's file names and default paths, the exit
codes, Result and Exit, the option parser and the GPU selection of ``-i``; and ``sim_driver`` (driver emulation
and GPU processes, simulator/sim_driver.py), None in a copy of the simulator without it.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

# driver emulation and GPU processes (simulator/sim_driver.py), optional for replayed nodes; the package's modules
# take it from here
try:
    from .. import sim_driver  # pylint: disable=unused-import
except (ImportError, ValueError):  # the package imported as nvidia_smi (the lib directory on sys.path); 3.8: ValueError
    try:
        import sim_driver  # noqa: E402
    except ImportError:
        sim_driver = None

SIM_VERSION = 1
DEFAULT_PROFILE = 'usr/share/gpuops-sim/profile'
DEFAULT_STATE = 'var/lib/gpuops-sim/state.json'

XML_FILE = 'nvidia-smi-q-x.xml'
TOPO_FILE = 'nvidia-smi-topo-m.txt'
NVLINK_FILE = 'nvidia-smi-nvlink-s.txt'
RUNTIME_FILE = 'sim/runtime.json'
MIG_FILE = 'sim/mig-profiles.json'

HELP_HINT = "Please run 'nvidia-smi -h' for help."
INVALID_COMBINATION = 'Invalid combination of input arguments. ' + HELP_HINT

# nvidia-smi exit codes (nvidia-smi(1) RETURN VALUE)
RC_OK = 0
RC_BAD_ARG = 2
RC_NOT_SUPPORTED = 3
RC_NO_PERMISSION = 4
RC_NOT_FOUND = 6
RC_DRIVER = 9
RC_OTHER = 255


class Result(object):
    """What one invocation prints and returns."""

    def __init__(self, rc=0, out='', err=''):
        self.rc = rc
        self.out = out
        self.err = err

    def __repr__(self):
        return 'Result(rc=%r, out=%r, err=%r)' % (self.rc, self.out, self.err)


class Exit(Exception):
    def __init__(self, rc, out='', err=''):
        Exception.__init__(self, out or err)
        self.result = Result(rc, out, err)


def bad_argument(message):
    return Exit(RC_BAD_ARG, message + '\n')


# ---------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------

def sim_paths(environ=None):
    """(profile_dir, state_file) honouring the GPUOPS_SIM_* overrides."""
    env = os.environ if environ is None else environ
    root = env.get('GPUOPS_SIM_ROOT') or '/'
    profile = env.get('GPUOPS_SIM_PROFILE') or os.path.join(root, DEFAULT_PROFILE)
    state = env.get('GPUOPS_SIM_STATE') or os.path.join(root, DEFAULT_STATE)
    return profile, state


def read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8')


# ---------------------------------------------------------------------------
# Options and GPU selection
# ---------------------------------------------------------------------------

# Real options the simulator does not answer: refused with an explicit message.
NOT_SIMULATED = set(['-d', '--display', '-f', '--filename', '-l', '--loop', '-lms', '--loop-ms', '-r',
                     '--gpu-reset', '-e', '--ecc-config', '-p', '--reset-ecc-errors', '-ac',
                     '--applications-clocks', '-rac', '-lgc', '--lock-gpu-clocks', '-rgc', '-pl',
                     '--power-limit', '-am', '-B', '--list-excluded-gpus', '-u', '-t', '-dm', '-gom',
                     'dmon', 'pmon', 'vgpu', 'conf-compute', 'drain', 'clocks', 'encodersessions',
                     'fbcsessions', 'c2c', 'gpm', 'pci', 'power', 'boost-slider', 'power-hint',
                     'set-hostname', 'get-hostname', 'counters', 'daemon', 'replay', 'acct', 'rg'])


def not_simulated(option):
    return Exit(RC_BAD_ARG, '', 'gpuops-sim: nvidia-smi %s is not simulated by gpuops-sim.\n' % option)


def parse_options(argv, table, allow_positional=False):
    """Parse ``argv`` with ``table`` (option -> (key, takes_value)).

    Accepts "-i 0", "-i=0", "--id=0" and "--id 0". Returns (opts, positionals).
    """
    opts = {}
    positionals = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, value = arg, None
        if arg.startswith('-') and '=' in arg:
            name, value = arg.split('=', 1)
        if name in table:
            key, takes = table[name]
            if takes:
                if value is None:
                    if i + 1 >= len(argv):
                        raise bad_argument('ERROR: Option %s is missing its value. %s' % (name, HELP_HINT))
                    value = argv[i + 1]
                    i += 1
            elif value is not None:
                raise bad_argument('ERROR: Option %s is not recognized. %s' % (arg, HELP_HINT))
            if key in opts and opts[key] != (value if takes else True):
                raise bad_argument(INVALID_COMBINATION)
            opts[key] = value if takes else True
        elif name in NOT_SIMULATED:
            raise not_simulated(name)
        elif allow_positional and not arg.startswith('-'):
            positionals.append(arg)
        else:
            raise bad_argument('ERROR: Option %s is not recognized. %s' % (arg, HELP_HINT))
        i += 1
    return opts, positionals


def _norm_bus(value):
    match = re.match(r'^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$', value.strip())
    if not match:
        return None
    domain = int(match.group(1) or '0', 16)
    return '%08X:%02X:%02X.%s' % (domain, int(match.group(2), 16), int(match.group(3), 16), match.group(4))


def select_gpus(gpus, id_arg):
    """GPUs named by -i (indexes, UUIDs or PCI bus ids, comma separated)."""
    if id_arg is None:
        return list(gpus)
    chosen = []
    for token in id_arg.split(','):
        token = token.strip()
        found = None
        for gpu in gpus:
            if token.isdigit() and int(token) == gpu.index:
                found = gpu
            elif gpu.uuid and token.lower() == gpu.uuid.lower():
                found = gpu
            elif _norm_bus(token) is not None and _norm_bus(token) == _norm_bus(gpu.bus_id):
                found = gpu
        if found is None:
            raise Exit(RC_NOT_FOUND, 'No devices were found\n')
        if found not in chosen:
            chosen.append(found)
    return sorted(chosen, key=lambda g: g.index)


def require_root(action):
    if os.environ.get('GPUOPS_SIM_ALLOW_NONROOT') == '1':
        return
    if hasattr(os, 'geteuid') and os.geteuid() != 0:
        raise action
