# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for ``dkms status`` and a DKMS build's ``make.log``.

``dkms status`` prints one line per module version and kernel:

* DKMS 3: ``nvidia-current/535.216.01, 6.1.0-28-amd64, x86_64: installed``
* DKMS 2: ``nvidia, 470.57.02, 5.4.0-80-generic, x86_64: installed``
* not built for any kernel: ``nvidia-current/550.163.01: added``
* a status may carry a note: ``...: installed (WARNING! Diff between built and installed module!)``
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

COMMAND = 'dkms status'
_LINE_RE = re.compile(r'^(?P<head>[^:]+):\s*(?P<status>added|built|installed|broken)\b\s*(?P<note>.*)$')
# gcc/clang diagnostics and make's own failure lines, in the order they are looked for
_ERROR_RES = (re.compile(r':\d+(?::\d+)?: (?:fatal )?error: '), re.compile(r'\bERROR: '),
              re.compile(r'^make(?:\[\d+\])?: \*\*\* .*Error \d+'))


def parse_status(text):
    """[{module, version, kernel, arch, status, note}] from ``dkms status``; kernel/arch None when only added.

    Raises ParseError naming the line that fits none of the known forms (warnings DKMS prints before its
    table, lines starting with ``Warning:`` or ``Error!``, are skipped).
    """
    entries = []
    for number, line in enumerate((text or '').splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(('Warning:', 'Error!', 'Deprecated feature:')):
            continue
        match = _LINE_RE.match(line)
        if not match:
            raise ParseError(COMMAND, 'not a "module/version, kernel, arch: status" line', number, line)
        fields = [f.strip() for f in match.group('head').split(',')]
        if '/' in fields[0]:
            module, version = fields[0].split('/', 1)
            rest = fields[1:]
        elif len(fields) >= 2:
            module, version = fields[0], fields[1]
            rest = fields[2:]
        else:
            raise ParseError(COMMAND, 'no module version', number, line)
        entries.append({'module': module, 'version': version,
                        'kernel': rest[0] if len(rest) >= 1 else None,
                        'arch': rest[1] if len(rest) >= 2 else None,
                        'status': match.group('status'),
                        'note': match.group('note').strip() or None})
    return entries


def build_errors(text, limit=3):
    """The first error lines of a DKMS ``make.log`` (compiler errors first, then make's), at most ``limit``."""
    lines = [l.rstrip() for l in (text or '').splitlines()]
    for pattern in _ERROR_RES:
        found = [l.strip() for l in lines if pattern.search(l)]
        if found:
            return found[:limit]
    return []
