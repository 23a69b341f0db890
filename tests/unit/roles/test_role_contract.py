# -*- coding: utf-8 -*-
"""Every role with an argument spec keeps the same contract: its defaults are its argument spec's defaults, every
entry point takes the same options, every variable is public (`<role>_*`) with a type and a description and has a
README row whose default is the spec's, the README names no other `<role>_*` than the variables and the reported
facts, the private names are prefixed `__<role>_`, the OS vars files have the same keys, the facts of
tasks/report.yml (`<role>_changed`, `<role>_reboot_required`, ...) are not variables, and the templates say they are
managed. Where a role differs, CONTRACTS says how."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from role_files import load, options, entry_points, path, reported_facts, role_names, text

OS_VARS = ('Debian.yml', 'RedHat.yml', 'Ubuntu.yml', 'default.yml')

# What a role's contract is, where it is not the usual one:
#   defaults_for_all: every option has a default (in the spec and in defaults/main.yml)
#   readme: the role's README has the Variables table (False: it names no variable)
#   os_vars: the OS vars files it has at least (vars/*.yml but main.yml)
#   os_vars_alike: the OS vars files with the same keys; the others hold some of them (None: all of them)
#   reports: tasks/report.yml sets <role>_changed and <role>_reboot_required (False: it sets no <role>_* fact)
USUAL = {'defaults_for_all': True, 'readme': True, 'os_vars': OS_VARS, 'os_vars_alike': None, 'reports': True}
CONTRACTS = {
    'mig': {'os_vars': ()},
    # kernel parameters: the same on every OS
    'sysctl': {'os_vars': ()},
    # default.yml: an OS without the driver's sources (__nvidia_driver_supported false)
    'nvidia_driver': {'os_vars_alike': ('Debian.yml', 'RedHat.yml', 'Ubuntu.yml')},
    # the playbooks' internal role: its variables may have no fixed default, their table is docs/variables.md
    # (tests/scripts/variables_table.py), and it reports no facts of its own
    'gpuops': {'defaults_for_all': False, 'readme': False, 'os_vars': (), 'reports': False},
}
ROLES = role_names()


def contract(role):
    return dict(USUAL, **CONTRACTS.get(role, {}))


def test_the_contracts_name_roles_that_exist():
    assert ROLES and set(CONTRACTS) <= set(ROLES)
    assert all(set(entry) <= set(USUAL) for entry in CONTRACTS.values())


@pytest.mark.parametrize('role', ROLES)
def test_defaults_are_the_spec_defaults(role):
    spec = options(role)
    assert load(role, 'defaults', 'main.yml') == dict(
        (name, opt['default']) for name, opt in spec.items() if 'default' in opt)
    if contract(role)['defaults_for_all']:
        assert sorted(name for name, opt in spec.items() if 'default' not in opt) == []


@pytest.mark.parametrize('role', ROLES)
def test_every_entry_point_takes_the_same_options(role):
    for entry in entry_points(role):
        assert options(role, entry) == options(role), entry


@pytest.mark.parametrize('role', ROLES)
def test_every_variable_is_public_with_a_type_and_a_description(role):
    for name, opt in options(role).items():
        assert re.match(r'%s_[a-z0-9_]+\Z' % role, name), name
        assert opt.get('description') and opt.get('type'), name


@pytest.mark.parametrize('role', ROLES)
def test_the_readme_documents_every_variable_with_its_default(role):
    readme = text(role, 'README.md')
    spec = options(role)
    rows = re.findall(r'^\| `(%s_[a-z0-9_]+)` \|' % role, readme, re.M)
    if not contract(role)['readme']:
        assert rows == []
        return
    for name, opt in spec.items():
        row = re.search(r'^\| `%s` \| `([^`]*)` \|' % name, readme, re.M)
        assert row, name
        assert yaml.safe_load(row.group(1) or '""') == opt['default'], name
    # the other rows are the facts the role reports
    assert sorted(set(rows) - set(reported_facts(role))) == sorted(spec), 'README rows that are not variables'


@pytest.mark.parametrize('role', ROLES)
def test_private_variables_are_prefixed(role):
    assert all(name.startswith('__%s_' % role) for name in load(role, 'vars', 'main.yml') or {})


@pytest.mark.parametrize('role', ROLES)
def test_os_vars_have_the_same_keys(role):
    wanted = contract(role)
    files = sorted(os.path.basename(f) for f in glob.glob(path(role, 'vars', '*.yml')))
    files.remove('main.yml')
    assert set(wanted['os_vars']) <= set(files)
    alike = wanted['os_vars_alike'] or files
    keys = sorted(load(role, 'vars', alike[0])) if files else []
    for name in files:
        data = load(role, 'vars', name)
        assert all(key.startswith('__%s_' % role) for key in data), name
        if name in alike:
            assert sorted(data) == keys, name
        else:
            assert set(data) < set(keys), name


@pytest.mark.parametrize('role', ROLES)
def test_the_reported_facts_are_not_variables(role):
    """set_fact outranks the inventory: a reported fact named like a variable would replace it in later runs (of the
    play too: a gate reads the variables again)."""
    reported = reported_facts(role)
    if contract(role)['reports']:
        assert set(['%s_changed' % role, '%s_reboot_required' % role]) <= set(reported), reported
    else:
        assert reported == []
    assert not set(reported) & set(options(role))


@pytest.mark.parametrize('role', ROLES)
def test_templates_say_they_are_managed(role):
    for name in glob.glob(path(role, 'templates', '*.j2')):
        with open(name) as handle:
            assert handle.readline() == '{{ ansible_managed | comment }}\n', name


@pytest.mark.parametrize('role', [r for r in ROLES if os.path.exists(path(r, 'vars', 'RedHat.yml'))])
def test_a_role_that_names_its_rhel_releases_accepts_those_of_nvidias_repositories(role):
    # the releases of the packaging table's RedHat repositories (rhel8, rhel9, rhel10); Fedora and Amazon Linux are
    # RedHat too, and refused
    from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging  # pylint: disable=import-outside-toplevel
    releases = [r.release for r in nvidia_packaging.REPOSITORIES if r.family == 'RedHat']
    assert releases == ['8', '9', '10']
    flag = load(role, 'vars', 'RedHat.yml').get('__%s_supported' % role)
    if not isinstance(flag, str):
        pytest.skip('%s supports every RedHat release alike' % role)
    from role_files import templar  # pylint: disable=import-outside-toplevel
    for major, supported in [(r, True) for r in releases] + [('7', False), ('2023', False), ('40', False)]:
        render = templar(role, ansible_facts={'distribution_major_version': major})
        assert render(flag) is supported, (role, major)
