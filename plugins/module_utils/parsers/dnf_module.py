# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``dnf module list MODULE`` (DNF 4), as run against NVIDIA's modular RHEL repositories.

DNF prints, per repository that has the module, the repository's name on a line of its own, a header
``Name  Stream  Profiles  Summary`` and a row per stream; markers follow the stream (``[d]`` default,
``[e]`` enabled, ``[x]`` disabled, as ``open-dkms [d][e]``) and each profile (``default [d] [i]``: the
default and the installed profile); a ``Hint:`` line ends the output::

    Last metadata expiration check: 0:03:06 ago on Wed 07 Aug 2024 02:50:50 PM CDT.
    cuda-rhel8-x86_64
    Name            Stream          Profiles                  Summary
    nvidia-driver   latest [e]      default [d], fm, ks, src  Nvidia driver for latest branch
    nvidia-driver   open-dkms [d]   default [d], fm, ks, src  Nvidia driver for open-dkms branch

    Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled

A repository without the module prints nothing for it; without any, DNF says ``No matching Modules to list`` on
standard error and exits 1 (``NO_MODULES``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError

COMMAND = 'dnf module list'
# what DNF 4 says (standard error, exit 1) when no enabled repository has the module
NO_MODULES = 'No matching Modules to list'
_MARKERS_RE = re.compile(r'^(?:\[[dexi]\])+$')
_HEADER_RE = re.compile(r'^Name\s+Stream\s+Profiles\s+Summary\s*$')
# lines DNF prints around the tables (subscription-manager's plugin among them)
_NOISE = ('Last metadata expiration check:', 'Updating Subscription Management repositories.',
          'Unable to read consumer identity', 'This system is not registered', 'Hint:')
_REPO_ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.:@+-]*$')


def _markers(token):
    return set(re.findall(r'\[([dexi])\]', token))


def _row(tokens, repo, number, line):
    """One stream row: name, stream and its markers, the profiles (comma separated, each with its markers), the
    summary."""
    name, stream = tokens[0], tokens[1]
    rest = tokens[2:]
    marks = set()
    while rest and _MARKERS_RE.match(rest[0]):
        marks |= _markers(rest.pop(0))
    profiles, default_profiles, installed_profiles = [], [], []
    while rest:
        token = rest.pop(0)
        more = token.endswith(',')
        profile = token.rstrip(',')
        if _MARKERS_RE.match(profile):
            raise ParseError(COMMAND, 'a profile marker without a profile', number, line)
        profiles.append(profile)
        while rest and not more and _MARKERS_RE.match(rest[0].rstrip(',')):
            token = rest.pop(0)
            more = token.endswith(',')
            found = _markers(token)
            if 'd' in found:
                default_profiles.append(profile)
            if 'i' in found:
                installed_profiles.append(profile)
        if not more:
            break
    return {'repo': repo, 'name': name, 'stream': stream, 'default': 'd' in marks, 'enabled': 'e' in marks,
            'disabled': 'x' in marks, 'profiles': profiles, 'default_profiles': default_profiles,
            'installed_profiles': installed_profiles, 'summary': ' '.join(rest)}


def parse_module_list(text, module=None):
    """[{repo (the repository's name), name, stream, default, enabled, disabled, profiles, default_profiles, installed_profiles, summary}]
    from ``dnf module list [MODULE]``; only the rows of ``module`` when given. An empty list for DNF's "no
    matching modules". Raises ParseError naming a line that fits no known form, or a row outside a table."""
    rows = []
    repo = None
    in_table = False
    lines = (text or '').splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            in_table = False
            continue
        if line.startswith(_NOISE) or line in (NO_MODULES, 'Error: ' + NO_MODULES):
            in_table = False
            continue
        if _HEADER_RE.match(line):
            in_table = True
            continue
        tokens = line.split()
        if in_table and len(tokens) >= 2:
            rows.append(_row(tokens, repo, number, line))
            continue
        # the repository's name (its id where the .repo file gives no name) on the line above its table
        above_header = number < len(lines) and _HEADER_RE.match(lines[number].strip())
        if above_header or (len(tokens) == 1 and _REPO_ID_RE.match(line)):
            repo = line
            in_table = False
            continue
        raise ParseError(COMMAND, 'not a repository id, a table header or a stream row', number, line)
    return [r for r in rows if module is None or r['name'] == module]
