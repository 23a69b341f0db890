# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils.command, the one runner, against real processes: a program that is not there, a non-zero exit, a
time-out that kills the command and the child it started, the locale and the environment reaching the child, the
working directory, bytes and text, and argv given as a string refused. Each failure is checked against the one
wording ``failure`` makes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import sys
import time

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.locale import get_best_parsable_locale

from ansible_collections.gpuops.node.plugins.module_utils import command

SH = '/bin/sh'


def sh(script, *args):
    return [SH, '-c', script, 'sh'] + list(args)


def _module():
    """A real AnsibleModule (no options), for the locale lookup."""
    args = {'ANSIBLE_MODULE_ARGS': {'_ansible_remote_tmp': '/tmp', '_ansible_keep_remote_files': False}}
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core >= 2.19
    except ImportError:
        from ansible.module_utils import basic
        from ansible.module_utils.common.text.converters import to_bytes
        basic._ANSIBLE_ARGS = to_bytes(json.dumps(args))
        return AnsibleModule(argument_spec={})
    with patch_module_args(args['ANSIBLE_MODULE_ARGS']):
        return AnsibleModule(argument_spec={})


def _gone(pid):
    """Whether a process no longer runs (reaped, or a zombie nobody reaped yet)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except (IOError, OSError):
        return True


# ---------------------------------------------------------------- a program that does not start


def test_a_program_not_on_the_path():
    result = command.run(None, ['gpuops-no-such-program', '--version'])
    assert (result.rc, result.out, result.timed_out, result.not_found) == (None, '', False, True)
    assert command.failure(result) == 'gpuops-no-such-program not found on the PATH'
    # the sentence is also what the tuple says on stderr, for code that reads only the tuple
    assert result.err == command.failure(result) and result.error
    assert not result.ok()


def test_a_program_not_at_its_path(tmp_path):
    missing = str(tmp_path / 'bin' / 'nvidia-smi')
    result = command.run(None, [missing, '-q'], binary=True)
    assert command.failure(result) == 'nvidia-smi not found at %s' % missing
    assert (result.out, result.err) == (b'', command.failure(result).encode('utf-8'))


def test_a_file_that_is_not_executable(tmp_path):
    path = tmp_path / 'dcgmi'
    path.write_text('#!/bin/sh\necho never\n')
    path.chmod(0o644)
    result = command.run(None, [str(path), 'diag'])
    assert not result.not_found
    assert command.failure(result) == 'dcgmi could not be run: Permission denied'


def test_a_working_directory_that_does_not_exist(tmp_path):
    result = command.run(None, sh('pwd'), cwd=str(tmp_path / 'absent'))
    assert command.failure(result) == 'sh could not be run: the directory to run in, %s, does not exist' % (
        tmp_path / 'absent')


# ---------------------------------------------------------------- a command that fails


def test_a_non_zero_exit_says_the_last_lines_of_stderr():
    result = command.run(None, sh('echo on stdout; for n in 1 2 3 4; do echo "line $n" >&2; done; exit 3'))
    assert (result.rc, result.out, result.timed_out) == (3, 'on stdout\n', False)
    assert command.failure(result) == ("sh -c 'echo on stdout; for n in 1 2 3 4; do echo \"line $n\" >&2; done; "
                                       "exit 3' sh exited 3: line 2 | line 3 | line 4")
    # an allowed status is no failure; the Result says so too
    assert command.failure(result, allowed=(0, 3)) is None and result.ok((0, 3)) and not result.ok()


def test_stdout_when_stderr_is_empty_and_no_output_when_both_are():
    said = command.run(None, ['/bin/sh', '-c', 'echo "Failed to initialize NVML: Driver/library version mismatch"; '
                                               'echo "NVML library version: 580.173"; exit 18'])
    assert command.failure(said).endswith(' exited 18: Failed to initialize NVML: Driver/library version mismatch | '
                                          'NVML library version: 580.173')
    silent = command.run(None, ['/bin/false'])
    assert command.failure(silent) == 'false exited 1: no output'


def test_output_given_by_the_caller_makes_an_exit_0_a_failure():
    result = command.run(None, sh('echo "Error: Invalid group ID"'))
    assert command.failure(result) is None
    assert command.failure(result, output=['Error: Invalid group ID', 'second']) == (
        "sh -c 'echo \"Error: Invalid group ID\"' sh exited 0: Error: Invalid group ID | second")


def test_a_command_killed_by_a_signal():
    result = command.run(None, sh('echo dying >&2; kill -TERM $$'))
    assert result.rc == -15
    assert command.failure(result) == "sh -c 'echo dying >&2; kill -TERM $$' sh was killed by signal 15 (SIGTERM): dying"


def test_the_command_line_is_cut_and_the_output_too():
    result = command.run(None, ['/bin/sh', '-c', 'printf "%0500d\\n" 0 >&2; exit 1'] + ['arg%d' % i for i in range(60)])
    message = command.failure(result)
    label, said = message.split(' exited 1: ')
    assert len(label) == command.LABEL_CHARS and label.endswith('...')
    assert len(said) == command.SAID_CHARS and said.startswith('...0000')


# ---------------------------------------------------------------- time-out


def test_a_time_out_kills_the_command_and_the_child_it_started(tmp_path):
    pid_file = tmp_path / 'child.pid'
    started = time.time()
    result = command.run(None, sh('echo before; sleep 60 & echo $! > "$1"; wait', str(pid_file)), timeout=1)
    assert time.time() - started < 1 + command.REAP_SECONDS
    assert (result.rc, result.timed_out, result.timeout, result.out) == (None, True, 1, 'before\n')
    assert command.failure(result).endswith(' did not finish within 1 s and was killed')
    child = int(pid_file.read_text())
    deadline = time.time() + 5
    while not _gone(child) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone(child), 'the sleeping child %d still runs' % child


def test_a_command_that_ignores_sigterm_is_killed_after_kill_after():
    started = time.time()
    result = command.run(None, sh('trap "" TERM; sleep 60'), timeout=1, kill_after=1)
    took = time.time() - started
    assert result.timed_out and 2 <= took < 2 + command.REAP_SECONDS
    assert command.failure(result) == "sh -c 'trap \"\" TERM; sleep 60' sh did not finish within 1 s and was killed"


def test_a_finished_command_whose_child_holds_its_output_keeps_its_answer():
    result = command.run(None, sh('echo answer; sleep 60 & exit 0'), timeout=1)
    assert (result.rc, result.out, result.timed_out) == (0, 'answer\n', False)
    assert result.err.endswith('sh exited 0 but a process it started kept its output open; stopped after 1 s')


def test_a_bad_time_out_is_refused():
    with pytest.raises(ValueError):
        command.run(None, ['true'], timeout=0)


# ---------------------------------------------------------------- environment, locale, directory, bytes


ENV_SCRIPT = 'printf "%s|%s|%s|%s|%s" "$LC_ALL" "$LANG" "${LANGUAGE-unset}" "${NCCL_DEBUG-unset}" "$(pwd)"'


def test_the_locale_reaches_the_child(monkeypatch):
    monkeypatch.setenv('LC_ALL', 'de_DE.UTF-8')
    monkeypatch.setenv('LANG', 'de_DE.UTF-8')
    monkeypatch.setenv('LANGUAGE', 'de')
    best = command.best_locale()
    assert best in command.LOCALE_PREFERENCES
    lc_all, lang, language, _nccl, _cwd = command.run(None, sh(ENV_SCRIPT)).out.split('|')
    assert (lc_all, lang, language) == (best, best, 'unset')


def test_an_ansible_module_gives_its_best_parsable_locale(monkeypatch):
    monkeypatch.setenv('LC_ALL', 'de_DE.UTF-8')
    # AnsibleModule sets LC_MESSAGES when the locale is not there: put back after the test
    monkeypatch.delenv('LC_MESSAGES', raising=False)
    module = _module()
    expected = get_best_parsable_locale(module, preferences=list(command.LOCALE_PREFERENCES))
    assert command.best_locale(module) == expected
    out = command.run(module, sh(ENV_SCRIPT)).out
    assert out.split('|')[:2] == [expected, expected]
    # the child reads its messages in that locale: C's "No such file or directory"
    result = command.run(module, ['ls', '/gpuops-no-such-path'])
    assert command.failure(result).startswith('ls /gpuops-no-such-path exited 2: ')
    assert 'No such file or directory' in command.failure(result)


def test_extra_environment_and_working_directory_reach_the_child(tmp_path):
    out = command.run(None, sh(ENV_SCRIPT), cwd=str(tmp_path), env={'NCCL_DEBUG': 'INFO', 'LC_ALL': 'C'}).out
    _lc_all, _lang, _language, nccl, cwd = out.split('|')
    assert (nccl, os.path.realpath(cwd)) == ('INFO', os.path.realpath(str(tmp_path)))
    # the caller's variables win over the locale
    assert out.split('|')[0] == 'C'
    with pytest.raises(TypeError):
        command.run(None, ['true'], env={'CUDA_VISIBLE_DEVICES': 0})


def test_text_or_bytes():
    script = [sys.executable, '-c', 'import sys; sys.stdout.buffer.write(b"caf\\xc3\\xa9 \\xff\\n")']
    assert command.run(None, script).out == u'caf\u00e9 \ufffd\n'
    assert command.run(None, script, binary=True).out == b'caf\xc3\xa9 \xff\n'


def test_stdin_is_closed():
    assert command.run(None, ['cat']).out == ''


# ---------------------------------------------------------------- argv only


@pytest.mark.parametrize('argv', ['nvidia-smi -q -x', b'nvidia-smi', None, {'nvidia-smi': '-q'}])
def test_a_command_that_is_not_an_argv_list_is_refused(argv):
    with pytest.raises(TypeError, match='no shell runs it'):
        command.run(None, argv)


def test_arguments_are_text_and_there_is_a_program():
    with pytest.raises(TypeError, match='every argument of a command is text'):
        command.run(None, ['dcgmi', 'diag', '-r', 1])
    with pytest.raises(ValueError):
        command.run(None, [])


def test_a_shell_is_never_involved(tmp_path):
    marker = tmp_path / 'marker'
    result = command.run(None, ['echo', 'x; touch %s' % marker, '$(id)'])
    assert result.out == 'x; touch %s $(id)\n' % marker and not marker.exists()


# ---------------------------------------------------------------- check, runner, Result


class _Failed(Exception):
    pass


class _Module(object):
    def fail_json(self, **kwargs):
        raise _Failed(kwargs)


def test_check_fails_the_module_with_the_one_wording():
    with pytest.raises(_Failed) as failed:
        command.check(_Module(), sh('echo "dpkg-query: no packages found matching x" >&2; exit 1'))
    assert failed.value.args[0] == {'msg': "sh -c 'echo \"dpkg-query: no packages found matching x\" >&2; exit 1' sh "
                                           "exited 1: dpkg-query: no packages found matching x"}
    said = []
    result = command.check(_Module(), ['/bin/false'], fail=said.append)
    assert said == ['false exited 1: no output'] and result.rc == 1
    assert command.check(_Module(), ['/bin/false'], allowed=(0, 1)).rc == 1


def test_runner_gives_run_argv_with_the_tuple_pure_code_reads():
    run = command.runner(None, timeout=5, binary=True)
    result = run([SH, '-c', 'echo out; echo err >&2; exit 4'])
    assert tuple(result) == (4, b'out\n', b'err\n', False) and len(result) == 4
    rc, out, err = result[:3]
    assert (rc, out, err, result[3]) == (4, b'out\n', b'err\n', False)
    assert result.argv == [SH, '-c', 'echo out; echo err >&2; exit 4'] and result.timeout == 5


def test_label_quotes_what_a_shell_would_need():
    assert command.label(['/usr/bin/scontrol', 'update', 'nodename=n1', 'reason=gpuops: a b']) == (
        "scontrol update nodename=n1 'reason=gpuops: a b'")
    assert command.label(['dpkg-query', '-W', '-f', '${Package}\\t']) == "dpkg-query -W -f '${Package}\\t'"
