# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RDMA state of the simulated HCAs: what a real node loses at reboot, reset at every simulated boot.

``boot(root)`` (run by ``gpuops-sim-rdma.service`` at every boot, by ``install_node.py`` and by
``gpuops-sim reboot``) puts back, from the installed profile (``sim/rdma.json`` and its ``sys/``):

* the port counters (``counters/``, ``hw_counters/``) of every HCA port;
* the mlx5 ECN (DCQCN) attributes of every Ethernet netdev (``class/net/<netdev>/ecn/...``);
* the RDMA CM configfs tree ``kernel/config/rdma_cm/<hca>/ports/<n>/`` of every Ethernet-link-layer HCA;
* the DCB state the ``dcb`` stand-in answers from (``/run/gpuops-sim/dcb.json``: PFC off, APP table empty);
* ``module/ib_ipoib`` and the IPoIB netdevs of the InfiniBand ports, when ib_ipoib loads on this boot
  (``ipoib_decision``: rdma-core, OFED's openibd, modules-load.d, modprobe.d; simulator/README.md).

``traffic`` (``gpuops-sim-traffic.service``) adds packets to every ACTIVE port once a second, and
retransmissions where the ``roce_retrans_high`` fault is armed (at install time by faults.py, at run
time by ``gpuops-sim fault roce_retrans_high``). Paths are under ``GPUOPS_SIM_ROOT`` (default ``/``).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import contextlib
import fcntl
import glob
import json
import os
import re
import shutil
import sys
import time

try:
    from . import sim_driver
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_driver.py')):
            sys.path.insert(0, _lib)
            break
    import sim_driver  # noqa: E402

PROFILE = 'usr/share/gpuops-sim/profile'
SYSFS = 'usr/share/gpuops-sim/sys'
TMP = 'usr/share/gpuops-sim/tmp'            # same file system as SYSFS: counters are replaced atomically
RDMA_FILE = 'sim/rdma.json'                  # in the profile
RUN_DIR = 'run/gpuops-sim'
BOOT_FILE = RUN_DIR + '/rdma.json'           # the last boot's decisions
DCB_STATE = RUN_DIR + '/dcb.json'            # the dcb stand-in's state (sim_dcb.py)
LOCK = RUN_DIR + '/rdma.lock'
FAULTS_FILE = 'var/lib/gpuops-sim/rdma-faults.json'   # faults armed at run time (survive reboots)
CONFIGFS_RDMA_CM = 'kernel/config/rdma_cm'
IPOIB_MODULE = 'module/ib_ipoib'

ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32
# netdev flags of an interface the node's network configuration brought up: IFF_UP | IFF_BROADCAST |
# IFF_MULTICAST (what sysfs prints for an up Ethernet or IPoIB interface; operstate then follows the link)
NETDEV_FLAGS_UP = '0x1003'

# Defaults after a reboot (sources in simulator/README.md, "RDMA state"):
# ECN/DCQCN per priority: NVIDIA's DCQCN parameter table (DOCA/MLNX_OFED "DCQCN CC Parameters": Enable per
# priority, NVConfig ROCE_CC_PRIO_MASK default 0xff = every priority); CNP DSCP 48 and 802.1p priority 6,
# minimum time between CNPs 4 us (NVConfig CNP_DSCP_P1, CNP_802P_PRIO_P1, MIN_TIME_BETWEEN_CNPS_P1 defaults).
ECN_ENABLE_DEFAULT = '1'
ECN_NP_DEFAULTS = (('cnp_dscp', '48'), ('cnp_802p_prio', '6'), ('min_time_between_cnps', '4'))
# RDMA CM (drivers/infiniband/core/cma.c, cma_configfs.c): ToS 0, the preferred RoCE GID type "RoCE v2"
RDMA_CM_DEFAULTS = (('default_roce_tos', '0'), ('default_roce_mode', 'RoCE v2'))
# mlx5 DCB (en_dcbnl.c, port_buffer.h): 8 PFC-capable priorities, PFC off, cable length 7 m as the delay,
# no MACsec bypass; the APP table is empty (trust PCP, the NVConfig QOS_TRUST_STATE default)
PFC_DEFAULTS = {'pfc_cap': 8, 'pfc_en': 0, 'delay': 7, 'mbc': False}

# Traffic source (per port in state ACTIVE, per tick of TICK_S seconds)
TICK_S = 1.0
PACKETS_PER_GBPS = 250            # packets per tick and Gb/s of the port's rate (100000 at 400 Gb/s)
WORDS_PER_PACKET = 1024           # 4096-byte packets; port_*_data count 4-byte words
PACKETS_PER_WRITE = 4             # one RDMA write request received per 4 packets (16 KiB writes)
RETRANS_PER_PACKETS = 100         # roce_retrans_high: each retransmission counter grows by 1% of the packets
RETRANS_COUNTERS = ('roce_adp_retrans', 'local_ack_timeout_err', 'packet_seq_err', 'out_of_sequence')
TRAFFIC_COUNTERS = (('counters/port_xmit_packets', 1), ('counters/unicast_xmit_packets', 1),
                    ('counters/port_rcv_packets', 1), ('counters/unicast_rcv_packets', 1),
                    ('counters/port_xmit_data', WORDS_PER_PACKET), ('counters/port_rcv_data', WORDS_PER_PACKET))
RUNTIME_FAULTS = ('roce_retrans_high',)

# ib_ipoib (simulator/README.md, "IPoIB"): PCI drivers rdma-core's 75-rdma-description.rules mark
# ID_RDMA_INFINIBAND (which starts rdma-load-modules@infiniband.service)
INFINIBAND_DRIVERS = ('ib_mthca', 'mlx4_core', 'mlx5_core', 'ib_qib')
MODPROBE_DIRS = ('etc/modprobe.d', 'run/modprobe.d', 'usr/local/lib/modprobe.d', 'usr/lib/modprobe.d',
                 'lib/modprobe.d')
MODULES_LOAD_DIRS = ('etc/modules-load.d', 'run/modules-load.d', 'usr/local/lib/modules-load.d',
                     'usr/lib/modules-load.d', 'lib/modules-load.d')
UNIT_DIRS = ('etc/systemd/system', 'run/systemd/system')


class RdmaError(Exception):
    """Something asked of the RDMA simulation that it cannot do (reported, never swallowed)."""


under = sim_driver.under


def paths(root):
    return {'profile': under(root, os.environ.get('GPUOPS_SIM_PROFILE') or PROFILE), 'sysfs': under(root, SYSFS)}


def load_rdma(profile_dir):
    """The profile's sim/rdma.json (``{'hcas': [...], 'faults': {...}}``), or None for a profile without HCAs."""
    path = os.path.join(profile_dir, RDMA_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def read_text(path, default=None):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return default


def write_text(path, text):
    """Write a sysfs-like file in place (created with its directories)."""
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'w') as handle:
        handle.write(text)


def replace_text(root, path, text):
    """Replace a file atomically (a reader never sees it empty), through TMP on the same file system."""
    tmp_dir = under(root, TMP)
    if not os.path.isdir(tmp_dir):
        os.makedirs(tmp_dir)
    tmp = os.path.join(tmp_dir, '%d.%s' % (os.getpid(), os.path.basename(path)))
    with open(tmp, 'w') as handle:
        handle.write(text)
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(root):
    """The RDMA state lock (boot and the traffic source never interleave their writes)."""
    path = under(root, LOCK)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'a') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def netdev_rel(hca, name):
    """The netdev's directory under its PCI function (class/net/<name> links there)."""
    return 'bus/pci/devices/%s/net/%s' % (hca['pci'], name)


