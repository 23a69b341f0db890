#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgm_plan
short_description: Decide which DCGM packages the DCGM role installs on a node, and at which versions
version_added: 0.1.0
description:
  - Names the DCGM 4 packages of the node's OS family (O(family)) from the collection's packaging table, the same on
    Debian, Ubuntu and RHEL (NVIDIA builds them from one CMake packaging file)
    C(datacenter-gpu-manager-4-core) and C(datacenter-gpu-manager-4-cudaNN) for the CUDA major O(cuda_major), the
    profiling module's two with C(dcgm_profiling), C(datacenter-gpu-manager-exporter) with C(dcgm_exporter), and
    DCGM 3's C(datacenter-gpu-manager), which the role removes.
  - With O(read_packages), reads what the package manager offers (C(apt-cache madison), or C(dnf repoquery)) and has
    installed (C(dpkg-query), or C(rpm -q)), picks the package version of C(dcgm_version) the sources offer
    (C(1:<version>-1) from DCGM 4.4, C(1:<version>) before) and pins every DCGM package to it, the exporter to
    C(<exporter version>-1) of C(dcgm_exporter_version).
  - A version the sources do not offer fails the module, the message starting with the variable to change and
    listing what is offered; nothing is changed. A package already installed at its pin needs no offer (a mirror
    may have pruned that version).
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
  - gpuops.node.package_source
options:
  variables:
    description:
      - The variables of the C(gpuops.node.dcgm) role by name (C(dcgm_version), C(dcgm_exporter_version),
        C(dcgm_profiling), C(dcgm_exporter)), as its argument spec documents them.
    type: dict
    required: true
  family:
    description:
      - The node's OS family (C(ansible_facts.os_family)), C(Debian), C(Ubuntu) or C(RedHat). One the packaging table
        has no DCGM row for fails the module.
    type: str
    required: true
  cuda_major:
    description: The CUDA major version of the DCGM build (C(dcgm_cuda_major), else the loaded driver's).
    type: int
    required: true
  read_packages:
    description:
      - Read the versions the package manager offers and the installed ones, and pin the packages. False, nothing is
        read from the package manager (the source is not configured yet).
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Pin the DCGM packages
  gpuops.node.dcgm_plan:
    variables:
      dcgm_version: "4.6.0"
      dcgm_exporter_version: "4.6.0-4.8.3"
      dcgm_exporter: true
      dcgm_profiling: false
    family: "{{ ansible_facts.os_family }}"
    cuda_major: 12
    read_packages: true
  register: dcgm_plan
'''

RETURN = r'''
packages:
  description: The DCGM 4 packages to install, the core first (C(dcgm)), the exporter's (C(exporter), null without
    C(dcgm_exporter)) and DCGM 3's (C(dcgm3)).
  returned: success
  type: dict
  sample: {dcgm: [datacenter-gpu-manager-4-core, datacenter-gpu-manager-4-cuda12],
           exporter: datacenter-gpu-manager-exporter, dcgm3: datacenter-gpu-manager}
package_manager:
  description: The package manager of O(family), C(apt) or C(dnf), and how the role holds the packages.
  returned: success
  type: dict
  sample: {name: dnf, hold: dnf versionlock}
pins:
  description: The package version of each package to install, with O(read_packages); empty without.
  returned: success
  type: dict
  sample: {datacenter-gpu-manager-4-core: "1:4.6.0-1", datacenter-gpu-manager-4-cuda12: "1:4.6.0-1",
           datacenter-gpu-manager-exporter: 4.8.3-1}
installed:
  description: The installed version of each package of RV(pins), of DCGM 3 and of the other DCGM 4 packages
    (absent when not installed), with O(read_packages).
  returned: success
  type: dict
  sample: {datacenter-gpu-manager: "1:3.3.9"}
changes:
  description: The packages of RV(pins) that are not installed at their pinned version, with O(read_packages).
  returned: success
  type: list
  elements: str
  sample: [datacenter-gpu-manager-4-core]
stale:
  description:
    - The DCGM 4 packages installed but not pinned, with O(read_packages), which the role releases and removes
      (a CUDA build of another CUDA major once the driver moved from CUDA 12 to 13, the profiling module's packages
      without C(dcgm_profiling), the exporter's without C(dcgm_exporter)). Held at their version, each requires
      the core at exactly that version, and would stop the next DCGM version change.
  returned: success
  type: list
  elements: str
  sample: [datacenter-gpu-manager-4-cuda12]
errors:
  description: Every reason the role refuses, each starting with the variable to change (the module fails when there is one).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.node.package_manager import PackageManager
from ansible_collections.gpuops.node.plugins.module_utils.plans import dcgm as plans_dcgm


def read_packages(module, names, installed_names, manager_name, repo_url, repo_id):
    """``(offered, installed)``: ``{name: [versions]}`` the package manager offers of ``names`` (on apt those of
    ``repo_url`` when given, on dnf those of the repository ``repo_id``), and ``{name: version}`` of those of
    ``installed_names`` that are installed."""
    manager = PackageManager(module, name=manager_name, fail=lambda msg: module.fail_json(msg=msg, errors=[]))
    if manager.apt:
        offered = manager.offered(names, repo_url or None)
    else:
        repo = repo_id if repo_url and repo_id else None
        offered = dict((name, manager.available(name, repo=repo)) for name in names)
    return offered, manager.installed(list(installed_names))


def plan(params, read=None):
    """The module's result from its parameters; ``read(names, installed_names, manager, repo_url, repo_id)`` reads
    the package manager (tests pass their own)."""
    values = params['variables']
    packages, manager, error = plans_dcgm.packages_of(params.get('family') or '', values, params['cuda_major'])
    result = {'packages': packages, 'package_manager': manager, 'pins': {}, 'installed': {}, 'changes': [],
              'stale': [], 'errors': [error] if error else []}
    if error or not params.get('read_packages') or read is None:
        return result
    names = packages['dcgm'] + ([packages['exporter']] if packages['exporter'] else [])
    repo_url = params.get('repo_url') or ''
    known = plans_dcgm.known(params['family'])
    offered, installed = read(names, names + [packages['dcgm3']] + [n for n in known if n not in names],
                              manager['name'], repo_url, params.get('repo_id') or '')
    source = ('dcgm_repo_url: %s' % repo_url if repo_url
              else 'dcgm_repo_url is empty: the %s sources already configured' % manager['name'])
    pins, errors = plans_dcgm.pins(packages, offered, values, source, installed)
    result.update(pins=pins, installed=installed, errors=errors,
                  changes=[name for name in names if installed.get(name) != pins[name]],
                  stale=[name for name in known if name in installed and name not in pins])
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            variables=dict(type='dict', required=True),
            family=dict(type='str', required=True),
            cuda_major=dict(type='int', required=True),
            read_packages=dict(type='bool', default=False),
            repo_url=dict(type='str', default=''),
            repo_id=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    result = plan(module.params, lambda *args: read_packages(module, *args))
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
