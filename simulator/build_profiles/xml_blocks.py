# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``nvidia-smi -q -x`` XML of the profiles: the H100 -q capture rendered into the A100 XML template,
the A100 base block with MIG off, the per-GPU identities (UUID, serial, bus, module id) and the document.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import uuid

from .. import nvidia_smi


def _strip0x(value):
    return value[2:] if value.lower().startswith('0x') else value


# template path -> H100 "-q" label path (or a fixed value with a reason)
H100_FROM_Q = [
    ('product_name', 'Product Name'),
    ('product_brand', 'Product Brand'),
    ('product_architecture', 'Product Architecture'),
    ('display_mode', 'Display Mode'),
    ('display_active', 'Display Active'),
    ('persistence_mode', 'Persistence Mode'),
    ('mig_mode/current_mig', 'MIG Mode/Current'),
    ('mig_mode/pending_mig', 'MIG Mode/Pending'),
    ('accounting_mode', 'Accounting Mode'),
    ('accounting_mode_buffer_size', 'Accounting Mode Buffer Size'),
    ('driver_model/current_dm', 'Driver Model/Current'),
    ('driver_model/pending_dm', 'Driver Model/Pending'),
    ('serial', 'Serial Number'),
    ('uuid', 'GPU UUID'),
    ('minor_number', 'Minor Number'),
    ('vbios_version', 'VBIOS Version'),
    ('multigpu_board', 'MultiGPU Board'),
    ('board_id', 'Board ID'),
    ('gpu_part_number', 'Board Part Number'),
    ('gpu_module_id', 'Module ID'),
    ('inforom_version/img_version', 'Inforom Version/Image Version'),
    ('inforom_version/oem_object', 'Inforom Version/OEM Object'),
    ('inforom_version/ecc_object', 'Inforom Version/ECC Object'),
    ('inforom_version/pwr_object', 'Inforom Version/Power Management Object'),
    ('gpu_operation_mode/current_gom', 'GPU Operation Mode/Current'),
    ('gpu_operation_mode/pending_gom', 'GPU Operation Mode/Pending'),
    ('gsp_firmware_version', 'GSP Firmware Version'),
    ('gpu_virtualization_mode/virtualization_mode', 'GPU Virtualization Mode/Virtualization Mode'),
    ('gpu_virtualization_mode/host_vgpu_mode', 'GPU Virtualization Mode/Host VGPU Mode'),
    ('ibmnpu/relaxed_ordering_mode', 'IBMNPU/Relaxed Ordering Mode'),
    ('pci/pci_bus', 'PCI/Bus', _strip0x),
    ('pci/pci_device', 'PCI/Device', _strip0x),
    ('pci/pci_domain', 'PCI/Domain', _strip0x),
    ('pci/pci_device_id', 'PCI/Device Id', _strip0x),
    ('pci/pci_bus_id', 'PCI/Bus Id'),
    ('pci/pci_sub_system_id', 'PCI/Sub System Id', _strip0x),
    ('pci/pci_gpu_link_info/pcie_gen/max_link_gen', 'PCI/GPU Link Info/PCIe Generation/Max'),
    ('pci/pci_gpu_link_info/pcie_gen/current_link_gen', 'PCI/GPU Link Info/PCIe Generation/Current'),
    ('pci/pci_gpu_link_info/link_widths/max_link_width', 'PCI/GPU Link Info/Link Width/Max'),
    ('pci/pci_gpu_link_info/link_widths/current_link_width', 'PCI/GPU Link Info/Link Width/Current'),
    ('pci/pci_bridge_chip/bridge_chip_type', 'PCI/Bridge Chip/Type'),
    ('pci/pci_bridge_chip/bridge_chip_fw', 'PCI/Bridge Chip/Firmware'),
    ('pci/replay_counter', 'PCI/Replays Since Reset'),
    ('pci/replay_rollover_counter', 'PCI/Replay Number Rollovers'),
    ('pci/tx_util', 'PCI/Tx Throughput'),
    ('pci/rx_util', 'PCI/Rx Throughput'),
    ('fan_speed', 'Fan Speed'),
    ('performance_state', 'Performance State'),
    ('clocks_throttle_reasons/clocks_throttle_reason_gpu_idle', 'Clocks Event Reasons/Idle'),
    ('clocks_throttle_reasons/clocks_throttle_reason_applications_clocks_setting',
     'Clocks Event Reasons/Applications Clocks Setting'),
    ('clocks_throttle_reasons/clocks_throttle_reason_sw_power_cap', 'Clocks Event Reasons/SW Power Cap'),
    ('clocks_throttle_reasons/clocks_throttle_reason_hw_slowdown', 'Clocks Event Reasons/HW Slowdown'),
    ('clocks_throttle_reasons/clocks_throttle_reason_hw_thermal_slowdown',
     'Clocks Event Reasons/HW Slowdown/HW Thermal Slowdown'),
    ('clocks_throttle_reasons/clocks_throttle_reason_hw_power_brake_slowdown',
     'Clocks Event Reasons/HW Slowdown/HW Power Brake Slowdown'),
    ('clocks_throttle_reasons/clocks_throttle_reason_sync_boost', 'Clocks Event Reasons/Sync Boost'),
    ('clocks_throttle_reasons/clocks_throttle_reason_sw_thermal_slowdown',
     'Clocks Event Reasons/SW Thermal Slowdown'),
    ('clocks_throttle_reasons/clocks_throttle_reason_display_clocks_setting',
     'Clocks Event Reasons/Display Clock Setting'),
    ('fb_memory_usage/total', 'FB Memory Usage/Total'),
    ('fb_memory_usage/reserved', 'FB Memory Usage/Reserved'),
    ('fb_memory_usage/used', 'FB Memory Usage/Used'),
    ('fb_memory_usage/free', 'FB Memory Usage/Free'),
    ('bar1_memory_usage/total', 'BAR1 Memory Usage/Total'),
    ('bar1_memory_usage/used', 'BAR1 Memory Usage/Used'),
    ('bar1_memory_usage/free', 'BAR1 Memory Usage/Free'),
    ('compute_mode', 'Compute Mode'),
    ('utilization/gpu_util', 'Utilization/Gpu'),
    ('utilization/memory_util', 'Utilization/Memory'),
    ('utilization/encoder_util', 'Utilization/Encoder'),
    ('utilization/decoder_util', 'Utilization/Decoder'),
    ('encoder_stats/session_count', 'Encoder Stats/Active Sessions'),
    ('encoder_stats/average_fps', 'Encoder Stats/Average FPS'),
    ('encoder_stats/average_latency', 'Encoder Stats/Average Latency'),
    ('fbc_stats/session_count', 'FBC Stats/Active Sessions'),
    ('fbc_stats/average_fps', 'FBC Stats/Average FPS'),
    ('fbc_stats/average_latency', 'FBC Stats/Average Latency'),
    ('ecc_mode/current_ecc', 'ECC Mode/Current'),
    ('ecc_mode/pending_ecc', 'ECC Mode/Pending'),
    ('ecc_errors/volatile/sram_correctable', 'ECC Errors/Volatile/SRAM Correctable'),
    ('ecc_errors/volatile/sram_uncorrectable', 'ECC Errors/Volatile/SRAM Uncorrectable'),
    ('ecc_errors/volatile/dram_correctable', 'ECC Errors/Volatile/DRAM Correctable'),
    ('ecc_errors/volatile/dram_uncorrectable', 'ECC Errors/Volatile/DRAM Uncorrectable'),
    ('ecc_errors/aggregate/sram_correctable', 'ECC Errors/Aggregate/SRAM Correctable'),
    ('ecc_errors/aggregate/sram_uncorrectable', 'ECC Errors/Aggregate/SRAM Uncorrectable'),
    ('ecc_errors/aggregate/dram_correctable', 'ECC Errors/Aggregate/DRAM Correctable'),
    ('ecc_errors/aggregate/dram_uncorrectable', 'ECC Errors/Aggregate/DRAM Uncorrectable'),
    ('retired_pages/multiple_single_bit_retirement/retired_count', 'Retired Pages/Single Bit ECC'),
    ('retired_pages/double_bit_retirement/retired_count', 'Retired Pages/Double Bit ECC'),
    ('retired_pages/pending_blacklist', 'Retired Pages/Pending Page Blacklist'),
    ('temperature/gpu_temp', 'Temperature/GPU Current Temp'),
    ('temperature/gpu_target_temperature', 'Temperature/GPU Target Temperature'),
    ('temperature/memory_temp', 'Temperature/Memory Current Temp'),
    ('power_readings/power_state', 'Performance State'),
    ('power_readings/power_draw', 'GPU Power Readings/Power Draw'),
    ('power_readings/power_limit', 'GPU Power Readings/Requested Power Limit'),
    ('power_readings/default_power_limit', 'GPU Power Readings/Default Power Limit'),
    ('power_readings/enforced_power_limit', 'GPU Power Readings/Current Power Limit'),
    ('power_readings/min_power_limit', 'GPU Power Readings/Min Power Limit'),
    ('power_readings/max_power_limit', 'GPU Power Readings/Max Power Limit'),
    ('clocks/graphics_clock', 'Clocks/Graphics'),
    ('clocks/sm_clock', 'Clocks/SM'),
    ('clocks/mem_clock', 'Clocks/Memory'),
    ('clocks/video_clock', 'Clocks/Video'),
    ('applications_clocks/graphics_clock', 'Applications Clocks/Graphics'),
    ('applications_clocks/mem_clock', 'Applications Clocks/Memory'),
    ('default_applications_clocks/graphics_clock', 'Default Applications Clocks/Graphics'),
    ('default_applications_clocks/mem_clock', 'Default Applications Clocks/Memory'),
    ('max_clocks/graphics_clock', 'Max Clocks/Graphics'),
    ('max_clocks/sm_clock', 'Max Clocks/SM'),
    ('max_clocks/mem_clock', 'Max Clocks/Memory'),
    ('max_clocks/video_clock', 'Max Clocks/Video'),
    ('max_customer_boost_clocks/graphics_clock', 'Max Customer Boost Clocks/Graphics'),
    ('clock_policy/auto_boost', 'Clock Policy/Auto Boost'),
    ('clock_policy/auto_boost_default', 'Clock Policy/Auto Boost Default'),
    ('voltage/graphics_volt', 'Voltage/Graphics'),
]
# Template leaves the H100 -q capture has no value for: set to N/A (never an A100 value).
H100_NA = [
    'temperature/gpu_temp_max_threshold', 'temperature/gpu_temp_slow_threshold',
    'temperature/gpu_temp_max_gpu_threshold', 'temperature/gpu_temp_max_mem_threshold',
]
# Template leaves kept as they are (N/A or structure in the template, same meaning on H100).
H100_KEEP = [
    'retired_pages/multiple_single_bit_retirement/retired_pagelist',
    'retired_pages/double_bit_retirement/retired_pagelist', 'retired_pages/pending_retirement',
    'supported_gpu_target_temp/gpu_target_temp_min', 'supported_gpu_target_temp/gpu_target_temp_max',
    'power_readings/power_management',
]


