# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.node GPU node simulator.

Simulated nodes replay real captured nvidia-smi and sysfs outputs (see
tests/fixtures/real/) through a stateful ``nvidia-smi`` replacement, so GPU
provisioning can be tested without GPUs. See simulator/README.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type
