# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""dcgm_diag and dcgm_policy against a fake dcgmi on disk: pass, fail (failing the task or not), -j refused and
the table read instead, no host engine, an unreadable output, check mode; the policy set only when it differs,
read back, check mode and diff, bad data refused before dcgmi runs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import sys

import pytest

from real_captures import real_path, real_text
from repo_paths import COLLECTIONS

import module_harness as harness
# patch_module: an autouse fixture
from module_harness import patch_module  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_policy as config_dcgm_policy
from ansible_collections.gpuops.node.plugins.modules import dcgm_diag, dcgm_policy

PASS = 'dcgmi/diag-r1-v100-pcie-pass-dcgm339.txt'
FAIL = 'dcgmi/diag-r3-fail-early-h100-8gpu-FAIL-cuinit-no-fabricmanager.txt'
CONNECTION = ('Error: unable to establish a connection to the specified host: localhost\n'
              'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')


def run(module, args, check_mode=False, diff=False, expect_fail=False):
    return harness.run(module, args, check_mode=check_mode, diff=diff, expect_fail=expect_fail)


def fake_diag(tmp_path, output, rc=0, refuse_json=False):
    """A dcgmi that prints ``output`` for ``diag`` (and TCLAP's refusal of -j when asked), logging its arguments."""
    (tmp_path / 'out.txt').write_text(output)
    script = tmp_path / 'dcgmi'
    refuse = ''
    if refuse_json:
        refuse = ('case " $* " in *" -j "*) echo "PARSE ERROR: Argument: -j (--json)" >&2; '
                  'echo "             Couldn\'t find match for argument" >&2; exit 255;; esac\n')
    script.write_text('#!/bin/sh\necho "$*" >> %s\n%scat %s\nexit %d\n'
                      % (tmp_path / 'calls', refuse, tmp_path / 'out.txt', rc))
    script.chmod(0o755)
    return str(script)


def calls(tmp_path):
    return (tmp_path / 'calls').read_text().splitlines()


# ---------------------------------------------------------------- dcgm_diag


def test_diag_pass(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(PASS))
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'gpus': [0], 'host': '127.0.0.1'})
    assert result['changed'] is False
    assert (result['verdict'], result['passed'], result['ran'], result['format']) == ('Pass', True, True, 'text-dcgm3')
    assert result['command'] == [dcgmi, 'diag', '-r', '1', '-i', '0', '--host', '127.0.0.1', '-j']
    assert result['msg'] == 'dcgmi diag -r 1: 9 tests Pass on 1 GPU'
    assert result['failures'] == [] and result['rc'] == 0
    assert calls(tmp_path) == ['diag -r 1 -i 0 --host 127.0.0.1 -j']


def test_diag_pass_with_a_failing_exit_status_is_a_failure(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(PASS), rc=226)
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'fail_on_failure': False})
    assert (result['verdict'], result['passed']) == ('Fail', False)
    assert any('dcgmi exited 226 after a Pass result' in f['message'] for f in result['failures'])


def test_diag_of_fewer_gpus_than_the_node_has_is_a_failure(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(PASS))
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'gpu_count': 8, 'fail_on_failure': False})
    assert (result['verdict'], result['passed']) == ('Fail', False)
    assert any('the diagnostic tested 1 GPU(s) (0), the node has 8' in f['message'] for f in result['failures'])
    assert run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'gpu_count': 1})['passed'] is True


def test_diag_fail_fails_the_task(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(FAIL), rc=226)
    result = run(dcgm_diag, {'level': 3, 'dcgmi': dcgmi}, expect_fail=True)
    assert (result['verdict'], result['passed'], result['rc']) == ('Fail', False, 226)
    assert result['msg'].startswith('dcgmi diag -r 3: Fail: GPU Memory failed on GPU 0, 1, 2')
    assert [f['subject'] for f in result['failures']] == ['GPU %d' % g for g in range(8)]


def test_diag_fail_reported_without_failing(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(FAIL), rc=226)
    result = run(dcgm_diag, {'level': 3, 'dcgmi': dcgmi, 'fail_on_failure': False})
    # dcgmi exited 226: the module, not Ansible's reading of rc, decides that the task did not fail
    assert (result['verdict'], result['passed'], result['rc'], result['failed']) == ('Fail', False, 226, False)


def test_diag_json_refused_reads_the_table(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(PASS), refuse_json=True)
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi})
    assert result['verdict'] == 'Pass'
    assert result['command'] == [dcgmi, 'diag', '-r', '1']
    assert calls(tmp_path) == ['diag -r 1 -j', 'diag -r 1']


