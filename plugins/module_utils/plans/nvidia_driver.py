# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the nvidia_driver role will do to a node, decided before it changes anything.

``plan(request, node)`` takes the role's variables and what was read from the node (the bare-node facts of
``gpu_topology``, the versions the repositories offer, the installed and held packages) and returns the plan:
the kernel module flavour, the target version, the action (install, upgrade, downgrade, switch, none), the
package specs, what to unhold and hold, and the fabric manager. A request that cannot be honoured raises
``PlanError`` naming the variable, so the role stops before the first change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.node import nvidia_pci
from ansible_collections.gpuops.node.plugins.module_utils.plans import gpu_driver_support as support
from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging
from ansible_collections.gpuops.node.plugins.module_utils import versions as V
from ansible_collections.gpuops.node.plugins.module_utils.node.packages import upstream

FLAVOURS = ('open', 'proprietary')
OPEN_FIRST = 'Turing'          # open kernel modules support Turing and later GPUs (plans/gpu_driver_support.py
#                                says which GPUs only they drive, and which branches drive which GPU)
OPEN_SINCE_BRANCH = 515        # the first branch that ships open kernel modules


class PlanError(Exception):
    """A request the role must refuse; ``variable`` names the role variable to change."""

    def __init__(self, variable, message):
        super(PlanError, self).__init__('%s: %s' % (variable, message))
        self.variable = variable


def _rank(architecture):
    try:
        return nvidia_pci.ORDER.index(architecture)
    except ValueError:
        return None


def choose_flavour(requested, pci_gpus, branch):
    """(flavour, reason) for ``nvidia_driver_kernel_module``: open, proprietary or auto."""
    archs = sorted(set(g.get('architecture') for g in pci_gpus or [] if g.get('architecture')),
                   key=lambda a: _rank(a) if _rank(a) is not None else -1)
    unknown = sorted(set(g.get('device_id') or '?' for g in pci_gpus or [] if not g.get('architecture')))
    old = [a for a in archs if _rank(a) is not None and _rank(a) < _rank(OPEN_FIRST)]
    new = sorted(set(filter(None, (support.open_only(g) for g in pci_gpus or []))))
    if branch is not None and int(branch) < OPEN_SINCE_BRANCH and (requested == 'open' or new):
        raise PlanError('nvidia_driver_kernel_module',
                        'open kernel modules start with branch %d, the target is branch %s' % (OPEN_SINCE_BRANCH, branch))
    if old and new:
        raise PlanError('nvidia_driver_kernel_module',
                        'this node mixes %s GPUs (proprietary modules only) with %s GPUs (open modules only): '
                        'no kernel module drives both' % ('/'.join(old), '/'.join(new)))
    if requested == 'open':
        if old:
            raise PlanError('nvidia_driver_kernel_module',
                            'open kernel modules do not support the %s GPUs on this node (they need %s or later); '
                            'use proprietary' % ('/'.join(old), OPEN_FIRST))
        return 'open', 'requested'
    if requested == 'proprietary':
        if new:
            raise PlanError('nvidia_driver_kernel_module',
                            '%s GPUs need the open kernel modules; use open or auto' % '/'.join(new))
        return 'proprietary', 'requested'
    if requested != 'auto':
        raise PlanError('nvidia_driver_kernel_module', 'must be open, proprietary or auto, not %r' % (requested,))
    if not archs and not unknown:
        raise PlanError('nvidia_driver_kernel_module',
                        'auto needs an NVIDIA GPU on the PCI bus to decide, and none was found: set open or proprietary')
    if unknown and not archs:
        raise PlanError('nvidia_driver_kernel_module',
                        'auto cannot tell the architecture of PCI device id(s) %s: set open or proprietary'
                        % ', '.join(unknown))
    if old:
        return 'proprietary', '%s GPUs predate %s' % ('/'.join(old), OPEN_FIRST)
    return 'open', '%s GPUs: open kernel modules' % '/'.join(archs)


