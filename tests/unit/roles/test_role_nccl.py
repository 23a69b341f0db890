# -*- coding: utf-8 -*-
"""gpuops.node.nccl (its contract with the other roles: test_role_contract.py): its defaults are what nccl_plan
accepts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from role_files import load

ROLE = 'nccl'


def test_the_defaults_pass_the_plan():
    from ansible_collections.gpuops.node.plugins.module_utils.plans.nccl import validate
    assert validate(load(ROLE, 'defaults', 'main.yml')) == ([], [])