def leaf_paths(block):
    """Slash paths of every leaf element of a <gpu> block (ElementTree)."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(block.encode('utf-8'))
    paths = []

    def walk(elem, prefix):
        for child in elem:
            path = prefix + child.tag
            if len(child):
                walk(child, path + '/')
            else:
                paths.append(path)
    walk(root, '')
    return paths


def remapped_rows_element(indent, unit, corr='0', unc='0', pending='No', failure='No'):
    inner = indent + unit
    return '\n'.join([
        '<remapped_rows>',
        inner + '<remapped_row_corr>%s</remapped_row_corr>' % corr,
        inner + '<remapped_row_unc>%s</remapped_row_unc>' % unc,
        inner + '<remapped_row_pending>%s</remapped_row_pending>' % pending,
        inner + '<remapped_row_failure>%s</remapped_row_failure>' % failure,
        indent + '</remapped_rows>'])


def no_mig_devices(block):
    indent = nvidia_smi.element_indent(block, 'mig_devices')
    unit = nvidia_smi.block_unit(block)
    return nvidia_smi.replace_element(block, 'mig_devices', '<mig_devices>\n%s%sNone\n%s</mig_devices>'
                                      % (indent, unit, indent))


def h100_gpu_block(template_block, q):
    """The A100 template <gpu> block carrying the H100 -q capture's values."""
    block = template_block
    done = set()
    for entry in H100_FROM_Q:
        path, label = entry[0], entry[1]
        value = q[label]
        if len(entry) > 2:
            value = entry[2](value)
        block = nvidia_smi.set_value(block, path, value)
        done.add(path)
    for path in H100_NA:
        block = nvidia_smi.set_value(block, path, 'N/A')
        done.add(path)
    done.update(H100_KEEP)
    block = re.sub(r'<gpu id="[^"]*">', '<gpu id="%s">' % q['PCI/Bus Id'], block, count=1)
    block = no_mig_devices(block)
    indent = nvidia_smi.element_indent(block, 'remapped_rows')
    block = nvidia_smi.replace_element(block, 'remapped_rows', remapped_rows_element(
        indent, nvidia_smi.block_unit(block), q['Remapped Rows/Correctable Error'], q['Remapped Rows/Uncorrectable Error'],
        q['Remapped Rows/Pending'], q['Remapped Rows/Remapping Failure Occurred']))
    block = nvidia_smi.replace_element(block, 'supported_clocks', '<supported_clocks>N/A</supported_clocks>')
    structural = ('mig_devices', 'remapped_rows', 'supported_clocks', 'processes', 'accounted_processes')
    leftover = [p for p in leaf_paths(template_block)
                if p not in done and not p.split('/')[0] in structural]
    if leftover:
        raise RuntimeError('A100 template values with no H100 source: %s' % leftover)
    return block


