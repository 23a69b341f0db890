# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the DCGM stand-ins share (simulator/sim_dcgm.py, sim_dcgmi.py, sim_dcgm_exporter.py): the node's GPUs and
driver as DCGM sees them, the DCGM version, the host engine's state file, the ``dcgm_diag_fail`` and ``nccl_slow``
faults (from the profile, or armed at run time by ``gpuops-sim fault``: ``admin_fault``, which hands the RDMA faults
to simulator/sim_rdma.py) and the client side of the host engine's wire format (one JSON line per connection).
Paths are under ``GPUOPS_SIM_ROOT`` (default ``/``). See simulator/README.md, "DCGM".

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import json
import os
import re
import socket
import sys

try:
    from . import nvidia_smi
    from . import sim_driver
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_driver.py')):
            sys.path.insert(0, _lib)
            break
    import nvidia_smi  # noqa: E402
    import sim_driver  # noqa: E402
try:  # the RDMA run-time faults (simulator/sim_rdma.py), optional
    from . import sim_rdma
except ImportError:
    try:
        import sim_rdma  # noqa: E402
    except ImportError:
        sim_rdma = None

STATE_FILE = 'var/lib/gpuops-sim/dcgm.json'
RUNTIME_FAULTS_FILE = 'var/lib/gpuops-sim/faults-runtime.json'
PROFILE_DCGM_FILE = 'sim/dcgm.json'     # a profile's static DCGM faults (faults.dcgm_diag_fail)
DEFAULT_PORT = 5555
DEFAULT_VERSION = '4.6.0'
CORE_PACKAGES = ('datacenter-gpu-manager-4-core', 'datacenter-gpu-manager')
RUNTIME_FAULTS = ('dcgm_diag_fail', 'nccl_slow')

# REAL: nv-hostengine without a usable NVML (NVIDIA/dcgm-exporter issues 27, 46, 59)
NVML_FAILED = 'Error: Failed to initialize NVML\n'
CONNECTION_ERROR = 'Host engine connection invalid/disconnected'


class DcgmError(Exception):
    """A request the simulated DCGM refuses (the message is what the tool prints)."""


# ---------------------------------------------------------------------------
# Paths, profile, driver
# ---------------------------------------------------------------------------

def root_dir():
    return sim_driver.sim_root()


def under(root, rel):
    return sim_driver.under(root, rel)


def profile_dir(root):
    return os.environ.get('GPUOPS_SIM_PROFILE') or under(root, nvidia_smi.DEFAULT_PROFILE)


def read_json(path, default=None):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return default


def driver(root):
    """``{'loaded': bool, 'version': str|None, 'reason': str}`` of the simulated node's NVIDIA driver."""
    try:
        profile = nvidia_smi.Profile(profile_dir(root))
    except nvidia_smi.Exit as exc:
        return {'loaded': False, 'version': None, 'reason': exc.result.err.strip()}
    if profile.runtime.get('driver') == 'emulated':
        gate = sim_driver.nvsmi_gate(root)
        if isinstance(gate, tuple):
            return {'loaded': False, 'version': None, 'reason': gate[1].strip()}
        return {'loaded': True, 'version': gate['driver_version'], 'reason': ''}
    failure = profile.failure()
    if failure:
        return {'loaded': False, 'version': None, 'reason': failure.get('stdout', '').strip()}
    return {'loaded': True, 'version': nvidia_smi.get_value(profile.xml.head, 'driver_version'), 'reason': ''}


def gpus(root):
    """The profile's GPUs as DCGM sees them: [{'id', 'name', 'bus_id', 'uuid', 'device_id', 'block'}]."""
    profile = nvidia_smi.Profile(profile_dir(root))
    found = []
    for gpu in profile.gpus():
        device = (gpu.value('pci/pci_device_id') or '0x0000').lower()
        found.append({'id': gpu.index, 'name': gpu.name, 'bus_id': gpu.bus_id, 'uuid': gpu.uuid,
                      'device_id': device[2:6] if device.startswith('0x') else device[:4], 'block': gpu.block})
    return found


def dcgm_version(root):
    """The installed DCGM core package's upstream version (GPUOPS_SIM_DCGM_VERSION overrides, else 4.6.0)."""
    if os.environ.get('GPUOPS_SIM_DCGM_VERSION'):
        return os.environ['GPUOPS_SIM_DCGM_VERSION']
    query = sim_driver.dpkg_query(root)
    for package in CORE_PACKAGES:
        version = sim_driver.upstream(sim_driver.package_version(query, package))
        if version:
            return version
    return DEFAULT_VERSION


# ---------------------------------------------------------------------------
# State and faults
# ---------------------------------------------------------------------------

class Locked(object):
    """The DCGM state file under an exclusive lock: ``with Locked(root) as state: ...`` (saved on exit)."""

    def __init__(self, root):
        self.path = under(root, STATE_FILE)
        self.handle = None
        self.data = None

    def __enter__(self):
        if not os.path.isdir(os.path.dirname(self.path)):
            os.makedirs(os.path.dirname(self.path))
        self.handle = open(self.path + '.lock', 'a')
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        self.data = read_json(self.path, None) or {'groups': {}}
        self.data.setdefault('groups', {})
        return self.data

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                sim_driver.write_file(self.path, json.dumps(self.data, indent=2, sort_keys=True) + '\n')
        finally:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
        return False


def runtime_faults(root):
    return read_json(under(root, RUNTIME_FAULTS_FILE), None) or {}


def profile_faults(root):
    return read_json(os.path.join(profile_dir(root), PROFILE_DCGM_FILE), None) or {}


