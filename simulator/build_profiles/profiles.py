# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The three profiles, each from its captures: ``h100-sxm-8gpu-ib``, ``a100-sxm-8gpu-ib``,
``pcie-4gpu-roce`` (PROFILES: name -> builder).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from .. import build_rdma
from .. import bundle
from .. import nvidia_smi
from .assemble import finish, gpu_facts, nvlink_text
from .sources import (REPO, SRC_A100_IBSTATUS, SRC_A100_TOPO, SRC_A100_XML, SRC_GPUD_IB, SRC_H100_NVLINK, SRC_H100_Q,
                      SRC_H100_TOPO, SRC_P100_XML, SRC_PCIE_TOPO, SRC_ROCE_DEVINFO, Sources, parse_ibstatus,
                      parse_ibv_devinfo, parse_q_text, read_real)
from .sysfs import gpu_sysfs, ib_device, mig_tables, pci_device
from .xml_blocks import a100_base_block, build_xml, derive_uuid, gpu_identity_block, h100_gpu_block, module_ids

# PCI bus numbers of the H100 profile's NVSwitches (synthetic, see the profile's synthetic: list)
H100_NVSWITCH_BUSES = (0x05, 0x06, 0x07, 0x08)


def profile_h100():
    name = 'h100-sxm-8gpu-ib'
    src = Sources()
    tree = {}
    q = parse_q_text(read_real(src.use(
        SRC_H100_Q, 'every per-GPU value of the -q -x XML (product, VBIOS, inforom, PCIe Gen5 x16, memory, '
                    'ECC, remapped rows, power, clocks), driver 545.23.08 / CUDA 12.3, timestamp; GPU0 keeps its '
                    'UUID, serial, bus 0x19 and module id')))
    template = read_real(src.use(
        SRC_A100_XML, 'the -q -x XML structure (element order, 4-space indentation, DTD line); no A100 value '
                      'is kept except the structure-only N/A leaves and power_management Supported'))
    tdoc = nvidia_smi.XmlDoc(template)
    base = h100_gpu_block(tdoc.blocks[0], q)
    topo = bundle.Topo(read_real(src.use(
        SRC_H100_TOPO, 'the whole topo -m output verbatim: 8 GPUs NV18 all-to-all, 12 NICs (NIC Legend '
                       'mlx5_0..mlx5_11), PIX GPU<->NIC pairs, CPU Affinity 0-191 / NUMA 0 (numa=off node)')))
    buses = [0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB]
    modules = module_ids(int(q['Module ID']), 8)
    blocks = []
    for i, bus in enumerate(buses):
        block = gpu_identity_block(base, bus, 0, str(int(q['Serial Number']) + i),
                                   derive_uuid(name, q['GPU UUID'], i), i, modules[i])[0]
        blocks.append(block)
    xml_text = build_xml(template, blocks, [('timestamp', q['Timestamp']), ('driver_version', q['Driver Version']),
                                            ('cuda_version', q['CUDA Version']), ('attached_gpus', '8')])
    bundle.put_text(tree, nvidia_smi.XML_FILE, xml_text)
    bundle.put_text(tree, nvidia_smi.TOPO_FILE, topo.render())

    nvl = bundle.NvlinkStatus(read_real(src.use(
        SRC_H100_NVLINK, 'nvlink -s format and values: 18 links at 26.562 GB/s per GPU (GPU 0 block '
                         'replicated for GPUs 0-7 with their own name/UUID)')))
    links = nvl.blocks[0]['lines']
    facts = gpu_facts(xml_text)
    out = []
    for fact in facts:
        out.append('GPU %d: %s (UUID: %s)' % (fact['index'], fact['name'], fact['uuid']))
        out.extend(links)
    bundle.put_text(tree, nvidia_smi.NVLINK_FILE, '\n'.join(out) + '\n')

    # sysfs: GPUs
    numa = dict((f['index'], -1) for f in facts)
    gpu_sysfs(tree, xml_text, numa)
    # sysfs: the four NVSwitches of the HGX H100 baseboard (third-generation NVSwitch, PCI id 10de:22a3)
    for bus in H100_NVSWITCH_BUSES:
        pci_device(tree, '0000:%02x:00.0' % bus, 4, 2, 4, 2, -1, vendor='0x10de', device='0x22a3',
                   pci_class='0x068000')
    # sysfs: NICs
    src.use(SRC_GPUD_IB, 'InfiniBand port values of the compute rails (state "4: ACTIVE", phys_state '
                         '"5: LinkUp", rate "400 Gb/sec (4X NDR)"), link_layer "Ethernet" of the frontend bond '
                         '(used for the storage/frontend NICs), fw_ver 28.41.1000, board_id MT_0000000838')
    gpud = os.path.join(REPO, SRC_GPUD_IB)

    def gpud_value(rel):
        with open(os.path.join(gpud, rel)) as handle:
            return handle.read().strip()
    rail = {'state': gpud_value('mlx5_0/ports/1/state'), 'phys_state': gpud_value('mlx5_6/ports/1/phys_state'),
            'rate': gpud_value('mlx5_0/ports/1/rate'), 'link_layer': 'InfiniBand'}
    frontend = dict(rail, link_layer=gpud_value('mlx5_bond_0/ports/1/link_layer'))
    extra = {'fw_ver': gpud_value('mlx5_4/fw_ver'), 'board_id': gpud_value('mlx5_7/board_id')}
    gpu_of_nic = {}
    for nic in topo.nics():
        pix = [g for g in topo.gpus() if topo.get(g, nic) == 'PIX']
        gpu_of_nic[nic] = pix[0] if pix else None
    storage_bus = {}
    nics_meta = []
    for nic in topo.nics():
        real = topo.nic_name(nic)
        gpu = gpu_of_nic[nic]
        if gpu is not None:
            address = '0000:%02x:00.0' % (buses[int(gpu[3:])] - 1)
            values, role = rail, 'compute'
        else:
            partner = [n for n in topo.nics() if n != nic and topo.get(nic, n) == 'PIX'][0]
            key = tuple(sorted([nic, partner], key=topo.nics().index))
            if key not in storage_bus:
                storage_bus[key] = [0x2A, 0xAA][len(storage_bus)]
            address = '0000:%02x:00.%d' % (storage_bus[key], key.index(nic))
            values, role = frontend, 'storage'
        pci_device(tree, address, 5, 16, 5, 16, -1, vendor='0x15b3', device='0x1021',
                   pci_class='0x020700' if values['link_layer'] == 'InfiniBand' else '0x020000')
        ib_device(tree, real, address, values, extra)
        nics_meta.append({'name': real, 'matrix_column': nic, 'role': role, 'pci': address,
                          'gpu': gpu, 'link_layer': values['link_layer'], 'rate': values['rate'],
                          'numa_node': -1})

    rdma_derivations, rdma_synthetic = build_rdma.add_rdma(tree, src, REPO, nics_meta)
    tables = mig_tables(src, ['h100'])
    compute_nics = [n['name'] for n in nics_meta if n['role'] == 'compute']
    meta = {
        'name': name,
        'node_class': 'dgx_h100',
        'description': 'DGX/HGX H100 class node: 8x NVIDIA H100 80GB HBM3 (SXM5) NV18 all-to-all through '
                       'NVSwitch, 8 compute InfiniBand NDR 400 Gb/s rails (one PIX to each GPU) plus 4 '
                       'storage/frontend Ethernet ports, single NUMA node (numa=off)',
        'gpu_model': q['Product Name'],
        'driver_version': q['Driver Version'],
        'cuda_version': q['CUDA Version'],
        'counts': {'gpus': 8, 'nvlinks_per_gpu': len(links), 'nics': len(nics_meta),
                   'compute_nics': len(compute_nics), 'numa_nodes': 1},
        'nvlink': {'relation': 'NV18', 'links_per_gpu': len(links), 'link_speed': '26.562 GB/s'},
        'gpus': [dict(f, numa_node=-1, nic=[n['name'] for n in nics_meta if n['gpu'] == 'GPU%d' % f['index']][0])
                 for f in facts],
        'nics': nics_meta,
        'derivations': [
            'GPU i (i=0..7) is the H100 -q capture rendered into the A100 XML template; GPU0 keeps the captured '
            'UUID, serial, PCI bus 0x19 and module id 2; GPU i>0: UUID = GPU-uuid5(URL, '
            '"gpuops-sim:<profile>:<captured uuid>:<i>"), serial = captured serial + i, minor number = i, '
            'board_id = (bus << 8) | device, module ids = captured id then the unused ids 1..8 in order',
            'XML values the H100 capture has no counterpart for in the v11 template (absolute temperature '
            'thresholds) are N/A; supported_clocks is N/A (the -q capture has no clock table); remapped_rows '
            'uses the structured form of newer drivers with the captured counts',
            'nvlink -s: the captured GPU 0 block (18 x 26.562 GB/s) repeated for GPUs 0-7 with their name/UUID',
            'sysfs PCI: GPU current/max link speed and width from the XML (Gen5 -> "32.0 GT/s PCIe", x16); '
            'numa_node -1 for every device because the captured node boots with numa=off (nvidia-smi still '
            'prints NUMA Affinity 0)',
            'sysfs InfiniBand: a NIC PIX to a GPU is a compute rail with the gpud H100 rail values; a NIC PIX '
            'only to another NIC is one port of a dual-port storage/frontend card with link_layer Ethernet '
            '(gpud mlx5_bond_0) and the same state/rate; sysfs files end in a newline as on a live kernel '
            '(the gpud copies do not)',
        ],
        'synthetic': [
            'PCI bus numbers of GPUs 1-7 (0x3B 0x4C 0x5D 0x9B 0xBB 0xCB 0xDB): not captured, chosen to spread '
            'the GPUs over four root complexes like HGX H100 boards',
            'NIC PCI addresses: a compute rail sits on the bus below its GPU (GPU bus - 1); storage ports on '
            '0000:2a:00.0/.1 and 0000:aa:00.0/.1; NIC PCIe Gen5 x16, PCI ids 15b3:1021 (ConnectX-7)',
            'NVSwitches: a DGX H100 has four third-generation NVSwitches on its PCI bus (vendor 0x10de, device '
            '0x22a3, class 0x068000, bound to the nvidia driver); no capture has their sysfs, so their addresses '
            '0000:05:00.0 .. 0000:08:00.0 (bus numbers free below the first GPU and NIC, one PCIe switch) and '
            'their management link (Gen4 x2, numa_node -1 as every device of this numa=off node) are chosen',
            'MIG placement model (see sim/mig-profiles.json): memory-slice placements and GPU-instance ids '
            'follow the real captures where they show them, otherwise the 8-slice layout',
        ],
        'expected_node_class': None,     # node_class_profile(), in finish()
    }
    meta['derivations'].extend(rdma_derivations)
    meta['synthetic'].extend(rdma_synthetic)
    return finish(tree, meta, src, tables)


