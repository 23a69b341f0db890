# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Named hardware faults applied to a simulator profile.

Each fault is a function ``name(profile_dir_in, profile_dir_out, **params)``
that writes a copy of the profile with the fault, and has an in-memory form
``FAULTS[name].apply(tree, **params)`` working on a bundle tree from
``simulator.bundle.read_profile``. A fault changes exactly what its description
says and records itself (name, parameters, description, files changed) under
``faults:`` in profile.yml and in sim/runtime.json. Faults stack.

    python3 -m simulator.faults list
    python3 -m simulator.faults apply nvlink_down IN_DIR OUT_DIR [--param gpu=3]

Stdlib only (runs on a simulated node too); Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import json
import os
import re
import sys
from xml.sax.saxutils import escape as xml_escape

try:
    from . import bundle
    from . import nvidia_smi
    from . import sim_rdma
    from . import sim_dcgmi
    from . import sim_nccl
except ImportError:  # run as a script, or from a copy of the directory under another name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bundle  # noqa: E402
    import nvidia_smi  # noqa: E402
    import sim_rdma  # noqa: E402
    import sim_dcgmi  # noqa: E402
    import sim_nccl  # noqa: E402

# The exact text nvidia-smi prints when the kernel module is not loaded
# (tests/fixtures/real/nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt).
DRIVER_NOT_LOADED_TEXT = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n")
DRIVER_NOT_LOADED_RC = 9
DRIVER_NOT_LOADED_SOURCE = ('tests/fixtures/real/nvsmi-errors/'
                            'couldnt-communicate-with-driver-a100-module-not-loaded.txt')

PCIE_SPEED = {1: '2.5 GT/s PCIe', 2: '5.0 GT/s PCIe', 3: '8.0 GT/s PCIe', 4: '16.0 GT/s PCIe',
              5: '32.0 GT/s PCIe', 6: '64.0 GT/s PCIe'}
PORT_DOWN_PHYS = {'Disabled': '3: Disabled', 'Polling': '2: Polling'}


class FaultError(Exception):
    """A fault cannot be applied to this profile (e.g. no NVLink to take down)."""


