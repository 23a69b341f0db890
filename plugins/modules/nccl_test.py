#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nccl_test
short_description: Run an nccl-tests program and judge its bus bandwidth
version_added: 0.1.0
description:
  - Runs an nccl-tests program (C(all_reduce_perf), C(all_gather_perf), ...) or reads a captured output of one,
    parses its result table and judges it.
  - The value judged, RV(busbw_gbps), is the better bus bandwidth (out-of-place or in-place) at the largest size
    measured. The C(# Avg bus bandwidth) line averages the whole sweep, small sizes included, so it is returned but
    never judged.
  - The run fails (RV(passed) false) when nccl-tests printed a failure (C(Test NCCL failure), C(Test CUDA failure)),
    any element was wrong, the output was cut short, the command exited non-zero, or RV(busbw_gbps) is below
    O(min_busbw_gbps).
  - An output the module cannot read (no result table and no failure) always fails the task, never passes.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: partial
    description: In check mode nothing is run; an O(output_file) is read and judged as usual.
    details: A O(command) is not run in check mode; RV(passed) is null and nothing is measured.
  diff_mode:
    support: none
    description: The module changes nothing.
options:
  command:
    description:
      - The nccl-tests command line, for example C(/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 8).
      - A string is split like a shell would (no shell runs, so no pipes or variables); a list is used as it is.
      - Without C(-g) nccl-tests uses one GPU, whose bus bandwidth is 0.
      - One of O(command) and O(output_file) is required.
    type: raw
  output_file:
    description: A captured nccl-tests output, read instead of running O(command).
    type: path
  chdir:
    description: Directory the command runs in.
    type: path
  environment:
    description: Environment variables for the command (C(NCCL_DEBUG), C(CUDA_VISIBLE_DEVICES), ...).
    type: dict
    default: {}
  min_busbw_gbps:
    description: Lowest acceptable bus bandwidth in GB/s at the largest size measured; unset judges errors only.
    type: float
  timeout:
    description:
      - Seconds the command may run. Past them it is stopped (SIGTERM, then SIGKILL 30 seconds later, with every
        process it started) and the task fails.
    type: int
    default: 1800
  fail_on_failure:
    description: Fail the task when the run does not pass (the return values are the same either way).
    type: bool
    default: true
notes:
  - Set thresholds per node class from a healthy node's RV(busbw_gbps) with the same command; the bus bandwidth
    depends on the collective, the GPU count and the sizes.
seealso:
  - name: nccl-tests
    description: NVIDIA's NCCL performance tests.
    link: https://github.com/NVIDIA/nccl-tests
'''

EXAMPLES = r'''
- name: All-reduce over the 8 GPUs of the node, at least 400 GB/s at 8 GiB
  gpuops.node.nccl_test:
    command: /opt/nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 8
    min_busbw_gbps: 400
  register: nccl

- name: Judge a captured output, report instead of failing
  gpuops.node.nccl_test:
    output_file: /var/tmp/all_reduce.txt
    min_busbw_gbps: 200
    fail_on_failure: false
  register: nccl
'''

RETURN = r'''
passed:
  description: No error, no wrong element and RV(busbw_gbps) at least O(min_busbw_gbps); null in check mode without
    O(output_file).
  returned: always
  type: bool
busbw_gbps:
  description: The value judged, the best bus bandwidth at the largest size measured (GB/s); null without a row.
  returned: always
  type: float
  sample: 470.73
failures:
  description: Why the run does not pass, in the report's format (check C(nccl_busbw) or C(nccl_errors)).
  returned: always
  type: list
  elements: dict
  sample: [{check: nccl_busbw, subject: node, expected: ">= 400 GB/s", actual: "120.5 GB/s",
            message: "bus bandwidth 120.5 GB/s at 8589934592 bytes is below 400 GB/s"}]
msg:
  description: 'One line, e.g. C(all_reduce_perf: 470.73 GB/s at 2147483648 bytes >= 400: passed).'
  returned: always
  type: str
rc:
  description:
    - Exit status of the command.
    - Absent when O(output_file) was read or nothing ran; null when the command could not start or was stopped at
      O(timeout) (the task fails, RV(msg) says which). The module decides C(failed) itself (the result and
      O(fail_on_failure)), so a result read from a file or returned with O(fail_on_failure=false) is not failed by
      Ansible's reading of C(rc).
  returned: when the command ran
  type: int
command:
  description: The argv run (empty when nothing ran).
  returned: always
  type: list
  elements: str
test:
  description: The nccl-tests program (from its header, else the command's name).
  returned: always
  type: str
nccl_version:
  description: NCCL's version when the output shows it (C(NCCL_DEBUG=VERSION), nccl-tests 2.18 headers).
  returned: always
  type: str
devices:
  description: The ranks and their GPUs (empty when the output has no device lines).
  returned: always
  type: list
  elements: dict
  sample: [{rank: 0, group: 0, pid: 1623025, host: node1, device: 0, bus_id: "0000:1b:00",
            name: NVIDIA H100 80GB HBM3}]
rows:
  description: The result table, one entry per size with C(out_of_place) and C(in_place) times and bandwidths.
  returned: always
  type: list
  elements: dict
avg_busbw_gbps:
  description: The C(# Avg bus bandwidth) line (an average over every size, not judged).
  returned: always
  type: float
max_busbw_gbps:
  description: The highest bus bandwidth of any row.
  returned: always
  type: float
largest_size_busbw_gbps:
  description: Same as RV(busbw_gbps).
  returned: always
  type: float
wrong_total:
  description: Wrong elements over all rows (C(N/A) counts as none).
  returned: always
  type: int
errors:
  description: Failures nccl-tests printed, wrong elements, an output cut short, a non-zero exit.
  returned: always
  type: list
  elements: str
'''

import os
import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nccl_tests import (
    NcclParseError, busbw_failures, fmt_gbps, parse_nccl_tests)

EMPTY = {'nccl_version': None, 'nccl_tests_version': None, 'test': None, 'params': {}, 'devices': [], 'rows': [],
         'avg_busbw_gbps': None, 'max_busbw_gbps': None, 'largest_size_busbw_gbps': None, 'largest_size': None,
         'wrong_total': 0, 'errors': []}


def argv_of(command):
    if isinstance(command, (list, tuple)):
        return [to_text(a) for a in command]
    return shlex.split(to_text(command))


def run(module, argv):
    """The Result of the command and its text, stdout then stderr."""
    env = dict((to_text(k), to_text(v)) for k, v in (module.params['environment'] or {}).items())
    result = command.run(module, argv, timeout=module.params['timeout'], cwd=module.params['chdir'], env=env,
                         kill_after=30)
    return result, result.out + ('\n' + result.err if result.err else '')


def judge(parsed, min_busbw_gbps, rc=None, argv=None):
    """The module's result from a parse (adds busbw_gbps, passed, failures, msg)."""
    result = dict(parsed)
    result['errors'] = list(parsed['errors'])
    if rc:
        result['errors'].append('%s exited %d' % (os.path.basename(argv[0]) if argv else 'the command', rc))
    if result['test'] is None and argv:
        result['test'] = os.path.basename(argv[0])
    result['busbw_gbps'] = parsed['largest_size_busbw_gbps']
    result['failures'] = busbw_failures(result, min_busbw_gbps)
    result['passed'] = not result['failures']
    name = result['test'] or 'nccl-tests'
    if result['busbw_gbps'] is None:
        measured = 'no bus bandwidth measured'
    else:
        measured = '%s GB/s at %d bytes' % (result['busbw_gbps'], result['largest_size'])
        if min_busbw_gbps is not None:
            measured += ' %s %s' % ('>=' if result['busbw_gbps'] >= min_busbw_gbps else '<', fmt_gbps(min_busbw_gbps))
    result['msg'] = '%s: %s: %s' % (name, measured, 'passed' if result['passed'] else
                                    'failed: ' + '; '.join(f['message'] for f in result['failures']))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type='raw'),
            output_file=dict(type='path'),
            chdir=dict(type='path'),
            environment=dict(type='dict', default={}),
            min_busbw_gbps=dict(type='float'),
            timeout=dict(type='int', default=1800),
            fail_on_failure=dict(type='bool', default=True),
        ),
        mutually_exclusive=[('command', 'output_file')],
        required_one_of=[('command', 'output_file')],
        supports_check_mode=True,
    )
    p = module.params
    base = dict(changed=False, command=[])
    if p['min_busbw_gbps'] is not None and p['min_busbw_gbps'] < 0:
        module.fail_json(msg='min_busbw_gbps must be >= 0, got %s' % p['min_busbw_gbps'], **base)
    if p['timeout'] < 1:
        module.fail_json(msg='timeout must be a positive number of seconds, got %d' % p['timeout'], **base)
    argv = []
    rc = None
    if p['output_file']:
        try:
            with open(p['output_file'], 'rb') as handle:
                text = handle.read().decode('utf-8', 'replace')
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot read %s: %s' % (p['output_file'], exc), **base)
    else:
        argv = argv_of(p['command'])
        if not argv:
            module.fail_json(msg='command is empty', **base)
        base['command'] = argv
        if module.check_mode:
            result = dict(EMPTY)
            result.update(test=os.path.basename(argv[0]), busbw_gbps=None, passed=None, failures=[],
                          msg='check mode: %s not run' % os.path.basename(argv[0]))
            result.update(base)
            module.exit_json(failed=False, **result)
        ran, text = run(module, argv)
        rc = base['rc'] = ran.rc
        if ran.error is not None or ran.timed_out:
            module.fail_json(msg=command.failure(ran), output=text[-4000:], **base)
    try:
        parsed = parse_nccl_tests(text)
    except NcclParseError as exc:
        source = p['output_file'] or ' '.join(argv)
        module.fail_json(msg='cannot read the output of %s%s: %s' % (
            source, ' (exit status %d)' % rc if rc else '', exc), output=text[-4000:], **base)
    result = judge(parsed, p['min_busbw_gbps'], rc, argv)
    result.update(base)
    if not result['passed'] and p['fail_on_failure']:
        module.fail_json(**result)
    # failed is the module's to decide: without it Ansible fails any result whose rc is not 0
    module.exit_json(failed=False, **result)


if __name__ == '__main__':
    main()
