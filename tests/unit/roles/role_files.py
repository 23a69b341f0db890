# -*- coding: utf-8 -*-
"""Reading a role's files for the unit tests: its YAML and text files, its argument spec, the facts its
tasks/report.yml sets, and an Ansible templar over its defaults and vars/main.yml."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest
import yaml

from repo_paths import REPO as ROOT

ROLES = os.path.join(ROOT, 'roles')


def role_names():
    """Every role of the collection with an argument spec."""
    return sorted(name for name in os.listdir(ROLES)
                  if os.path.isfile(os.path.join(ROLES, name, 'meta', 'argument_specs.yml')))


def path(role, *parts):
    return os.path.join(ROLES, role, *parts)


def text(role, *parts):
    with open(path(role, *parts)) as handle:
        return handle.read()


def load(role, *parts):
    return yaml.safe_load(text(role, *parts))


def entry_points(role):
    return load(role, 'meta', 'argument_specs.yml')['argument_specs']


def options(role, entry='main'):
    return entry_points(role)[entry]['options']


def reported_facts(role):
    """The `<role>_*` facts the set_fact of tasks/report.yml sets, in its order."""
    if not os.path.exists(path(role, 'tasks', 'report.yml')):
        return []
    return re.findall(r'^    (%s_[a-z_]+):' % role, text(role, 'tasks', 'report.yml'), re.M)


def templar(role, **extra):
    """An Ansible templar over the role's defaults and vars/main.yml (what the role's expressions see)."""
    template = pytest.importorskip('ansible.template')
    if not hasattr(template, 'trust_as_template'):
        pytest.skip('ansible-core without trust_as_template')
    from ansible.parsing.dataloader import DataLoader

    def trusted(value):
        return template.trust_as_template(value) if isinstance(value, str) else value

    variables = dict(load(role, 'defaults', 'main.yml'))
    variables.update(load(role, 'vars', 'main.yml'))
    variables.update(extra)
    variables = dict((name, trusted(value)) for name, value in variables.items())
    engine = template.Templar(loader=DataLoader(), variables=variables)
    return lambda expression: engine.template(template.trust_as_template(expression))
