# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replaying, stateful ``nvidia-smi`` for simulated GPU nodes (gpuops.node).

Installed as ``/usr/bin/nvidia-smi`` on a simulated node. It answers from a
hardware profile (a capture bundle derived from real captures, see
simulator/build_profiles.py) in ``/usr/share/gpuops-sim/profile/`` and keeps
what setters change (persistence mode, compute mode, MIG mode, MIG instances)
in ``/var/lib/gpuops-sim/state.json``, so later queries show the change and it
survives container restarts.

Environment overrides (tests): ``GPUOPS_SIM_ROOT`` (prefix for both default
paths), ``GPUOPS_SIM_PROFILE`` (profile directory), ``GPUOPS_SIM_STATE``
(state file), ``GPUOPS_SIM_ALLOW_NONROOT=1`` (setters do not require root).

Invoked as ``gpuops-sim`` (same file, other name) it is the simulator's admin
tool: ``reboot``, ``busy``/``idle``, ``state``, ``reset-state``, ``boot``, ``sync``.
On a bare node (``sim/runtime.json`` ``"driver": "emulated"``) it answers only
while an emulated module is loaded (simulator/sim_driver.py).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import hashlib
import json
import os
import re
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET

try:  # driver emulation and GPU processes (simulator/sim_driver.py), optional for replayed nodes
    from . import sim_driver as D
except ImportError:  # run as a script: beside this file, or installed under the simulator's lib directory
    D = None
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_driver.py')):
            sys.path.insert(0, _lib)
            import sim_driver as D  # noqa: E402
            break
try:  # RDMA state of the HCAs (simulator/sim_rdma.py): gpuops-sim fault, RDMA reset on reboot
    from . import sim_rdma as R
except ImportError:
    try:
        import sim_rdma as R  # noqa: E402
    except ImportError:
        R = None

SIM_VERSION = 1
DEFAULT_PROFILE = 'usr/share/gpuops-sim/profile'
DEFAULT_STATE = 'var/lib/gpuops-sim/state.json'

XML_FILE = 'nvidia-smi-q-x.xml'
TOPO_FILE = 'nvidia-smi-topo-m.txt'
NVLINK_FILE = 'nvidia-smi-nvlink-s.txt'
RUNTIME_FILE = 'sim/runtime.json'
MIG_FILE = 'sim/mig-profiles.json'

HELP_HINT = "Please run 'nvidia-smi -h' for help."
INVALID_COMBINATION = 'Invalid combination of input arguments. ' + HELP_HINT

# nvidia-smi exit codes (nvidia-smi(1) RETURN VALUE)
RC_OK = 0
RC_BAD_ARG = 2
RC_NOT_SUPPORTED = 3
RC_NO_PERMISSION = 4
RC_NOT_FOUND = 6
RC_DRIVER = 9
RC_OTHER = 255


class Result(object):
    """What one invocation prints and returns."""

    def __init__(self, rc=0, out='', err=''):
        self.rc = rc
        self.out = out
        self.err = err

    def __repr__(self):
        return 'Result(rc=%r, out=%r, err=%r)' % (self.rc, self.out, self.err)


class Exit(Exception):
    def __init__(self, rc, out='', err=''):
        Exception.__init__(self, out or err)
        self.result = Result(rc, out, err)


def bad_argument(message):
    return Exit(RC_BAD_ARG, message + '\n')


# ---------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------

def sim_paths(environ=None):
    """(profile_dir, state_file) honouring the GPUOPS_SIM_* overrides."""
    env = os.environ if environ is None else environ
    root = env.get('GPUOPS_SIM_ROOT') or '/'
    profile = env.get('GPUOPS_SIM_PROFILE') or os.path.join(root, DEFAULT_PROFILE)
    state = env.get('GPUOPS_SIM_STATE') or os.path.join(root, DEFAULT_STATE)
    return profile, state


# ---------------------------------------------------------------------------
# Textual XML editing: keeps the real tool's formatting byte for byte
# ---------------------------------------------------------------------------

_GPU_OPEN_RE = re.compile(r'^([ \t]*)<gpu id="([^"]*)">[ \t]*\r?\n', re.M)


class XmlDoc(object):
    """An ``nvidia-smi -q -x`` document split into its ``<gpu>`` blocks.

    ``head + blocks[0] + seps[0] + blocks[1] + ... + blocks[-1] + tail`` is the
    original text; every block runs from the start of its ``<gpu id=...>``
    line to the end of its ``</gpu>`` line (newline included).
    """

    def __init__(self, text):
        self.text = text
        spans = []
        pos = 0
        while True:
            match = _GPU_OPEN_RE.search(text, pos)
            if not match:
                break
            indent = match.group(1)
            close = re.compile(r'^' + re.escape(indent) + r'</gpu>[ \t]*(\r?\n|$)', re.M)
            cmatch = close.search(text, match.end())
            if not cmatch:
                raise ValueError('unterminated <gpu> element in nvidia-smi -q -x text')
            spans.append((match.start(), cmatch.end()))
            pos = cmatch.end()
        if spans:
            self.head = text[:spans[0][0]]
            self.tail = text[spans[-1][1]:]
        else:
            match = re.search(r'^[ \t]*</nvidia_smi_log>', text, re.M)
            cut = match.start() if match else len(text)
            self.head = text[:cut]
            self.tail = text[cut:]
        self.blocks = [text[s:e] for s, e in spans]
        self.seps = [text[spans[i][1]:spans[i + 1][0]] for i in range(len(spans) - 1)]

    def render(self, blocks=None):
        blocks = self.blocks if blocks is None else blocks
        parts = [self.head]
        for i, block in enumerate(blocks):
            if i:
                parts.append(self.seps[i - 1] if i - 1 < len(self.seps) else (self.seps[-1] if self.seps else '\n'))
            parts.append(block)
        parts.append(self.tail)
        return ''.join(parts)

    def indent_unit(self):
        match = re.search(r'<nvidia_smi_log>[ \t]*\r?\n([ \t]+)<', self.text)
        return match.group(1) if match else '    '


_TAG_RE = re.compile(r'<(/?)([A-Za-z_][\w.:-]*)(?:\s[^>]*?)?(/?)>')


def _find_element(text, tag, start, end, direct_only):
    """(open_start, open_end, close_start, close_end) of element ``tag`` in text[start:end].

    ``direct_only``: only an element at depth 0 of the range; otherwise the
    shallowest (then first) one, so ``fb_memory_usage`` of a <gpu> block is
    the GPU's own and not a MIG device's.
    """
    depth = 0
    best = None
    for match in _TAG_RE.finditer(text, start, end):
        closing, name, selfclose = match.group(1), match.group(2), match.group(3)
        if closing:
            depth -= 1
            continue
        if name == tag and (best is None or depth < best[0]) and (depth == 0 or not direct_only):
            best = (depth, match)
            if depth == 0:
                break
        if not selfclose:
            depth += 1
    if best is None:
        return None
    match = best[1]
    if match.group(3):
        return match.start(), match.end(), match.end(), match.end()
    nesting = 0
    for other in _TAG_RE.finditer(text, match.end(), end):
        if other.group(2) != tag or other.group(3):
            continue
        if other.group(1):
            if nesting == 0:
                return match.start(), match.end(), other.start(), other.end()
            nesting -= 1
        else:
            nesting += 1
    return None


def element_span(text, path, start=0, end=None):
    """Spans of the element at ``path`` ("a/b/c") inside ``text[start:end]``.

    Returns (content_start, content_end, element_start, element_end) or None.
    The first component is the shallowest element of that name, the others
    are direct children. Tags are matched exactly (``<pci>`` is not ``<pci_bus>``).
    """
    if end is None:
        end = len(text)
    elem_start = elem_end = None
    for number, tag in enumerate(path.split('/')):
        found = _find_element(text, tag, start, end, direct_only=number > 0)
        if found is None:
            return None
        elem_start, start, end, elem_end = found
    return start, end, elem_start, elem_end


