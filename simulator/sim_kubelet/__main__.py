# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpuops-sim kubelet stand-in program: ``python3 simulator/sim_kubelet [install] ARGS``, ``python3 -m
simulator.sim_kubelet``, and on a simulated node this file with a shebang (``/usr/bin/kubelet``, written by
``install``), which imports the package from the simulator's lib directory ``/usr/share/gpuops-sim/lib``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import sys

PACKAGE = 'sim_kubelet'
LIB = 'usr/share/gpuops-sim/lib'


def package_dir():
    """The directory holding the package: beside this file's directory (the repository, a copy of the
    simulator, the lib directory), this file's own directory (a stand-in under the lib directory), the lib
    directory under the root this file is installed in (``<root>/usr/bin/kubelet``), or under
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


if __package__:  # python3 -m simulator.sim_kubelet
    from .cli import main
else:  # a file: the package directory run as a program, or the installed copy (/usr/bin/kubelet)
    _lib, _here = package_dir(), os.path.dirname(os.path.realpath(__file__))
    if _here != _lib:  # not the package's modules as top-level modules (python3 simulator/sim_kubelet)
        sys.path[:] = [path for path in sys.path if os.path.realpath(path or '.') != _here]
    sys.path.insert(0, _lib)
    from sim_kubelet.cli import main  # noqa: E402

if __name__ == '__main__':
    sys.exit(main())
