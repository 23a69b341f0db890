#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgm_diag
short_description: Run DCGM's diagnostic (dcgmi diag) and judge every test on every GPU
version_added: 0.1.0
description:
  - Runs C(dcgmi diag -r <level> -j) (or reads O(output_file), a captured output) and returns every test with its
    result per GPU (C(Pass), C(Fail), C(Warn), C(Skip)) and the overall verdict.
  - Reads the JSON of DCGM 3.x (C(DCGM GPU Diagnostic)) and 4.x (C(DCGM Diagnostic)), whose layouts differ, and
    the text tables of both. When dcgmi rejects C(-j), the module runs it again without and reads the table.
  - The verdict is C(Fail) when a test or a GPU failed or dcgmi printed an error outside the tests, C(Warn) when
    something warned and nothing failed, else C(Pass). C(Warn) passes.
  - The task fails on C(Fail) unless O(fail_on_failure=false), and always when the output cannot be read (an
    empty, cut or damaged output is never a pass) or dcgmi cannot reach the host engine. A text table cut before
    its closing border is read only when what was read already fails.
  - The diagnostic changes nothing, but it loads the GPUs for seconds (level 1) to hours (level 4); in check
    mode it is not run (RV(ran=false)) unless O(output_file) is given.
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: >-
      The module changes nothing; in check mode dcgmi is not run (RV(ran=false), RV(verdict=null)) because the
      diagnostic loads the GPUs, while a captured O(output_file) is still read and judged.
  diff_mode:
    support: none
    description: The module changes nothing.
options:
  level:
    description:
      - The diagnostic level, C(dcgmi diag -r); 1 takes seconds, 2 about two minutes, 3 about half an hour and
        4 hours. Required unless O(output_file) is given.
    type: int
    choices: [1, 2, 3, 4]
  output_file:
    description: A captured output of C(dcgmi diag) (JSON or text) to read instead of running dcgmi.
    type: path
  dcgmi:
    description: The dcgmi program (a name looked up in E(PATH), or a path).
    type: str
    default: dcgmi
  host:
    description: The host engine's address (C(--host)); dcgmi's default, the local host engine, when unset.
    type: str
  gpus:
    description: The GPUs to test (C(-i)); all GPUs when unset.
    type: list
    elements: int
  json:
    description: Ask dcgmi for JSON (C(-j)); when it refuses the option, the text table is read instead.
    type: bool
    default: true
  timeout:
    description:
      - Seconds dcgmi may run. Past them it is stopped (SIGTERM, then SIGKILL 30 seconds later) and the task fails.
    type: int
    default: 3600
  fail_on_failure:
    description: Fail the task when the verdict is C(Fail). An unreadable output always fails it.
    type: bool
    default: true
  gpu_count:
    description:
      - The number of GPUs the diagnostic must have tested (the node class's C(gpu_count)); fewer or more GPUs in the
        results make the verdict C(Fail) with an error naming both counts. Unset, any number is accepted.
      - Ignored when O(gpus) selects GPUs.
    type: int
notes:
  - The failures are in the format of M(gpuops.node.rack_report) (C(check) C(dcgm_diag), C(subject) C(GPU 3) or
    C(node)).
seealso:
  - name: dcgmi diag
    description: NVIDIA's reference of the command.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html
'''

EXAMPLES = r'''
- name: Quick diagnostic after a driver change
  gpuops.node.dcgm_diag:
    level: 1
  register: diag

- name: Medium diagnostic on two GPUs, judged by the play
  gpuops.node.dcgm_diag:
    level: 2
    gpus: [0, 3]
    fail_on_failure: false
  register: diag

- name: Judge a captured output
  gpuops.node.dcgm_diag:
    output_file: /var/tmp/dcgmi-diag-r3.json
  delegate_to: localhost
'''

RETURN = r'''
ran:
  description: Whether dcgmi ran or a captured output was read (false in check mode without O(output_file)).
  returned: always
  type: bool
verdict:
  description: C(Pass), C(Fail) or C(Warn); null in check mode. Absent when the module failed without a verdict.
  returned: when the output was read, and in check mode
  type: str
  sample: Fail
passed:
  description: Whether the verdict is not C(Fail); null in check mode.
  returned: when the output was read, and in check mode
  type: bool
level:
  description: O(level).
  returned: always
  type: int
  sample: 1
format:
  description: What was read, C(json-dcgm3), C(json-dcgm4), C(text-dcgm3) or C(text-dcgm4).
  returned: when ran
  type: str
  sample: json-dcgm4
dcgm_version:
  description: The DCGM version the output names, or null.
  returned: when ran
  type: str
  sample: 4.4.1
gpus:
  description: The GPUs tested.
  returned: when ran
  type: list
  elements: int
  sample: [0, 1, 2, 3]
tests:
  description:
    - Every test, in dcgmi's order, with C(name), C(category), C(result) and C(results), one per GPU (C(gpu),
      C(result), C(info), C(warnings)); a result with C(gpu) null holds what dcgmi did not attribute to a GPU.
  returned: when ran
  type: list
  elements: dict
  sample:
    - name: memory
      category: Hardware
      result: Fail
      results: [{gpu: 3, result: Fail, info: null, warnings: ["GPU 3 memory errors detected"]}]