def get_value(text, path):
    """Stripped text of the element at ``path`` or None."""
    span = element_span(text, path)
    if span is None:
        return None
    return text[span[0]:span[1]].strip()


def set_value(text, path, value):
    """Replace the content of the element at ``path`` (which must exist)."""
    span = element_span(text, path)
    if span is None:
        raise KeyError(path)
    return text[:span[0]] + value + text[span[1]:]


def has_element(text, path):
    return element_span(text, path) is not None


def element_indent(text, path):
    """Leading whitespace of the line holding the element at ``path``."""
    span = element_span(text, path)
    if span is None:
        raise KeyError(path)
    line_start = text.rfind('\n', 0, span[2]) + 1
    return text[line_start:span[2]]


def replace_element(text, path, new_element):
    """Replace the whole element at ``path`` (tags included) by ``new_element``."""
    span = element_span(text, path)
    if span is None:
        raise KeyError(path)
    return text[:span[2]] + new_element + text[span[3]:]


def block_unit(block):
    """Indentation unit used inside a <gpu> block (4 spaces or a tab)."""
    match = re.match(r'([ \t]*)<gpu id="[^"]*">[ \t]*\r?\n([ \t]*)<', block)
    if not match:
        return '    '
    outer, inner = match.group(1), match.group(2)
    return inner[len(outer):] or '    '


# ---------------------------------------------------------------------------
# Profile
# ---------------------------------------------------------------------------

def _read(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8')


class Profile(object):
    """The installed hardware profile (a capture bundle plus sim/ data)."""

    def __init__(self, path):
        self.path = path
        if not os.path.isdir(path):
            raise Exit(RC_OTHER, '', 'gpuops-sim: no simulator profile installed at %s\n' % path)
        self.runtime = {}
        runtime_path = os.path.join(path, RUNTIME_FILE)
        if os.path.isfile(runtime_path):
            self.runtime = json.loads(_read(runtime_path))
        self.mig_tables = {}
        mig_path = os.path.join(path, MIG_FILE)
        if os.path.isfile(mig_path):
            self.mig_tables = json.loads(_read(mig_path))
        self._xml = None

    def file(self, name):
        """(rc, text) of a bundle file, or None when absent."""
        path = os.path.join(self.path, name)
        if not os.path.isfile(path):
            return None
        rc = 0
        if os.path.isfile(path + '.rc'):
            value = _read(path + '.rc').strip()
            rc = int(value) if value.lstrip('-').isdigit() else 1
        return rc, _read(path)

    def failure(self):
        """Whole-tool failure every invocation reports (driver not loaded ...)."""
        return self.runtime.get('failure')

    @property
    def xml(self):
        if self._xml is None:
            found = self.file(XML_FILE)
            if found is None:
                raise Exit(RC_OTHER, '', 'gpuops-sim: profile has no %s\n' % XML_FILE)
            rc, text = found
            if rc:
                raise Exit(rc, text)
            self._xml = XmlDoc(text)
        return self._xml

    def digest(self):
        found = self.file(XML_FILE)
        text = found[1] if found else ''
        return hashlib.sha256((text + json.dumps(self.runtime, sort_keys=True)).encode('utf-8')).hexdigest()

    def gpus(self):
        """Static per-GPU facts from the profile XML, in enumeration order."""
        result = []
        for index, block in enumerate(self.xml.blocks):
            result.append(GpuInfo(index, block))
        return result

    def mig_table(self, product_name):
        return self.mig_tables.get(product_name)


class GpuInfo(object):
    def __init__(self, index, block):
        self.index = index
        self.block = block
        self.bus_id = re.match(r'[ \t]*<gpu id="([^"]*)">', block).group(1)
        self.name = get_value(block, 'product_name')
        self.uuid = get_value(block, 'uuid')

    def value(self, path):
        return get_value(self.block, path)


# ---------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------

class State(object):
    """Mutable device state, persisted as JSON."""

    def __init__(self, path, profile):
        self.path = path
        self.profile = profile
        self.data = None
        self._lock = None

    def _initial(self):
        gpus = {}
        for gpu in self.profile.gpus():
            gpus[gpu.bus_id] = {
                'persistence_mode': gpu.value('persistence_mode'),
                'compute_mode': gpu.value('compute_mode'),
                'mig_current': gpu.value('mig_mode/current_mig'),
                'mig_pending': gpu.value('mig_mode/pending_mig'),
                'busy': False,
                'gpu_instances': [],
            }
        return {'version': SIM_VERSION, 'profile_digest': self.profile.digest(), 'gpus': gpus}

    def load(self, lock=False):
        if lock:
            directory = os.path.dirname(self.path) or '.'
            if not os.path.isdir(directory):
                os.makedirs(directory)
            self._lock = open(self.path + '.lock', 'a')
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX)
        data = None
        if os.path.isfile(self.path):
            try:
                data = json.loads(_read(self.path))
            except ValueError:
                data = None
        if (not isinstance(data, dict) or data.get('version') != SIM_VERSION
                or data.get('profile_digest') != self.profile.digest()):
            data = self._initial()
        # GPUs of the profile missing from the state (should not happen) get defaults
        initial = None
        for gpu in self.profile.gpus():
            if gpu.bus_id not in data['gpus']:
                initial = initial or self._initial()
                data['gpus'][gpu.bus_id] = initial['gpus'][gpu.bus_id]
        self.data = data
        return self

    def save(self):
        directory = os.path.dirname(self.path) or '.'
        if not os.path.isdir(directory):
            os.makedirs(directory)
        fd, tmp = tempfile.mkstemp(prefix='.state.', dir=directory)
        with os.fdopen(fd, 'w') as handle:
            json.dump(self.data, handle, indent=2, sort_keys=True)
            handle.write('\n')
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)

    def release(self):
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def gpu(self, bus_id):
        return self.data['gpus'][bus_id]


# ---------------------------------------------------------------------------
# MIG model
# ---------------------------------------------------------------------------

MEMORY_SLOTS = 8
COMPUTE_SLICES = 7


def gi_id_for(start, size):
    """GPU instance id of a memory placement (binary tree of the 8 memory slices).

    Matches the real captures: 3g.40gb at 4:4 -> 2, 2g.20gb at 0:2 -> 3 (H100),
    1g.24gb at 4:2/0:2/2:2 -> 5/3/4 (GH200).
    """
    if size >= 8:
        return 0
    if size >= 4:
        return 1 + start // 4
    if size >= 2:
        return 3 + start // 2
    return 7 + start


def _profile_by_id(table, profile_id):
    for prof in table['profiles']:
        if prof['id'] == profile_id:
            return prof
    return None


def find_gi_profile(table, token):
    """Profile named by ``token``: an id ("9") or a name ("3g.40gb", "MIG 3g.40gb")."""
    token = token.strip()
    if re.match(r'^\d+$', token):
        return _profile_by_id(table, int(token))
    name = token[4:] if token.upper().startswith('MIG ') else token
    for prof in table['profiles']:
        if prof['name'].lower() == name.lower():
            return prof
    return None


def _used(table, gis):
    slots = set()
    compute = 0
    for gi in gis:
        prof = _profile_by_id(table, gi['profile_id'])
        slots.update(range(gi['start'], gi['start'] + gi['size']))
        compute += prof['compute_slices'] if prof else 0
    return slots, compute


def place_gi(table, gis, prof):
    """Memory start of the next ``prof`` instance, or None (Insufficient Resources)."""
    same = sum(1 for gi in gis if gi['profile_id'] == prof['id'])
    if same >= prof['total']:
        return None
    if prof.get('media_extensions') and any(
            (_profile_by_id(table, gi['profile_id']) or {}).get('media_extensions') for gi in gis):
        return None
    slots, compute = _used(table, gis)
    if compute + prof['compute_slices'] > COMPUTE_SLICES:
        return None
    for start in prof['placements']:
        wanted = set(range(start, start + prof['mem_slots']))
        if not wanted & slots:
            return start
    return None


