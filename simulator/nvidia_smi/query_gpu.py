# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``nvidia-smi --query-gpu=... --format=csv``: the fields the simulator answers and their rendering.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from .common import HELP_HINT, INVALID_COMBINATION, RC_BAD_ARG, Exit, bad_argument
from .xmldoc import element_span, get_value


COMPUTE_CAP = {'Hopper': '9.0', 'Ampere': '8.0', 'Pascal': '6.0', 'Volta': '7.0', 'Turing': '7.5',
               'Ada Lovelace': '8.9', 'Blackwell': '10.0'}


def na(value):
    if value is None or value.strip() in ('N/A', '', 'Not Supported'):
        return None
    return value.strip()


def strip_unit(value):
    match = re.match(r'^\s*(-?[0-9.]+)\s*\S*$', value)
    return match.group(1) if match else value


def _hex(prefix):
    def get(ctx):
        value = na(ctx['gpu'].value(prefix))
        return None if value is None else '0x' + value
    return get


def _path(path, unit_kind=None):
    def get(ctx):
        value = na(get_value(ctx['block'], path))
        if value is None:
            return None
        if unit_kind == 'width':
            return value.rstrip('x')
        if unit_kind == 'temp':
            return strip_unit(value)
        return value
    return get


def ecc_total(group, kind):
    def get(ctx):
        block = ctx['block']
        span = element_span(block, 'ecc_errors/' + group)
        if span is None:
            return None
        text = block[span[0]:span[1]]
        if '<double_bit>' in text:
            sub = 'double_bit/total' if kind == 'uncorrectable' else 'single_bit/total'
            return na(get_value(text, sub))
        values = re.findall(r'<(?:sram|dram)_%s>([^<]*)<' % kind, text)
        numbers = [int(v) for v in values if v.strip().isdigit()]
        return str(sum(numbers)) if numbers else None
    return get


