# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter that turns a ``gpu_topology`` snapshot into what the rack report draws (documented beside)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.node.plugins.module_utils.report.html import drawing_from_topology


def topology_drawing(topology):
    if topology is None:
        return None
    if not isinstance(topology, dict) or 'schema_version' not in topology:
        raise AnsibleFilterError('topology_drawing: the input must be a gpu_topology snapshot or null, got %s'
                                 % type(topology).__name__)
    return drawing_from_topology(topology)


class FilterModule(object):
    def filters(self):
        return {'topology_drawing': topology_drawing}
