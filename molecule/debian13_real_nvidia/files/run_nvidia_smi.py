# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the node's nvidia-smi the way the collection's gatherer does and print, as JSON, exactly what it
printed (stdout and stderr byte for byte, as text) and its exit status, plus which binary ran.

Run on the node with ansible.builtin.script (executable python3); ansible's command module would strip
trailing newlines, which are part of what is compared with the real captures.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

COMMANDS = [[], ['-q', '-x'], ['topo', '-m'], ['nvlink', '-s'], ['--version']]


def main():
    path = None
    for directory in os.environ.get('PATH', '/usr/bin:/bin').split(os.pathsep):
        candidate = os.path.join(directory, 'nvidia-smi')
        if os.access(candidate, os.X_OK):
            path = candidate
            break
    result = {'path': path, 'realpath': os.path.realpath(path) if path else None, 'elf': False, 'runs': []}
    if path:
        with open(path, 'rb') as handle:
            result['elf'] = handle.read(4) == b'\x7fELF'
        for args in COMMANDS:
            proc = subprocess.Popen([path] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = proc.communicate()
            result['runs'].append({'args': args, 'rc': proc.returncode,
                                   'stdout': out.decode('utf-8', 'replace'), 'stderr': err.decode('utf-8', 'replace')})
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