def diag_failures(root):
    """[{'gpu': int, 'test': str|None}]: the profile's dcgm_diag_fail entries and the run-time one."""
    found = list(profile_faults(root).get('diag_fail') or [])
    armed = runtime_faults(root).get('dcgm_diag_fail')
    if armed:
        found.append({'gpu': armed.get('gpu', 1), 'test': armed.get('test')})
    return found


def _number(value, name, kind=int):
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise DcgmError('%s must be a number, got %r' % (name, value))


def arm(root, name, params):
    """Arm a run-time fault; returns its parameters as stored."""
    if name == 'dcgm_diag_fail':
        unknown = set(params) - {'gpu', 'test'}
        gpu = _number(params.get('gpu', 1), 'gpu')
        count = len(gpus(root))
        if not 0 <= gpu < count:
            raise DcgmError('no GPU %d (the profile has %d)' % (gpu, count))
        stored = {'gpu': gpu, 'test': params.get('test') or None}
    elif name == 'nccl_slow':
        unknown = set(params) - {'factor'}
        factor = _number(params.get('factor', 0.25), 'factor', float)
        if not 0 < factor <= 1:
            raise DcgmError('factor must be in (0, 1], got %s' % factor)
        stored = {'factor': factor}
    else:
        raise DcgmError('%s cannot be armed here (known: %s)' % (name, ', '.join(RUNTIME_FAULTS)))
    if unknown:
        raise DcgmError('%s: unknown parameter(s) %s' % (name, ', '.join(sorted(unknown))))
    faults = runtime_faults(root)
    faults[name] = stored
    sim_driver.write_file(under(root, RUNTIME_FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return stored


def clear(root, name=None):
    faults = runtime_faults(root)
    faults = {} if name is None else dict((k, v) for k, v in faults.items() if k != name)
    sim_driver.write_file(under(root, RUNTIME_FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return faults


FAULT_USAGE = ('usage: gpuops-sim fault [NAME [KEY=VALUE ...] | clear [NAME]]\n'
               '  dcgm_diag_fail [gpu=N] [test=NAME]  dcgmi diag fails that test (default memory, software at\n'
               '                              level 1) on GPU N (default 1)\n'
               '  nccl_slow [factor=F]        nccl-tests bus bandwidth scaled by F (default 0.25)\n')


def _profile_runtime_faults(root):
    """{name: [params]} of the profile's dcgm_diag_fail / nccl_slow faults (sim/runtime.json)."""
    runtime = read_json(os.path.join(profile_dir(root), nvidia_smi.RUNTIME_FILE), None) or {}
    found = {}
    for fault in runtime.get('faults') or []:
        if fault.get('name') in RUNTIME_FAULTS:
            found.setdefault(fault['name'], []).append(fault.get('params') or {})
    return found


def admin_fault(argv, root=None):
    """``gpuops-sim fault ...``: (rc, out, err); the RDMA faults go to sim_rdma."""
    root = root or root_dir()
    rdma = sim_rdma.admin_fault if sim_rdma is not None else None
    try:
        if not argv:
            listed = json.loads(rdma([], root)[1]) if rdma else {'profile': {}, 'runtime': {}}
            listed['profile'].update(_profile_runtime_faults(root))
            listed['runtime'].update(runtime_faults(root))
            return 0, json.dumps(listed, indent=2, sort_keys=True) + '\n', ''
        if argv[0] in ('-h', '--help'):
            return 0, (rdma(argv, root)[1] if rdma else '') + FAULT_USAGE, ''
        if argv[0] == 'clear' and len(argv) <= 2:
            name = argv[1] if len(argv) > 1 else None
            if name in RUNTIME_FAULTS:
                clear(root, name)
                return 0, 'gpuops-sim: run-time faults cleared\n', ''
            clear(root)
            return rdma(argv, root) if rdma else (0, 'gpuops-sim: run-time faults cleared\n', '')
        if argv[0] in RUNTIME_FAULTS:
            params = dict(arg.split('=', 1) for arg in argv[1:] if '=' in arg)
            if len(params) != len(argv) - 1:
                return 2, '', FAULT_USAGE
            stored = arm(root, argv[0], params)
            return 0, 'gpuops-sim: fault %s armed (%s)\n' % (
                argv[0], ', '.join('%s=%s' % (k, 'default' if v is None else v) for k, v in sorted(stored.items()))), ''
    except (DcgmError, nvidia_smi.Exit, OSError, ValueError) as exc:
        return 1, '', 'gpuops-sim: fault: %s\n' % (exc.result.err.strip() if isinstance(exc, nvidia_smi.Exit) else exc)
    if rdma is None:
        return 1, '', 'gpuops-sim: fault: unknown run-time fault %s\n' % argv[0]
    return rdma(argv, root)


# ---------------------------------------------------------------------------
# The host engine's wire format: the client side
# ---------------------------------------------------------------------------

def parse_host(text):
    """``ADDR``, ``ADDR:PORT``, ``[V6]:PORT`` -> (addr, port)."""
    text = (text or '').strip()
    match = re.match(r'^\[([^\]]+)\](?::(\d+))?$', text) or re.match(r'^([^:]*)(?::(\d+))?$', text)
    if not match:
        return text, DEFAULT_PORT
    return match.group(1) or 'localhost', int(match.group(2)) if match.group(2) else DEFAULT_PORT


def request(host, port, message, timeout=30.0):
    """Send one JSON message to a host engine; returns its answer, or raises OSError."""
    conn = socket.create_connection((host, port), timeout=timeout)
    try:
        conn.sendall(json.dumps(message).encode('utf-8') + b'\n')
        data = b''
        while not data.endswith(b'\n'):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        conn.close()
    if not data:
        raise OSError('no answer from the host engine')
    return json.loads(data.decode('utf-8'))