def runtime_path(rel, rdma):
    """A path of the sysfs tree (relative to its root) that boot or the traffic source rewrites: counters,
    ECN attributes, configfs, loaded modules and IPoIB netdevs."""
    ipoib = set(h['ipoib']['name'] for h in rdma.get('hcas') or [] if h.get('ipoib'))
    parts = rel.split('/')
    if parts[0] in ('kernel', 'module'):
        return True
    if parts[:2] == ['class', 'infiniband'] and len(parts) > 6 and parts[3] == 'ports':
        return parts[5] in ('counters', 'hw_counters')
    if parts[:2] == ['class', 'net'] and len(parts) > 2:
        return parts[2] in ipoib
    if parts[:3] == ['bus', 'pci', 'devices'] and len(parts) > 5 and parts[4] == 'net':
        return parts[5] in ipoib or (len(parts) > 6 and parts[6] == 'ecn')
    return False


def ethernet(hca):
    return hca.get('link_layer') == 'Ethernet'


def port_rel(hca, port):
    return 'class/infiniband/%s/ports/%s' % (hca['name'], port)


# ---------------------------------------------------------------------------
# ib_ipoib: does it load on this boot?
# ---------------------------------------------------------------------------

def _conf_files(root, dirs, suffix='.conf'):
    """Config files as systemd and kmod read them: one per base name, the first directory wins, sorted."""
    chosen = {}
    for directory in dirs:
        for path in glob.glob(under(root, directory + '/*' + suffix)):
            chosen.setdefault(os.path.basename(path), path)
    return [chosen[name] for name in sorted(chosen)]


