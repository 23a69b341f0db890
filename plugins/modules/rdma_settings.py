#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_settings
short_description: Converge the RoCE settings of RDMA HCAs (DCQCN, PFC, DSCP trust, RDMA CM ToS) and keep IPoIB down
version_added: 0.1.0
description:
  - For each HCA of O(hcas), reads, compares and writes only what differs.
  - DCQCN enabled for the reaction and notification points on O(priority) (sysfs
    C(class/net/<netdev>/ecn/roce_rp/enable/<prio>) and C(roce_np/enable/<prio>)), and the congestion notification
    packets' DSCP and priority (C(ecn/roce_np/cnp_dscp), C(cnp_802p_prio)).
  - PFC on exactly O(priority) (C(dcb pfc), or C(mlnx_qos --pfc) where C(mlnx_qos) is installed).
  - The DSCP-to-priority table entries for O(dscp) and O(cnp_dscp) (C(dcb app replace)), which make an mlx5 port
    trust DSCP (and C(mlnx_qos --trust dscp) where C(mlnx_qos) is installed).
  - The ToS of RDMA CM connections, C(default_roce_tos) in configfs (C(kernel/config/rdma_cm/<hca>), created when
    absent).
  - Keeps the IPoIB interfaces of O(ipoib_down) administratively down (C(class/net/<netdev>/flags)).
  - Writes O(boot_script), a shell script that sets every value again, for a boot unit (none of them survives a
    reboot).
  - A value it cannot read counts as different; a value it cannot write, or a command that fails, fails the module
    naming the file or command.
  - An interface without C(class/net/<netdev>/ecn) (the inbox mlx5 driver has none, DOCA-OFED's and MLNX_OFED's
    have it) gets no DCQCN or CNP value, as the firmware keeps DCQCN on every priority there by default
    (C(ROCE_CC_PRIO_MASK)), and RV(unmanaged) says so for each such interface, with a warning.
  - When configfs has no C(rdma_cm) directory on a real node (O(sysfs_root=/sys)), C(modprobe rdma_cm) loads it
    first.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Reads every value and reports the differences without writing.
  diff_mode:
    support: full
    description: One line per setting, C(<hca> <netdev> <setting> = <value>), before and after.
options:
  hcas:
    description: The RoCE HCAs, as the C(roce) return value of M(gpuops.node.rdma_plan) lists them.
    type: list
    elements: dict
    default: []
  ipoib_down:
    description:
      - InfiniBand HCAs whose IPoIB interfaces (their network interfaces of type 32) are kept down, while ib_ipoib
        is loaded for others.
    type: list
    elements: str
    default: []
  stack_changed:
    description:
      - The RDMA stack's kernel modules changed in this run (DOCA-OFED installed or removed); they load at the next
        boot, so RV(reboot_required) is true.
    type: bool
    default: false
  ipoib_module:
    description:
      - Whether ib_ipoib should be loaded; RV(reboot_required) is true when the node has an InfiniBand HCA and the
        module's state differs (it is never loaded or unloaded under a running node).
    type: bool
    default: false
  priority:
    description: The lossless priority of RoCE traffic (0-7).
    type: int
    required: true
  dscp:
    description: The DSCP of RoCE traffic (0-63).
    type: int
    required: true
  tos:
    description: The RDMA CM ToS byte (0-255).
    type: int
    required: true
  cnp_dscp:
    description: The DSCP of congestion notification packets (0-63).
    type: int
    required: true
  cnp_priority:
    description: The priority of congestion notification packets (0-7).
    type: int
    required: true
  sysfs_root:
    description: Where sysfs is mounted; configfs is C(<sysfs_root>/kernel/config).
    type: path
    default: /sys
  boot_script:
    description: Path of the boot script to write; empty writes none.
    type: path
    default: ''
  dcb_command:
    description: The iproute2 C(dcb) program.
    type: str
    default: dcb
  mlnx_qos:
    description: C(auto) uses C(mlnx_qos) for PFC and trust when it is on the PATH; C(never) always uses C(dcb).
    type: str
    choices: [auto, never]
    default: auto
'''

EXAMPLES = r'''
- name: Converge DCQCN, PFC, trust and ToS on the RoCE HCAs
  gpuops.node.rdma_settings:
    hcas: [{hca: rocep1s0f0, netdev: enp1s0f0np0, ports: [1]}]
    priority: 3
    dscp: 26
    tos: 106
    cnp_dscp: 48
    cnp_priority: 6
    boot_script: /usr/local/libexec/gpuops-rdma-settings
'''

RETURN = r'''
settings:
  description: Every setting read, with C(before) (null when unreadable), C(after) and whether it C(changed).
  returned: always
  type: list
  elements: dict
  sample: [{hca: rocep1s0f0, netdev: enp1s0f0np0, name: ecn/roce_rp/enable/3, before: "0", after: "1", changed: true}]
changes:
  description: C(<hca> <netdev> <setting>) of each setting written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
ipoib_loaded:
  description: Whether ib_ipoib is loaded (C(module/ib_ipoib) in sysfs).
  returned: always
  type: bool
