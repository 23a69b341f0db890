# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``nvidia-smi`` without arguments: the default table, 570-driver layout.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from .common import sim_driver
from .mig import MEMORY_SLOTS, mig_devices
from .query_gpu import ecc_total, na, strip_unit
from .state import mib
from .xmldoc import get_value


def _short(value, default='N/A'):
    value = na(value)
    return default if value is None else value


def render_table(profile, state, gpus, blocks):
    """``nvidia-smi`` without arguments; columns as in the real 570/610-driver tables."""
    head = profile.xml.head
    driver = get_value(head, 'driver_version') or 'N/A'
    cuda = get_value(head, 'cuda_version') or 'N/A'
    rule = '+' + '-' * 89 + '+'
    sep = '+-----------------------------------------+------------------------+----------------------+'
    mig_sep = '+------------------+----------------------------------+-----------+-----------------------+'
    lines = [get_value(head, 'timestamp') or '', rule,
             '| NVIDIA-SMI ' + driver.ljust(23) + 'Driver Version: ' + driver.ljust(15) + 'CUDA Version: '
             + cuda.ljust(9) + '|',
             '|-----------------------------------------+------------------------+----------------------+',
             '| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |',
             '| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |',
             '|                                         |                        |               MIG M. |',
             '|=========================================+========================+======================|']
    mig_rows = []
    for gpu, block in zip(gpus, blocks):
        name = get_value(block, 'product_name') or ''
        if len(name) > 27:
            name = name[:24] + '...'
        pers = 'On' if get_value(block, 'persistence_mode') == 'Enabled' else 'Off'
        disp = 'On' if get_value(block, 'display_active') == 'Enabled' else 'Off'
        mig = get_value(block, 'mig_mode/current_mig')
        ecc_on = get_value(block, 'ecc_mode/current_ecc') == 'Enabled'
        if mig == 'Enabled':
            ecc = 'On' if ecc_on else 'Off'
        elif ecc_on:
            ecc = ecc_total('volatile', 'uncorrectable')({'block': block}) or 'N/A'
        else:
            ecc = 'Off'

        def short(path):
            value = na(get_value(block, path))
            return 'N/A' if value is None else value.replace(' ', '')

        def watts(path):
            value = na(get_value(block, path))
            return 'N/A' if value is None else '%dW' % int(round(float(strip_unit(value))))
        used = mib(get_value(block, 'fb_memory_usage/used')) or 0
        total = mib(get_value(block, 'fb_memory_usage/total')) or 0
        compute = _short(get_value(block, 'compute_mode'))
        mig_text = mig if mig in ('Enabled', 'Disabled') else 'N/A'
        lines.append('|' + ('%d' % gpu.index).rjust(4) + '  ' + name.ljust(31) + pers.ljust(3) + ' |   '
                     + gpu.bus_id + ' ' + disp.ljust(3) + ' |' + ecc.rjust(21) + ' |')
        lines.append('| ' + short('fan_speed').ljust(3) + short('temperature/gpu_temp').rjust(6)
                     + short('performance_state').rjust(6) + watts('power_readings/power_draw').rjust(16) + ' / '
                     + watts('power_readings/enforced_power_limit').rjust(5) + ' |'
                     + ('%dMiB' % used).rjust(11) + ' / ' + ('%dMiB' % total).rjust(9) + ' |'
                     + short('utilization/gpu_util').rjust(8) + compute.rjust(13) + ' |')
        lines.append('|' + ' ' * 41 + '|' + ' ' * 24 + '|' + mig_text.rjust(21) + ' |')
        lines.append(sep)
        table = profile.mig_table(gpu.name)
        if mig == 'Enabled' and table:
            for dev_index, (gi, ci, prof) in enumerate(mig_devices(table, state.gpu(gpu.bus_id)['gpu_instances'])):
                mig_rows.append((gpu.index, gi, ci, dev_index, prof, block))
    if mig_rows:
        lines += ['', rule,
                  '| MIG devices:' + ' ' * 76 + '|',
                  mig_sep,
                  '| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|        Shared         |',
                  '|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |',
                  '|                  |                                  |        ECC|                       |',
                  '|==================+==================================+===========+=======================|']
        for gpu_index, gi, ci, dev_index, prof, block in mig_rows:
            total = int(round(float(prof['memory_gib']) * 1024))
            used = prof.get('fb_used_mib') or 0
            bar1_total = mib(get_value(block, 'bar1_memory_usage/total')) or 0
            bar1 = bar1_total * prof['mem_slots'] // MEMORY_SLOTS - 1 if bar1_total else 0
            lines.append('|' + ('%d' % gpu_index).rjust(3) + ('%d' % gi['id']).rjust(5) + ('%d' % ci['id']).rjust(4)
                         + ('%d' % dev_index).rjust(4) + '  |' + ('%dMiB' % used).rjust(19) + ' / '
                         + ('%dMiB' % total).rjust(8) + '    | ' + ('%d' % prof['sm']).rjust(2) + '0'.rjust(7)
                         + ' |' + ('%d' % prof['ce']).rjust(3) + ('%d' % prof['enc']).rjust(4)
                         + ('%d' % prof['dec']).rjust(5) + ('%d' % prof['ofa']).rjust(5)
                         + ('%d' % prof['jpeg']).rjust(5) + ' |')
            lines.append('|' + ' ' * 18 + '|' + '0MiB'.rjust(21) + ' / ' + ('%dMiB' % bar1).rjust(8) + '  |'
                         + ' ' * 11 + '|' + ' ' * 23 + '|')
            lines.append(mig_sep)
    procs = [r for g in gpus if sim_driver is not None for r in sim_driver.process_rows(g.index, state.gpu(g.bus_id).get('processes') or [])]
    lines += ['', rule,
              '| Processes:                                                                              |',
              '|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |',
              '|        ID   ID                                                               Usage      |',
              '|=========================================================================================|']
    lines += procs or ['|  No running processes found                                                             |']
    lines += [rule]
    return '\n'.join(lines) + '\n'
