# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``nvidia-smi topo -m`` (its header line in terminal underline codes) and ``nvidia-smi nvlink -s``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from .common import INVALID_COMBINATION, NVLINK_FILE, TOPO_FILE, Result, bad_argument, not_simulated, parse_options, select_gpus


# Recent drivers print the header line of ``topo -m`` wrapped in the terminal
# underline codes SGR 4 and SGR 0, also when writing to a pipe or a file:
#     \t\x1b[4mGPU0\tGPU1\t...\tGPU NUMA ID\x1b[0m
# (ESC[4m after the leading tab, ESC[0m at the end of the line, nothing else
# coded). The profiles keep the header plain: they come from copies taken from
# web pages, which lose the codes; the replayer adds them when it prints.
#
# Which drivers: program-captured outputs (redirected to a file or read from a
# subprocess, never a terminal) show the codes for 535.129.03 (an sglang
# check_env dump), 570.144, 580.95.05, 580.105.08, 580.142, 580.173.02 (host
# reports), 590.48.01, 595.71.05, 595.80 and 610.57.04 (Linux) and 610.62
# (Windows) (utkuozdemir/nvidia_gpu_exporter internal/captures/, collect.sh
# appends the output to the capture file). siboehm/bench
# gpu/nvlink/README.md (2023-03-02) shows them on a header without the
# ``GPU NUMA ID`` column, so some driver released by then (530 or older)
# already printed them; no program-captured output without the codes was found
# for any driver. The first version is therefore not pinned, and the rule is
# the conservative one: the codes for a profile whose XML driver version is
# TOPO_UNDERLINE_SINCE or newer (the oldest branch with a captured version),
# the plain header for older drivers (the A100 and P100 profiles, 510.47.03)
# and when the XML gives no version. See simulator/README.md.
TOPO_UNDERLINE_SINCE = (535,)
SGR_UNDERLINE = '\x1b[4m'
SGR_RESET = '\x1b[0m'


def driver_version_tuple(version):
    """``(545, 23, 8)`` for ``'545.23.08'``; None when the text is not a dotted version number."""
    version = (version or '').strip()
    if not re.match(r'^\d+(\.\d+)*$', version):
        return None
    return tuple(int(part) for part in version.split('.'))


def topo_header_underlined(driver_version):
    """Whether the driver of this version prints the ``topo -m`` header in underline codes."""
    found = driver_version_tuple(driver_version)
    return found is not None and found >= TOPO_UNDERLINE_SINCE


def underline_topo_header(text):
    """``topo -m`` text with its header line (the first line, ``\\t`` then the column names)
    wrapped as recent drivers print it; any other text unchanged."""
    cut = text.find('\n')
    line, rest = (text, '') if cut < 0 else (text[:cut], text[cut:])
    ending = ''
    if line.endswith('\r'):
        line, ending = line[:-1], '\r'
    if not line.startswith('\t') or not line.strip() or '\x1b' in line:
        return text
    return '\t' + SGR_UNDERLINE + line[1:] + SGR_RESET + ending + rest


class TopoCommands(object):
    """``topo -m`` and ``nvlink -s [-i N]`` of Nvsmi (simulator/nvidia_smi/cli.py)."""

    def cmd_topo(self, argv):
        opts, _pos = parse_options(argv, {'-m': ('matrix', False), '--matrix': ('matrix', False)})
        if not opts.get('matrix'):
            raise bad_argument(INVALID_COMBINATION)
        found = self.profile.file(TOPO_FILE)
        if found is None:
            raise not_simulated('topo -m (profile has no %s)' % TOPO_FILE)
        rc, text = found
        if rc == 0 and topo_header_underlined(self._driver_version()):
            text = underline_topo_header(text)
        return Result(rc, text)

    def cmd_nvlink(self, argv):
        opts, _pos = parse_options(argv, {'-s': ('status', False), '--status': ('status', False),
                                          '-i': ('id', True), '--id': ('id', True)})
        if not opts.get('status'):
            raise not_simulated('nvlink ' + ' '.join(argv))
        found = self.profile.file(NVLINK_FILE)
        if found is None:
            raise not_simulated('nvlink -s (profile has no %s)' % NVLINK_FILE)
        rc, text = found
        if rc or opts.get('id') is None:
            return Result(rc, text)
        selected = select_gpus(self.profile.gpus(), opts['id'])
        wanted = set(g.index for g in selected)
        keep = []
        current = None
        for line in text.splitlines(True):
            match = re.match(r'^GPU (\d+): ', line)
            if match:
                current = int(match.group(1))
            if current in wanted:
                keep.append(line)
        return Result(0, ''.join(keep))