def free_count(table, gis, prof):
    """How many more ``prof`` instances fit (the lgip Free column)."""
    trial = [dict(gi) for gi in gis]
    count = 0
    while True:
        start = place_gi(table, trial, prof)
        if start is None:
            return count
        trial.append({'id': -1, 'profile_id': prof['id'], 'start': start, 'size': prof['mem_slots'],
                      'compute_instances': []})
        count += 1


def mig_uuid(gpu_uuid, gi_id, ci_id):
    return 'MIG-%s' % uuid.uuid5(uuid.NAMESPACE_URL, 'gpuops-sim:%s/%d/%d' % (gpu_uuid, gi_id, ci_id))


def mig_devices(table, gis):
    """MIG devices (one per compute instance) ordered as nvidia-smi numbers them."""
    devices = []
    for gi in sorted(gis, key=lambda g: g['id']):
        prof = _profile_by_id(table, gi['profile_id'])
        for ci in sorted(gi['compute_instances'], key=lambda c: c['id']):
            devices.append((gi, ci, prof))
    return devices


# ---------------------------------------------------------------------------
# Effective XML (profile XML + state)
# ---------------------------------------------------------------------------

def _mig_devices_element(indent, unit, table, gis, bar1_total_mib):
    devices = mig_devices(table, gis) if table else []
    if not devices:
        return '<mig_devices>\n%s%sNone\n%s</mig_devices>' % (indent, unit, indent)
    i1 = indent + unit
    lines = ['<mig_devices>']
    for index, (gi, ci, prof) in enumerate(devices):
        i2, i3, i4 = i1 + unit, i1 + unit * 2, i1 + unit * 3
        total = int(round(float(prof['memory_gib']) * 1024))
        used = prof.get('fb_used_mib') or 0
        free = prof.get('fb_free_mib', total - used)
        bar1 = bar1_total_mib * prof['mem_slots'] // MEMORY_SLOTS - 1 if bar1_total_mib else 0
        lines += [
            i1 + '<mig_device>',
            i2 + '<index>%d</index>' % index,
            i2 + '<gpu_instance_id>%d</gpu_instance_id>' % gi['id'],
            i2 + '<compute_instance_id>%d</compute_instance_id>' % ci['id'],
            i2 + '<device_attributes>',
            i3 + '<shared>',
            i4 + '<multiprocessor_count>%d</multiprocessor_count>' % prof['sm'],
            i4 + '<copy_engine_count>%d</copy_engine_count>' % prof['ce'],
            i4 + '<encoder_count>%d</encoder_count>' % prof['enc'],
            i4 + '<decoder_count>%d</decoder_count>' % prof['dec'],
            i4 + '<ofa_count>%d</ofa_count>' % prof['ofa'],
            i4 + '<jpg_count>%d</jpg_count>' % prof['jpeg'],
            i3 + '</shared>',
            i2 + '</device_attributes>',
            i2 + '<ecc_error_count>',
            i3 + '<volatile_count>',
            i4 + '<sram_uncorrectable>0</sram_uncorrectable>',
            i3 + '</volatile_count>',
            i2 + '</ecc_error_count>',
            i2 + '<fb_memory_usage>',
            i3 + '<total>%d MiB</total>' % total,
            i3 + '<reserved>0 MiB</reserved>',
            i3 + '<used>%d MiB</used>' % used,
            i3 + '<free>%d MiB</free>' % free,
            i2 + '</fb_memory_usage>',
            i2 + '<bar1_memory_usage>',
            i3 + '<total>%d MiB</total>' % bar1,
            i3 + '<used>0 MiB</used>',
            i3 + '<free>%d MiB</free>' % bar1,
            i2 + '</bar1_memory_usage>',
            i1 + '</mig_device>',
        ]
    lines.append(indent + '</mig_devices>')
    return '\n'.join(lines)


def _mib(value):
    match = re.match(r'^\s*(\d+)\s*MiB', value or '')
    return int(match.group(1)) if match else None


def apply_state(block, gpu_state, table):
    """One <gpu> block with the state's modes and MIG devices."""
    for path, key in (('persistence_mode', 'persistence_mode'), ('compute_mode', 'compute_mode'),
                      ('mig_mode/current_mig', 'mig_current'), ('mig_mode/pending_mig', 'mig_pending')):
        if gpu_state.get(key) is not None and has_element(block, path):
            block = set_value(block, path, gpu_state[key])
    if has_element(block, 'mig_devices'):
        indent = element_indent(block, 'mig_devices')
        unit = block_unit(block)
        gis = gpu_state.get('gpu_instances') or [] if gpu_state.get('mig_current') == 'Enabled' else []
        bar1 = _mib(get_value(block, 'bar1_memory_usage/total'))
        block = replace_element(block, 'mig_devices', _mig_devices_element(indent, unit, table, gis, bar1))
    if gpu_state.get('processes') and D is not None and has_element(block, 'processes'):
        block = replace_element(block, 'processes', D.processes_element(
            element_indent(block, 'processes'), block_unit(block), gpu_state['processes']))
    return block


def effective_blocks(profile, state):
    blocks = []
    for gpu in profile.gpus():
        blocks.append(apply_state(gpu.block, state.gpu(gpu.bus_id), profile.mig_table(gpu.name)))
    return blocks


# ---------------------------------------------------------------------------
# -q text rendering
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# --query-gpu
# ---------------------------------------------------------------------------

COMPUTE_CAP = {'Hopper': '9.0', 'Ampere': '8.0', 'Pascal': '6.0', 'Volta': '7.0', 'Turing': '7.5',
               'Ada Lovelace': '8.9', 'Blackwell': '10.0'}


def _na(value):
    if value is None or value.strip() in ('N/A', '', 'Not Supported'):
        return None
    return value.strip()


def _strip_unit(value):
    match = re.match(r'^\s*(-?[0-9.]+)\s*\S*$', value)
    return match.group(1) if match else value


def _hex(prefix):
    def get(ctx):
        value = _na(ctx['gpu'].value(prefix))
        return None if value is None else '0x' + value
    return get


def _path(path, unit_kind=None):
    def get(ctx):
        value = _na(get_value(ctx['block'], path))
        if value is None:
            return None
        if unit_kind == 'width':
            return value.rstrip('x')
        if unit_kind == 'temp':
            return _strip_unit(value)
        return value
    return get


def _ecc_total(group, kind):
    def get(ctx):
        block = ctx['block']
        span = element_span(block, 'ecc_errors/' + group)
        if span is None:
            return None
        text = block[span[0]:span[1]]
        if '<double_bit>' in text:
            sub = 'double_bit/total' if kind == 'uncorrectable' else 'single_bit/total'
            return _na(get_value(text, sub))
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
    'compute_cap': (None, lambda c: COMPUTE_CAP.get(_na(get_value(c['block'], 'product_architecture')) or '')),
    'utilization.gpu': ('%', _path('utilization/gpu_util')),
    'utilization.memory': ('%', _path('utilization/memory_util')),
    'ecc.mode.current': (None, _path('ecc_mode/current_ecc')),
    'ecc.mode.pending': (None, _path('ecc_mode/pending_ecc')),
    'ecc.errors.corrected.volatile.total': (None, _ecc_total('volatile', 'correctable')),
    'ecc.errors.corrected.aggregate.total': (None, _ecc_total('aggregate', 'correctable')),
    'ecc.errors.uncorrected.volatile.total': (None, _ecc_total('volatile', 'uncorrectable')),
    'ecc.errors.uncorrected.aggregate.total': (None, _ecc_total('aggregate', 'uncorrectable')),
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
                value = _strip_unit(value)
            row.append(value)
        lines.append(', '.join(row))
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------
# MIG tables
# ---------------------------------------------------------------------------

