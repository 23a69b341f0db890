#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_plan
short_description: Decide what the RDMA role will change on a node, before it changes anything
version_added: 0.1.0
description:
  - Checks the variables of the C(gpuops.node.rdma) role that its argument spec cannot (ranges, the ToS against the
    DSCP, a DOCA mirror without URL or key, globs that select no HCA), reads the installed packages (C(dpkg-query)
    or C(rpm)) to tell which RDMA stack the host has, and selects the HCAs from the node's facts (O(facts), the
    C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts)).
  - A request the role must refuse fails the module with every problem, each starting with the variable to
    change; nothing is changed. Refused are values out of range, a glob of C(rdma_roce_hcas) or C(rdma_ipoib_hcas)
    that selects no HCA of its link layer, a RoCE HCA without a network interface, and a host with the other RDMA
    stack without C(rdma_stack_replace).
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
options:
  variables:
    description:
      - The variables of the C(gpuops.node.rdma) role by name (C(rdma_stack), C(rdma_roce_hcas), ...), as its
        argument spec documents them.
    type: dict
    required: true
  facts:
    description: The C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts) for this node.
    type: dict
    required: true
  ofed_packages:
    description:
      - Packages only DOCA-OFED or MLNX_OFED install; any of them installed, or an rdma-core whose version carries
        C(mlnx), means the host has that stack.
    type: list
    elements: str
    required: true
  package_manager:
    description: How installed packages are read.
    type: str
    choices: [apt, dnf]
    default: apt
'''

EXAMPLES = r'''
- name: Plan the RDMA role's changes
  gpuops.node.rdma_plan:
    variables:
      rdma_stack: distro
      rdma_roce_hcas: ["mlx5_*"]
      rdma_roce_priority: 3
    facts: "{{ ansible_facts.gpu_topology }}"
    ofed_packages: [doca-ofed, mlnx-ofed-kernel-utils, mlnx-tools]
  register: rdma_plan
'''

RETURN = r'''
stack:
  description: The RDMA stack the host has and the one asked for.
  returned: success
  type: dict
  contains:
    installed:
      description: C(distro), C(doca_ofed), or null when neither is installed.
      type: str
    evidence:
      description: The packages (and rdma-core version) that tell the installed stack.
      type: list
      elements: str
    wanted:
      description: C(rdma_stack).
      type: str
    replace:
      description: The host has the other stack (allowed only with C(rdma_stack_replace)).
      type: bool
    remove:
      description: The DOCA-OFED packages to remove before the distribution's stack is installed.
      type: list
      elements: str
  sample: {installed: distro, evidence: ["rdma-core 44.0-2"], wanted: distro, replace: false, remove: []}
roce:
  description: The RoCE HCAs to configure, each with its network interface and ports (empty when C(rdma_roce) is false).
  returned: success
  type: list
  elements: dict
  sample: [{hca: rocep1s0f0, netdev: enp1s0f0np0, ports: [1]}]
ipoib:
  description: >-
    The IPoIB policy: C(module) whether ib_ipoib must load, C(keep) the InfiniBand HCAs that keep IPoIB,
    C(down) those whose IPoIB interfaces are kept down (while ib_ipoib loads for the others), C(loaded) whether
    it is loaded now (null when unknown).
  returned: success
  type: dict
  sample: {module: false, keep: [], down: [], loaded: true}
errors:
  description: Every reason the role refuses, each starting with the variable to change (the module fails when there is one).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.node.packages import parse_dpkg_status, parse_rpm_installed
from ansible_collections.gpuops.node.plugins.module_utils.plans.rdma import plan

_DPKG = ['dpkg-query', '-W', '-f', '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n']
_RPM = ['rpm', '-qa', '--qf', '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}\\n']


def installed_packages(module):
    argv = _DPKG if module.params['package_manager'] == 'apt' else _RPM
    out = command.check(module, argv, fail=lambda msg: module.fail_json(
        msg='cannot list the installed packages: %s' % msg, errors=[])).out
    return parse_dpkg_status(out) if module.params['package_manager'] == 'apt' else parse_rpm_installed(out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            facts=dict(type='dict', required=True),
            ofed_packages=dict(type='list', elements='str', required=True),
            package_manager=dict(type='str', choices=['apt', 'dnf'], default='apt'),
        ),
        supports_check_mode=True,
    )
    result = plan(module.params['variables'], module.params['facts'], installed_packages(module),
                  module.params['ofed_packages'])
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
