# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared Molecule prepare packs every simulator file a node needs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from repo_paths import REPO as ROOT

from simulator import install_node


def test_install_simulator_packs_every_module_the_node_installs():
    with open(os.path.join(ROOT, 'molecule', 'shared', 'install_simulator.yml')) as handle:
        text = handle.read()
    packed = set(re.findall(r"'([a-z_0-9]+\.py)'", text))
    needed = set(install_node.LIB_MODULES) | {'__init__.py', 'bundle.py', 'faults.py', 'install_node.py'}
    assert sorted(needed - packed) == []
    assert sorted(p for p in packed if not os.path.exists(os.path.join(ROOT, 'simulator', p))) == []
