#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mig_layout
short_description: Converge the MIG mode and GPU instances of a node's GPUs to a mig-parted configuration
version_added: 0.1.0
description:
  - Takes the layout in NVIDIA mig-parted's configuration format (C(version) C(v1), C(mig-configs)), as data
    (O(config)) or as a file on the node (O(config_file)), so existing mig-parted files work unchanged, and
    applies the configuration named O(selected). Besides GPU indexes, an entry's C(devices) may list PCI bus ids
    (C(0000:1b:00.0)); C(device-filter) restricts an entry to GPUs of a PCI device id. GPUs no entry matches are
    left alone; a GPU matched twice is refused.
  - Reads the GPUs (C(nvidia-smi -q -x)) and, when some GPU has MIG enabled, C(nvidia-smi mig -lgip), C(-lgi) and
    C(-lci), then plans per GPU. Instances equal to the wanted ones, nothing; existing ones that are part of the
    wanted ones (each with its default compute instance), only the missing ones are created; otherwise every
    compute and GPU instance of the GPU is destroyed and the whole wanted set created, largest first, as
    mig-parted does. MIG off destroys every instance and then disables the mode.
  - Validates before changing anything. It refuses profiles the GPU model does not have (from C(-lgip), or the
    profiles known for the model while MIG is still disabled), counts that do not fit, MIG on GPUs without MIG,
    compute-instance profiles, an unknown O(selected) and indexes or bus ids not on the node. Every message
    starts with the path of the bad part (C(mig-configs.half-1g.10gb[0].mig-devices.1g.99gb)).
  - Applies the plan GPU by GPU, as mig-parted does, each GPU completely before the next one is touched;
    C(nvidia-smi mig -i <bus> -gi <ids> -dci), C(-dgi), C(nvidia-smi -i <bus> -mig 1|0), the GPU's mode read
    again (C(nvidia-smi --query-gpu=pci.bus_id,mig.mode.current,mig.mode.pending -i <bus>)) and, only once the
    mode is current, C(nvidia-smi mig -i <bus> -cgi <profiles> -C); then reads the instances back and fails when
    they differ from the wanted ones.
  - A mode change nvidia-smi leaves pending (the GPU is in use, or its reset needs a reboot) creates nothing on
    that GPU; the GPU is in RV(pending), RV(reboot_required) is true and a warning quotes nvidia-smi. Failures of
    nvidia-smi (C(Insufficient Resources), C(In use by another client)) fail the module with the command and
    nvidia-smi's lines verbatim, and the commands that had run before. It stops at the first GPU that fails; the
    GPUs before it are complete, the GPUs after it untouched.
  - GPU instances do not survive a reboot; O(boot_script) writes a script that creates them again at boot. It is
    written before any change, so a run that fails on a GPU still leaves the script of the wanted layout.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Reads the GPUs, validates and returns the plan and the commands that would run; runs none.
  diff_mode:
    support: full
    description: The MIG mode and instances of each GPU the configuration matches, before and after; the boot script.
options:
  config:
    description: The mig-parted configuration as data (C(version), C(mig-configs)).
    type: dict
  config_file:
    description: Path on the node of a mig-parted configuration file (YAML).
    type: path
  selected:
    description: The name of the configuration of C(mig-configs) to apply (C(all-1g.10gb)).
    type: str
    required: true
  nvidia_smi:
    description: The nvidia-smi program (a name looked up in E(PATH), or a path).
    type: str
    default: nvidia-smi
  wait_for_driver:
    description:
      - When the driver does not answer (nvidia-smi is not installed yet, says it cannot communicate with the
        NVIDIA driver, as on a bare node whose driver the same rollout installs, or reports a driver/library version
        mismatch, as after a driver upgrade that waits for its reboot), check the configuration and the selected
        name only, change nothing and return RV(waits_for_driver) true, instead of failing.
      - Any other failure to read the GPUs still fails.
    type: bool
    default: false
  boot_script:
    description:
      - Path of an executable C(/bin/sh) script (mode 0755) that creates, at boot, the GPU instances of every GPU of
        the configuration with MIG enabled and instances wanted, on each GPU that has none
        (C(nvidia-smi mig -i <bus> -cgi <profiles> -C)), and exits non-zero naming the GPU when that fails.
      - Written (or removed) before the layout is applied, so that it is there even when applying fails; a layout
        refused once MIG is on (a model whose profiles were not known) puts the previous script back.
      - Removed when the configuration creates no instance. Unset writes none.
    type: path