LGIP_HEAD = (
    '+-------------------------------------------------------------------------------+\n'
    '| GPU instance profiles:                                                        |\n'
    '| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |\n'
    '|                                Free/Total   GiB              CE    JPEG  OFA  |\n'
    '|===============================================================================|\n')
LGIP_SEP = '+-------------------------------------------------------------------------------+\n'
LGI_HEAD = (
    '+---------------------------------------------------------+\n'
    '| GPU instances:                                          |\n'
    '| GPU   Name               Profile  Instance   Placement  |\n'
    '|                            ID       ID       Start:Size |\n'
    '|=========================================================|\n')
LGI_SEP = '+---------------------------------------------------------+\n'
LCI_HEAD = (
    '+--------------------------------------------------------------------+\n'
    '| Compute instances:                                                 |\n'
    '| GPU     GPU       Name             Profile   Instance   Placement  |\n'
    '|       Instance                       ID        ID       Start:Size |\n'
    '|         ID                                                         |\n'
    '|====================================================================|\n')
LCI_SEP = '+--------------------------------------------------------------------+\n'


def render_lgip(rows):
    """rows: [(gpu_index, profile, free)] -> the ``mig -lgip`` table (H100 driver layout)."""
    out = [LGIP_HEAD]
    for gpu, prof, free in rows:
        name = 'MIG ' + prof['name']
        line1 = ('|' + ('%d' % gpu).rjust(4) + '  ' + name.ljust(18) + ('%d' % prof['id']).rjust(4)
                 + ('%d/%d' % (free, prof['total'])).rjust(8) + ' ' * 8 + prof['memory_gib'].ljust(11)
                 + prof['p2p'].ljust(7) + ('%d' % prof['sm']).ljust(7) + ('%d' % prof['dec']).ljust(6)
                 + ('%d' % prof['enc']).ljust(4) + '|\n')
        line2 = ('|' + ' ' * 63 + ('%d' % prof['ce']).ljust(6) + ('%d' % prof['jpeg']).ljust(6)
                 + ('%d' % prof['ofa']).ljust(4) + '|\n')
        out += [line1, line2, LGIP_SEP]
    return ''.join(out)


def render_lgi(rows):
    """rows: [(gpu_index, gi, profile)] -> the ``mig -lgi`` table."""
    out = [LGI_HEAD]
    for gpu, gi, prof in rows:
        out.append('|' + ('%d' % gpu).rjust(4) + '  ' + ('MIG ' + prof['name']).ljust(20)
                   + ('%d' % prof['id']).rjust(4) + ('%d' % gi['id']).rjust(9) + ' ' * 10
                   + ('%d:%d' % (gi['start'], gi['size'])).ljust(8) + '|\n')
        out.append(LGI_SEP)
    return ''.join(out)


def render_lci(rows):
    """rows: [(gpu_index, gi, ci, profile)] -> the ``mig -lci`` table."""
    out = [LCI_HEAD]
    for gpu, gi, ci, prof in rows:
        out.append('|' + ('%d' % gpu).rjust(4) + ('%d' % gi['id']).rjust(7) + ' ' * 7
                   + ('MIG ' + prof['name']).ljust(18) + ('%d' % ci['profile_id']).rjust(4)
                   + ('%d' % ci['id']).rjust(10) + ' ' * 10 + ('%d:%d' % (ci['start'], ci['size'])).ljust(8)
                   + '|\n')
        out.append(LCI_SEP)
    return ''.join(out)


CCI_OK = 'Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)'


def _gi_sort_key(gi):
    return (gi['start'], gi['id'])


# ---------------------------------------------------------------------------
# topo -m: the header line in terminal underline codes
# ---------------------------------------------------------------------------

# Recent drivers print the header line of ``topo -m`` wrapped in the terminal
# underline codes SGR 4 and SGR 0, also when writing to a pipe or a file:
#     \t\x1b[4mGPU0\tGPU1\t...\tGPU NUMA ID\x1b[0m
# (ESC[4m after the leading tab, ESC[0m at the end of the line, nothing else
# coded). The profiles keep the header plain: they come from copies taken from
# web pages, which lose the codes; the replayer adds them when it prints.
#
# Which drivers: program-captured outputs (redirected to a file or read from a
# subprocess, never a terminal) show the codes for 535.129.03 (an sglang
# check_env dump), 570.144, 580.95.05, 580.105.08, 580.142, 580.173.02 (host
# reports), 590.48.01, 595.71.05, 595.80 and 610.57.04 (Linux) and 610.62
# (Windows) (utkuozdemir/nvidia_gpu_exporter internal/captures/, collect.sh
# appends the output to the capture file). siboehm/bench
# gpu/nvlink/README.md (2023-03-02) shows them on a header without the
# ``GPU NUMA ID`` column, so some driver released by then (530 or older)
# already printed them; no program-captured output without the codes was found
# for any driver. The first version is therefore not pinned, and the rule is
# the conservative one: the codes for a profile whose XML driver version is
# TOPO_UNDERLINE_SINCE or newer (the oldest branch with a captured version),
# the plain header for older drivers (the A100 and P100 profiles, 510.47.03)
# and when the XML gives no version. See simulator/README.md.
TOPO_UNDERLINE_SINCE = (535,)
SGR_UNDERLINE = '\x1b[4m'
SGR_RESET = '\x1b[0m'


def driver_version_tuple(version):
    """``(545, 23, 8)`` for ``'545.23.08'``; None when the text is not a dotted version number."""
    version = (version or '').strip()
    if not re.match(r'^\d+(\.\d+)*$', version):
        return None
    return tuple(int(part) for part in version.split('.'))


def topo_header_underlined(driver_version):
    """Whether the driver of this version prints the ``topo -m`` header in underline codes."""
    found = driver_version_tuple(driver_version)
    return found is not None and found >= TOPO_UNDERLINE_SINCE


def underline_topo_header(text):
    """``topo -m`` text with its header line (the first line, ``\\t`` then the column names)
    wrapped as recent drivers print it; any other text unchanged."""
    cut = text.find('\n')
    line, rest = (text, '') if cut < 0 else (text[:cut], text[cut:])
    ending = ''
    if line.endswith('\r'):
        line, ending = line[:-1], '\r'
    if not line.startswith('\t') or not line.strip() or '\x1b' in line:
        return text
    return '\t' + SGR_UNDERLINE + line[1:] + SGR_RESET + ending + rest


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

# option -> (canonical key, takes value)
TOP_OPTIONS = {
    '-h': ('help', False), '--help': ('help', False), '--version': ('version', False),
    '-L': ('list', False), '--list-gpus': ('list', False),
    '-q': ('query', False), '--query': ('query', False),
    '-x': ('xml', False), '--xml-format': ('xml', False),
    '-i': ('id', True), '--id': ('id', True),
    '--query-gpu': ('query_gpu', True), '--format': ('format', True),
    '-pm': ('pm', True), '--persistence-mode': ('pm', True),
    '-c': ('compute_mode', True), '--compute-mode': ('compute_mode', True),
    '-mig': ('mig', True), '--multi-instance-gpu': ('mig', True),
}
# Real options the simulator does not answer: refused with an explicit message.
NOT_SIMULATED = set(['-d', '--display', '-f', '--filename', '-l', '--loop', '-lms', '--loop-ms', '-r',
                     '--gpu-reset', '-e', '--ecc-config', '-p', '--reset-ecc-errors', '-ac',
                     '--applications-clocks', '-rac', '-lgc', '--lock-gpu-clocks', '-rgc', '-pl',
                     '--power-limit', '-am', '-B', '--list-excluded-gpus', '-u', '-t', '-dm', '-gom',
                     'dmon', 'pmon', 'vgpu', 'conf-compute', 'drain', 'clocks', 'encodersessions',
                     'fbcsessions', 'c2c', 'gpm', 'pci', 'power', 'boost-slider', 'power-hint',
                     'set-hostname', 'get-hostname', 'counters', 'daemon', 'replay', 'acct', 'rg'])

