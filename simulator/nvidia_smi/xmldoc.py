# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Textual editing of ``nvidia-smi -q -x`` documents: the real tool's formatting kept byte for byte.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

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