notes:
  - O(config) and O(config_file) are mutually exclusive; one is required.
  - A MIG mode change resets the GPU; stop the programs that use it first (the C(gpuops.node.mig) role stops the
    GPU clients it knows when a GPU of the check-mode RV(plan) has a C(mode_change) or a C(destroy)).
  - The layout is checked against each GPU's profiles before any change (C(nvidia-smi mig -lgip) on a GPU in MIG
    mode, the known profiles of the model on a GPU with MIG off). For a model whose profiles are not known, MIG is
    enabled first and the layout checked against C(-lgip) before any instance is created on that GPU; when it does
    not fit, the GPU's MIG mode is set back to Disabled and the module fails naming the profile (the GPUs before it
    are done, the GPUs after it untouched).
seealso:
  - name: NVIDIA mig-parted
    description: The configuration format.
    link: https://github.com/NVIDIA/mig-parted
  - name: NVIDIA MIG User Guide
    description: GPU-instance profiles and the nvidia-smi mig commands.
    link: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
'''

EXAMPLES = r'''
- name: GPUs 0-3 in seven 1g.10gb instances each, GPUs 4-7 without MIG
  gpuops.node.mig_layout:
    config:
      version: v1
      mig-configs:
        half-1g.10gb:
          - devices: [0, 1, 2, 3]
            mig-enabled: true
            mig-devices: {"1g.10gb": 7}
          - devices: [4, 5, 6, 7]
            mig-enabled: false
    selected: half-1g.10gb
    boot_script: /usr/local/libexec/gpuops-mig-layout

- name: A mig-parted file already on the node
  gpuops.node.mig_layout:
    config_file: /etc/nvidia-mig-manager/config.yaml
    selected: all-balanced
  check_mode: true
  register: mig_plan
'''

RETURN = r'''
changed:
  description: Instances were destroyed or created, a MIG mode (current or pending) changed, or the boot script.
  returned: always
  type: bool
plan:
  description:
    - Per GPU the configuration matches, what it needs (in check mode the same; nothing runs).
    - C(mode) is C({current, pending, wanted}), C(mode_change) null, C(enable) or C(disable), C(destroy) the GPU
      instances to destroy with their compute instances (C([{gi, name, cis}])), C(create) the profiles to create,
      largest first; C(before) and C(after) are C({mig_mode, mig_mode_pending, instances}); C(entry) is the
      position of the configuration entry that matched the GPU.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      bus_id: "00000000:19:00.0"
      name: NVIDIA H100 80GB HBM3
      entry: 0
      mode: {current: Disabled, pending: Disabled, wanted: Enabled}
      mode_change: enable
      destroy: []
      create: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
      before: {mig_mode: Disabled, mig_mode_pending: Disabled, instances: {}}
      after: {mig_mode: Enabled, mig_mode_pending: Enabled, instances: {1g.10gb: 7}}
pending:
  description: Bus ids of the GPUs whose MIG mode change stays pending until a GPU reset or a reboot.
  returned: always
  type: list
  elements: str
waits_for_driver:
  description: >-
    O(wait_for_driver) was set and the driver did not answer: the configuration was checked, nothing else was read or
    changed, and the layout is still to be applied (RV(plan) and RV(gpus) are empty).
  returned: always
  type: bool
  sample: false
reboot_required:
  description: Some MIG mode change is pending (RV(pending)); its GPU instances are created after the reboot.
  returned: always
  type: bool
gpus:
  description: Every GPU of the node as read after the changes (in check mode, as read).
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, bus_id: "00000000:19:00.0", name: NVIDIA H100 80GB HBM3, mig_mode: Enabled,
            mig_mode_pending: Enabled, instances: {1g.10gb: 7}}]
