# -*- coding: utf-8 -*-
"""nccl_test: a captured output or a fake nccl-tests program (a script printing a real capture) judged against a
threshold; failures in the report's format; check mode runs nothing; unreadable outputs fail the task."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat
import time

import pytest

from real_captures import real_path

import module_harness as harness
# patch_module: an autouse fixture
from module_harness import patch_module  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.modules import nccl_test

H100 = real_path('nccl/all_reduce-h100-8gpu-single-node-indented.txt')
NCCL_FAIL = real_path('nccl/all_reduce-rtx5090-2gpu-ERROR-test-nccl-failure.txt')


def run(args, check_mode=False, expect_fail=False):
    return harness.run(nccl_test, args, check_mode=check_mode, expect_fail=expect_fail)


def fake_perf(tmp_path, capture, rc=0, name='all_reduce_perf', stderr=''):
    """A fake nccl-tests program: prints a real capture, records its argv and environment, exits ``rc``."""
    path = tmp_path / name
    log = tmp_path / 'calls.json'
    path.write_text(
        '#!/usr/bin/env python3\nimport json, os, sys\n'
        'open(%r, "a").write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), '
        '"env": os.environ.get("NCCL_DEBUG")}) + "\\n")\n'
        'sys.stdout.write(open(%r).read())\nsys.stderr.write(%r)\nsys.exit(%d)\n'
        % (str(log), capture, stderr, rc))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), log


def calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_output_file_passes_above_threshold():
    result = run({'output_file': H100, 'min_busbw_gbps': 400})
    assert result['passed'] is True and result['failures'] == []
    assert result['busbw_gbps'] == 470.73 and result['avg_busbw_gbps'] == 448.212
    assert len(result['devices']) == 8 and len(result['rows']) == 4
    assert result['msg'] == 'nccl-tests: 470.73 GB/s at 2147483648 bytes >= 400: passed'
    assert result['changed'] is False and result['failed'] is False and 'rc' not in result


def test_below_threshold_fails_with_report_failure():
    result = run({'output_file': H100, 'min_busbw_gbps': 500}, expect_fail=True)
    assert result['passed'] is False
    assert result['failures'] == [{'check': 'nccl_busbw', 'subject': 'node', 'expected': '>= 500 GB/s',
                                   'actual': '470.73 GB/s',
                                   'message': 'bus bandwidth 470.73 GB/s at 2147483648 bytes is below 500 GB/s'}]
    reported = run({'output_file': H100, 'min_busbw_gbps': 500, 'fail_on_failure': False})
    assert reported['passed'] is False and reported['failures'] == result['failures']


def test_command_runs_with_chdir_and_environment(tmp_path):
    perf, log = fake_perf(tmp_path, H100)
    result = run({'command': perf + ' -b 256M -e 2G -f 2 -g 8', 'chdir': str(tmp_path),
                  'environment': {'NCCL_DEBUG': 'VERSION'}, 'min_busbw_gbps': 400})
    assert result['passed'] is True and result['rc'] == 0
    assert result['test'] == 'all_reduce_perf'
    assert result['command'][-8:] == [perf, '-b', '256M', '-e', '2G', '-f', '2', '-g', '8'][-8:]
    assert calls(log) == [{'argv': ['-b', '256M', '-e', '2G', '-f', '2', '-g', '8'], 'cwd': str(tmp_path),
                           'env': 'VERSION'}]


def test_command_as_list(tmp_path):
    perf, log = fake_perf(tmp_path, H100)
    result = run({'command': [perf, '-g', '8']})
    assert result['passed'] is True
    assert calls(log)[0]['argv'] == ['-g', '8']


def test_nccl_failure_fails(tmp_path):
    perf, _log = fake_perf(tmp_path, NCCL_FAIL, rc=1)
    result = run({'command': perf, 'min_busbw_gbps': 10}, expect_fail=True)
    assert result['passed'] is False and result['rc'] == 1
    checks = [(f['check'], f['actual']) for f in result['failures']]
    assert checks[0][0] == 'nccl_errors' and 'Test NCCL failure' in checks[0][1]
    assert ('nccl_errors', 'all_reduce_perf exited 1') in checks
    assert ('nccl_busbw', 'not measured') in checks


def test_nonzero_exit_after_a_table_fails(tmp_path):
    perf, _log = fake_perf(tmp_path, H100, rc=3)
    result = run({'command': perf, 'fail_on_failure': False})
    assert result['passed'] is False
    assert result['errors'] == ['all_reduce_perf exited 3']


def test_unreadable_output_always_fails(tmp_path):
    garbage = tmp_path / 'out.txt'
    garbage.write_text('Segmentation violation\n')
    result = run({'output_file': str(garbage), 'fail_on_failure': False}, expect_fail=True)
    assert 'cannot read the output of' in result['msg'] and 'no nccl-tests result table' in result['msg']
    missing = run({'output_file': str(tmp_path / 'absent')}, expect_fail=True)
    assert 'cannot read' in missing['msg']


def test_check_mode_runs_nothing_but_reads_a_file(tmp_path):
    perf, log = fake_perf(tmp_path, H100)
    result = run({'command': perf + ' -g 8', 'min_busbw_gbps': 400}, check_mode=True)
    assert calls(log) == []
    assert result['passed'] is None and 'rc' not in result and result['failed'] is False
    assert result['msg'] == 'check mode: all_reduce_perf not run'
    assert run({'output_file': H100, 'min_busbw_gbps': 400}, check_mode=True)['passed'] is True


def test_timeout_stops_the_command(tmp_path):
    slow = tmp_path / 'all_gather_perf'
    slow.write_text('#!/bin/sh\necho started\nsleep 30\n')
    slow.chmod(0o755)
    started = time.time()
    result = run({'command': str(slow), 'timeout': 1}, expect_fail=True)
    # SIGTERM stops the shell and its sleep: no wait for the SIGKILL 30 s later
    assert time.time() - started < 15
    assert result['msg'] == 'all_gather_perf did not finish within 1 s and was killed'
    assert result['rc'] is None and result['output'] == 'started\n'


def test_a_missing_program_is_named(tmp_path):
    result = run({'command': str(tmp_path / 'all_reduce_perf') + ' -g 8'}, expect_fail=True)
    assert result['msg'] == 'all_reduce_perf not found at %s' % (tmp_path / 'all_reduce_perf')
    assert result['rc'] is None and result['command'] == [str(tmp_path / 'all_reduce_perf'), '-g', '8']


def test_a_missing_chdir_is_named(tmp_path):
    perf, log = fake_perf(tmp_path, H100)
    result = run({'command': perf, 'chdir': str(tmp_path / 'absent')}, expect_fail=True)
    assert result['msg'] == 'all_reduce_perf could not be run: the directory to run in, %s, does not exist' % (
        tmp_path / 'absent')
    assert calls(log) == []


@pytest.mark.parametrize('args, message', [
    ({'output_file': H100, 'min_busbw_gbps': -1}, 'min_busbw_gbps must be >= 0'),
    ({'output_file': H100, 'timeout': 0}, 'timeout must be a positive'),
    ({'command': ''}, 'command is empty'),
    ({'command': 'x', 'output_file': H100}, 'mutually exclusive'),
    ({}, 'one of the following is required'),
])
def test_bad_arguments(args, message):
    assert message in run(args, expect_fail=True)['msg']


def test_wrong_elements_fail(tmp_path):
    text = open(H100).read().replace('      0   1117.4', '      3   1117.4')
    out = tmp_path / 'wrong.txt'
    out.write_text(text)
    result = run({'output_file': str(out)}, expect_fail=True)
    assert result['wrong_total'] == 3
    assert result['failures'][0]['check'] == 'nccl_errors'
    assert os.path.basename(H100) not in result['msg']
