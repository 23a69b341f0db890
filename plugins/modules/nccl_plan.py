#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nccl_plan
short_description: Decide what the NCCL role will install and write on a node, before it changes anything
version_added: 0.1.0
description:
  - Checks the variables of the C(gpuops.node.nccl) role that its argument spec cannot (NCCL variable names and
    values, ranges, sources, the nccl-tests build, the acceptance gate), derives C(NCCL_IB_HCA) from the node's
    facts (O(facts), the C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts)) and gives the lines of
    C(/etc/nccl.conf).
  - C(NCCL_IB_HCA) lists the RDMA devices closest to the GPUs (their C(nvidia-smi topo -m) relations) among those
    the node class's C(nic_names) globs select, so storage and front-end NICs stay out; or exactly the devices
    C(nccl_ib_hcas) selects. It is written with NCCL's C(=) prefix (exact names) and each device's ports
    (C(=mlx5_0:1,mlx5_1:1)).
  - With O(packages), reads what apt offers (C(apt-cache show)) and has installed (C(dpkg-query)), and picks the
    version of C(nccl_version) built for the CUDA major version of the driver (C(+cudaNN.M) in NVIDIA's package
    versions, a C(libcudartNN) dependency in the distribution's).
  - A request the role must refuse fails the module with every problem, each starting with the variable to
    change; nothing is changed. An NCCL variable name NCCL does not document is a warning.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: The module only reads.
  diff_mode:
    support: none
    description: The module changes nothing, so it has no difference to show.
options:
  variables:
    description:
      - The variables of the C(gpuops.node.nccl) role by name (C(nccl_settings), C(nccl_ib_hcas), ...), as its
        argument spec documents them.
    type: dict
    required: true
  facts:
    description: The C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts) for this node.
    type: dict
    required: true
  profile:
    description:
      - The node class profile (C(gpuops_node_class_profile)); its C(nic_names) globs select the compute NICs.
        Without it, or without C(nic_names), every RDMA device is a candidate.
    type: dict
    default: {}
  packages:
    description:
      - The NCCL packages to install (C(libnccl2), C(libnccl-dev)); the first one's versions are read from apt.
        Empty, nothing is read from the package manager.
    type: list
    elements: str
    default: []
  repo_url:
    description:
      - With O(packages), count only the versions this repository offers (C(apt-cache madison)); empty, every
        source apt has.
    type: str
    default: ''
'''

EXAMPLES = r'''
- name: Plan the NCCL role's changes
  gpuops.node.nccl_plan:
    variables:
      nccl_version: "2.23.4"
      nccl_settings: {NCCL_DEBUG: WARN}
      nccl_ib_hcas: []
    facts: "{{ ansible_facts.gpu_topology }}"
    profile: "{{ gpuops_node_class_profile }}"
    packages: [libnccl2, libnccl-dev]
  register: nccl_plan
'''

RETURN = r'''
settings:
  description: The NCCL variables of C(/etc/nccl.conf) by name.
  returned: success
  type: dict
  sample: {NCCL_BUFFSIZE: "4194304", NCCL_IB_HCA: "=mlx5_0:1,mlx5_1:1", NCCL_NSOCKS_PERTHREAD: "8"}
conf_lines:
  description: The C(NAME=value) lines of C(/etc/nccl.conf), sorted by name.
  returned: success
  type: list
  elements: str
  sample: ["NCCL_BUFFSIZE=4194304", "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"]
ib_hca:
  description: The C(device:port) entries of C(NCCL_IB_HCA) (empty when it is not set).
  returned: success
  type: list
  elements: str
  sample: ["mlx5_0:1", "mlx5_1:1"]
cuda:
  description: The CUDA version the packages must match (C(minor) null when unknown).
  returned: success
  type: dict
  sample: {major: 12, minor: 3}
gpu_count:
  description: The GPUs of the node (the driver's count, else those on the PCI bus).
  returned: success
  type: int
  sample: 8
package_version:
  description: The package version to install, with O(packages); null without.
  returned: success
  type: str
  sample: 2.23.4-1+cuda12.6
installed:
  description: The installed version of each of O(packages) (absent when not installed).
  returned: success
  type: dict
  sample: {libnccl2: 2.21.5-1+cuda12.4}
test_command:
  description: The command of the acceptance gate (C(nccl_test_command), else all_reduce_perf of the built nccl-tests over every GPU, else empty).
  returned: success
  type: raw
  sample: /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 8
errors:
  description: Every reason the role refuses, each starting with the variable to change (the module fails when there is one).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.plans import nccl as plans_nccl
from ansible_collections.gpuops.node.plugins.module_utils.node.packages import parse_dpkg_status, parse_madison

_DPKG = ['dpkg-query', '-W', '-f', '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n']


def _run(module, argv, allowed=(0,)):
    return command.check(module, argv, allowed, fail=lambda msg: module.fail_json(msg=msg, errors=[])).out


def read_packages(module, packages, repo_url):
    """``(entries, installed)``: the versions apt offers of the first package, and the installed versions."""
    entries = plans_nccl.parse_apt_show(_run(module, ['apt-cache', 'show', packages[0]], allowed=(0, 100)), packages[0])
    if repo_url:
        offered = parse_madison(_run(module, ['apt-cache', 'madison', packages[0]]), packages[0], repo_url)
        entries = [e for e in entries if e['version'] in offered]
    # dpkg-query exits 1 when a named package is unknown to dpkg
    status = parse_dpkg_status(_run(module, _DPKG + list(packages), allowed=(0, 1)))
    return entries, dict((p, status[p]) for p in packages if p in status)


def plan(params, read=None):
    """The module's result from its parameters; ``read(packages, repo_url)`` reads apt (tests pass their own)."""
    values = params['variables']
    facts = params['facts']
    errors, warnings = plans_nccl.validate(values)
    profile = params.get('profile') or {}
    hcas, hca_errors, hca_warnings = plans_nccl.select_hcas(facts, profile.get('nic_names'), values.get('nccl_ib_hcas') or [])
    errors.extend(hca_errors)
    warnings.extend(hca_warnings)
    (major, minor), cuda_errors = plans_nccl.cuda_of(facts, values)
    errors.extend(cuda_errors)
    gpu_count = facts.get('gpu_count') or len(facts.get('pci_gpus') or [])
    result = {'ib_hca': hcas, 'cuda': {'major': major, 'minor': minor}, 'gpu_count': gpu_count,
              'package_version': None, 'installed': {}, 'settings': {}, 'conf_lines': [], 'test_command': '',
              'warnings': warnings, 'errors': errors}
    if errors:
        return result
    merged = plans_nccl.settings(values, hcas)
    result.update(settings=merged, conf_lines=plans_nccl.conf_lines(merged), test_command=plans_nccl.test_command(values, gpu_count))
    if params.get('packages') and read is not None:
        entries, installed = read(params['packages'], params.get('repo_url') or '')
        result['installed'] = installed
        version, error = plans_nccl.choose_version(entries, values.get('nccl_version') or '', (major, minor))
        if error:
            errors.append(error)
        result['package_version'] = version
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            facts=dict(type='dict', required=True),
            profile=dict(type='dict', default={}),
            packages=dict(type='list', elements='str', default=[]),
            repo_url=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    result = plan(module.params, lambda packages, url: read_packages(module, packages, url))
    # warnings are Ansible's own return key, reported through module.warn
    for warning in result.pop('warnings'):
        module.warn(warning)
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
