#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_topology_check
short_description: Validate a node's GPU topology against its node class, and against a baseline
version_added: 0.1.0
description:
  - Gathers the topology like M(gpuops.node.gpu_topology_facts) and compares it with O(expected), the
    profile the node's class declares in inventory.
  - With O(baseline), a C(gpu_topology) snapshot taken before a change, also reports what got worse
    (GPUs lost, NVLink or NIC links lost, PCIe down-trained, ports gone down, new port errors or RoCE
    retransmissions, new ECC errors).
    This is the before/after comparison that wraps every change.
  - A check that cannot be made because its input is missing is a failure whose C(actual) is
    C(not checked); it never passes silently.
  - The module only reads; it never changes the node.
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.gpu_topology
options:
  expected:
    description:
      - The node-class profile. Every key is optional; an unknown key or a bad value is an error, before anything
        is read from the node.
      - Whatever the profile says, the check fails when nvidia-smi cannot be read (C(driver_loaded)), when an
        output cannot be parsed (C(output_unreadable)), exits non-zero (C(nvsmi_exit)) or times out
        (C(nvsmi_timeout)), when the outputs list different GPUs (C(outputs_disagree)) and when nvidia-smi could
        not read a GPU (C(gpu_error)).
      - A key whose input is missing or could not be read for a GPU gives a failure whose C(actual) is
        C(not checked) for that GPU, never a pass.
      - The keys, from the collection's table of checks (docs/topology.md shows the same table with the role
        that converges each key).
      # generated from topology_check.CHECKS by tests/scripts/check_table.py
      - "C(gpu_count) (int): number of GPUs (on the PCI bus when no driver answers)."
      - "C(gpu_model) (glob): glob matched against every GPU name, e.g. \"NVIDIA H100*\"."
      - "C(driver_version) (glob): glob matched against the driver version, e.g. \"550.*\"."
      - "C(pcie_gen_min) (int): lowest acceptable PCIe generation: supported (gen_max), and current when busy."
      - "C(pcie_width_min) (int): lowest acceptable current PCIe link width."
      - "C(nvlink_relation) (relation such as NV18): topology relation required between every GPU pair, e.g. \"NV18\"."
      - "C(nvlink_active_links) (int): active NVLink links required on every GPU."
      - "C(persistence_mode) (Enabled or Disabled): \"Enabled\" or \"Disabled\" on every GPU."
      - "C(ecc_mode) (Enabled or Disabled): \"Enabled\" or \"Disabled\" on every GPU."
      - "C(mig_mode) (Enabled or Disabled): \"Enabled\" or \"Disabled\" on every GPU."
      - "C(mig_devices) (mig-parted entries): the entries of one mig-parted configuration: the MIG mode and exact GPU instances of each GPU they match."
      - "C(compute_mode) (str, or GPU index -> str): one compute mode for every GPU (\"Default\"), or one per GPU index, \"*\" for the others."
      - "C(max_ecc_uncorrected) (int): most uncorrectable ECC errors tolerated per GPU (volatile and aggregate)."
      - "C(allow_retired_pages_pending) (bool): whether a GPU may have page retirement pending."
      - "C(allow_remapped_rows_pending) (bool): whether a GPU may have row remapping pending or failed."
      - "C(nic_names) (list of globs): globs selecting the NICs the NIC checks apply to (leave out to select all)."
      - "C(nic_count) (int): number of selected NICs."
      - "C(nic_port_state) (str): state every port of the selected NICs must be in, e.g. \"ACTIVE\"."
      - "C(nic_link_layer) (str): \"InfiniBand\" or \"Ethernet\" for every port of the selected NICs."
      - "C(nic_rate_min_gbps) (number): lowest acceptable port rate in Gb/s."
      - "C(nic_link_downed_max) (int): most link_downed events tolerated per port of the selected NICs."
      - "C(nic_symbol_errors_max) (int): most symbol_error counts tolerated per port of the selected NICs."
      - "C(nic_rcv_errors_max) (int): most port_rcv_errors tolerated per port of the selected NICs."
      - "C(nic_retrans_ratio_max) (number): most RoCE retransmissions per packet sent, in percent, on each Ethernet port of the selected NICs."
      - "C(nic_ipoib) (bool): whether the selected InfiniBand NICs may carry IPoIB (false: no IPoIB netdev of theirs is up)."
      - "C(nic_roce_dcqcn) (priority 0-7): priority on which DCQCN (roce_rp and roce_np) is enabled on every selected Ethernet NIC."
      - "C(nic_pfc_priority) (priority 0-7): the one priority with PFC on (dcb) on every selected Ethernet NIC."
      - "C(dcgm_health) (bool): true: the DCGM host engine answers and its health watches (dcgmi health -c) report no failure."
      - "C(next_boot_driver) (bool): true: the kernel the node boots next (newest in /boot) has an NVIDIA module, of the installed version."
      - "C(gpu_nic_relation_max) (PCIe relation): worst allowed relation from each GPU to its closest selected NIC that exists in sysfs."
      - "C(numa_balance) (bool): GPUs must be spread evenly over the NUMA nodes that hold GPUs."
      # end of generated lines
    type: dict
    default: {}
  baseline:
    description:
      - A previous C(gpu_topology) snapshot (for example the RV(gpu_topology) this module returned before a change).
      - When set, RV(regressions) lists what got worse since then, and any regression fails the check.
      - Anything but a snapshot of the current C(schema_version) is refused before the node is read, saying what was
        given (a whole registered result instead of its C(gpu_topology), an empty or partial dict, a snapshot of
        another schema, wrong types).
      - A baseline that shares no GPU UUID or serial with the node fails as belonging to another node.
    type: dict
  defer_roles:
    description:
      - Roles of this collection that run after this check and converge some keys of O(expected), for example
        V(nvidia_driver) on a bare node. The checks those roles own (the table of docs/topology.md) are not made now;
        each is listed in RV(deferred). Hardware checks still run.
      - When V(nvidia_driver) is listed and the driver is not loaded, the checks that need nvidia-smi are deferred
        with it.
    type: list
    elements: str
    choices: [dcgm, mig, mps, nvidia_driver, rdma]
    default: []
  fail_on_mismatch:
    description:
      - Fail the task when there is any failure or regression.
      - Set to V(false) to only report, for example to write a rack report first.
    type: bool
    default: true