COMPUTE_MODES = {
    '0': ('Default', 'DEFAULT'), 'DEFAULT': ('Default', 'DEFAULT'),
    '2': ('Prohibited', 'PROHIBITED'), 'PROHIBITED': ('Prohibited', 'PROHIBITED'),
    '3': ('Exclusive_Process', 'EXCLUSIVE_PROCESS'), 'EXCLUSIVE_PROCESS': ('Exclusive_Process', 'EXCLUSIVE_PROCESS'),
}


def not_simulated(option):
    return Exit(RC_BAD_ARG, '', 'gpuops-sim: nvidia-smi %s is not simulated by gpuops-sim.\n' % option)


def parse_options(argv, table, allow_positional=False):
    """Parse ``argv`` with ``table`` (option -> (key, takes_value)).

    Accepts "-i 0", "-i=0", "--id=0" and "--id 0". Returns (opts, positionals).
    """
    opts = {}
    positionals = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, value = arg, None
        if arg.startswith('-') and '=' in arg:
            name, value = arg.split('=', 1)
        if name in table:
            key, takes = table[name]
            if takes:
                if value is None:
                    if i + 1 >= len(argv):
                        raise bad_argument('ERROR: Option %s is missing its value. %s' % (name, HELP_HINT))
                    value = argv[i + 1]
                    i += 1
            elif value is not None:
                raise bad_argument('ERROR: Option %s is not recognized. %s' % (arg, HELP_HINT))
            if key in opts and opts[key] != (value if takes else True):
                raise bad_argument(INVALID_COMBINATION)
            opts[key] = value if takes else True
        elif name in NOT_SIMULATED:
            raise not_simulated(name)
        elif allow_positional and not arg.startswith('-'):
            positionals.append(arg)
        else:
            raise bad_argument('ERROR: Option %s is not recognized. %s' % (arg, HELP_HINT))
        i += 1
    return opts, positionals


def _norm_bus(value):
    match = re.match(r'^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$', value.strip())
    if not match:
        return None
    domain = int(match.group(1) or '0', 16)
    return '%08X:%02X:%02X.%s' % (domain, int(match.group(2), 16), int(match.group(3), 16), match.group(4))


def select_gpus(gpus, id_arg):
    """GPUs named by -i (indexes, UUIDs or PCI bus ids, comma separated)."""
    if id_arg is None:
        return list(gpus)
    chosen = []
    for token in id_arg.split(','):
        token = token.strip()
        found = None
        for gpu in gpus:
            if token.isdigit() and int(token) == gpu.index:
                found = gpu
            elif gpu.uuid and token.lower() == gpu.uuid.lower():
                found = gpu
            elif _norm_bus(token) is not None and _norm_bus(token) == _norm_bus(gpu.bus_id):
                found = gpu
        if found is None:
            raise Exit(RC_NOT_FOUND, 'No devices were found\n')
        if found not in chosen:
            chosen.append(found)
    return sorted(chosen, key=lambda g: g.index)


def _require_root(action):
    if os.environ.get('GPUOPS_SIM_ALLOW_NONROOT') == '1':
        return
    if hasattr(os, 'geteuid') and os.geteuid() != 0:
        raise action


