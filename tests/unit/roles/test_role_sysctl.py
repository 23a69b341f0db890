# -*- coding: utf-8 -*-
"""gpuops.node.sysctl (its contract with the other roles: test_role_contract.py): the facts it reports, the check of
sysctl_file, preflight and configure calling the module alike, and the defaults accepted and applied on a synthetic
/proc/sys tree (built here), each base key explained in the README."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest

from role_files import load, reported_facts, templar, text

ROLE = 'sysctl'


def test_the_reported_facts():
    assert sorted(reported_facts(ROLE)) == ['sysctl_applied', 'sysctl_changed', 'sysctl_drifted', 'sysctl_missing',
                                            'sysctl_overrides', 'sysctl_reboot_required']


@pytest.mark.parametrize('value, ok', [
    ('/etc/sysctl.d/90-gpuops.conf', True),
    ('/etc/sysctl.d/99-zz.conf', True),
    ('/etc/sysctl.conf', False),
    ('/etc/sysctl.d/90-gpuops', False),
    ('/etc/sysctl.d/.conf', False),
    ('/etc/sysctl.d/sub/90.conf', False),
    ('/usr/lib/sysctl.d/90-gpuops.conf', False),
    ('/etc/sysctl.d/../90.conf', False),
    ('etc/sysctl.d/90-gpuops.conf', False),
])
def test_sysctl_file_must_be_a_conf_file_in_etc_sysctl_d(value, ok):
    assert templar(ROLE, sysctl_file=value)('{{ __sysctl_file_ok }}') is ok


def _module_task(name):
    tasks = [t for t in load(ROLE, 'tasks', name) if 'gpuops.node.sysctl_conf' in t]
    assert len(tasks) == 1, name
    return tasks[0]


def test_preflight_and_configure_call_the_module_alike():
    plan, apply = _module_task('preflight.yml'), _module_task('configure.yml')
    assert plan['gpuops.node.sysctl_conf'] == apply['gpuops.node.sysctl_conf']
    assert plan['check_mode'] is True and plan['changed_when'] is False
    assert 'check_mode' not in apply
    assert apply['register'] == '__sysctl_conf' and plan['register'] == '__sysctl_plan'
    assert plan['gpuops.node.sysctl_conf']['name_prefix'] == 'sysctl_'
    # messages about the module's path name the role's variable, sysctl_file
    assert plan['gpuops.node.sysctl_conf']['option_names'] == {'path': 'file'}
    # every variable reaches the module
    passed = ' '.join(str(v) for v in plan['gpuops.node.sysctl_conf'].values())
    assert sorted(set(re.findall(r'(?<![_a-z])sysctl_[a-z_]+', passed))) == sorted(load(ROLE, 'defaults', 'main.yml'))


def test_the_readme_explains_every_base_key():
    readme = text(ROLE, 'README.md')
    section = readme.split('## The base settings', 1)[1].split('\n## ', 1)[0]
    for key, value in load(ROLE, 'defaults', 'main.yml')['sysctl_base_settings'].items():
        row = [line for line in section.splitlines() if '`%s`' % key in line]
        assert len(row) == 1, key
        assert str(value) in row[0], key


def test_the_defaults_apply_on_a_node_and_a_second_run_changes_nothing(tmp_path):
    from ansible_collections.gpuops.node.plugins.module_utils.config import sysctl as config_sysctl
    defaults = load(ROLE, 'defaults', 'main.yml')
    proc = tmp_path / 'proc'
    for key in defaults['sysctl_base_settings']:
        where = proc / 'sys' / config_sysctl.relative_path(key)
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(u'1\n')
    root = tmp_path / 'root'

    def write_file(path, content):
        where = root / path.lstrip('/')
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(content)

    def converge():
        return config_sysctl.converge(
            base_settings=defaults['sysctl_base_settings'], settings=defaults['sysctl_settings'],
            path=defaults['sysctl_file'], proc_root=str(proc), root=str(root),
            allow_missing=defaults['sysctl_allow_missing'], fail_on_override=defaults['sysctl_fail_on_override'],
            header=load(ROLE, 'vars', 'main.yml')['__sysctl_header'], name_prefix='sysctl_', write_file=write_file)
    first = converge()
    assert first['errors'] == [] and first['failures'] == []
    assert len(first['applied']) == len(defaults['sysctl_base_settings'])
    assert (proc / 'sys' / 'net' / 'ipv4' / 'tcp_rmem').read_text() == u'4096 87380 134217728\n'
    written = (root / 'etc' / 'sysctl.d' / '90-gpuops.conf').read_text()
    assert written.startswith('# Managed by Ansible (gpuops.node.sysctl)')
    assert 'kernel.numa_balancing = 0\n' in written
    second = converge()
    assert not second['changed']
    assert os.listdir(str(root / 'etc' / 'sysctl.d')) == ['90-gpuops.conf']