def test_diag_without_host_engine_always_fails(tmp_path):
    dcgmi = fake_diag(tmp_path, CONNECTION, rc=1)
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'fail_on_failure': False}, expect_fail=True)
    assert 'Unable to connect to host engine' in result['msg']
    assert 'verdict' not in result and 'passed' not in result
    assert result['failures'] == [{'check': 'dcgm_diag', 'subject': 'node', 'expected': 'Pass', 'actual': 'error',
                                   'message': result['msg']}]


@pytest.mark.parametrize('output', ['', 'Segmentation fault\n', real_text(PASS)[:600]])
def test_diag_unreadable_output_always_fails(tmp_path, output):
    dcgmi = fake_diag(tmp_path, output, rc=0)
    result = run(dcgm_diag, {'level': 1, 'dcgmi': dcgmi, 'fail_on_failure': False}, expect_fail=True)
    assert 'cannot be read' in result['msg']
    assert 'verdict' not in result and result['failures'][0]['actual'] == 'error'


def test_diag_that_does_not_finish_is_stopped_and_fails(tmp_path):
    dcgmi = tmp_path / 'dcgmi'
    dcgmi.write_text('#!/bin/sh\necho "Running the diagnostic"\nsleep 30\n')
    dcgmi.chmod(0o755)
    result = run(dcgm_diag, {'level': 1, 'dcgmi': str(dcgmi), 'timeout': 1, 'fail_on_failure': False},
                 expect_fail=True)
    assert result['msg'] == 'dcgmi diag -r 1 -j did not finish within 1 s and was killed'
    assert result['rc'] is None and result['output'] == 'Running the diagnostic'
    assert result['failures'][0]['message'] == result['msg'] and 'verdict' not in result


def test_diag_without_dcgmi_fails_naming_it(tmp_path):
    result = run(dcgm_diag, {'level': 1, 'dcgmi': 'no-such-dcgmi'}, expect_fail=True)
    assert result['msg'] == 'no-such-dcgmi not found on the PATH'
    assert result['failures'][0]['actual'] == 'error'


def test_diag_check_mode_runs_nothing(tmp_path):
    dcgmi = fake_diag(tmp_path, real_text(PASS))
    result = run(dcgm_diag, {'level': 2, 'dcgmi': dcgmi}, check_mode=True)
    assert (result['ran'], result['verdict'], result['msg']) == (False, None, 'check mode: dcgmi diag not run')
    assert not (tmp_path / 'calls').exists()


def test_diag_output_file_is_read_in_check_mode():
    result = run(dcgm_diag, {'output_file': real_path(PASS)}, check_mode=True)
    assert (result['ran'], result['verdict'], result['command']) == (True, 'Pass', None)
    assert 'rc' not in result and result['failed'] is False


def test_diag_output_file_passing_is_ok():
    # dcgmi did not run: no rc, which Ansible would read as a failure when it is null
    result = run(dcgm_diag, {'output_file': real_path(PASS)})
    assert (result['verdict'], result['passed'], result['failed'], result['changed']) == ('Pass', True, False, False)
    assert 'rc' not in result


def test_diag_output_file_failing_fails():
    result = run(dcgm_diag, {'output_file': real_path(FAIL)}, expect_fail=True)
    assert (result['verdict'], result['passed']) == ('Fail', False) and 'rc' not in result


def test_diag_needs_a_level():
    result = run(dcgm_diag, {}, expect_fail=True)
    assert result['msg'] == 'level (1..4) is required unless output_file is given'


# ---------------------------------------------------------------- dcgm_policy

FAKE_POLICY = '''#!%(python)s
import json, os, sys
sys.path.insert(0, %(collections)r)
from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_policy as config_dcgm_policy
state, mode = %(state)r, %(mode)r
args = sys.argv[1:]
with open(state + '.calls', 'a') as log:
    log.write(' '.join(args) + '\\n')
if os.path.exists(mode) and open(mode).read() == 'down':
    print('Error: unable to establish a connection to the specified host: localhost')
    print('Error: Unable to connect to host engine. Host engine connection invalid/disconnected.')
    sys.exit(1)
policy = json.load(open(state)) if os.path.exists(state) else config_dcgm_policy.empty_policy()
if '--get' in args:
    sys.stdout.write(config_dcgm_policy.render_policy_get(policy, int(args[args.index('-g') + 1])))
elif '--clear' in args:
    json.dump(config_dcgm_policy.empty_policy(), open(state, 'w'))
    print('Policy successfully cleared.')
elif '--set' in args:
    new = config_dcgm_policy.policy_from_set_argv(args)
    if os.path.exists(mode) and open(mode).read() == 'drop-thermal':
        new['conditions'].pop('thermal', None)
    json.dump(new, open(state, 'w'))
    print('Policy successfully set.')
'''


