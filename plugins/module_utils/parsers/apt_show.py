# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``apt-cache show NAME=VERSION ...``: the control stanzas of the package versions named.

apt prints one deb822 stanza per package version, separated by blank lines; a field's continuation lines start
with a space. The relation fields (``Depends``, ``Pre-Depends``, ``Provides``) are comma-separated groups of
``|``-separated alternatives, each ``name[:arch] [(op version)] [<profiles>]``:

``Depends: nvidia-alternative (= 535.261.03-1), firmware-nvidia-gsp (= 535.261.03) | firmware-nvidia-gsp-535.261.03``
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

COMMAND = 'apt-cache show'
RELATIONS = ('Depends', 'Pre-Depends', 'Provides')
# deb822: a field name is any printable characters but a colon, not starting with # or -
_FIELD_RE = re.compile(r'^([!-9;-~][!-9;-~]*):(?: ?(.*))?$')
# the operators dpkg knows, the obsolete < and > (meaning <= and >=) included
_RELATION_RE = re.compile(r'^(?P<name>[a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*'
                          r'(?:\(\s*(?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[^\s)]+)\s*\))?\s*(?:\[[^]]*\]\s*)?'
                          r'(?:<[^>]*>\s*)*$')


def parse_relations(text, field='Depends', package=None):
    """``[[{name, op, version}, ...alternatives], ...]`` of one relation field's value (op and version None when
    unversioned; ``<`` and ``>`` read as ``<=`` and ``>=``). Raises ParseError on an entry that is not a relation
    (an unexpanded ``${misc:Depends}`` of a badly built package), naming ``package``."""
    groups = []
    for group in (text or '').split(','):
        if not group.strip():
            continue
        alternatives = []
        for entry in group.split('|'):
            match = _RELATION_RE.match(entry.strip())
            if not match:
                raise ParseError(COMMAND, 'not a package relation in %s%s' % (
                    field, ' of %s' % package if package else ''), None, entry.strip())
            op = {'<': '<=', '>': '>='}.get(match.group('op'), match.group('op'))
            alternatives.append({'name': match.group('name'), 'op': op, 'version': match.group('version')})
        groups.append(alternatives)
    return groups


def parse_show(text):
    """``[{package, version, depends, pre_depends, provides, fields}]``, one per stanza in the order printed.

    ``fields`` holds every field's text (continuation lines joined by newlines); the three relation fields are
    also parsed (``parse_relations``; empty lists when absent). Raises ParseError naming the line that is neither a
    field nor a continuation, or a stanza without Package or Version."""
    stanzas, current, last = [], None, None
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            current, last = None, None
            continue
        if line[0] in ' \t':
            if current is None or last is None:
                raise ParseError(COMMAND, 'a continuation line outside a field', number, line)
            current[last] += '\n' + line.strip()
            continue
        match = _FIELD_RE.match(line)
        if not match:
            raise ParseError(COMMAND, 'not a "Field: value" line', number, line)
        if current is None:
            current = {}
            stanzas.append((number, current))
        last = match.group(1)
        current[last] = (match.group(2) or '').strip()
    parsed = []
    for number, fields in stanzas:
        if not fields.get('Package') or not fields.get('Version'):
            raise ParseError(COMMAND, 'a stanza without Package and Version', number, None)
        entry = {'package': fields['Package'], 'version': fields['Version'], 'fields': fields}
        for field in RELATIONS:
            entry[field.lower().replace('-', '_')] = parse_relations(fields.get(field, '').replace('\n', ' '), field,
                                                                     '%s %s' % (fields['Package'], fields['Version']))
        parsed.append(entry)
    return parsed
