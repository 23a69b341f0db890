#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgm_alert_rules
short_description: Write the Prometheus alert rules of GPU and fabric health, checked with promtool
version_added: 0.1.0
description:
  - Renders the alert rules of the C(dcgm) role from O(thresholds) (GPU utilisation, NVLink CRC errors,
    InfiniBand/RoCE retransmissions, uncorrectable ECC errors, pending row remaps, XIDs that mean trouble, and a
    site's SM-utilisation quota when set) into O(dest), and the C(promtool test rules) file that proves each alert
    fires above its threshold and stays quiet below it into O(tests_dest).
  - Writes a file only when its content differs, atomically, so that a second run changes nothing.
  - With C(promtool), runs C(promtool check rules) and C(promtool test rules) on the rendered files before either
    is moved in place; a failure fails the module and leaves O(dest) untouched.
  - Runs where the rules are used, on the Prometheus server (C(delegate_to)) or on a node.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Renders and checks the files and reports whether they would change, writing nothing.
  diff_mode:
    support: full
    description: The old and new text of O(dest) (and of O(tests_dest)).
options:
  dest:
    description: Path of the rules file.
    type: path
    required: true
  tests_dest:
    description:
      - Path of the C(promtool test rules) file, which names O(dest) relative to its own directory; empty writes
        none.
    type: path
    default: ''
  thresholds:
    description:
      - The thresholds (the variable C(dcgm_alert_thresholds)), overlaid on the defaults C(gpu_util_percent=95),
        C(gpu_util_for=5m), C(nvlink_crc_per_hour=10), C(ib_retrans_percent=0.1), C(ecc_uncorrectable=0),
        C(row_remap_pending=0), C(xid_codes=[48, 63, 64, 74, 79, 92, 94, 95, 119, 120]),
        C(sm_util_max_percent=null) (no quota rule while null).
      - An unknown key, a negative or non-numeric value, or a percentage of 100 or more fails the module, naming
        C(dcgm_alert_thresholds.<key>).
    type: dict
    default: {}
  labels:
    description: Labels added to every alert (besides its C(severity)), such as C(team) or C(cluster).
    type: dict
    default: {}
  group:
    description: The name of the rule group.
    type: str
    default: gpuops-dcgm
  promtool:
    description:
      - The C(promtool) program that checks and tests the rules; C(auto) uses the one on the PATH when there is
        one, an empty string checks nothing. A path that does not exist fails the module.
    type: str
    default: auto
  mode:
    description: The files' mode.
    type: raw
    default: '0644'
  owner:
    description: The files' owner; unchanged when not set.
    type: str
  group_owner:
    description: The files' group; unchanged when not set.
    type: str
'''

EXAMPLES = r'''
- name: Alert rules on the Prometheus server, with a site's SM-utilisation quota
  gpuops.node.dcgm_alert_rules:
    dest: /etc/prometheus/rules/gpuops-dcgm.yml
    tests_dest: /etc/prometheus/rules/gpuops-dcgm.tests.yml
    thresholds:
      sm_util_max_percent: 90
    labels:
      cluster: rack-a
  delegate_to: "{{ groups['prometheus'][0] }}"
  run_once: true
'''

RETURN = r'''
dest:
  description: The rules file.
  returned: always
  type: str
alerts:
  description: The names of the alerts written.
  returned: always
  type: list
  elements: str
  sample: [GpuUtilisationHigh, NvlinkCrcErrors, InfinibandRetransmissions, GpuEccUncorrectable,
           GpuRowRemapPending, GpuXidError]
thresholds:
  description: The thresholds used, the defaults overlaid with O(thresholds).
  returned: always
  type: dict
promtool:
  description: The promtool that checked and tested the files; null when none did.
  returned: always
  type: str
checked:
  description: Whether C(promtool check rules) and C(promtool test rules) passed on the rendered files.
  returned: always
  type: bool
changed_files:
  description: The files written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.config.dcgm_alerts import (
    AlertsError, active, check_labels, render_rules, render_tests, validate)


def read(path):
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return handle.read()


def find_promtool(module, wanted):
    if wanted == '':
        return None
    if wanted == 'auto':
        return module.get_bin_path('promtool')
    path = wanted if os.path.sep in wanted else module.get_bin_path(wanted)
    if not path or not os.path.isfile(path):
        module.fail_json(msg='promtool %s does not exist' % wanted)
    return path


def promtool_check(module, promtool, rules, tests):
    """Checks and tests the rendered files in a directory of their own; fails the module on any failure."""
    work = tempfile.mkdtemp(prefix='gpuops-alerts-')
    try:
        rules_path = os.path.join(work, 'rules.yml')
        tests_path = os.path.join(work, 'tests.yml')
        with open(rules_path, 'w') as handle:
            handle.write(rules)
        with open(tests_path, 'w') as handle:
            handle.write(tests)
        # relative paths, in the directory: the failure names the file, not the temporary directory
        for argv in ([promtool, 'check', 'rules', os.path.basename(rules_path)],
                     [promtool, 'test', 'rules', os.path.basename(tests_path)]):
            result = command.run(module, argv, cwd=work)
            message = command.failure(result)
            if message is not None:
                module.fail_json(msg='%s; nothing written' % message, rc=result.rc, stdout=result.out,
                                 stderr=result.err)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def install(module, path, text):
    directory = os.path.dirname(path) or '.'
    if not os.path.isdir(directory):
        module.fail_json(msg='%s: directory %s does not exist' % (path, directory))
    write_atomic(module, path, text)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            tests_dest=dict(type='path', default=''),
            thresholds=dict(type='dict', default={}),
            labels=dict(type='dict', default={}),
            group=dict(type='str', default='gpuops-dcgm'),
            promtool=dict(type='str', default='auto'),
            mode=dict(type='raw', default='0644'),
            owner=dict(type='str'),
            group_owner=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    thresholds, errors = validate(p['thresholds'])
    labels = dict((k, '' if v is None else str(v)) for k, v in (p['labels'] or {}).items())
    errors.extend(check_labels(labels))
    if errors:
        module.fail_json(msg='; '.join(errors), errors=errors)
    files = [(p['dest'], None)]
    try:
        rules = render_rules(p['thresholds'], labels, p['group'])
        files[0] = (p['dest'], rules)
        if p['tests_dest']:
            relative = os.path.relpath(p['dest'], os.path.dirname(p['tests_dest']) or '.')
            files.append((p['tests_dest'], render_tests(p['thresholds'], relative, labels)))
    except AlertsError as exc:
        module.fail_json(msg=str(exc))

    promtool = find_promtool(module, p['promtool'])
    if promtool:
        promtool_check(module, promtool, rules, render_tests(p['thresholds'], 'rules.yml', labels))

    changed_files = []
    diffs = []
    for path, text in files:
        old = read(path)
        if old != text:
            changed_files.append(path)
            diffs.append({'before_header': path, 'after_header': path, 'before': old or '', 'after': text})
    if not module.check_mode:
        for path, text in files:
            if path in changed_files:
                install(module, path, text)
    attrs_changed = False
    for path, text in files:
        if module.check_mode and not os.path.exists(path):
            continue
        file_args = module.load_file_common_arguments(
            dict(path=path, mode=p['mode'], owner=p['owner'], group=p['group_owner']))
        if module.set_fs_attributes_if_different(file_args, False):
            attrs_changed = True
    result = {
        'changed': bool(changed_files) or attrs_changed,
        'dest': p['dest'],
        'alerts': [a['name'] for a in active(thresholds)],
        'thresholds': thresholds,
        'promtool': promtool,
        'checked': bool(promtool),
        'changed_files': changed_files,
    }
    if module._diff:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