def _lines(path):
    text = read_text(path, '') or ''
    return [line.strip() for line in text.replace('\\\n', ' ').splitlines()]


def _short(root, path):
    return '/' + os.path.relpath(path, root) if os.path.abspath(root) != '/' else path


def modprobe_rules(root, module):
    """``{'blacklist': where or None, 'install': (where, command) or None}`` for ``module`` in modprobe.d."""
    found = {'blacklist': None, 'install': None}
    for path in _conf_files(root, MODPROBE_DIRS):
        for line in _lines(path):
            words = line.split()
            if len(words) >= 2 and words[0] == 'blacklist' and words[1] == module and not found['blacklist']:
                found['blacklist'] = '%s: %s' % (_short(root, path), line)
            elif len(words) >= 3 and words[0] == 'install' and words[1] == module and not found['install']:
                found['install'] = ('%s: %s' % (_short(root, path), line), words[2:])
    return found


def install_blocks(command):
    """An ``install`` command that never loads the module (``/bin/false``, ``/bin/true``, ...)."""
    return bool(command) and os.path.basename(command[0]) in ('false', 'true') and len(command) == 1


def _listed(path, module):
    return any(line.split('#')[0].split(';')[0].strip() == module for line in _lines(path))


def _masked(root, unit):
    for directory in UNIT_DIRS:
        path = under(root, os.path.join(directory, unit))
        if os.path.islink(path) and os.readlink(path) == '/dev/null':
            return True
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            return True
    return False


def _shell_value(path, key):
    value = None
    for line in _lines(path):
        match = re.match(r'^(?:export\s+)?%s=(["\']?)([^"\'#\s]*)\1\s*(#.*)?$' % key, line)
        if match:
            value = match.group(2)
    return value


def ipoib_decision(root='/', query=None, rdma=None):
    """Whether ib_ipoib loads on this boot: ``{loaded, loaded_by, considered: [{loader, result}]}``.

    Loaders (each as a real node runs it): rdma-core's ``rdma-load-modules@infiniband.service`` (udev starts it
    for an InfiniBand-capable PCI driver; systemd-modules-load applies the modprobe.d blacklist), OFED's
    ``openibd`` (``IPOIB_LOAD=yes`` in /etc/infiniband/openib.conf; ``modprobe ib_ipoib`` ignores a blacklist)
    and ``systemd-modules-load.service`` (modules-load.d; applies the blacklist). An ``install ib_ipoib
    /bin/false`` (or ``/bin/true``) in modprobe.d keeps every loader from loading it.
    """
    query = query or sim_driver.dpkg_query(root)
    packages = sim_driver.installed_packages(query)
    rules = modprobe_rules(root, 'ib_ipoib')
    drivers = set()
    for hca in (rdma or {}).get('hcas') or []:
        uevent = read_text(under(root, os.path.join(SYSFS, 'bus/pci/devices', hca['pci'], 'uevent')), '')
        drivers.update(re.findall(r'^DRIVER=(\S+)$', uevent, re.M))
    loaders = []
    rdma_core = 'rdma-core' in packages
    infiniband_conf = under(root, 'etc/rdma/modules/infiniband.conf')
    if not rdma_core:
        loaders.append(('rdma-core', False, 'rdma-core is not installed'))
    elif not drivers & set(INFINIBAND_DRIVERS):
        loaders.append(('rdma-load-modules@infiniband.service', False, 'no InfiniBand-capable HCA driver'))
    elif _masked(root, 'rdma-load-modules@infiniband.service') or _masked(root, 'rdma-load-modules@.service'):
        loaders.append(('rdma-load-modules@infiniband.service', False, 'the unit is masked'))
    elif not _listed(infiniband_conf, 'ib_ipoib'):
        loaders.append(('rdma-load-modules@infiniband.service', False,
                        '/etc/rdma/modules/infiniband.conf does not list ib_ipoib'))
    else:
        loaders.append(('rdma-load-modules@infiniband.service', True, '/etc/rdma/modules/infiniband.conf'))
    openib = under(root, 'etc/infiniband/openib.conf')
    if rdma_core and os.path.isfile(openib):
        value = _shell_value(openib, 'IPOIB_LOAD')
        if _masked(root, 'openibd.service'):
            loaders.append(('openibd', False, 'openibd.service is masked'))
        else:
            loaders.append(('openibd', None if value == 'yes' else False,
                            '/etc/infiniband/openib.conf: IPOIB_LOAD=%s' % (value or '(unset)')))
    listed = [p for p in _conf_files(root, MODULES_LOAD_DIRS) if _listed(p, 'ib_ipoib')]
    if listed and not _masked(root, 'systemd-modules-load.service'):
        loaders.append(('systemd-modules-load.service', True, _short(root, listed[0])))
    considered, loaded_by = [], None
    for loader, wants, why in loaders:
        result = 'not loaded: %s' % why
        if wants is not False:
            if rules['install'] and install_blocks(rules['install'][1]):
                result = 'blocked by %s' % rules['install'][0]
            elif wants is True and rules['blacklist']:
                result = 'blocked by %s (systemd-modules-load applies the blacklist)' % rules['blacklist']
            else:
                result = 'loaded (%s)' % why
                loaded_by = loaded_by or loader
        considered.append({'loader': loader, 'result': result})
    return {'loaded': loaded_by is not None, 'loaded_by': loaded_by, 'considered': considered}


