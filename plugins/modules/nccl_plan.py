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
  - Names the NCCL packages of the node's OS family (O(family)) from the collection's packaging table (the
    runtime, and its headers with C(nccl_dev) or C(nccl_tests_build)), C(libnccl2) and C(libnccl-dev) on Debian
    and Ubuntu, C(libnccl) and C(libnccl-devel) on RHEL and its rebuilds.
  - With O(read_packages), reads what the package manager offers (C(apt-cache show), or C(dnf repoquery)) and has
    installed (C(dpkg-query), or C(rpm -q)), and picks the version of C(nccl_version) built for the CUDA major
    version of the driver (C(+cudaNN.M) in NVIDIA's package versions, a C(libcudartNN) dependency in the
    distribution's).
  - A request the role must refuse fails the module with every problem, each starting with the variable to
    change; nothing is changed. An NCCL variable name NCCL does not document is a warning.
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
  - gpuops.node.package_source
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
  family:
    description:
      - The node's OS family (C(ansible_facts.os_family)), C(Debian), C(Ubuntu) (the same names as Debian) or
        C(RedHat). One the packaging table has no NCCL row for fails the module.
    type: str
    required: true
  read_packages:
    description:
      - Read the versions the package manager offers and the installed ones, and pick the package version. False,
        nothing is read from the package manager (the source is not configured yet).
    type: bool
    default: false
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
    family: "{{ ansible_facts.os_family }}"
    read_packages: true
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
packages:
  description: The NCCL packages to install on this OS family, the runtime first.
  returned: success
  type: list
  elements: str
  sample: [libnccl2, libnccl-dev]
package_manager:
  description: The package manager of O(family), C(apt) or C(dnf), and how the role holds the packages.
  returned: success
  type: dict
  sample: {name: apt, hold: apt-mark hold}
package_version:
  description: The package version to install, with O(read_packages); null without.
  returned: success
  type: str
  sample: 2.23.4-1+cuda12.6
installed:
  description: The installed version of each of RV(packages) (absent when not installed), with O(read_packages).
  returned: success
  type: dict
  sample: {libnccl2: 2.21.5-1+cuda12.4}
changes:
  description: The packages of RV(packages) that are not installed at RV(package_version), with O(read_packages).
  returned: success
  type: list
  elements: str
  sample: [libnccl-devel]
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

from ansible_collections.gpuops.node.plugins.module_utils.node.package_manager import PackageManager
from ansible_collections.gpuops.node.plugins.module_utils.plans import nccl as plans_nccl


def read_packages(module, packages, manager_name, repo_url, repo_id):
    """``(entries, installed)``: the versions package manager ``manager_name`` offers of the first package
    (``[{version, depends}]``), and the installed versions."""
    manager = PackageManager(module, name=manager_name, fail=lambda msg: module.fail_json(msg=msg, errors=[]))
    first = packages[0]
    if manager.apt:
        entries = []
        for stanza in manager.show([first]):
            if stanza['package'] == first and all(e['version'] != stanza['version'] for e in entries):
                entries.append({'version': stanza['version'], 'depends': stanza['fields'].get('Depends', '')})
        if repo_url:
            offered = manager.offered([first], repo_url)[first]
            entries = [e for e in entries if e['version'] in offered]
    else:
        entries = [{'version': v, 'depends': ''}
                   for v in manager.available(first, repo=repo_id if repo_url and repo_id else None)]
    return entries, manager.installed(list(packages))


def plan(params, read=None):
    """The module's result from its parameters; ``read(packages, manager, repo_url, repo_id)`` reads the package
    manager (tests pass their own)."""
    values = params['variables']
    facts = params['facts']
    errors, warnings = plans_nccl.validate(values)
    packages, manager, family_error = plans_nccl.packages_of(params.get('family') or '', values)
    if family_error:
        errors.append(family_error)
    profile = params.get('profile') or {}
    hcas, hca_errors, hca_warnings = plans_nccl.select_hcas(facts, profile.get('nic_names'), values.get('nccl_ib_hcas') or [])
    errors.extend(hca_errors)
    warnings.extend(hca_warnings)
    (major, minor), cuda_errors = plans_nccl.cuda_of(facts, values)
    errors.extend(cuda_errors)
    gpu_count = facts.get('gpu_count') or len(facts.get('pci_gpus') or [])
    result = {'ib_hca': hcas, 'cuda': {'major': major, 'minor': minor}, 'gpu_count': gpu_count,
              'packages': packages, 'package_manager': manager,
              'package_version': None, 'installed': {}, 'changes': [], 'settings': {}, 'conf_lines': [], 'test_command': '',
              'warnings': warnings, 'errors': errors}
    if errors:
        return result
    merged = plans_nccl.settings(values, hcas)
    result.update(settings=merged, conf_lines=plans_nccl.conf_lines(merged), test_command=plans_nccl.test_command(values, gpu_count))
    if params.get('read_packages') and read is not None:
        entries, installed = read(packages, manager['name'], params.get('repo_url') or '', params.get('repo_id') or '')
        result['installed'] = installed
        version, error = plans_nccl.choose_version(entries, values.get('nccl_version') or '', (major, minor),
                                                   packages[0])
        if error:
            errors.append(error)
        result['package_version'] = version
        result['changes'] = [p for p in packages if version and installed.get(p) != version]
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            facts=dict(type='dict', required=True),
            profile=dict(type='dict', default={}),
            family=dict(type='str', required=True),
            read_packages=dict(type='bool', default=False),
            repo_url=dict(type='str', default=''),
            repo_id=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    result = plan(module.params, lambda *args: read_packages(module, *args))
    # warnings are Ansible's own return key, reported through module.warn
    for warning in result.pop('warnings'):
        module.warn(warning)
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