commands:
  description:
    - The nvidia-smi command lines that changed something (or would, in check mode), each a list, in the order they
      ran (would run), GPU by GPU, each GPU's destroys, mode change and creation.
  returned: always
  type: list
  elements: list
  sample: [[nvidia-smi, -i, "00000000:19:00.0", -mig, "1"], [nvidia-smi, mig, -i, "00000000:19:00.0", -cgi,
            "1g.10gb,1g.10gb", -C], [nvidia-smi, -i, "00000000:3B:00.0", -mig, "1"], [nvidia-smi, mig, -i,
            "00000000:3B:00.0", -cgi, "1g.10gb,1g.10gb", -C]]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import (
    ConfigError, expand, load, normalize_bus_id, select)
from ansible_collections.gpuops.node.plugins.module_utils.plans.mig import (
    boot_script, counts, creation_order, describe, gpu_states, pending_work, plan, recheck, state_text)
from ansible_collections.gpuops.node.plugins.module_utils.node.mig_profiles import profiles_for
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import classify_nvsmi_failure
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import (
    empty_answer, mig_errors, parse_lci, parse_lgi, parse_lgip, parse_mode_change)
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml

HEADER = ('# Written by gpuops.node.mig (mig_layout): the GPU instances of the MIG layout, which no reboot keeps; '
          'do not edit.')


class Node(object):
    """nvidia-smi on the node: reads, and changes recorded in ``done``."""

    def __init__(self, module, nvidia_smi):
        self.module = module
        self.smi = nvidia_smi
        self.done = []
        # the boot script was changed before the layout is applied
        self.script_changed = False

    def call(self, args, change=False):
        """``(argv, rc, out, err)`` of nvidia-smi with ``args`` (a change is recorded in ``done``); one that does
        not start or does not finish fails the module."""
        argv = [self.smi] + list(args)
        result = command.run(self.module, argv)
        if change:
            self.done.append(argv)
        if result.error is not None or result.timed_out:
            self.fail(command.failure(result) + (self.before() if change else ''))
        return argv, result.rc, result.out, result.err

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, changed=bool(self.done) or self.script_changed, commands=self.done, **extra)

    def before(self):
        """The changes run before the last one, for its failure."""
        done = self.done[:-1]
        return '; run before it: %s' % '; '.join(command.label(a) for a in done) if done else ''

    def change(self, args):
        return self.call(args, change=True)

    def failed(self, argv, rc, out, err):
        """A change that failed: nvidia-smi's error lines, and the changes run before it."""
        lines = mig_errors(out + '\n' + err) or ['(no output)']
        self.fail(command.failure(command.Result(argv, rc, out, err), output=lines) + self.before(), nvidia_smi=lines)

    def xml_gpus(self):
        argv, rc, out, err = self.call(['-q', '-x'])
        if rc != 0:
            self.fail(command.failure(command.Result(argv, rc, out, err)))
        try:
            return parse_nvsmi_xml(out)['gpus']
        except ParseError as exc:
            self.fail('%s: %s' % (' '.join(argv), exc))

    def mode(self, bus):
        """The (current, pending) MIG mode of one GPU."""
        argv, rc, out, err = self.call(['--query-gpu=pci.bus_id,mig.mode.current,mig.mode.pending',
                                        '--format=csv,noheader', '-i', bus])
        if rc != 0:
            self.fail(command.failure(command.Result(argv, rc, out, err)))
        for line in out.splitlines():
            fields = [f.strip() for f in line.split(',')]
            if len(fields) == 3 and normalize_bus_id(fields[0]) == normalize_bus_id(bus):
                return fields[1], fields[2]
        self.fail('%s: no line for GPU %s in its answer: %s' % (' '.join(argv), bus, out.strip()[:800]))

    def table(self, option, parser):
        argv, rc, out, err = self.call(['mig', option])
        if empty_answer(rc, out + '\n' + err):
            return []
        if rc != 0:
            self.fail(command.failure(command.Result(argv, rc, out, err)))
        try:
            return parser(out)
        except ParseError as exc:
            self.fail('%s: %s' % (' '.join(argv), exc))

    def read(self):
        xml = self.xml_gpus()
        tables = {'lgip': [], 'lgi': [], 'lci': []}
        if any(gpu['mig_mode'] == 'Enabled' for gpu in xml):
            tables = {'lgip': self.table('-lgip', parse_lgip), 'lgi': self.table('-lgi', parse_lgi),
                      'lci': self.table('-lci', parse_lci)}
        return xml, tables


