# -*- coding: utf-8 -*-
"""gpuops.node.nvidia_driver (its contract with the other roles: test_role_contract.py): every OS vars file
describes each source the same way (the keys tasks and nvidia_driver_plan read)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

from role_files import load, options, path

ROLE = 'nvidia_driver'


def test_os_vars_describe_every_source_alike():
    choices = options(ROLE)['nvidia_driver_source']['choices']
    files = [os.path.basename(f) for f in glob.glob(path(ROLE, 'vars', '*.yml'))]
    files.remove('main.yml')
    assert len(files) >= 4
    for name in files:
        data = load(ROLE, 'vars', name)
        for source, spec in data['__nvidia_driver_sources'].items():
            assert source in choices, (name, source)
            # the packages come from the packaging table (plans/nvidia_packaging.py), read by the plan module
            assert sorted(set(spec) - {'module_names'}) == ['dkms_modules'], (name, source)
            for flavour, names in (spec.get('module_names') or {}).items():
                assert flavour in ('open', 'proprietary') and all(n.startswith('nvidia') for n in names), (name, source)