def a100_base_block(template_block):
    """The real A100 <gpu> block with MIG turned off (base profile)."""
    block = template_block
    block = nvidia_smi.set_value(block, 'mig_mode/current_mig', 'Disabled')
    block = nvidia_smi.set_value(block, 'mig_mode/pending_mig', 'Disabled')
    block = no_mig_devices(block)
    for path in ('ecc_errors/volatile/sram_correctable', 'ecc_errors/volatile/sram_uncorrectable',
                 'ecc_errors/volatile/dram_correctable', 'ecc_errors/volatile/dram_uncorrectable'):
        block = nvidia_smi.set_value(block, path, '0')
    indent = nvidia_smi.element_indent(block, 'remapped_rows')
    block = nvidia_smi.replace_element(block, 'remapped_rows', remapped_rows_element(indent, nvidia_smi.block_unit(block)))
    # the capture carries a line break inside one value (fixture artefact, see its .source)
    path = 'clocks_throttle_reasons/clocks_throttle_reason_applications_clocks_setting'
    block = nvidia_smi.set_value(block, path, nvidia_smi.get_value(block, path))
    return block


def derive_uuid(profile, real_uuid, index):
    if index == 0:
        return real_uuid
    return 'GPU-%s' % uuid.uuid5(uuid.NAMESPACE_URL, 'gpuops-sim:%s:%s:%d' % (profile, real_uuid, index))