errors:
  description: Failures dcgmi printed outside the tests (a failure to start, an output cut short).
  returned: when ran
  type: list
  elements: str
failures:
  description:
    - The failures in the report's format (C(check), C(subject), C(expected), C(actual), C(message)).
    - When the module fails without a verdict (no host engine, an unreadable output, a timeout), one failure of
      the C(node) with C(actual) C(error) and the reason.
  returned: when ran, and when the module fails without a verdict
  type: list
  elements: dict
  sample: [{check: dcgm_diag, subject: GPU 3, expected: Pass, actual: Fail, message: "memory: GPU 3 memory errors"}]
command:
  description: The dcgmi command line run (the last one when C(-j) was refused), or null for O(output_file).
  returned: always
  type: list
  elements: str
  sample: [dcgmi, diag, -r, "1", -j]
rc:
  description:
    - dcgmi's exit status.
    - Absent when dcgmi did not run (O(output_file), check mode); null when it could not start or was stopped at
      O(timeout) (the task fails, RV(msg) says which). The module decides C(failed) itself (the verdict and
      O(fail_on_failure)), so a result read from a file or returned with O(fail_on_failure=false) is not failed by
      Ansible's reading of C(rc).
  returned: when dcgmi ran
  type: int
output:
  description: The last lines dcgmi printed, when they could not be read.
  returned: when the output cannot be read
  type: str
msg:
  description: "One line, for example C(dcgmi diag -r 1: Fail: memory failed on GPU 3)."
  sample: "dcgmi diag -r 1: 9 tests Pass on 8 GPUs"
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcgmi_diag import (
    DiagConnectionError, DiagParseError, diag_failures, parse_diag, summary)

# what dcgmi's argument parser (TCLAP) prints for an option it does not know
_REJECTED = ('PARSE ERROR', "Couldn't find match for argument", 'unrecognized option', 'invalid option')


def diag_argv(params, json_output):
    argv = [params['dcgmi'], 'diag', '-r', str(params['level'])]
    if params['gpus']:
        argv += ['-i', ','.join(str(g) for g in params['gpus'])]
    if params['host']:
        argv += ['--host', params['host']]
    if json_output:
        argv.append('-j')
    return argv


def rejected_json(rc, out, err):
    text = (out + '\n' + err).lower()
    return rc != 0 and any(p.lower() in text for p in _REJECTED)


