# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``nvidia-smi -q -x`` (XML)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

COMMAND = 'nvidia-smi -q -x'

# printed where a value does not apply or is not supported: null in the facts
_NA = ('N/A', '', '[N/A]', '[Not Supported]', 'Not Supported')
# printed where a value exists but could not be read (NVML error): null, and listed in the GPU's ``unreadable``
_ERROR_RE = re.compile(r'^\[.*\]$|^Unknown Error$|^GPU requires reset$|^GPU is lost$|^ERR!$', re.IGNORECASE)


def _text(elem, path, unreadable=None):
    """Text of ``path`` under ``elem``; None when absent, N/A or an error such as ``[Unknown Error]``.

    An error value is appended to ``unreadable`` as ``path: value`` when a list is given.
    """
    if elem is None:
        return None
    node = elem.find(path)
    if node is None or node.text is None:
        return None
    value = node.text.strip()
    if value in _NA:
        return None
    if _ERROR_RE.match(value):
        if unreadable is not None:
            unreadable.append('%s: %s' % (path, value))
        return None
    return value


def _first_text(elem, paths):
    for path in paths:
        value = _text(elem, path)
        if value is not None:
            return value
    return None


def _int(value):
    if value is None:
        return None
    match = re.match(r'^\s*(\d+)', value)
    if match:
        return int(match.group(1))
    return None


def _yes_no(value):
    if value is None:
        return None
    low = value.strip().lower()
    if low in ('yes', 'true', 'enabled', 'active'):
        return True
    if low in ('no', 'false', 'disabled', 'not active'):
        return False
    return None


def _flag(elem, paths, unreadable):
    """The first of ``paths`` that is printed, as a bool; a value that is neither yes/no nor N/A is unreadable."""
    for path in paths:
        value = _text(elem, path, unreadable)
        if value is None:
            if elem is not None and elem.find(path) is not None:
                return None
            continue
        flag = _yes_no(value)
        if flag is None:
            unreadable.append('%s: %s' % (path, value))
        return flag
    return None


def _uncorrectable(group, unreadable):
    """Sum of uncorrectable ECC counters in a ``volatile``/``aggregate`` element.

    Ampere and later print ``sram_uncorrectable``/``dram_uncorrectable``; newer
    drivers split the SRAM one into ``sram_uncorrectable_parity`` and
    ``sram_uncorrectable_secded``; older GPUs print ``double_bit/total``.
    Returns None when every counter is N/A, and None (the counter named in
    ``unreadable``) when any counter could not be read: a partial sum would
    pass a check that must not pass.
    """
    if group is None:
        return None
    before = len(unreadable)
    prefix = 'ecc_errors/%s/' % group.tag
    if group.find('double_bit') is not None:
        value = _number(group, 'double_bit/total', prefix, unreadable)
        return value if len(unreadable) == before else None
    tags = [child.tag for child in group if 'uncorrectable' in child.tag]
    if 'sram_uncorrectable' in tags:
        # a total: leave out its parts (sram_uncorrectable_parity, _secded) if a driver prints both
        tags = [t for t in tags if not t.startswith('sram_uncorrectable_')]
    known = [v for v in (_number(group, t, prefix, unreadable) for t in tags) if v is not None]
    if not known or len(unreadable) != before:
        return None
    return sum(known)


def _number(group, path, prefix, unreadable):
    """A counter as an int; a value that is neither N/A nor a number is listed in ``unreadable``."""
    found = []
    value = _text(group, path, found)
    if value is not None and not re.match(r'^\d+$', value):
        found.append('%s: %s' % (path, value))
        value = None
    unreadable.extend(prefix + item for item in found)
    return int(value) if value is not None else None


def _width(value):
    # "16x" -> 16
    return _int(value)