# ---------------------------------------------------------------------------
# Boot
# ---------------------------------------------------------------------------

def _copy_from_profile(root, profile_sys, sysfs, rel):
    """Files under ``rel`` back to the profile's values (files the profile lacks are removed)."""
    source, target = os.path.join(profile_sys, rel), os.path.join(sysfs, rel)
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    if os.path.isdir(source):
        shutil.copytree(source, target, symlinks=True)


def _ipoib_files(hca, port, state):
    """An IPoIB netdev's attributes: administratively up (a node whose network configuration brings its IPoIB
    interfaces up), operstate up while its port is ACTIVE."""
    return {'type': '%d\n' % ARPHRD_INFINIBAND, 'operstate': 'up\n' if state == '4: ACTIVE' else 'down\n',
            'flags': NETDEV_FLAGS_UP + '\n', 'address': hca['ipoib']['address'] + '\n',
            'dev_port': '%d\n' % (int(port) - 1)}


def boot(root='/', query=None):
    """Reset the RDMA state of a boot; returns (and writes to /run/gpuops-sim/rdma.json) what it did."""
    where = paths(root)
    rdma = load_rdma(where['profile'])
    if rdma is None:
        return {'hcas': [], 'skipped': 'the profile has no sim/rdma.json'}
    sysfs, profile_sys = where['sysfs'], os.path.join(where['profile'], 'sys')
    if not os.path.isdir(os.path.join(sysfs, 'class', 'infiniband')):
        return {'hcas': [], 'skipped': 'no simulated sysfs tree at %s' % sysfs}
    decision = ipoib_decision(root, query, rdma)
    done = {'booted_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'hcas': [h['name'] for h in
            rdma['hcas']], 'ipoib': decision, 'ipoib_netdevs': [], 'ecn': [], 'rdma_cm': [], 'dcb': []}
    with locked(root):
        for hca in rdma['hcas']:
            for port in hca['ports']:
                for group in ('counters', 'hw_counters'):
                    _copy_from_profile(root, profile_sys, sysfs, '%s/%s' % (port_rel(hca, port), group))
            if ethernet(hca) and hca.get('netdev'):
                _copy_from_profile(root, profile_sys, sysfs, netdev_rel(hca, hca['netdev']) + '/ecn')
                done['ecn'].append(hca['netdev'])
        _copy_from_profile(root, profile_sys, sysfs, CONFIGFS_RDMA_CM)
        configfs = os.path.join(sysfs, CONFIGFS_RDMA_CM)
        if not os.path.isdir(configfs):
            os.makedirs(configfs)
        done['rdma_cm'] = sorted(os.listdir(configfs))
        module = os.path.join(sysfs, IPOIB_MODULE)
        if os.path.isdir(module):
            shutil.rmtree(module)
        if not os.path.isdir(os.path.dirname(module)):
            # a kernel always has /sys/module: without it nothing could tell that ib_ipoib is not loaded
            os.makedirs(os.path.dirname(module))
        if decision['loaded']:
            write_text(os.path.join(module, 'initstate'), 'live\n')
        for hca in rdma['hcas']:
            if not hca.get('ipoib'):
                continue
            name = hca['ipoib']['name']
            link, target = os.path.join(sysfs, 'class/net', name), os.path.join(sysfs, netdev_rel(hca, name))
            for path in (link, target):
                if os.path.islink(path) or os.path.isfile(path):
                    os.remove(path)
                elif os.path.isdir(path):
                    shutil.rmtree(path)
            if decision['loaded']:
                port = hca['ports'][0]
                state = (read_text(os.path.join(sysfs, port_rel(hca, port), 'state'), '') or '').strip()
                for attr, value in sorted(_ipoib_files(hca, port, state).items()):
                    write_text(os.path.join(target, attr), value)
                os.symlink('../../../%s' % hca['pci'], os.path.join(target, 'device'))
                if not os.path.isdir(os.path.dirname(link)):
                    os.makedirs(os.path.dirname(link))
                os.symlink('../../%s' % netdev_rel(hca, name), link)
                done['ipoib_netdevs'].append(name)
        dcb = dict((hca['netdev'], dict(PFC_DEFAULTS, app=[])) for hca in rdma['hcas']
                   if ethernet(hca) and hca.get('netdev'))
        sim_driver.write_file(under(root, DCB_STATE), json.dumps(dcb, indent=2, sort_keys=True) + '\n')
        done['dcb'] = sorted(dcb)
    sim_driver.write_file(under(root, BOOT_FILE), json.dumps(done, indent=2, sort_keys=True) + '\n')
    return done


