# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Install the GPU simulator into a node (a container, or a directory tree).

    python3 simulator/install_node.py --profile simulator/profiles/h100-sxm-8gpu-ib \\
        [--fault nvlink_down:gpu=3] [--fault ib_port_down] [--root /] [--keep-state]

Writes, under ``--root``:

* ``/usr/share/gpuops-sim/lib/``: the simulator's node modules (LIB_MODULES) and packages (LIB_PACKAGES, whole)
* ``/usr/bin/nvidia-smi``: simulator/nvidia_smi/__main__.py with a ``#!/usr/bin/python3`` shebang (it runs the
  nvidia_smi package of the lib directory)
* ``/usr/local/sbin/gpuops-sim``: simulator/admin.py with that shebang (admin tool: reboot, busy/idle, state)
* ``/usr/share/gpuops-sim/profile/``: the profile (capture bundle + profile.yml + sim/),
  with the faults applied and recorded in profile.yml
* ``/usr/share/gpuops-sim/sys``: the profile's sysfs tree; point the modules'
  ``sysfs_root`` option here
* removes ``/var/lib/gpuops-sim/state.json`` (a fresh node) unless ``--keep-state``

A profile with HCAs (``sim/rdma.json``) also gets ``/usr/local/sbin/dcb`` (the dcb stand-in, sim_dcb.py),
``gpuops-sim-rdma.service`` (resets the RDMA state at every boot: sim_rdma.py boot) and
``gpuops-sim-traffic.service`` (traffic on the ACTIVE ports), on bare and replayed nodes alike; the
install runs that boot itself when it changed the node (simulator/README.md, "RDMA state").

``--bare`` installs a node without NVIDIA user space (no ``/usr/bin/nvidia-smi``) whose driver is
emulated: the profile's ``sim/runtime.json`` says ``"driver": "emulated"``, the simulator's modules
go to ``/usr/share/gpuops-sim/lib/``, the files NVIDIA packages ship are diverted (``dpkg-divert
--no-rename --divert <path>.distrib --add <path>``) so that ``gpuops-sim sync`` can put stand-ins
there, a dpkg and an apt hook run that sync, and ``gpuops-sim-driver.service`` runs ``gpuops-sim
sync`` and ``gpuops-sim boot`` at every boot (simulator/README.md, "Bare nodes and driver emulation").

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
import compileall
import json
import os
import shutil
import stat
import subprocess
import sys

try:
    from . import admin
    from . import bundle
    from . import faults
    from . import nvidia_smi
except ImportError:  # run as a script, or from a copy of the directory under another name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import admin  # noqa: E402
    import bundle  # noqa: E402
    import faults  # noqa: E402
    import nvidia_smi  # noqa: E402
try:
    from . import sim_driver
except ImportError:  # a copy of the simulator without the driver emulation: replayed nodes only
    try:
        import sim_driver  # noqa: E402
    except ImportError:
        sim_driver = None
try:
    from . import sim_rdma
except ImportError:  # a copy without the RDMA simulation: no dcb stand-in, no RDMA units
    try:
        import sim_rdma  # noqa: E402
    except ImportError:
        sim_rdma = None
try:
    from . import sim_dcgm
    from . import sim_dcgm_core
except ImportError:  # a copy without the DCGM stand-ins
    try:
        import sim_dcgm  # noqa: E402
        import sim_dcgm_core  # noqa: E402
    except ImportError:
        sim_dcgm = sim_dcgm_core = None

HERE = os.path.dirname(os.path.abspath(__file__))
NVIDIA_SMI = 'usr/bin/nvidia-smi'
ADMIN = 'usr/local/sbin/gpuops-sim'
PROFILE = nvidia_smi.DEFAULT_PROFILE
SYSFS = 'usr/share/gpuops-sim/sys'
STATE = nvidia_smi.DEFAULT_STATE

