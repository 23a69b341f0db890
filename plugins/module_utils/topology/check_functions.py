# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The check functions behind ``topology_check.CHECKS``: the built-in ones and one per GPU property.

Each takes the check context and the profile value and returns failures
(``check``, ``subject``, ``expected``, ``actual``, ``message``). A value that
could not be read is ``not checked``, never a pass.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch

from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import ConfigError, expand
from ansible_collections.gpuops.node.plugins.module_utils.pci import sysfs_pci_address
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import DRIVER_FAILURES, PARTS, STATUSES

NOT_CHECKED = 'not checked'


def failure(check, subject, expected, actual, message):
    return {'check': check, 'subject': subject, 'expected': expected, 'actual': actual, 'message': message}


def not_checked(check, subject, expected, why):
    return failure(check, subject, expected, NOT_CHECKED, 'not checked: %s' % why)


def _label(gpu):
    return 'GPU%d' % gpu['index']


def _gpu_list(indices):
    return ', '.join('GPU%d' % i for i in sorted(indices)) or 'none'


# ---------------------------------------------------------------- built-in checks (every profile)

def check_output_unreadable(ctx, _value):
    return [failure('output_unreadable', e.get('command'), 'readable output', 'line %s' % e.get('line_no'),
                    e.get('message')) for e in ctx.topology.get('errors') or []]


def check_nvsmi_exit(ctx, _value):
    failures = []
    for part, out in sorted(ctx.outputs.items()):
        if out.get('status') == 'exit' or (out.get('status') == 'failed' and out.get('kind') not in DRIVER_FAILURES):
            kept = '; what it printed was kept' if out['status'] == 'exit' else ''
            how = 'could not run' if out.get('rc') is None else 'exited %s' % out.get('rc')
            failures.append(failure('nvsmi_exit', out['source'], 0, out.get('rc'),
                                    '%s %s: %s%s' % (out['source'], how, out.get('message'), kept)))
    return failures


def check_nvsmi_timeout(ctx, _value):
    return [failure('nvsmi_timeout', out['source'], 'finished', 'killed', out.get('message'))
            for _part, out in sorted(ctx.outputs.items()) if out.get('status') == 'timeout']


def check_gpu_error(ctx, _value):
    failures = []
    for error in ctx.topology.get('device_errors') or []:
        subject = 'GPU%d' % error['gpu'] if error.get('gpu') is not None else error.get('pci_bus_id')
        what = 'nvidia-smi warned about' if error.get('readable') else 'nvidia-smi could not read'
        failures.append(failure('gpu_error', subject, 'readable', error.get('reason'),
                                '%s %s (%s): %s' % (what, subject, error.get('pci_bus_id'), error.get('reason'))))
    return failures


def check_driver_loaded(ctx, _value):
    if ctx.topology.get('driver_loaded'):
        return []
    err = ctx.topology.get('driver_error') or {}
    message = err.get('message')
    pci = ctx.topology.get('pci_gpus')
    if not message:
        states = ['%s: %s' % (ctx.outputs[p]['source'], STATUSES.get(ctx.outputs[p]['status'], ctx.outputs[p]['status']))
                  for p in PARTS if p in ctx.outputs]
        message = 'no nvidia-smi output could be read (%s)' % ('; '.join(states) or 'none was available')
    if pci:
        message += '; the PCI bus shows %d NVIDIA GPU(s)' % len(pci)
    return [failure('driver_loaded', 'node', True, False, message)]


def _listed(ctx):
    """Outputs that list GPUs completely: part -> set of indices."""
    return dict((part, set(out['gpus'])) for part, out in ctx.outputs.items()
                if out.get('status') in ('ok', 'exit') and out.get('gpus') is not None and out.get('complete'))