def choose_version(available, branch, version, variable_hint, limits=None):
    """The package version to install among ``available`` (full package versions, any order); with neither
    ``branch`` nor ``version``, the newest within ``limits`` (what the node's GPUs allow)."""
    if not available:
        raise PlanError(variable_hint, 'no version of the driver package is available from the configured source')
    ordered = sorted(set(available), key=V.DpkgKey, reverse=True)
    if not version and not branch and limits:
        within = [v for v in ordered if support.allows(limits, upstream(v))]
        if not within:
            newest = upstream(ordered[0])
            too_new = limits['max_branch'] is not None and int(V.branch_of(newest) or 0) > limits['max_branch']
            raise PlanError(variable_hint, 'the source offers no driver that drives this node (its newest is %s): %s'
                            % (newest, limits['max_reason'] if too_new else limits['min_reason']))
        ordered = within
    if version:
        match = [v for v in ordered if upstream(v) == version]
        if not match:
            raise PlanError('nvidia_driver_version', '%s is not available; the source offers %s'
                            % (version, ', '.join(sorted(set(upstream(v) for v in ordered), key=V.DpkgKey))))
        return match[0]
    if branch:
        match = [v for v in ordered if V.branch_of(upstream(v) or '') == branch]
        if not match:
            raise PlanError('nvidia_driver_branch', 'no %s driver is available; the source offers branches %s'
                            % (branch, ', '.join(sorted(set(V.branch_of(upstream(v) or '') or '?' for v in ordered)))))
        return match[0]
    return ordered[0]


def _flavour_packages(packages):
    """Packages of one flavour only: {flavour: [names]}."""
    both = set(packages['open']) & set(packages['proprietary'])
    return dict((f, [p for p in packages[f] if p not in both]) for f in FLAVOURS)


def installed_flavour(packages, installed):
    own = _flavour_packages(packages)
    found = [f for f in FLAVOURS if any(p in installed for p in own[f])]
    return found[0] if len(found) == 1 else (None if not found else 'both')


def expand_packages(packages, branch, source=None):
    """The package lists with ``{branch}`` replaced; a PlanError when a name needs a branch and none is known."""
    names = [n for f in FLAVOURS for n in packages[f]]
    if any('{branch}' in n for n in names) and branch is None:
        raise PlanError('nvidia_driver_branch', 'the %s packages of this OS are named by branch (%s): set '
                        'nvidia_driver_branch or nvidia_driver_version' % (source or 'driver', names[0]))
    return dict((f, [n.format(branch=branch) for n in packages[f]]) for f in FLAVOURS)


def current_package_version(packages, installed, flavour):
    """The installed driver's package version: the chosen flavour's lead package, else the other flavour's, else
    a package both flavours share (None when no driver package is installed)."""
    other = 'open' if flavour == 'proprietary' else 'proprietary'
    shared = [p for p in packages[flavour] if p in packages[other]]
    for name in [packages[flavour][0], packages[other][0]] + shared:
        if installed.get(name):
            return installed[name]
    return None


def check_request(request, facts):
    """Check the request against itself and the node's GPUs, before anything is read from the package manager.

    Returns ``(packages, flavour, reason)``: the package lists for the branch, the kernel module flavour and why.
    """
    packages = request['packages']
    branch = request.get('branch') or None
    version = request.get('version') or None
    if version and not V.is_driver_version(version):
        raise PlanError('nvidia_driver_version', 'must look like 550.163.01, not %r' % version)
    if branch and not V.is_branch(branch):
        raise PlanError('nvidia_driver_branch', 'must be three digits like "550", not %r' % branch)
    if version and branch and V.branch_of(version) != branch:
        raise PlanError('nvidia_driver_version', '%s is not in nvidia_driver_branch %s' % (version, branch))
    target_branch = branch or (V.branch_of(version) if version else None)
    check_packaging(request, target_branch)
    packages = expand_packages(packages, target_branch, request.get('source'))
    flavour, reason = choose_flavour(request['kernel_module'], (facts or {}).get('pci_gpus'), target_branch)
    if target_branch:
        check_limits(support.limits((facts or {}).get('pci_gpus')), int(target_branch), version,
                     'nvidia_driver_version' if version else 'nvidia_driver_branch')
    check_secure_boot(facts or {}, request.get('secure_boot_signed'))
    return packages, flavour, reason


# What the refusal tells the operator to do: the key DKMS signs with must be in the firmware's MOK list, and its
# enrolment is confirmed in MokManager at the console during the next boot (no remote step does it)
SECURE_BOOT_STEPS = (
    'a module DKMS builds loads only when it is signed with a key enrolled in the MOK list: enrol the certificate '
    'DKMS signs with (mok_certificate in /etc/dkms/framework.conf) with mokutil --import, confirm the enrolment in '
    'MokManager at the node\'s console during the next boot, check it with mokutil --test-key ("is already '
    'enrolled"), then set nvidia_driver_secure_boot_signed: true; or turn Secure Boot off in the firmware')


