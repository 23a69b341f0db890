# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology drawings of the rack report: a compact digest of ``gpu_topology`` and its SVG.

``drawing_from_topology`` keeps what a drawing shows (GPUs, NICs and their
ports, NVLink, NVSwitches, the closest NIC of each GPU, the GPUs on the PCI
bus that nvidia-smi does not list) as a small JSON-safe dict, and
``render_svg`` draws it with the marks report/marks.py placed: one column per
NUMA node (``NUMA ?`` for the devices whose node is unknown; a NIC of unknown
node goes to the column of the GPUs it is PIX/PXB to), the GPUs in a row, the
NICs below them, NVLink above them. The layout is deterministic; every text is
escaped. Standard library only (Python 3.8+).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import html
import json
import re

from ansible_collections.gpuops.node.plugins.module_utils.pci import sysfs_pci_address

# characters a page should not carry even escaped: C0 controls but tab and line ends, DEL, C1 controls,
# bidirectional marks, embeddings, overrides and isolates, line and paragraph separators, lone surrogates (not
# writable as UTF-8), U+FFFE, U+FFFF
_UNSAFE = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069'
                     u'\ud800-\udfff\ufffe\uffff]')
GPU_RE = re.compile(r'GPU ?([0-9]+)\Z')
PAIR_RE = re.compile(r'(GPU ?[0-9]+)-(GPU ?[0-9]+)\Z')
CLOSE_RELATIONS = ('PIX', 'PXB')

CELL_W = 160            # one GPU or NIC slot of a column
BOX_W = 146
MARGIN = 16
HEADER_H = 34
GPU_H = 70
LINE_H = 13
MSG_H = 13
MSG_CHARS = 22
MSG_LINES = 3           # lines of one message beside its element (the table has it all)
MAX_MESSAGES = 3
AFFINITY_GAP = 72
NIC_ROW_GAP = 14
NIC_PER_ROW = 3
LANE_H = 13
SWITCH_BAND = 84
SHORT_LAYER = {'infiniband': 'IB', 'ethernet': 'Eth'}


def clean(value):
    """Text of a value with the unsafe characters replaced by U+FFFD."""
    if value is None:
        return u''
    if isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
    if not isinstance(value, str):
        if isinstance(value, bool):
            value = u'true' if value else u'false'
        elif isinstance(value, (int, float)):
            value = str(value)
        else:
            value = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return _UNSAFE.sub(u'\ufffd', value)


def esc(value):
    """A value as escaped text, good for element text and quoted attributes."""
    return html.escape(clean(value), quote=True)


def shorten(value, limit):
    text = clean(value).replace(u'\n', u' ').replace(u'\r', u' ')
    return text if len(text) <= limit else text[:max(limit - 1, 1)] + u'\u2026'


# ---------------------------------------------------------------- digest

def _int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'-?[0-9]+\Z', value.strip()):
        return int(value.strip())
    return None


def _numa(value):
    value = _int(value)
    return value if value is not None and value >= 0 else None


def _pcie(pcie):
    if not isinstance(pcie, dict):
        return None
    gen, width = _int(pcie.get('gen_current')), _int(pcie.get('width_current'))
    parts = []
    if gen is not None:
        parts.append('Gen%d' % gen)
    if width is not None:
        parts.append('x%d' % width)
    return ' '.join(parts) or None


def gpu_index(name):
    match = GPU_RE.match(name) if isinstance(name, str) else None
    return int(match.group(1)) if match else None


def bus_address(value):
    """A PCI bus id as sysfs writes it (``0000:19:00.0``: lower case, 4-digit domain), else None."""
    if not isinstance(value, str):
        return None
    return sysfs_pci_address(value)


def short_bus(bus):
    """``0000:19:00.0`` -> ``19:00.0`` (the domain is kept when it is not 0000)."""
    text = clean(bus)
    return text[5:] if text.startswith(u'0000:') else text