def check_outputs_disagree(ctx, _value):
    """Every output that lists GPUs lists the same ones (a GPU nvidia-smi named as failed is accounted for)."""
    listed = dict((p, s) for p, s in _listed(ctx).items() if s or p != 'nvlink')
    failed = set(e['gpu'] for e in ctx.topology.get('device_errors') or [] if e.get('gpu') is not None)
    union = set()
    for indices in listed.values():
        union |= indices
    failures = []
    order = [p for p in PARTS if p in listed]
    if len(order) < 2:
        order = []
    lacking = [(p, union - listed[p] - failed) for p in order if union - listed[p] - failed]
    if lacking:
        counts = dict((ctx.source(p), len(listed[p])) for p in order)
        said = ', '.join('%s lists %d (%s)' % (ctx.source(p), len(listed[p]), _gpu_list(listed[p])) for p in order)
        gaps = '; '.join('%s is not in %s' % (_gpu_list(g), ctx.source(p)) for p, g in lacking)
        failures.append(failure('outputs_disagree', 'node', 'the same GPUs in every output', counts,
                                '%s: %s' % (said, gaps)))
    xml = ctx.outputs.get('xml') or {}
    if 'xml' in listed and xml.get('attached') is not None and xml['attached'] != len(listed['xml']) + len(
            [i for i in failed if i not in listed['xml']]):
        failures.append(failure('outputs_disagree', 'node', '%d GPUs printed' % xml['attached'], len(listed['xml']),
                                '%s reports %d attached GPUs but prints %d: a GPU it could not read is missing'
                                % (ctx.source('xml'), xml['attached'], len(listed['xml']))))
    failures.extend(_pci_disagrees(ctx, listed, failed))
    xml_uuids = set(u for u in xml.get('uuids') or [] if u)
    link_uuids = set(u for u in (ctx.outputs.get('nvlink') or {}).get('uuids') or [] if u)
    if 'xml' in listed and 'nvlink' in listed and xml_uuids and link_uuids - xml_uuids:
        strangers = sorted(link_uuids - xml_uuids)
        failures.append(failure('outputs_disagree', 'node', 'the same GPUs in every output', strangers,
                                '%s names GPU UUIDs %s lists nowhere: %s'
                                % (ctx.source('nvlink'), ctx.source('xml'), ', '.join(strangers))))
    return failures


def _pci_disagrees(ctx, listed, failed):
    """A GPU on the PCI bus that nvidia-smi -q -x does not list (and no error line names) fell out of the driver."""
    pci = ctx.topology.get('pci_gpus')
    if pci is None or 'xml' not in listed or not ctx.topology.get('driver_loaded'):
        return []
    seen = set(sysfs_pci_address(g.get('pci_bus_id')) for g in ctx.topology.get('gpus') or [])
    seen |= set(sysfs_pci_address(e.get('pci_bus_id')) for e in ctx.topology.get('device_errors') or [])
    absent = [g['pci_bus_id'] for g in pci if g['pci_bus_id'] not in seen]
    if not absent:
        return []
    return [failure('outputs_disagree', 'node', 'every NVIDIA GPU on the PCI bus', absent,
                    'the PCI bus shows %d NVIDIA GPUs, %s lists %d: %s not listed (fallen off the driver, or not '
                    'initialised)' % (len(pci), ctx.source('xml'), len(listed['xml']), ', '.join(absent)))]


# ---------------------------------------------------------------- per-GPU checks

def per_gpu(parts, func):
    """Run ``func(ctx, gpu, subject, value)`` on every GPU; a GPU none of ``parts`` lists is not checked."""
    def run(ctx, value):
        failures = []
        for gpu in ctx.gpus:
            subject = _label(gpu)
            if not set(parts) & set(gpu.get('sources') or parts):
                failures.append(not_checked(func.check, subject, value, '%s is not in %s'
                                            % (subject, ' or '.join(ctx.source(p) for p in parts))))
                continue
            failures.extend(func(ctx, gpu, subject, value))
        return failures
    run.check = func.check
    return run


def _check(name):
    def mark(func):
        func.check = name
        return func
    return mark


@_check('gpu_model')
def check_gpu_model(_ctx, gpu, subject, pattern):
    name = gpu.get('name')
    if name is None:
        return [not_checked('gpu_model', subject, pattern, 'the name of %s is unknown' % subject)]
    if fnmatch.fnmatchcase(name, pattern):
        return []
    return [failure('gpu_model', subject, pattern, name, '%s is %s, expected %s' % (subject, name, pattern))]


@_check('pcie_gen')
def check_pcie_gen(_ctx, gpu, subject, wanted):
    pcie = gpu.get('pcie') or {}
    failures = []
    if gpu.get('gpu_idle') is False and pcie.get('gen_current') is not None \
            and (pcie.get('gen_max') or 0) >= wanted and pcie['gen_current'] < wanted:
        # a busy GPU runs its link at the trained speed; an idle one drops it to save power
        failures.append(failure('pcie_gen', subject, '>= %s' % wanted, pcie['gen_current'],
                                '%s PCIe link runs at generation %s under load, expected at least %s'
                                % (subject, pcie['gen_current'], wanted)))
    return failures + _at_least('pcie_gen', subject, pcie.get('gen_max'), wanted, 'PCIe generation')