reboot_required:
  description: >-
    The node has an InfiniBand HCA and ib_ipoib is loaded though it should not be, or the reverse; or
    O(stack_changed).
  returned: always
  type: bool
reboot_reasons:
  description: Why RV(reboot_required) is true.
  returned: always
  type: list
  elements: str
unmanaged:
  description: The interfaces whose DCQCN and CNP values the driver does not expose (no C(ecn) in sysfs).
  returned: always
  type: list
  elements: str
tool:
  description: C(dcb) or C(mlnx_qos), what PFC and trust were read and set with.
  returned: always
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcb import (
    app_replace_args, parse_app_dscp, parse_mlnx_qos, parse_pfc, pfc_priorities, pfc_set_args)
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.config.rdma_settings import (
    IFF_UP, app_before, boot_script, diff_text, differs, ipoib_down_item, path_of, wanted)
from ansible_collections.gpuops.node.plugins.module_utils.node.rdma_sysfs import (
    ecn_dir, ipoib_module_loaded, ipoib_netdevs, netdev_dir, rdma_cm_dir)
from ansible_collections.gpuops.node.plugins.module_utils.node.sysfs import read_infiniband, read_value

HEADER = '# Written by gpuops.node.rdma (rdma_settings): the RoCE settings, which no reboot keeps; do not edit.'


class Runner(object):
    def __init__(self, module, dcb, mlnx_qos):
        self.module = module
        self.dcb = dcb
        self.mlnx_qos = mlnx_qos

    def run(self, argv):
        return command.check(self.module, argv).out

    def parse(self, parser, argv):
        out = self.run(argv)
        try:
            return parser(out)
        except ParseError as exc:
            self.module.fail_json(msg='%s: %s' % (' '.join(argv), exc))


def read_items(module, runner, entry, settings):
    root = module.params['sysfs_root']
    hca, netdev = entry['hca'], entry['netdev']
    if not os.path.isdir(netdev_dir(root, netdev)):
        module.fail_json(msg='%s: network interface %s is not in %s/class/net' % (hca, netdev, root))
    entry['ecn'] = os.path.isdir(ecn_dir(root, netdev))
    configfs = os.path.dirname(rdma_cm_dir(root, hca))
    # check mode loads nothing: the ToS then reads as unknown, a difference
    if not os.path.isdir(configfs) and root.rstrip('/') == '/sys' and not module.check_mode:
        runner.run(['modprobe', 'rdma_cm'])
    if not os.path.isdir(configfs) and not module.check_mode:
        module.fail_json(msg='%s: %s does not exist: configfs is not mounted or rdma_cm is not loaded' % (hca, configfs))
    items = wanted(hca, netdev, entry.get('ports') or [1], ecn=entry['ecn'], **settings)
    if runner.mlnx_qos:
        qos = runner.parse(parse_mlnx_qos, [runner.mlnx_qos, '-i', netdev])
        items.append({'hca': hca, 'netdev': netdev, 'name': 'trust', 'kind': 'trust', 'after': 'dscp',
                      'before': qos.get('trust')})
        pfc = pfc_priorities(qos)
    else:
        pfc = pfc_priorities(runner.parse(parse_pfc, [runner.dcb, 'pfc', 'show', 'dev', netdev]))
    table = runner.parse(parse_app_dscp, [runner.dcb, '-N', 'app', 'show', 'dev', netdev, 'dscp-prio'])
    for item in items:
        if item['kind'] == 'file':
            item['path'] = path_of(root, item)
            item['before'] = read_value(item['path'])
        elif item['kind'] == 'pfc':
            item['before'] = pfc
        elif item['kind'] == 'app':
            item['before'] = app_before(table, item['after'])
    return items