# field -> (header unit or None, getter)
QUERY_FIELDS = {
    'index': (None, lambda c: str(c['gpu'].index)),
    'count': (None, lambda c: str(c['count'])),
    'timestamp': (None, lambda c: c['timestamp']),
    'driver_version': (None, lambda c: c['driver_version']),
    'name': (None, _path('product_name')),
    'serial': (None, _path('serial')),
    'uuid': (None, _path('uuid')),
    'pci.bus_id': (None, _path('pci/pci_bus_id')),
    'pci.domain': (None, _hex('pci/pci_domain')),
    'pci.bus': (None, _hex('pci/pci_bus')),
    'pci.device': (None, _hex('pci/pci_device')),
    'pci.device_id': (None, _hex('pci/pci_device_id')),
    'pci.sub_device_id': (None, _hex('pci/pci_sub_system_id')),
    'pcie.link.gen.current': (None, _path('pci/pci_gpu_link_info/pcie_gen/current_link_gen')),
    'pcie.link.gen.max': (None, _path('pci/pci_gpu_link_info/pcie_gen/max_link_gen')),
    'pcie.link.width.current': (None, _path('pci/pci_gpu_link_info/link_widths/current_link_width', 'width')),
    'pcie.link.width.max': (None, _path('pci/pci_gpu_link_info/link_widths/max_link_width', 'width')),
    'display_mode': (None, _path('display_mode')),
    'display_active': (None, _path('display_active')),
    'persistence_mode': (None, _path('persistence_mode')),
    'accounting.mode': (None, _path('accounting_mode')),
    'accounting.buffer_size': (None, _path('accounting_mode_buffer_size')),
    'driver_model.current': (None, _path('driver_model/current_dm')),
    'driver_model.pending': (None, _path('driver_model/pending_dm')),
    'vbios_version': (None, _path('vbios_version')),
    'inforom.img': (None, _path('inforom_version/img_version')),
    'inforom.oem': (None, _path('inforom_version/oem_object')),
    'inforom.ecc': (None, _path('inforom_version/ecc_object')),
    'inforom.pwr': (None, _path('inforom_version/pwr_object')),
    'gom.current': (None, _path('gpu_operation_mode/current_gom')),
    'gom.pending': (None, _path('gpu_operation_mode/pending_gom')),
    'fan.speed': ('%', _path('fan_speed')),
    'pstate': (None, _path('performance_state')),
    'memory.total': ('MiB', _path('fb_memory_usage/total')),
    'memory.reserved': ('MiB', _path('fb_memory_usage/reserved')),
    'memory.used': ('MiB', _path('fb_memory_usage/used')),
    'memory.free': ('MiB', _path('fb_memory_usage/free')),
    'compute_mode': (None, _path('compute_mode')),
    'compute_cap': (None, lambda c: COMPUTE_CAP.get(na(get_value(c['block'], 'product_architecture')) or '')),
    'utilization.gpu': ('%', _path('utilization/gpu_util')),
    'utilization.memory': ('%', _path('utilization/memory_util')),
    'ecc.mode.current': (None, _path('ecc_mode/current_ecc')),
    'ecc.mode.pending': (None, _path('ecc_mode/pending_ecc')),
    'ecc.errors.corrected.volatile.total': (None, ecc_total('volatile', 'correctable')),
    'ecc.errors.corrected.aggregate.total': (None, ecc_total('aggregate', 'correctable')),
    'ecc.errors.uncorrected.volatile.total': (None, ecc_total('volatile', 'uncorrectable')),
    'ecc.errors.uncorrected.aggregate.total': (None, ecc_total('aggregate', 'uncorrectable')),
    'retired_pages.pending': (None, _path('retired_pages/pending_retirement')),
    'temperature.gpu': (None, _path('temperature/gpu_temp', 'temp')),
    'temperature.memory': (None, _path('temperature/memory_temp', 'temp')),
    'power.management': (None, _path('power_readings/power_management')),
    'power.draw': ('W', _path('power_readings/power_draw')),
    'power.limit': ('W', _path('power_readings/power_limit')),
    'enforced.power.limit': ('W', _path('power_readings/enforced_power_limit')),
    'power.default_limit': ('W', _path('power_readings/default_power_limit')),
    'power.min_limit': ('W', _path('power_readings/min_power_limit')),
    'power.max_limit': ('W', _path('power_readings/max_power_limit')),
    'clocks.gr': ('MHz', _path('clocks/graphics_clock')),
    'clocks.sm': ('MHz', _path('clocks/sm_clock')),
    'clocks.mem': ('MHz', _path('clocks/mem_clock')),
    'clocks.video': ('MHz', _path('clocks/video_clock')),
    'clocks.max.gr': ('MHz', _path('max_clocks/graphics_clock')),
    'clocks.max.sm': ('MHz', _path('max_clocks/sm_clock')),
    'clocks.max.mem': ('MHz', _path('max_clocks/mem_clock')),
    'mig.mode.current': (None, _path('mig_mode/current_mig')),
    'mig.mode.pending': (None, _path('mig_mode/pending_mig')),
}
QUERY_ALIASES = {
    'gpu_name': 'name', 'gpu_serial': 'serial', 'gpu_uuid': 'uuid', 'gpu_bus_id': 'pci.bus_id',
    'pcie.link.gen.gpucurrent': 'pcie.link.gen.current', 'pcie.link.gen.gpumax': 'pcie.link.gen.max',
    'memory.total': 'memory.total', 'clocks.current.graphics': 'clocks.gr', 'clocks.current.sm': 'clocks.sm',
    'clocks.current.memory': 'clocks.mem', 'clocks.current.video': 'clocks.video',
    'clocks.max.graphics': 'clocks.max.gr', 'clocks.max.memory': 'clocks.max.mem',
    'utilization.gpu': 'utilization.gpu', 'temperature.gpu': 'temperature.gpu',
    'power.limit': 'power.limit', 'ecc.mode.current': 'ecc.mode.current',
    'driver_model.current': 'driver_model.current', 'performance_state': 'pstate',
    'persistence_mode': 'persistence_mode', 'gpu_recovery_action': None,
}


def render_query_gpu(fields_arg, fmt_arg, gpus, blocks, meta):
    fields = [f.strip() for f in fields_arg.split(',') if f.strip()]
    if not fields:
        raise bad_argument(INVALID_COMBINATION)
    canon = []
    for field in fields:
        name = QUERY_ALIASES.get(field, field) if field in QUERY_ALIASES else field
        if name is None or name not in QUERY_FIELDS:
            raise Exit(RC_BAD_ARG, 'Field "%s" is not a valid field to query.\n\n' % field)
        canon.append((field, name))
    opts = [o.strip() for o in fmt_arg.split(',')]
    if 'csv' not in opts or any(o not in ('csv', 'noheader', 'nounits') for o in opts):
        raise Exit(RC_BAD_ARG, 'ERROR: Option --format=%s is not recognized. %s\n' % (fmt_arg, HELP_HINT))
    noheader = 'noheader' in opts
    nounits = 'nounits' in opts
    lines = []
    if not noheader:
        header = []
        for field, name in canon:
            unit = QUERY_FIELDS[name][0]
            header.append('%s [%s]' % (field, unit) if unit else field)
        lines.append(', '.join(header))
    for gpu, block in zip(gpus, blocks):
        ctx = dict(meta)
        ctx.update({'gpu': gpu, 'block': block})
        row = []
        for _field, name in canon:
            value = QUERY_FIELDS[name][1](ctx)
            if value is None:
                value = '[N/A]'
            elif nounits and QUERY_FIELDS[name][0]:
                value = strip_unit(value)
            row.append(value)
        lines.append(', '.join(row))
    return '\n'.join(lines) + '\n'
