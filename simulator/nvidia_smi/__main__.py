# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpuops-sim ``nvidia-smi`` program: ``python3 -m simulator.nvidia_smi ARGS``, ``python3
simulator/nvidia_smi ARGS``, and on a simulated node this file with a shebang (``/usr/bin/nvidia-smi`` and the
stand-ins of a bare node, simulator/install_node.py), which imports the package from the simulator's lib
directory ``/usr/share/gpuops-sim/lib``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import sys

PACKAGE = 'nvidia_smi'
LIB = 'usr/share/gpuops-sim/lib'


def package_dir():
    """The directory holding the package: beside this file's directory (the repository, a copy of the
    simulator, the lib directory), this file's own directory (a stand-in under the lib directory), the lib
    directory under the root this file is installed in (``<root>/usr/bin/nvidia-smi``), or under
    ``GPUOPS_SIM_ROOT``."""
    here = os.path.dirname(os.path.realpath(__file__))
    candidates = [os.path.dirname(here), here]
    up = here
    while True:
        candidates.append(os.path.join(up, LIB))
        if os.path.dirname(up) == up:
            break
        up = os.path.dirname(up)
    candidates.append(os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', LIB))
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, PACKAGE, '__init__.py')):
            return candidate
    raise SystemExit('gpuops-sim: the %s package is not installed under /%s' % (PACKAGE, LIB))


if __package__:  # python3 -m simulator.nvidia_smi
    from .cli import main
else:  # a file: the package directory run as a program, or an installed copy of this file
    _lib, _here = package_dir(), os.path.dirname(os.path.realpath(__file__))
    if _here != _lib:  # not the package's modules as top-level modules (python3 simulator/nvidia_smi)
        sys.path[:] = [path for path in sys.path if os.path.realpath(path or '.') != _here]
    sys.path.insert(0, _lib)
    from nvidia_smi.cli import main  # noqa: E402

if __name__ == '__main__':
    sys.exit(main())