@_check('pcie_width')
def check_pcie_width(_ctx, gpu, subject, wanted):
    return _at_least('pcie_width', subject, (gpu.get('pcie') or {}).get('width_current'), wanted, 'PCIe width')


def _at_least(check, subject, actual, wanted, what):
    if actual is None:
        return [not_checked(check, subject, '>= %s' % wanted, '%s of %s unknown' % (what, subject))]
    if actual < wanted:
        return [failure(check, subject, '>= %s' % wanted, actual,
                        '%s %s is %s, expected at least %s' % (subject, what, actual, wanted))]
    return []


@_check('nvlink_active_links')
def check_nvlink_active_links(ctx, gpu, subject, wanted):
    active = gpu.get('nvlink_active')
    if (ctx.outputs.get('nvlink') or {}).get('complete') is False:
        return [not_checked('nvlink_active_links', subject, wanted,
                            '%s was elided or incomplete' % ctx.source('nvlink'))]
    if active is None:
        why = 'no %s output for %s' % (ctx.source('nvlink'), subject)
        return [not_checked('nvlink_active_links', subject, wanted, why)]
    if active < wanted:
        return [failure('nvlink_active_links', subject, wanted, active,
                        '%s has %d active NVLink links, expected %d' % (subject, active, wanted))]
    return []


def check_mode(key):
    @_check(key)
    def run(_ctx, gpu, subject, wanted):
        actual = gpu.get(key)
        what = key.replace('_', ' ')
        if actual is None:
            return [not_checked(key, subject, wanted, '%s of %s is N/A or could not be read' % (what, subject))]
        if actual.lower() != wanted.lower():
            return [failure(key, subject, wanted, actual, '%s %s is %s, expected %s' % (subject, what, actual, wanted))]
        return []
    return run


def wanted_for_gpu(wanted, index):
    """The value a per-GPU key wants of GPU ``index``: ``wanted`` itself when it is one value for every GPU; from a
    mapping, the GPU's index (a number or its digits) or else ``"*"``; None when the mapping leaves the GPU out."""
    if not isinstance(wanted, dict):
        return wanted
    for key in (index, str(index), '*'):
        if key in wanted:
            return wanted[key]
    return None


@_check('compute_mode')
def check_compute_mode(ctx, gpu, subject, wanted):
    """``compute_mode``: one mode for every GPU, or per GPU index with ``"*"`` for the others (MPS on some GPUs)."""
    mode = wanted_for_gpu(wanted, gpu.get('index'))
    if mode is None:
        return []
    return check_mode('compute_mode')(ctx, gpu, subject, mode)


def _unreadable(gpu, prefixes):
    return [u for u in gpu.get('unreadable') or [] if u.startswith(prefixes)]


@_check('ecc_uncorrected')
def check_ecc_uncorrected(_ctx, gpu, subject, wanted):
    expected = '<= %d' % wanted
    bad = _unreadable(gpu, ('ecc_errors/',))
    if bad:
        return [not_checked('ecc_uncorrected', subject, expected,
                            'ECC counters of %s could not be read (%s)' % (subject, '; '.join(bad)))]
    values = [v for v in (gpu.get('ecc_uncorrected_volatile'), gpu.get('ecc_uncorrected_aggregate')) if v is not None]
    if not values:
        return [not_checked('ecc_uncorrected', subject, expected, 'ECC counters of %s are N/A' % subject)]
    if max(values) > wanted:
        return [failure('ecc_uncorrected', subject, expected, max(values),
                        '%s has %d uncorrectable ECC errors' % (subject, max(values)))]
    return []


@_check('retired_pages_pending')
def check_retired_pages(_ctx, gpu, subject, allowed):
    if allowed:
        return []
    bad = _unreadable(gpu, ('pending_retirement',))
    if bad:
        return [not_checked('retired_pages_pending', subject, False,
                            'page retirement of %s could not be read (%s)' % (subject, '; '.join(bad)))]
    if gpu.get('retired_pages_pending'):
        return [failure('retired_pages_pending', subject, False, True,
                        '%s has page retirement pending (reset the GPU)' % subject)]
    return []


