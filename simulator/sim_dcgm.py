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

import json
import os
import signal
import socket
import sys
import threading

try:
    from . import sim_dcgm_core
    from . import sim_dcgmi
    from . import sim_driver
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_driver.py')):
            sys.path.insert(0, _lib)
            break
    import sim_dcgm_core  # noqa: E402
    import sim_dcgmi  # noqa: E402
    import sim_driver  # noqa: E402

DCGMI = 'dcgmi'
HOSTENGINE = 'nv-hostengine'
EXPORTER = 'dcgm-exporter'
# Files DCGM packages ship that get the stand-in (this file under LIB_DIR/STANDIN)
STANDINS = ('usr/bin/dcgmi', 'usr/bin/nv-hostengine', 'usr/bin/dcgm-exporter')
STANDIN = 'standin-dcgm'
DEFAULT_BIND = '127.0.0.1'
DEFAULT_PID = 'var/run/nvhostengine.pid'

# REAL: dcgmi Command::Connect() (dcgmi/Command.cpp) and the line dcgmi prints after it (NVIDIA/dcgm-exporter
# issue 46, NVIDIA/DCGM issue 57); exit status: DCGM_ST_CONNECTION_NOT_VALID (-6) as an 8-bit status.
CONNECT_FAILED = ('Error: unable to establish a connection to the specified host: %s\n'
                  'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
RC_CONNECTION = 250


# ---------------------------------------------------------------------------
# Host engine: a TCP listener answering one JSON line per connection
# ---------------------------------------------------------------------------

def answer(root, message):
    """What the host engine answers to one message."""
    if message.get('op') == 'ping':
        return {'ok': True, 'version': sim_dcgm_core.dcgm_version(root), 'pid': os.getpid()}
    argv = message.get('argv')
    if not isinstance(argv, list):
        return {'rc': 1, 'out': '', 'err': 'bad request\n'}
    rc, out, err = sim_dcgmi.handle(root, [str(a) for a in argv])
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
                        raise sim_dcgm_core.DcgmError('option %s needs a value' % name)
                    value = argv[i]
                opts[key] = value
            else:
                opts[key] = True
        elif arg.startswith('-'):
            raise sim_dcgm_core.DcgmError('unknown option %s' % arg)
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
    root = root or sim_dcgm_core.root_dir()
    try:
        opts, rest = _options(argv, HOSTENGINE_OPTS)
        if rest:
            raise sim_dcgm_core.DcgmError('unexpected argument %s' % rest[0])
        port = int(opts.get('port', sim_dcgm_core.DEFAULT_PORT))
    except (sim_dcgm_core.DcgmError, ValueError) as exc:
        sys.stderr.write('nv-hostengine: %s\n%s' % (exc, HOSTENGINE_USAGE))
        return 1
    if opts.get('help'):
        sys.stdout.write(HOSTENGINE_USAGE)
        return 0
    if opts.get('version'):
        sys.stdout.write('Version : %s\n' % sim_dcgm_core.dcgm_version(root))
        return 0
    pid_file = opts.get('pid') or sim_dcgm_core.under(root, DEFAULT_PID)
    if opts.get('term'):
        pid = read_pid(pid_file)
        if pid is None:
            sys.stdout.write('Unable to terminate host engine, it may not be running.\n')
            return 1
        os.kill(pid, signal.SIGTERM)
        sys.stdout.write('Host engine successfully terminated.\n')
        return 0
    state = sim_dcgm_core.driver(root)
    if not state['loaded']:
        sys.stdout.write(sim_dcgm_core.NVML_FAILED)
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
        sys.stdout.write('Started host engine version %s using port number: %d \n' % (sim_dcgm_core.dcgm_version(root), port))
        return 0
    if not opts.get('foreground'):
        os.setsid()
    sim_driver.write_file(pid_file, '%d\n' % os.getpid())
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
    root = root or sim_dcgm_core.root_dir()
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
        out.write(sim_dcgmi.USAGE)
        return 0 if rest else 1
    addr, port = sim_dcgm_core.parse_host(host or 'localhost')
    if rest[0] in ('-v', '--version'):
        out.write('Version : %s\n' % sim_dcgm_core.dcgm_version(root))
        try:
            out.write('\nHostengine build info:\nVersion : %s\n' % sim_dcgm_core.request(addr, port, {'op': 'ping'})['version'])
        except (OSError, ValueError, KeyError):
            pass
        return 0
    try:
        reply = sim_dcgm_core.request(addr, port, {'argv': rest})
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
    template = sim_dcgm_core.under(root, os.path.join(sim_driver.LIB_DIR, STANDIN))
    for rel in STANDINS:
        path = sim_dcgm_core.under(root, rel)
        if os.path.lexists(path + sim_driver.DISTRIB):
            with open(template, 'rb') as handle:
                content = handle.read()
            current = None
            if sim_driver.is_standin(path):
                with open(path, 'rb') as handle:
                    current = handle.read()
            elif os.path.lexists(path):
                raise sim_driver.DriverError('%s is not a gpuops-sim stand-in; refusing to replace it' % path)
            if current != content or not os.access(path, os.X_OK):
                sim_driver.write_file(path, content, 0o755)
                placed.append('/' + rel)
            else:
                kept.append('/' + rel)
        elif sim_driver.is_standin(path):
            os.remove(path)
            removed.append('/' + rel)
    return {'placed': placed, 'removed': removed, 'kept': kept}


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    prog = os.path.basename(argv[0]) if argv else ''
    if prog in ('sim_dcgm.py', 'sim_dcgm', STANDIN) and len(argv) > 1:
        if argv[1] == 'sync':
            try:
                print(json.dumps(sync(sim_dcgm_core.root_dir()), sort_keys=True))
            except (sim_driver.DriverError, OSError) as exc:
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
            from . import sim_dcgm_exporter
        except ImportError:
            import sim_dcgm_exporter  # noqa: E402
        return sim_dcgm_exporter.main(argv[1:])
    sys.stderr.write('usage: sim_dcgm.py {sync | dcgmi ARGS | nv-hostengine ARGS | dcgm-exporter ARGS}\n')
    return 2


if __name__ == '__main__':
    sys.exit(main())