class Fault(object):
    def __init__(self, name, func, description, params):
        self.name = name
        self.func = func
        self.description = description
        self.params = params

    def apply(self, tree, **params):
        """Apply in memory; returns the sorted list of changed paths."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise FaultError('%s: unknown parameter(s) %s (known: %s)'
                             % (self.name, ', '.join(sorted(unknown)), ', '.join(sorted(self.params)) or 'none'))
        before = dict(tree)
        detail = self.func(tree, **params) or {}
        changed = sorted(rel for rel in set(before) | set(tree)
                         if rel not in ('profile.yml', nvidia_smi.RUNTIME_FILE) and before.get(rel) != tree.get(rel))
        record(tree, self, params, changed, detail)
        return changed

    def __call__(self, profile_dir_in, profile_dir_out, **params):
        """Write ``profile_dir_out``: the profile with this fault (same form as the input:
        a committed profile with sys.ttar, or an unpacked capture bundle)."""
        packed = bundle.is_packed(profile_dir_in)
        tree = bundle.read_profile(profile_dir_in)
        changed = self.apply(tree, **params)
        bundle.write_profile(tree, profile_dir_out, packed=packed)
        return changed


def record(tree, fault, params, changed, detail):
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    entry = {'name': fault.name, 'params': dict(sorted(params.items())), 'description': fault.description,
             'changed': changed}
    entry.update(detail)
    meta.setdefault('faults', []).append(entry)
    header = '\n'.join(line[2:] if line.startswith('# ') else line[1:]
                       for line in bundle.text(tree, 'profile.yml').splitlines() if line.startswith('#'))
    bundle.put_text(tree, 'profile.yml', bundle.dump_yaml(meta, header or None))
    runtime = json.loads(bundle.text(tree, nvidia_smi.RUNTIME_FILE))
    runtime.setdefault('faults', []).append({'name': fault.name, 'params': entry['params']})
    bundle.put_text(tree, nvidia_smi.RUNTIME_FILE, json.dumps(runtime, indent=2, sort_keys=True) + '\n')


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _meta(tree):
    return bundle.load_yaml(bundle.text(tree, 'profile.yml'))


def _xml(tree):
    if (nvidia_smi.XML_FILE + '.rc') in tree:
        raise FaultError('the profile simulates a failed nvidia-smi; no GPU left to change')
    return nvidia_smi.XmlDoc(bundle.text(tree, nvidia_smi.XML_FILE))


def _gpu_block(doc, gpu):
    if not 0 <= gpu < len(doc.blocks):
        raise FaultError('no GPU %d (the profile has %d)' % (gpu, len(doc.blocks)))
    return doc.blocks[gpu]


def _sysfs_pci(block):
    bus_id = nvidia_smi.get_value(block, 'pci/pci_bus_id')
    return 'sys/bus/pci/devices/%s/' % bus_id[4:].lower()


def _int_param(value, name):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise FaultError('%s must be an integer, got %r' % (name, value))


# ---------------------------------------------------------------------------
# faults
# ---------------------------------------------------------------------------

def _gpu_missing(tree, gpu=1):
    """GPU fell off the bus: nvidia-smi no longer enumerates it.

    The XML drops its <gpu> element and attached_gpus is decremented; topo -m
    drops its row and column and nvlink -s its block; GPUs after it are
    renumbered (nvidia-smi numbers the GPUs it can see). sysfs is unchanged:
    the PCI function stays in the tree.
    """
    gpu = _int_param(gpu, 'gpu')
    doc = _xml(tree)
    block = _gpu_block(doc, gpu)
    gone = {'bus_id': nvidia_smi.get_value(block, 'pci/pci_bus_id'), 'uuid': nvidia_smi.get_value(block, 'uuid')}
    blocks = list(doc.blocks)
    del blocks[gpu]
    if doc.seps:
        del doc.seps[min(gpu, len(doc.seps) - 1)]
    count = int(nvidia_smi.get_value(doc.head, 'attached_gpus'))
    doc.head = nvidia_smi.set_value(doc.head, 'attached_gpus', str(count - 1))
    bundle.put_text(tree, nvidia_smi.XML_FILE, doc.render(blocks))
    if nvidia_smi.TOPO_FILE in tree:
        topo = bundle.Topo(bundle.text(tree, nvidia_smi.TOPO_FILE))
        topo.remove_device('GPU%d' % gpu)
        bundle.put_text(tree, nvidia_smi.TOPO_FILE, topo.render())
    if nvidia_smi.NVLINK_FILE in tree:
        nvl = bundle.NvlinkStatus(bundle.text(tree, nvidia_smi.NVLINK_FILE))
        nvl.blocks = [b for b in nvl.blocks if b['index'] != gpu]
        for b in nvl.blocks:
            if b['index'] > gpu:
                b['index'] -= 1
        bundle.put_text(tree, nvidia_smi.NVLINK_FILE, nvl.render())
    return {'gpu_removed': gone}


def _nvlink_down(tree, gpu=1, links=None):
    """NVLinks of one GPU inactive.

    nvlink -s prints ``Link N: <inactive>`` (the real V100 capture's form) for
    the chosen links (default all). topo -m: with every link down the GPU's NV#
    relations fall back to the PCIe path relation (derived from the NIC
    columns: NODE or SYS on the shipped profiles); with some links down they
    become NV<remaining>.
    """
    gpu = _int_param(gpu, 'gpu')
    if nvidia_smi.NVLINK_FILE not in tree:
        raise FaultError('profile has no %s' % nvidia_smi.NVLINK_FILE)
    nvl = bundle.NvlinkStatus(bundle.text(tree, nvidia_smi.NVLINK_FILE))
    target = [b for b in nvl.blocks if b['index'] == gpu]
    if not target:
        raise FaultError('no GPU %d in nvlink -s' % gpu)
    block = target[0]
    link_re = re.compile(r'^(\s*Link (\d+): )(.*)$')
    all_links = [int(link_re.match(line).group(2)) for line in block['lines'] if link_re.match(line)]
    if not all_links:
        raise FaultError('GPU %d has no NVLink (PCIe-only profile)' % gpu)
    if links is None:
        down = set(all_links)
    else:
        down = set(_int_param(x, 'links') for x in str(links).split(',') if x.strip())
        if not down or not down <= set(all_links):
            raise FaultError('links must be a subset of %s' % all_links)
    new_lines = []
    for line in block['lines']:
        match = link_re.match(line)
        if match and int(match.group(2)) in down:
            line = match.group(1) + '<inactive>'
        new_lines.append(line)
    block['lines'] = new_lines
    bundle.put_text(tree, nvidia_smi.NVLINK_FILE, nvl.render())
    if nvidia_smi.TOPO_FILE in tree:
        topo = bundle.Topo(bundle.text(tree, nvidia_smi.TOPO_FILE))
        name = 'GPU%d' % gpu
        remaining = len(all_links) - len(down)
        for peer in topo.gpus():
            if peer == name or not topo.get(name, peer).startswith('NV'):
                continue
            relation = 'NV%d' % remaining if remaining else topo.pcie_relation(name, peer)
            topo.set(name, peer, relation)
            topo.set(peer, name, relation)
        bundle.put_text(tree, nvidia_smi.TOPO_FILE, topo.render())
    return {'links_down': sorted(down)}


def _pcie_downtrained(tree, gpu=1, width=8, gen=None):
    """PCIe link of one GPU trained down: x16 -> x8 and Gen5/Gen4 -> Gen3 (Gen3 -> Gen2).

    Both current and max link generation and width change, in the XML and in
    sysfs (current_link_speed/width, max_link_speed/width).
    """
    gpu = _int_param(gpu, 'gpu')
    width = _int_param(width, 'width')
    doc = _xml(tree)
    block = _gpu_block(doc, gpu)
    link = 'pci/pci_gpu_link_info/'
    max_gen = int(nvidia_smi.get_value(block, link + 'pcie_gen/max_link_gen'))
    gen = (3 if max_gen > 3 else max_gen - 1) if gen is None else _int_param(gen, 'gen')
    if gen not in PCIE_SPEED:
        raise FaultError('gen must be 1-6')
    for path in ('pcie_gen/max_link_gen', 'pcie_gen/current_link_gen'):
        block = nvidia_smi.set_value(block, link + path, str(gen))
    for path in ('link_widths/max_link_width', 'link_widths/current_link_width'):
        block = nvidia_smi.set_value(block, link + path, '%dx' % width)
    doc.blocks[gpu] = block
    bundle.put_text(tree, nvidia_smi.XML_FILE, doc.render())
    base = _sysfs_pci(block)
    if base + 'current_link_speed' in tree:
        for name in ('current_link_speed', 'max_link_speed'):
            bundle.put_text(tree, base + name, PCIE_SPEED[gen] + '\n')
        for name in ('current_link_width', 'max_link_width'):
            bundle.put_text(tree, base + name, '%d\n' % width)
    return {'pcie': {'gen': gen, 'width': width}}


def _gpu_device_id(tree, device='0x3182', name='NVIDIA B300 SXM6 AC'):
    """Every GPU another model by its PCI device id: ``device`` in sysfs (``bus/pci/devices/<bus id>/device``) and
    in the XML (``pci_device_id``, ``product_name``), for the rules that read the id before any driver (branch
    limits, open modules only). The default is the B300's id in pci.ids (GB110 [B300 SXM6 AC]), newer than Debian
    12's pci.ids. What it does not make: the new model's NVLink, memory or topology, which stay the profile's.
    """
    if not re.match(r'^0x[0-9a-fA-F]{4}$', str(device)):
        raise FaultError('device must be a PCI device id such as 0x3182, got %r' % (device,))
    device = '0x' + str(device)[2:].lower()
    doc = _xml(tree)
    blocks = []
    for block in doc.blocks:
        block = nvidia_smi.set_value(block, 'pci/pci_device_id', device[2:].upper() + '10DE')
        block = nvidia_smi.set_value(block, 'product_name', xml_escape(str(name)))
        base = _sysfs_pci(block)
        if base + 'device' not in tree:
            raise FaultError('the profile has no sysfs device file for %s' % base)
        bundle.put_text(tree, base + 'device', device + '\n')
        blocks.append(block)
    bundle.put_text(tree, nvidia_smi.XML_FILE, doc.render(blocks))
    return {'device_id': device, 'gpus': len(blocks)}


def _ib_port_down(tree, nic=None, phys_state='Disabled'):
    """One compute NIC port down: sysfs state "1: DOWN", phys_state "3: Disabled" (or "2: Polling").

    Default NIC: the first compute NIC of profile.yml. Rate and link layer are left as they were; the
    Ethernet netdev of a RoCE NIC gets operstate "down".
    """
    if phys_state not in PORT_DOWN_PHYS:
        raise FaultError('phys_state must be one of %s' % ', '.join(sorted(PORT_DOWN_PHYS)))
    if nic is None:
        compute = [n['name'] for n in _meta(tree).get('nics') or [] if n.get('role') == 'compute']
        if not compute:
            raise FaultError('profile.yml lists no compute NIC')
        nic = compute[0]
    base = 'sys/class/infiniband/%s/ports/1/' % nic
    if base + 'state' not in tree:
        raise FaultError('no NIC %s in sys/class/infiniband' % nic)
    bundle.put_text(tree, base + 'state', '1: DOWN\n')
    bundle.put_text(tree, base + 'phys_state', PORT_DOWN_PHYS[phys_state] + '\n')
    for hca in _rdma(tree).get('hcas') or []:
        if hca['name'] == nic and hca.get('netdev'):
            bundle.put_text(tree, 'sys/%s/operstate' % sim_rdma.netdev_rel(hca, hca['netdev']), 'down\n')
    return {'nic': nic}


def _rdma(tree):
    return json.loads(bundle.text(tree, sim_rdma.RDMA_FILE)) if sim_rdma.RDMA_FILE in tree else {}


def _roce_retrans_high(tree, nic=None):
    """The RoCE port retransmits: 1% of the packets it sends.

    Its hw_counters roce_adp_retrans, local_ack_timeout_err, packet_seq_err and out_of_sequence each
    grow by 1% of its counters/port_xmit_packets (so the retransmission ratio of the installed node is
    already high), and sim/rdma.json arms the fault: while traffic flows (gpuops-sim-traffic.service) the
    four counters keep growing by 1% of the packets sent. Default NIC: the first Ethernet compute NIC (a
    profile without one needs ``nic``). ``gpuops-sim fault roce_retrans_high`` arms the growth alone at run
    time.
    """
    rdma = _rdma(tree)
    try:
        hca = sim_rdma.resolve_roce_hca(rdma or None, nic)
    except sim_rdma.RdmaError as exc:
        raise FaultError(str(exc))
    base = 'sys/%s/' % sim_rdma.port_rel(hca, hca['ports'][0])
    sent = bundle.text(tree, base + 'counters/port_xmit_packets').strip() if base + 'counters/port_xmit_packets' in \
        tree else ''
    if not sent.isdigit():
        raise FaultError('%s has no counters/port_xmit_packets' % hca['name'])
    for name in sim_rdma.RETRANS_COUNTERS:
        rel = base + 'hw_counters/' + name
        if rel not in tree:
            raise FaultError('%s has no hw_counters/%s' % (hca['name'], name))
        bundle.put_text(tree, rel, '%d\n' % (int(bundle.text(tree, rel)) + int(sent) // sim_rdma.RETRANS_PER_PACKETS))
    faults = rdma.setdefault('faults', {})
    faults['roce_retrans_high'] = sorted(set(faults.get('roce_retrans_high', [])) | {hca['name']})
    bundle.put_text(tree, sim_rdma.RDMA_FILE, json.dumps(rdma, indent=2, sort_keys=True) + '\n')
    return {'nic': hca['name']}


def _ecc_uncorrectable(tree, gpu=1, count=1):
    """Uncorrectable ECC errors on one GPU.

    Ampere and later (sram/dram counters): volatile and aggregate
    dram_uncorrectable += count, remapped_row_unc += count and
    remapped_row_pending Yes. Pre-Ampere (single/double bit counters):
    volatile and aggregate double_bit device_memory and total += count and
    retired_pages pending_retirement Yes (those GPUs retire pages instead of
    remapping rows).
    """
    gpu = _int_param(gpu, 'gpu')
    count = _int_param(count, 'count')
    doc = _xml(tree)
    block = _gpu_block(doc, gpu)

    def bump(text, path):
        value = nvidia_smi.get_value(text, path)
        number = int(value) if value and value.isdigit() else 0
        return nvidia_smi.set_value(text, path, str(number + count))
    if nvidia_smi.has_element(block, 'ecc_errors/volatile/dram_uncorrectable'):
        for group in ('volatile', 'aggregate'):
            block = bump(block, 'ecc_errors/%s/dram_uncorrectable' % group)
        if not nvidia_smi.has_element(block, 'remapped_rows/remapped_row_pending'):
            raise FaultError('GPU %d reports remapped_rows N/A' % gpu)
        block = bump(block, 'remapped_rows/remapped_row_unc')
        block = nvidia_smi.set_value(block, 'remapped_rows/remapped_row_pending', 'Yes')
        kind = 'dram_uncorrectable + remapped row pending'
    elif nvidia_smi.has_element(block, 'ecc_errors/volatile/double_bit'):
        for group in ('volatile', 'aggregate'):
            for leaf in ('device_memory', 'total'):
                block = bump(block, 'ecc_errors/%s/double_bit/%s' % (group, leaf))
        block = nvidia_smi.set_value(block, 'retired_pages/pending_retirement', 'Yes')
        kind = 'double_bit + page retirement pending'
    else:
        raise FaultError('GPU %d has no ECC counters in its XML' % gpu)
    doc.blocks[gpu] = block
    bundle.put_text(tree, nvidia_smi.XML_FILE, doc.render())
    return {'ecc': kind}


# the capture bundle's ``nvidia-smi mig -lgi`` (plugins/module_utils/topology/mig.py BUNDLE_FILE)
MIG_LGI_FILE = 'nvidia-smi-mig-lgi.txt'


def _mig_unexpected(tree, gpu=1):
    """MIG mode Enabled (current and pending) on one GPU of a node that expects it off; the bundle's
    ``nvidia-smi mig -lgi`` says what the simulated nvidia-smi says: no GPU instances."""
    gpu = _int_param(gpu, 'gpu')
    doc = _xml(tree)
    block = _gpu_block(doc, gpu)
    if nvidia_smi.get_value(block, 'mig_mode/current_mig') in (None, 'N/A'):
        raise FaultError('GPU %d does not support MIG (mig_mode N/A)' % gpu)
    block = nvidia_smi.set_value(block, 'mig_mode/current_mig', 'Enabled')
    block = nvidia_smi.set_value(block, 'mig_mode/pending_mig', 'Enabled')
    doc.blocks[gpu] = block
    bundle.put_text(tree, nvidia_smi.XML_FILE, doc.render())
    # what the capture takes from a node with a GPU in MIG mode: ``mig -lgi``, here without instances
    bundle.put_text(tree, MIG_LGI_FILE, 'No GPU instances found: Not Found\n')
    bundle.put_text(tree, MIG_LGI_FILE + '.rc', '%d\n' % nvidia_smi.RC_NOT_FOUND)
    return {}


def _driver_not_loaded(tree):
    """NVIDIA kernel module not loaded: every nvidia-smi invocation prints the real
    "couldn't communicate with the NVIDIA driver" line and exits 9.

    The bundle's nvidia-smi outputs hold that text with a ``.rc`` file of 9 (as
    the capture playbook records a failed command); sysfs is unchanged (the PCI
    devices and the NICs are still there).
    """
    for name in (nvidia_smi.XML_FILE, nvidia_smi.TOPO_FILE, nvidia_smi.NVLINK_FILE):
        bundle.put_text(tree, name, DRIVER_NOT_LOADED_TEXT)
        bundle.put_text(tree, name + '.rc', '%d\n' % DRIVER_NOT_LOADED_RC)
    runtime = json.loads(bundle.text(tree, nvidia_smi.RUNTIME_FILE))
    runtime['failure'] = {'rc': DRIVER_NOT_LOADED_RC, 'stdout': DRIVER_NOT_LOADED_TEXT,
                          'source': DRIVER_NOT_LOADED_SOURCE}
    bundle.put_text(tree, nvidia_smi.RUNTIME_FILE, json.dumps(runtime, indent=2, sort_keys=True) + '\n')
    return {'source': DRIVER_NOT_LOADED_SOURCE}


def _dcgm_diag_fail(tree, gpu=1, test=None):
    """dcgmi diag fails one test on one GPU.

    ``sim/dcgm.json`` lists ``{"gpu": N, "test": NAME}`` under ``diag_fail``; the simulated host engine then
    reports that test (default: memory from level 2 on, software at level 1) Fail on that GPU with the real
    DCGM 4.2.3 failure text, verdict Fail (exit status 226). ``gpuops-sim fault dcgm_diag_fail`` arms the
    same at run time.
    """
    gpu = _int_param(gpu, 'gpu')
    _gpu_block(_xml(tree), gpu)
    known = sorted(set(name for tests in sim_dcgmi.LEVEL_TESTS.values() for _category, name in tests))
    if test is not None and test not in known:
        raise FaultError('unknown DCGM test %r (known: %s)' % (test, ', '.join(known)))
    data = json.loads(bundle.text(tree, DCGM_FILE)) if DCGM_FILE in tree else {}
    data.setdefault('diag_fail', []).append({'gpu': gpu, 'test': test})
    bundle.put_text(tree, DCGM_FILE, json.dumps(data, indent=2, sort_keys=True) + '\n')
    return {}


def _nccl_slow(tree, factor=0.25):
    """nccl-tests report the bus bandwidth scaled by ``factor`` (simulator/sim_nccl.py reads the fault's record;
    ``gpuops-sim fault nccl_slow`` arms the same at run time)."""
    try:
        return sim_nccl.apply_fault_nccl_slow(tree, factor)
    except ValueError as exc:
        raise FaultError(str(exc))


DCGM_FILE = 'sim/dcgm.json'
FAULTS = {}


def _register(name, func, description, params):
    fault = Fault(name, func, description, params)
    FAULTS[name] = fault
    globals()[name] = fault
    return fault


_register('gpu_missing', _gpu_missing,
          'GPU fell off the bus: nvidia-smi no longer lists it (XML, topo -m, nvlink -s; later GPUs renumbered)',
          {'gpu': 'index of the GPU that disappears (default 1)'})
_register('nvlink_down', _nvlink_down,
          "NVLinks of one GPU show <inactive>; its topo NV# relations fall back to the PCIe path (NODE/SYS)",
          {'gpu': 'GPU index (default 1)', 'links': 'comma-separated link numbers (default all)'})
_register('pcie_downtrained', _pcie_downtrained,
          'PCIe link of one GPU at x8 and Gen3 (Gen2 on a Gen3 GPU), current and max, in XML and sysfs',
          {'gpu': 'GPU index (default 1)', 'width': 'link width (default 8)',
           'gen': 'link generation (default 3, or max-1 when max <= 3)'})
_register('gpu_device_id', _gpu_device_id,
          'Every GPU another model by its PCI device id, in sysfs and the XML (default the B300, 0x3182)',
          {'device': 'PCI device id, 0xNNNN (default 0x3182)', 'name': 'product name (default NVIDIA B300 SXM6 AC)'})
_register('ib_port_down', _ib_port_down,
          'One compute NIC port DOWN in sysfs: state "1: DOWN", phys_state "3: Disabled" (or "2: Polling"); a RoCE '
          'NIC\'s netdev operstate "down"',
          {'nic': 'RDMA device name (default the first compute NIC)',
           'phys_state': 'Disabled (default) or Polling'})
_register('ecc_uncorrectable', _ecc_uncorrectable,
          'Uncorrectable ECC errors on one GPU (volatile and aggregate) with a remapped row (or retired '
          'page) pending',
          {'gpu': 'GPU index (default 1)', 'count': 'number of errors (default 1)'})
_register('mig_unexpected', _mig_unexpected,
          'MIG mode current and pending Enabled on one GPU', {'gpu': 'GPU index (default 1)'})
_register('roce_retrans_high', _roce_retrans_high,
          'One RoCE port retransmits 1% of its packets: hw_counters roce_adp_retrans, local_ack_timeout_err, '
          'packet_seq_err, out_of_sequence at 1% of port_xmit_packets and growing with the traffic',
          {'nic': 'RDMA device name of an Ethernet-link-layer NIC (default the first Ethernet compute NIC)'})
_register('dcgm_diag_fail', _dcgm_diag_fail,
          'dcgmi diag reports one test Fail on one GPU (the real DCGM 4 failure text), verdict Fail',
          {'gpu': 'GPU index (default 1)',
           'test': 'DCGM 4 test name (default memory from level 2 on, software at level 1)'})
_register('nccl_slow', _nccl_slow,
          'nccl-tests report the bus bandwidth scaled by factor (default 0.25)',
          {'factor': 'bandwidth factor, 0 < factor <= 1 (default 0.25)'})
_register('driver_not_loaded', _driver_not_loaded,
          "Driver not loaded: every nvidia-smi call prints the real \"couldn't communicate with the NVIDIA "
          "driver\" text and exits 9", {})


def parse_param(text):
    if '=' not in text:
        raise argparse.ArgumentTypeError('expected KEY=VALUE, got %r' % text)
    key, value = text.split('=', 1)
    value = value.strip()
    return key.strip(), int(value) if re.match(r'^-?\d+$', value) else value


def parse_spec(spec):
    """``name`` or ``name:key=value,key=value`` -> (name, params)."""
    name, _sep, rest = spec.partition(':')
    params = {}
    if rest:
        # links=1,2 is allowed: split on commas that start a new key=value
        for part in re.split(r',(?=[A-Za-z_]+=)', rest):
            key, value = parse_param(part)
            params[key] = value
    if name not in FAULTS:
        raise FaultError('unknown fault %r (known: %s)' % (name, ', '.join(sorted(FAULTS))))
    return name, params


def main(argv=None):
    parser = argparse.ArgumentParser(description='Apply a named hardware fault to a simulator profile.')
    sub = parser.add_subparsers(dest='cmd')
    sub.add_parser('list', help='list the faults')
    apply_p = sub.add_parser('apply', help='write a copy of a profile with a fault')
    apply_p.add_argument('name')
    apply_p.add_argument('profile_in')
    apply_p.add_argument('profile_out')
    apply_p.add_argument('--param', action='append', type=parse_param, default=[], metavar='KEY=VALUE')
    args = parser.parse_args(argv)
    if args.cmd == 'list':
        for name in sorted(FAULTS):
            fault = FAULTS[name]
            print('%-18s %s' % (name, fault.description))
            for key, text in sorted(fault.params.items()):
                print('%-18s   %s: %s' % ('', key, text))
        return 0
    if args.cmd == 'apply':
        if args.name not in FAULTS:
            parser.error('unknown fault %r' % args.name)
        try:
            changed = FAULTS[args.name](args.profile_in, args.profile_out, **dict(args.param))
        except FaultError as exc:
            print('fault %s: %s' % (args.name, exc), file=sys.stderr)
            return 1
        print('%s -> %s: %s changed %s' % (args.profile_in, args.profile_out, args.name, ', '.join(changed)))
        return 0
    parser.print_help()
    return 2


if __name__ == '__main__':
    sys.exit(main())
