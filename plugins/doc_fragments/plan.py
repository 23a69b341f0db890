# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    # The attributes of the plan modules (*_plan): they read, and decide what their role changes
    DOCUMENTATION = r'''
attributes:
  check_mode:
    support: full
    description: The module only reads (its parameters, and for some what the node reports); it changes nothing.
  diff_mode:
    support: none
    description: The module changes nothing, so it has no difference to show.
'''
