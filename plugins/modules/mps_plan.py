#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mps_plan
short_description: Decide what the MPS role will write on a node, before it changes anything
version_added: 0.1.0
description:
  - Checks the variables of the C(gpuops.node.mps) role that its argument spec cannot (the active-thread percentage,
    the pinned device memory limits, the pipe and log directories, the group and client service names), resolves
    each GPU set of C(mps_gpu_sets) to the GPUs of the node's facts (O(facts), the C(gpu_topology) fact of
    M(gpuops.node.gpu_topology_facts)) and gives the environment of each set's control daemon.
  - Refused, with every problem and each message starting with the variable to change, are a GPU that is not on the
    node, a GPU in two sets, a GPU with MIG mode enabled (current or pending; the role runs MPS on whole GPUs), a
    percentage outside 1-100, a malformed pinned memory limit or one for a device a set does not have, and pipe or
    log directories that are relative or under C(/tmp), C(/var/tmp) or C(/dev/shm) (any local user could create the
    control pipe there first). Nothing is changed.
  - Gives the compute mode wanted on every GPU the role manages, C(Exclusive_Process) on the GPUs of the sets and
    C(Default) on those O(recorded) lists that no set has any more (or all of them, with C(mps_enabled) false).
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
options:
  variables:
    description:
      - The variables of the C(gpuops.node.mps) role by name (C(mps_enabled), C(mps_gpu_sets), ...), as its argument
        spec documents them.
    type: dict
    required: true
  facts:
    description: The C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts) for this node.
    type: dict
    required: true
  recorded:
    description:
      - PCI bus ids of the GPUs the role put in C(Exclusive_Process) before (its record on the node); those no set
        has any more go back to C(Default).
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Plan the MPS role's changes
  gpuops.node.mps_plan:
    variables:
      mps_enabled: true
      mps_gpu_sets: [{name: train, devices: [0, 1, 2, 3]}]
      mps_group: gpuops-mps
      mps_pipe_dir: /run/nvidia-mps
      mps_log_dir: /var/log/nvidia-mps
      mps_active_thread_percentage: 50
      mps_pinned_memory_limit: "0=8G"
      mps_client_services: []
    facts: "{{ ansible_facts.gpu_topology }}"
    recorded: ["00000000:07:00.0"]
  register: mps_plan
'''

RETURN = r'''
enabled:
  description: C(mps_enabled).
  returned: always
  type: bool
  sample: true
sets:
  description: >-
    Each GPU set in the order given: C(name), C(gpus) (C(index), C(uuid), C(pci_bus_id), C(compute_mode) as read),
    C(pipe_dir), C(log_dir), and C(env_lines), the C(NAME=value) lines of its environment file (C(GPUOPS_MPS_GPUS)
    is the bus ids the unit sets the compute mode of).
  returned: success
  type: list
  elements: dict
  sample:
    - name: train
      gpus: [{index: 0, uuid: GPU-27b94a00-ed54-5c24-b1fd-1054085de32a, pci_bus_id: "00000000:07:00.0",
              compute_mode: Default}]
      pipe_dir: /run/nvidia-mps/train
      log_dir: /var/log/nvidia-mps/train
      env_lines: [CUDA_VISIBLE_DEVICES=GPU-27b94a00-ed54-5c24-b1fd-1054085de32a,
                  CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps/train, CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps/train,
                  GPUOPS_MPS_GPUS=00000000:07:00.0]
waits_for_driver:
  description: >-
    The facts say the driver is not loaded (a bare node whose driver the rollout installs): only the values are
    checked; C(sets) and C(compute_modes) are empty, and the role is applied again after the rollout's reboot.
  returned: always
  type: bool
  sample: false
compute_modes:
  description: The compute mode wanted per PCI bus id, for the GPUs of the sets and those O(recorded) no set has.
  returned: success
  type: dict
  sample: {"00000000:07:00.0": Exclusive_Process, "00000000:0F:00.0": Default}
exclusive:
  description: The PCI bus ids of the GPUs the role puts in C(Exclusive_Process) (its new record).
  returned: success
  type: list
  elements: str
  sample: ["00000000:07:00.0"]
client_env:
  description: The C(NAME=value) lines of the clients' environment (the first set's pipe and log directories).
  returned: success
  type: list
  elements: str
  sample: [CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps/train, CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps/train]
errors:
  description: Every reason the role refuses, each starting with the variable to change (the module fails when there is one).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.plans.mps import plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            facts=dict(type='dict', required=True),
            recorded=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    result = plan(module.params['variables'], module.params['facts'], module.params['recorded'])
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