def read_config(module):
    p = module.params
    where = ''
    if p['config_file']:
        where = 'config_file %s: ' % p['config_file']
        try:
            with open(p['config_file'], 'rb') as handle:
                data = handle.read()
        except (IOError, OSError) as exc:
            module.fail_json(msg='%scannot read it: %s' % (where, exc.strerror or exc))
    else:
        data = p['config']
    try:
        return select(load(data), p['selected'])
    except ConfigError as exc:
        module.fail_json(msg='%s%s' % (where if exc.path != 'selected' else '', exc))


def gpu_summary(states):
    return [{'index': g['index'], 'bus_id': g['bus_id'], 'name': g['name'], 'mig_mode': g['mig_mode'],
             'mig_mode_pending': g['mig_mode_pending'],
             'instances': counts(i['name'] for i in g['instances'] if g['mig_mode'] == 'Enabled')}
            for g in states]


def commands_of(smi, gpu):
    """The argv lists that make one GPU's plan, in order: destroy, mode change, create."""
    bus = gpu['bus_id']
    result = []
    with_cis = [str(d['gi']) for d in gpu['destroy'] if d['cis']]
    if with_cis:
        result.append(('destroy', [smi, 'mig', '-i', bus, '-gi', ','.join(with_cis), '-dci']))
    if gpu['destroy']:
        result.append(('destroy', [smi, 'mig', '-i', bus, '-gi', ','.join(str(d['gi']) for d in gpu['destroy']),
                                   '-dgi']))
    if gpu['mode_change']:
        result.append(('mode', [smi, '-i', bus, '-mig', '1' if gpu['mode_change'] == 'enable' else '0']))
    if gpu['create']:
        result.append(('create', [smi, 'mig', '-i', bus, '-cgi', ','.join(gpu['create']), '-C']))
    return result


def recheck_profiles(node, gpu, where, restore_script):
    """A GPU planned without knowing its model's profiles (MIG was off): checked against ``-lgip`` now that its MIG
    mode is on, before anything is created on it. On an error the MIG mode this run enabled is set back, the boot
    script put back as it was, and the module fails."""
    if gpu.get('profiles_known', True):
        return
    rows = node.table('-lgip', parse_lgip)
    errors = recheck([(gpu, profiles_for(gpu['name'], [r for r in rows if r['gpu'] == gpu['index']] or None))],
                     where)
    if not errors:
        return
    done = list(node.done)
    restored = ''
    if gpu['mode_change'] == 'enable':
        node.change(['-i', gpu['bus_id'], '-mig', '0'])
        restored = ', its MIG mode set back to Disabled'
    restore_script()
    node.fail('%s; nothing was created on GPU %s (%s)%s%s' % (
        '; '.join(errors), gpu['index'], gpu['bus_id'], restored,
        '; run before: %s' % '; '.join(' '.join(a) for a in done) if done else ''), errors=errors)