def module_ids(real, count):
    return [real] + [m for m in range(1, count + 1) if m != real][:count - 1]


def gpu_identity_block(block, bus, device, serial, gpu_uuid, minor, module_id):
    bus_id = '00000000:%02X:%02X.0' % (bus, device)
    block = re.sub(r'<gpu id="[^"]*">', '<gpu id="%s">' % bus_id, block, count=1)
    block = nvidia_smi.set_value(block, 'pci/pci_bus_id', bus_id)
    block = nvidia_smi.set_value(block, 'pci/pci_bus', '%02X' % bus)
    block = nvidia_smi.set_value(block, 'pci/pci_device', '%02X' % device)
    block = nvidia_smi.set_value(block, 'serial', serial)
    block = nvidia_smi.set_value(block, 'uuid', gpu_uuid)
    block = nvidia_smi.set_value(block, 'minor_number', str(minor))
    block = nvidia_smi.set_value(block, 'board_id', '0x%X' % ((bus << 8) | device))
    block = nvidia_smi.set_value(block, 'gpu_module_id', str(module_id))
    return block, bus_id


def build_xml(template_text, gpu_blocks, head_values):
    doc = nvidia_smi.XmlDoc(template_text)
    head = doc.head
    for path, value in head_values:
        head = nvidia_smi.set_value(head, path, value)
    doc.head = head
    doc.seps = [doc.tail[:doc.tail.index('<')]] * (len(gpu_blocks) - 1) if len(gpu_blocks) > 1 else []
    # the real tool separates <gpu> elements with the same blank line it prints before </nvidia_smi_log>
    text = doc.render(gpu_blocks)
    if not text.endswith('\n'):
        text += '\n'
    return text
