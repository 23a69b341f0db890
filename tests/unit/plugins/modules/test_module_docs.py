# -*- coding: utf-8 -*-
"""Every module's DOCUMENTATION, EXAMPLES and RETURN are valid YAML (ansible-doc and the linters read them)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib
import os

import pytest
import yaml

from repo_paths import REPO

MODULES = sorted(n[:-3] for n in os.listdir(os.path.join(REPO, 'plugins', 'modules')) if n.endswith('.py'))


@pytest.mark.parametrize('name', MODULES)
@pytest.mark.parametrize('block', ['DOCUMENTATION', 'EXAMPLES', 'RETURN'])
def test_documentation_blocks_parse(name, block):
    module = importlib.import_module('ansible_collections.gpuops.node.plugins.modules.' + name)
    assert yaml.safe_load(getattr(module, block)) is not None
