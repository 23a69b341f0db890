#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgm_policy
short_description: Apply a DCGM violation policy to a GPU group and read it back
version_added: 0.1.0
description:
  - Reads the group's policy (C(dcgmi policy -g <group> --get)), compares it with O(policy), and only when they
    differ clears it (C(--clear)) and sets the new one (C(--set <action>,<validation>) with one flag per
    condition), then reads it back and fails when DCGM does not hold what was asked.
  - The conditions are C(dbe) (double-bit ECC errors, C(-e)), C(pcie) (PCIe replays, C(-p)), C(max_pages)
    (retired pages, C(-M n)), C(thermal) (degrees Celsius, C(-T n)), C(power) (watts, C(-P n)), C(nvlink)
    (NVLink errors, C(-n)) and C(xid) (XID errors, C(-x)). An absent, false or null condition is off; a policy
    without any condition is cleared. DCGM has no SM-utilisation condition; asking for one is refused with the
    alert threshold to use instead.
  - Bad data fails the module before dcgmi runs, each message naming the variable (C(dcgm_policy.conditions.foo)).
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Reads the policy and reports whether it would change, changing nothing.
  diff_mode:
    support: full
    description: Shows the policy before and after.
options:
  policy:
    description:
      - >-
        The policy, C({conditions: {dbe: true, pcie: true, max_pages: 60, thermal: 90, power: 700, nvlink: true,
        xid: true}, action: none, validation: none}).
      - C(action) is C(none) or C(reset) (0 or 1), C(validation) C(none), C(short), C(medium) or C(long) (0 to 3);
        DCGM 4.6 stores both but no longer acts on them.
    type: dict
    default: {}
  group:
    description: The DCGM group; 0 is DCGM's group of all GPUs (C(DCGM_ALL_SUPPORTED_GPUS)).
    type: int
    default: 0
  dcgmi:
    description: The dcgmi program (a name looked up in E(PATH), or a path).
    type: str
    default: dcgmi
  host:
    description: The host engine's address (C(--host)); the local host engine when unset.
    type: str
  validate_only:
    description: Only check O(policy) and return the commands that would set it; dcgmi is not run.
    type: bool
    default: false
seealso:
  - name: dcgmi policy
    description: NVIDIA's reference of the command.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-policy.html
'''

EXAMPLES = r'''
- name: Watch for double-bit ECC errors, PCIe replays, retired pages and heat on all GPUs
  gpuops.node.dcgm_policy:
    policy:
      conditions: {dbe: true, pcie: true, max_pages: 60, thermal: 90, xid: true}
      action: none
      validation: none

- name: Check the data before dcgmi is installed
  gpuops.node.dcgm_policy:
    policy: "{{ dcgm_policy }}"
    validate_only: true
'''

RETURN = r'''
policy:
  description: The policy DCGM holds (read back; in check mode, the one read before).
  returned: unless validate_only
  type: dict
  sample: {conditions: {dbe: true, thermal: 90}, action: none, validation: none}
before:
  description: The policy read before any change.
  returned: unless validate_only
  type: dict
after:
  description: The wanted policy, normalized (only the conditions that are on).
  returned: always
  type: dict
argv:
  description: The dcgmi command lines that set the policy (run, or that would run), each a list.
  returned: always
  type: list
  elements: list
  sample: [[dcgmi, policy, -g, "0", --clear], [dcgmi, policy, -g, "0", --set, "0,0", -e, -T, "90"]]
diff:
  description: The policy before and after, as text.
  returned: when it changes
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.config.dcgm_policy import (
    CONDITIONS, PolicyParseError, clear_argv, get_argv, parse_policy_get, same, set_argv, validate)


def describe(policy):
    """The policy as a few lines of text, for the diff."""
    lines = []
    for cond in CONDITIONS:
        value = policy.get('conditions', {}).get(cond['name'])
        if value is not None and value is not False:
            lines.append('condition %s%s' % (cond['name'], '' if value is True else ' = %s' % value))
    if policy.get('mixed'):
        lines.append('differs between the GPUs: %s' % ', '.join(policy['mixed']))
    lines.append('action = %s' % policy.get('action'))
    lines.append('validation = %s' % policy.get('validation'))
    return '\n'.join(lines) + '\n'


def run(module, argv, what):
    result = command.run(module, argv)
    # dcgmi reports some failures on stdout with exit 0 ("Error: ..."); "NVLink Errors" in a policy is no error
    errors = [line.strip() for line in (result.out or '').splitlines() if line.strip().startswith('Error')]
    message = command.failure(result, output=errors if errors and result.rc == 0 else None)
    if message is not None:
        module.fail_json(msg=message, what=what)
    return result.out


def read(module, p):
    argv = get_argv(p['dcgmi'], p['group'], p['host'])
    out = run(module, argv, 'read')
    try:
        return parse_policy_get(out)
    except PolicyParseError as exc:
        module.fail_json(msg='%s: %s' % (' '.join(argv), exc), output=out[-2000:])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            policy=dict(type='dict', default={}),
            group=dict(type='int', default=0),
            dcgmi=dict(type='str', default='dcgmi'),
            host=dict(type='str'),
            validate_only=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wanted, errors = validate(p['policy'])
    if p['group'] < 0:
        errors.append('group: must be 0 (all GPUs) or a DCGM group id, not %d' % p['group'])
    if errors:
        module.fail_json(msg='; '.join(errors), errors=errors)
    commands = [clear_argv(p['dcgmi'], p['group'], p['host'])]
    setter = set_argv(p['dcgmi'], wanted, p['group'], p['host'])
    if setter:
        commands.append(setter)
    if p['validate_only']:
        module.exit_json(changed=False, after=wanted, argv=commands)
    before = read(module, p)
    result = dict(before=before, after=wanted, argv=commands)
    if same(before, wanted):
        module.exit_json(changed=False, policy=before, **result)
    result['diff'] = {'before_header': 'dcgmi policy -g %d' % p['group'], 'before': describe(before),
                      'after_header': 'dcgmi policy -g %d' % p['group'], 'after': describe(wanted)}
    if module.check_mode:
        module.exit_json(changed=True, policy=before, **result)
    for argv in commands:
        run(module, argv, 'set')
    back = read(module, p)
    if not same(back, wanted):
        module.fail_json(msg='dcgmi policy -g %d: the policy read back differs from the one set: %s'
                         % (p['group'], describe(back).strip().replace('\n', '; ')), policy=back, **result)
    module.exit_json(changed=True, policy=back, **result)


if __name__ == '__main__':
    main()
