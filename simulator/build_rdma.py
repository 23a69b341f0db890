# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The RDMA part of the profile derivation (simulator/build_profiles/ calls ``add_rdma``).

For every HCA of a profile: the port counters (``counters/``, ``hw_counters/``) from the real mlx5
capture, the Ethernet netdev of an Ethernet-link-layer HCA (``bus/pci/devices/<slot>/net/<netdev>``
with ``type``, ``operstate``, ``address``, ``dev_port``, the mlx5 ECN tree, and the links
``class/net/<netdev>`` and ``<netdev>/device``), and ``sim/rdma.json``: the HCAs as sim_rdma.py sees
them (PCI slot, link layer, ports, netdev, and the IPoIB netdev an InfiniBand port gets while ib_ipoib
is loaded, which only exists at run time). Every value comes from a capture or a rule recorded in
profile.yml (``derivations`` / ``synthetic``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import sys

try:
    from . import bundle
    from . import sim_dcb
    from . import sim_rdma
except ImportError:  # run as a script, or from a copy of the directory under another name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bundle  # noqa: E402
    import sim_dcb  # noqa: E402
    import sim_rdma  # noqa: E402

REAL = 'tests/fixtures/real'
SRC_MLX5_COUNTERS = REAL + '/ib-sysfs/procfs-fixture-mlx5_0-connectx4-ib-counters-hw_counters.ttar'
SRC_IBDEV2NETDEV = REAL + '/ib/ibdev2netdev-cx7-roce-4port-PASTE-ARTIFACT.txt'
SRC_A100_IBSTATUS = REAL + '/ib/ibstatus-a100-9port-hdr-gpud.txt'

# Counters that count traffic: scaled by the port's rate over the captured port's (25 Gb/s); the others
# (errors, retransmissions, events) are kept as captured.
TRAFFIC = ('port_xmit_data', 'port_rcv_data', 'port_xmit_packets', 'port_rcv_packets', 'unicast_xmit_packets',
           'unicast_rcv_packets', 'multicast_xmit_packets', 'multicast_rcv_packets', 'rx_read_requests',
           'rx_write_requests', 'rx_atomic_requests')
# The first four bytes of an IPoIB hardware address (flags and queue pair number): synthetic
IPOIB_QPN = '00:00:10:29'
# Synthetic GUIDs: the captured ConnectX-7 node_guid's first five bytes (4821:0b03:00), then the PCI bus,
# device and function + 1
SYNTHETIC_GUID_PREFIX = (0x48, 0x21, 0x0b, 0x03, 0x00)

DERIVATION_COUNTERS = (
    'sysfs port counters: every HCA port has the counters/ and hw_counters/ files of the captured mlx5 port '
    '(prometheus/procfs fixture, ConnectX-4 at "25 Gb/sec (1X EDR)"); traffic counters (%s) are the captured '
    'value * port rate / 25 Gb/s rounded down (x16 at 400 Gb/s, x8 at 200 Gb/s, x1.6 at 40 Gb/s), the others '
    '(symbol_error, port_rcv_errors, retransmissions, CQE errors, ...) are kept as captured' % ', '.join(TRAFFIC))
DERIVATION_NETDEV = (
    'sysfs netdevs: an Ethernet-link-layer HCA has its Ethernet netdev under bus/pci/devices/<slot>/net/<netdev> '
    '(type 1, flags 0x1003 (up, as a configured node has it), operstate up when its port is ACTIVE, address, '
    'dev_port 0, links class/net/<netdev> and <netdev>/device) with the mlx5 ECN attributes at their defaults (ecn/roce_rp/enable/0-7 and '
    'ecn/roce_np/enable/0-7 "1", roce_np/cnp_dscp 48, cnp_802p_prio 6, min_time_between_cnps 4; '
    'simulator/README.md "RDMA state"); an InfiniBand HCA has no netdev in the profile: its IPoIB netdev '
    '(sim/rdma.json ipoib, type 32) exists only while ib_ipoib is loaded (sim_rdma.py boot)')
DERIVATION_NAMES = (
    'netdev names as udev names them on Debian 12 (systemd 252 net_id, path policy, bus and slot in decimal): '
    'Ethernet enp<bus>s<slot>[f<function>]np<n> (np<n> from the mlx5 phys_port_name p<n>; f<function> when the '
    'card has two functions), IPoIB ibp<bus>s<slot>[f<function>] (ibp24s0 for 0000:18:00.0); the RoCE NIC keeps '
    'its captured name')
DERIVATION_RDMA_CM = (
    'configfs: kernel/config/rdma_cm/<hca>/ports/1/default_roce_tos "0" and default_roce_mode "RoCE v2" for every '
    'Ethernet-link-layer HCA, the directory a real node gets from `mkdir /sys/kernel/config/rdma_cm/<hca>` with '
    'the kernel\'s defaults (drivers/infiniband/core/cma.c, cma_configfs.c); the simulated node has it from boot on')
# the dcb outputs a capture bundle holds per RoCE netdev (plugins/module_utils/topology/sources.py DCB_QUERIES)
DCB_PFC_FILE = 'dcb-pfc-%s.txt'
DCB_APP_FILE = 'dcb-app-dscp-prio-%s.txt'
DERIVATION_DCB = (
    'dcb-pfc-<netdev>.txt and dcb-app-dscp-prio-<netdev>.txt of each Ethernet netdev: what `dcb pfc show dev '
    '<netdev>` and `dcb -N app show dev <netdev> dscp-prio` print on the simulated node after a boot (sim_dcb.py, '
    'the output format of iproute2 6.1: PFC off on every priority, delay 7 (the mlx5 default cable length), an '
    'empty APP table prints nothing)')
DERIVATION_MAC = ('Ethernet address = the HCA node_guid without its 4th and 5th bytes (03:00), the ConnectX '
                  'GUID/MAC relation (node_guid 4821:0b03:0096:04cb -> 48:21:0b:96:04:cb)')


def read_real(repo, rel):
    with open(os.path.join(repo, rel), 'rb') as handle:
        return handle.read().decode('utf-8')


def captured_counters(repo):
    """(counters, hw_counters, rate text) of the captured mlx5_0 port 1."""
    tree = bundle.load_ttar(read_real(repo, SRC_MLX5_COUNTERS))
    base = 'class/infiniband/mlx5_0/ports/1/'
    groups = {'counters': {}, 'hw_counters': {}}
    for rel, value in tree.items():
        for group in groups:
            if rel.startswith(base + group + '/'):
                groups[group][rel[len(base + group) + 1:]] = int(value.decode('ascii').strip())
    return groups['counters'], groups['hw_counters'], tree[base + 'rate'].decode('ascii').strip()


def parse_ibdev2netdev(text):
    """{rdma device: (port, netdev, Up/Down)}; the capture's glued-on '# ibv_devinfo' is ignored."""
    found = {}
    for line in text.splitlines():
        match = re.match(r'^(\S+) port (\d+) ==> (\S+) \((Up|Down)\)', line)
        if match:
            found[match.group(1)] = (int(match.group(2)), match.group(3), match.group(4))
    return found


def ibstatus_gids(text):
    """[(device, default gid)] of the InfiniBand ports of an ibstatus output, in its order."""
    found, device = [], None
    for line in text.splitlines():
        match = re.match(r"^Infiniband device '([^']+)' port \d+ status:", line)
        if match:
            device = match.group(1)
            continue
        match = re.match(r'^\s+default gid:\s+([0-9a-f:]{39})$', line)
        if match and device:
            found.append((device, match.group(1)))
    return found


def slot(address):
    """'0000:2a:00.1' -> (bus, device, function)."""
    match = re.match(r'^[0-9a-f]{4}:([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$', address)
    return int(match.group(1), 16), int(match.group(2), 16), int(match.group(3))


def path_name(prefix, address, multifunction):
    bus, device, function = slot(address)
    return '%sp%ds%d%s' % (prefix, bus, device, 'f%d' % function if multifunction else '')


def ethernet_name(address, multifunction):
    return path_name('en', address, multifunction) + 'np%d' % (slot(address)[2] if multifunction else 0)


def synthetic_guid(address):
    bus, device, function = slot(address)
    return bytes(SYNTHETIC_GUID_PREFIX + (bus, device, function + 1))


def guid_bytes(text):
    """'4821:0b03:0096:04cb' or a GID's last 8 bytes -> 8 bytes."""
    digits = text.replace(':', '')[-16:]
    return bytes(int(digits[i:i + 2], 16) for i in range(0, 16, 2))


def colon(data):
    return ':'.join('%02x' % b for b in data)


def mac_from_guid(guid):
    return colon(guid[:3] + guid[5:])


def ipoib_address(guid):
    return IPOIB_QPN + ':fe:80:00:00:00:00:00:00:' + colon(guid)


def port_counters(tree, hca, rate_text, captured):
    counters, hw_counters, captured_rate = captured
    rate, base_rate = sim_rdma.rate_gbps(rate_text), sim_rdma.rate_gbps(captured_rate)
    base = 'sys/class/infiniband/%s/ports/1/' % hca
    for group, values in (('counters', counters), ('hw_counters', hw_counters)):
        for name, value in sorted(values.items()):
            if name in TRAFFIC:
                value = int(value * rate) // int(base_rate)
            bundle.put_text(tree, base + '%s/%s' % (group, name), '%d\n' % value)


def ethernet_netdev(tree, address, netdev, operstate, mac):
    base = 'sys/bus/pci/devices/%s/net/%s/' % (address, netdev)
    for name, value in (('type', '%d' % sim_rdma.ARPHRD_ETHER), ('operstate', operstate), ('flags', sim_rdma.NETDEV_FLAGS_UP),
                        ('address', mac), ('dev_port', '0')):
        bundle.put_text(tree, base + name, value + '\n')
    for point in ('roce_rp', 'roce_np'):
        for prio in range(8):
            bundle.put_text(tree, base + 'ecn/%s/enable/%d' % (point, prio), sim_rdma.ECN_ENABLE_DEFAULT + '\n')
    for name, value in sim_rdma.ECN_NP_DEFAULTS:
        bundle.put_text(tree, base + 'ecn/roce_np/' + name, value + '\n')
    tree[base + 'device'] = bundle.Link('../../../%s' % address)
    tree['sys/class/net/%s' % netdev] = bundle.Link('../../bus/pci/devices/%s/net/%s' % (address, netdev))


def add_rdma(tree, sources, repo, nics_meta, netdev_names=None, guids=None, node_guids=None):
    """Counters, netdevs and sim/rdma.json for the NICs of ``nics_meta`` (profile.yml ``nics``, updated with
    ``netdev`` / ``ipoib``); returns (derivations, synthetic) to add to profile.yml."""
    captured = captured_counters(repo)
    sources.use(SRC_MLX5_COUNTERS, 'the names of an mlx5 port\'s counters/ and hw_counters/ files and their '
                                   'values (traffic counters scaled by rate), port rate "25 Gb/sec (1X EDR)"')
    functions = {}
    for nic in nics_meta:
        functions.setdefault(nic['pci'][:-2], set()).add(nic['pci'])
    hcas, synthetic = [], []
    for nic in nics_meta:
        name, address = nic['name'], nic['pci']
        multifunction = len(functions[address[:-2]]) > 1
        base = 'sys/class/infiniband/%s/ports/1/' % name
        port_counters(tree, name, bundle.text(tree, base + 'rate'), captured)
        up = bundle.text(tree, base + 'state').strip() == '4: ACTIVE'
        hca = {'name': name, 'pci': address, 'role': nic['role'], 'link_layer': nic['link_layer'], 'ports': [1],
               'netdev': None, 'ipoib': None}
        if nic['link_layer'] == 'Ethernet':
            netdev = (netdev_names or {}).get(name) or ethernet_name(address, multifunction)
            guid = (node_guids or {}).get(name)
            guid = guid_bytes(guid) if guid else synthetic_guid(address)
            ethernet_netdev(tree, address, netdev, 'up' if up else 'down', mac_from_guid(guid))
            for key, value in sim_rdma.RDMA_CM_DEFAULTS:
                bundle.put_text(tree, 'sys/%s/%s/ports/1/%s' % (sim_rdma.CONFIGFS_RDMA_CM, name, key), value + '\n')
            bundle.put_text(tree, DCB_PFC_FILE % netdev, sim_dcb.pfc_show_text())
            bundle.put_text(tree, DCB_APP_FILE % netdev, '')
            hca['netdev'] = nic['netdev'] = netdev
        else:
            guid = (guids or {}).get(name)
            guid = guid_bytes(guid) if guid else synthetic_guid(address)
            hca['ipoib'] = {'name': path_name('ib', address, multifunction), 'address': ipoib_address(guid)}
            nic['ipoib'] = hca['ipoib']['name']
        hcas.append(hca)
    bundle.put_text(tree, sim_rdma.RDMA_FILE, json.dumps({'hcas': hcas, 'faults': {}}, indent=2, sort_keys=True) + '\n')
    infiniband = [n['name'] for n in nics_meta if n['link_layer'] != 'Ethernet']
    ethernet = [n['name'] for n in nics_meta if n['link_layer'] == 'Ethernet']
    if [n for n in infiniband if n not in (guids or {})]:
        synthetic.append('IPoIB port GUIDs%s: %s:<bus>:<device>:<function + 1>' % (
            ' of the NICs without a captured GID' if guids else '', colon(SYNTHETIC_GUID_PREFIX)))
    if [n for n in ethernet if n not in (node_guids or {})]:
        synthetic.append('Ethernet addresses of the Ethernet NICs (no captured GUID or MAC): from the GUID '
                         '%s:<bus>:<device>:<function + 1>' % colon(SYNTHETIC_GUID_PREFIX))
    if infiniband:
        synthetic.append('IPoIB hardware addresses: flags/QPN %s, then fe80::/64 and the port GUID' % IPOIB_QPN)
    # the HCAs' driver is loaded, so sys/module exists (as on every kernel) and the bundle can tell that ib_ipoib
    # is not loaded, as a capture of such a node can
    bundle.put_text(tree, 'sys/module/mlx5_core/initstate', 'live\n')
    synthetic.append('sys/module/mlx5_core/initstate "live": the HCAs\' driver is loaded')
    derivations = [DERIVATION_COUNTERS, DERIVATION_NETDEV, DERIVATION_NAMES, DERIVATION_MAC]
    if any(h['netdev'] for h in hcas):
        derivations += [DERIVATION_RDMA_CM, DERIVATION_DCB]
    return derivations, synthetic