# The lib directory (every node): the node's modules, and its packages whole; the programs import them from there
LIB = 'usr/share/gpuops-sim/lib'
LIB_MODULES = ('admin.py', 'sim_driver.py', 'sim_dpkg.py', 'sim_daemons.py', 'sim_rdma.py', 'sim_dcb.py',
               'sim_iproute2.py', 'sim_dcgm.py', 'sim_dcgm_core.py', 'sim_dcgmi.py', 'sim_dcgm_exporter.py',
               'sim_nccl.py')
LIB_PACKAGES = ('nvidia_smi',)
NVIDIA_SMI_SOURCE = 'nvidia_smi/__main__.py'  # with a shebang: /usr/bin/nvidia-smi and the stand-in
ADMIN_SOURCE = 'admin.py'                     # with a shebang: /usr/local/sbin/gpuops-sim

# --bare
STANDIN_SOURCES = (('standin-nvidia-smi', NVIDIA_SMI_SOURCE), ('standin-daemon', 'sim_daemons.py'))
DPKG_HOOK = 'etc/dpkg/dpkg.cfg.d/gpuops-sim'
APT_HOOK = 'etc/apt/apt.conf.d/80gpuops-sim'
UNIT_NAME = 'gpuops-sim-driver.service'
UNIT = 'etc/systemd/system/' + UNIT_NAME
UNIT_WANTS = 'etc/systemd/system/sysinit.target.wants/' + UNIT_NAME
ETC_DIR = 'etc/gpuops-sim'
RUN_DIR = 'run/gpuops-sim'
SYNC = 'if [ -x /usr/local/sbin/gpuops-sim ]; then /usr/local/sbin/gpuops-sim sync >/dev/null; fi'
# dpkg runs its post-invoke hook after every run, also between the unpack and the configure runs of an
# apt-get install: the stand-in is in place before nvidia-alternative's trigger links /usr/bin/nvidia-smi
# to it (that trigger only links files that exist), and `dpkg -i` (Ansible apt deb=) is covered too.
DPKG_HOOK_TEXT = ('# gpuops-sim: place or remove the stand-ins after every dpkg run (simulator/README.md)\n'
                  'post-invoke=' + SYNC + '\n')
APT_HOOK_TEXT = ('// gpuops-sim: place or remove the stand-ins after every apt run (simulator/README.md)\n'
                 'DPkg::Post-Invoke { "' + SYNC + '"; };\n')
UNIT_TEXT = '''[Unit]
Description=gpuops-sim: emulated NVIDIA kernel module load (simulator/README.md)
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target shutdown.target nvidia-persistenced.service nvidia-fabricmanager.service
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/gpuops-sim sync
ExecStart=/usr/local/sbin/gpuops-sim boot

[Install]
WantedBy=sysinit.target
'''


# DCGM stand-ins (every node): diverted package files, placed by sim_dcgm.py sync after every dpkg run
DCGM_SYNC = ('if [ -f /usr/share/gpuops-sim/lib/sim_dcgm.py ]; then %s /usr/share/gpuops-sim/lib/sim_dcgm.py sync '
             '>/dev/null; fi')
DCGM_HOOKS = (('etc/dpkg/dpkg.cfg.d/gpuops-sim-dcgm',
               '# gpuops-sim: place or remove the DCGM stand-ins after every dpkg run (simulator/README.md)\n'
               'post-invoke=%s\n'),
              ('etc/apt/apt.conf.d/80gpuops-sim-dcgm',
               '// gpuops-sim: place or remove the DCGM stand-ins after every apt run (simulator/README.md)\n'
               'DPkg::Post-Invoke { "%s"; };\n'))

