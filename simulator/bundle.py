# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""In-memory capture bundles and the text models the derivations edit.

A *tree* is a dict ``relative path -> bytes`` (a file) or ``Link(target)``
(a relative symlink). Profiles and faults build trees in memory; ``write_tree``
materialises one, ``read_tree`` loads one back (so a derivation can be
compared byte for byte with what is committed).

Also here: a restricted YAML emitter/reader (profile.yml must be readable on a
simulated node without PyYAML), and line-preserving models of
``nvidia-smi topo -m`` and ``nvidia-smi nvlink -s`` output.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import shutil


class Link(object):
    """A symlink in a tree (target relative to the link's directory)."""

    def __init__(self, target):
        self.target = target

    def __eq__(self, other):
        return isinstance(other, Link) and other.target == self.target

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return 'Link(%r)' % self.target


def read_tree(root):
    tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                tree[os.path.relpath(full, root)] = Link(os.readlink(full))
                dirnames.remove(name)
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                tree[rel] = Link(os.readlink(full))
            else:
                with open(full, 'rb') as handle:
                    tree[rel] = handle.read()
    return tree


def write_tree(tree, root, clean=True):
    """Write ``tree`` under ``root`` (emptied first when ``clean``)."""
    if clean and os.path.lexists(root):
        shutil.rmtree(root)
    for rel in sorted(tree):
        full = os.path.join(root, rel)
        parent = os.path.dirname(full)
        if not os.path.isdir(parent):
            os.makedirs(parent)
        value = tree[rel]
        if isinstance(value, Link):
            if os.path.lexists(full):
                os.remove(full)
            os.symlink(value.target, full)
        else:
            with open(full, 'wb') as handle:
                handle.write(value)


TTAR_SEPARATOR = '# ttar - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -'
SYS_ARCHIVE = 'sys.ttar'


def dump_ttar(tree):
    """A tree as a ttar text archive (the prometheus/procfs test-data format).

    Records: ``Directory:``/``Mode:``, ``Path:``/``Lines:``/content/``Mode:`` and
    ``Path:``/``SymlinkTo:``, separated by ``# ttar - - -`` lines; content
    without a final newline ends in ``EOF``.
    """
    records = []
    seen = set()
    for rel in sorted(tree):
        parts = rel.split('/')
        for depth in range(1, len(parts)):
            directory = '/'.join(parts[:depth])
            if directory not in seen:
                seen.add(directory)
                records.append('Directory: %s\nMode: 755' % directory)
        value = tree[rel]
        if isinstance(value, Link):
            records.append('Path: %s\nSymlinkTo: %s' % (rel, value.target))
            continue
        content = value.decode('utf-8')
        lines = content.split('\n')
        if content.endswith('\n'):
            lines = lines[:-1]
        else:
            lines[-1] += 'EOF'
        records.append('Path: %s\nLines: %d\n%s\nMode: 644' % (rel, len(lines), '\n'.join(lines)))
    return ('\n' + TTAR_SEPARATOR + '\n').join(records) + '\n'


def load_ttar(source):
    """The tree a ttar archive holds (directories are implied by their files)."""
    tree = {}
    lines = source.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('Path: '):
            rel = line[len('Path: '):]
            nxt = lines[i + 1]
            if nxt.startswith('SymlinkTo: '):
                tree[rel] = Link(nxt[len('SymlinkTo: '):])
                i += 2
                continue
            count = int(nxt[len('Lines: '):])
            body = '\n'.join(lines[i + 2:i + 2 + count])
            body = body[:-3] if body.endswith('EOF') else body + '\n'
            tree[rel] = body.encode('utf-8')
            i += 2 + count
            continue
        i += 1
    return tree


def unpack(tree):
    """A committed profile tree (sysfs in sys.ttar) as a capture bundle tree (sysfs under sys/)."""
    tree = dict(tree)
    archive = tree.pop(SYS_ARCHIVE, None)
    if archive is not None:
        for rel, value in load_ttar(archive.decode('utf-8')).items():
            tree['sys/' + rel] = value
    return tree


def pack(tree):
    """A bundle tree with its sys/ tree moved into sys.ttar (no ':' in names, no directory links)."""
    packed = dict((rel, value) for rel, value in tree.items() if not rel.startswith('sys/'))
    sys_tree = dict((rel[len('sys/'):], value) for rel, value in tree.items() if rel.startswith('sys/'))
    if sys_tree:
        packed[SYS_ARCHIVE] = dump_ttar(sys_tree).encode('utf-8')
    return packed


def read_profile(root):
    """A profile directory, committed (sys.ttar) or unpacked, as a bundle tree."""
    return unpack(read_tree(root))


