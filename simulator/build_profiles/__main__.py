# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``python3 -m simulator.build_profiles [--check] [--out DIR] [--unpacked]`` (simulator/build_profiles/cli.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import sys

from .cli import main

if __name__ == '__main__':
    sys.exit(main())