# RDMA (profiles with sim/rdma.json)
DCB = 'usr/local/sbin/dcb'
RDMA_UNIT_NAME = 'gpuops-sim-rdma.service'
TRAFFIC_UNIT_NAME = 'gpuops-sim-traffic.service'
RDMA_UNITS = (('etc/systemd/system/' + RDMA_UNIT_NAME, 'etc/systemd/system/sysinit.target.wants/' + RDMA_UNIT_NAME),
              ('etc/systemd/system/' + TRAFFIC_UNIT_NAME,
               'etc/systemd/system/multi-user.target.wants/' + TRAFFIC_UNIT_NAME))
# Before the network is configured and before rdma-core's and OFED's module loading, so that a site's unit
# ordered After=network.target (or the rdma units) sees the state of a fresh boot.
RDMA_UNIT_TEXT = '''[Unit]
Description=gpuops-sim: RDMA state of the simulated HCAs after a boot (simulator/README.md)
DefaultDependencies=no
After=local-fs.target gpuops-sim-driver.service
Before=sysinit.target shutdown.target network-pre.target rdma-hw.target rdma-load-modules@infiniband.service
Before=openibd.service gpuops-sim-traffic.service
Wants=network-pre.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%(python)s /usr/share/gpuops-sim/lib/sim_rdma.py boot

[Install]
WantedBy=sysinit.target
'''
TRAFFIC_UNIT_TEXT = '''[Unit]
Description=gpuops-sim: traffic on the simulated HCA ports (simulator/README.md)
After=gpuops-sim-rdma.service

[Service]
Type=simple
ExecStart=%(python)s /usr/share/gpuops-sim/lib/sim_rdma.py traffic
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
'''


class InstallError(Exception):
    """A step of the install failed (a command's exit status and stderr included)."""


def script(python, source=NVIDIA_SMI_SOURCE):
    with open(os.path.join(HERE, source), 'rb') as handle:
        body = handle.read()
    if body.startswith(b'#!'):
        body = body.split(b'\n', 1)[1]
    return ('#!%s\n' % python).encode('utf-8') + body


def _same_tree(tree, path):
    return os.path.isdir(path) and bundle.read_tree(path) == tree


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


def install(profile_dir, root='/', fault_specs=(), python='/usr/bin/python3', keep_state=False, bare=False):
    """Install the simulator; returns the summary dict."""
    if bare and sim_driver is None:
        raise InstallError('--bare needs sim_driver.py and sim_daemons.py beside install_node.py')
    tree = bundle.read_profile(profile_dir)
    applied = []
    for spec in fault_specs:
        name, params = faults.parse_spec(spec)
        faults.FAULTS[name].apply(tree, **params)
        applied.append({'name': name, 'params': params})
    if bare:
        runtime = json.loads(bundle.text(tree, nvidia_smi.RUNTIME_FILE))
        runtime['driver'] = 'emulated'
        bundle.put_text(tree, nvidia_smi.RUNTIME_FILE, json.dumps(runtime, indent=2, sort_keys=True) + '\n')
    sys_tree = dict((rel[len('sys/'):], value) for rel, value in tree.items() if rel.startswith('sys/'))
    rdma = json.loads(bundle.text(tree, sim_rdma.RDMA_FILE)) if sim_rdma is not None and sim_rdma.RDMA_FILE in tree else None
    programs = {'nvidia_smi': script(python, NVIDIA_SMI_SOURCE), 'admin': script(python, ADMIN_SOURCE)}
    paths = {
        'nvidia_smi': os.path.join(root, NVIDIA_SMI),
        'admin': os.path.join(root, ADMIN),
        'profile': os.path.join(root, PROFILE),
        'sysfs_root': os.path.join(root, SYSFS),
        'state': os.path.join(root, STATE),
    }
    changed = False
    if not bare and os.path.lexists(os.path.join(root, UNIT)):
        changed = bool(uninstall_bare(root)['removed'])
    profile_changed = not _same_tree(tree, paths['profile'])
    if profile_changed:
        bundle.write_tree(tree, paths['profile'])
        changed = True
    if profile_changed or not _same_sysfs(sys_tree, paths['sysfs_root'], rdma):
        bundle.write_tree(sys_tree, paths['sysfs_root'])
        changed = True
    changed = _install_lib(root, python, bare) or changed
    for key in ('admin',) if bare else ('nvidia_smi', 'admin'):
        if not _same_file(programs[key], paths[key]) or not os.access(paths[key], os.X_OK):
            _write_exec(programs[key], paths[key])
            changed = True
    if bare:
        del paths['nvidia_smi']
    if sim_driver is not None and sim_dcgm is not None:
        changed = _install_dcgm(root, python) or changed
    if rdma is not None:
        changed = _install_rdma(root, python) or changed
    elif sim_rdma is not None and os.path.lexists(os.path.join(root, RDMA_UNITS[0][0])):
        changed = bool(uninstall_rdma(root)['removed']) or changed
    state_dir = os.path.dirname(paths['state'])
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir)
    if changed and not keep_state and os.path.exists(paths['state']):
        os.remove(paths['state'])
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    summary = {'changed': changed, 'profile_name': meta.get('name'), 'node_class': meta.get('node_class'),
               'faults': [f['name'] for f in meta.get('faults') or []], 'requested_faults': applied}
    summary.update(paths)
    if bare:
        summary.update(_finish_bare(root, changed))
    if sim_driver is not None and sim_dcgm is not None:
        summary.update(_finish_dcgm(root))
    if rdma is not None:
        summary.update(_finish_rdma(root, changed))
    return summary


