# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a module's main() in a unit test, and reading its result as Ansible's task executor reads it.

    from module_harness import AnsibleFailJson, patch_module, run   # patch_module: an autouse fixture
    result = run(dcgm_diag, {'level': 1}, check_mode=True)
    calls = answer_commands(monkeypatch, lambda argv: (0, 'output', ''))   # the commands it runs, answered

The module's own exit_json and fail_json run (argument handling, warnings, deprecations, no_log); only the last
step, printing the JSON, is replaced by an exception carrying the result. Which exception is decided as the task
executor decides a task's status (``executor_result``), not by which of the two the module called: a module that
calls exit_json with an ``rc`` that is not 0 (``None`` included) raises AnsibleFailJson, as Ansible reports such a
task FAILED. A result that carries deprecations fails the test (``AnsibleDeprecation``): the pinned ansible-core
removes what they warn about.

What this cannot prove: how the controller's action plugin, callbacks and ``failed_when``/``changed_when``
treat the result; tests/unit/collection/test_modules_through_ansible.py runs every module through ansible-playbook for that.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class AnsibleExitJson(Exception):
    pass


class AnsibleFailJson(Exception):
    pass


def executor_result(raw):
    """``raw`` (a module's JSON) as ansible-core's TaskExecutor completes it before callbacks and conditionals.

    ansible/executor/task_executor.py (2.19): a result without ``failed`` is failed when it has an ``rc`` that is
    not 0 or "0" (``None`` included); a result without ``changed`` did not change anything.
    """
    result = dict(raw)
    if 'failed' not in result:
        result['failed'] = 'rc' in result and result['rc'] not in (0, '0')
    result.setdefault('changed', False)
    return result


def _messages(entries):
    # ansible-core 2.19 sends each as {'__ansible_type': 'WarningSummary', 'event': {'msg': ...}}
    return [e.get('event', {}).get('msg') or e.get('msg') if isinstance(e, dict) else str(e) for e in entries or []]


def deprecations_of(raw):
    """The deprecation messages a module's result carries (each is a failure of the module's test)."""
    return _messages(raw.get('deprecations'))


def warnings_of(result):
    """The warnings Ansible shows for a module's result, as text."""
    return _messages(result.get('warnings'))


def wire(result):
    """``result`` as the module sends it to the controller: through the module's own JSON encoder."""
    from ansible.module_utils.common import json as common_json
    encoder = common_json.get_module_encoder(basic._ANSIBLE_PROFILE, common_json.Direction.MODULE_TO_CONTROLLER)
    return json.loads(json.dumps(result, cls=encoder))


def _record(_self, result):
    result = wire(result)
    deprecated = deprecations_of(result)
    if deprecated:
        pytest.fail('the module returned deprecations: %s' % '; '.join(str(d) for d in deprecated), pytrace=False)
    result = executor_result(result)
    raise (AnsibleFailJson if result['failed'] else AnsibleExitJson)(result)


@pytest.fixture(autouse=True)
def patch_module(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, '_record_module_result', _record)
    # A module runs on the node, never in the controller: once a test has imported controller code (ansible's
    # templating, display, Molecule's config), ansible-core marks the process a controller, and module_utils then
    # show warnings on the terminal instead of returning them, and read module arguments another way.
    from ansible.module_utils import _internal
    monkeypatch.setattr(_internal, 'is_controller', False)
    # and its JSON decoder checks strings for invalid UTF-8 only where ansible.constants imports (the controller);
    # on a node it never does, and the answer is cached for the process
    from ansible.module_utils._internal._json import _profiles
    if hasattr(_profiles, '_string_encoding_check_enabled'):
        monkeypatch.setattr(_profiles, '_string_encoding_check_enabled', lambda: False)
    yield
    # the module's warnings and deprecations are global: none may reach the next test
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):
        if isinstance(getattr(warnings, name, None), (dict, list)):
            getattr(warnings, name).clear()


class _NullContext(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_module_args(args, check_mode=False, diff=False):
    args = dict(args)
    args['_ansible_check_mode'] = check_mode
    args['_ansible_diff'] = diff
    args.setdefault('_ansible_remote_tmp', '/tmp')
    args.setdefault('_ansible_keep_remote_files', False)
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core >= 2.19
    except ImportError:
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
        return _NullContext()
    return patch_module_args(args)


def run(module, args, check_mode=False, diff=False, expect_fail=False):
    """The result of ``module.main()`` with ``args`` as Ansible reports it: ok or changed, else (``expect_fail``)
    failed. A result whose status is not the one expected fails the test with the result."""
    with set_module_args(args, check_mode=check_mode, diff=diff):
        with pytest.raises((AnsibleFailJson, AnsibleExitJson)) as exc:
            module.main()
    result = exc.value.args[0]
    if isinstance(exc.value, AnsibleFailJson) != bool(expect_fail):
        pytest.fail('Ansible would report this task %s, the test expects it %s: %r'
                    % ('failed' if result['failed'] else 'ok', 'failed' if expect_fail else 'ok', result),
                    pytrace=False)
    return result


def _as_bytes(value):
    return value if isinstance(value, bytes) else (value or '').encode('utf-8')


def answer_commands(monkeypatch, answer):
    """Every command the modules run (module_utils.command, the only runner) answered by ``answer(argv)``:
    ``(rc, out, err)`` or ``(rc, out, err, timed_out)``, text or bytes; an OSError it raises is a command that
    cannot start. The runner's own handling (the argv check, the environment, decoding, the failure wording) still
    runs. Returns the calls, each ``{'argv', 'env', 'cwd', 'timeout', 'kill_after'}``."""
    from ansible_collections.gpuops.node.plugins.module_utils import command
    calls = []

    def execute(argv, env, cwd=None, timeout=None, kill_after=0):
        calls.append({'argv': list(argv), 'env': env, 'cwd': cwd, 'timeout': timeout, 'kill_after': kill_after})
        answered = tuple(answer(list(argv)))
        timed_out = len(answered) > 3 and bool(answered[3])
        return answered[0], _as_bytes(answered[1]), _as_bytes(answered[2]), timed_out
    monkeypatch.setattr(command, 'execute', execute)
    return calls