def _gpu(index, elem):
    pci = elem.find('pci')
    link = pci.find('pci_gpu_link_info') if pci is not None else None
    unreadable = []
    remapped = elem.find('remapped_rows')
    remapped_pending = None
    remapping_failure = None
    remapped_unc = None
    if remapped is not None and len(remapped):
        remapped_pending = _flag(remapped, ['remapped_row_pending'], unreadable)
        remapping_failure = _flag(remapped, ['remapped_row_failure'], unreadable)
        remapped_unc = _int(_text(remapped, 'remapped_row_unc'))
    retired = elem.find('retired_pages')
    retired_pending = None
    if retired is not None:
        # older drivers call it pending_blacklist
        retired_pending = _flag(retired, ['pending_retirement', 'pending_blacklist'], unreadable)
    mig_devices = elem.find('mig_devices')
    ecc = elem.find('ecc_errors')
    processes = [{'pid': _int(_text(proc, 'pid')), 'type': _text(proc, 'type'), 'name': _text(proc, 'process_name'),
                  'used_memory_mib': _int(_text(proc, 'used_memory'))}
                 for proc in elem.findall('processes/process_info')]
    return {
        'index': index,
        'uuid': _text(elem, 'uuid'),
        'name': _text(elem, 'product_name'),
        'pci_bus_id': _text(pci, 'pci_bus_id') or elem.get('id'),
        'pci_device_id': _text(pci, 'pci_device_id'),
        'serial': _text(elem, 'serial'),
        'architecture': _text(elem, 'product_architecture'),
        'minor_number': _int(_text(elem, 'minor_number')),
        'pcie': {
            'gen_current': _int(_text(link, 'pcie_gen/current_link_gen')),
            'gen_max': _int(_text(link, 'pcie_gen/max_link_gen')),
            'width_current': _width(_text(link, 'link_widths/current_link_width')),
            'width_max': _width(_text(link, 'link_widths/max_link_width')),
        },
        'persistence_mode': _text(elem, 'persistence_mode'),
        'mig_mode': _text(elem, 'mig_mode/current_mig'),
        'mig_mode_pending': _text(elem, 'mig_mode/pending_mig'),
        'mig_devices': len(mig_devices.findall('mig_device')) if mig_devices is not None else 0,
        # the GPU instance of each MIG device (one per compute instance), as listed
        'mig_device_gpu_instances': [_int(_text(dev, 'gpu_instance_id'))
                                     for dev in (mig_devices.findall('mig_device') if mig_devices is not None else [])],
        'compute_mode': _text(elem, 'compute_mode'),
        'performance_state': _text(elem, 'performance_state'),
        'gpu_idle': _yes_no(_first_text(elem, ['clocks_event_reasons/clocks_event_reason_gpu_idle',
                                               'clocks_throttle_reasons/clocks_throttle_reason_gpu_idle'])),
        'ecc_mode': _text(elem, 'ecc_mode/current_ecc'),
        'ecc_mode_pending': _text(elem, 'ecc_mode/pending_ecc'),
        'ecc_uncorrected_volatile': _uncorrectable(ecc.find('volatile') if ecc is not None else None, unreadable),
        'ecc_uncorrected_aggregate': _uncorrectable(ecc.find('aggregate') if ecc is not None else None, unreadable),
        'retired_pages_pending': retired_pending,
        'remapped_rows_uncorrectable': remapped_unc,
        'remapped_rows_pending': remapped_pending,
        'remapping_failure': remapping_failure,
        'processes': processes,
        'unreadable': unreadable,
    }


def parse_nvsmi_xml(text):
    """Parse ``nvidia-smi -q -x``.

    Returns ``driver_version``, ``cuda_version``, ``attached_gpus`` and
    ``gpus`` (a list of per-GPU dicts in enumeration order; ``index`` is the
    position, as nvidia-smi numbers GPUs). Values printed as N/A are None.
    Raises ParseError naming the line of malformed or truncated XML.
    """
    if text is None or not text.strip():
        raise ParseError(COMMAND, 'output is empty')
    start = text.find('<')
    if start < 0:
        first = text.strip().splitlines()[0]
        raise ParseError(COMMAND, 'output is not XML', 1, first)
    prefix_lines = text[:start].count('\n')
    warnings = []
    before = [l.strip() for l in text[:start].splitlines() if l.strip()]
    if before:
        warnings.append('%s: text before the XML: %s' % (COMMAND, '; '.join(before[:3])))
    if '<!ENTITY' in text:
        raise ParseError(COMMAND, 'entity declarations are refused (nvidia-smi never prints them)')
    try:
        root = ET.fromstring(text[start:].encode('utf-8'))
    except ET.ParseError as exc:
        line_no, _col = getattr(exc, 'position', (None, None))
        line = None
        if line_no is not None:
            line_no += prefix_lines
            all_lines = text.splitlines()
            if 0 < line_no <= len(all_lines):
                line = all_lines[line_no - 1]
        raise ParseError(COMMAND, 'malformed or truncated XML (%s)' % exc, line_no, line)
    if root.tag != 'nvidia_smi_log':
        raise ParseError(COMMAND, 'root element is <%s>, expected <nvidia_smi_log>' % root.tag)
    gpus = [_gpu(i, elem) for i, elem in enumerate(root.findall('gpu'))]
    attached = _int(_text(root, 'attached_gpus'))
    if attached is not None and attached != len(gpus):
        warnings.append('%s: attached_gpus says %d but %d <gpu> elements were printed'
                        % (COMMAND, attached, len(gpus)))
    return {
        # driver 610 renames these to KMD Version / CUDA UMD Version
        'driver_version': _first_text(root, ['driver_version', 'kmd_version']),
        'cuda_version': _first_text(root, ['cuda_version', 'cuda_umd_version']),
        'attached_gpus': attached,
        'gpus': gpus,
        'warnings': warnings,
    }