def _tail(text, lines=15):
    return '\n'.join((text or '').rstrip().split('\n')[-lines:])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            level=dict(type='int', choices=[1, 2, 3, 4]),
            output_file=dict(type='path'),
            dcgmi=dict(type='str', default='dcgmi'),
            host=dict(type='str'),
            gpus=dict(type='list', elements='int'),
            json=dict(type='bool', default=True),
            timeout=dict(type='int', default=3600),
            fail_on_failure=dict(type='bool', default=True),
            gpu_count=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, ran=False, level=p['level'], command=None)
    if p['level'] is None and not p['output_file']:
        module.fail_json(msg='level (1..4) is required unless output_file is given', **result)
    if p['timeout'] < 1:
        module.fail_json(msg='timeout must be a positive number of seconds, got %d' % p['timeout'], **result)

    def error(msg, **extra):
        # no verdict: nothing is known about the GPUs; the failure says why, in the report's format
        result['failures'] = [{'check': 'dcgm_diag', 'subject': 'node', 'expected': 'Pass', 'actual': 'error',
                               'message': msg}]
        result.update(extra)
        module.fail_json(msg=msg, **result)

    where = 'dcgmi diag -r %s' % p['level'] if p['level'] else 'dcgmi diag'
    if p['output_file']:
        where = 'dcgmi diag output %s' % p['output_file']
        try:
            with open(p['output_file'], 'rb') as handle:
                text = to_text(handle.read(), errors='surrogate_or_replace')
        except (IOError, OSError) as exc:
            error('cannot read %s: %s' % (p['output_file'], exc))
    else:
        argv = diag_argv(p, p['json'])
        result['command'] = argv
        if module.check_mode:
            module.exit_json(failed=False, verdict=None, passed=None, msg='check mode: dcgmi diag not run', **result)
        ran = command.run(module, argv, timeout=p['timeout'], kill_after=30)
        rc, out, err = ran.rc, ran.out, ran.err
        if p['json'] and rejected_json(rc, out, err):
            module.warn('%s does not accept -j; reading its text table instead' % p['dcgmi'])
            argv = diag_argv(p, False)
            result['command'] = argv
            ran = command.run(module, argv, timeout=p['timeout'], kill_after=30)
            rc, out, err = ran.rc, ran.out, ran.err
        result['rc'] = rc
        if ran.error is not None or ran.timed_out:
            # dcgmi did not run, or was stopped: nothing it printed is a result
            error(command.failure(ran), output=_tail(out + '\n' + err))
        text = out if out.strip() else err
        if out.strip() and err.strip() and not out.lstrip().startswith('{'):
            text = out + '\n' + err
    result['ran'] = True
    try:
        parsed = parse_diag(text)
    except DiagConnectionError as exc:
        error('%s: %s' % (where, exc), output=_tail(text))
    except DiagParseError as exc:
        error('%s: the output cannot be read, so nothing is known about the GPUs: %s' % (where, exc),
              output=_tail(text))
    if result.get('rc') and parsed['verdict'] != 'Fail':
        # dcgmi said the diagnostic failed, and what it printed does not say why: never a pass
        parsed['errors'].append('dcgmi exited %s after a %s result' % (result['rc'], parsed['verdict']))
        parsed['verdict'] = 'Fail'
    if p['gpu_count'] is not None and not p['gpus'] and len(parsed['gpus']) != p['gpu_count']:
        parsed['errors'].append('the diagnostic tested %d GPU(s) (%s), the node has %d'
                                % (len(parsed['gpus']), ', '.join(str(g) for g in parsed['gpus']) or 'none',
                                   p['gpu_count']))
        parsed['verdict'] = 'Fail'
    result.update(parsed)
    result['passed'] = parsed['verdict'] != 'Fail'
    result['failures'] = diag_failures(parsed)
    result['msg'] = '%s: %s' % (where, summary(parsed))
    if parsed['verdict'] == 'Fail' and p['fail_on_failure']:
        module.fail_json(**result)
    if parsed['verdict'] == 'Warn':
        module.warn(result['msg'])
    # failed is the module's to decide: without it Ansible fails any result whose rc is not 0
    module.exit_json(failed=False, **result)


if __name__ == '__main__':
    main()
