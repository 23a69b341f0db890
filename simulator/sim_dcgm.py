# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DCGM on simulated nodes: the ``nv-hostengine``, ``dcgmi`` and ``dcgm-exporter`` stand-ins.

NVIDIA's DCGM packages ship ``/usr/bin/dcgmi``, ``/usr/bin/nv-hostengine`` (datacenter-gpu-manager-4-core)
and ``/usr/bin/dcgm-exporter`` (datacenter-gpu-manager-exporter). On every simulated node (bare or
replayed) those paths are diverted (``dpkg-divert --no-rename --divert <path>.distrib --add <path>``) and
``sync()`` (run by a dpkg and an apt hook after every dpkg run) puts this file there, with a shebang, when a
package shipped the real one; it dispatches on the name it runs under (``sim_dcgm.py NAME ARGS`` too).

* ``nv-hostengine [-n] [-p PORT] [-b ADDR] [--pid FILE] [--service-account USER] | --term | --version``:
  listens on TCP ADDR:PORT (default 127.0.0.1:5555, as DCGM documents) and answers one JSON line per
  connection (``{"argv": [...]}`` -> ``{"rc", "out", "err"}``, or ``{"op": "ping"}``); refuses to start
  while the NVIDIA driver is not loaded (``Error: Failed to initialize NVML``). State (policies and health
  watches per group) in ``/var/lib/gpuops-sim/dcgm.json``.
