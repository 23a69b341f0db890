# -*- coding: utf-8 -*-
"""The links of Markdown files, and whether they resolve inside a tree (the installed collection): what
tests/unit/collection/test_shipped_docs.py checks, and its own unit tests check on small trees.

Links: inline ``[text](target)`` and images ``![alt](target)``, reference definitions ``[id]: target``, full and
collapsed references ``[text][id]`` / ``[id][]`` (the id must be defined), ``<a href>`` / ``<img src>``, autolinks
``<https://...>`` and bare URLs. Fenced code blocks, inline code spans and HTML comments are skipped.

A relative target must name a file or directory of the tree (from the Markdown file's directory; ``/x`` from the
tree's root), and a ``#fragment`` a heading of the target Markdown file (GitHub's anchors: github-slugger), an
``<a id|name>`` of it, or ``#L10`` / ``#L10-L20`` lines of another file. A link to the project's own repository
(``REPO_URL/blob/main/<path>``, ``/tree/main/<path>``) must name a path of the checkout. Other URLs are counted,
not fetched."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import html
import os
import re
import unicodedata

from urllib.parse import unquote

Link = collections.namedtuple('Link', 'line target kind')
Broken = collections.namedtuple('Broken', 'path line target why')

FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})(.*)$')
ATX = re.compile(r'^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$')
SETEXT = re.compile(r'^ {0,3}(=+|-+)[ \t]*$')
REF_DEF = re.compile(r'^ {0,3}\[((?:[^\]\\]|\\.)+)\]:[ \t]*(<[^>]*>|\S+)')
REF_USE = re.compile(r'(?<![\w\\\]])\[((?:[^\]\\\[]|\\.)+)\]\[((?:[^\]\\\[]|\\.)*)\](?![(:])')
HTML_ATTR = re.compile(r'<(?:a|img|source|link)\b[^>]*?\b(href|src)\s*=\s*("[^"]*"|\'[^\']*\'|[^\s>]+)', re.I)
HTML_ANCHOR = re.compile(r'<[a-z][^>]*?\b(?:id|name)\s*=\s*("[^"]*"|\'[^\']*\'|[^\s>]+)', re.I)
AUTOLINK = re.compile(r'<((?:https?|mailto|ftp):[^\s<>]*)>', re.I)
BARE_URL = re.compile(r'(?<![\w/<("\'=])https?://[^\s<>`"\']+', re.I)
LINE_ANCHOR = re.compile(r'^L(\d+)(?:C\d+)?(?:-L(\d+)(?:C\d+)?)?$')
SCHEME = re.compile(r'^[a-z][a-z0-9+.-]*:', re.I)
CODE_SPAN = re.compile(r'(`+)(.+?)(?<!`)\1(?!`)')


def _blank(text, start, end):
    """text with [start, end) replaced by spaces (columns and line breaks kept)."""
    return text[:start] + re.sub(r'[^\n]', ' ', text[start:end]) + text[end:]


def _without_comments(text):
    """text with its HTML comments blanked (a commented-out link is not rendered)."""
    while True:
        start = text.find('<!--')
        if start < 0:
            return text
        end = text.find('-->', start + 4)
        end = len(text) if end < 0 else end + 3
        text = _blank(text, start, end)


def prose_lines(text, blank_code=True):
    """[(line number, line)] of the lines outside fenced code blocks, their comments blanked, and their code spans
    unless ``blank_code`` is false."""
    lines = []
    fence = None
    for number, line in enumerate(_without_comments(text).split('\n'), 1):
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = None
            continue
        if match and not (match.group(1)[0] == '`' and '`' in match.group(2)):
            fence = match.group(1)
            continue
        lines.append((number, CODE_SPAN.sub(lambda m: ' ' * len(m.group(0)), line) if blank_code else line))
    return lines


def _destination(line, start):
    """(target, end) of the link destination that starts at line[start] (just after '('), or None."""
    i = start
    while i < len(line) and line[i] in ' \t':
        i += 1
    if i < len(line) and line[i] == '<':
        end = line.find('>', i)
        if end < 0:
            return None
        close = line.find(')', end)
        return line[i + 1:end], (len(line) if close < 0 else close + 1)
    depth = 0
    j = i
    while j < len(line):
        char = line[j]
        if char == '\\':
            j += 2
            continue
        if char in ' \t':
            break
        if char == '(':
            depth += 1
        elif char == ')':
            if depth == 0:
                break
            depth -= 1
        j += 1
    close = line.find(')', j)
    return line[i:j], (len(line) if close < 0 else close + 1)


def extract_links(text):
    """[Link] of a Markdown text, in their order, with the defined and the used reference ids."""
    links = []
    definitions = {}
    uses = []
    for number, line in prose_lines(text):
        match = REF_DEF.match(line)
        if match and not match.group(1).startswith('^'):
            target = match.group(2)
            target = target[1:-1] if target.startswith('<') else target
            definitions.setdefault(_ref_id(match.group(1)), target)
            links.append(Link(number, target, 'reference'))
            continue
        found = []
        i = 0
        while True:
            i = line.find('](', i)
            if i < 0:
                break
            if i > 0 and line[i - 1] == '\\':
                i += 2
                continue
            parsed = _destination(line, i + 2)
            if parsed is None:
                i += 2
                continue
            target, end = parsed
            kind = 'image' if re.search(r'!\[[^\[\]]*$', line[:i]) else 'inline'
            found.append(Link(number, target, kind))
            line = _blank(line, i + 1, end)
            i = end
        for match in REF_USE.finditer(line):
            uses.append((number, match.group(2) or match.group(1)))
        for match in HTML_ATTR.finditer(line):
            value = match.group(2).strip('"\'')
            found.append(Link(number, html.unescape(value), 'html'))
            line = _blank(line, match.start(2), match.end(2))
        for match in AUTOLINK.finditer(line):
            found.append(Link(number, match.group(1), 'autolink'))
            line = _blank(line, match.start(), match.end())
        for match in BARE_URL.finditer(line):
            found.append(Link(number, match.group(0).rstrip('.,;:!?*_~)'), 'bare'))
        links.extend(found)
    return links, definitions, uses


def _ref_id(label):
    return ' '.join(label.split()).lower()


def _plain_heading(text):
    """The text GitHub slugs a heading from: inline markup, links, images, HTML tags and entities resolved."""
    spans = []

    def _code(match):
        spans.append(match.group(2).strip() if match.group(2).strip() else match.group(2))
        return '\0%d\0' % (len(spans) - 1)

    text = CODE_SPAN.sub(_code, text)
    text = re.sub(r'!\[([^\]]*)\]\([^)]*\)', '', text)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = re.sub(r'\[([^\]]*)\]\[[^\]]*\]', r'\1', text)
    text = re.sub(r'<[^>]+>', '', text)
    text = re.sub(r'(?<![\w\\])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?!\w)', r'\2', text)
    text = re.sub(r'(?<![\w\\])(\*|_)(?=\S)(.+?)(?<=\S)\1(?!\w)', r'\2', text)
    text = re.sub(r'~~(.+?)~~', r'\1', text)
    text = re.sub(r'\\([!-/:-@\[-`{-~])', r'\1', text)
    text = html.unescape(text)
    return re.sub('\0(\\d+)\0', lambda m: spans[int(m.group(1))], text).strip()


def slug(text):
    """github-slugger's slug of a heading's text (before the -1, -2 of duplicates): lower case, punctuation and
    symbols removed but '-' and '_', each space a '-'."""
    kept = []
    for char in text.lower():
        if char in ' -_' or unicodedata.category(char)[0] in 'LNM':
            kept.append(char)
    return ''.join(kept).replace(' ', '-')


def headings(text):
    """[(line number, heading text)] of the ATX and setext headings outside code."""
    found = []
    previous = None
    for number, line in prose_lines(text, blank_code=False):
        match = ATX.match(line)
        if match:
            found.append((number, match.group(2) or ''))
            previous = None
            continue
        match = SETEXT.match(line)
        if match and previous is not None and previous[0] == number - 1 and previous[1].strip() \
                and not re.match(r'^ {0,3}([-*+]|\d+[.)]|>|\|)', previous[1]) and '|' not in previous[1]:
            found.append((previous[0], previous[1].strip()))
            previous = None
            continue
        previous = (number, line)
    return found


def anchors(text):
    """The set of the fragments that a Markdown text defines: its headings' anchors as GitHub numbers them, and the
    ids and names of its HTML elements."""
    occurrences = {}
    result = set()
    for _number, heading in headings(text):
        original = slug(_plain_heading(heading))
        anchor = original
        while anchor in occurrences:
            occurrences[original] += 1
            anchor = '%s-%d' % (original, occurrences[original])
        occurrences[anchor] = 0
        result.add(anchor)
    for _number, line in prose_lines(text):
        for match in HTML_ANCHOR.finditer(line):
            result.add(match.group(1).strip('"\''))
    return result


class Report(object):
    """The outcome of a check: the broken links, and how many links of each kind were seen."""

    def __init__(self):
        self.broken = []
        self.counts = collections.Counter()

    def message(self):
        return '\n'.join('%s:%d: %s (%s)' % b for b in self.broken)


class LinkChecker(object):
    """Checks the Markdown files of ``root`` (the installed collection). ``checkout`` is the repository's
    checkout, where links to ``repo_url``'s blob/tree/main paths must resolve."""

    def __init__(self, root, checkout=None, repo_url=None, branch='main'):
        self.root = os.path.realpath(root)
        self.checkout = checkout and os.path.realpath(checkout)
        self.repo_url = repo_url and repo_url.rstrip('/')
        self.branch = branch
        self._anchors = {}

    def markdown_files(self):
        """The Markdown files of the tree, relative to it, sorted."""
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in filenames:
                if name.lower().endswith(('.md', '.markdown')):
                    found.append(os.path.relpath(os.path.join(dirpath, name), self.root))
        return sorted(found)

    def _read(self, path):
        with open(path, encoding='utf-8') as handle:
            return handle.read()

    def _anchors_of(self, path):
        if path not in self._anchors:
            self._anchors[path] = anchors(self._read(path))
        return self._anchors[path]

    def _fragment_ok(self, path, fragment):
        """None when ``fragment`` names a place of the file (or directory) ``path``, else why not."""
        fragment = unquote(fragment)
        if not fragment:
            return None
        if os.path.isdir(path):
            readme = os.path.join(path, 'README.md')
            if not os.path.isfile(readme):
                return 'fragment #%s of a directory without README.md' % fragment
            path = readme
        if path.lower().endswith(('.md', '.markdown')):
            if fragment in self._anchors_of(path) or fragment.lower() in self._anchors_of(path):
                return None
            return 'no heading #%s in %s' % (fragment, self._display(path))
        match = LINE_ANCHOR.match(fragment)
        if match:
            with open(path, 'rb') as handle:
                count = len(handle.read().splitlines())
            last = int(match.group(2) or match.group(1))
            if 1 <= int(match.group(1)) <= last <= count:
                return None
            return 'lines #%s past the %d lines of %s' % (fragment, count, self._display(path))
        return 'fragment #%s of a file that is not Markdown' % fragment

    def _display(self, path):
        for base in (self.root, self.checkout):
            if base and (path == base or path.startswith(base + os.sep)):
                return os.path.relpath(path, base)
        return path

    def _own_repo_path(self, target):
        """The path a link to the own repository's default branch names ('' for its root), or None."""
        if not self.repo_url:
            return None
        for kind in ('blob', 'tree', 'raw'):
            prefix = '%s/%s/%s' % (self.repo_url, kind, self.branch)
            if target == prefix or target.startswith(prefix + '/') or target.startswith(prefix + '#') \
                    or target.startswith(prefix + '?'):
                return target[len(prefix):].lstrip('/')
        return None

    def check_link(self, source, link):
        """None when the Link of the Markdown file ``source`` (absolute) resolves, else why not."""
        target = link.target.strip()
        if not target:
            return 'empty target'
        own = self._own_repo_path(target)
        if own is not None:
            self._count('own repository')
            if not self.checkout:
                return None
            path, fragment = _split(own)
            full = os.path.normpath(os.path.join(self.checkout, unquote(path)))
            if not (full == self.checkout or full.startswith(self.checkout + os.sep)):
                return 'outside the repository'
            if not os.path.exists(full):
                return 'no %s in the repository checkout' % (unquote(path) or '.')
            return self._fragment_ok(full, fragment)
        if SCHEME.match(target) or target.startswith('//'):
            self._count('external' if re.match(r'^(https?:)?//', target, re.I) else 'other scheme')
            return None
        self._count('relative')
        path, fragment = _split(target)
        if not path:
            return self._fragment_ok(source, fragment)
        path = unquote(path)
        base = self.root if path.startswith('/') else os.path.dirname(source)
        full = os.path.normpath(os.path.join(base, path.lstrip('/')))
        if not (full == self.root or full.startswith(self.root + os.sep)):
            return 'outside the installed collection'
        if not os.path.exists(full):
            why = 'no %s in the installed collection' % os.path.relpath(full, self.root)
            if self.checkout and os.path.exists(os.path.join(self.checkout, os.path.relpath(full, self.root))):
                why += ': not shipped; link %s/blob/%s/%s' % (
                    self.repo_url or 'the repository', self.branch, os.path.relpath(full, self.root))
            return why
        return self._fragment_ok(full, fragment)

    def _count(self, kind):
        self._report.counts[kind] += 1

    def check(self, files=None):
        """Report of the Markdown files (relative to the root; all of them by default)."""
        self._report = report = Report()
        for relative in files if files is not None else self.markdown_files():
            source = os.path.join(self.root, relative)
            links, definitions, uses = extract_links(self._read(source))
            report.counts['files'] += 1
            seen = set()
            for link in links:
                if (link.line, link.target) in seen:
                    continue
                seen.add((link.line, link.target))
                report.counts['links'] += 1
                why = self.check_link(source, link)
                if why:
                    report.broken.append(Broken(relative, link.line, link.target, why))
            for number, label in uses:
                if _ref_id(label) not in definitions:
                    report.broken.append(Broken(relative, number, '[%s]' % label, 'reference never defined'))
        report.broken.sort(key=lambda b: (b.path, b.line, b.target))
        return report

    def resolved_targets(self, relative):
        """The files (relative to the root) that the relative links of one Markdown file name."""
        source = os.path.join(self.root, relative)
        targets = set()
        for link in extract_links(self._read(source))[0]:
            target = link.target.strip()
            if not target or SCHEME.match(target) or target.startswith('//'):
                continue
            path = unquote(_split(target)[0])
            if path:
                base = self.root if path.startswith('/') else os.path.dirname(source)
                targets.add(os.path.relpath(os.path.normpath(os.path.join(base, path.lstrip('/'))), self.root))
        return targets


def _split(target):
    """(path, fragment) of a link target, its ?query dropped."""
    path, _sep, fragment = target.partition('#')
    return path.partition('?')[0], fragment