def write_item(module, runner, item):
    root = module.params['sysfs_root']
    if item['kind'] == 'file':
        if item.get('path_args', ('',))[0] == 'rdma_cm' and not os.path.isdir(rdma_cm_dir(root, item['hca'])):
            os.mkdir(rdma_cm_dir(root, item['hca']))
        value = item['after']
    elif item['kind'] == 'flags':
        value = '0x%x' % (item['flags'] & ~IFF_UP)
    elif item['kind'] in ('pfc', 'trust') and runner.mlnx_qos:
        bits = ','.join('1' if p in [module.params['priority']] else '0' for p in range(8))
        runner.run([runner.mlnx_qos, '-i', item['netdev'], '--trust', 'dscp', '--pfc', bits])
        return
    elif item['kind'] == 'pfc':
        runner.run([runner.dcb, 'pfc', 'set', 'dev', item['netdev']] + pfc_set_args(item['after']))
        return
    else:
        runner.run([runner.dcb, 'app', 'replace', 'dev', item['netdev']] + app_replace_args(item['after']))
        return
    try:
        with open(item['path'], 'w') as handle:
            handle.write(value + '\n')
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s %s: cannot write %s to %s: %s' % (
            item['hca'], item['netdev'], value, item['path'], exc.strerror or exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hcas=dict(type='list', elements='dict', default=[]),
            ipoib_down=dict(type='list', elements='str', default=[]),
            ipoib_module=dict(type='bool', default=False),
            stack_changed=dict(type='bool', default=False),
            priority=dict(type='int', required=True),
            dscp=dict(type='int', required=True),
            tos=dict(type='int', required=True),
            cnp_dscp=dict(type='int', required=True),
            cnp_priority=dict(type='int', required=True),
            sysfs_root=dict(type='path', default='/sys'),
            boot_script=dict(type='path', default=''),
            dcb_command=dict(type='str', default='dcb'),
            mlnx_qos=dict(type='str', choices=['auto', 'never'], default='auto'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    settings = dict((k, p[k]) for k in ('priority', 'dscp', 'tos', 'cnp_dscp', 'cnp_priority'))
    for name, high in (('priority', 7), ('cnp_priority', 7), ('dscp', 63), ('cnp_dscp', 63), ('tos', 255)):
        if not 0 <= p[name] <= high:
            module.fail_json(msg='%s must be 0-%d, got %d' % (name, high, p[name]))
    mlnx_qos = module.get_bin_path('mlnx_qos') if p['mlnx_qos'] == 'auto' else None
    dcb = module.get_bin_path(p['dcb_command']) if p['hcas'] else p['dcb_command']
    if p['hcas'] and not dcb:
        module.fail_json(msg='%s is not installed (iproute2): PFC and the DSCP table cannot be read' % p['dcb_command'])
    runner = Runner(module, dcb, mlnx_qos)

    items = []
    hcas = [dict(entry) for entry in p['hcas']]
    for entry in hcas:
        items.extend(read_items(module, runner, entry, settings))
    unmanaged = ['%s %s' % (e['hca'], e['netdev']) for e in hcas if not e['ecn']]
    for name in unmanaged:
        module.warn('%s: the driver exposes no DCQCN or CNP setting (no ecn in sysfs; the inbox mlx5 driver): '
                    'DCQCN stays as the firmware sets it (ROCE_CC_PRIO_MASK, every priority by default)' % name)
    for hca in p['ipoib_down']:
        for netdev in ipoib_netdevs(p['sysfs_root'], hca):
            flags = read_value('%s/flags' % netdev_dir(p['sysfs_root'], netdev))
            item = ipoib_down_item(p['sysfs_root'], hca, netdev, flags)
            if item['flags'] is None:
                module.fail_json(msg='%s: cannot read %s to keep IPoIB down' % (hca, item['path']))
            items.append(item)

    changed_items = [i for i in items if differs(i)]
    mlnx_done = set()
    if not module.check_mode:
        for item in changed_items:
            if item['kind'] in ('pfc', 'trust') and runner.mlnx_qos:
                if item['netdev'] in mlnx_done:
                    continue
                mlnx_done.add(item['netdev'])
            write_item(module, runner, item)

    script_changed = False
    diff_script = {}
    if p['boot_script']:
        text = boot_script(p['sysfs_root'], hcas, settings, p['ipoib_down'],
                           bool(mlnx_qos), HEADER)
        old = None
        if os.path.isfile(p['boot_script']):
            with open(p['boot_script']) as handle:
                old = handle.read()
        script_changed = old != text or (old is not None and os.stat(p['boot_script']).st_mode & 0o777 != 0o755)
        diff_script = {'before_header': p['boot_script'], 'after_header': p['boot_script'],
                       'before': old or '', 'after': text}
        if script_changed and not module.check_mode:
            # the boot unit executes it
            write_atomic(module, p['boot_script'], text, 0o755)

    loaded = ipoib_module_loaded(p['sysfs_root'])
    infiniband = [n for n in (read_infiniband(p['sysfs_root']) or {}).get('nics', [])
                  if any((port.get('link_layer') or '').lower() == 'infiniband' for port in n['ports'])]
    reasons = []
    if infiniband and loaded != p['ipoib_module']:
        reasons.append('ib_ipoib is %s and must %s' % (
            'loaded' if loaded else 'not loaded', 'load' if p['ipoib_module'] else 'not be'))
    if p['stack_changed']:
        reasons.append('the RDMA stack\'s kernel modules changed')
    result = {
        'changed': bool(changed_items) or script_changed,
        'ipoib_loaded': loaded,
        'reboot_required': bool(reasons),
        'reboot_reasons': reasons,
        'unmanaged': unmanaged,
        'settings': [dict([(k, i[k]) for k in ('hca', 'netdev', 'name', 'before', 'after')], changed=differs(i))
                     for i in items],
        'changes': ['%s %s %s' % (i['hca'], i['netdev'], i['name']) for i in changed_items],
        'tool': 'mlnx_qos' if mlnx_qos else 'dcb',
    }
    if module._diff:
        result['diff'] = [{'before_header': 'RDMA settings', 'after_header': 'RDMA settings',
                           'before': diff_text(items, 'before'), 'after': diff_text(items, 'after')}]
        if diff_script:
            result['diff'].append(diff_script)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