def check_secure_boot(facts, signed):
    """Refuse a node where Secure Boot would keep the driver the role builds from loading (node/efi.py's
    ``secure_boot`` facts), unless ``signed`` says the site signs it. A loaded NVIDIA module shows that modules this
    node builds load; an unreadable state is refused like an enabled one."""
    state = facts.get('secure_boot') or {}
    if signed or facts.get('kernel_module'):
        return
    if state.get('state') == 'enabled' and state.get('shim_validation') is not False:
        raise PlanError('nvidia_driver_secure_boot_signed', 'Secure Boot is on (%s) and no NVIDIA kernel module is '
                        'loaded: %s' % (state.get('detail'), SECURE_BOOT_STEPS))
    if state.get('state') == 'unknown':
        raise PlanError('nvidia_driver_secure_boot_signed', 'the Secure Boot state cannot be read (%s); if it is '
                        'on, %s' % (state.get('detail'), SECURE_BOOT_STEPS))


def check_limits(limits, branch, version, variable):
    """Refuse ``branch`` (or ``version``) when the node's GPUs need another (plans/gpu_driver_support.py
    ``limits``), naming ``variable``."""
    if limits['max_branch'] is not None and branch > limits['max_branch']:
        raise PlanError(variable, 'branch %d does not drive this node: %s; use branch %d or earlier'
                        % (branch, limits['max_reason'], limits['max_branch']))
    if limits['min_release'] is not None and (
            branch < limits['min_branch'] or (version and not support.allows(limits, version))):
        raise PlanError(variable, '%s does not drive this node: %s; use %s or later'
                        % (version or 'branch %d' % branch, limits['min_reason'], limits['min_release']))


def check_packaging(request, branch):
    """Refuse a branch the packaging table says the source cannot give (plans/nvidia_packaging.py): one NVIDIA's
    repository for the OS does not carry (``cuda_repo`` only: a site mirror says itself what it offers), or one
    whose packaging the role does not install yet. Without ``family``, ``repository`` or a branch, nothing to say."""
    if branch is None:
        return
    source = request.get('source')
    repo = nvidia_packaging.repository(request.get('repository')) if request.get('repository') else None
    if source == 'cuda_repo' and repo is not None and repo.min_branch and int(branch) < repo.min_branch:
        raise PlanError('nvidia_driver_branch', "NVIDIA's %s repository carries no %s driver, only branches %d and "
                        'later (%s); choose one of those, or use a source that has %s'
                        % (repo.os, branch, repo.min_branch, repo.note, branch))
    row = nvidia_packaging.driver_row(request.get('family'), source, int(branch)) if request.get('family') else None
    if row is not None and not row.supported:
        raise PlanError('nvidia_driver_branch', 'branch %s from %s on %s: %s; choose an earlier branch'
                        % (branch, source, request.get('family'), row.gap))


def choose_stream(request, flavour, branch, rows):
    """The module stream a modular repository (NVIDIA's RHEL 8/9 repositories) must have enabled for the target:
    {module, stream, enabled, change} with change ``none``, ``enable`` (no stream enabled) or ``switch`` (another
    stream enabled or the module disabled: reset, then enable). ``rows`` are ``dnf module list`` rows (None: not a
    dnf node; empty: no repository has the module, as RHEL 10 or a mirror without module metadata: nothing to
    enable). The target branch's own stream is enabled, never ``open-dkms`` or ``latest-dkms``, which follow the
    newest branch."""
    if rows is None:
        return None
    row = nvidia_packaging.driver_row(request.get('family'), request.get('source'), int(branch))
    wanted = nvidia_packaging.module_stream(row, flavour, branch)
    if wanted is None:
        return None
    module = wanted[0]
    own = [r for r in rows if r['name'] == module]
    if not own:
        return None
    streams = sorted(set(r['stream'] for r in own))
    if wanted[1] not in streams:
        raise PlanError('nvidia_driver_branch' if request.get('branch') or request.get('version')
                        else 'nvidia_driver_kernel_module',
                        'the %s module of the repository has no stream %s (the %s kernel modules of branch %s); it '
                        'offers %s' % (module, wanted[1], flavour, branch, ', '.join(streams)))
    enabled = sorted(set(r['stream'] for r in own if r['enabled']))
    disabled = any(r['disabled'] for r in own)
    change = 'none' if enabled == [wanted[1]] and not disabled else (
        'enable' if not enabled and not disabled else 'switch')
    return {'module': module, 'stream': wanted[1], 'enabled': enabled[0] if enabled else None, 'change': change}


