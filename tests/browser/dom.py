# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small element tree of a serialized DOM (chromium's --dump-dom), made with html.parser.

Tag names are lower case (SVG elements included); attribute values are unescaped by the parser.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from html.parser import HTMLParser

VOID = frozenset(('area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source',
                  'track', 'wbr'))
_SPACE = re.compile(r'\s+')


class Element(object):
    """One element: tag, attrs (dict), children (elements and strings), parent."""

    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = dict((k, '' if v is None else v) for k, v in attrs)
        self.parent = parent
        self.children = []

    def get(self, name, default=None):
        return self.attrs.get(name, default)

    @property
    def classes(self):
        return self.attrs.get('class', '').split()

    def iter(self):
        """This element and every element below it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag=None, cls=None, **attrs):
        """Elements below (and including) this one with ``tag``, class ``cls`` and attributes (data_x -> data-x)."""
        want = dict((k.replace('_', '-'), v) for k, v in attrs.items())
        found = []
        for elem in self.iter():
            if tag is not None and elem.tag != tag:
                continue
            if cls is not None and cls not in elem.classes:
                continue
            if any(elem.attrs.get(k) != v for k, v in want.items()):
                continue
            found.append(elem)
        return found

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def text(self):
        """All text below this element, whitespace collapsed (no style or script text)."""
        parts = []
        self._text(parts)
        return _SPACE.sub(' ', ''.join(parts)).strip()

    def _text(self, parts):
        for child in self.children:
            if isinstance(child, Element):
                if child.tag not in ('style', 'script'):
                    child._text(parts)
                    parts.append(' ')
            else:
                parts.append(child)

    def own_titles(self):
        """Text of the <title> elements that are direct children (an SVG element's tooltip)."""
        return [c.text() for c in self.children if isinstance(c, Element) and c.tag == 'title']

    def describe(self):
        keys = ('class', 'id', 'data-name', 'data-a', 'data-b', 'data-gpu', 'data-nic', 'data-checks', 'data-host')
        return '<%s %s>' % (self.tag, ' '.join('%s=%r' % (k, self.attrs[k]) for k in keys if k in self.attrs))


class _Builder(HTMLParser):

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element('#document', [], None)
        self.node = self.root

    def handle_starttag(self, tag, attrs):
        elem = Element(tag, attrs, self.node)
        self.node.children.append(elem)
        if tag not in VOID:
            self.node = elem

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Element(tag, attrs, self.node))

    def handle_endtag(self, tag):
        node = self.node
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.node = node.parent

    def handle_data(self, data):
        self.node.children.append(data)


def parse(text):
    """The document (an Element with tag '#document') of a serialized DOM."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def collapse(text):
    return _SPACE.sub(' ', text or '').strip()