@_check('remapped_rows_pending')
def check_remapped_rows(_ctx, gpu, subject, allowed):
    if allowed:
        return []
    bad = _unreadable(gpu, ('remapped_row_',))
    if bad:
        return [not_checked('remapped_rows_pending', subject, False,
                            'row remapping of %s could not be read (%s)' % (subject, '; '.join(bad)))]
    if gpu.get('remapped_rows_pending') or gpu.get('remapping_failure'):
        what = 'row remapping failed' if gpu.get('remapping_failure') else 'row remapping pending (reset the GPU)'
        return [failure('remapped_rows_pending', subject, False, True, '%s has %s' % (subject, what))]
    if gpu.get('remapped_rows_pending') is None and gpu.get('retired_pages_pending') is None:
        return [not_checked('remapped_rows_pending', subject, False,
                            'neither remapped rows nor retired pages are reported for %s' % subject)]
    return []


# ---------------------------------------------------------------- DCGM

def check_dcgm_health(ctx, wanted):
    """``dcgm_health: true``: the host engine answers and ``dcgmi health -c`` reports no failure (warnings pass,
    and are named in the facts); what could not be read is ``not checked``, a failure."""
    if not wanted:
        return []
    dcgm = ctx.topology.get('dcgm') or {}
    health = dcgm.get('health')
    if health is None:
        return [not_checked('dcgm_health', 'node', 'Healthy', dcgm.get('unreadable') or 'DCGM was not read')]
    overall = health.get('overall')
    if overall in ('Healthy', 'Warning'):
        return []
    failures = []
    for gpu, report in sorted((health.get('gpus') or {}).items(), key=lambda item: int(item[0])):
        if report.get('status') in ('Healthy', 'Warning'):
            continue
        incidents = '; '.join('%s: %s' % (i.get('system'), i.get('message')) for i in report.get('incidents') or [])
        message = 'DCGM health watches report %s on GPU%s' % (report.get('status'), gpu)
        failures.append(failure('dcgm_health', 'GPU%s' % gpu, 'Healthy', report.get('status'),
                                message + (': ' + incidents if incidents else '')))
    if not failures:
        failures.append(failure('dcgm_health', 'node', 'Healthy', overall,
                                'DCGM health watches report overall %s' % overall))
    return failures


# ---------------------------------------------------------------- MIG

def _instances_text(counts):
    """``7x 1g.10gb`` / ``3x 1g.10gb, 1x 3g.40gb`` / ``none``."""
    shown = ['%dx %s' % (counts[name], name) for name in sorted(counts) if counts[name]]
    return ', '.join(shown) or 'none'


def _mig_wanted(state):
    if not state['enabled']:
        return 'MIG Disabled'
    return 'MIG Enabled, %s' % _instances_text(state['devices'])


def _mig_gpu(ctx, gpu, state, mig):
    """Failures of one GPU matched by a mig-parted entry (``state``: ``{enabled, devices}``)."""
    subject = _label(gpu)
    expected = _mig_wanted(state)
    if 'xml' not in (gpu.get('sources') or ['xml']):
        return [not_checked('mig_devices', subject, expected, '%s is not in %s' % (subject, ctx.source('xml')))]
    mode = gpu.get('mig_mode')
    pending = gpu.get('mig_mode_pending')
    target = 'Enabled' if state['enabled'] else 'Disabled'
    if mode is None and not state['enabled']:
        return []       # no MIG on this GPU (N/A): nothing to disable
    if mode != target:
        note = ' (%s pending: applied at the next GPU reset or reboot)' % pending if pending == target else ''
        return [failure('mig_devices', subject, expected, 'MIG %s' % (mode or 'N/A'),
                        '%s MIG mode is %s%s, expected %s' % (subject, mode or 'N/A (not supported or unreadable)',
                                                              note, expected))]
    if pending is not None and pending != target:
        return [failure('mig_devices', subject, expected, 'MIG %s, %s pending' % (mode, pending),
                        '%s MIG mode is %s but %s is pending (applied at the next GPU reset or reboot), expected %s'
                        % (subject, mode, pending, expected))]
    if not state['enabled']:
        return []
    if not isinstance(mig, dict):
        return [not_checked('mig_devices', subject, expected, 'the facts have no MIG instances (gathered by a '
                            'version without nvidia-smi mig -lgi)')]
    if mig.get('unreadable'):
        return [not_checked('mig_devices', subject, expected, 'the GPU instances of %s could not be listed: %s'
                            % (subject, mig['unreadable']))]
    instances = (mig.get('instances') or {}).get(str(gpu['index'])) or []
    found = {}
    for instance in instances:
        found[instance.get('name')] = found.get(instance.get('name'), 0) + 1
    wanted = dict((name, count) for name, count in state['devices'].items() if count)
    if found != wanted:
        return [failure('mig_devices', subject, _instances_text(wanted), _instances_text(found),
                        '%s has GPU instances %s, expected %s' % (subject, _instances_text(found),
                                                                  _instances_text(wanted)))]
    devices = gpu.get('mig_devices')
    per_instance = gpu.get('mig_device_gpu_instances')
    if per_instance and None not in per_instance:
        counted = dict((i.get('id'), per_instance.count(i.get('id'))) for i in instances)
        odd = sorted((gi, n) for gi, n in counted.items() if n != 1)
        if odd:
            said = ', '.join('GPU instance %s has %d' % (gi, n) for gi, n in odd)
            return [failure('mig_devices', subject, 'one compute instance per GPU instance', said,
                            '%s: %s compute instances (%s MIG devices); each GPU instance needs exactly its one '
                            'compute instance' % (subject, said, ctx.source('xml')))]
    if devices != len(instances):
        return [failure('mig_devices', subject, '%d MIG devices' % len(instances), '%s MIG devices' % devices,
                        '%s has %d GPU instances but %s lists %s MIG devices: each GPU instance needs its one '
                        'compute instance' % (subject, len(instances), ctx.source('xml'), devices))]
    return []


