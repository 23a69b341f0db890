#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_topology_facts
short_description: Read the GPU, NVLink, PCIe, NUMA and NIC topology of a node
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x), C(nvidia-smi topo -m) and C(nvidia-smi nvlink -s) and reads sysfs, or reads
    the same outputs from a capture bundle, and returns them as the C(gpu_topology) fact.
  - For every NIC whose link layer is Ethernet (RoCE) it also runs C(dcb pfc show) and C(dcb -N app show ...
    dscp-prio) on the NIC's netdev (option O(dcb)) and reads DCQCN from C(class/net/<netdev>/ecn) and the RDMA CM
    defaults from configfs C(<sysfs_root>/kernel/config/rdma_cm); a value it cannot read is null with the reason,
    never a default.
  - A node whose NVIDIA driver is not loaded is reported with RV(ansible_facts.gpu_topology.driver_loaded=false)
    and the tool's message; the module does not fail for it.
  - Output that cannot be parsed, or a query that timed out, makes the module fail with a message naming the
    command (and the line); parts that could be read are still returned. A query that exits non-zero or prints a
    failure is reported in C(outputs) and C(driver_error), not as a module failure;
    M(gpuops.node.gpu_topology_check) fails it.
  - Input is read as bytes; invalid UTF-8 is replaced and named in C(warnings), never a crash.
  - The module only reads; it never changes the node.
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.gpu_topology
attributes:
  facts:
    support: full
    description: Returns the C(gpu_topology) fact.
notes:
  - Idle GPUs report a lower current PCIe generation; C(pcie.gen_max) is what GPU and slot support together, and
    C(gpu_idle) says whether C(pcie.gen_current) can be trusted.
  - NIC names in C(matrix) are the real RDMA device names, resolved through the C(NIC Legend) that newer
    drivers print.
seealso:
  - module: gpuops.node.gpu_topology_check
'''

EXAMPLES = r'''
- name: Read the GPU topology of the node
  gpuops.node.gpu_topology_facts:

- name: Show which NIC each GPU should use
  ansible.builtin.debug:
    var: ansible_facts.gpu_topology.gpu_nic_affinity

- name: Read a capture bundle instead of the node
  gpuops.node.gpu_topology_facts:
    bundle_dir: /var/tmp/captures/node042

