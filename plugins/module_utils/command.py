# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way the collection runs a command on the node, and the one way it says that a command failed.

    from ansible_collections.gpuops.node.plugins.module_utils import command

    result = command.run(module, ['nvidia-smi', '-q', '-x'])      # a Result: (rc, out, err, timed_out)
    message = command.failure(result)                               # None, or the sentence that says what failed
    out = command.check(module, ['dkms', 'status']).out             # a failure fails the module with that sentence
    run = command.runner(module, timeout=60, binary=True)           # run(argv), for code that is given the function

Every command is an argv list: no shell runs it, and a string is refused. It runs in the best parsable locale
(``LC_ALL`` and ``LANG`` set to C.UTF-8, else C; ``LANGUAGE`` removed), with stdin closed, in a session of its own,
for at most ``timeout`` seconds: past it the whole session is stopped (SIGTERM then, ``kill_after`` seconds later,
SIGKILL; SIGKILL at once when ``kill_after`` is 0) and the result says it timed out. Its output is text (UTF-8,
invalid bytes replaced) or, with ``binary=True``, the bytes, for the parsers that decode through
``module_utils.rawtext``.

A failed command is reported in one wording, made by ``failure`` alone::

    <command> not found on the PATH                      (or: not found at <path>)
    <command> could not be run: <why>
    <command> did not finish within <N> s and was killed
    <command> was killed by signal <N> (<name>): <what it printed>
    <command> exited <N>: <what it printed>

``<command>`` is the program's base name with its arguments (quoted as a shell would need them, cut at 200
characters), the program's base name alone when it did not start; ``<what it printed>`` is the last lines (at most
three, joined by " | ") of its standard error, else of its standard output, else "no output".
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import shlex
import signal
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.locale import get_best_parsable_locale

from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

# seconds a command may run when its caller does not say
DEFAULT_TIMEOUT = 300
# the locales whose messages and numbers the parsers read, best first (get_best_parsable_locale's order, without
# the English ones: their LC_NUMERIC groups digits)
LOCALE_PREFERENCES = ('C.utf8', 'C.UTF-8', 'C', 'POSIX')
# seconds to wait for a killed command to go; one stuck in the kernel (a GPU off the bus) is left behind
REAP_SECONDS = 5
# how much of a command line and of what it printed a failure shows
LABEL_CHARS = 200
SAID_LINES = 3
SAID_CHARS = 400

_LOCALE = []


class Result(tuple):
    """What one command did: the tuple ``(rc, out, err, timed_out)``, as the code given a ``run(argv)`` reads it.

    ``rc`` is None when the command did not start or did not finish in time. Attributes: ``argv``, ``timeout``
    (the limit it ran under), ``error`` (why it could not start, None when it started), ``not_found`` (it could
    not start because there is no such program). A command that could not start has that sentence of
    ``failure`` as ``err``, so that code that only reads the tuple still says why.
    """

    def __new__(cls, argv, rc, out, err, timed_out=False, timeout=None, error=None, not_found=False):
        self = super(Result, cls).__new__(cls, (rc, out, err, bool(timed_out)))
        self.argv = list(argv)
        self.timeout = timeout
        self.error = error
        self.not_found = bool(not_found)
        return self

    @property
    def rc(self):
        return self[0]

    @property
    def out(self):
        return self[1]

    @property
    def err(self):
        return self[2]

    @property
    def timed_out(self):
        return self[3]

    @property
    def label(self):
        """The command line as failures show it."""
        return label(self.argv)

    def ok(self, allowed=(0,)):
        """Whether the command ran to its end with an exit status in ``allowed``."""
        return self.error is None and not self.timed_out and self.rc is not None and self.rc in allowed


def label(argv):
    """``argv`` as a failure names it: the program's base name and the arguments, quoted, cut at LABEL_CHARS."""
    words = [os.path.basename(argv[0]) or argv[0]] + list(argv[1:])
    text = ' '.join(shlex.quote(word) for word in words)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 3] + '...'


def _as_text(data):
    if data is None:
        return ''
    return data.decode('utf-8', 'replace') if isinstance(data, bytes) else data


def said(out, err):
    """What a command printed, as a failure shows it: the last lines of stderr, else of stdout, else 'no output'."""
    for data in (err, out):
        lines = [line.strip() for line in clean(_as_text(data)).splitlines() if line.strip()]
        if lines:
            text = ' | '.join(lines[-SAID_LINES:])
            return text if len(text) <= SAID_CHARS else '...' + text[-(SAID_CHARS - 3):]
    return 'no output'


def _seconds(value):
    return ('%d' % value) if float(value) == int(value) else ('%s' % value)


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return 'unknown'


def failure(result, allowed=(0,), output=None):
    """The one sentence that says how ``result`` failed, or None when it did not (it ran to its end with an exit
    status in ``allowed``).

    ``output`` (text, or lines joined as ``said`` joins them) replaces what the command printed in the sentence:
    the lines a module picked out of it. Given, it makes a failure of a command that exited with an allowed status
    (one that printed an error and exited 0).
    """
    if output is not None and not isinstance(output, str):
        output = ' | '.join(output)
    name = os.path.basename(result.argv[0]) or result.argv[0]
    if result.error is not None:
        if result.not_found:
            where = 'at %s' % result.argv[0] if os.sep in result.argv[0] else 'on the PATH'
            return '%s not found %s' % (name, where)
        return '%s could not be run: %s' % (name, result.error)
    if result.timed_out:
        return '%s did not finish within %s s and was killed' % (result.label, _seconds(result.timeout))
    if output is None and result.rc in allowed:
        return None
    text = output if output is not None else said(result.out, result.err)
    if result.rc is not None and result.rc < 0:
        return '%s was killed by signal %d (%s): %s' % (result.label, -result.rc, _signal_name(-result.rc), text)
    return '%s exited %s: %s' % (result.label, result.rc, text)


