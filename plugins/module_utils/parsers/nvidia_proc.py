# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for ``/proc/driver/nvidia/version``: the version and flavour of the loaded kernel module."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import clean

COMMAND = '/proc/driver/nvidia/version'

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."           (proprietary)
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ..." (open)
_NVRM_RE = re.compile(r'^NVRM version:\s+NVIDIA UNIX (?:(Open) Kernel Module for (\S+)|(\S+) Kernel Module)'
                      r'\s+([0-9]+(?:\.[0-9]+)+)\b')
_GCC_RE = re.compile(r'^GCC version:\s+(.*?)\s*$')


def parse_driver_version(text):
    """``{version, kernel_module, arch, gcc}`` from ``/proc/driver/nvidia/version``.

    ``kernel_module`` is ``open`` or ``proprietary``. Raises ParseError naming
    the line when there is no NVRM version line.
    """
    text = clean(text)
    if text is None or not text.strip():
        raise ParseError(COMMAND, 'output is empty')
    lines = text.splitlines()
    result = None
    gcc = None
    for line in lines:
        match = _NVRM_RE.match(line.strip())
        if match and result is None:
            result = {'version': match.group(4), 'kernel_module': 'open' if match.group(1) else 'proprietary',
                      'arch': match.group(2) or match.group(3)}
        gcc_match = _GCC_RE.match(line.strip())
        if gcc_match:
            gcc = gcc_match.group(1)
    if result is None:
        first = next((l for l in lines if l.strip()), '')
        raise ParseError(COMMAND, 'no "NVRM version: NVIDIA UNIX ... Kernel Module <version>" line', 1, first)
    result['gcc'] = gcc
    return result