- name: Use a sysfs tree mounted elsewhere
  gpuops.node.gpu_topology_facts:
    nvidia_smi: /usr/bin/nvidia-smi
    sysfs_root: /host/sys
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    gpu_topology:
      description: The node's GPU topology.
      returned: always
      type: dict
      contains:
        schema_version:
          description: Layout of this snapshot; M(gpuops.node.gpu_topology_check) refuses a C(baseline) of another version.
          type: int
          returned: always
          sample: 3
        driver_loaded:
          description: Whether nvidia-smi could talk to the NVIDIA driver, and an output it printed was read and lists a GPU.
          type: bool
          returned: always
          sample: true
        driver_error:
          description:
            - Why nvidia-smi failed, or null.
            - C(kind) is one of C(driver_not_loaded) (exit 9, "couldn't communicate with the NVIDIA driver"),
              C(nvml_mismatch), C(nvml_missing), C(nvml_error), C(no_devices), C(permission_denied), C(nvidia_smi_missing) or
              C(nvidia_smi_unusable) (not an executable file); C(message) is the tool's own line; C(rc) its exit status.
          type: dict
          returned: always
          sample: {kind: driver_not_loaded, rc: 9, message: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ..."}
        driver_version:
          description: Driver version (C(Driver Version), or C(KMD Version) on newer drivers).
          type: str
          returned: always
          sample: "550.90.07"
        driver_installed_version:
          description:
            - The driver version the package manager installed (the package that owns C(libnvidia-ml.so.1), found with
              C(dpkg-query) or C(rpm)), whatever the source; null when none is installed, and for a bundle.
            - It differs from C(driver_version), the loaded one, until the node reboots into the installed driver.
          type: str
          returned: always
          sample: "550.163.01"
        driver_installed:
          description: The package behind RV(ansible_facts.gpu_topology.driver_installed_version), with C(package),
            C(package_version) and C(version); null when none is installed.
          type: dict
          returned: always
          sample: {package: libnvidia-ml1, package_version: 550.163.01-2, version: "550.163.01"}
        kernel_module:
          description:
            - C(open) or C(proprietary), from C(/proc/driver/nvidia/version) when an NVIDIA kernel module is loaded;
              null otherwise.
            - C(driver_version) comes from C(-q -x), else from the same file.
          type: str
          returned: always
          sample: open
        secure_boot:
          description:
            - Secure Boot as the firmware reports it, from efivarfs under O(sysfs_root) (C(firmware/efi/efivars)), decided
              as C(mokutil --sb-state) decides it; null for a bundle (its sys tree has no firmware).
            - C(state) is C(enabled) (SecureBoot 1, SetupMode 0), C(disabled) (SecureBoot 0, or Setup Mode),
              C(not_efi) (no C(firmware/efi), so the node did not boot through UEFI), C(unsupported) (no SecureBoot
              variable) or C(unknown) (efivarfs not mounted or unreadable, never reported as C(disabled));
              C(shim_validation) is false when shim does not validate (C(mokutil --disable-validation)); C(detail)
              says what was read.
          type: dict
          returned: always
          sample: {state: enabled, shim_validation: true, detail: "SecureBoot=1, SetupMode=0"}
        next_boot:
          description:
            - The kernel the node boots next and the NVIDIA module it would load (null for a bundle, which holds no
              C(/boot)). C(kernel) is the newest C(/boot/vmlinuz-*) by dpkg's version order, rescue images left out
              (a C(GRUB_DEFAULT) pinning another entry is not read); C(running) the running kernel; C(headers) whether
              C(/lib/modules/<kernel>/build) leads to a directory; C(module) the NVIDIA module (C(nvidia),
              C(nvidia-current), C(nvidia-current-open), C(nvidia-tesla-<branch>)) that kernel's C(modules.dep) lists,
              null when none; C(module_version) its version (C(modinfo -F version)); C(unreadable) why the rest
              could not be read (no kernel in C(/boot), no C(modules.dep)).
          type: dict
          returned: always
          sample: {kernel: 6.1.0-31-amd64, running: 6.1.0-28-amd64, headers: true,
                   module: updates/dkms/nvidia-current.ko, module_version: "535.261.03", unreadable: null}
        pci_gpus:
          description:
            - NVIDIA GPUs on the PCI bus (vendor C(0x10de), class C(0x0300) or C(0x0302)) from
              C(<sysfs_root>/bus/pci/devices), whatever the driver; null when that directory does not exist.
            - Each has C(pci_bus_id), C(device_id), C(architecture) and C(model) (from the device id; null when the id is
              not in the collection's table), C(numa_node) and C(pcie) (C(gen_current), C(gen_max), C(width_current),
              C(width_max)), in bus order.
            - On a node whose driver does not answer, the checks of GPU count, model and PCIe links use this list.
          type: list
          elements: dict
          returned: always
          sample: [{pci_bus_id: "0000:19:00.0", device_id: "0x2330", architecture: Hopper, model: NVIDIA H100 80GB HBM3,
                    numa_node: 0, pcie: {gen_current: 5, gen_max: 5, width_current: 16, width_max: 16}}]
        nvswitch_count:
          description: NVSwitches on the PCI bus (vendor C(0x10de), class C(0x0680)); null without C(bus/pci/devices).
          type: int
          returned: always
          sample: 4
        gpu_processes:
          description: Compute and graphics processes running on the GPUs, from C(-q -x), each with C(gpu), C(pid),
            C(type), C(name) and C(used_memory_mib).
          type: list
          elements: dict
          returned: always
          sample: [{gpu: 0, pid: 4242, type: C, name: python3, used_memory_mib: 1234}]
        cuda_version:
          description: CUDA version the driver supports.
          type: str
          returned: always
          sample: "12.4"
        gpu_count:
          description: Number of GPUs any output lists (C(-q -x), the topology matrix, C(nvlink -s)).
          type: int
          returned: always
          sample: 8
        gpus:
          description:
            - One entry per GPU in nvidia-smi order.
            - Keys C(index), C(uuid), C(name), C(pci_bus_id), C(pci_device_id), C(serial), C(architecture),
              C(minor_number), C(numa_node) (int or null), C(cpu_affinity) (string as printed, empty when empty),
              C(pcie) (C(gen_current), C(gen_max), C(width_current), C(width_max)), C(nvlink_active) and
              C(nvlink_total) (null without C(nvlink -s) output), C(persistence_mode), C(mig_mode),
              C(mig_mode_pending), C(mig_devices), C(mig_device_gpu_instances), C(compute_mode), C(ecc_mode), C(ecc_mode_pending),
              C(ecc_uncorrected_volatile), C(ecc_uncorrected_aggregate), C(retired_pages_pending),
              C(remapped_rows_uncorrectable), C(remapped_rows_pending), C(remapping_failure), C(performance_state),
              C(gpu_idle) (the C(gpu_idle) clocks event reason), C(sources) (the outputs that list the GPU, of C(xml),
              C(topo), C(nvlink)) and C(unreadable) (values printed as an error such as C([Unknown Error]), which are
              null and never read as 0).
            - A GPU only the matrix or C(nvlink -s) lists has the keys those outputs give.
            - Values printed as N/A are null.
          type: list
          elements: dict
          returned: always
          sample:
            - index: 0
              uuid: GPU-10f35015-e921-bfab-2eb8-4e9b6664d5f1
              name: NVIDIA H100 80GB HBM3
              pci_bus_id: "00000000:19:00.0"
              numa_node: 0
              cpu_affinity: "0-47,96-143"
              pcie: {gen_current: 5, gen_max: 5, width_current: 16, width_max: 16}
              nvlink_active: 18
              nvlink_total: 18
              persistence_mode: Enabled
              mig_mode: Disabled
              compute_mode: Default
              ecc_mode: Enabled
              ecc_uncorrected_volatile: 0
        matrix:
          description:
            - The C(topo -m) matrix, device to device to relation exactly as printed (C(X), C(NV18), C(PIX),
              C(PXB), C(PHB), C(NODE), C(SYS), C(SOC)).
            - NIC rows and columns are keyed by their real names (C(mlx5_0)), resolved through the NIC Legend.
          type: dict
          returned: always
          sample: {GPU0: {GPU0: X, GPU1: NV18, mlx5_0: PIX}, GPU1: {GPU0: NV18, GPU1: X, mlx5_0: NODE}}
        gpu_nic_affinity:
          description:
            - For each GPU, the closest relation to any NIC (order C(PIX) < C(PXB) < C(PHB) < C(NODE) < C(SYS)/C(SOC))
              and the NICs at that relation, in matrix order. Empty when the matrix names no NIC.
          type: dict
          returned: always
          sample: {GPU0: {relation: PIX, nics: [mlx5_0]}}
        nics:
          description:
            - RDMA NICs from C(<sysfs_root>/class/infiniband), else the NIC names of the matrix with no ports.
            - Each has C(name), C(numa_node), C(pci_bus_id), C(netdevs) (the HCA's network interfaces) and C(ports), a
              list of C(port), C(state)
              (upper-case word such as C(ACTIVE) or C(DOWN)), C(phys_state) (such as C(LinkUp)),
              C(rate_gbps) (number), C(link_layer) (C(InfiniBand) or C(Ethernet)), C(counters) (the port error
              counters present in sysfs, such as C(link_downed), C(symbol_error), C(port_rcv_errors), and
              C(port_xmit_packets)) and C(hw_counters) (every counter under C(ports/<n>/hw_counters), such as mlx5's
              C(roce_adp_retrans), C(local_ack_timeout_err), C(packet_seq_err), C(out_of_sequence); empty without
              that directory).
            - C(ipoib) lists the HCA's IPoIB netdevs (C(class/net/<netdev>/type) 32); null when the source cannot
              tell (a bundle without the netdevs or C(sys/module)). C(ipoib_active) lists those administratively up
              (C(IFF_UP) in C(class/net/<netdev>/flags), whatever the link; null when one cannot be read).
            - C(roce), for a NIC with an Ethernet port (null otherwise), has C(netdev) (its Ethernet netdev),
              C(ecn) (DCQCN from C(class/net/<netdev>/ecn), with C(rp) and C(np), priority (a string, as JSON keys are)
              to enabled, C(cnp_dscp), C(cnp_802p_prio)), C(pfc) (priorities with PFC on, from C(dcb pfc show)),
              C(dscp_prio) (DSCP to priorities, from C(dcb -N app show ... dscp-prio); a DSCP entry puts an mlx5 port
              in DSCP trust), C(rdma_cm) (port to C(default_roce_tos) and C(default_roce_mode), from configfs) and
              C(unreadable) (field to why it is null - no C(ecn) directory, dcb missing or failing, no configfs
              directory).
          type: list
          elements: dict
          returned: always
          sample:
            - name: mlx5_0
              numa_node: 0
              pci_bus_id: "0000:18:00.0"
              netdevs: [ens6]
              ipoib: []
              ipoib_active: []
              ports: [{port: 1, state: ACTIVE, phys_state: LinkUp, rate_gbps: 400, link_layer: Ethernet,
                       counters: {symbol_error: 0, port_rcv_errors: 0, port_xmit_packets: 10907922116},
                       hw_counters: {roce_adp_retrans: 99, local_ack_timeout_err: 131, packet_seq_err: 1}}]
              roce:
                netdev: ens6
                ecn: {rp: {"0": false, "3": true}, np: {"0": false, "3": true}, cnp_dscp: 48, cnp_802p_prio: 6}
                pfc: [3]
                dscp_prio: {"26": [3], "48": [6]}
                rdma_cm: {"1": {default_roce_tos: 106, default_roce_mode: RoCE v2}}
                unreadable: {}
        dcgm:
          description:
            - The health report of DCGM's host engine (C(dcgmi health -c -j)), as C(health) (C(overall) V(Healthy),
              V(Warning) or V(Failure), and per GPU id its C(status) and C(incidents)), or null with the reason in
              C(unreadable) (DCGM not installed, the host engine not answering, an output that cannot be read).
          type: dict
          returned: always
          sample: {health: {overall: Healthy, gpus: {}}, unreadable: null}
        mig:
          description:
            - The MIG GPU instances (C(nvidia-smi mig -lgi)) as C(instances), by GPU index (a string, as JSON keys
              are), each with C(name) (the profile, C(1g.10gb)), C(profile_id), C(id) (the GPU instance id),
              C(start) and C(size) (its placement), in the order nvidia-smi lists them.
            - C(mig -lgi) runs only when a GPU's C(mig_mode) is V(Enabled); otherwise C(instances) is empty. An
              answer of C(No GPU instances found) is an empty listing.
            - When the instances could not be listed (nvidia-smi failing, an output that cannot be read, the MIG
              modes unknown because C(-q -x) was not read), C(instances) is empty and C(unreadable) says why; the
              C(mig_devices) check then fails as C(not checked).
          type: dict
          returned: always
          sample: {instances: {"0": [{name: 3g.40gb, profile_id: 9, id: 2, start: 4, size: 4}]}, unreadable: null}
        ipoib_module_loaded:
          description: Whether C(ib_ipoib) is loaded (C(<sysfs_root>/module/ib_ipoib) exists); null without
            C(<sysfs_root>/module), as in a capture bundle.
          type: bool
          returned: always
          sample: false
        numa_nodes:
          description: NUMA node number (a string, as JSON keys are) to its CPU list, from C(<sysfs_root>/devices/system/node/node*/cpulist).
          type: dict
          returned: always
          sample: {"0": "0-47,96-143", "1": "48-95,144-191"}
        outputs:
          description:
            - What became of each nvidia-smi query, by part (C(xml), C(topo), C(nvlink)).
            - C(source) (command or bundle file), C(status) (C(ok); C(exit), a non-zero exit status with output that
              was read; C(failed), a failure message instead of output; C(timeout), killed after O(command_timeout);
              C(unreadable); C(missing); C(skipped) after the driver was found not loaded), C(rc), C(kind) and
              C(message) (the failure), C(gpus) (GPU indices it lists), C(uuids), C(complete) (false when elided);
              C(xml) also has C(attached), its C(attached_gpus).
          type: dict
          returned: always
          sample: {topo: {source: nvidia-smi topo -m, status: ok, rc: 0, kind: null, message: null, gpus: [0, 1], uuids: null, complete: true}}
        device_errors:
          description: Per-GPU errors nvidia-smi printed before its output (GPU lost, unknown error), each once.
          type: list
          elements: dict
          returned: always
          sample: [{gpu: 1, pci_bus_id: "0000:34:00.0", reason: Unknown Error}]
        missing:
          description: Inputs that were not available (bundle files, C(sys/class/infiniband)).
          type: list
          elements: str
          returned: always
          sample: [nvidia-smi-nvlink-s.txt]
        errors:
          description: Outputs that could not be read, each with C(command), C(line_no), C(line), C(reason), C(message).
          type: list
          elements: dict
          returned: always
          sample: []
        warnings:
          description: Lines or files that were skipped, and why.
          type: list
          elements: str
          returned: always
          sample: []
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.topology.module_options import (
    GATHER_ARGS, gather_for_module)


def main():
    module = AnsibleModule(argument_spec=dict(GATHER_ARGS), supports_check_mode=True)
    topology = gather_for_module(module)
    facts = {'gpu_topology': topology}
    problems = [e['message'] for e in topology['errors']]
    problems += [o['message'] for o in topology['outputs'].values() if o['status'] == 'timeout']
    if problems:
        module.fail_json(msg='could not read: %s' % '; '.join(problems), ansible_facts=facts)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == '__main__':
    main()
