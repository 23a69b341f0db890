# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the simulator tests (helpers live in simhelpers.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from simhelpers import Node


@pytest.fixture
def node(tmp_path):
    """node(name='h100-sxm-8gpu-ib', faults=[(fault, params), ...]) -> a fresh simulated node."""
    def _make(name='h100-sxm-8gpu-ib', faults=()):
        return Node(tmp_path, name, faults)
    return _make