def fake_policy(tmp_path, mode=None):
    state = str(tmp_path / 'policy.json')
    if mode:
        (tmp_path / 'mode').write_text(mode)
    script = tmp_path / 'dcgmi'
    script.write_text(FAKE_POLICY % {'python': sys.executable, 'collections': COLLECTIONS, 'state': state,
                                     'mode': str(tmp_path / 'mode')})
    script.chmod(0o755)
    return str(script)


def policy_calls(tmp_path):
    path = tmp_path / 'policy.json.calls'
    return path.read_text().splitlines() if path.exists() else []


WANTED = {'conditions': {'dbe': True, 'pcie': True, 'max_pages': 60, 'thermal': 90, 'xid': True},
          'action': 'none', 'validation': 'none'}


def test_policy_set_read_back_then_unchanged(tmp_path):
    dcgmi = fake_policy(tmp_path)
    first = run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi}, diff=True)
    assert first['changed'] is True
    assert first['before'] == config_dcgm_policy.empty_policy()
    assert first['policy'] == first['after'] == config_dcgm_policy.validate(WANTED)[0]
    assert 'condition thermal = 90' in first['diff']['after']
    assert policy_calls(tmp_path) == ['policy -g 0 --get', 'policy -g 0 --clear',
                                      'policy -g 0 --set 0,0 -e -p -M 60 -T 90 -x', 'policy -g 0 --get']
    second = run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi})
    assert second['changed'] is False
    assert policy_calls(tmp_path)[4:] == ['policy -g 0 --get']


def test_policy_check_mode_changes_nothing(tmp_path):
    dcgmi = fake_policy(tmp_path)
    result = run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi}, check_mode=True, diff=True)
    assert result['changed'] is True
    assert result['policy'] == config_dcgm_policy.empty_policy()
    assert policy_calls(tmp_path) == ['policy -g 0 --get']


def test_policy_without_conditions_is_cleared(tmp_path):
    dcgmi = fake_policy(tmp_path)
    run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi})
    result = run(dcgm_policy, {'policy': {'conditions': {'dbe': False}}, 'dcgmi': dcgmi, 'group': 0})
    assert result['changed'] is True and result['policy'] == config_dcgm_policy.empty_policy()
    assert result['argv'] == [[dcgmi, 'policy', '-g', '0', '--clear']]


def test_policy_read_back_that_differs_fails(tmp_path):
    dcgmi = fake_policy(tmp_path, mode='drop-thermal')
    result = run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi}, expect_fail=True)
    assert 'read back differs' in result['msg']
    assert 'thermal' not in result['policy']['conditions']


def test_policy_without_host_engine_fails(tmp_path):
    dcgmi = fake_policy(tmp_path, mode='down')
    result = run(dcgm_policy, {'policy': WANTED, 'dcgmi': dcgmi}, expect_fail=True)
    assert 'Unable to connect to host engine' in result['msg']


def test_policy_error_printed_with_exit_0_fails(tmp_path):
    dcgmi = tmp_path / 'dcgmi'
    dcgmi.write_text('#!/bin/sh\necho "Getting policy information"\necho "Error: Invalid group ID"\nexit 0\n')
    dcgmi.chmod(0o755)
    result = run(dcgm_policy, {'policy': WANTED, 'dcgmi': str(dcgmi)}, expect_fail=True)
    assert result['msg'] == 'dcgmi policy -g 0 --get exited 0: Error: Invalid group ID'
    assert result['what'] == 'read'


def test_policy_bad_data_refused_before_dcgmi_runs(tmp_path):
    dcgmi = fake_policy(tmp_path)
    result = run(dcgm_policy, {'policy': {'conditions': {'sm_utilization': 90, 'thermal': -1}}, 'dcgmi': dcgmi},
                 expect_fail=True)
    assert result['errors'][0] == 'dcgm_policy.conditions.sm_utilization: ' + config_dcgm_policy.SM_UTIL_MESSAGE
    assert result['errors'][1].startswith('dcgm_policy.conditions.thermal: must be a whole number')
    assert policy_calls(tmp_path) == []


def test_policy_validate_only_returns_the_commands(tmp_path):
    result = run(dcgm_policy, {'policy': WANTED, 'validate_only': True, 'host': '10.0.0.1', 'group': 2})
    assert result['changed'] is False
    assert result['argv'] == [
        ['dcgmi', 'policy', '-g', '2', '--clear', '--host', '10.0.0.1'],
        ['dcgmi', 'policy', '-g', '2', '--set', '0,0', '-e', '-p', '-M', '60', '-T', '90', '-x', '--host', '10.0.0.1']]
