# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``nvidia-smi -q``: the text rendering of the effective XML (H100 -q layout).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import xml.etree.ElementTree as ET


LABEL_WIDTH = 42


def _kv(indent, label, value):
    return ('    ' * indent + label).ljust(LABEL_WIDTH) + ': ' + value


class QText(object):
    """Renders ``nvidia-smi -q`` from a parsed <gpu> element, H100 -q layout."""

    def __init__(self, elem):
        self.elem = elem
        self.lines = []

    def val(self, path):
        node = self.elem.find(path)
        if node is None:
            return None
        text = node.text or ''
        return ' '.join(text.split())

    def kv(self, indent, label, path, transform=None):
        value = self.val(path)
        if value is None:
            return
        if transform is not None:
            value = transform(value)
        self.lines.append(_kv(indent, label, value))

    def section(self, indent, title, path, fields, trailing_space=False):
        """Title line plus ``fields`` [(label, subpath)] when ``path`` exists."""
        node = self.elem.find(path) if path else self.elem
        if node is None:
            return
        if path and len(node) == 0:
            # <remapped_rows>N/A</remapped_rows> style
            self.lines.append(_kv(indent, title, ' '.join((node.text or '').split())))
            return
        self.lines.append('    ' * indent + title + (' ' if trailing_space else ''))
        for label, sub in fields:
            self.kv(indent + 1, label, (path + '/' + sub) if path else sub)

    def render(self):
        add = self.lines.append
        self.kv(1, 'Product Name', 'product_name')
        self.kv(1, 'Product Brand', 'product_brand')
        self.kv(1, 'Product Architecture', 'product_architecture')
        self.kv(1, 'Display Mode', 'display_mode')
        self.kv(1, 'Display Active', 'display_active')
        self.kv(1, 'Persistence Mode', 'persistence_mode')
        self.kv(1, 'Addressing Mode', 'addressing_mode')
        self.section(1, 'MIG Mode', 'mig_mode', [('Current', 'current_mig'), ('Pending', 'pending_mig')])
        if self.val('mig_mode/current_mig') == 'Enabled':
            self.mig_devices()
        self.kv(1, 'Accounting Mode', 'accounting_mode')
        self.kv(1, 'Accounting Mode Buffer Size', 'accounting_mode_buffer_size')
        self.section(1, 'Driver Model', 'driver_model', [('Current', 'current_dm'), ('Pending', 'pending_dm')])
        self.kv(1, 'Serial Number', 'serial')
        self.kv(1, 'GPU UUID', 'uuid')
        self.kv(1, 'Minor Number', 'minor_number')
        self.kv(1, 'VBIOS Version', 'vbios_version')
        self.kv(1, 'MultiGPU Board', 'multigpu_board')
        self.kv(1, 'Board ID', 'board_id')
        self.kv(1, 'Board Part Number', 'gpu_part_number')
        self.kv(1, 'Module ID', 'gpu_module_id')
        self.section(1, 'Inforom Version', 'inforom_version', [
            ('Image Version', 'img_version'), ('OEM Object', 'oem_object'),
            ('ECC Object', 'ecc_object'), ('Power Management Object', 'pwr_object')])
        self.section(1, 'GPU Operation Mode', 'gpu_operation_mode',
                     [('Current', 'current_gom'), ('Pending', 'pending_gom')])
        self.kv(1, 'GSP Firmware Version', 'gsp_firmware_version')
        self.section(1, 'GPU Virtualization Mode', 'gpu_virtualization_mode', [
            ('Virtualization Mode', 'virtualization_mode'), ('Host VGPU Mode', 'host_vgpu_mode')])
        self.section(1, 'IBMNPU', 'ibmnpu', [('Relaxed Ordering Mode', 'relaxed_ordering_mode')])
        if self.elem.find('pci') is not None:
            add('    PCI')
            self.kv(2, 'Bus', 'pci/pci_bus', lambda v: '0x' + v)
            self.kv(2, 'Device', 'pci/pci_device', lambda v: '0x' + v)
            self.kv(2, 'Domain', 'pci/pci_domain', lambda v: '0x' + v)
            self.kv(2, 'Device Id', 'pci/pci_device_id', lambda v: '0x' + v)
            self.kv(2, 'Bus Id', 'pci/pci_bus_id')
            self.kv(2, 'Sub System Id', 'pci/pci_sub_system_id', lambda v: '0x' + v)
            if self.elem.find('pci/pci_gpu_link_info') is not None:
                add('        GPU Link Info')
                self.section(3, 'PCIe Generation', 'pci/pci_gpu_link_info/pcie_gen',
                             [('Max', 'max_link_gen'), ('Current', 'current_link_gen')])
                self.section(3, 'Link Width', 'pci/pci_gpu_link_info/link_widths',
                             [('Max', 'max_link_width'), ('Current', 'current_link_width')])
            self.section(2, 'Bridge Chip', 'pci/pci_bridge_chip',
                         [('Type', 'bridge_chip_type'), ('Firmware', 'bridge_chip_fw')])
            self.kv(2, 'Replays Since Reset', 'pci/replay_counter')
            self.kv(2, 'Replay Number Rollovers', 'pci/replay_rollover_counter')
            self.kv(2, 'Tx Throughput', 'pci/tx_util')
            self.kv(2, 'Rx Throughput', 'pci/rx_util')
        self.kv(1, 'Fan Speed', 'fan_speed')
        self.kv(1, 'Performance State', 'performance_state')
        reasons = self.elem.find('clocks_throttle_reasons')
        prefix = 'clocks_throttle_reason_'
        if reasons is None:
            reasons = self.elem.find('clocks_event_reasons')
            prefix = 'clocks_event_reason_'
        if reasons is not None:
            add('    Clocks Event Reasons')
            base = reasons.tag
            for label, tag, indent in (
                    ('Idle', 'gpu_idle', 2), ('Applications Clocks Setting', 'applications_clocks_setting', 2),
                    ('SW Power Cap', 'sw_power_cap', 2), ('HW Slowdown', 'hw_slowdown', 2),
                    ('HW Thermal Slowdown', 'hw_thermal_slowdown', 3),
                    ('HW Power Brake Slowdown', 'hw_power_brake_slowdown', 3),
                    ('Sync Boost', 'sync_boost', 2), ('SW Thermal Slowdown', 'sw_thermal_slowdown', 2),
                    ('Display Clock Setting', 'display_clocks_setting', 2)):
                self.kv(indent, label, base + '/' + prefix + tag)
        self.section(1, 'FB Memory Usage', 'fb_memory_usage',
                     [('Total', 'total'), ('Reserved', 'reserved'), ('Used', 'used'), ('Free', 'free')])
        self.section(1, 'BAR1 Memory Usage', 'bar1_memory_usage',
                     [('Total', 'total'), ('Used', 'used'), ('Free', 'free')])
        self.kv(1, 'Compute Mode', 'compute_mode')
        self.section(1, 'Utilization', 'utilization', [
            ('Gpu', 'gpu_util'), ('Memory', 'memory_util'), ('Encoder', 'encoder_util'),
            ('Decoder', 'decoder_util')])
        stats = [('Active Sessions', 'session_count'), ('Average FPS', 'average_fps'),
                 ('Average Latency', 'average_latency')]
        self.section(1, 'Encoder Stats', 'encoder_stats', stats)
        self.section(1, 'FBC Stats', 'fbc_stats', stats)
        self.section(1, 'ECC Mode', 'ecc_mode', [('Current', 'current_ecc'), ('Pending', 'pending_ecc')])
        self.ecc_errors()
        if self.elem.find('retired_pages') is not None:
            add('    Retired Pages')
            self.kv(2, 'Single Bit ECC', 'retired_pages/multiple_single_bit_retirement/retired_count')
            self.kv(2, 'Double Bit ECC', 'retired_pages/double_bit_retirement/retired_count')
            self.kv(2, 'Pending Page Blacklist', 'retired_pages/pending_blacklist')
        self.section(1, 'Remapped Rows', 'remapped_rows', [
            ('Correctable Error', 'remapped_row_corr'), ('Uncorrectable Error', 'remapped_row_unc'),
            ('Pending', 'remapped_row_pending'), ('Remapping Failure Occurred', 'remapped_row_failure')])
        self.section(1, 'Temperature', 'temperature', [
            ('GPU Current Temp', 'gpu_temp'), ('GPU Shutdown Temp', 'gpu_temp_max_threshold'),
            ('GPU Slowdown Temp', 'gpu_temp_slow_threshold'),
            ('GPU Max Operating Temp', 'gpu_temp_max_gpu_threshold'),
            ('GPU Target Temperature', 'gpu_target_temperature'), ('Memory Current Temp', 'memory_temp'),
            ('Memory Max Operating Temp', 'gpu_temp_max_mem_threshold')])
        self.section(1, 'GPU Power Readings', 'power_readings', [
            ('Power Draw', 'power_draw'), ('Current Power Limit', 'enforced_power_limit'),
            ('Requested Power Limit', 'power_limit'), ('Default Power Limit', 'default_power_limit'),
            ('Min Power Limit', 'min_power_limit'), ('Max Power Limit', 'max_power_limit')])
        four = [('Graphics', 'graphics_clock'), ('SM', 'sm_clock'), ('Memory', 'mem_clock'),
                ('Video', 'video_clock')]
        two = [('Graphics', 'graphics_clock'), ('Memory', 'mem_clock')]
        self.section(1, 'Clocks', 'clocks', four)
        self.section(1, 'Applications Clocks', 'applications_clocks', two)
        self.section(1, 'Default Applications Clocks', 'default_applications_clocks', two)
        self.section(1, 'Max Clocks', 'max_clocks', four)
        self.section(1, 'Max Customer Boost Clocks', 'max_customer_boost_clocks', [('Graphics', 'graphics_clock')])
        self.section(1, 'Clock Policy', 'clock_policy',
                     [('Auto Boost', 'auto_boost'), ('Auto Boost Default', 'auto_boost_default')])
        self.section(1, 'Voltage', 'voltage', [('Graphics', 'graphics_volt')])
        procs = self.elem.find('processes')
        if procs is not None:
            if len(procs) == 0:
                add(_kv(1, 'Processes', 'None'))
            else:
                add('    Processes')
        return self.lines

    def ecc_errors(self):
        errors = self.elem.find('ecc_errors')
        if errors is None:
            return
        self.lines.append('    ECC Errors')
        names = {
            'sram_correctable': 'SRAM Correctable', 'sram_uncorrectable': 'SRAM Uncorrectable',
            'dram_correctable': 'DRAM Correctable', 'dram_uncorrectable': 'DRAM Uncorrectable',
            'single_bit': 'Single Bit', 'double_bit': 'Double Bit', 'device_memory': 'Device Memory',
            'register_file': 'Register File', 'l1_cache': 'L1 Cache', 'l2_cache': 'L2 Cache',
            'texture_memory': 'Texture Memory', 'texture_shm': 'Texture Shared', 'cbu': 'CBU',
            'total': 'Total',
        }
        for group, title in (('volatile', 'Volatile'), ('aggregate', 'Aggregate')):
            node = errors.find(group)
            if node is None:
                continue
            self.lines.append('        ' + title)
            for child in node:
                label = names.get(child.tag, child.tag.replace('_', ' ').title())
                if len(child):
                    self.lines.append('            ' + label)
                    for leaf in child:
                        self.lines.append(_kv(4, names.get(leaf.tag, leaf.tag), ' '.join((leaf.text or '').split())))
                else:
                    self.lines.append(_kv(3, label, ' '.join((child.text or '').split())))

    def mig_devices(self):
        devices = self.elem.findall('mig_devices/mig_device')
        if not devices:
            self.lines.append(_kv(1, 'MIG Devices', 'None'))
            return
        add = self.lines.append
        add('    MIG Devices')
        for dev in devices:
            sub = QText(dev)
            add('        MIG Device')
            sub.kv(3, 'Index', 'index')
            sub.kv(3, 'GPU Instance ID', 'gpu_instance_id')
            sub.kv(3, 'Compute Instance ID', 'compute_instance_id')
            sub.lines.append('            Device Attributes')
            sub.section(4, 'Shared', 'device_attributes/shared', [
                ('Multiprocessor count', 'multiprocessor_count'), ('Copy Engine count', 'copy_engine_count'),
                ('Encoder count', 'encoder_count'), ('Decoder count', 'decoder_count'),
                ('OFA count', 'ofa_count'), ('JPG count', 'jpg_count')])
            sub.lines.append('            ECC Errors')
            sub.section(4, 'Volatile', 'ecc_error_count/volatile_count',
                        [('SRAM Uncorrectable', 'sram_uncorrectable')])
            sub.section(3, 'FB Memory Usage', 'fb_memory_usage',
                        [('Total', 'total'), ('Reserved', 'reserved'), ('Used', 'used'), ('Free', 'free')])
            sub.section(3, 'BAR1 Memory Usage', 'bar1_memory_usage',
                        [('Total', 'total'), ('Used', 'used'), ('Free', 'free')])
            self.lines.extend(sub.lines)


def render_q_text(xml_text):
    root = ET.fromstring(xml_text.encode('utf-8'))

    def top(tag):
        node = root.find(tag)
        return ' '.join((node.text or '').split()) if node is not None else 'N/A'

    lines = ['==============NVSMI LOG==============',
             _kv(0, 'Timestamp', top('timestamp')),
             _kv(0, 'Driver Version', top('driver_version')),
             _kv(0, 'CUDA Version', top('cuda_version')),
             '',
             _kv(0, 'Attached GPUs', top('attached_gpus'))]
    for i, gpu in enumerate(root.findall('gpu')):
        if i:
            lines.append('')
        lines.append('GPU %s' % gpu.get('id'))
        lines.extend(QText(gpu).render())
    return '\n'.join(lines) + '\n'
