# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``nvidia-smi topo -m`` (and ``topo -mp``).

Handles every layout seen on real machines: tab or space separated cells, with
or without the header's leading tab, indented pastes, NICs named directly
(``mlx5_0``) or as ``NICn`` resolved through the ``NIC Legend``, optional
``CPU Affinity`` / ``NUMA Affinity`` / ``GPU NUMA ID`` columns, empty cells,
rows that carry one more field than the header, old ``SOC`` relations,
GPUs without NICs, a byte-order mark and the terminal underline codes recent
drivers print around the header line (``\\t\\x1b[4mGPU0 ... GPU NUMA ID\\x1b[0m``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import bounded, clean

COMMAND = 'nvidia-smi topo -m'

RELATION_RE = re.compile(r'^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$')
EXTRA_COLUMNS = ('CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID')
_EXTRA_KEYS = {
    'CPU Affinity': 'cpu_affinity',
    'NUMA Affinity': 'numa_affinity',
    'GPU NUMA ID': 'gpu_numa_id',
}
_DEVICE_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_.:-]*$')
_LEGEND_ENTRY_RE = re.compile(r'^\s*(NIC\d+)\s*:\s*(\S+)\s*$')

# Closeness of a PCIe path, best first. ``SOC`` is the pre-2017 name of ``SYS``.
PCIE_RELATION_RANK = {'PIX': 0, 'PXB': 1, 'PHB': 2, 'NODE': 3, 'SYS': 4, 'SOC': 4}


def _split(line):
    """Split a matrix line into stripped cells."""
    if '\t' in line:
        return [cell.strip() for cell in line.split('\t')]
    # Column-aligned copies (tabs turned into spaces): cells are separated by
    # two or more spaces; a single space belongs to a header such as
    # "CPU Affinity" and the diagonal " X " cell is padded on both sides.
    return [cell.strip() for cell in re.split(r'\s{2,}', line.strip())]


def _is_header(cells):
    cells = [c for c in cells if c != '']
    if not cells or cells[0] != 'GPU0':
        return False
    for cell in cells:
        if cell in EXTRA_COLUMNS:
            continue
        if not _DEVICE_RE.match(cell) or RELATION_RE.match(cell):
            return False
    return True


def is_gpu(name):
    return re.match(r'^GPU\d+$', name) is not None


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m`` output.

    Returns a dict with ``gpus`` (``GPU0``...), ``nics`` (real NIC names, in
    matrix order), ``devices`` (both, in matrix order), ``matrix`` (device ->
    device -> relation exactly as printed, NIC names resolved through the NIC
    Legend), ``affinity`` (GPU -> ``cpu_affinity``, ``numa_affinity``,
    ``gpu_numa_id`` strings as printed, "" when empty), ``nic_legend`` and
    ``warnings`` (what was skipped or could not be resolved).

    Raises ParseError naming the line when the matrix cannot be read.
    """
    text = clean(text)
    if text is None or not text.strip():
        raise ParseError(COMMAND, 'output is empty')
    lines = text.splitlines()
    header_idx = None
    header = None
    for idx, line in enumerate(lines):
        if not line.strip():
            continue
        cells = _split(line)
        if _is_header(cells):
            header_idx = idx
            header = [c for c in cells if c != '']
            break
        if line.strip().startswith('Legend'):
            break
    if header is None:
        first = next((i for i, l in enumerate(lines) if l.strip()), 0)
        raise ParseError(COMMAND, 'no matrix header (a line starting with GPU0) found',
                         first + 1, lines[first] if lines else '')

    devices = []
    extras = []
    for cell in header:
        if cell in EXTRA_COLUMNS:
            extras.append(cell)
        elif extras:
            raise ParseError(COMMAND, 'device column %r after the affinity columns' % cell,
                             header_idx + 1, lines[header_idx])
        else:
            devices.append(cell)
    if len(set(devices)) != len(devices):
        raise ParseError(COMMAND, 'duplicate device in header', header_idx + 1, lines[header_idx])

    warnings = []
    rows = {}
    affinity = {}
    end_idx = len(lines)
    for idx in range(header_idx + 1, len(lines)):
        line = lines[idx]
        stripped = line.strip()
        if not stripped:
            if rows:
                end_idx = idx
                break
            continue
        if stripped.startswith('Legend') or stripped.startswith('NIC Legend'):
            end_idx = idx
            break
        cells = _split(line)
        name = cells[0]
        if name not in devices:
            raise ParseError(COMMAND, 'row names a device that is not in the header', idx + 1, line)
        if name in rows:
            raise ParseError(COMMAND, 'device row appears twice', idx + 1, line)
        rel_cells = cells[1:1 + len(devices)]
        if len(rel_cells) < len(devices):
            raise ParseError(COMMAND, 'row has %d relation cells but the header names %d devices'
                             % (len(rel_cells), len(devices)), idx + 1, line)
        row = {}
        for col, rel in zip(devices, rel_cells):
            if not RELATION_RE.match(rel):
                raise ParseError(COMMAND, 'cell %s/%s is not a relation (%r)' % (name, col, rel),
                                 idx + 1, line)
            if (rel == 'X') != (col == name):
                raise ParseError(COMMAND, 'cell %s/%s is %r; the self cell must be on the diagonal'
                                 % (name, col, rel), idx + 1, line)
            row[col] = rel
        rows[name] = row
        rest = cells[1 + len(devices):]
        if is_gpu(name):
            if '\t' not in line and len(rest) < len(extras):
                # a column-aligned copy loses empty cells: the values left cannot be placed for sure
                warnings.append('%s: line %d: %s has %d affinity cells for %d affinity columns and no tabs; '
                                'an empty cell was lost, affinity values may be in the wrong column'
                                % (COMMAND, idx + 1, name, len(rest), len(extras)))
            affinity[name] = _read_affinity(name, rest, extras, idx, line, warnings)
        elif any(c for c in rest):
            warnings.append('%s: line %d: ignored affinity cells on NIC row %s: %r'
                            % (COMMAND, idx + 1, name, [c for c in rest if c]))

    missing_rows = [d for d in devices if d not in rows]
    if missing_rows:
        raise ParseError(COMMAND, 'matrix is incomplete: no row for %s' % ', '.join(missing_rows),
                         end_idx, lines[end_idx - 1] if end_idx else None)

    legend = {}
    in_legend = False
    for idx in range(end_idx, len(lines)):
        stripped = lines[idx].strip()
        if stripped.startswith('NIC Legend'):
            in_legend = True
            continue
        if in_legend and stripped:
            if idx == len(lines) - 1 and not text.endswith('\n'):
                # nvidia-smi ends every line: a last Legend line without one was cut
                raise ParseError(COMMAND, 'output ends inside the NIC Legend without a newline (cut?)', idx + 1,
                                 lines[idx])
            match = _LEGEND_ENTRY_RE.match(stripped)
            if match:
                legend[match.group(1)] = match.group(2)
            else:
                warnings.append('%s: line %d: unreadable NIC Legend entry %r' % (COMMAND, idx + 1, stripped))

    rename = {}
    unresolved = []
    for dev in devices:
        rename[dev] = legend.get(dev, dev)
        if re.match(r'^NIC\d+$', dev) and dev not in legend:
            unresolved.append(dev)
    if unresolved:
        # drivers that name NICs NICn always print the Legend: a missing entry means the output was cut
        raise ParseError(COMMAND, 'the NIC Legend has no entry for %s (output cut?)' % ', '.join(unresolved),
                         len(lines), lines[-1] if lines else None)
    names = [rename[d] for d in devices]
    if len(set(names)) != len(names):
        raise ParseError(COMMAND, 'NIC Legend maps two columns to the same NIC')

    matrix = {}
    for dev in devices:
        matrix[rename[dev]] = dict((rename[col], rel) for col, rel in rows[dev].items())
    return {
        'devices': names,
        'gpus': [d for d in names if is_gpu(d)],
        'nics': [rename[d] for d in devices if not is_gpu(d)],
        'matrix': matrix,
        'affinity': affinity,
        'nic_legend': legend,
        'warnings': bounded(warnings, COMMAND),
    }


def _read_affinity(name, rest, extras, idx, line, warnings):
    values = list(rest)
    # Newer drivers add "GPU NUMA ID" and print an empty field before it, so
    # GPU rows carry one more field than the header.
    if (extras and extras[-1] == 'GPU NUMA ID' and len(values) == len(extras) + 1
            and values[-2] == ''):
        del values[-2]
    while len(values) > len(extras) and values[-1] == '':
        values.pop()
    if len(values) > len(extras):
        warnings.append('%s: line %d: %s has %d affinity cells for %d affinity columns; extra ignored'
                        % (COMMAND, idx + 1, name, len(values), len(extras)))
    result = {'cpu_affinity': '', 'numa_affinity': '', 'gpu_numa_id': ''}
    for col, value in zip(extras, values):
        result[_EXTRA_KEYS[col]] = value
    return result


def numa_from_affinity(value):
    """``NUMA Affinity`` cell as an int, or None when empty, ``N/A`` or a range."""
    if value is None:
        return None
    value = value.strip()
    if re.match(r'^\d+$', value):
        return int(value)
    return None


def closest_nics(matrix, gpu, nics):
    """Closest relation from ``gpu`` to any of ``nics``: (relation, [nic names])."""
    best = None
    chosen = []
    for nic in nics:
        rel = matrix.get(gpu, {}).get(nic)
        if rel not in PCIE_RELATION_RANK:
            continue
        rank = PCIE_RELATION_RANK[rel]
        if best is None or rank < PCIE_RELATION_RANK[best]:
            best = rel
            chosen = [nic]
        elif rank == PCIE_RELATION_RANK[best]:
            chosen.append(nic)
    return best, chosen