def _same_sysfs(sys_tree, path, rdma):
    """The installed sysfs tree is the profile's, apart from what changes at run time (counters, ECN, configfs,
    ib_ipoib and its netdevs)."""
    if not os.path.isdir(path):
        return False
    if rdma is None:
        return bundle.read_tree(path) == sys_tree

    def static(tree):
        return dict((rel, value) for rel, value in tree.items() if not sim_rdma.runtime_path(rel, rdma))
    return static(bundle.read_tree(path)) == static(sys_tree)


# ---------------------------------------------------------------------------
# RDMA: dcb stand-in, boot and traffic units
# ---------------------------------------------------------------------------

def _install_rdma(root, python):
    """/usr/local/sbin/dcb and the two units (enabled by their wants links); True when something changed."""
    changed = False
    files = [(DCB, script(python, 'sim_dcb.py'), 0o755)]
    files += [(unit, (text % {'python': python}).encode(), 0o644)
              for (unit, _wants), text in zip(RDMA_UNITS, (RDMA_UNIT_TEXT, TRAFFIC_UNIT_TEXT))]
    for rel, content, mode in files:
        path = os.path.join(root, rel)
        if not _same_file(content, path) or stat.S_IMODE(os.stat(path).st_mode) != mode:
            _write_exec(content, path)
            os.chmod(path, mode)
            changed = True
    for unit, wants in RDMA_UNITS:
        link = os.path.join(root, wants)
        if not os.path.islink(link):
            if not os.path.isdir(os.path.dirname(link)):
                os.makedirs(os.path.dirname(link))
            os.symlink('../' + os.path.basename(unit), link)
            changed = True
    return changed


def _systemd(root):
    return live(root) and os.path.isdir('/run/systemd/system')


def _finish_rdma(root, changed):
    """The state of a boot when the node changed (or never booted), and the traffic source running."""
    booted = None
    if changed or not os.path.isfile(os.path.join(root, sim_rdma.BOOT_FILE)):
        booted = sim_rdma.boot(root)
    if _systemd(root):
        _command(['systemctl', 'daemon-reload'])
        _command(['systemctl', 'restart' if changed else 'start', TRAFFIC_UNIT_NAME])
    return {'dcb': os.path.join(root, DCB), 'rdma_boot': booted,
            'rdma_units': [os.path.join(root, unit) for unit, _wants in RDMA_UNITS]}


