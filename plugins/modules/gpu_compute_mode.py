#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_compute_mode
short_description: Set the compute mode of NVIDIA GPUs, writing only the differences
version_added: 0.1.0
description:
  - Reads the compute mode of every GPU (C(nvidia-smi -q -x)), compares it with O(modes) and sets only the GPUs that
    differ (C(nvidia-smi -i <bus id> -c <MODE>)), then reads them again and fails when one did not take the mode.
  - The compute mode does not survive a reboot (it returns to C(Default)); the C(gpuops.node.mps) role's units set it
    again when they start.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Reads and reports the GPUs it would change, and runs no setter.
  diff_mode:
    support: full
    description: The compute mode of each GPU it changes, before and after.
options:
  modes:
    description:
      - The compute mode wanted per GPU, by PCI bus id (any case, 4- or 8-digit domain). GPUs not named are left
        alone.
    type: dict
    required: true
  nvidia_smi:
    description: The nvidia-smi command.
    type: str
    default: nvidia-smi
'''

EXAMPLES = r'''
- name: MPS on GPUs 0 and 1, GPU 2 back to Default
  gpuops.node.gpu_compute_mode:
    modes:
      "00000000:07:00.0": Exclusive_Process
      "00000000:0F:00.0": Exclusive_Process
      "00000000:47:00.0": Default
'''

RETURN = r'''
changes:
  description: The GPUs whose mode was set (or would be, in check mode), each with C(index), C(pci_bus_id), C(before), C(after).
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, pci_bus_id: "00000000:07:00.0", before: Default, after: Exclusive_Process}]
gpus:
  description: The compute mode of every GPU named in O(modes), by PCI bus id, as read at the end.
  returned: always
  type: dict
  sample: {"00000000:07:00.0": Exclusive_Process}
commands:
  description: The argv lists run (or that would run in check mode).
  returned: always
  type: list
  elements: list
  sample: [[nvidia-smi, -i, "00000000:07:00.0", -c, EXCLUSIVE_PROCESS]]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import ParseError, parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.module_utils.pci import sysfs_pci_address

# nvidia-smi -c takes these names; -q -x prints the first spelling
MODES = {'default': ('Default', 'DEFAULT'), 'exclusive_process': ('Exclusive_Process', 'EXCLUSIVE_PROCESS'),
         'prohibited': ('Prohibited', 'PROHIBITED')}


def read_modes(module, nvidia_smi):
    """``{sysfs bus id: (gpu dict, mode)}`` from ``nvidia-smi -q -x``."""
    argv = [nvidia_smi, '-q', '-x']
    out = command.check(module, argv).out
    try:
        gpus = parse_nvsmi_xml(out)['gpus']
    except ParseError as exc:
        module.fail_json(msg='cannot read %s: %s' % (' '.join(argv), exc))
    return dict((sysfs_pci_address(g['pci_bus_id']), g) for g in gpus)


def wanted_modes(module, modes):
    """``{sysfs bus id: (given bus id, canonical mode)}``; a bad bus id or mode fails the module."""
    wanted, bad = {}, []
    for bus_id, mode in sorted(modes.items()):
        canonical = MODES.get(str(mode).lower())
        address = sysfs_pci_address(bus_id)
        if canonical is None or address is None:
            bad.append('%s: %s' % (bus_id, mode))
            continue
        wanted[address] = (bus_id, canonical)
    if bad:
        module.fail_json(msg='modes: not a PCI bus id and a compute mode (%s): %s'
                         % (', '.join(v[0] for v in MODES.values()), '; '.join(bad)))
    return wanted


def main():
    module = AnsibleModule(
        argument_spec=dict(
            modes=dict(type='dict', required=True),
            nvidia_smi=dict(type='str', default='nvidia-smi'),
        ),
        supports_check_mode=True,
    )
    nvidia_smi = module.params['nvidia_smi']
    wanted = wanted_modes(module, module.params['modes'])
    read = read_modes(module, nvidia_smi) if wanted else {}
    missing = sorted(bus for bus, _m in wanted.values() if sysfs_pci_address(bus) not in read)
    if missing:
        module.fail_json(msg='modes: no GPU at %s (nvidia-smi lists %s)'
                         % (', '.join(missing), ', '.join(g['pci_bus_id'] for g in read.values()) or 'none'))
    changes, commands = [], []
    for address in sorted(wanted, key=lambda a: read[a]['index']):
        gpu, mode = read[address], wanted[address][1]
        if (gpu.get('compute_mode') or '').lower() == mode[0].lower():
            continue
        changes.append({'index': gpu['index'], 'pci_bus_id': gpu['pci_bus_id'], 'before': gpu.get('compute_mode'),
                        'after': mode[0]})
        commands.append([nvidia_smi, '-i', gpu['pci_bus_id'], '-c', mode[1]])
    if changes and not module.check_mode:
        for argv in commands:
            command.check(module, argv, fail=lambda msg: module.fail_json(msg=msg, changes=changes, commands=commands))
        read = read_modes(module, nvidia_smi)
        wrong = ['%s is %s' % (read[a]['pci_bus_id'], read[a].get('compute_mode')) for a in sorted(wanted)
                 if (read[a].get('compute_mode') or '').lower() != wanted[a][1][0].lower()]
        if wrong:
            module.fail_json(msg='the compute mode did not take: %s' % ', '.join(wrong), changes=changes,
                             commands=commands)
    # in check mode, the modes the GPUs would have
    gpus = dict((read[a]['pci_bus_id'], wanted[a][1][0] if module.check_mode else read[a].get('compute_mode'))
                for a in wanted)
    result = {'changed': bool(changes), 'changes': changes, 'gpus': gpus, 'commands': commands}
    if module._diff and changes:
        result['diff'] = {
            'before': ''.join('GPU%d %s: %s\n' % (c['index'], c['pci_bus_id'], c['before']) for c in changes),
            'after': ''.join('GPU%d %s: %s\n' % (c['index'], c['pci_bus_id'], c['after']) for c in changes),
            'before_header': 'compute mode', 'after_header': 'compute mode'}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
