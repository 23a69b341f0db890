# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins for ``nvidia-persistenced`` and ``nv-fabricmanager`` on bare simulated nodes.

``gpuops-sim sync`` installs this file (with a shebang) as ``/usr/bin/nvidia-persistenced``
and ``/usr/bin/nv-fabricmanager`` when a package shipped the real file (diverted to
``<path>.distrib``); it dispatches on the name it runs under. Both run under the real
packages' systemd units: Debian's nvidia-persistenced.service is ``Type=forking`` with
``ExecStart=/usr/bin/nvidia-persistenced --user nvpd`` and no PIDFile (systemd takes the
forked child as the main process), so both fork the way the real daemons do: the parent
waits on a pipe until the child has initialised, then exits 0, or 1 with the failure.

Messages: the lines marked REAL below are the real tools' (nvidia-persistenced 535.171.04
run in a Debian 12 container, and the nvidia-persistenced sources; fabric manager lines
from public bug reports); those marked APPROXIMATION have no capture.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import os
import pwd
import signal
import sys
import syslog

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

PERSISTENCED = 'nvidia-persistenced'
FABRICMANAGER = 'nv-fabricmanager'
PD_PID_FILE = 'var/run/nvidia-persistenced/nvidia-persistenced.pid'
FM_PID_FILE = 'var/run/nvidia-fabricmanager/nv-fabricmanager.pid'

# REAL: nvidia-persistenced.c wait_for_init_complete() (stderr of the parent), seen in a Debian 12 container
PD_FAILED = 'nvidia-persistenced failed to initialize. Check syslog for more details.\n'
# REAL: nvidia-persistenced.c setup_devices() when the driver does not answer
PD_NO_DEVICES = ('Failed to query NVIDIA devices. Please ensure that the NVIDIA device files (/dev/nvidia*) '
                 'exist, and that user %d has read and write permissions for those files.')
# REAL: `nvidia-persistenced --version` (535.171.04), exit 0
PD_VERSION = ('\nnvidia-persistenced:  version %s\n\n  The NVIDIA Persistence Daemon.\n\n  A tool for maintaining '
              'persistent driver state, specifically for use by the NVIDIA Linux driver.\n\n  Copyright (C) '
              '2013-2018 NVIDIA Corporation.\n\n')
# REAL: NVIDIA/gpu-operator issue 610 (no NVSwitch the driver can manage), journal of nv-fabricmanager
FM_NO_NVSWITCH = ('request to query NVSwitch device information from NVSwitch driver failed with '
                  'error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]')
# REAL: NVIDIA/gpu-operator issue 544 (fabric manager 530.30.02 on driver 530.41.03)
FM_MISMATCH = ("fabric manager NVIDIA GPU driver interface version %s don't match with driver version %s. "
               "Please update with matching NVIDIA driver package.")
# APPROXIMATION: no capture of fabric manager started without a loaded NVIDIA module
FM_NO_DRIVER = ('failed to open NVIDIA GPU driver interface: the NVIDIA kernel module is not loaded '
                '(gpuops-sim: no emulated module, see gpuops-sim state)')
# REAL: NVIDIA/nvtrust issue 128, journal of a successful start
FM_STARTED = ('Connected to 1 node.',
              'Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink '
              'Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink '
              'fabric.')
# APPROXIMATION: the version line of nv-fabricmanager -v
FM_VERSION = 'Fabric Manager version is : %s\n'


class Usage(Exception):
    pass


def package_version_of(query, path):
    """Upstream version of the package that ships ``path`` (its file list names the undiverted path)."""
    package = sim_driver.dpkg_owner(query, path)
    return sim_driver.upstream(sim_driver.package_version(query, package)) if package else None


def nvswitches(root):
    """PCI addresses of NVSwitches (vendor 0x10de, class 0x0680xx) on the simulated PCI bus."""
    return sim_driver.nvidia_functions(root, ('0x0680',))


# ---------------------------------------------------------------------------
# nvidia-persistenced
# ---------------------------------------------------------------------------