seealso:
  - module: gpuops.node.gpu_topology_facts
'''

EXAMPLES = r'''
- name: Check a DGX H100 against its node class
  gpuops.node.gpu_topology_check:
    expected:
      gpu_count: 8
      gpu_model: NVIDIA H100*
      nvlink_relation: NV18
      pcie_gen_min: 5
      pcie_width_min: 16
      # the 8 compute rails of this node (its storage and in-band NICs left out)
      nic_names: ['mlx5_[0-25-8]', 'mlx5_11']
      nic_count: 8
      nic_port_state: ACTIVE
      nic_link_layer: InfiniBand
      nic_rate_min_gbps: 400
      gpu_nic_relation_max: PIX
      max_ecc_uncorrected: 0
      allow_remapped_rows_pending: false

- name: Snapshot before a change
  gpuops.node.gpu_topology_check:
    expected: "{{ gpuops_node_class_profile }}"
    fail_on_mismatch: false
  register: pre_check

- name: After the change, compare with the snapshot
  gpuops.node.gpu_topology_check:
    expected: "{{ gpuops_node_class_profile }}"
    baseline: "{{ pre_check.gpu_topology }}"
'''

RETURN = r'''
passed:
  description: True when there is no failure and no regression.
  returned: success
  type: bool
  sample: false
failures:
  description:
    - Every mismatch with O(expected), and every built-in check that failed.
    # generated from topology_check.CHECKS by tests/scripts/check_table.py
    - C(check) is one of C(output_unreadable), C(nvsmi_exit), C(nvsmi_timeout), C(outputs_disagree),
      C(gpu_error), C(nic_missing), C(driver_loaded), C(gpu_count), C(gpu_model), C(driver_version),
      C(pcie_gen), C(pcie_width), C(nvlink_relation), C(nvlink_active_links), C(persistence_mode),
      C(ecc_mode), C(mig_mode), C(mig_devices), C(compute_mode), C(ecc_uncorrected), C(retired_pages_pending),
      C(remapped_rows_pending), C(nic_count), C(nic_port_state), C(nic_link_layer), C(nic_rate),
      C(nic_link_downed), C(nic_symbol_errors), C(nic_rcv_errors), C(nic_retrans_ratio), C(nic_ipoib),
      C(nic_roce_dcqcn), C(nic_pfc_priority), C(dcgm_health), C(next_boot_driver), C(gpu_nic_relation),
      C(numa_balance).
    # end of generated lines
  returned: success
  type: list
  elements: dict
  contains:
    check:
      description: Name of the check.
      type: str
      returned: always
      sample: nvlink_active_links
    subject:
      description: What was checked (C(node), C(GPU3), C(GPU0-GPU3), C(mlx5_2/1)).
      type: str
      returned: always
      sample: GPU3
    expected:
      description: What the profile asked for.
      type: raw
      returned: always
      sample: 18
    actual:
      description: What the node has, or C(not checked) when the input was missing or could not be read.
      type: raw
      returned: always
      sample: 16
    message:
      description: One line for a human.
      type: str
      returned: always
      sample: GPU3 has 16 active NVLink links, expected 18