def check_mig_devices(ctx, entries):
    """``mig_devices``: the entries of one mig-parted configuration. Each GPU an entry matches has the MIG mode
    it asks for (current, and no other pending) and, with MIG enabled, exactly the GPU instances of its
    ``mig-devices`` by profile name, each with its compute instance; a GPU without MIG passes only
    ``mig-enabled: false``. GPUs no entry matches are not looked at. A GPU the entries name that the node does
    not have, or instances that could not be listed, are ``not checked``."""
    gpus = [{'index': g['index'], 'bus_id': g.get('pci_bus_id'), 'pci_device_id': g.get('pci_device_id'),
             'name': g.get('name')} for g in ctx.gpus]
    try:
        wanted = expand(entries, gpus, 'mig_devices')
    except ConfigError as exc:
        return [not_checked('mig_devices', 'node', 'the GPUs mig_devices names', str(exc))]
    by_index = dict((g['index'], g) for g in ctx.gpus)
    failures = []
    for state in sorted(wanted.values(), key=lambda s: s['index']):
        failures.extend(_mig_gpu(ctx, by_index[state['index']], state, ctx.topology.get('mig')))
    return failures


def check_next_boot_driver(ctx, wanted):
    """``next_boot_driver: true``: the kernel the node boots next (module_utils/node/boot_kernel.py) has an NVIDIA
    module that modprobe finds, of the installed driver's version; what could not be read is ``not checked``."""
    if not wanted:
        return []
    boot = ctx.topology.get('next_boot') or {}
    kernel = boot.get('kernel')
    expected = 'an NVIDIA module for the kernel the node boots next'
    if kernel is None or boot.get('unreadable'):
        return [not_checked('next_boot_driver', 'node', expected, boot.get('unreadable') or 'the boot kernel was not read')]
    if boot.get('module') is None:
        why = ('its headers are installed, yet DKMS built nothing for it' if boot.get('headers')
               else 'its headers are not installed, so DKMS cannot build one')
        return [failure('next_boot_driver', 'node', expected, None,
                        'kernel %s, which the node boots next, has no NVIDIA module in its modules.dep (%s): the '
                        'node would boot without the driver. A kernel update that came without the driver? Install '
                        'the headers and run the nvidia_driver role, or hold the kernel (nvidia_driver_hold_kernel)'
                        % (kernel, why))]
    installed = ctx.topology.get('driver_installed_version')
    version = boot.get('module_version')
    if installed is None:
        return [not_checked('next_boot_driver', 'node', expected, 'no installed driver package to compare the '
                            'module %s of kernel %s with' % (boot['module'], kernel))]
    if version is None:
        return [not_checked('next_boot_driver', 'node', installed, 'the version of %s for kernel %s was not read'
                            % (boot['module'], kernel))]
    if version != installed:
        return [failure('next_boot_driver', 'node', installed, version,
                        'kernel %s, which the node boots next, would load NVIDIA module %s, not the installed driver '
                        '%s' % (kernel, version, installed))]
    return []