def profile_a100():
    name = 'a100-sxm-8gpu-ib'
    src = Sources()
    tree = {}
    template = read_real(src.use(
        SRC_A100_XML, 'the whole -q -x XML of one A100-SXM4-40GB (driver 510.47.03 / CUDA 11.6) as every GPU; '
                      'MIG turned off for the base profile'))
    tdoc = nvidia_smi.XmlDoc(template)
    base = a100_base_block(tdoc.blocks[0])
    topo = bundle.Topo(read_real(src.use(
        SRC_A100_TOPO, 'the whole topo -m output verbatim: 8 GPUs NV12, 12 NICs named mlx5_0..mlx5_11 in the '
                       'header (old driver, no NIC Legend), GPU NUMA affinities 3,3,1,1,7,7,5,5 and CPU affinity '
                       'ranges')))
    buses = [0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD]
    real_serial = nvidia_smi.get_value(base, 'serial')
    real_uuid = nvidia_smi.get_value(base, 'uuid')
    modules = module_ids(int(nvidia_smi.get_value(base, 'gpu_module_id')), 8)
    blocks = []
    for i, bus in enumerate(buses):
        block = gpu_identity_block(base, bus, 0, str(int(real_serial) + i), derive_uuid(name, real_uuid, i), i,
                                   modules[i])[0]
        blocks.append(block)
    xml_text = build_xml(template, blocks, [('attached_gpus', '8')])
    bundle.put_text(tree, nvidia_smi.XML_FILE, xml_text)
    bundle.put_text(tree, nvidia_smi.TOPO_FILE, topo.render())
    facts = gpu_facts(xml_text)
    src.use(SRC_H100_NVLINK, 'nvlink -s line format (9-space indent, "Link N: <speed> GB/s")')
    bundle.put_text(tree, nvidia_smi.NVLINK_FILE, nvlink_text([(f['index'], f['name'], f['uuid']) for f in facts], 12, '25 GB/s'))

    affinity = {}
    for row in topo.rows:
        if re.match(r'^GPU\d+$', row[0]):
            cells = row[1 + len(topo.devices):]
            affinity[row[0]] = int(cells[1])
    numa = dict((int(g[3:]), n) for g, n in affinity.items())
    gpu_sysfs(tree, xml_text, numa)

    ibstatus = read_real(src.use(
        SRC_A100_IBSTATUS, 'port values: HDR InfiniBand rails (state "4: ACTIVE", phys "5: LinkUp", rate '
                           '"200 Gb/sec (4X HDR)") for the compute NICs; the Ethernet port (mlx5_8: rate '
                           '"40 Gb/sec (4X QDR)", link_layer Ethernet) for the storage NICs; the default GIDs of '
                           'mlx5_0..mlx5_7 in order as the port GUIDs of the compute NICs (IPoIB addresses)'))
    ports = parse_ibstatus(ibstatus)
    rail = {'state': ports['mlx5_0']['state'], 'phys_state': ports['mlx5_0']['phys state'],
            'rate': ports['mlx5_0']['rate'], 'link_layer': ports['mlx5_0']['link_layer']}
    eth = {'state': ports['mlx5_8']['state'], 'phys_state': ports['mlx5_8']['phys state'],
           'rate': ports['mlx5_8']['rate'], 'link_layer': ports['mlx5_8']['link_layer']}
    compute_bus = {'mlx5_0': 0x0C, 'mlx5_1': 0x12, 'mlx5_2': 0x4B, 'mlx5_3': 0x54, 'mlx5_6': 0x8D,
                   'mlx5_7': 0x94, 'mlx5_8': 0xBA, 'mlx5_9': 0xCC}
    storage = {'mlx5_4': ('0000:e1:00.0', 2), 'mlx5_5': ('0000:e1:00.1', 2),
               'mlx5_10': ('0000:61:00.0', 6), 'mlx5_11': ('0000:61:00.1', 6)}
    nics_meta = []
    for nic in topo.nics():
        near = [g for g in topo.gpus() if topo.get(g, nic) in ('PIX', 'PXB')]
        if near:
            address = '0000:%02x:00.0' % compute_bus[nic]
            nic_numa = affinity[near[0]]
            values, role = rail, 'compute'
        else:
            address, nic_numa = storage[nic]
            values, role = eth, 'storage'
        pci_device(tree, address, 4, 16, 4, 16, nic_numa, vendor='0x15b3', device='0x101b',
                   pci_class='0x020700' if values['link_layer'] == 'InfiniBand' else '0x020000')
        ib_device(tree, nic, address, values)
        nics_meta.append({'name': nic, 'matrix_column': nic, 'role': role, 'pci': address,
                          'gpus': near, 'link_layer': values['link_layer'], 'rate': values['rate'],
                          'numa_node': nic_numa})
    gids = build_rdma.ibstatus_gids(ibstatus)
    compute_ib = [n['name'] for n in nics_meta if n['role'] == 'compute']
    rdma_derivations, rdma_synthetic = build_rdma.add_rdma(
        tree, src, REPO, nics_meta, guids=dict((nic, gid) for nic, (_dev, gid) in zip(compute_ib, gids)))
    tables = mig_tables(src, ['a100'])
    compute_nics = [n['name'] for n in nics_meta if n['role'] == 'compute']
    meta = {
        'name': name,
        'node_class': 'dgx_a100',
        'description': 'DGX A100 class node: 8x NVIDIA A100-SXM4-40GB NV12 through NVSwitch, 8 compute '
                       'InfiniBand HDR 200 Gb/s NICs (two PXB to each GPU pair) plus 4 storage Ethernet ports, '
                       'GPUs on NUMA nodes 3,1,7,5 (NPS4 EPYC), MIG disabled',
        'gpu_model': nvidia_smi.get_value(base, 'product_name'),
        'driver_version': nvidia_smi.get_value(template, 'driver_version'),
        'cuda_version': nvidia_smi.get_value(template, 'cuda_version'),
        'counts': {'gpus': 8, 'nvlinks_per_gpu': 12, 'nics': len(nics_meta), 'compute_nics': len(compute_nics),
                   'numa_nodes': 8},
        'nvlink': {'relation': 'NV12', 'links_per_gpu': 12, 'link_speed': '25 GB/s'},
        'gpus': [dict(f, numa_node=numa[f['index']]) for f in facts],
        'nics': nics_meta,
        'derivations': [
            'every GPU is the real A100 <gpu> element with MIG mode Disabled/Disabled, mig_devices None, '
            'volatile ECC counters 0 (N/A under MIG in the capture), remapped_rows in the structured form with '
            'zero counts, and the line break inside clocks_throttle_reason_applications_clocks_setting removed',
            'GPU0 keeps the captured UUID and serial; GPU i>0: UUID = GPU-uuid5(URL, '
            '"gpuops-sim:<profile>:<captured uuid>:<i>"), serial = captured serial + i, minor number = i, '
            'board_id = (bus << 8) | device, module ids = captured id 3 then the unused ids 1..8 in order',
            'nvlink -s: 12 links per GPU (NV12 in the topo) in the H100 capture\'s line format at 25 GB/s '
            '(NVLink3 per-link rate; no A100 nvlink capture is in tests/fixtures/real)',
            'sysfs PCI: GPUs Gen4 x16 ("16.0 GT/s PCIe") from the XML, numa_node from the topo NUMA Affinity; '
            'a compute NIC takes the NUMA node of the GPUs it is PXB to',
        ],
        'synthetic': [
            'PCI bus numbers (GPUs 07 0F 47 4E 87 90 B7 BD, NICs 0c 12 4b 54 8d 94 ba cc, storage e1/61): '
            'modelled on the DGX A100 layout, not captured; the capture is a VM at 00:04.0',
            'storage NIC NUMA nodes 2 and 6: not determinable from the topo (SYS to every GPU); NIC PCIe Gen4 '
            'x16, PCI ids 15b3:101b (ConnectX-6)',
            'MIG profile table of the A100-SXM4-40GB (sim/mig-profiles.json) from NVIDIA\'s MIG User Guide',
        ],
        'expected_node_class': None,     # node_class_profile(), in finish()
    }
    meta['derivations'].extend(rdma_derivations)
    meta['synthetic'].extend(rdma_synthetic)
    return finish(tree, meta, src, tables)