def best_locale(module=None):
    """The locale commands run in: ``get_best_parsable_locale`` of an AnsibleModule, else the same choice made
    from ``locale -a``; C when none of LOCALE_PREFERENCES is there."""
    if isinstance(module, AnsibleModule):
        found = getattr(module, '_gpuops_command_locale', None)
        if found is None:
            found = get_best_parsable_locale(module, preferences=list(LOCALE_PREFERENCES))
            module._gpuops_command_locale = found
        return found
    if not _LOCALE:
        _LOCALE.append(_lookup_locale())
    return _LOCALE[0]


def _lookup_locale():
    try:
        rc, out, _err, _timed_out = _start(['locale', '-a'], dict(os.environ, LC_ALL='C'), timeout=10)
    except OSError:
        return 'C'
    available = _as_text(out).split() if rc == 0 else []
    for name in LOCALE_PREFERENCES:
        if name in available:
            return name
    return 'C'


def _checked_argv(argv):
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)):
        raise TypeError('a command is a list of arguments (no shell runs it), not %s %r' % (type(argv).__name__, argv))
    if not argv:
        raise ValueError('a command needs at least the program to run')
    for arg in argv:
        if not isinstance(arg, str):
            raise TypeError('every argument of a command is text: %r is %s (in %r)' % (arg, type(arg).__name__, argv))
    return list(argv)


def _environment(module, env):
    environ = dict(os.environ)
    found = best_locale(module)
    environ.update(LC_ALL=found, LANG=found)
    # GNU gettext prefers LANGUAGE to LC_ALL outside the C locale
    environ.pop('LANGUAGE', None)
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError('environment variables are text: %r=%r' % (key, value))
        environ[key] = value
    return environ


def run(module, argv, timeout=DEFAULT_TIMEOUT, cwd=None, env=None, binary=False, kill_after=0):
    """Run ``argv`` and return its Result; nothing is raised for a command that fails or cannot start.

    ``module``: the AnsibleModule (its locale lookup), or None. ``timeout``: seconds (None: no limit).
    ``cwd``: the directory it runs in. ``env``: variables added to the environment (after the locale, so they
    win). ``binary``: out and err as bytes. ``kill_after``: seconds between SIGTERM and SIGKILL past the time-out.
    """
    argv = _checked_argv(argv)
    if timeout is not None and timeout <= 0:
        raise ValueError('a time-out is a positive number of seconds, not %r' % (timeout,))
    environ = _environment(module, env)
    if cwd is not None and not os.path.isdir(cwd):
        return _not_run(argv, timeout, binary, 'the directory to run in, %s, does not exist' % cwd)
    try:
        rc, out, err, timed_out = execute(argv, environ, cwd, timeout, kill_after)
    except OSError as exc:
        not_found = exc.errno == errno.ENOENT and (os.sep not in argv[0] or not os.path.exists(argv[0]))
        return _not_run(argv, timeout, binary, exc.strerror or str(exc), not_found)
    if not binary:
        out, err = _as_text(out), _as_text(err)
    return Result(argv, rc, out, err, timed_out, timeout)


def _not_run(argv, timeout, binary, error, not_found=False):
    """The Result of a command that did not start: ``failure``'s sentence as its stderr."""
    message = failure(Result(argv, None, b'', b'', False, timeout, error, not_found))
    if binary:
        return Result(argv, None, b'', message.encode('utf-8'), False, timeout, error, not_found)
    return Result(argv, None, u'', message, False, timeout, error, not_found)


def check(module, argv, allowed=(0,), fail=None, **options):
    """Run ``argv`` (``run``'s ``options``); when it fails (``failure``), ``fail(message)`` (default: the module
    fails with that message). Returns the Result."""
    result = run(module, argv, **options)
    message = failure(result, allowed)
    if message is not None:
        if fail is None:
            module.fail_json(msg=message)
        else:
            fail(message)
    return result


def runner(module=None, **options):
    """``run(argv)`` for code that is given the function (topology gathering, ``node.packages``): each call is
    ``run(module, argv, **options)`` and returns its Result, a ``(rc, out, err, timed_out)`` tuple."""
    def run_argv(argv):
        return run(module, argv, **options)
    return run_argv


def execute(argv, env, cwd=None, timeout=None, kill_after=0):
    """Start ``argv`` and wait for it: ``(rc, out bytes, err bytes, timed_out)``; OSError when it cannot start.

    The one place the collection starts a process (unit tests replace it to answer commands themselves).
    """
    return _start(argv, env, cwd, timeout, kill_after)


def _signal_session(pid, number):
    try:
        os.killpg(pid, number)
    except OSError:
        pass


def _start(argv, env, cwd=None, timeout=None, kill_after=0):
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=cwd, close_fds=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        exited = proc.poll()
        if kill_after and exited is None:
            _signal_session(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                pass
        _signal_session(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:
            # stuck in the kernel: leave it, keep nothing
            out, err = b'', b''
        if exited is not None:
            # the command itself finished; a process it started kept its output open until it was killed
            note = ('%s exited %s but a process it started kept its output open; stopped after %s s'
                    % (os.path.basename(argv[0]), exited, _seconds(timeout))).encode('utf-8')
            return exited, out or b'', (err or b'') + b'\n' + note, False
        return None, out or b'', err or b'', True