regressions:
  description:
    - What got worse since O(baseline); empty without it.
    - C(check) is one of C(gpu_lost), C(nvlink_lost), C(nic_lost), C(nic_port_down), C(nic_errors_new),
      C(nic_retrans_new) (a RoCE retransmission counter of C(hw_counters) rose), C(pcie_downtrained),
      C(ecc_errors_new), C(not_compared); C(before) and C(after) are the two values.
    - A value read before the change that cannot be read now has C(after) C(not checked); an output read before
      and not now (unreadable, timed out, missing) is a C(not_compared) regression.
  returned: success
  type: list
  elements: dict
  sample: [{check: nic_port_down, subject: mlx5_2/1, before: ACTIVE, after: DOWN, message: mlx5_2/1 went from ACTIVE to DOWN}]
baseline_gaps:
  description:
    - Outputs the O(baseline) could not read and the node can now (for example the driver was installed in between);
      what they cover was not compared. Also shown as warnings; not a failure.
  returned: success
  type: list
  elements: str
  sample: ["nvidia-smi nvlink -s was timeout in the baseline: NVLink link regressions were not compared"]
deferred:
  description:
    - The checks not made because a role in O(defer_roles) converges them in this run, each with C(check), C(key)
      (the profile key, or null for a built-in check), C(role) and C(why).
  returned: success
  type: list
  elements: dict
  sample: [{check: driver_loaded, key: null, role: nvidia_driver, why: converged by the nvidia_driver role in this run}]
gpu_topology:
  description: The gathered snapshot, in the schema of M(gpuops.node.gpu_topology_facts); use it as the next O(baseline).
  returned: success
  type: dict
  sample: {driver_loaded: true, gpu_count: 8}
msg:
  description: Summary of the outcome.
  returned: always
  type: str
  sample: 2 failure(s), 0 regression(s)
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.topology.module_options import (
    GATHER_ARGS, gather_for_module)
from ansible_collections.gpuops.node.plugins.module_utils.topology.baseline import (
    baseline_gaps, find_regressions, other_node, validate_baseline)
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import ROLES, run_checks, validate_profile


def main():
    argument_spec = dict(GATHER_ARGS)
    argument_spec.update(
        expected=dict(type='dict', default={}),
        baseline=dict(type='dict'),
        defer_roles=dict(type='list', elements='str', default=[], choices=list(ROLES)),
        fail_on_mismatch=dict(type='bool', default=True),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    problems = validate_profile(module.params['expected'])
    if problems:
        module.fail_json(msg='invalid expected profile: %s' % '; '.join(problems))
    baseline = module.params['baseline']
    if baseline is not None:
        problems = validate_baseline(baseline)
        if problems:
            module.fail_json(msg='invalid baseline: %s' % '; '.join(problems))

    topology = gather_for_module(module)
    stranger = other_node(baseline, topology) if baseline is not None else None
    if stranger:
        module.fail_json(msg=stranger, gpu_topology=topology)
    failures, deferred = run_checks(topology, module.params['expected'], module.params['defer_roles'])
    regressions = find_regressions(baseline, topology) if baseline is not None else []
    gaps = baseline_gaps(baseline, topology) if baseline is not None else []
    for gap in gaps:
        module.warn(gap)
    passed = not failures and not regressions
    msg = '%d failure(s), %d regression(s)' % (len(failures), len(regressions))
    if deferred:
        msg += ', %d deferred' % len(deferred)
    result = dict(changed=False, passed=passed, failures=failures, regressions=regressions, deferred=deferred,
                  baseline_gaps=gaps, gpu_topology=topology, msg=msg)
    if not passed and module.params['fail_on_mismatch']:
        details = '; '.join(f['message'] for f in (failures + regressions)[:10])
        if len(failures) + len(regressions) > 10:
            details += '; ...'
        result['msg'] = '%s: %s' % (msg, details)
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
