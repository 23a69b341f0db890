# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turns the bytes a command or a file gave into the text the parsers read.

Every output reaches a parser through here: bytes are decoded as UTF-8 with
replacement (a warning names the source), a leading byte-order mark is dropped,
and terminal attribute codes (``ESC[4m`` ... ``ESC[0m``, which recent drivers
print around the ``topo -m`` header even into a pipe) are removed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# SGR ("select graphic rendition") sequences: ESC [ params m
_SGR_RE = re.compile(u'\x1b\\[[0-9;]*m')
_BOM = u'\ufeff'
# at most this many warnings are kept per output; the rest are counted
MAX_WARNINGS = 20


def decode(data, label, warnings):
    """``data`` (bytes or text) as text; invalid UTF-8 is replaced and reported in ``warnings``."""
    if data is None:
        return None
    if not isinstance(data, bytes):
        return data
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        text = data.decode('utf-8', 'replace')
        warnings.append('%s: not valid UTF-8 (first bad byte at offset %d); %d character(s) replaced with U+FFFD'
                        % (label, exc.start, text.count(u'\ufffd')))
        return text


def clean(text):
    """Drop a leading byte-order mark and every terminal attribute code."""
    if text is None:
        return None
    if text.startswith(_BOM):
        text = text[1:]
    if u'\x1b' in text:
        text = _SGR_RE.sub(u'', text)
    return text


def bounded(warnings, label, limit=MAX_WARNINGS):
    """The first ``limit`` warnings, then one line saying how many more there were."""
    if len(warnings) <= limit:
        return list(warnings)
    return list(warnings[:limit]) + ['%s: ... %d more warning(s) like these' % (label, len(warnings) - limit)]


def as_text(value):
    """A value of a record as text: None stays None, bytes are decoded (invalid UTF-8 replaced), the rest str()."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
    return value if isinstance(value, str) else str(value)
