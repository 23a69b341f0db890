# -*- coding: utf-8 -*-
"""Documented transforms that turn a real capture into the variant or fault a test needs.

Real captures are never edited by hand: every derived input is one of these
functions applied to a file from tests/fixtures/real, so the test names both the
capture and the transform.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re


def underline_topo_header(text):
    """What recent drivers print and web copies lose: the ``topo -m`` header line wrapped in terminal
    underline codes, ``\\t\\x1b[4mGPU0\\t...\\x1b[0m`` (the leading tab stays outside the codes)."""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        if line.strip().startswith('GPU0'):
            indent = line[:len(line) - len(line.lstrip())]
            lines[i] = '%s\x1b[4m%s\x1b[0m' % (indent, line.strip())
            return '\n'.join(lines)
    raise ValueError('no topo -m header line')


def with_bom(text):
    """A UTF-8 byte-order mark in front, as some Windows tools and editors save files."""
    return u'\ufeff' + text


def keep_gpus_in_topo(text, count):
    """``topo -m`` as if only GPU0..GPU<count-1> existed: later GPU rows and columns removed."""
    lines = text.split('\n')
    header = next(i for i, l in enumerate(lines) if l.strip().startswith('GPU0'))
    cells = lines[header].split('\t')
    drop = set(i for i, c in enumerate(cells) if re.match(r'^GPU(\d+)$', c.strip())
               and int(c.strip()[3:]) >= count)
    out = []
    for i, line in enumerate(lines):
        first = line.split('\t')[0].strip()
        if i > header and re.match(r'^GPU(\d+)$', first) and int(first[3:]) >= count:
            continue
        if i >= header and '\t' in line:
            # header cells and row cells line up: the header's leading tab stands for the row-name column
            line = '\t'.join(p for j, p in enumerate(line.split('\t')) if j not in drop)
        out.append(line)
    return '\n'.join(out)


def truncate_after_line(text, line_no, keep_chars=None):
    """Output cut after ``line_no`` lines (a full disk, a killed command); ``keep_chars`` keeps part of the next."""
    lines = text.split('\n')
    cut = '\n'.join(lines[:line_no])
    if keep_chars is not None:
        cut += '\n' + lines[line_no][:keep_chars]
    return cut


def damage_line(text, line_no, replacement):
    """Line ``line_no`` (1-based) replaced, as a bad paste or a bit flip in a copy would."""
    lines = text.split('\n')
    lines[line_no - 1] = replacement
    return '\n'.join(lines)


def xml_value(text, tag, value, occurrence=0):
    """The text of the ``occurrence``-th ``<tag>`` element replaced by ``value``."""
    pattern = re.compile(r'(<%s>)([^<]*)(</%s>)' % (tag, tag))
    matches = list(pattern.finditer(text))
    match = matches[occurrence]
    return text[:match.start(2)] + value + text[match.end(2):]


def invalid_utf8(data, after=b'\n'):
    """Bytes with an invalid UTF-8 sequence (``\\xff\\xfe``) after the first ``after``."""
    at = data.index(after) + len(after)
    return data[:at] + b'\xff\xfe' + data[at:]


_PROMPT_RE = re.compile(r'^(?:\$ |# |\[[^\]]*\][#$] )(?:sudo )?(?P<command>.*?)\s*$')


def command_output(text, command, occurrence=-1):
    """What one command printed in a pasted terminal session: the lines after the prompt line that runs
    ``command`` (``$ sudo dnf module list nvidia-driver``, ``# ...``, ``[root@host ~]# ...``; ``sudo`` dropped)
    up to the next prompt line; ``occurrence`` chooses among several runs (the last by default)."""
    runs, current = [], None
    for line in text.split('\n'):
        match = _PROMPT_RE.match(line)
        if match:
            current = [] if match.group('command') == command else None
            if current is not None:
                runs.append(current)
            continue
        if current is not None:
            current.append(line)
    if not runs:
        raise ValueError('no prompt line runs %r' % command)
    return '\n'.join(runs[occurrence])
