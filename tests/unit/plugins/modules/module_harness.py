# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a module's main() in a unit test: its arguments, and exit_json / fail_json caught as exceptions.

    from module_harness import AnsibleFailJson, patch_module, run   # patch_module: an autouse fixture
    result = run(dcgm_diag, {'level': 1}, check_mode=True)
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


def _exit_json(*args, **kwargs):
    kwargs.setdefault('changed', False)
    raise AnsibleExitJson(kwargs)


def _fail_json(*args, **kwargs):
    kwargs['failed'] = True
    raise AnsibleFailJson(kwargs)


@pytest.fixture(autouse=True)
def patch_module(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', _fail_json)
    yield
    # the real exit_json hands the module's warnings over and forgets them; the patched one does not
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
    """The result of ``module.main()`` with ``args``: what exit_json (or, with ``expect_fail``, fail_json) got."""
    with set_module_args(args, check_mode=check_mode, diff=diff):
        with pytest.raises(AnsibleFailJson if expect_fail else AnsibleExitJson) as exc:
            module.main()
    return exc.value.args[0]
