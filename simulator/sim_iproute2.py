# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What iproute2 6.1's command line tools share, as the dcb stand-in (sim_dcb.py) needs it: keyword prefix
matching and number parsing (lib/utils.c), the text and JSON printers (lib/json_print.c, lib/json_writer.c) and
the DS field names (lib/rt_names.c with /etc/iproute2/rt_dsfield).

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

RT_DSFIELD = '/etc/iproute2/rt_dsfield'
IFNAMSIZ = 16
U32_ALL = 0xFFFFFFFF


# ---------------------------------------------------------------------------
# lib/utils.c
# ---------------------------------------------------------------------------

def matches(prefix, string):
    """iproute2's matches(): 0 (a match) when ``prefix`` is a prefix of ``string`` (the empty one is)."""
    return 0 if string.startswith(prefix) else 1


def strtoul(arg, limit, base=0):
    """get_u8/get_u16/get_u32: the whole argument as an unsigned number (base 0: 0x hex, 0 octal), or None."""
    if base == 16:
        match = re.match(r'^\s*\+?(?:0[xX])?([0-9a-fA-F]+)$', arg)
        value = int(match.group(1), 16) if match else None
    else:
        match = re.match(r'^\s*\+?(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))$', arg)
        if not match:
            value = None
        elif match.group(1):
            value = int(match.group(1), 16)
        elif match.group(2):
            value = int(match.group(2), 8)
        else:
            value = int(match.group(3))
    return value if value is not None and value <= limit else None


def check_ifname(name):
    return 0 < len(name) < IFNAMSIZ and '/' not in name and ':' not in name and not re.search(r'\s', name)


class Out(object):
    """stdout and stderr of one run, and iproute2's print_* helpers in text or JSON context."""

    def __init__(self, json_mode=False, pretty=False):
        self.out, self.err = [], []
        self.json = json_mode
        self.pretty = pretty
        self.depth, self.sep = 0, ''

    def stderr(self, text):
        self.err.append(text)

    def fp(self, text):
        if not self.json:
            self.out.append(text)

    # lib/json_writer.c
    def _eol(self):
        if self.pretty:
            self.out.append('\n' + '    ' * self.depth)

    def _eor(self):
        if self.sep:
            self.out.append(self.sep)
        self.sep = ','

    def _name(self, name):
        self._eor()
        self._eol()
        self.sep = ''
        self.out.append('"%s":%s' % (name, ' ' if self.pretty else ''))

    def _value(self, text):
        self._eor()
        self.out.append(text)

    def _begin(self, char):
        self._eor()
        self.out.append(char)
        self.depth += 1
        self.sep = ''

    def _end(self, char):
        self.depth -= 1
        if self.sep:
            self._eol()
        self.out.append(char)
        self.sep = ','

    # lib/json_print.c
    def open_object(self):
        if self.json:
            self._begin('{')

    def close_object(self):
        if self.json:
            self._end('}')

    def open_array(self, name):
        if self.json:
            if name:
                self._name(name)
            self._begin('[')
            if self.pretty:
                self.out.append(' ')

    def close_array(self):
        if self.json:
            if self.pretty and self.sep:
                self.out.append(' ')
            self.sep = ''
            self._end(']')

    def uint(self, key, fmt, value):
        if self.json:
            if key:
                self._name(key)
            self._value('%d' % value)
        else:
            self.out.append(fmt % value)

    def on_off(self, key, fmt, value):
        if self.json:
            if key:
                self._name(key)
            self._value('true' if value else 'false')
        else:
            self.out.append(fmt % ('on' if value else 'off'))

    def nl(self):
        self.fp('\n')

    def finish(self):
        """dcb_fini: the JSON writer ends its output with a newline."""
        if self.json:
            self.out.append('\n')
        return ''.join(self.out), ''.join(self.err)


def parse_on_off(out, msg, value):
    for index, word in enumerate(('off', 'on')):
        if matches(value, word) == 0:
            return bool(index)
    out.stderr('Error: argument of "%s" must be one of "off", "on", not "%s"\n' % (msg, value))
    return None


def parse_mapping(out, argv, key_cb, mapping_cb):
    """parse_mapping_gen: consume KEY:VALUE arguments; (failed, argv left, the argument's key part)."""
    while argv and ':' in argv[0]:
        key_text, value = argv[0].split(':', 1)
        key = key_cb(out, key_text)
        if key is None or not mapping_cb(out, key, value):
            return True, argv, key_text
        argv = argv[1:]
    return False, argv, None


def key_num_all(out, text):
    return U32_ALL if matches(text, 'all') == 0 else strtoul(text, U32_ALL)


def key_num(out, text):
    return strtoul(text, U32_ALL)


# ---------------------------------------------------------------------------
# DS field names (lib/rt_names.c: the table is read from rt_dsfield on the first lookup of an unnamed value)
# ---------------------------------------------------------------------------

class DsNames(object):
    def __init__(self, path=RT_DSFIELD):
        self.path, self.table, self.loaded = path, {0: '0'}, False

    def _load(self):
        self.loaded = True
        try:
            with open(self.path) as handle:
                lines = handle.read().splitlines()
        except (IOError, OSError):
            return
        for line in lines:
            match = re.match(r'^\s*(0[xX][0-9a-fA-F]+|\d+)\s+(\S+)', line)
            if match and not line.lstrip().startswith('#') and int(match.group(1), 0) < 256:
                self.table[int(match.group(1), 0)] = match.group(2)

    def name(self, dsfield):
        if self.table.get(dsfield) is None and not self.loaded:
            self._load()
        return self.table.get(dsfield)

    def number(self, text):
        if not self.loaded:
            self._load()
        for dsfield in range(256):
            if self.table.get(dsfield) == text:
                return dsfield
        return strtoul(text, 255, 16)