def parse_persistenced(argv):
    opts = {'user': None, 'group': None, 'verbose': False, 'mode': 'Enabled', 'action': 'run'}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, _eq, value = arg.partition('=')
        if arg in ('-v', '--version'):
            opts['action'] = 'version'
        elif arg in ('-h', '--help'):
            opts['action'] = 'help'
        elif arg in ('-V', '--verbose'):
            opts['verbose'] = True
        elif arg == '--persistence-mode':
            opts['mode'] = 'Enabled'
        elif arg == '--no-persistence-mode':
            opts['mode'] = 'Disabled'
        elif name in ('-u', '--user', '-g', '--group', '--nvidia-cfg-path'):
            if not _eq:
                if i + 1 >= len(argv):
                    raise Usage('Option "%s" requires an argument.' % arg)   # APPROXIMATION
                i += 1
                value = argv[i]
            key = {'-u': 'user', '--user': 'user', '-g': 'group', '--group': 'group'}.get(name, 'cfg_path')
            opts[key] = value
        else:
            raise Usage('Unrecognized option: "%s"' % arg)   # APPROXIMATION
        i += 1
    return opts


def set_persistence(mode, log=None, root='/'):
    """Persistence mode of every simulated GPU (the daemon holds the devices open: Enabled)."""
    profile_dir, state_file = nvidia_smi.sim_paths()
    profile = nvidia_smi.Profile(profile_dir)
    state = nvidia_smi.State(state_file, profile).load(lock=True)
    try:
        for gpu in profile.gpus():
            st = state.gpu(gpu.bus_id)
            if st.get('persistence_mode') in ('Enabled', 'Disabled'):
                st['persistence_mode'] = mode
                if log:
                    bus = gpu.bus_id[4:].lower() if len(gpu.bus_id) > 12 else gpu.bus_id.lower()
                    log(syslog.LOG_NOTICE, 'device %s - persistence mode %s.' % (bus, mode.lower()))
        state.save()
    finally:
        state.release()


def persistenced_start(root, opts, log, pid=None):
    """What the daemon does before it reports success: (ok, pid file handle). No fork here (tests call it)."""
    pid = os.getpid() if pid is None else pid
    if opts['verbose']:
        log(syslog.LOG_INFO, 'Verbose syslog connection opened')
    pid_path = sim_driver.under(root, PD_PID_FILE)
    if not os.path.isdir(os.path.dirname(pid_path)):
        os.makedirs(os.path.dirname(pid_path))
    uid = os.getuid()
    if opts.get('user'):
        try:
            entry = pwd.getpwnam(opts['user'])
        except KeyError:
            log(syslog.LOG_ERR, 'Failed to find user %s' % opts['user'])   # APPROXIMATION
            return False, None
        # the real daemon now runs as that user; the stand-in keeps root to update the simulator state
        uid = entry.pw_uid
        if os.geteuid() == 0:
            os.chown(os.path.dirname(pid_path), entry.pw_uid, entry.pw_gid)
    handle = lock_pid_file(pid_path, pid, log)
    if handle is None:
        return False, None
    log(syslog.LOG_NOTICE, 'Started (%d)' % pid)
    if sim_driver.loaded(root) is None:
        log(syslog.LOG_ERR, PD_NO_DEVICES % uid)
        persistenced_stop(root, log, handle, pid, restore=False, verbose=opts['verbose'])
        return False, None
    set_persistence(opts['mode'], log if opts['verbose'] else None, root)
    if opts['verbose']:
        log(syslog.LOG_INFO, 'Local RPC services initialized')
    return True, handle


def persistenced_stop(root, log, handle, pid=None, restore=True, verbose=False):
    """SIGTERM: persistence mode Disabled again, PID file unlocked and removed (as the real shutdown)."""
    if restore:
        set_persistence('Disabled', None, root)
    if handle is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()
        if verbose:
            log(syslog.LOG_INFO, 'PID file unlocked.')
            log(syslog.LOG_INFO, 'PID file closed.')
    path = sim_driver.under(root, PD_PID_FILE)
    if os.path.exists(path):
        os.remove(path)
    log(syslog.LOG_NOTICE, 'Shutdown (%d)' % (os.getpid() if pid is None else pid))


# ---------------------------------------------------------------------------
# nv-fabricmanager
# ---------------------------------------------------------------------------

def parse_fabricmanager(argv):
    opts = {'config': None, 'action': 'run'}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ('-v', '--version'):
            opts['action'] = 'version'
        elif arg in ('-h', '--help'):
            opts['action'] = 'help'
        elif arg in ('-c', '--config') or arg.startswith('--config='):
            if '=' in arg:
                opts['config'] = arg.split('=', 1)[1]
            elif i + 1 < len(argv):
                i += 1
                opts['config'] = argv[i]
            else:
                raise Usage('option %s needs a value' % arg)   # APPROXIMATION
        else:
            raise Usage('unknown option %s' % arg)   # APPROXIMATION
        i += 1
    return opts