def _unlisted_gpus(topology, listed):
    """The GPUs on the PCI bus that nvidia-smi does not list: [{bus, model, numa}]."""
    out = []
    for gpu in topology.get('pci_gpus') or []:
        bus = bus_address(gpu.get('pci_bus_id')) if isinstance(gpu, dict) else None
        if bus is not None and bus not in listed:
            out.append({'bus': bus, 'model': gpu.get('model'), 'numa': _numa(gpu.get('numa_node'))})
    return sorted(out, key=lambda g: g['bus'])


def drawing_from_topology(topology):
    """The compact digest of a ``gpu_topology`` snapshot a drawing needs (JSON-safe); None without a snapshot."""
    if not isinstance(topology, dict):
        return None
    gpus = []
    for gpu in topology.get('gpus') or []:
        if not isinstance(gpu, dict) or _int(gpu.get('index')) is None:
            continue
        gpus.append({'index': _int(gpu['index']), 'name': gpu.get('name'), 'numa': _numa(gpu.get('numa_node')),
                     'cpu_affinity': gpu.get('cpu_affinity') or None, 'pcie': _pcie(gpu.get('pcie')),
                     'nvlink_active': _int(gpu.get('nvlink_active')), 'nvlink_total': _int(gpu.get('nvlink_total')),
                     'bus': bus_address(gpu.get('pci_bus_id'))})
    gpus.sort(key=lambda g: g['index'])
    pci_gpus = _unlisted_gpus(topology, set(g['bus'] for g in gpus if g['bus']))
    matrix = topology.get('matrix') if isinstance(topology.get('matrix'), dict) else {}
    names = sorted((n for n in matrix if gpu_index(n) is not None), key=gpu_index)
    nvlink = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            relation = (matrix.get(first) or {}).get(second) or (matrix.get(second) or {}).get(first)
            if isinstance(relation, str) and relation.startswith('NV'):
                nvlink.append({'a': gpu_index(first), 'b': gpu_index(second), 'relation': relation})
    nics = []
    for nic in topology.get('nics') or []:
        if not isinstance(nic, dict) or not nic.get('name'):
            continue
        ports = [{'port': port.get('port'), 'state': port.get('state'), 'rate_gbps': port.get('rate_gbps'),
                  'link_layer': port.get('link_layer')} for port in nic.get('ports') or [] if isinstance(port, dict)]
        nics.append({'name': nic['name'], 'numa': _numa(nic.get('numa_node')), 'ports': ports})
    affinity = []
    closest = topology.get('gpu_nic_affinity') if isinstance(topology.get('gpu_nic_affinity'), dict) else {}
    for name in sorted((n for n in closest if gpu_index(n) is not None), key=gpu_index):
        entry = closest[name] if isinstance(closest[name], dict) else {}
        affinity.append({'gpu': gpu_index(name), 'nics': list(entry.get('nics') or []),
                         'relation': entry.get('relation')})
    return {'gpus': gpus, 'nvswitches': _int(topology.get('nvswitch_count')) or 0, 'nvlink': nvlink, 'nics': nics,
            'affinity': affinity, 'driver_loaded': bool(topology.get('driver_loaded')),
            'driver_version': topology.get('driver_version'), 'gpu_count': _int(topology.get('gpu_count')) or 0,
            'pci_gpus': pci_gpus}


def canonical(drawing):
    """The drawing as canonical JSON text: equal drawings give equal texts."""
    return json.dumps(drawing, sort_keys=True, separators=(',', ':'), default=str)


# ---------------------------------------------------------------- marks

def usable(drawing):
    """The drawing with the GPUs that have an index and the NICs that have a name (a drawing may come as JSON)."""
    drawing = dict(drawing or {})
    drawing['gpus'] = [g for g in drawing.get('gpus') or [] if isinstance(g, dict) and _int(g.get('index')) is not None
                       and not isinstance(g.get('index'), str)]
    drawing['nics'] = [n for n in drawing.get('nics') or [] if isinstance(n, dict) and n.get('name') is not None]
    drawing['pci_gpus'] = [g for g in drawing.get('pci_gpus') or [] if isinstance(g, dict) and g.get('bus')]
    return drawing


