# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    # Options of the plan modules that read what the package manager offers (nccl_plan, dcgm_plan)
    DOCUMENTATION = r'''
options:
  repo_url:
    description:
      - With O(read_packages), count only the versions this repository offers (C(apt-cache madison) on apt); empty,
        every source the package manager has.
    type: str
    default: ''
  repo_id:
    description:
      - On dnf, with O(repo_url), the id of the dnf repository of O(repo_url) (C(dnf repoquery --repo)).
    type: str
    default: ''
'''
