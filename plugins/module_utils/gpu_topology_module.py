# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Option handling shared by the modules that gather GPU topology."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gpuops.node.plugins.module_utils.topology import gather_bundle, gather_live

GATHER_ARGS = dict(
    nvidia_smi=dict(type='str', default='nvidia-smi'),
    sysfs_root=dict(type='path'),
    bundle_dir=dict(type='path'),
)


def gather_for_module(module):
    """Gather ``gpu_topology`` as the module's options say; read-only."""
    params = module.params
    if params['bundle_dir']:
        if not os.path.isdir(params['bundle_dir']):
            module.fail_json(msg='bundle_dir %s is not a directory' % params['bundle_dir'])
        return gather_bundle(params['bundle_dir'], params['sysfs_root'])
    binary = params['nvidia_smi']
    if os.path.sep in binary:
        path = binary if os.access(binary, os.X_OK) else None
    else:
        path = module.get_bin_path(binary, required=False)

    def run(argv):
        # LC_ALL=C keeps the tool's messages in the form the parsers read
        return module.run_command(argv, environ_update={'LC_ALL': 'C'})

    return gather_live(run, path, params['sysfs_root'] or '/sys')