def new_marks():
    return {'gpu': {}, 'nic': {}, 'port': {}, 'pair': {}, 'switch': {}, 'missing_gpu': {}, 'pci': {}, 'node': [],
            'unplaced': []}


def switched(drawing):
    return bool(drawing.get('nvswitches')) and bool(drawing.get('gpus'))


def checks_attr(items):
    """data-checks: the check names of items, unique, sorted, space separated."""
    return u' '.join(sorted(set(clean(i.get('check')) or u'check' for i in items)))


def message(item):
    return clean(item.get('message')) or clean(item.get('check')) or u'check failed'


def _mark_attrs(items):
    if not items:
        return u''
    return u' data-marked="true" data-checks="%s"' % esc(checks_attr(items))


def _title(items):
    lines = [u'%s: %s' % (clean(i.get('check')) or u'check', message(i)) for i in items]
    return u'<title>%s</title>' % esc(u'\n'.join(lines))


def _wrap(text, width):
    words, lines, line = clean(text).split(), [], u''
    for word in words:
        while len(word) > width:
            if line:
                lines.append(line)
                line = u''
            lines.append(word[:width])
            word = word[width:]
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + u' ' + word) if line else word
    if line:
        lines.append(line)
    return lines


def _message_lines(items):
    """The lines of text shown beside a marked element: the first messages, then how many more."""
    lines = []
    # the items naming this element alone come before those naming a pair of GPUs
    items = sorted(items, key=lambda i: PAIR_RE.match(clean(i.get('subject'))) is not None)
    for item in items[:MAX_MESSAGES]:
        wrapped = _wrap(message(item), MSG_CHARS)
        if len(wrapped) > MSG_LINES:
            wrapped = wrapped[:MSG_LINES]
            wrapped[-1] = shorten(wrapped[-1] + u' \u2026', MSG_CHARS)
        lines.extend(wrapped or [u'?'])
    if len(items) > MAX_MESSAGES:
        lines.append(u'+%d more (see the table)' % (len(items) - MAX_MESSAGES))
    return lines


def _message_text(x, y, items):
    out = []
    for i, line in enumerate(_message_lines(items)):
        out.append(u'<text class="msg" x="%d" y="%d">%s</text>' % (x, y + i * MSG_H, esc(line)))
    return u''.join(out)


# ---------------------------------------------------------------- layout

class _Column(object):
    def __init__(self, numa):
        self.numa = numa
        self.gpus = []
        self.nics = []
        self.x = 0
        self.slots = 1


def _gpu_key(gpu):
    """A GPU slot's key: its index, or u'pci:<bus>' for a GPU nvidia-smi does not list."""
    return u'pci:' + clean(gpu['bus']) if gpu.get('unlisted') else gpu['index']


def _nic_numa(drawing):
    """{nic: NUMA node} for the NICs of unknown node that are PIX/PXB to GPUs of exactly one known node."""
    numa = dict((g['index'], g.get('numa')) for g in drawing.get('gpus') or [])
    near = {}
    for entry in drawing.get('affinity') or []:
        if entry.get('relation') in CLOSE_RELATIONS and entry.get('gpu') in numa:
            for name in entry.get('nics') or []:
                near.setdefault(name, set()).add(numa[entry['gpu']])
    return dict((name, nodes.pop()) for name, nodes in near.items() if len(nodes) == 1 and None not in nodes)