def change_mode(module, node, gpu, argv):
    """Runs one GPU's mode change and reads its mode back; returns whether the change stays pending."""
    argv, rc, out, err = node.change(argv)
    results = [r for r in parse_mode_change(out + '\n' + err)
               if normalize_bus_id(r['bus_id']) == normalize_bus_id(gpu['bus_id'])]
    kinds = set(r['result'] for r in results)
    if 'pending' in kinds:
        module.warn('GPU %s (%s): MIG mode stays pending %s until the GPU is reset or the node reboots; '
                    'no GPU instance is created on it now. nvidia-smi: %s' % (
                        gpu['index'], gpu['bus_id'], gpu['mode_change'],
                        ' '.join(r['message'] for r in results if r['result'] == 'pending')))
        return True
    if rc != 0 or kinds - set(['enabled', 'disabled']) or not kinds:
        node.failed(argv, rc, out, err)
    current, pending = node.mode(gpu['bus_id'])
    if current != gpu['mode']['wanted']:
        module.warn('GPU %s (%s): MIG mode is %s (pending %s) after nvidia-smi -mig: a GPU reset or a reboot '
                    'applies it; no GPU instance is created on it now' % (gpu['index'], gpu['bus_id'], current, pending))
        return True
    return False


def apply(module, node, planned, where='entries', restore_script=lambda: None):
    """Runs the plan GPU by GPU, each one complete (destroy, mode change, its mode read back, profiles checked when
    they were not known, create) before the next; the first failure stops it. Returns the bus ids left pending."""
    pending = []
    for gpu in planned:
        for kind, argv in commands_of(node.smi, gpu):
            if kind == 'mode':
                if change_mode(module, node, gpu, argv[1:]):
                    pending.append(gpu['bus_id'])
                    break
                continue
            if kind == 'create':
                recheck_profiles(node, gpu, where, restore_script)
            argv, rc, out, err = node.change(argv[1:])
            if rc != 0:
                node.failed(argv, rc, out, err)
    return pending


def verify(node, planned, after, pending):
    by_bus = dict((normalize_bus_id(g['bus_id']), g) for g in after)
    for gpu in planned:
        if gpu['bus_id'] in pending:
            continue
        now = by_bus.get(normalize_bus_id(gpu['bus_id']))
        found = (now['mig_mode'], now['instances']) if now else (None, {})
        wanted = (gpu['after']['mig_mode'], gpu['after']['instances'])
        if found != wanted:
            node.fail('GPU %s (%s): after the changes MIG mode is %s with %s, not %s with %s' % (
                gpu['index'], gpu['bus_id'], found[0] or 'unknown', describe(found[1]), wanted[0], describe(wanted[1])),
                gpus=after)


def write_script(module, path, text):
    """Writes (or, for None, removes) the boot script; returns (changed, diff)."""
    old = None
    if os.path.isfile(path):
        with open(path) as handle:
            old = handle.read()
    diff = {'before_header': path, 'after_header': path, 'before': old or '', 'after': text or ''}
    if text is None:
        if old is not None and not module.check_mode:
            os.remove(path)
        return old is not None, diff
    changed = old != text or os.stat(path).st_mode & 0o777 != 0o755
    if changed and not module.check_mode:
        # the boot unit executes it
        write_atomic(module, path, text, 0o755)
    return changed, diff


# nvidia-smi's answers that mean the driver is not (yet) the one this run installs: not loaded (a bare node), or
# the library newer than the loaded module (a driver upgrade waiting for its reboot), or no library yet
WAITING_KINDS = ('driver_not_loaded', 'nvml_mismatch', 'nvml_missing')


def _nothing():
    """No boot script to put back."""