# ---------------------------------------------------------------------------
# Traffic and the roce_retrans_high fault
# ---------------------------------------------------------------------------

def runtime_faults(root):
    data = read_text(under(root, FAULTS_FILE))
    return json.loads(data) if data else {}


def armed(root, rdma):
    """{fault: sorted HCA names}: armed in the profile (install time) or at run time."""
    merged = {}
    for source in ((rdma or {}).get('faults') or {}, runtime_faults(root)):
        for name, hcas in source.items():
            merged[name] = sorted(set(merged.get(name, [])) | set(hcas))
    return merged


def rate_gbps(text):
    match = re.match(r'^\s*(\d+(?:\.\d+)?)\s*Gb/sec', text or '')
    return float(match.group(1)) if match else 0.0


def tick(root='/', rdma=None):
    """One second of traffic: {hca: packets} for the ports that carried traffic."""
    where = paths(root)
    rdma = rdma if rdma is not None else load_rdma(where['profile'])
    if not rdma:
        return {}
    faults = armed(root, rdma)
    retrans = set(faults.get('roce_retrans_high', []))
    sent = {}
    with locked(root):
        for hca in rdma['hcas']:
            for port in hca['ports']:
                base = os.path.join(where['sysfs'], port_rel(hca, port))
                if (read_text(os.path.join(base, 'state'), '') or '').strip() != '4: ACTIVE':
                    continue
                packets = int(rate_gbps(read_text(os.path.join(base, 'rate'))) * PACKETS_PER_GBPS)
                if not packets:
                    continue
                grow = list(TRAFFIC_COUNTERS) + [('hw_counters/rx_write_requests', 1.0 / PACKETS_PER_WRITE)]
                if hca['name'] in retrans:
                    grow += [('hw_counters/' + name, 1.0 / RETRANS_PER_PACKETS) for name in RETRANS_COUNTERS]
                for rel, factor in grow:
                    path = os.path.join(base, rel)
                    value = read_text(path)
                    if value is None or not value.strip().isdigit():
                        continue
                    replace_text(root, path, '%d\n' % (int(value) + int(packets * factor)))
                sent[hca['name']] = packets
    return sent


def serve(root='/', ticks=None):
    """The traffic source: a tick every TICK_S seconds (forever, or ``ticks`` times)."""
    count = 0
    while ticks is None or count < ticks:
        started = time.time()
        tick(root)
        count += 1
        time.sleep(max(0.0, TICK_S - (time.time() - started)))