def fabricmanager_check(root, query=None):
    """None when fabric manager can start, else the message it fails with."""
    query = query or sim_driver.dpkg_query(root)
    driver = sim_driver.loaded(root)
    if driver is None:
        return FM_NO_DRIVER
    if not nvswitches(root):
        return FM_NO_NVSWITCH
    mine = package_version_of(query, '/usr/bin/nv-fabricmanager')
    if mine is not None and mine != driver['version']:
        return FM_MISMATCH % (mine, driver['version'])
    return None


def lock_pid_file(path, pid, log):
    """Open, lock and write a daemon's PID file; None (logged) when another instance holds it."""
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    handle = open(path, 'a+')
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError) as exc:
        log(syslog.LOG_ERR, 'Failed to lock PID file: %s' % exc.strerror)
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write('%d\n' % pid)
    handle.flush()
    return handle


def fabricmanager_start(root, log, pid=None):
    handle = lock_pid_file(sim_driver.under(root, FM_PID_FILE), os.getpid() if pid is None else pid, log)
    if handle is None:
        return False, None
    for line in FM_STARTED:
        log(syslog.LOG_NOTICE, line)
    return True, handle


def fabricmanager_stop(root, handle):
    if handle is not None:
        handle.close()
    if os.path.exists(sim_driver.under(root, FM_PID_FILE)):
        os.remove(sim_driver.under(root, FM_PID_FILE))


# ---------------------------------------------------------------------------
# Forking (as the real daemons: the parent exits once the child is ready)
# ---------------------------------------------------------------------------

def daemonize(start, stop, failure_text):
    """Fork; the child runs ``start()`` -> (ok, state), reports through a pipe and serves until
    SIGTERM/SIGINT, then ``stop(state)``. Returns the parent's exit status."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child:
        os.close(write_fd)
        answer = os.read(read_fd, 1)
        os.close(read_fd)
        if answer != b'\x01':
            sys.stderr.write(failure_text)
            return 1
        return 0
    os.close(read_fd)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        ok, held = start()
    except Exception:  # pylint: disable=broad-except
        ok, held = False, None
    os.write(write_fd, b'\x01' if ok else b'\x00')
    os.close(write_fd)
    if not ok:
        os._exit(1)

    def on_signal(_signum, _frame):
        stop(held)
        os._exit(0)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while True:
        signal.pause()


def _syslog(ident):
    syslog.openlog(ident, syslog.LOG_PID, syslog.LOG_DAEMON)

    def log(priority, message):
        syslog.syslog(priority, message)
    return log


def main(argv=None):
    argv = sys.argv if argv is None else argv
    prog = os.path.basename(argv[0])
    root = sim_driver.sim_root()
    query = sim_driver.dpkg_query(root)
    if prog.startswith(FABRICMANAGER):
        try:
            opts = parse_fabricmanager(argv[1:])
        except Usage as exc:
            sys.stderr.write('%s\n' % exc)
            return 1
        if opts['action'] != 'run':
            version = package_version_of(query, '/usr/bin/nv-fabricmanager') or 'N/A'
            sys.stdout.write(FM_VERSION % version if opts['action'] == 'version'
                             else 'usage: nv-fabricmanager [-c CONFIG] [-v] (gpuops-sim stand-in)\n')
            return 0
        problem = fabricmanager_check(root, query)
        if problem:
            sys.stderr.write(problem + '\n')
            return 1
        log = _syslog(FABRICMANAGER)

        return daemonize(lambda: fabricmanager_start(root, log), lambda handle: fabricmanager_stop(root, handle),
                         'nv-fabricmanager failed to start (gpuops-sim stand-in)\n')
    try:
        opts = parse_persistenced(argv[1:])
    except Usage as exc:
        sys.stderr.write('%s\n' % exc)
        return 1
    if opts['action'] == 'version':
        sys.stdout.write(PD_VERSION % (package_version_of(query, '/usr/bin/nvidia-persistenced') or 'N/A'))
        return 0
    if opts['action'] == 'help':
        sys.stdout.write('nvidia-persistenced [options] (gpuops-sim stand-in: --user, --group, --verbose, '
                         '--persistence-mode, --no-persistence-mode, --version)\n')
        return 0
    log = _syslog(PERSISTENCED)
    return daemonize(lambda: persistenced_start(root, opts, log),
                     lambda handle: persistenced_stop(root, log, handle, verbose=opts['verbose']), PD_FAILED)


if __name__ == '__main__':
    sys.exit(main())