def uninstall_rdma(root='/'):
    """Remove the dcb stand-in, the RDMA units and the RDMA run-time files."""
    removed = []
    if _systemd(root) and os.path.lexists(os.path.join(root, RDMA_UNITS[1][0])):
        _command(['systemctl', 'stop', TRAFFIC_UNIT_NAME])
    files = [DCB] + [rel for pair in RDMA_UNITS for rel in reversed(pair)]
    trees = []
    if sim_rdma is not None:
        files += [sim_rdma.FAULTS_FILE, sim_rdma.BOOT_FILE, sim_rdma.DCB_STATE, sim_rdma.DCB_STATE + '.lock', sim_rdma.LOCK]
        trees += [sim_rdma.TMP]
    _remove(root, files, trees, removed)
    if removed and _systemd(root):
        _command(['systemctl', 'daemon-reload'])
    return {'removed': removed}


# ---------------------------------------------------------------------------
# --bare: stand-ins, diversions, hooks, boot unit
# ---------------------------------------------------------------------------

def live(root):
    """Whether to run dpkg-divert and systemctl for real: the node itself, as root, not disabled."""
    return (os.path.abspath(root) == '/' and hasattr(os, 'geteuid') and os.geteuid() == 0
            and os.environ.get('GPUOPS_SIM_NO_DPKG_DIVERT') != '1')


def _command(argv):
    """Run a command; its failure raises InstallError with the exit status and stderr (never swallowed)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    except OSError as exc:
        raise InstallError('%s: %s' % (' '.join(argv), exc))
    if done.returncode != 0:
        raise InstallError('%s failed (exit status %d): %s' % (
            ' '.join(argv), done.returncode, (done.stderr or done.stdout).decode('utf-8', 'replace').strip()))
    return done.stdout.decode('utf-8', 'replace')


def diversion_argv(rel, path_exists_unowned=False):
    """The dpkg-divert command for one stand-in path. A file already there that is not the simulator's
    (a package installed before) is moved aside with --rename instead."""
    return ['dpkg-divert', '--rename' if path_exists_unowned else '--no-rename',
            '--divert', '/' + rel + sim_driver.DISTRIB, '--add', '/' + rel]


def _ours(root, rel):
    """A stand-in the simulator wrote at ``rel``, not a package's file (some packages ship scripts too)."""
    if not sim_driver.is_standin(os.path.join(root, rel)):
        return False
    return not (live(root) and sim_driver.dpkg_owner(sim_driver.dpkg_query('/'), '/' + rel))


def _divert(root, rels=None):
    """Add the diversions; returns [{path, argv, ran}] (ran False when not live: the argv it would run)."""
    done = []
    for rel in rels or [rel for rel, _kind in sim_driver.STANDINS]:
        path = os.path.join(root, rel)
        if _ours(root, rel):
            os.remove(path)
        unowned = os.path.isfile(path) and not os.path.islink(path)
        argv = diversion_argv(rel, unowned)
        entry = {'path': '/' + rel, 'argv': argv, 'ran': False}
        if live(root):
            truename = _command(['dpkg-divert', '--truename', '/' + rel]).strip()
            if truename == '/' + rel + sim_driver.DISTRIB:
                entry['already'] = True
            elif truename != '/' + rel:
                raise InstallError('/%s is already diverted to %s' % (rel, truename))
            else:
                _command(argv)
                entry['ran'] = True
        done.append(entry)
    return done