def guard_processes(facts, current_version, action):
    """Refuse to change a driver that is in use: GPU processes run, or a module is loaded and nvidia-smi cannot say
    which processes run (a version mismatch, a wedged GPU). A driver this source did not install counts too."""
    present = current_version or facts.get('driver_installed_version') or facts.get('kernel_module')
    if not present:
        return
    what = current_version or facts.get('driver_installed_version') or facts.get('driver_version') or 'loaded'
    processes = facts.get('gpu_processes') or []
    if processes:
        raise PlanError('nvidia_driver_force',
                        'GPU processes are running (%s): refusing to %s the installed driver %s; stop them, or set '
                        'nvidia_driver_force: true'
                        % (', '.join('pid %s %s on GPU %s' % (p.get('pid'), p.get('name'), p.get('gpu'))
                                     for p in processes), action, what))
    if facts.get('kernel_module') and not facts.get('driver_loaded'):
        error = facts.get('driver_error') or {}
        raise PlanError('nvidia_driver_force',
                        'the NVIDIA kernel module is loaded but nvidia-smi cannot list the GPU processes (%s): '
                        'refusing to %s the driver %s without knowing whether GPUs are in use; set '
                        'nvidia_driver_force: true to go on' % (error.get('message') or error.get('kind') or 'no answer',
                                                                action, what))


def plan(request, node):
    """The role's plan; see the module documentation of nvidia_driver_plan for every key."""
    facts = node.get('facts') or {}
    installed = node.get('installed') or {}
    branch = request.get('branch') or None
    version = request.get('version') or None
    packages, flavour, reason = check_request(request, facts)
    limits = support.limits(facts.get('pci_gpus'))
    names = packages[flavour]
    available = node.get('available') or {}
    target = choose_version(available.get(flavour) or [], branch, version,
                            'nvidia_driver_version' if version else 'nvidia_driver_branch' if branch
                            else 'nvidia_driver_source', limits)
    target_version = upstream(target)
    if not support.allows(limits, target_version):
        # a branch whose newest version the source offers is older than the GPUs' first (570.86.15 on a GB200)
        raise PlanError('nvidia_driver_version' if version else 'nvidia_driver_branch',
                        'the source offers %s, which does not drive this node: %s; use %s or later'
                        % (target_version, limits['min_reason'], limits['min_release']))
    check_packaging(request, V.branch_of(target_version))
    if flavour == 'open' and int(V.branch_of(target_version) or 0) < OPEN_SINCE_BRANCH:
        raise PlanError('nvidia_driver_kernel_module', 'open kernel modules start with branch %d, the source offers %s'
                        % (OPEN_SINCE_BRANCH, target_version))
    current = current_package_version(packages, installed, flavour)
    current_flavour = installed_flavour(packages, installed)
    # a driver of another branch range (Ubuntu: named by branch up to 580, without from 590) is the installed one
    # when the target's names are not installed: its version decides upgrade or downgrade, its packages go
    previous = [p for p in node.get('previous') or [] if current is None]
    for other_packages in previous:
        current = current_package_version(other_packages, installed, flavour)
        if current is not None:
            current_flavour = installed_flavour(other_packages, installed)
            break
    current_version = upstream(current) if current else None
    other = _flavour_packages(packages)['open' if flavour == 'proprietary' else 'proprietary']
    if current is None:
        action = 'install'
    else:
        order = V.dpkg_compare(target, current)
        action = 'upgrade' if order > 0 else 'downgrade' if order < 0 else (
            'switch' if current_flavour != flavour or any(installed.get(p) != target for p in names) else 'none')
    if action == 'downgrade' and not request.get('allow_downgrade'):
        capped = not branch and not version and not support.allows(limits, current_version)
        raise PlanError('nvidia_driver_allow_downgrade',
                        'the installed driver %s is newer than the %s %s%s; a downgrade needs '
                        'nvidia_driver_allow_downgrade: true'
                        % (current_version, 'newest that drives this node,' if capped else 'requested', target_version,
                           ' (%s)' % limits['max_reason'] if capped else ''))
    if action != 'none' and not request.get('force'):
        guard_processes(facts, current_version, action)
    stream = choose_stream(request, flavour, V.branch_of(target_version), node.get('module_streams'))
    fabric = fabricmanager(request, facts, node, target_version)
    fm_install, fm_remove = fabricmanager_changes(fabric, installed)
    extra_install, extra_hold = extras(request.get('extra_packages'), installed, target, action)
    install = (['%s=%s' % (name, target) for name in names] if action != 'none' else []) + extra_install + fm_install
    pinning, pinning_remove = choose_pinning(node, target_version)
    keep = (set(names) | set(e['name'] for e in request.get('extra_packages') or [])
            | set(n for n in (fabric.get('package') if fabric.get('wanted') else None, (pinning or {}).get('package'))
                  if n))
    replaced = set(n for other_packages in previous for f in FLAVOURS + ('extra',)
                   for n in other_packages.get(f, ()) if n in installed and n not in keep)
    remove = sorted((set(p for p in other if p in installed) | set(fm_remove) | replaced | set(pinning_remove)) - keep)
    touched = (set(spec.split('=')[0] for spec in install) | set(remove)
               | set([pinning['package']] if pinning and pinning['install'] else []))
    result = {
        'kernel_module': flavour,
        'kernel_module_reason': reason,
        'target_version': target_version,
        'target_package_version': target,
        'installed_version': current_version,
        'installed_package_version': current,
        'installed_kernel_module': current_flavour,
        'action': action,
        'install': install,
        'remove': remove,
        'unhold': sorted(touched & set(node.get('held') or [])),
        'hold': (list(names) + extra_hold + ([fabric['package']] if fabric.get('wanted') else [])
                 + ([pinning['package']] if pinning else [])),
        'pinning': pinning,
        'fabricmanager': fabric,
        'module_stream': stream,
        'loaded_version': facts.get('driver_version') if facts.get('kernel_module') else None,
    }
    return result