def default_roce_hca(rdma):
    """The port roce_retrans_high hits by default: the first Ethernet-link-layer compute HCA, or None."""
    compute = [h for h in rdma.get('hcas') or [] if ethernet(h) and h.get('role') == 'compute']
    return compute[0] if compute else None


def resolve_roce_hca(rdma, nic=None):
    if not rdma:
        raise RdmaError('the profile has no RDMA devices (no sim/rdma.json)')
    if nic is None:
        hca = default_roce_hca(rdma)
        if hca is None:
            raise RdmaError('the profile has no Ethernet (RoCE) compute NIC; name an Ethernet NIC with nic=')
        return hca
    for hca in rdma['hcas']:
        if hca['name'] == nic:
            if not ethernet(hca):
                raise RdmaError('%s is not an Ethernet (RoCE) HCA (link layer %s)' % (nic, hca.get('link_layer')))
            return hca
    raise RdmaError('no HCA %s in the profile (known: %s)' % (nic, ', '.join(h['name'] for h in rdma['hcas'])))


def arm(root, name, nic=None):
    if name not in RUNTIME_FAULTS:
        raise RdmaError('%s cannot be armed at run time (known: %s)' % (name, ', '.join(RUNTIME_FAULTS)))
    hca = resolve_roce_hca(load_rdma(paths(root)['profile']), nic)
    faults = runtime_faults(root)
    faults[name] = sorted(set(faults.get(name, [])) | {hca['name']})
    sim_driver.write_file(under(root, FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return hca['name']


def clear(root, name=None):
    faults = runtime_faults(root)
    if name is not None and name not in RUNTIME_FAULTS:
        raise RdmaError('unknown run-time fault %s (known: %s)' % (name, ', '.join(RUNTIME_FAULTS)))
    faults = {} if name is None else dict((k, v) for k, v in faults.items() if k != name)
    sim_driver.write_file(under(root, FAULTS_FILE), json.dumps(faults, indent=2, sort_keys=True) + '\n')
    return faults


# ---------------------------------------------------------------------------
# gpuops-sim fault ... / command line
# ---------------------------------------------------------------------------

FAULT_USAGE = ('usage: gpuops-sim fault [roce_retrans_high [nic=HCA] | clear [roce_retrans_high]]\n'
               '  (no argument)               armed faults (JSON): from the profile and armed at run time\n'
               '  roce_retrans_high [nic=X]   the RoCE port X (default the first Ethernet compute NIC) retransmits\n'
               '                              1% of the packets it sends from now on (survives reboots)\n'
               '  clear [NAME]                disarm the faults armed at run time\n')


def admin_fault(argv, root=None):
    """``gpuops-sim fault ...``: (rc, out, err)."""
    root = root or sim_driver.sim_root()
    try:
        if not argv:
            rdma = load_rdma(paths(root)['profile'])
            return 0, json.dumps({'profile': (rdma or {}).get('faults') or {}, 'runtime': runtime_faults(root)},
                                 indent=2, sort_keys=True) + '\n', ''
        if argv[0] in ('-h', '--help'):
            return 0, FAULT_USAGE, ''
        if argv[0] == 'clear' and len(argv) <= 2:
            clear(root, argv[1] if len(argv) > 1 else None)
            return 0, 'gpuops-sim: run-time faults cleared\n', ''
        params = dict(arg.split('=', 1) for arg in argv[1:] if '=' in arg)
        if len(params) != len(argv) - 1 or set(params) - {'nic'}:
            return 2, '', FAULT_USAGE
        hca = arm(root, argv[0], params.get('nic'))
        return 0, 'gpuops-sim: fault %s armed on %s\n' % (argv[0], hca), ''
    except (RdmaError, OSError, ValueError) as exc:
        return 1, '', 'gpuops-sim: fault: %s\n' % exc


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    root = sim_driver.sim_root()
    if argv[:1] == ['boot']:
        print(json.dumps(boot(root), sort_keys=True))
        return 0
    if argv[:1] == ['traffic']:
        ticks = int(argv[2]) if argv[1:2] == ['--ticks'] and len(argv) > 2 else None
        serve(root, ticks)
        return 0
    if argv[:1] == ['fault']:
        rc, out, err = admin_fault(argv[1:], root)
        sys.stdout.write(out)
        sys.stderr.write(err)
        return rc
    sys.stderr.write('usage: sim_rdma.py {boot | traffic [--ticks N] | fault ...}\n')
    return 2


if __name__ == '__main__':
    sys.exit(main())