def profile_pcie():
    name = 'pcie-4gpu-roce'
    src = Sources()
    tree = {}
    template = read_real(src.use(
        SRC_P100_XML, 'the whole -q -x XML of one Tesla P100-PCIE-16GB (driver 510.47.03 / CUDA 11.6, tab '
                      'indentation, pre-Ampere ECC and retired-pages layout, MIG N/A) as every GPU'))
    tdoc = nvidia_smi.XmlDoc(template)
    base = tdoc.blocks[0]
    topo = bundle.Topo(read_real(src.use(
        SRC_PCIE_TOPO, 'the GPU rows: 4 GPUs PHB to each other, CPU Affinity 0-7, NUMA 0, GPU NUMA ID N/A '
                       '(driver 595 layout with the extra empty field)')))
    buses = [0x02, 0x03, 0x04, 0x05]
    real_serial = nvidia_smi.get_value(base, 'serial')
    real_uuid = nvidia_smi.get_value(base, 'uuid')
    blocks = []
    for i, bus in enumerate(buses):
        block = gpu_identity_block(base, bus, 0, '%013d' % (int(real_serial) + i),
                                   derive_uuid(name, real_uuid, i), i, 0)[0]
        blocks.append(block)
    xml_text = build_xml(template, blocks, [('attached_gpus', '4')])
    bundle.put_text(tree, nvidia_smi.XML_FILE, xml_text)

    # NIC column and row derived by code; Legend and NIC Legend blocks from the same-era H100 capture
    devinfo = parse_ibv_devinfo(read_real(src.use(
        SRC_ROCE_DEVINFO, 'the RoCE NIC: name rocep1s0f0 (an ACTIVE port), fw_ver 28.45.4028, board_id '
                          'NVD0000000087, node_guid (and from it the netdev\'s Ethernet address), link_layer '
                          'Ethernet, vendor_part_id 4129 (ConnectX-7)')))
    nic_name = 'rocep1s0f0'
    hca = devinfo[nic_name]
    ncols = len(topo.devices)
    topo.header.insert(1 + ncols, 'NIC0')
    for row in topo.rows:
        row.insert(1 + ncols, 'PHB')
    gpu_row = topo.rows[0]
    topo.rows.append(['NIC0'] + ['PHB'] * ncols + [' X '] + [''] * (len(gpu_row) - 2 - ncols))
    h100_topo = read_real(src.use(SRC_H100_TOPO, 'the Legend block printed after the matrix (the aisandbox '
                                                 'capture lost it), and the NIC Legend layout'))
    legend = h100_topo[h100_topo.index('Legend:'):h100_topo.index('NIC Legend:')]
    tail_text = '\n' + legend + 'NIC Legend:\n\n  NIC0: %s\n' % nic_name
    topo.tail = tail_text.split('\n')
    bundle.put_text(tree, nvidia_smi.TOPO_FILE, topo.render())

    facts = gpu_facts(xml_text)
    bundle.put_text(tree, nvidia_smi.NVLINK_FILE, ''.join('GPU %d: %s (UUID: %s)\n' % (f['index'], f['name'], f['uuid'])
                                                          for f in facts))
    gpu_sysfs(tree, xml_text, dict((f['index'], 0) for f in facts))
    address = '0000:01:00.0'
    ibstatus = parse_ibstatus(read_real(src.use(
        SRC_A100_IBSTATUS, 'the port rate text "200 Gb/sec (4X HDR)" (a 200 Gb/s ConnectX port as sysfs '
                           'prints it); state "4: ACTIVE" / phys_state "5: LinkUp" of an active port')))
    values = {'state': ibstatus['mlx5_0']['state'], 'phys_state': ibstatus['mlx5_0']['phys state'],
              'rate': ibstatus['mlx5_0']['rate'], 'link_layer': hca['link_layer']}
    pci_device(tree, address, 3, 16, 5, 16, 0, vendor='0x' + hca['vendor_id'][2:].lower(),
               device='0x%04x' % int(hca['vendor_part_id']), pci_class='0x020000')
    ib_device(tree, nic_name, address, values, {'fw_ver': hca['fw_ver'], 'board_id': hca['board_id'],
                                                'node_guid': hca['node_guid']})
    netdevs = build_rdma.parse_ibdev2netdev(read_real(src.use(
        build_rdma.SRC_IBDEV2NETDEV, 'the netdev of rocep1s0f0: "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)"')))
    nics_meta = [{'name': nic_name, 'matrix_column': 'NIC0', 'role': 'compute', 'pci': address, 'gpus': [],
                  'link_layer': values['link_layer'], 'rate': values['rate'], 'numa_node': 0}]
    rdma_derivations, rdma_synthetic = build_rdma.add_rdma(
        tree, src, REPO, nics_meta, netdev_names={nic_name: netdevs[nic_name][1]},
        node_guids={nic_name: hca['node_guid']})
    meta = {
        'name': name,
        'node_class': 'pcie_p100',
        'description': 'PCIe-only node: 4x Tesla P100-PCIE-16GB without NVLink (PHB to each other, one NUMA '
                       'node, CPUs 0-7) and one ConnectX-7 RoCE (Ethernet link layer) port at 200 Gb/s',
        'gpu_model': nvidia_smi.get_value(base, 'product_name'),
        'driver_version': nvidia_smi.get_value(template, 'driver_version'),
        'cuda_version': nvidia_smi.get_value(template, 'cuda_version'),
        'counts': {'gpus': 4, 'nvlinks_per_gpu': 0, 'nics': 1, 'compute_nics': 1, 'numa_nodes': 1},
        'nvlink': {'relation': None, 'links_per_gpu': 0, 'link_speed': None},
        'gpus': [dict(f, numa_node=0) for f in facts],
        'nics': nics_meta,
        'derivations': [
            'every GPU is the real P100 <gpu> element; GPU i: UUID = captured UUID for i=0 else GPU-uuid5(URL, '
            '"gpuops-sim:<profile>:<captured uuid>:<i>"), serial = captured serial + i (13 digits), minor number '
            '= i, board_id = (bus << 8) | device; the capture\'s missing final newline is added (nvidia-smi ends '
            'its output with one)',
            'topo -m: the captured GPU rows, plus a NIC0 column (PHB to every GPU: one host bridge, one NUMA node) '
            'and a NIC0 row in the newer-driver shape (diagonal " X ", empty affinity fields), followed by the '
            'Legend and a NIC Legend "NIC0: rocep1s0f0"',
            'nvlink -s: a GPU without NVLink prints its "GPU N: <name> (UUID: ...)" line and no Link lines. No '
            'capture of this case is in tests/fixtures/real; other drivers print nothing, or "NVML: Unable to '
            'retrieve NVLink information as all links are inActive" for NVLink-capable GPUs with no active link',
            'sysfs: P100 Gen3 x16 ("8.0 GT/s PCIe") from the XML; the RoCE NIC links at Gen3 (the platform of '
            'the topo capture is Gen3) with a Gen5 x16 maximum (ConnectX-7); numa_node 0 for every device',
        ],
        'synthetic': [
            'GPU PCI buses 02-05 (the capture is a VM at 00:04.0); the NIC at 0000:01:00.0 as its name '
            'rocep1s0f0 (PCI bus 1, slot 0, function 0) says',
        ],
        'expected_node_class': None,     # node_class_profile(), in finish()
    }
    meta['derivations'].extend(rdma_derivations)
    meta['synthetic'].extend(rdma_synthetic)
    return finish(tree, meta, src, {})


PROFILES = {
    'h100-sxm-8gpu-ib': profile_h100,
    'a100-sxm-8gpu-ib': profile_a100,
    'pcie-4gpu-roce': profile_pcie,
}
