# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Derive the simulator's hardware profiles from the real captures.

A profile is a capture bundle (the layout playbooks/capture.yml writes:
nvidia-smi outputs plus a sysfs tree) with ``profile.yml`` (what it is and
what it was derived from) and ``sim/`` (data only the replaying nvidia-smi
needs). Every value comes from a real capture in tests/fixtures/real/ or from
a rule recorded in profile.yml (``derivations`` / ``synthetic``); the captures
are only read.

    python3 -m simulator.build_profiles            # (re)write simulator/profiles/
    python3 -m simulator.build_profiles --check    # exit 1 if the committed profiles differ

The output is deterministic: tests/unit/simulator/test_sim_build_profiles.py
re-runs the derivation and asserts it is byte-identical to what is committed.

The modules: ``sources`` (the captures, their parsers), ``xml_blocks`` (the -q -x XML), ``sysfs`` (sysfs trees, MIG
profile tables), ``assemble`` (profile.yml, sim/, the expected node class), ``profiles`` (the three builders),
``cli`` (build, write, ``--check``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from .sources import (PROFILES_DIR, REAL, REPO, Sources, parse_ibstatus, parse_ibv_devinfo, parse_lgip, parse_q_text,
                      read_real, sha256)
from .xml_blocks import H100_FROM_Q, H100_KEEP, H100_NA, a100_base_block, build_xml, h100_gpu_block, leaf_paths
from .sysfs import gpu_sysfs, ib_device, mig_geometry, mig_tables, pci_device
from .assemble import HEADER, derive_tree, finish, node_class_profile
from .profiles import PROFILES, profile_a100, profile_h100, profile_pcie
from .cli import build_all, compare, main

__all__ = ['PROFILES_DIR', 'REAL', 'REPO', 'Sources', 'parse_ibstatus', 'parse_ibv_devinfo', 'parse_lgip', 'parse_q_text',
           'read_real', 'sha256', 'H100_FROM_Q', 'H100_KEEP', 'H100_NA', 'a100_base_block', 'build_xml', 'h100_gpu_block',
           'leaf_paths', 'gpu_sysfs', 'ib_device', 'mig_geometry', 'mig_tables',
           'pci_device', 'HEADER', 'derive_tree', 'finish', 'node_class_profile', 'PROFILES', 'profile_a100',
           'profile_h100', 'profile_pcie', 'build_all', 'compare', 'main']