def _install_lib(root, python, bare):
    """The simulator's node modules and packages under LIB (nvidia-smi, gpuops-sim, the stand-ins, the driver
    emulation); on a bare node also the stand-in templates, the hooks and the boot unit."""
    changed = False
    files = [(os.path.join(LIB, name), _source(name), 0o644) for name in lib_files()]
    if bare:
        if _ours(root, NVIDIA_SMI):       # a replayed install before: no nvidia-smi now
            os.remove(os.path.join(root, NVIDIA_SMI))
            changed = True
        files += [(os.path.join(LIB, name), script(python, source), 0o755) for name, source in STANDIN_SOURCES]
        files += [(DPKG_HOOK, DPKG_HOOK_TEXT.encode(), 0o644), (APT_HOOK, APT_HOOK_TEXT.encode(), 0o644),
                  (UNIT, UNIT_TEXT.encode(), 0o644)]
    for rel, content, mode in files:
        path = os.path.join(root, rel)
        if not _same_file(content, path) or stat.S_IMODE(os.stat(path).st_mode) != mode:
            _write_exec(content, path)
            os.chmod(path, mode)
            changed = True
    if live(root):
        # compiled now, by the node's python: a stand-in run later (dcb, nvidia-smi, gpuops-sim) writes nothing
        # under the simulator's files, so a snapshot of them shows only what a rollout changed
        compileall.compile_dir(os.path.join(root, LIB), quiet=1)
    wants = os.path.join(root, UNIT_WANTS)
    if bare and not os.path.islink(wants):
        if not os.path.isdir(os.path.dirname(wants)):
            os.makedirs(os.path.dirname(wants))
        os.symlink('../' + UNIT_NAME, wants)
        changed = True
    return changed


def lib_files():
    """The files installed under LIB, relative to the simulator directory: LIB_MODULES, LIB_PACKAGES' modules."""
    names = list(LIB_MODULES)
    for package in LIB_PACKAGES:
        names += sorted(os.path.join(package, name) for name in os.listdir(os.path.join(HERE, package))
                        if name.endswith('.py'))
    return names


def _source(name):
    with open(os.path.join(HERE, name), 'rb') as handle:
        return handle.read()


def _finish_bare(root, changed):
    """Diversions, systemd reload, then the stand-ins and a boot as the node would do it."""
    diversions = _divert(root)
    if live(root) and os.path.isdir('/run/systemd/system'):
        _command(['systemctl', 'daemon-reload'])
    env = {'GPUOPS_SIM_ROOT': root}
    sync = admin.run(['sync'], env)
    if sync.rc != 0:
        raise InstallError(sync.err.strip())
    booted = None
    if changed or not os.path.isfile(os.path.join(root, sim_driver.BOOT_JSON)):
        result = admin.run(['boot'], env)
        if result.rc != 0:
            raise InstallError(result.err.strip())
        booted = json.loads(result.out)
    return {'bare': True, 'driver': 'emulated', 'diversions': diversions, 'sync': json.loads(sync.out),
            'boot': booted, 'lib': os.path.join(root, LIB), 'proc_root': os.path.join(root, sim_driver.PROC_ROOT),
            'driver_json': os.path.join(root, sim_driver.DRIVER_JSON),
            'hooks': [os.path.join(root, DPKG_HOOK), os.path.join(root, APT_HOOK)], 'unit': os.path.join(root, UNIT)}


def uninstall_bare(root='/'):
    """Remove the stand-ins, the diversions (a package's file goes back in place), hooks and unit."""
    removed = []
    if sim_driver is None:
        raise InstallError('removing a bare install needs sim_driver.py beside install_node.py')
    for rel, _kind in sim_driver.STANDINS:
        path = os.path.join(root, rel)
        if sim_driver.is_standin(path):
            os.remove(path)
            removed.append(path)
        if live(root) and _command(['dpkg-divert', '--truename', '/' + rel]).strip() == '/' + rel + sim_driver.DISTRIB:
            _command(['dpkg-divert', '--rename', '--remove', '/' + rel])
            removed.append('diversion of /' + rel)
    _remove(root, (DPKG_HOOK, APT_HOOK, UNIT_WANTS, UNIT), (LIB, RUN_DIR, ETC_DIR), removed)
    if removed and live(root) and os.path.isdir('/run/systemd/system'):
        _command(['systemctl', 'daemon-reload'])
    return {'removed': removed}


