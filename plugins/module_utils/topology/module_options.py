# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Option handling shared by the modules that gather GPU topology."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import platform

from ansible_collections.gpuops.node.plugins.module_utils import command
from ansible_collections.gpuops.node.plugins.module_utils.node import boot_kernel
from ansible_collections.gpuops.node.plugins.module_utils.node.packages import read_installed_driver
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import DEFAULT_TIMEOUT

GATHER_ARGS = dict(
    nvidia_smi=dict(type='str', default='nvidia-smi'),
    sysfs_root=dict(type='path'),
    proc_root=dict(type='path', default='/proc'),
    bundle_dir=dict(type='path'),
    command_timeout=dict(type='int', default=DEFAULT_TIMEOUT),
    dcb=dict(type='str', default='dcb'),
    dcgmi=dict(type='str', default='dcgmi'),
)


def _binary(module, binary, what='nvidia-smi'):
    """(path, None) for a usable binary, else (None, why); (None, None) when it is simply not there."""
    if os.path.sep not in binary:
        return module.get_bin_path(binary, required=False), None
    if not os.path.exists(binary):
        return None, None
    if os.path.isdir(binary) or not os.access(binary, os.X_OK):
        return None, '%s at %s is not an executable file' % (what, binary)
    return binary, None


def gather_for_module(module):
    """Gather ``gpu_topology`` as the module's options say; read-only. Bad options fail before anything runs."""
    params = module.params
    if params['command_timeout'] < 1:
        module.fail_json(msg='command_timeout must be at least 1 (seconds per nvidia-smi call), got %d'
                         % params['command_timeout'])
    for name in ('sysfs_root', 'proc_root'):
        if params[name] and not os.path.isdir(params[name]):
            module.fail_json(msg='%s %s is not a directory' % (name, params[name]))
    if params['bundle_dir']:
        if not os.path.isdir(params['bundle_dir']):
            module.fail_json(msg='bundle_dir %s is not a directory' % params['bundle_dir'])
        return gather_bundle(params['bundle_dir'], params['sysfs_root'])
    path, problem = _binary(module, params['nvidia_smi'])
    dcb, dcb_problem = _binary(module, params['dcb'], 'dcb')
    dcgmi, dcgmi_problem = _binary(module, params['dcgmi'], 'dcgmi')
    timeout = params['command_timeout']
    # bytes: the gathering decodes them (module_utils.rawtext), reporting invalid UTF-8
    run = command.runner(module, timeout=timeout, binary=True)
    boot = {'running': platform.release(), 'modinfo': module.get_bin_path('modinfo', required=False),
            'boot_dir': boot_kernel.BOOT, 'modules_dir': boot_kernel.MODULES}
    topology = gather_live(run, path, params['sysfs_root'] or '/sys', problem, timeout, params['proc_root'],
                           dcb, dcb_problem, dcgmi, dcgmi_problem, boot)
    installed = read_installed_driver(run, lambda name: module.get_bin_path(name, required=False))
    topology['driver_installed'] = installed
    topology['driver_installed_version'] = installed['version'] if installed else None
    return topology