def fabricmanager_name(entries, branch):
    """The fabric manager package of ``branch`` (text, or None): the first of ``entries`` ({name, since_branch}) it
    reaches (nvidia_packaging.by_branch)."""
    return None if branch is None else nvidia_packaging.by_branch(entries, int(branch))


def fabricmanager(request, facts, node, target_version):
    """Whether the fabric manager is wanted, its package and the package version (exactly the driver's)."""
    mode = request.get('fabricmanager') or 'auto'
    count = facts.get('nvswitch_count')
    if mode == 'auto' and count is None:
        raise PlanError('nvidia_driver_fabricmanager',
                        'auto needs the NVSwitch count from the PCI bus, which could not be read (check '
                        'nvidia_driver_sysfs_root); set present or absent')
    wanted = mode == 'present' or (mode == 'auto' and bool(count))
    result = {'wanted': wanted, 'nvswitch_count': count, 'package_version': None,
              'package': fabricmanager_name(request.get('fabricmanager_packages'), V.branch_of(target_version))}
    if not wanted:
        return result
    if not result['package']:
        raise PlanError('nvidia_driver_source', 'this node has %s NVSwitch(es) and needs the fabric manager, which '
                        'this source does not package; use cuda_repo or mirror, or set '
                        'nvidia_driver_fabricmanager: absent' % (count,))
    offered = [v for v in (node.get('fabricmanager_available') or {}).get(result['package']) or []
               if upstream(v) == target_version]
    if not offered:
        raise PlanError('nvidia_driver_fabricmanager',
                        '%s %s (the driver\'s version) is not available from the source; the fabric manager must '
                        'match the driver exactly' % (result['package'], target_version))
    result['package_version'] = sorted(offered, key=V.DpkgKey)[-1]
    return result


def extras(entries, installed, target, action):
    """(install specs, hold names) of the extra packages ({name, versioned}): a versioned one follows the driver's
    package version, another is installed when missing and left to its own version."""
    install, hold = [], []
    for entry in entries or []:
        name = entry['name']
        if entry.get('versioned'):
            hold.append(name)
            if action != 'none' or installed.get(name) != target:
                install.append('%s=%s' % (name, target))
        elif name not in installed:
            install.append(name)
    return install, hold


def fabricmanager_changes(fabric, installed):
    """(install specs, remove names) for the fabric manager package."""
    package = fabric.get('package')
    if not package:
        return [], []
    if fabric['wanted']:
        if installed.get(package) != fabric['package_version']:
            return ['%s=%s' % (package, fabric['package_version'])], []
        return [], []
    return [], [package] if package in installed else []