def _remove(root, files, trees, removed):
    """Remove the ``files`` and the directory ``trees`` (paths under ``root``) that exist; append each to ``removed``."""
    for rels, remove in ((files, os.remove), (trees, shutil.rmtree)):
        for rel in rels:
            path = os.path.join(root, rel)
            if os.path.lexists(path):
                remove(path)
                removed.append(path)


def _install_dcgm(root, python):
    """The DCGM stand-in template and the dpkg/apt hooks that place it; True when something changed."""
    changed = False
    files = [(os.path.join(LIB, sim_dcgm.STANDIN), script(python, 'sim_dcgm.py'), 0o755)]
    files += [(rel, (text % (DCGM_SYNC % python)).encode(), 0o644) for rel, text in DCGM_HOOKS]
    for rel, content, mode in files:
        path = os.path.join(root, rel)
        if not _same_file(content, path) or stat.S_IMODE(os.stat(path).st_mode) != mode:
            _write_exec(content, path)
            os.chmod(path, mode)
            changed = True
    return changed


def _finish_dcgm(root):
    """Divert the DCGM packages' files and place the stand-ins where a package shipped one."""
    diversions = _divert(root, sim_dcgm.STANDINS)
    try:
        placed = sim_dcgm.sync(root)
    except (sim_driver.DriverError, OSError) as exc:
        raise InstallError('DCGM stand-ins: %s' % exc)
    return {'dcgm_diversions': diversions, 'dcgm_sync': placed,
            'dcgm_hooks': [os.path.join(root, rel) for rel, _text in DCGM_HOOKS]}


def uninstall_dcgm(root='/'):
    """Remove the DCGM stand-ins, their diversions (a package's file goes back), hooks and state."""
    removed = []
    for rel in sim_dcgm.STANDINS:
        path = os.path.join(root, rel)
        if sim_driver.is_standin(path):
            os.remove(path)
            removed.append(path)
        if live(root) and _command(['dpkg-divert', '--truename', '/' + rel]).strip() == '/' + rel + sim_driver.DISTRIB:
            _command(['dpkg-divert', '--rename', '--remove', '/' + rel])
            removed.append('diversion of /' + rel)
    files = [rel for rel, _text in DCGM_HOOKS]
    files += [sim_dcgm_core.STATE_FILE, sim_dcgm_core.STATE_FILE + '.lock', sim_dcgm_core.RUNTIME_FAULTS_FILE]
    _remove(root, files, (), removed)
    return {'removed': removed}


def uninstall(root='/'):
    removed = uninstall_dcgm(root)['removed'] if sim_driver is not None and sim_dcgm is not None else []
    removed += uninstall_bare(root)['removed'] if os.path.lexists(os.path.join(root, UNIT)) else []
    removed += uninstall_rdma(root)['removed']
    _remove(root, (NVIDIA_SMI, ADMIN, STATE, STATE + '.lock'), (PROFILE, SYSFS, LIB), removed)
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
    parser.add_argument('--bare', action='store_true',
                        help='no NVIDIA user space: stand-ins diverted under the real packages, emulated driver')
    args = parser.parse_args(argv)
    if args.uninstall:
        try:
            print(json.dumps(uninstall(args.root), sort_keys=True))
        except InstallError as exc:
            print('install_node: %s' % exc, file=sys.stderr)
            return 1
        return 0
    if not args.profile:
        parser.error('--profile is required')
    profile = args.profile
    if not os.path.isdir(profile) and os.path.isdir(os.path.join(HERE, 'profiles', profile)):
        profile = os.path.join(HERE, 'profiles', profile)
    if not os.path.isfile(os.path.join(profile, 'profile.yml')):  # committed or unpacked profile
        parser.error('%s is not a simulator profile (no profile.yml)' % profile)
    try:
        summary = install(profile, args.root, args.fault, args.python, args.keep_state, args.bare)
    except (faults.FaultError, InstallError) as exc:
        print('install_node: %s' % exc, file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