def _columns(drawing, marks):
    by_numa = {}
    for gpu in drawing.get('gpus') or []:
        by_numa.setdefault(gpu.get('numa'), _Column(gpu.get('numa'))).gpus.append(gpu)
    for index in sorted(marks['missing_gpu']):
        by_numa.setdefault(None, _Column(None)).gpus.append({'index': index, 'missing': True})
    for gpu in drawing.get('pci_gpus') or []:
        numa = _numa(gpu.get('numa'))
        by_numa.setdefault(numa, _Column(numa)).gpus.append(dict(gpu, unlisted=True))
    nic_numa = _nic_numa(drawing)
    # NICs in the order of the GPUs they are closest to, then by name: shorter affinity lines
    first_gpu = {}
    for entry in drawing.get('affinity') or []:
        for name in entry.get('nics') or []:
            first_gpu.setdefault(name, entry.get('gpu'))
    nics = sorted(drawing.get('nics') or [],
                  key=lambda n: (first_gpu.get(n['name']) is None, first_gpu.get(n['name']) or 0))
    for nic in nics:
        numa = nic.get('numa') if nic.get('numa') is not None else nic_numa.get(nic['name'])
        by_numa.setdefault(numa, _Column(numa)).nics.append(nic)
    columns = [by_numa[k] for k in sorted((k for k in by_numa if k is not None))]
    if None in by_numa:
        columns.append(by_numa[None])
    x = MARGIN
    for column in columns:
        column.slots = max(len(column.gpus), min(len(column.nics), NIC_PER_ROW), 1)
        column.x = x
        x += column.slots * CELL_W + MARGIN
    return columns, x


def _lanes(pairs, centers):
    """A lane (row) for each NVLink pair so that no two lines of a lane touch; returns ({pair: lane}, count)."""
    lanes, taken = {}, []
    for pair in sorted(pairs, key=lambda p: (abs(centers[p[1]] - centers[p[0]]), centers[p[0]])):
        low, high = sorted((centers[pair[0]], centers[pair[1]]))
        for lane, spans in enumerate(taken):
            if all(high + 6 < s_low or low - 6 > s_high for s_low, s_high in spans):
                spans.append((low, high))
                lanes[pair] = lane
                break
        else:
            taken.append([(low, high)])
            lanes[pair] = len(taken) - 1
    return lanes, len(taken)


def _gpu_height(items):
    return GPU_H + (len(_message_lines(items)) * MSG_H + 4 if items else 0)


def _nic_height(nic, marks):
    height = 24 + LINE_H * max(len(nic.get('ports') or []), 1) + 4
    extra = 0
    for port in nic.get('ports') or []:
        items = marks['port'].get((clean(nic['name']), clean(port.get('port'))))
        if items:
            extra += len(_message_lines(items)) * MSG_H
    own = [i for i in marks['nic'].get(clean(nic['name']), []) if i not in _port_items(nic, marks)]
    if own:
        extra += len(_message_lines(own)) * MSG_H + 2
    return height + extra


def _port_items(nic, marks):
    name = clean(nic['name'])
    return [i for port in nic.get('ports') or [] for i in marks['port'].get((name, clean(port.get('port'))), [])]