def choose_pinning(node, target_version):
    """(pinning, remove): NVIDIA's pinning package for the target, the first of ``node['pinning_available']``
    ({name: [versions]}, most exact name first) the source offers: ``{package, package_version, install}`` (install
    false when it is installed at that version), or None; and the other pinning packages installed
    (``node['pinning_installed']``, {name: version}), which pin another version and go first."""
    offered = node.get('pinning_available') or []
    installed = node.get('pinning_installed') or {}
    chosen = None
    for name, versions in offered:
        if versions:
            version = sorted(versions, key=V.DpkgKey)[-1]
            chosen = {'package': name, 'package_version': version, 'install': installed.get(name) != version,
                      'target_version': target_version}
            break
    remove = sorted(n for n in installed if chosen is None or n != chosen['package'])
    return chosen, remove


CLOSURE_LIMIT = 200  # packages a driver set's closure may add: NVIDIA's has fewer than 20


def dependency_closure(leads, package_version, show, offered, depth=20, limit=CLOSURE_LIMIT):
    """The packages beyond ``leads`` that the driver set needs at exactly ``package_version``: for every Depends or
    Pre-Depends group of a package of the set that no package of the set satisfies yet, the first alternative the
    source offers at that very version, transitively. apt takes the newest version of a dependency not named;
    NVIDIA's and Debian's driver packages depend on each other at their exact version, so an older driver installs
    only with all of them named. A group with no alternative at the version (libc6, dkms, a virtual package) is
    apt's to satisfy.

    ``show(specs)`` returns the ``parsers.apt_show`` stanzas of ``name=version`` specs; ``offered(names)`` returns
    {name: [versions]} the source offers. Returns the names in the order found (a breadth-first walk). A walk deeper
    than ``depth`` levels, or one that adds more than ``limit`` packages, raises PlanError: the source's metadata is
    not a driver's."""
    chosen = set(leads)
    level, found = list(leads), []
    for _depth in range(depth):
        if not level:
            return found
        stanzas = show(['%s=%s' % (name, package_version) for name in level])
        groups = [[alt['name'] for alt in group] for stanza in stanzas
                  if stanza['package'] in level and stanza['version'] == package_version
                  for group in stanza['depends'] + stanza['pre_depends']]
        groups = [g for g in groups if not chosen.intersection(g)]
        names = sorted(set(n for g in groups for n in g))
        available = offered(names) if names else {}
        level = []
        for group in groups:
            if chosen.intersection(group):
                continue  # satisfied by an alternative chosen for an earlier group
            for name in group:
                if package_version in (available.get(name) or []):
                    chosen.add(name)
                    level.append(name)
                    break
        found += level
        if len(found) > limit:
            raise PlanError('nvidia_driver_source', 'the driver packages at %s depend on more than %d packages at '
                            'that version (%s, ...): not the metadata of a driver repository'
                            % (package_version, limit, ', '.join(found[:5])))
    if level:
        raise PlanError('nvidia_driver_source', 'the dependencies of the driver packages at %s go deeper than %d '
                        'levels (%s): not the metadata of a driver repository' % (package_version, depth,
                                                                                  ', '.join(level[:5])))
    return found


def add_closure(result, closure, installed, held):
    """The plan ``result`` with the exact-version ``closure`` of its packages (names) installed at the target's
    package version where they are not, released from their hold first, and held; ``installed`` {name: version}
    of the closure's packages, ``held`` the names apt holds. A plan with nothing to change whose closure has moved
    (a package upgraded or downgraded alone, or never held) becomes a ``switch`` that puts it back (``drift``),
    which the caller must guard like any change; ``downgrades`` says whether a spec is older than what is
    installed."""
    target = result['target_package_version']
    named = set(spec.split('=')[0] for spec in result['install'])
    extra = [name for name in closure if name not in named and name not in result['hold']]
    drift = [name for name in extra if installed.get(name) != target]
    install = extra if result['action'] != 'none' else drift
    if result['action'] == 'none' and drift:
        result['action'] = 'switch'
        result['drift'] = drift
    result['install'] = result['install'] + ['%s=%s' % (name, target) for name in install]
    result['unhold'] = sorted(set(result['unhold']) | (set(install) & set(held or [])))
    result['hold'] = result['hold'] + extra
    result['closure'] = list(extra)
    result['remove'] = [name for name in result['remove'] if name not in set(result['hold'])]
    result['downgrades'] = result['action'] == 'downgrade' or any(
        installed.get(name) and V.dpkg_compare(target, installed[name]) < 0 for name in install)
    return result