def waits(module, why):
    """The driver does not answer: the configuration was checked, the layout waits for the driver."""
    module.exit_json(changed=False, waits_for_driver=True, plan=[], pending=[], reboot_required=False, gpus=[],
                     commands=[], msg='the driver does not answer (%s): the layout waits for it' % why)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type='dict'),
            config_file=dict(type='path'),
            selected=dict(type='str', required=True),
            nvidia_smi=dict(type='str', default='nvidia-smi'),
            boot_script=dict(type='path'),
            wait_for_driver=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('config', 'config_file')],
        required_one_of=[('config', 'config_file')],
        supports_check_mode=True,
    )
    p = module.params
    entries = read_config(module)
    smi = p['nvidia_smi']
    missing = None
    if '/' not in smi:
        smi = module.get_bin_path(smi)
        if not smi:
            missing = '%s is not on the PATH' % p['nvidia_smi']
    elif not os.access(smi, os.X_OK):
        missing = '%s does not exist or is not executable' % smi
    if missing:
        if p['wait_for_driver']:
            waits(module, missing)
        module.fail_json(msg='nvidia_smi: %s' % missing)
    node = Node(module, smi)
    if p['wait_for_driver']:
        argv, rc, out, err = node.call(['-L'])
        failure = classify_nvsmi_failure(rc, out + '\n' + err)
        if failure and failure['kind'] in WAITING_KINDS:
            waits(module, '%s: %s' % (' '.join(argv), failure['message'][:300]))

    xml, tables = node.read()
    states = gpu_states(xml, tables['lgi'], tables['lci'])
    where = 'mig-configs.%s' % p['selected']
    try:
        desired = expand(entries, states, where)
    except ConfigError as exc:
        module.fail_json(msg=str(exc))
    profiles = dict((normalize_bus_id(g['bus_id']), profiles_for(g['name'], [
        r for r in tables['lgip'] if r['gpu'] == g['index']] if g['mig_mode'] == 'Enabled' else None))
        for g in states)
    result = plan(states, desired, profiles, where)
    if result['errors']:
        module.fail_json(msg='; '.join(result['errors']), errors=result['errors'], plan=result['gpus'])
    for warning in result['warnings']:
        module.warn(warning)
    planned = [g for g in result['gpus'] if pending_work(g)]
    # in the order they run: GPU by GPU, its destroys, mode change and creation
    wanted_commands = [argv for gpu in planned for kind, argv in commands_of(smi, gpu)]

    # the boot script describes the wanted layout: written before applying it, so that a failure on some GPU
    # still leaves it (the GPUs applied before the failure need it at the next boot)
    script_changed, script_diff, restore_script = False, None, _nothing
    if p['boot_script']:
        text = boot_script([(g['bus_id'], creation_order(g['after']['instances'], profiles.get(normalize_bus_id(
            g['bus_id'])))) for g in result['gpus'] if g['mode']['wanted'] == 'Enabled'], p['nvidia_smi'], HEADER)
        existed = os.path.isfile(p['boot_script'])
        script_changed, script_diff = write_script(module, p['boot_script'], text)
        node.script_changed = script_changed
        if script_changed:
            def restore_script():
                # a layout refused once MIG is on: the script of the previous layout stays
                write_script(module, p['boot_script'], script_diff['before'] if existed else None)
                node.script_changed = False

    pending = []
    after = gpu_summary(states)
    if not module.check_mode and planned:
        pending = apply(module, node, planned, where, restore_script)
        xml, tables = node.read()
        after = gpu_summary(gpu_states(xml, tables['lgi'], tables['lci']))
        verify(node, planned, after, pending)

    before = gpu_summary(states)
    if module.check_mode:
        changed = bool(planned)
    else:
        # a mode change asked again while it is still pending changes nothing
        modes = [(g['mig_mode'], g['mig_mode_pending']) for g in before] != [
            (g['mig_mode'], g['mig_mode_pending']) for g in after]
        changed = modes or any('-mig' not in argv for argv in node.done)
    output = {
        'changed': bool(changed) or script_changed,
        'plan': result['gpus'],
        'pending': pending,
        'reboot_required': bool(pending),
        'waits_for_driver': False,
        'gpus': after,
        'commands': node.done if not module.check_mode else wanted_commands,
    }
    if module._diff:
        shown = [dict(g, after=_actual(g, after)) if not module.check_mode else g for g in result['gpus']]
        output['diff'] = [{'before_header': 'MIG layout', 'after_header': 'MIG layout',
                           'before': state_text(shown, 'before'), 'after': state_text(shown, 'after')}]
        if script_diff:
            output['diff'].append(script_diff)
    module.exit_json(**output)


def _actual(gpu, after):
    for now in after:
        if normalize_bus_id(now['bus_id']) == normalize_bus_id(gpu['bus_id']):
            return {'mig_mode': now['mig_mode'], 'mig_mode_pending': now['mig_mode_pending'],
                    'instances': now['instances']}
    return gpu['after']


if __name__ == '__main__':
    main()