def _header(column):
    if column.numa is None:
        return u'NUMA ?'
    cpus = sorted(set(g.get('cpu_affinity') for g in column.gpus if g.get('cpu_affinity')))
    label = u'NUMA %d' % column.numa
    if len(cpus) == 1:
        label += u' \u00b7 CPUs %s' % clean(cpus[0])
    return shorten(label, max(column.slots * CELL_W // 7, 10))


def _gpu_svg(gpu, x, y, height, items):
    bus = u''
    if gpu.get('unlisted'):
        name = clean(gpu['bus'])
        lines = [(u'name', short_bus(name)), (u'', u'not listed by nvidia-smi'),
                 (u'', shorten(clean(gpu.get('model') or u'unknown model').replace(u'NVIDIA ', u'', 1), 24))]
        cls = u'gpu missing'
    elif gpu.get('missing'):
        name = u'GPU%d' % gpu['index']
        lines = [(u'name', name), (u'', u'not in the facts')]
        cls = u'gpu missing'
    else:
        name = u'GPU%d' % gpu['index']
        bus = short_bus(gpu.get('bus') or u'')
        model = clean(gpu.get('name') or u'unknown model')
        if model.startswith(u'NVIDIA '):
            model = model[len(u'NVIDIA '):]
        active, total = gpu.get('nvlink_active'), gpu.get('nvlink_total')
        nv = u'NV %s/%s' % (active, total) if total else u'no NVLink' if total == 0 else u'NVLink ?'
        lines = [(u'name', name), (u'', shorten(model, 24)), (u'', clean(gpu.get('pcie') or u'PCIe ?')), (u'', nv)]
        cls = u'gpu'
    out = [u'<g class="%s" data-name="%s"%s>' % (cls, esc(name), _mark_attrs(items))]
    if items:
        out.append(_title(items))
    out.append(u'<rect class="box%s" x="%d" y="%d" width="%d" height="%d" rx="5"/>'
               % (u' dashed' if cls != u'gpu' else u'', x, y, BOX_W, height))
    if bus:
        out.append(u'<text class="bus" x="%d" y="%d">%s</text>' % (x + 56, y + 17, esc(shorten(bus, 14))))
    for i, (cls_, text) in enumerate(lines):
        out.append(u'<text%s x="%d" y="%d">%s</text>' % (
            u' class="%s"' % cls_ if cls_ else u'', x + 8, y + 17 + i * LINE_H, esc(text)))
    if items:
        out.append(_message_text(x + 8, y + GPU_H + 6, items))
    out.append(u'</g>')
    return u''.join(out)


def _nic_svg(nic, x, y, height, marks):
    name = clean(nic['name'])
    items = marks['nic'].get(name, [])
    out = [u'<g class="nic" data-name="%s"%s>' % (esc(name), _mark_attrs(items))]
    if items:
        out.append(_title(items))
    out.append(u'<rect class="box nicbox" x="%d" y="%d" width="%d" height="%d" rx="5"/>' % (x, y, BOX_W, height))
    out.append(u'<text class="name" x="%d" y="%d">%s</text>' % (x + 8, y + 16, esc(shorten(name, 24))))
    cursor = y + 24
    for port in nic.get('ports') or []:
        number = clean(port.get('port'))
        port_items = marks['port'].get((name, number), [])
        rate = port.get('rate_gbps')
        layer = clean(port.get('link_layer'))
        text = u'p%s %s %s %s' % (number, clean(port.get('state') or u'?'),
                                  u'%s Gb/s' % clean(rate) if rate is not None else u'? Gb/s',
                                  SHORT_LAYER.get(layer.lower(), layer))
        out.append(u'<g class="port" data-name="%s" data-state="%s"%s>'
                   % (esc(u'%s/%s' % (name, number)), esc(port.get('state')), _mark_attrs(port_items)))
        if port_items:
            out.append(_title(port_items))
        lines = 1 + (len(_message_lines(port_items)) if port_items else 0)
        out.append(u'<rect class="portbox" x="%d" y="%d" width="%d" height="%d"/>'
                   % (x + 4, cursor, BOX_W - 8, lines * LINE_H if not port_items else LINE_H + (lines - 1) * MSG_H))
        out.append(u'<text x="%d" y="%d">%s</text>' % (x + 8, cursor + 10, esc(shorten(text, 26))))
        if port_items:
            out.append(_message_text(x + 8, cursor + LINE_H + 8, port_items))
            cursor += LINE_H + (lines - 1) * MSG_H
        else:
            cursor += LINE_H
        out.append(u'</g>')
    if not nic.get('ports'):
        out.append(u'<text x="%d" y="%d">no ports</text>' % (x + 8, cursor + 10))
        cursor += LINE_H
    own = [i for i in items if i not in _port_items(nic, marks)]
    if own:
        out.append(_message_text(x + 8, cursor + 10, own))
    out.append(u'</g>')
    return u''.join(out)


def _label(x, y, text, cls=u'lbl'):
    return u'<text class="%s" x="%d" y="%d">%s</text>' % (cls, x, y, esc(text))


def _gpu_items(gpu, marks):
    if gpu.get('unlisted'):
        return marks['pci'].get(clean(gpu['bus'])) or []
    return marks['gpu'].get(gpu['index']) or marks['missing_gpu'].get(gpu['index']) or []


def _switch_lines(drawing, marks, centers, top, gpu_y):
    out, labels = [], []
    for gpu in drawing.get('gpus') or []:
        items = marks['switch'].get(gpu['index']) or []
        if not gpu.get('nvlink_total') and not gpu.get('nvlink_active') and not items:
            continue
        x, active = centers[gpu['index']], gpu.get('nvlink_active') or 0
        down = active < (gpu.get('nvlink_total') or 0)
        out.append(u'<line class="nvlink" data-a="GPU%d" data-b="NVSwitch" data-links="%d" x1="%d" y1="%d" '
                   u'x2="%d" y2="%d"%s%s>%s</line>'
                   % (gpu['index'], active, x, top + 32, x, gpu_y, u' stroke-dasharray="4 3"' if down else u'',
                      _mark_attrs(items), _title(items) if items else u''))
        labels.append(_label(x + 4, (top + 32 + gpu_y) // 2 + 4, str(active), u'lbl bad' if items else u'lbl'))
    return out, labels


def _pair_lines(pairs, marks, centers, lanes, top, gpu_y):
    out, labels, stubs = [], [], {}
    for a, b, relation in pairs:
        y = top + 14 + lanes[(a, b)] * LANE_H
        for index in (a, b):
            stubs[index] = min(stubs.get(index, gpu_y), y)
        items = marks['pair'].get((a, b), [])
        out.append(u'<line class="nvlink%s" data-a="GPU%d" data-b="GPU%d" data-relation="%s" x1="%d" y1="%d" '
                   u'x2="%d" y2="%d"%s>%s</line>'
                   % (u' missing' if relation is None else u'', a, b, esc(relation or u''), centers[a], y,
                      centers[b], y, _mark_attrs(items), _title(items) if items else u''))
        labels.append(u'<circle class="dot" cx="%d" cy="%d" r="2.5"/><circle class="dot" cx="%d" cy="%d" r="2.5"/>'
                      % (centers[a], y, centers[b], y))
        labels.append(_label((centers[a] + centers[b]) // 2 - 12, y - 2, relation or u'missing',
                             u'lbl bad' if items else u'lbl'))
    for index in sorted(stubs):
        out.append(u'<line class="stub" x1="%d" y1="%d" x2="%d" y2="%d"/>'
                   % (centers[index], stubs[index], centers[index], gpu_y))
    return out, labels


def render_svg(drawing, marks=None, title=u'topology'):
    """The SVG of a drawing (see drawing_from_topology) with ``marks`` (see marks_for) on its elements."""
    marks = marks or new_marks()
    drawing = usable(drawing)
    columns, width = _columns(drawing, marks)
    centers, gpu_x = {}, {}
    for column in columns:
        for i, gpu in enumerate(column.gpus):
            key = _gpu_key(gpu)
            gpu_x[key] = column.x + i * CELL_W + (CELL_W - BOX_W) // 2
            centers[key] = gpu_x[key] + BOX_W // 2
    present = set(g['index'] for g in drawing.get('gpus') or [])
    has_switch = switched(drawing)
    pairs = [(p['a'], p['b'], p.get('relation') or u'NV') for p in drawing.get('nvlink') or []
             if p.get('a') in present and p.get('b') in present]
    if not has_switch:
        # the failing pairs the drawing has no NVLink for: the expected link that is not there
        drawn = set((min(p[0], p[1]), max(p[0], p[1])) for p in pairs)
        pairs = [(min(p[0], p[1]), max(p[0], p[1]), p[2]) for p in pairs]
        pairs += [(a, b, None) for a, b in sorted(marks['pair']) if (a, b) not in drawn and a in centers
                  and b in centers]
    top = MARGIN + HEADER_H
    lanes = {}
    if has_switch:
        band = SWITCH_BAND
    elif pairs:
        lanes, count = _lanes([pair[:2] for pair in pairs], centers)
        band = 14 + count * LANE_H + 10
    else:
        band = 12 if drawing.get('driver_loaded') or present else 24
    gpu_y = top + band
    gpu_heights = dict((_gpu_key(g), _gpu_height(_gpu_items(g, marks))) for c in columns for g in c.gpus)
    row_h = max(gpu_heights.values()) if gpu_heights else 0
    nic_y = gpu_y + row_h + AFFINITY_GAP if row_h else top + 22
    # NIC boxes, row by row in each column
    nic_boxes, bottom = {}, nic_y
    for column in columns:
        y = nic_y
        for start in range(0, len(column.nics), column.slots):
            row = column.nics[start:start + column.slots]
            heights = [_nic_height(nic, marks) for nic in row]
            for i, nic in enumerate(row):
                nic_boxes[nic['name']] = (column.x + i * CELL_W + (CELL_W - BOX_W) // 2, y, heights[i], nic)
            y += max(heights) + NIC_ROW_GAP
        bottom = max(bottom, y)
    height = max(bottom, gpu_y + row_h + MARGIN) + MARGIN
    out = [u'<svg class="topology" width="%d" height="%d" viewBox="0 0 %d %d" role="img">'
           % (width, height, width, height), u'<title>%s</title>' % esc(title)]
    for column in columns:
        out.append(u'<g class="numa" data-numa="%s"><rect class="col" x="%d" y="%d" width="%d" height="%d"/>'
                   % (u'?' if column.numa is None else column.numa, column.x, MARGIN, column.slots * CELL_W,
                      height - 2 * MARGIN))
        out.append(u'<text class="head" x="%d" y="%d">%s</text></g>' % (column.x + 8, MARGIN + 20, esc(_header(column))))
    if not drawing.get('driver_loaded') and not present:
        out.append(_label(MARGIN + 8, top + 12, u'driver not loaded: no GPU listed by nvidia-smi', u'note'))
    body = []
    # NVLink: to the NVSwitch bar, or between GPU pairs
    if has_switch:
        xs = [centers[i] for i in present]
        x0, x1 = min(xs) - BOX_W // 2, max(xs) + BOX_W // 2
        out.append(u'<g class="nvswitch" data-count="%d"><rect class="switch" x="%d" y="%d" width="%d" height="26" '
                   u'rx="4"/><text class="name" x="%d" y="%d">NVSwitch x%d</text></g>'
                   % (drawing['nvswitches'], x0, top + 6, x1 - x0, x0 + 8, top + 24, drawing['nvswitches']))
        lines, labels = _switch_lines(drawing, marks, centers, top, gpu_y)
    else:
        lines, labels = _pair_lines(pairs, marks, centers, lanes, top, gpu_y)
    out.extend(lines)
    body.extend(labels)
    # affinity: each GPU to its closest NIC(s)
    for entry in drawing.get('affinity') or []:
        index = entry.get('gpu')
        nics = [n for n in entry.get('nics') or [] if n in nic_boxes]
        if index not in present or not nics:
            continue
        for k, name in enumerate(nics):
            x1 = gpu_x[index] + BOX_W * (k + 1) // (len(nics) + 1)
            y1 = gpu_y + gpu_heights[index]
            nx, ny = nic_boxes[name][:2]
            x2, y2 = nx + BOX_W // 2, ny
            out.append(u'<line class="affinity" data-gpu="GPU%d" data-nic="%s" data-relation="%s" x1="%d" y1="%d" '
                       u'x2="%d" y2="%d"/>' % (index, esc(name), esc(entry.get('relation')), x1, y1, x2, y2))
            t = 0.18 + 0.5 * ((index * 7 + k * 3) % 5) / 10.0
            body.append(_label(int(x1 + (x2 - x1) * t) + 3, int(y1 + (y2 - y1) * t) + 4,
                               entry.get('relation') or u'?'))
    for column in columns:
        for gpu in column.gpus:
            key = _gpu_key(gpu)
            out.append(_gpu_svg(gpu, gpu_x[key], gpu_y, gpu_heights[key], _gpu_items(gpu, marks)))
    for name in sorted(nic_boxes, key=lambda n: (nic_boxes[n][0], nic_boxes[n][1])):
        x, y, box_h, nic = nic_boxes[name]
        out.append(_nic_svg(nic, x, y, box_h, marks))
    out.extend(body)
    out.append(u'</svg>')
    return u''.join(out)