* ``dcgmi [--host ADDR[:PORT]] discovery|health|policy|diag ...``: sends its arguments to the host engine
  (simulator/sim_dcgmi.py renders the answers in DCGM 4's layouts); a host engine it cannot reach gets
  DCGM's two error lines and exit status 250 (DCGM_ST_CONNECTION_NOT_VALID, -6).
* ``dcgm-exporter``: simulator/sim_dcgm_exporter.py.

Faults: ``dcgm_diag_fail`` from the profile (``sim/dcgm.json``, simulator/faults.py) or armed at run time,
with ``nccl_slow``, in ``/var/lib/gpuops-sim/faults-runtime.json`` (``gpuops-sim fault``). See
simulator/README.md, "DCGM". Paths are under ``GPUOPS_SIM_ROOT`` (default ``/``).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import json
import os
import re
import signal
import socket
import sys
import threading

try:
    from . import nvidia_smi as N
    from . import sim_driver as D
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_driver.py')):
            sys.path.insert(0, _lib)
            break
    import nvidia_smi as N  # noqa: E402
    import sim_driver as D  # noqa: E402
R = N.R  # sim_rdma (the RDMA run-time faults), or None in a copy without it

DCGMI = 'dcgmi'
HOSTENGINE = 'nv-hostengine'
EXPORTER = 'dcgm-exporter'
# Files DCGM packages ship that get the stand-in (this file under LIB_DIR/STANDIN)
STANDINS = ('usr/bin/dcgmi', 'usr/bin/nv-hostengine', 'usr/bin/dcgm-exporter')
STANDIN = 'standin-dcgm'
STATE_FILE = 'var/lib/gpuops-sim/dcgm.json'
RUNTIME_FAULTS_FILE = 'var/lib/gpuops-sim/faults-runtime.json'
PROFILE_DCGM_FILE = 'sim/dcgm.json'     # a profile's static DCGM faults (faults.dcgm_diag_fail)
DEFAULT_BIND = '127.0.0.1'
DEFAULT_PORT = 5555
DEFAULT_PID = 'var/run/nvhostengine.pid'
DEFAULT_VERSION = '4.4.1'
CORE_PACKAGES = ('datacenter-gpu-manager-4-core', 'datacenter-gpu-manager')
RUNTIME_FAULTS = ('dcgm_diag_fail', 'nccl_slow')

# REAL: dcgmi Command::Connect() (dcgmi/Command.cpp) and the line dcgmi prints after it (NVIDIA/dcgm-exporter
# issue 46, NVIDIA/DCGM issue 57); exit status: DCGM_ST_CONNECTION_NOT_VALID (-6) as an 8-bit status.
CONNECT_FAILED = ('Error: unable to establish a connection to the specified host: %s\n'
                  'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
RC_CONNECTION = 250
# REAL: nv-hostengine without a usable NVML (NVIDIA/dcgm-exporter issues 27, 46, 59)
NVML_FAILED = 'Error: Failed to initialize NVML\n'
CONNECTION_ERROR = 'Host engine connection invalid/disconnected'


class DcgmError(Exception):
    """A request the simulated DCGM refuses (the message is what the tool prints)."""


# ---------------------------------------------------------------------------
# Paths, profile, driver
# ---------------------------------------------------------------------------

def root_dir():
    return D.sim_root()


def under(root, rel):
    return D.under(root, rel)


def profile_dir(root):
    return os.environ.get('GPUOPS_SIM_PROFILE') or under(root, N.DEFAULT_PROFILE)


def read_json(path, default=None):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return default


def driver(root):
    """``{'loaded': bool, 'version': str|None, 'reason': str}`` of the simulated node's NVIDIA driver."""
    try:
        profile = N.Profile(profile_dir(root))
    except N.Exit as exc:
        return {'loaded': False, 'version': None, 'reason': exc.result.err.strip()}
    if profile.runtime.get('driver') == 'emulated':
        gate = D.nvsmi_gate(root)
        if isinstance(gate, tuple):
            return {'loaded': False, 'version': None, 'reason': gate[1].strip()}
        return {'loaded': True, 'version': gate['driver_version'], 'reason': ''}
    failure = profile.failure()
    if failure:
        return {'loaded': False, 'version': None, 'reason': failure.get('stdout', '').strip()}
    return {'loaded': True, 'version': N.get_value(profile.xml.head, 'driver_version'), 'reason': ''}


def gpus(root):
    """The profile's GPUs as DCGM sees them: [{'id', 'name', 'bus_id', 'uuid', 'device_id', 'block'}]."""
    profile = N.Profile(profile_dir(root))
    found = []
    for gpu in profile.gpus():
        device = (gpu.value('pci/pci_device_id') or '0x0000').lower()
        found.append({'id': gpu.index, 'name': gpu.name, 'bus_id': gpu.bus_id, 'uuid': gpu.uuid,
                      'device_id': device[2:6] if device.startswith('0x') else device[:4], 'block': gpu.block})
    return found


def dcgm_version(root):
    """The installed DCGM core package's upstream version (GPUOPS_SIM_DCGM_VERSION overrides, else 4.4.1)."""
    if os.environ.get('GPUOPS_SIM_DCGM_VERSION'):
        return os.environ['GPUOPS_SIM_DCGM_VERSION']
    query = D.dpkg_query(root)
    for package in CORE_PACKAGES:
        version = D.upstream(D.package_version(query, package))
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
                D.write_file(self.path, json.dumps(self.data, indent=2, sort_keys=True) + '\n')
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
    D.write_file(under(root, RUNTIME_FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return stored


def clear(root, name=None):
    faults = runtime_faults(root)
    faults = {} if name is None else dict((k, v) for k, v in faults.items() if k != name)
    D.write_file(under(root, RUNTIME_FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return faults


FAULT_USAGE = ('usage: gpuops-sim fault [NAME [KEY=VALUE ...] | clear [NAME]]\n'
               '  dcgm_diag_fail [gpu=N] [test=NAME]  dcgmi diag fails that test (default memory, software at\n'
               '                              level 1) on GPU N (default 1)\n'
               '  nccl_slow [factor=F]        nccl-tests bus bandwidth scaled by F (default 0.25)\n')


def _profile_runtime_faults(root):
    """{name: [params]} of the profile's dcgm_diag_fail / nccl_slow faults (sim/runtime.json)."""
    runtime = read_json(os.path.join(profile_dir(root), N.RUNTIME_FILE), None) or {}
    found = {}
    for fault in runtime.get('faults') or []:
        if fault.get('name') in RUNTIME_FAULTS:
            found.setdefault(fault['name'], []).append(fault.get('params') or {})
    return found


def admin_fault(argv, root=None):
    """``gpuops-sim fault ...``: (rc, out, err); the RDMA faults go to sim_rdma."""
    root = root or root_dir()
    rdma = R.admin_fault if R is not None else None
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
    except (DcgmError, N.Exit, OSError, ValueError) as exc:
        return 1, '', 'gpuops-sim: fault: %s\n' % (exc.result.err.strip() if isinstance(exc, N.Exit) else exc)
    if rdma is None:
        return 1, '', 'gpuops-sim: fault: unknown run-time fault %s\n' % argv[0]
    return rdma(argv, root)


# ---------------------------------------------------------------------------
# Host engine: a TCP listener answering one JSON line per connection
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


def answer(root, message):
    """What the host engine answers to one message."""
    if message.get('op') == 'ping':
        return {'ok': True, 'version': dcgm_version(root), 'pid': os.getpid()}
    argv = message.get('argv')
    if not isinstance(argv, list):
        return {'rc': 1, 'out': '', 'err': 'bad request\n'}
    try:
        from . import sim_dcgmi as I
    except ImportError:
        import sim_dcgmi as I  # noqa: E402
    rc, out, err = I.handle(root, [str(a) for a in argv])
    return {'rc': rc, 'out': out, 'err': err}


def serve(root, bind, port, ready=None, stop=None):
    """Listen on bind:port and answer until ``stop`` (a threading.Event) is set or the process ends."""
    family = socket.AF_INET6 if ':' in bind else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((bind, port))
    server.listen(16)
    server.settimeout(0.5)
    if ready is not None:
        ready(server.getsockname())

    def one(conn):
        try:
            conn.settimeout(30)
            data = b''
            while not data.endswith(b'\n'):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            try:
                reply = answer(root, json.loads(data.decode('utf-8')))
            except ValueError:
                reply = {'rc': 1, 'out': '', 'err': 'bad request\n'}
            except Exception as exc:  # pylint: disable=broad-except  # an answer, never a dead engine
                reply = {'rc': 1, 'out': '', 'err': 'Error: %s\n' % exc}
            conn.sendall(json.dumps(reply).encode('utf-8') + b'\n')
        except OSError:
            pass
        finally:
            conn.close()
    try:
        while stop is None or not stop.is_set():
            try:
                conn, _addr = server.accept()
            except socket.timeout:
                continue
            threading.Thread(target=one, args=(conn,), daemon=True).start()
    finally:
        server.close()


HOSTENGINE_USAGE = ('Usage: nv-hostengine [-n] [-p PORT] [-b ADDR] [--pid FILE] [--service-account USER]\n'
                    '       nv-hostengine --term [--pid FILE] | --version | --help\n'
                    '(gpuops-sim stand-in: simulator/README.md, "DCGM")\n')


def _options(argv, spec):
    """Tiny option parser: ``spec`` maps option -> (key, takes_value). Returns (opts, rest) or raises."""
    opts, rest, i = {}, [], 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition('=') if arg.startswith('--') else (arg, '', '')
        if name in spec:
            key, takes = spec[name]
            if takes:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise DcgmError('option %s needs a value' % name)
                    value = argv[i]
                opts[key] = value
            else:
                opts[key] = True
        elif arg.startswith('-'):
            raise DcgmError('unknown option %s' % arg)
        else:
            rest.append(arg)
        i += 1
    return opts, rest


HOSTENGINE_OPTS = {'-n': ('foreground', False), '--no-daemon': ('foreground', False),
                   '-p': ('port', True), '--port': ('port', True), '-b': ('bind', True),
                   '--bind-interface': ('bind', True), '--pid': ('pid', True), '--service-account': ('account', True),
                   '--term': ('term', False), '-t': ('term', False), '--version': ('version', False),
                   '-v': ('version', False), '-h': ('help', False), '--help': ('help', False),
                   '--log-level': ('log_level', True), '-f': ('log_file', True), '--log-filename': ('log_file', True),
                   '--denylist-modules': ('denylist', True), '--home-dir': ('home', True)}


def hostengine_main(argv, root=None):
    root = root or root_dir()
    try:
        opts, rest = _options(argv, HOSTENGINE_OPTS)
        if rest:
            raise DcgmError('unexpected argument %s' % rest[0])
        port = int(opts.get('port', DEFAULT_PORT))
    except (DcgmError, ValueError) as exc:
        sys.stderr.write('nv-hostengine: %s\n%s' % (exc, HOSTENGINE_USAGE))
        return 1
    if opts.get('help'):
        sys.stdout.write(HOSTENGINE_USAGE)
        return 0
    if opts.get('version'):
        sys.stdout.write('Version : %s\n' % dcgm_version(root))
        return 0
    pid_file = opts.get('pid') or under(root, DEFAULT_PID)
    if opts.get('term'):
        pid = read_pid(pid_file)
        if pid is None:
            sys.stdout.write('Unable to terminate host engine, it may not be running.\n')
            return 1
        os.kill(pid, signal.SIGTERM)
        sys.stdout.write('Host engine successfully terminated.\n')
        return 0
    state = driver(root)
    if not state['loaded']:
        sys.stdout.write(NVML_FAILED)
        return 1 if opts.get('foreground') else 0
    account = opts.get('account')
    if account:
        try:
            import pwd
            pwd.getpwnam(account)
        except (ImportError, KeyError):
            sys.stderr.write('nv-hostengine: service account %s does not exist; running as the current user '
                             '(gpuops-sim)\n' % account)
    bind = opts.get('bind') or DEFAULT_BIND
    if bind == 'ALL':
        bind = '0.0.0.0'
    if not opts.get('foreground') and os.fork() > 0:
        sys.stdout.write('Started host engine version %s using port number: %d \n' % (dcgm_version(root), port))
        return 0
    if not opts.get('foreground'):
        os.setsid()
    D.write_file(pid_file, '%d\n' % os.getpid())
    signal.signal(signal.SIGTERM, lambda *_a: sys.exit(0))
    try:
        serve(root, bind, port)
    except OSError as exc:
        sys.stderr.write('Err: Failed to start DCGM Server: %s\n' % exc)
        return 1
    finally:
        if read_pid(pid_file) == os.getpid():
            os.remove(pid_file)
    return 0


def read_pid(path):
    try:
        with open(path) as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
        return pid
    except (IOError, OSError, ValueError):
        return None


# ---------------------------------------------------------------------------
# dcgmi: the client side
# ---------------------------------------------------------------------------

def dcgmi_main(argv, root=None, out=None):
    """Run dcgmi; returns the exit status (output written to ``out``, default stdout)."""
    root = root or root_dir()
    out = out or sys.stdout
    host, rest, i = None, [], 0
    while i < len(argv):
        if argv[i] == '--host' and i + 1 < len(argv):
            host = argv[i + 1]
            i += 2
            continue
        if argv[i].startswith('--host='):
            host = argv[i][len('--host='):]
        else:
            rest.append(argv[i])
        i += 1
    if not rest or rest[0] in ('-h', '--help'):
        try:
            from . import sim_dcgmi as I
        except ImportError:
            import sim_dcgmi as I  # noqa: E402
        out.write(I.USAGE)
        return 0 if rest else 1
    addr, port = parse_host(host or 'localhost')
    if rest[0] in ('-v', '--version'):
        out.write('Version : %s\n' % dcgm_version(root))
        try:
            out.write('\nHostengine build info:\nVersion : %s\n' % request(addr, port, {'op': 'ping'})['version'])
        except (OSError, ValueError, KeyError):
            pass
        return 0
    try:
        reply = request(addr, port, {'argv': rest})
    except (OSError, ValueError):
        out.write(CONNECT_FAILED % (host or 'localhost'))
        return RC_CONNECTION
    out.write(reply.get('out', ''))
    sys.stderr.write(reply.get('err', ''))
    return int(reply.get('rc', 1))


# ---------------------------------------------------------------------------
# Stand-ins: placed after every dpkg run (hooks), removed with the package
# ---------------------------------------------------------------------------

def sync(root='/'):
    """Place the stand-in where a DCGM package shipped the real file (``<path>.distrib``), remove it elsewhere."""
    placed, removed, kept = [], [], []
    template = under(root, os.path.join(D.LIB_DIR, STANDIN))
    for rel in STANDINS:
        path = under(root, rel)
        if os.path.lexists(path + D.DISTRIB):
            with open(template, 'rb') as handle:
                content = handle.read()
            current = None
            if D.is_standin(path):
                with open(path, 'rb') as handle:
                    current = handle.read()
            elif os.path.lexists(path):
                raise D.DriverError('%s is not a gpuops-sim stand-in; refusing to replace it' % path)
            if current != content or not os.access(path, os.X_OK):
                D.write_file(path, content, 0o755)
                placed.append('/' + rel)
            else:
                kept.append('/' + rel)
        elif D.is_standin(path):
            os.remove(path)
            removed.append('/' + rel)
    return {'placed': placed, 'removed': removed, 'kept': kept}


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    prog = os.path.basename(argv[0]) if argv else ''
    if prog in ('sim_dcgm.py', 'sim_dcgm', STANDIN) and len(argv) > 1:
        if argv[1] == 'sync':
            try:
                print(json.dumps(sync(root_dir()), sort_keys=True))
            except (D.DriverError, OSError) as exc:
                sys.stderr.write('gpuops-sim: dcgm sync: %s\n' % exc)
                return 1
            return 0
        argv = argv[1:]
        prog = os.path.basename(argv[0])
    if prog == HOSTENGINE:
        return hostengine_main(argv[1:])
    if prog == DCGMI:
        return dcgmi_main(argv[1:])
    if prog == EXPORTER:
        try:
            from . import sim_dcgm_exporter as X
        except ImportError:
            import sim_dcgm_exporter as X  # noqa: E402
        return X.main(argv[1:])
    sys.stderr.write('usage: sim_dcgm.py {sync | dcgmi ARGS | nv-hostengine ARGS | dcgm-exporter ARGS}\n')
    return 2


if __name__ == '__main__':
    sys.exit(main())
