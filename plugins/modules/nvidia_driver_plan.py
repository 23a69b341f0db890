#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nvidia_driver_plan
short_description: Decide what the NVIDIA driver role will change on a node, before it changes anything
version_added: 0.1.0
description:
  - Reads what the package manager offers and has installed (C(apt-cache madison), C(dpkg-query), C(apt-mark
    showhold), or C(dnf repoquery), C(rpm -q), C(dnf versionlock list)) and the DKMS state (C(dkms status) and the
    C(make.log) of a failed build), and combines them with the node's bare-node facts (O(facts), the
    C(gpu_topology) fact of M(gpuops.node.gpu_topology_facts)) into the plan of the C(gpuops.node.nvidia_driver)
    role.
  - The plan names the kernel module flavour (O(kernel_module=auto) chooses open from Turing on and on
    Blackwell and Grace Hopper, proprietary before Turing, from the GPUs on the PCI bus), the target version (with
    no branch or version, the newest the source offers that drives every GPU, which is the newest 580 on
    Maxwell, Pascal and Volta, and on Blackwell and Grace Hopper none older than the first release whose open
    modules list the GPU), the action
    (C(install), C(upgrade), C(downgrade), C(switch) of flavour, or C(none)), the package specs to install, the
    packages to remove, unhold and hold, and the fabric manager (wanted where the node has NVSwitches, at exactly
    the driver's version).
  - A request the role must refuse fails the module with a message that starts with the variable to change, and
    C(variable) set to it; nothing is changed. Refused are a downgrade without O(allow_downgrade), a change of an
    installed driver while GPU processes run without O(force), a node whose Secure Boot would keep an unsigned
    module from loading without O(secure_boot_signed), open modules on a GPU older than Turing,
    proprietary modules where only open drives the GPU, a branch the GPUs cannot use (a branch newer than 580
    on Pascal, one older than 580.82.07 on B300), a version or branch the source does not offer, and a fabric manager
    the source does not have at the driver's version.
  - O(mode=inspect) only reads the packages and DKMS, for a role that needs to say why an installation failed.
author:
  - gpuops.node maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.node.plan
options:
  mode:
    description:
      - C(plan) decides the plan.
      - C(check) only checks the request against itself and the GPUs in O(facts) (version and branch form, kernel
        module flavour), without reading the package manager.
      - C(inspect) only reads the installed packages, holds and DKMS.
    type: str
    choices: [plan, check, inspect]
    default: plan
  packages:
    description:
      - The driver packages per kernel module flavour, installed together at the same version; the first of each
        list is the one whose available versions decide the target (the kernel module package, because on Debian 12
        the open modules lag the proprietary ones). C({branch}) in a name is replaced by the branch (Ubuntu names packages by
        branch), which O(branch) or O(version) must then give.
      - Unset, the packages, the fabric manager's names, nvidia-persistenced's package (with O(persistenced)) and
        NVIDIA's pinning packages come from the packaging table (C(plugins/module_utils/plans/nvidia_packaging.py),
        docs/packaging.md) for O(family), O(source) and the target's branch; O(family) and O(source) are then
        required. O(fabricmanager_packages) and O(extra_packages) are ignored then.
      - Every package the named ones depend on that the source offers at exactly the target's package version is
        installed and held with them (C(plan.closure), read with C(apt-cache show) and C(apt-cache madison), or with
        C(dnf repoquery) from the plan's own repository), so that a version older than the newest installs, and on
        dnf a lock holds every package of the driver's version (without a module stream, as on RHEL 10, an unlocked
        one would make C(dnf upgrade) fail).
    type: dict
    suboptions:
      open:
        description: Packages of the open kernel modules.
        type: list
        elements: str
        required: true
      proprietary:
        description: Packages of the proprietary kernel modules.
        type: list
        elements: str
        required: true
  fabricmanager_packages:
    description:
      - The fabric manager's package name by branch, for example C(nvidia-fabricmanager-{branch}) before branch 580
        and C(nvidia-fabricmanager) from 580 on (C({branch}) is replaced by the target's branch); the first entry
        whose O(fabricmanager_packages[].since_branch) the target reaches. Empty when the source has none.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Package name, C({branch}) replaced by the branch.
        type: str
        required: true
      since_branch:
        description: The first branch that uses this name.
        type: int
        default: 0
  extra_packages:
    description:
      - Packages installed with the driver, such as nvidia-persistenced; C({branch}) in a name is replaced by the
        branch.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Package name.
        type: str
        required: true
      versioned:
        description: Installed and held at the driver's package version (else installed when missing).
        type: bool
        default: false
  persistenced:
    description: With the packages from the table, install nvidia-persistenced's package too.
    type: bool
    default: false
  pinning:
    description:
      - With the packages from the table, install NVIDIA's pinning package of the target where the source offers
        one (its apt preferences pin the driver at priority 1000). Either way, a pinning package of another
        version or branch is removed, as it would pin apt to another driver.
    type: bool
    default: true
  repo_url:
    description:
      - The repository the driver comes from (C(cuda_repo), C(mirror)); only versions it offers count, as other
        apt sources (Debian's non-free) carry packages of the same names. Unset for C(distro). apt only.
    type: str
  source:
    description: The role's source (C(distro), C(cuda_repo), C(mirror)), named in messages.
    type: str
  repo_id:
    description:
      - The dnf repository the driver comes from (dnf only). Its versions are read with its modular filtering off
        (C(module_hotfixes)), so that every branch it carries counts, not only the enabled or default stream's;
        C(plan.module_stream) then names the stream of the target's branch to enable. Unset, dnf's own view.
    type: str
  family:
    description:
      - The node's OS family in the packaging table (C(Ubuntu), C(Debian), C(RedHat)). With O(packages) unset, the
        packages of the table's row for it, O(source) and the target's branch; a driver installed from another
        branch range's row (Ubuntu names its packages by branch up to 580 and without from 590) counts as the
        installed one, and its packages are removed with the change. Unset, O(packages) must be given.
    type: str
    choices: [Ubuntu, Debian, RedHat]
  repository:
    description:
      - NVIDIA's repository for the OS (C(ubuntu2404), C(debian13), C(rhel9)); with O(source=cuda_repo), a branch it
        does not carry (debian13 has no 580) is refused, naming O(branch). Unset, no such check.
    type: str
  fabricmanager:
    description: C(auto) installs the fabric manager where the node has NVSwitches and removes it elsewhere.
    type: str
    choices: [auto, present, absent]
    default: auto
  kernel_module:
    description: Kernel module flavour.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  branch:
    description: Driver branch to install (C(550)); the newest version of it.
    type: str
  version:
    description: Exact driver version to install (C(550.163.01)).
    type: str
  allow_downgrade:
    description: Allow installing a version older than the installed one.
    type: bool
    default: false
  force:
    description: Change an installed driver even while GPU processes are running.
    type: bool
    default: false
  secure_boot_signed:
    description:
      - The site signs the kernel module with a key enrolled in the MOK list (or Secure Boot is known not to
        matter). Without it, a node whose firmware has Secure Boot on (the C(secure_boot) of O(facts)) and no NVIDIA
        module loaded is refused, and so is one whose Secure Boot state could not be read.
    type: bool
    default: false
  facts:
    description: The node's C(gpu_topology) fact (C(pci_gpus), C(nvswitch_count), C(gpu_processes), loaded driver).
    type: dict
    default: {}
  dkms_modules:
    description: DKMS module names of the driver (Debian builds C(nvidia-current), NVIDIA's packages C(nvidia)).
    type: list
    elements: str
    default: [nvidia, nvidia-current]
notes:
  - Versions are ordered as dpkg orders them (epoch, upstream, revision with C(~) first).
seealso:
  - module: gpuops.node.gpu_topology_facts
'''

EXAMPLES = r'''
- name: Read the bare-node facts
  gpuops.node.gpu_topology_facts:

- name: Plan the driver change
  gpuops.node.nvidia_driver_plan:
    packages:
      open: [nvidia-driver, nvidia-open-kernel-dkms, nvidia-smi]
      proprietary: [nvidia-driver, nvidia-kernel-dkms, nvidia-smi]
    branch: "535"
    facts: "{{ ansible_facts.gpu_topology }}"
  register: driver_plan
'''

RETURN = r'''
plan:
  description: What the role will do; empty with O(mode=inspect).
  returned: success
  type: dict
  contains:
    kernel_module:
      description: The flavour chosen (C(open) or C(proprietary)), and C(kernel_module_reason) why.
      type: str
      sample: open
    action:
      description: C(install), C(upgrade), C(downgrade), C(switch) (same version, other flavour or packages) or C(none).
      type: str
      sample: upgrade
    target_version:
      description: The driver version to run, and C(target_package_version) its package version.
      type: str
      sample: 550.163.01
    installed_version:
      description: The driver version installed now (null when none), and C(installed_kernel_module) its flavour.
      type: str
    install:
      description: Package specs (C(name=version)) to install; empty when nothing changes.
      type: list
      elements: str
    remove:
      description:
        - Packages to remove (the other flavour's, another branch range's, what those coupled at their installed
          version, other pinning packages, a fabric manager no longer wanted).
      type: list
      elements: str
    unhold:
      description: Held packages this change touches, to release first.
      type: list
      elements: str
    hold:
      description: Packages to hold once installed.
      type: list
      elements: str
    fabricmanager:
      description: C(wanted), C(package), C(package_version) and C(nvswitch_count).
      type: dict
    closure:
      description:
        - The packages beyond the named ones that the named ones depend on at exactly the target's package version
          (installed and held with them).
      type: list
      elements: str
    pinning:
      description:
        - NVIDIA's pinning package for the target (C(package), C(package_version), C(install)), installed in its own
          transaction before the driver and held; null when the table names none or the source offers none. Other
          pinning packages installed are in C(remove).
      type: dict
    module_stream:
      description:
        - On a modular dnf repository (NVIDIA's RHEL 8/9 ones), the stream the target needs (C(module), C(stream),
          as C(nvidia-driver) and C(580-open)), the stream enabled now (C(enabled)) and C(change), C(none),
          C(enable) or C(switch) (reset the module, then enable). Null on apt, and where no repository has the module.
      type: dict
installed:
  description: Installed packages among those the plan considers, name to package version.
  returned: always
  type: dict
held:
  description: Held (version-locked) packages.
  returned: always
  type: list
  elements: str
dkms:
  description: The driver's DKMS entries (C(module), C(version), C(kernel), C(arch), C(status), C(note)).
  returned: always
  type: list
  elements: dict
dkms_build_errors:
  description:
    - The first error lines of the DKMS C(make.log) of each driver module version that is not installed for the
      kernel the node boots, keyed C(module/version).
  returned: always
  type: dict
kernel_packages:
  description:
    - The installed kernel packages, name to version, that the role holds with the driver where
      C(nvidia_driver_hold_kernel) asks. With apt every C(linux-image-*), C(linux-headers-*) and C(linux-modules-*)
      but Ubuntu's precompiled NVIDIA modules (the driver's); with dnf C(kernel), C(kernel-core), C(kernel-modules),
      C(kernel-modules-extra), C(kernel-devel), C(kernel-devel-matched) and C(kernel-headers), as
      linux-system-roles/hpc locks them, with C(kernel-modules-core) and the C(kernel-64k) packages.
  returned: in mode C(inspect)
  type: dict
kernels:
  description:
    - C(boot), the kernel the node boots next (the newest C(/boot/vmlinuz-*) by dpkg's version order, rescue images
      left out), C(running), the running kernel, and C(headers_for), those of the two that are in C(/boot), for which
      DKMS must build the module.
  returned: always
  type: dict
variable:
  description: The role variable that made the plan fail.
  returned: failure
  type: str
'''

import glob
import os
import platform
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers import dkms as parsers_dkms
from ansible_collections.gpuops.node.plugins.module_utils.node import packages as node_packages
from ansible_collections.gpuops.node.plugins.module_utils.node.boot_kernel import boot_kernels
from ansible_collections.gpuops.node.plugins.module_utils.node.package_manager import PackageManager
from ansible_collections.gpuops.node.plugins.module_utils import versions as V
from ansible_collections.gpuops.node.plugins.module_utils.plans import gpu_driver_support
from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import (
    PlanError, add_closure, check_request, dependency_closure, expand_packages, fabricmanager_name, guard_processes,
    plan)
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

DKMS_TREE = '/var/lib/dkms'


def read_dkms(module, names, boot):
    """The driver's ``dkms status`` entries, and the first errors of each make.log of a version not installed for
    ``boot``, the kernel the node boots next."""
    dkms = module.get_bin_path('dkms')
    if dkms is None:
        return [], {}
    out = command.check(module, [dkms, 'status']).out
    try:
        entries = [e for e in parsers_dkms.parse_status(out) if e['module'] in names]
    except ParseError as exc:
        module.fail_json(msg=str(exc))
    errors = {}
    for name in names:
        for log in sorted(glob.glob(os.path.join(DKMS_TREE, name, '*', 'build', 'make.log'))):
            version = log.split(os.sep)[-3]
            if any(e['version'] == version and e['status'] == 'installed' and e['kernel'] in (boot, None)
                   for e in entries):
                continue
            with open(log, 'rb') as handle:
                found = parsers_dkms.build_errors(handle.read().decode('utf-8', 'replace'))
            if found:
                errors['%s/%s' % (name, version)] = found
    return entries, errors


def from_table(module, params, branch):
    """The packages, fabric manager names, extra packages and pinning templates of the packaging table for the
    request (``packages`` unset), and the row's neighbours: ``(request fields, pinning, previous rows)``."""
    if not params['family'] or not params['source']:
        module.fail_json(msg='packages unset: family and source are needed to read the packaging table')
    entry = nvidia_packaging.driver_packages(params['family'], params['source'], branch)
    if entry is None:
        module.fail_json(msg='nvidia_driver_source: the packaging table has no row for %s from %s'
                         % (params['family'], params['source']), variable='nvidia_driver_source')
    fields = {'packages': entry['packages'], 'fabricmanager_packages': entry['fabricmanager'],
              'extra_packages': [entry['persistenced']] if params['persistenced'] else []}
    return fields, entry['pinning'], nvidia_packaging.other_rows(params['family'], params['source'], entry['row'])


def previous_packages(rows, branches):
    """The packages of the other branch ranges' rows where a driver could be installed: {open, proprietary, extra}
    per row and branch, names by branch expanded with each of ``branches`` (installed ones) in that row's range,
    rows whose names need a branch left out when none is; ``extra`` has the row's persistenced and fabric manager
    packages."""
    found = []
    for row in rows:
        low, high = row.branches
        names = [n for f in ('open', 'proprietary') for n in row.packages[f]] + [row.persistenced['name']]
        if not any('{branch}' in n for n in names):
            wanted = [None]
        else:
            wanted = sorted(b for b in branches if int(b) >= low and (high is None or int(b) <= high))
        for branch in wanted:
            fm = nvidia_packaging.by_branch(row.fabricmanager, int(branch or high or low or 0))
            found.append({'open': [n.format(branch=branch) for n in row.packages['open']],
                          'proprietary': [n.format(branch=branch) for n in row.packages['proprietary']],
                          'extra': [row.persistenced['name'].format(branch=branch)] + ([fm] if fm else [])})
    return found


def installed_branches(manager, rows, installed_version):
    """The branches of the drivers installed from rows that name their packages by branch: the gpu_topology fact's
    version, and the branch in the name of every installed kernel module package of those rows (dpkg-query)."""
    found = set([V.branch_of(installed_version)] if installed_version and V.branch_of(installed_version) else [])
    if not manager.apt:
        return found
    for row in rows:
        for flavour in ('open', 'proprietary'):
            lead = row.packages[flavour][0]
            if '{branch}' not in lead:
                continue
            pattern = re.compile('^' + re.escape(lead).replace(re.escape('{branch}'), '([0-9]{3})') + '$')
            for name in manager.installed_matching(lead.replace('{branch}', '*')):
                match = pattern.match(name)
                if match:
                    found.add(match.group(1))
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type='str', choices=['plan', 'check', 'inspect'], default='plan'),
            packages=dict(type='dict', options=dict(
                open=dict(type='list', elements='str', required=True),
                proprietary=dict(type='list', elements='str', required=True))),
            fabricmanager_packages=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True), since_branch=dict(type='int', default=0))),
            extra_packages=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True), versioned=dict(type='bool', default=False))),
            persistenced=dict(type='bool', default=False),
            pinning=dict(type='bool', default=True),
            source=dict(type='str'),
            repo_id=dict(type='str'),
            family=dict(type='str', choices=['Ubuntu', 'Debian', 'RedHat']),
            repository=dict(type='str'),
            repo_url=dict(type='str'),
            fabricmanager=dict(type='str', choices=['auto', 'present', 'absent'], default='auto'),
            kernel_module=dict(type='str', choices=['auto', 'open', 'proprietary'], default='auto'),
            branch=dict(type='str'),
            version=dict(type='str'),
            allow_downgrade=dict(type='bool', default=False),
            secure_boot_signed=dict(type='bool', default=False),
            force=dict(type='bool', default=False),
            facts=dict(type='dict', default={}),
            dkms_modules=dict(type='list', elements='str', default=['nvidia', 'nvidia-current']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    request = dict((k, params[k]) for k in ('packages', 'fabricmanager', 'fabricmanager_packages', 'kernel_module',
                                            'branch', 'version', 'allow_downgrade', 'force', 'source', 'secure_boot_signed',
                                            'extra_packages', 'family', 'repository'))
    branch = params['branch'] or (params['version'] or '').split('.')[0] or None
    # GPUs no newer branch drives (Pascal: 580 at most) choose the table's row when no branch is asked for, and
    # the branch itself where that row names its packages by branch (Ubuntu up to 580)
    cap = None if branch else gpu_driver_support.limits((params['facts'] or {}).get('pci_gpus'))['max_branch']
    pinning, other_rows = (), []
    if params['packages'] is None:
        row_branch = branch if branch and V.is_branch(branch) else str(cap) if cap else None
        table, pinning, other_rows = from_table(module, params, row_branch)
        request.update(table)
        if cap and any('{branch}' in name for names in request['packages'].values() for name in names):
            branch = request['branch'] = str(cap)
    if params['mode'] == 'check':
        try:
            _packages, flavour, reason = check_request(request, params['facts'])
        except PlanError as exc:
            module.fail_json(msg=str(exc), variable=exc.variable)
        module.exit_json(changed=False, plan={'kernel_module': flavour, 'kernel_module_reason': reason})
    # the package manager of the OS family when it is given (a RHEL node may have apt-cache too), else what is found
    manager = PackageManager(module, params['repo_id'], name=nvidia_packaging.MANAGERS.get(params['family'] or ''))
    try:
        packages = expand_packages(request['packages'], branch, params['source'])
    except PlanError as exc:
        if params['mode'] == 'plan':
            module.fail_json(msg=str(exc), variable=exc.variable)
        packages = dict((f, [n for n in names if '{branch}' not in n]) for f, names in request['packages'].items())
    request['extra_packages'] = [dict(e, name=e['name'].replace('{branch}', branch or '{branch}'))
                                 for e in request['extra_packages']]
    previous = previous_packages(other_rows, installed_branches(
        manager, other_rows, (params['facts'] or {}).get('driver_installed_version')) if other_rows else ())
    names = sorted(set(packages['open']) | set(packages['proprietary'])
                   | set(e['name'] for e in request['extra_packages'] if '{branch}' not in e['name'])
                   | set(n for p in previous for f in p for n in p[f]))
    fm_names = sorted(set(e['name'] for e in request['fabricmanager_packages'] if '{branch}' not in e['name']))
    installed = manager.installed(names + fm_names)
    held = manager.held()
    kernels = boot_kernels(platform.release())
    dkms, dkms_errors = read_dkms(module, params['dkms_modules'], kernels['boot'])
    result = dict(changed=False, installed=installed, held=held, dkms=dkms, dkms_build_errors=dkms_errors, plan={},
                  kernels=kernels)
    if params['mode'] == 'inspect':
        result['kernel_packages'] = kernel_packages(manager)
        module.exit_json(**result)
    origin = params['repo_url'] or None
    available = dict((flavour, manager.available(packages[flavour][0], origin)) for flavour in ('open', 'proprietary'))
    node = {'facts': params['facts'], 'installed': installed, 'held': held, 'available': available,
            'previous': previous}
    stream = nvidia_packaging.RHEL_STREAMS['module'] if params['family'] == 'RedHat' else None
    node['module_streams'] = manager.module_streams(stream) if stream else None
    try:
        if request['fabricmanager_packages']:
            # the fabric manager's name can carry the branch: read what the source offers for every branch offered
            branches = sorted(set(node_packages.upstream(v).split('.')[0] for versions in available.values() for v in versions
                                  if node_packages.upstream(v)))
            fm_names = sorted(set(n for n in (fabricmanager_name(request['fabricmanager_packages'], b)
                                              for b in branches) if n))
            node['fabricmanager_available'] = dict((n, manager.available(n, origin)) for n in fm_names)
            node['installed'].update(manager.installed(fm_names))
        result['plan'] = plan(request, node)
        if pinning and manager.apt:
            # NVIDIA's pinning package of the target version (or branch), when the source offers one: planned again
            target = result['plan']['target_version']
            pin_names = [t.format(version=target, branch=V.branch_of(target)) for t in pinning]
            offered = manager.offered(pin_names, origin)
            node['pinning_available'] = [(n, offered.get(n) or []) for n in pin_names]
            node['pinning_installed'] = manager.installed_matching('nvidia-driver-pinning*')
            if not params['pinning']:
                # not wanted: none installed, and only those that pin another driver removed
                node['pinning_available'] = []
                node['pinning_installed'] = dict((n, v) for n, v in node['pinning_installed'].items()
                                                 if n not in pin_names)
            result['plan'] = plan(request, node)
    except PlanError as exc:
        result['variable'] = exc.variable
        module.fail_json(msg=str(exc), **result)
    try:
        add_exact_closure(manager, result['plan'], origin, node)
        if result['plan'].get('drift') and not params['force']:
            guard_processes(params['facts'] or {}, result['plan']['installed_version'], 'switch')
    except PlanError as exc:
        result['variable'] = exc.variable
        module.fail_json(msg=str(exc), **result)
    if not manager.apt:
        # dnf installs name-version
        result['plan']['install'] = [spec.replace('=', '-', 1) for spec in result['plan']['install']]
    result['installed'] = node['installed']
    module.exit_json(**result)


def kernel_packages(manager):
    """{name: version} of the installed kernel packages (nvidia_packaging.KERNEL_PACKAGES)."""
    if manager.apt:
        found = {}
        for pattern in nvidia_packaging.KERNEL_PACKAGES['apt']:
            found.update(manager.installed_matching(pattern))
        return dict((name, version) for name, version in found.items()
                    if not name.startswith(nvidia_packaging.KERNEL_PACKAGES_NOT))
    return manager.installed(list(nvidia_packaging.KERNEL_PACKAGES['dnf']))


def add_exact_closure(manager, result, origin, node):
    """Add to the plan the exact-version closure of the packages it installs (apt's Depends, or the Requires dnf
    lists), and the closure of the packages it removes at their installed version (held with them, and conflicting
    with what replaces them)."""
    if not result.get('target_package_version'):
        return
    skip = set([(result.get('pinning') or {}).get('package'), (result.get('fabricmanager') or {}).get('package')])
    leads = [spec.split('=')[0] for spec in result['install'] if '=' in spec] + list(result['hold'])
    leads = [n for i, n in enumerate(leads) if n not in skip and n not in leads[:i]]
    closure = dependency_closure(leads, result['target_package_version'], manager.show,
                                 lambda names: manager.offered(names, origin))
    installed = manager.installed(closure)
    node['installed'].update(installed)
    add_closure(result, closure, installed, node['held'])
    keep = set(spec.split('=')[0] for spec in result['install']) | set(result['hold'])
    by_version = {}
    for name in result['remove']:
        if node['installed'].get(name) and name not in skip:
            by_version.setdefault(node['installed'][name], []).append(name)
    leftover = set()
    for version, names in sorted(by_version.items()):
        # what the removed packages depend on that is installed at their very version
        found = dependency_closure(names, version, manager.show, lambda wanted: dict(
            (n, [v]) for n, v in manager.installed(wanted).items()))
        leftover.update(n for n in found if n not in keep)
    if leftover:
        node['installed'].update(manager.installed(sorted(leftover)))
        result['remove'] = sorted((set(result['remove']) | leftover) - keep)
        result['unhold'] = sorted(set(result['unhold']) | (leftover & set(node['held'])))


if __name__ == '__main__':
    main()
