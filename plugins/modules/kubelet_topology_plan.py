#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubelet_topology_plan
short_description: Decide what the kubelet_topology role will change on a node, before it changes anything
version_added: 0.1.0
description:
  - Checks the variables of the C(gpuops.node.kubelet_topology) role against the kubelet configuration the node runs
    with and the node's topology, and gives the keys to write, whether the kubelet must restart, and which state files
    of its CPU and memory managers must go first.
  - Refused, with every problem and each message starting with the variable to change, are a static CPU manager
    without any CPU reservation, reserved CPUs the node does not have (or all of them), CPU manager policy options
    that are unknown or given without the static policy, a Static memory manager whose reserved memory does not equal
    C(kubeReserved) + C(systemReserved) + the hard eviction threshold C(memory.available) (the kubelet's default
    C(100Mi) when the file has no C(evictionHard)), a configuration file that is missing or is not a
    C(KubeletConfiguration), and, in drop-in mode, a later drop-in that sets what the role writes.
  - With the C(restricted) or C(single-numa-node) topology manager policy, each GPU whose closest NIC sits on
    another NUMA node is a warning naming both and their NUMA nodes (a failure with C(kubelet_topology_strict_numa)),
    and so is a topology the facts cannot tell.
  - C(reservedMemory) for the Static memory manager, when not given, is the total reservation spread over the NUMA
    nodes that have CPUs, in whole MiB, the rest on the first.
  - A state file (C(cpu_manager_state), C(memory_manager_state)) is removed when what its manager depends on changes
    or when it names another policy than the one configured, since the kubelet refuses to start with it; one that
    holds the assignments of running pods is refused unless the node is drained (C(kubelet_topology_drain)).
  - The kubelet's defaults (C(topologyManagerScope=container), C(memoryManagerPolicy=None)) are not written where the
    configuration leaves them out, and the reservation and eviction maps are merged key by key into the file's, so a
    node already as wanted is not restarted.
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
options:
  variables:
    description: The variables of the C(gpuops.node.kubelet_topology) role by name, as its argument spec documents them.
    type: dict
    required: true
  config:
    description: The kubelet configuration file as read from the node (null when there is none).
    type: raw
  drop_ins:
    description: The C(*.conf) files of the kubelet's configuration directory, each as C(name) and C(config).
    type: list
    elements: dict
    default: []
  state:
    description:
      - The kubelet's state files as read, by name (C(cpu_manager_state), C(memory_manager_state)); a file that is
        not there is null or absent.
    type: dict
    default: {}
  facts:
    description: The C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts) for this node (empty when unread).
    type: dict
    default: {}
  cmdline:
    description:
      - The running kubelet's command line, as its arguments or as the text of C(/proc/<pid>/cmdline) (each argument
        ended by a NUL); null when it is not running.
      - The role refuses a kubelet whose C(--config), C(--root-dir) (and, in drop-in mode, C(--config-dir)) are not the
        files it writes, and flags that override the keys it writes (C(--cpu-manager-policy), C(--reserved-cpus), ...).
    type: raw
  hostname:
    description: The node's host name; lower-cased, it is the node's name in the API server without C(--hostname-override).
    type: str
'''

EXAMPLES = r'''
- name: Plan the kubelet's CPU, topology and memory managers
  gpuops.node.kubelet_topology_plan:
    variables:
      kubelet_topology_mode: merge
      kubelet_topology_config_file: /var/lib/kubelet/config.yaml
      kubelet_topology_cpu_manager_policy: static
      kubelet_topology_topology_manager_policy: restricted
      kubelet_topology_topology_manager_scope: container
      kubelet_topology_reserved_system_cpus: "0-1"
      kubelet_topology_memory_manager_policy: None
    config: "{{ kubelet_config_text | from_yaml }}"
    state:
      cpu_manager_state: {policyName: none, defaultCpuSet: "", checksum: 1353318690}
    facts: "{{ ansible_facts.gpu_topology }}"
  register: kubelet_plan
'''

RETURN = r'''
settings:
  description: The keys to write into the kubelet configuration (null removes a key), for M(gpuops.node.kubelet_config).
  returned: always
  type: dict
  sample: {cpuManagerPolicy: static, topologyManagerPolicy: restricted, reservedSystemCPUs: "0-1", reservedMemory: null}
changed_keys:
  description: The keys of the kubelet's effective configuration that change.
  returned: always
  type: list
  elements: str
  sample: [cpuManagerPolicy, reservedSystemCPUs, topologyManagerPolicy]
remove_state_files:
  description: The state files, under the kubelet's root directory, to remove while the kubelet is stopped.
  returned: always
  type: list
  elements: str
  sample: [cpu_manager_state]
restart:
  description: The kubelet must restart (a key changes, or a state file goes).
  returned: always
  type: bool
config:
  description: The configuration the kubelet will run with.
  returned: always
  type: dict
numa_apart:
  description: >-
    GPUs whose closest NIC is on another NUMA node (C(gpu), C(gpu_pci_bus_id), C(gpu_numa_node), C(nic),
    C(nic_numa_node), C(relation)), checked with the C(restricted) and C(single-numa-node) policies.
  returned: always
  type: list
  elements: dict
node_name:
  description: The node's name in the API server (C(--hostname-override), else the lower-cased host name).
  returned: always
  type: str
  sample: gpu-07
healthz:
  description: >-
    C(address), C(port) and C(url) (the loopback for a wildcard bind) of the kubelet's health endpoint once it runs
    with C(config); null when disabled (C(healthzPort: 0)).
  returned: always
  type: dict
  sample: {address: 127.0.0.1, port: 10248}
errors:
  description: Every reason the role refuses, each starting with the variable to change (the module fails when there is one).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.plans.kubelet_topology import plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            config=dict(type='raw'),
            drop_ins=dict(type='list', elements='dict', default=[]),
            state=dict(type='dict', default={}),
            facts=dict(type='dict', default={}),
            cmdline=dict(type='raw'),
            hostname=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    drop_ins = [(d.get('name'), d.get('config')) for d in p['drop_ins']]
    result = plan(p['variables'], p['config'], drop_ins, p['state'], p['facts'], cmdline=p['cmdline'],
                  hostname=p['hostname'])
    # warnings are Ansible's own return key, reported through module.warn
    for warning in result.pop('warnings'):
        module.warn(warning)
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
