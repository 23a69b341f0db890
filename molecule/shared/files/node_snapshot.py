# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print a JSON snapshot of what a rollout must not touch on a held-back or check-mode node.

Run on the node (ansible.builtin.script with executable python3). For every path under the
trees below, without following links: type, mode, owner, size, mtime (ns) and the sha256 of
a regular file's content, or a link's target. Missing trees are recorded as missing.
Two snapshots are equal only when nothing was written, chmod'ed, chown'ed or touched.

Left out: what the simulated fabric's traffic moves on its own, once a second (simulator/README.md, "HCAs"): the
port counters of the simulated HCAs (``.../ports/<n>/counters`` and ``hw_counters``) and the simulator's
``tmp`` directory they are replaced through.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import re
import stat
import sys

TREES = ['/etc', '/var/lib/kubelet', '/var/lib/gpuops-sim', '/usr/share/gpuops-sim', '/usr/bin/nvidia-smi', '/usr/local/sbin/gpuops-sim']
MOVING = re.compile(r'^/usr/share/gpuops-sim/(tmp(/|$)|sys/class/infiniband/[^/]+/ports/[0-9]+/(hw_)?counters(/|$))')


def entry(path):
    st = os.lstat(path)
    info = {'mode': '%o' % st.st_mode, 'uid': st.st_uid, 'gid': st.st_gid,
            'size': st.st_size, 'mtime_ns': st.st_mtime_ns}
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, 'rb') as handle:
            for block in iter(lambda: handle.read(65536), b''):
                digest.update(block)
        info['sha256'] = digest.hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        info['target'] = os.readlink(path)
    return info


def snapshot(trees):
    result = {}
    for top in trees:
        if not os.path.lexists(top):
            result[top] = 'missing'
            continue
        result[top] = entry(top)
        if os.path.isdir(top) and not os.path.islink(top):
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames.sort()
                dirnames[:] = [d for d in dirnames if not MOVING.match(os.path.join(dirpath, d))]
                for name in dirnames + sorted(filenames):
                    path = os.path.join(dirpath, name)
                    if not MOVING.match(path):
                        result[path] = entry(path)
    return result


if __name__ == '__main__':
    json.dump(snapshot(sys.argv[1:] or TREES), sys.stdout, sort_keys=True)
    sys.stdout.write('\n')
