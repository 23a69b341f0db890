# -*- coding: utf-8 -*-
"""gpuops.node.rdma (its contract with the other roles: test_role_contract.py): rdma_plan checks every numeric
variable."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from role_files import options

ROLE = 'rdma'


def test_the_plan_checks_every_numeric_variable_the_spec_declares():
    from ansible_collections.gpuops.node.plugins.module_utils.plans.rdma import _RANGES
    ints = sorted(name for name, opt in options(ROLE).items() if opt['type'] == 'int')
    assert sorted(name for name, _low, _high in _RANGES) == ints