class Nvsmi(object):
    """One nvidia-smi invocation against a profile and its state."""

    def __init__(self, profile_dir, state_file):
        self.profile = Profile(profile_dir)
        self.state_file = state_file

    # -- helpers ----------------------------------------------------------
    def _state(self, lock=False):
        return State(self.state_file, self.profile).load(lock=lock)

    def _meta(self):
        head = self.profile.xml.head
        return {
            'driver_version': get_value(head, 'driver_version') or get_value(head, 'kmd_version'),
            'cuda_version': get_value(head, 'cuda_version'),
            'timestamp': get_value(head, 'timestamp'),
            'count': len(self.profile.xml.blocks),
        }

    def _driver_version(self):
        """The profile XML's driver version; None when the profile has no usable XML."""
        try:
            return self._meta()['driver_version']
        except Exit:
            return None

    # -- entry -----------------------------------------------------------
    def run(self, argv):
        failure = self.profile.failure()
        if failure:
            return Result(int(failure.get('rc', RC_DRIVER)), failure.get('stdout', ''), failure.get('stderr', ''))
        if self.profile.runtime.get('driver') == 'emulated':
            if D is None:
                return Result(RC_OTHER, '', 'gpuops-sim: driver emulation needs sim_driver.py\n')
            gate = D.nvsmi_gate(D.sim_root())
            if isinstance(gate, tuple):
                return Result(*gate)
            for tag in ('driver_version', 'cuda_version'):
                if has_element(self.profile.xml.head, tag):
                    self.profile.xml.head = set_value(self.profile.xml.head, tag, gate[tag] or 'N/A')
        try:
            return self._dispatch(list(argv))
        except Exit as exc:
            return exc.result

    def _dispatch(self, argv):
        if argv and argv[0] == 'topo':
            return self.cmd_topo(argv[1:])
        if argv and argv[0] == 'nvlink':
            return self.cmd_nvlink(argv[1:])
        if argv and argv[0] == 'mig':
            return self.cmd_mig(argv[1:])
        if argv and argv[0] in NOT_SIMULATED:
            raise not_simulated(argv[0])
        opts, _pos = parse_options(argv, TOP_OPTIONS)
        actions = [k for k in ('help', 'version', 'list', 'query', 'query_gpu', 'pm', 'compute_mode', 'mig')
                   if k in opts]
        if len(actions) > 1 or ('xml' in opts and actions != ['query']) or (
                'format' in opts and actions != ['query_gpu']):
            raise bad_argument(INVALID_COMBINATION)
        action = actions[0] if actions else 'table'
        if action == 'help':
            return Result(0, self.help_text())
        if action == 'version':
            meta = self._meta()
            driver = meta['driver_version'] or 'N/A'
            lines = ['NVIDIA-SMI version  : %s' % driver,
                     'NVML version        : %s' % '.'.join(driver.split('.')[:2]),
                     'DRIVER version      : %s' % driver,
                     'CUDA Version        : %s' % (meta['cuda_version'] or 'N/A')]
            return Result(0, '\n'.join(lines) + '\n')
        if action == 'query_gpu' and 'format' not in opts:
            raise bad_argument('"--format=" switch is missing. %s' % HELP_HINT)
        gpus = self.profile.gpus()
        if not gpus:
            raise Exit(RC_NOT_FOUND, 'No devices were found\n')
        selected = select_gpus(gpus, opts.get('id'))
        handler = getattr(self, 'do_' + action)
        return handler(opts, gpus, selected)

    # -- queries ----------------------------------------------------------
    def _effective(self, state):
        return effective_blocks(self.profile, state)

    def do_query(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        text = self.profile.xml.render([blocks[g.index] for g in selected])
        if opts.get('xml'):
            return Result(0, text)
        return Result(0, render_q_text(text))

    def do_list(self, opts, gpus, selected):
        state = self._state()
        lines = []
        for gpu in selected:
            lines.append('GPU %d: %s (UUID: %s)' % (gpu.index, gpu.name, gpu.uuid))
            st = state.gpu(gpu.bus_id)
            table = self.profile.mig_table(gpu.name)
            if st.get('mig_current') == 'Enabled' and table:
                for dev_index, (gi, ci, prof) in enumerate(mig_devices(table, st['gpu_instances'])):
                    lines.append('  MIG %s Device %2d: (UUID: %s)' % (
                        prof['name'].ljust(11), dev_index, mig_uuid(gpu.uuid, gi['id'], ci['id'])))
        return Result(0, '\n'.join(lines) + '\n')

    def do_query_gpu(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        text = render_query_gpu(opts['query_gpu'], opts['format'], selected,
                                [blocks[g.index] for g in selected], self._meta())
        return Result(0, text)

    def do_table(self, opts, gpus, selected):
        state = self._state()
        blocks = self._effective(state)
        return Result(0, render_table(self.profile, state, selected, [blocks[g.index] for g in selected]))

    # -- setters ----------------------------------------------------------
    def do_pm(self, opts, gpus, selected):
        value = opts['pm']
        if value not in ('0', '1', 'ENABLED', 'DISABLED', 'Enabled', 'Disabled'):
            raise bad_argument(INVALID_COMBINATION)
        enable = value in ('1', 'ENABLED', 'Enabled')
        _require_root(Exit(RC_NO_PERMISSION, 'Unable to set persistence mode for GPU %s: Insufficient Permissions\n'
                                             'Terminating early due to previous errors.\n' % selected[0].bus_id))
        state = self._state(lock=True)
        try:
            out = []
            for gpu in selected:
                st = state.gpu(gpu.bus_id)
                current = st.get('persistence_mode')
                if enable and current == 'Enabled':
                    out.append('Persistence mode is already Enabled for GPU %s.' % gpu.bus_id)
                elif not enable and current == 'Disabled':
                    out.append('Persistence mode is already Disabled for GPU %s.' % gpu.bus_id)
                elif enable:
                    st['persistence_mode'] = 'Enabled'
                    out.append('Enabled Legacy persistence mode for GPU %s.' % gpu.bus_id)
                else:
                    st['persistence_mode'] = 'Disabled'
                    out.append('Disabled persistence mode for GPU %s.' % gpu.bus_id)
            out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(0, '\n'.join(out) + '\n')

    def do_compute_mode(self, opts, gpus, selected):
        mode = COMPUTE_MODES.get(opts['compute_mode'].upper())
        if mode is None:
            raise bad_argument(INVALID_COMBINATION)
        _require_root(Exit(RC_NO_PERMISSION, 'Unable to set compute mode for GPU %s: Insufficient Permissions\n'
                                             'Terminating early due to previous errors.\n' % selected[0].bus_id))
        state = self._state(lock=True)
        try:
            out = []
            for gpu in selected:
                state.gpu(gpu.bus_id)['compute_mode'] = mode[0]
                out.append('Set compute mode to %s for GPU %s.' % (mode[1], gpu.bus_id))
            out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(0, '\n'.join(out) + '\n')

    def do_mig(self, opts, gpus, selected):
        value = opts['mig']
        if value not in ('0', '1', 'ENABLED', 'DISABLED', 'Enabled', 'Disabled'):
            raise bad_argument(INVALID_COMBINATION)
        enable = value in ('1', 'ENABLED', 'Enabled')
        verb = 'enable' if enable else 'disable'
        _require_root(Exit(RC_NO_PERMISSION, 'Unable to %s MIG Mode for GPU %s: Insufficient Permissions\n'
                                             'Terminating early due to previous errors.\n'
                                             % (verb, selected[0].bus_id)))
        state = self._state(lock=True)
        rc = 0
        try:
            out = []
            for gpu in selected:
                st = state.gpu(gpu.bus_id)
                target = 'Enabled' if enable else 'Disabled'
                if st.get('mig_current') in (None, 'N/A') or not self.profile.mig_table(gpu.name):
                    out.append('Unable to %s MIG Mode for GPU %s: Not Supported' % (verb, gpu.bus_id))
                    out.append('Treating as warning and moving on.')
                    continue
                if not enable and st.get('gpu_instances'):
                    out.append('Unable to disable MIG Mode for GPU %s: In use by another client' % gpu.bus_id)
                    out.append('Terminating early due to previous errors.')
                    rc = RC_OTHER
                    break
                st['mig_pending'] = target
                if st.get('busy') and st.get('mig_current') != target:
                    out.append('Warning: MIG mode is in pending %s state for GPU %s:In use by another client'
                               % (verb, gpu.bus_id))
                    out.append('%s is currently being used by one or more other processes (e.g. CUDA application '
                               'or a monitoring application such as another instance of nvidia-smi). Please first '
                               'kill all processes using the device and retry the command or reboot the system to '
                               'make MIG mode effective.' % gpu.bus_id)
                    continue
                st['mig_current'] = target
                if not enable:
                    st['gpu_instances'] = []
                out.append('%s MIG Mode for GPU %s' % ('Enabled' if enable else 'Disabled', gpu.bus_id))
                if enable and st.get('persistence_mode') == 'Disabled':
                    out.append('')
                    out.append('Warning: persistence mode is disabled on device %s. See the Known Issues section '
                               'of the nvidia-smi(1) man page for more information. Run with [--help | -h] switch '
                               'to get more information on how to enable persistence mode.' % gpu.bus_id)
            if rc == 0:
                out.append('All done.')
            state.save()
        finally:
            state.release()
        return Result(rc, '\n'.join(out) + '\n')

    # -- topo / nvlink ----------------------------------------------------
    def cmd_topo(self, argv):
        opts, _pos = parse_options(argv, {'-m': ('matrix', False), '--matrix': ('matrix', False)})
        if not opts.get('matrix'):
            raise bad_argument(INVALID_COMBINATION)
        found = self.profile.file(TOPO_FILE)
        if found is None:
            raise not_simulated('topo -m (profile has no %s)' % TOPO_FILE)
        rc, text = found
        if rc == 0 and topo_header_underlined(self._driver_version()):
            text = underline_topo_header(text)
        return Result(rc, text)

    def cmd_nvlink(self, argv):
        opts, _pos = parse_options(argv, {'-s': ('status', False), '--status': ('status', False),
                                          '-i': ('id', True), '--id': ('id', True)})
        if not opts.get('status'):
            raise not_simulated('nvlink ' + ' '.join(argv))
        found = self.profile.file(NVLINK_FILE)
        if found is None:
            raise not_simulated('nvlink -s (profile has no %s)' % NVLINK_FILE)
        rc, text = found
        if rc or opts.get('id') is None:
            return Result(rc, text)
        selected = select_gpus(self.profile.gpus(), opts['id'])
        wanted = set(g.index for g in selected)
        keep = []
        current = None
        for line in text.splitlines(True):
            match = re.match(r'^GPU (\d+): ', line)
            if match:
                current = int(match.group(1))
            if current in wanted:
                keep.append(line)
        return Result(0, ''.join(keep))

    # -- mig ------------------------------------------------------------------
    MIG_OPTIONS = {
        '-i': ('id', True), '--id': ('id', True),
        '-lgip': ('lgip', False), '--list-gpu-instance-profiles': ('lgip', False),
        '-lgi': ('lgi', False), '--list-gpu-instances': ('lgi', False),
        '-lci': ('lci', False), '--list-compute-instances': ('lci', False),
        '-cgi': ('cgi', True), '--create-gpu-instance': ('cgi', True),
        '-C': ('default_ci', False), '--default-compute-instance': ('default_ci', False),
        '-cci': ('cci', False), '--create-compute-instance': ('cci', False),
        '-gi': ('gi', True), '--gpu-instance-id': ('gi', True),
        '-ci': ('ci', True), '--compute-instance-id': ('ci', True),
        '-dci': ('dci', False), '--destroy-compute-instance': ('dci', False),
        '-dgi': ('dgi', False), '--destroy-gpu-instance': ('dgi', False),
    }
    MIG_NOT_SIMULATED = set(['-lgipp', '--list-gpu-instance-possible-placements', '-lcip',
                             '--list-compute-instance-profiles', '-lcipp'])

    def cmd_mig(self, argv):
        for arg in argv:
            if arg.split('=')[0] in self.MIG_NOT_SIMULATED:
                raise not_simulated('mig ' + arg)
        # -cci takes an optional profile list
        cci_value = None
        if '-cci' in argv or '--create-compute-instance' in argv:
            idx = argv.index('-cci') if '-cci' in argv else argv.index('--create-compute-instance')
            if idx + 1 < len(argv) and not argv[idx + 1].startswith('-'):
                cci_value = argv[idx + 1]
                argv = argv[:idx + 1] + argv[idx + 2:]
        opts, _pos = parse_options(argv, self.MIG_OPTIONS)
        actions = [k for k in ('lgip', 'lgi', 'lci', 'cgi', 'cci', 'dci', 'dgi') if k in opts]
        if len(actions) != 1 or ('default_ci' in opts and actions != ['cgi']):
            raise bad_argument(INVALID_COMBINATION)
        action = actions[0]
        gpus = self.profile.gpus()
        selected = select_gpus(gpus, opts.get('id'))
        capable = [g for g in selected if self.profile.mig_table(g.name)]
        if not capable:
            raise Exit(RC_NOT_FOUND, 'No MIG-supported devices found.\n')
        if action in ('cgi', 'cci', 'dci', 'dgi'):
            _require_root(Exit(RC_NO_PERMISSION, 'Insufficient Permissions\n'))
        state = self._state(lock=action in ('cgi', 'cci', 'dci', 'dgi'))
        try:
            enabled = [g for g in capable if state.gpu(g.bus_id).get('mig_current') == 'Enabled']
            if not enabled:
                raise Exit(RC_NOT_FOUND, 'No MIG-enabled devices found.\n')
            result = getattr(self, 'mig_' + action)(opts, enabled, state, cci_value)
            if action in ('cgi', 'cci', 'dci', 'dgi'):
                state.save()
            return result
        finally:
            state.release()

    def mig_lgip(self, opts, gpus, state, _cci):
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for prof in table['profiles']:
                rows.append((gpu.index, prof, free_count(table, gis, prof)))
        return Result(0, render_lgip(rows))

    def _gi_filter(self, opts):
        if opts.get('gi') is None:
            return None
        try:
            return set(int(x) for x in opts['gi'].split(','))
        except ValueError:
            raise bad_argument(INVALID_COMBINATION)

    def mig_lgi(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=_gi_sort_key):
                if wanted is None or gi['id'] in wanted:
                    rows.append((gpu.index, gi, _profile_by_id(table, gi['profile_id'])))
        if not rows:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, render_lgi(rows))

    def mig_lci(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=_gi_sort_key):
                if wanted is not None and gi['id'] not in wanted:
                    continue
                for ci in sorted(gi['compute_instances'], key=lambda c: c['id']):
                    rows.append((gpu.index, gi, ci, _profile_by_id(table, gi['profile_id'])))
        if not rows:
            raise Exit(RC_NOT_FOUND, 'No compute instances found: Not Found\n')
        return Result(0, render_lci(rows))

    @staticmethod
    def _new_ci(gi, prof):
        ci_id = 0
        used = set(c['id'] for c in gi['compute_instances'])
        while ci_id in used:
            ci_id += 1
        if gi['compute_instances']:
            return None
        ci = {'id': ci_id, 'profile_id': prof['ci_profile_id'], 'start': 0, 'size': prof['ci_placement_size']}
        gi['compute_instances'].append(ci)
        return ci

    def mig_cgi(self, opts, gpus, state, _cci):
        tokens = [t for t in opts['cgi'].split(',') if t.strip()]
        if not tokens:
            raise bad_argument(INVALID_COMBINATION)
        out = []
        err = []
        rc = 0
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for token in tokens:
                prof = find_gi_profile(table, token)
                if prof is None:
                    err.append('Unable to create a GPU instance on GPU %2d using profile %s: Not Found'
                               % (gpu.index, token.strip()))
                    err.append('Failed to create GPU instances: Not Found')
                    return Result(RC_NOT_FOUND, '\n'.join(out + err) + '\n')
                start = place_gi(table, gis, prof)
                if start is None:
                    err.append('Unable to create a GPU instance on GPU %2d using profile %s: Insufficient Resources'
                               % (gpu.index, token.strip()))
                    err.append('Failed to create GPU instances: Insufficient Resources')
                    rc = RC_OTHER
                    return Result(rc, '\n'.join(out + err) + '\n')
                gi = {'id': gi_id_for(start, prof['mem_slots']), 'profile_id': prof['id'], 'start': start,
                      'size': prof['mem_slots'], 'compute_instances': []}
                gis.append(gi)
                out.append('Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)'
                           % (gi['id'], gpu.index, prof['name'], prof['id']))
                if opts.get('default_ci'):
                    ci = self._new_ci(gi, prof)
                    out.append(CCI_OK % (ci['id'], gpu.index, gi['id'], prof['name'], ci['profile_id']))
        return Result(rc, '\n'.join(out) + '\n')

    def mig_cci(self, opts, gpus, state, cci_value):
        wanted = self._gi_filter(opts)
        out = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=lambda g: g['id'])
            targets = [gi for gi in gis if wanted is None or gi['id'] in wanted]
            if wanted is not None and len(targets) != len(wanted):
                return Result(RC_NOT_FOUND, '\n'.join(out + ['Unable to find GPU instance: Not Found',
                                                             'Failed to create compute instances: Not Found']) + '\n')
            for gi in targets:
                prof = _profile_by_id(table, gi['profile_id'])
                if cci_value is not None:
                    names = [t.strip() for t in cci_value.split(',') if t.strip()]
                    full = (str(prof['ci_profile_id']), prof['name'], 'MIG ' + prof['name'])
                    if len(names) != 1 or names[0] not in full:
                        raise not_simulated('mig -cci %s (only the full-GPU-instance compute profile is simulated)'
                                            % cci_value)
                ci = self._new_ci(gi, prof)
                if ci is None:
                    return Result(RC_OTHER, '\n'.join(out + [
                        'Unable to create a compute instance on GPU %2d GPU instance ID %2d using profile %s: '
                        'Insufficient Resources' % (gpu.index, gi['id'], prof['ci_profile_id']),
                        'Failed to create compute instances: Insufficient Resources']) + '\n')
                out.append(CCI_OK % (ci['id'], gpu.index, gi['id'], prof['name'], ci['profile_id']))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')

    def mig_dci(self, opts, gpus, state, _cci):
        wanted_gi = self._gi_filter(opts)
        wanted_ci = None
        if opts.get('ci') is not None:
            try:
                wanted_ci = set(int(x) for x in opts['ci'].split(','))
            except ValueError:
                raise bad_argument(INVALID_COMBINATION)
        out = []
        for gpu in gpus:
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=lambda g: g['id']):
                if wanted_gi is not None and gi['id'] not in wanted_gi:
                    continue
                for ci in list(sorted(gi['compute_instances'], key=lambda c: c['id'])):
                    if wanted_ci is not None and ci['id'] not in wanted_ci:
                        continue
                    gi['compute_instances'].remove(ci)
                    out.append('Successfully destroyed compute instance ID %2d from GPU %2d GPU instance ID %2d'
                               % (ci['id'], gpu.index, gi['id']))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No compute instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')

    def mig_dgi(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        out = []
        for gpu in gpus:
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for gi in sorted(list(gis), key=lambda g: g['id']):
                if wanted is not None and gi['id'] not in wanted:
                    continue
                if gi['compute_instances']:
                    out.append('Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client'
                               % (gi['id'], gpu.index))
                    out.append('Failed to destroy GPU instances: In use by another client')
                    return Result(RC_OTHER, '\n'.join(out) + '\n')
                gis.remove(gi)
                out.append('Successfully destroyed GPU instance ID %2d from GPU %2d' % (gi['id'], gpu.index))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')

    # -- help -------------------------------------------------------------------
    def help_text(self):
        driver = self._meta()['driver_version'] or 'N/A'
        return ('NVIDIA System Management Interface -- v%s (gpuops-sim replay)\n\n'
                'Simulated options: -L, -q [-x], -i, --query-gpu=... --format=csv[,noheader][,nounits],\n'
                '  -pm 0|1, -c MODE, -mig 0|1, --version, topo -m, nvlink -s [-i N],\n'
                '  mig -lgip | -lgi | -lci | -cgi LIST [-C] | -cci [-gi IDS] | -dci [-gi IDS] [-ci IDS] | -dgi [-gi IDS]\n'
                % driver)


# ---------------------------------------------------------------------------
# Default table (``nvidia-smi`` without arguments), 570-driver layout
# ---------------------------------------------------------------------------

def _short(value, default='N/A'):
    value = _na(value)
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
            ecc = _ecc_total('volatile', 'uncorrectable')({'block': block}) or 'N/A'
        else:
            ecc = 'Off'

        def short(path):
            value = _na(get_value(block, path))
            return 'N/A' if value is None else value.replace(' ', '')

        def watts(path):
            value = _na(get_value(block, path))
            return 'N/A' if value is None else '%dW' % int(round(float(_strip_unit(value))))
        used = _mib(get_value(block, 'fb_memory_usage/used')) or 0
        total = _mib(get_value(block, 'fb_memory_usage/total')) or 0
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
            bar1_total = _mib(get_value(block, 'bar1_memory_usage/total')) or 0
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
    procs = [r for g in gpus if D is not None for r in D.process_rows(g.index, state.gpu(g.bus_id).get('processes') or [])]
    lines += ['', rule,
              '| Processes:                                                                              |',
              '|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |',
              '|        ID   ID                                                               Usage      |',
              '|=========================================================================================|']
    lines += procs or ['|  No running processes found                                                             |']
    lines += [rule]
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------
# gpuops-sim admin tool
# ---------------------------------------------------------------------------

ADMIN_USAGE = ('usage: gpuops-sim {reboot|busy GPU [PID [NAME]]|idle GPU|state|reset-state|profile|boot|sync|fault}\n'
               '  reboot       apply pending MIG modes; GPU/compute instances, persistence and compute\n'
               '               mode return to their boot values (as on a real reboot); on a bare node: boot;\n'
               '               the HCAs\' RDMA state as after a boot (sim_rdma.py)\n'
               '  fault [roce_retrans_high [nic=HCA] | dcgm_diag_fail [gpu=N] [test=T] | nccl_slow [factor=F]\n'
               '         | clear [NAME]]\n'
               '               arm a fault at run time (gpuops-sim fault -h), or list the armed ones\n'
               '  busy GPU     mark GPU (index) as in use: -mig then only sets the pending mode; with PID\n'
               '               (and NAME, default python3) -q -x also lists that compute process\n'
               '  idle GPU     clear the busy mark and the processes\n'
               '  state        print the simulator state (JSON), with the driver state\n'
               '  boot         bare node: decide which NVIDIA module loads on this boot (newest kernel,\n'
               '               its DKMS module or the user space), write /run/gpuops-sim, GPU state of a boot\n'
               '  sync         bare node: place the stand-ins where packages shipped <path>.distrib\n'
               '  reset-state  forget all changes (fresh boot of a freshly installed node)\n'
               '  profile      print the installed profile.yml\n')


def _sim_dcgm():
    """simulator/sim_dcgm.py (run-time faults dcgm_diag_fail and nccl_slow), or None in a copy without it."""
    try:
        from . import sim_dcgm
    except ImportError:
        try:
            import sim_dcgm  # noqa: E402
        except ImportError:
            return None
    return sim_dcgm


def admin(argv, profile_dir, state_file):
    if not argv or argv[0] in ('-h', '--help'):
        return Result(0 if argv else 2, ADMIN_USAGE)
    cmd = argv[0]
    if cmd == 'fault':
        dcgm = _sim_dcgm()
        if dcgm is not None:
            return Result(*dcgm.admin_fault(argv[1:]))
        if R is None:
            return Result(1, '', 'gpuops-sim: fault needs sim_rdma.py\n')
        return Result(*R.admin_fault(argv[1:]))
    if cmd == 'reboot' and R is not None:
        try:
            R.boot(R.D.sim_root())
        except (R.RdmaError, OSError) as exc:
            return Result(1, '', 'gpuops-sim: reboot: %s\n' % exc)
    profile = Profile(profile_dir)
    if cmd == 'profile':
        path = os.path.join(profile_dir, 'profile.yml')
        return Result(0, _read(path) if os.path.isfile(path) else '')
    if cmd == 'reset-state':
        if os.path.exists(state_file):
            os.remove(state_file)
        return Result(0, 'gpuops-sim: state reset\n')
    emulated, out = profile.runtime.get('driver') == 'emulated', 'gpuops-sim: rebooted\n'
    if cmd in ('boot', 'sync') or (cmd == 'reboot' and emulated):
        if D is None:
            return Result(1, '', 'gpuops-sim: %s needs sim_driver.py\n' % cmd)
        try:
            done = D.sync(D.sim_root()) if cmd == 'sync' else D.boot(D.sim_root())
        except (D.DriverError, OSError) as exc:
            return Result(1, '', 'gpuops-sim: %s: %s\n' % (cmd, exc))
        cmd, out = 'reboot' if cmd != 'sync' else cmd, json.dumps(done, sort_keys=True) + '\n'
        if cmd == 'sync' or profile.failure():
            return Result(0, out)
    if profile.failure():
        return Result(1, '', 'gpuops-sim: profile simulates a failed driver; no GPU state\n')
    state = State(state_file, profile).load(lock=True)
    try:
        if cmd == 'state':
            driver = D.status(D.sim_root()) if emulated and D is not None else {'mode': 'replayed'}
            return Result(0, json.dumps(dict(state.data, driver=driver), indent=2, sort_keys=True) + '\n')
        if cmd == 'reboot':
            boot = State(state_file, profile)._initial()
            for bus_id, st in state.data['gpus'].items():
                fresh = boot['gpus'].get(bus_id, {})
                st['mig_current'] = st.get('mig_pending')
                st['gpu_instances'] = []
                st['persistence_mode'] = fresh.get('persistence_mode', st.get('persistence_mode'))
                if emulated and st['persistence_mode'] == 'Enabled':  # a freshly loaded driver: off until set
                    st['persistence_mode'] = 'Disabled'
                st['compute_mode'] = fresh.get('compute_mode', st.get('compute_mode'))
                st['busy'], st['processes'] = False, []
            state.save()
            return Result(0, out)
        if cmd in ('busy', 'idle') and 2 <= len(argv) <= (4 if cmd == 'busy' else 2):
            try:
                gpus = select_gpus(profile.gpus(), argv[1])
                proc = D.new_process(argv[2:]) if len(argv) > 2 and D is not None else None
            except Exit as exc:
                return exc.result
            except D.DriverError as exc:
                return Result(2, '', 'gpuops-sim: %s\n' % exc)
            if len(argv) > 2 and proc is None:
                return Result(1, '', 'gpuops-sim: a GPU process needs sim_driver.py\n')
            for gpu in gpus:
                st = state.gpu(gpu.bus_id)
                st['busy'] = cmd == 'busy'
                procs = [] if cmd == 'idle' else [p for p in st.get('processes') or [] if proc is None
                                                  or p['pid'] != proc['pid']] + ([proc] if proc else [])
                st['processes'] = procs
            state.save()
            return Result(0, 'gpuops-sim: GPU %s marked %s\n' % (argv[1], cmd))
        return Result(2, ADMIN_USAGE)
    finally:
        state.release()


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def run(argv, environ=None, prog='nvidia-smi'):
    """Run one invocation in-process; returns a Result (used by the tests)."""
    profile_dir, state_file = sim_paths(environ)
    if environ is not None:
        saved = dict(os.environ)
        os.environ.update(environ)
    try:
        if os.path.basename(prog) == 'gpuops-sim':
            return admin(list(argv), profile_dir, state_file)
        try:
            return Nvsmi(profile_dir, state_file).run(argv)
        except Exit as exc:
            return exc.result
    finally:
        if environ is not None:
            os.environ.clear()
            os.environ.update(saved)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    result = run(argv[1:], prog=argv[0])
    if result.out:
        sys.stdout.write(result.out)
        sys.stdout.flush()
    if result.err:
        sys.stderr.write(result.err)
        sys.stderr.flush()
    return result.rc


if __name__ == '__main__':
    sys.exit(main())