def write_profile(tree, root, packed=False):
    write_tree(pack(tree) if packed else tree, root)


def is_packed(root):
    return os.path.isfile(os.path.join(root, SYS_ARCHIVE))


def text(tree, rel):
    return tree[rel].decode('utf-8')


def put_text(tree, rel, value):
    tree[rel] = value.encode('utf-8')


# ---------------------------------------------------------------------------
# Restricted YAML: block mappings/sequences of scalars; strings always JSON-quoted
# ---------------------------------------------------------------------------

_KEY_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.-]*$')


def _scalar(value):
    if value is None:
        return 'null'
    if value is True:
        return 'true'
    if value is False:
        return 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def _key(key):
    return key if _KEY_RE.match(key) else json.dumps(key)


def _emit(value, indent, lines):
    pad = '  ' * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append('%s%s:' % (pad, _key(key)))
                _emit(item, indent + 1, lines)
            elif isinstance(item, dict):
                lines.append('%s%s: {}' % (pad, _key(key)))
            elif isinstance(item, list):
                lines.append('%s%s: []' % (pad, _key(key)))
            else:
                lines.append('%s%s: %s' % (pad, _key(key), _scalar(item)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub = []
                _emit(item, indent + 1, sub)
                first = sub[0][len('  ' * (indent + 1)):]
                lines.append('%s- %s' % (pad, first))
                lines.extend(sub[1:])
            elif isinstance(item, list) and item:
                lines.append('%s-' % pad)
                _emit(item, indent + 1, lines)
            else:
                lines.append('%s- %s' % (pad, _scalar(item) if not isinstance(item, (dict, list))
                                         else ('{}' if isinstance(item, dict) else '[]')))
    else:
        raise TypeError('top level must be a mapping or a list')


def dump_yaml(value, header=None):
    lines = []
    if header:
        lines.extend('# ' + line if line else '#' for line in header.splitlines())
    lines.append('---')
    _emit(value, 0, lines)
    return '\n'.join(lines) + '\n'


def _parse_scalar(token):
    token = token.strip()
    if token == 'null' or token == '~' or token == '':
        return None
    if token == 'true':
        return True
    if token == 'false':
        return False
    if token == '{}':
        return {}
    if token == '[]':
        return []
    if token.startswith('"'):
        return json.loads(token)
    if re.match(r'^-?\d+$', token):
        return int(token)
    if re.match(r'^-?\d+\.\d*(e[-+]?\d+)?$', token):
        return float(token)
    return token


def _split_key(body):
    if body.startswith('"'):
        end = 1
        while True:
            end = body.index('"', end)
            if body[end - 1] != '\\':
                break
            end += 1
        key = json.loads(body[:end + 1])
        rest = body[end + 1:]
    else:
        key, sep, rest = body.partition(':')
        if not sep:
            raise ValueError('not a mapping entry: %r' % body)
        return key.strip(), rest
    if not rest.startswith(':'):
        raise ValueError('not a mapping entry: %r' % body)
    return key, rest[1:]


def load_yaml(source):
    """Read what ``dump_yaml`` writes (a subset of YAML)."""
    lines = []
    for raw in source.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith('#') or stripped == '---':
            continue
        lines.append((len(raw) - len(raw.lstrip(' ')), raw.strip()))
    pos = [0]

    def parse_block(indent):
        if pos[0] >= len(lines):
            return None
        if lines[pos[0]][1].startswith('- ') or lines[pos[0]][1] == '-':
            return parse_list(indent)
        return parse_map(indent)

    def parse_map(indent, first=None):
        result = {}
        while pos[0] < len(lines) or first is not None:
            if first is not None:
                body, first = first, None
            else:
                level, body = lines[pos[0]]
                if level != indent or body.startswith('-'):
                    break
                pos[0] += 1
            key, rest = _split_key(body)
            if rest.strip():
                result[key] = _parse_scalar(rest)
            else:
                nested_indent = lines[pos[0]][0] if pos[0] < len(lines) else indent
                if pos[0] < len(lines) and (nested_indent > indent or lines[pos[0]][1].startswith('-')):
                    result[key] = parse_block(nested_indent)
                else:
                    result[key] = None
        return result

    def parse_list(indent):
        result = []
        while pos[0] < len(lines):
            level, body = lines[pos[0]]
            if level != indent or not (body.startswith('- ') or body == '-'):
                break
            pos[0] += 1
            item = body[1:].strip()
            if not item:
                result.append(parse_block(lines[pos[0]][0]))
            elif item.startswith('"') or not re.match(r'^("[^"]*"|[A-Za-z_][A-Za-z0-9_.-]*):(\s|$)', item):
                result.append(_parse_scalar(item))
            else:
                result.append(parse_map(indent + 2, first=item))
        return result

    return parse_block(lines[0][0]) if lines else None


# ---------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------

EXTRA_COLUMNS = ('CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID')
PCIE_RANK = {'PIX': 0, 'PXB': 1, 'PHB': 2, 'NODE': 3, 'SYS': 4}


class Topo(object):
    """Tab-separated ``nvidia-smi topo -m`` kept cell for cell.

    ``header`` and ``rows`` are lists of cells exactly as split on tabs (so
    the leading empty header cell, the `` X `` diagonal and empty trailing
    fields survive); ``tail`` is every line after the matrix (Legend, NIC
    Legend) verbatim.
    """

    def __init__(self, source):
        lines = source.split('\n')
        self.header = lines[0].split('\t')
        self.rows = []
        idx = 1
        while idx < len(lines) and lines[idx].strip():
            self.rows.append(lines[idx].split('\t'))
            idx += 1
        self.tail = lines[idx:]

    def render(self):
        return '\n'.join(['\t'.join(self.header)] + ['\t'.join(r) for r in self.rows] + self.tail)

    @property
    def devices(self):
        return [c for c in self.header[1:] if c and c not in EXTRA_COLUMNS]

    def col(self, device):
        return self.header.index(device)

    def row(self, device):
        for row in self.rows:
            if row[0] == device:
                return row
        raise KeyError(device)

    def get(self, a, b):
        return self.row(a)[self.col(b)].strip()

    def set(self, a, b, relation):
        row = self.row(a)
        row[self.col(b)] = relation

    def gpus(self):
        return [d for d in self.devices if re.match(r'^GPU\d+$', d)]

    def nics(self):
        return [d for d in self.devices if not re.match(r'^GPU\d+$', d)]

    def legend(self):
        result = {}
        for line in self.tail:
            match = re.match(r'^\s*(NIC\d+)\s*:\s*(\S+)\s*$', line)
            if match:
                result[match.group(1)] = match.group(2)
        return result

    def nic_name(self, column):
        return self.legend().get(column, column)

    def remove_device(self, device):
        """Drop a device's row and column; later GPUs are renumbered (as nvidia-smi does)."""
        col = self.col(device)
        del self.header[col]
        self.rows = [r for r in self.rows if r[0] != device]
        for row in self.rows:
            if col < len(row):
                del row[col]
        if re.match(r'^GPU\d+$', device):
            gone = int(device[3:])
            rename = {}
            for name in self.gpus():
                number = int(name[3:])
                if number > gone:
                    rename[name] = 'GPU%d' % (number - 1)
            self.header = [rename.get(c, c) for c in self.header]
            for row in self.rows:
                row[0] = rename.get(row[0], row[0])

    def pcie_relation(self, a, b, numa=None):
        """PCIe path relation between GPUs ``a`` and ``b`` implied by the NIC columns.

        Uses the NIC closest to ``b``: the worse of rel(a, nic) and rel(b, nic).
        Falls back to NUMA (same node -> NODE, else SYS) when there are no NICs.
        """
        best = None
        for nic in self.nics():
            rel_b = self.get(b, nic)
            if rel_b not in PCIE_RANK:
                continue
            if best is None or PCIE_RANK[rel_b] < PCIE_RANK[self.get(b, best)]:
                best = nic
        if best is not None:
            rel_a, rel_b = self.get(a, best), self.get(b, best)
            return rel_a if PCIE_RANK.get(rel_a, 4) >= PCIE_RANK.get(rel_b, 4) else rel_b
        if numa is not None and numa.get(a) == numa.get(b):
            return 'NODE'
        return 'SYS'


# ---------------------------------------------------------------------------
# nvidia-smi nvlink -s
# ---------------------------------------------------------------------------

_NVL_GPU_RE = re.compile(r'^GPU (\d+): (.*) \(UUID: ([^)]*)\)$')


class NvlinkStatus(object):
    """``nvidia-smi nvlink -s`` as GPU blocks (header + link lines, verbatim)."""

    def __init__(self, source):
        self.blocks = []
        for line in source.splitlines():
            match = _NVL_GPU_RE.match(line)
            if match:
                self.blocks.append({'index': int(match.group(1)), 'name': match.group(2),
                                    'uuid': match.group(3), 'lines': []})
            elif self.blocks:
                self.blocks[-1]['lines'].append(line)
            else:
                raise ValueError('nvlink -s text starts with a non-GPU line: %r' % line)

    def render(self):
        out = []
        for block in self.blocks:
            out.append('GPU %d: %s (UUID: %s)' % (block['index'], block['name'], block['uuid']))
            out.extend(block['lines'])
        return '\n'.join(out) + '\n' if out else ''
