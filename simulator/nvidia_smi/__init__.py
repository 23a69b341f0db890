# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replaying, stateful ``nvidia-smi`` for simulated GPU nodes (gpuops.node).

Installed as ``/usr/bin/nvidia-smi`` on a simulated node (``__main__.py`` with a shebang; this package under
``/usr/share/gpuops-sim/lib/nvidia_smi/``). It answers from a hardware profile (a capture bundle derived from
real captures, see simulator/build_profiles/) in ``/usr/share/gpuops-sim/profile/`` and keeps what setters
change (persistence mode, compute mode, MIG mode, MIG instances) in ``/var/lib/gpuops-sim/state.json``, so
later queries show the change and it survives container restarts. On a bare node (``sim/runtime.json``
``"driver": "emulated"``) it answers only while an emulated module is loaded (simulator/sim_driver.py).
The simulator's admin tool ``gpuops-sim`` is simulator/admin.py.

Environment overrides (tests): ``GPUOPS_SIM_ROOT`` (prefix for both default paths), ``GPUOPS_SIM_PROFILE``
(profile directory), ``GPUOPS_SIM_STATE`` (state file), ``GPUOPS_SIM_ALLOW_NONROOT=1`` (setters do not
require root).

The modules, along the tool's parts:

* ``common``: file names, default paths, exit codes, Result/Exit, the option parser, ``-i`` GPU selection
* ``xmldoc``: textual editing of ``-q -x`` documents (the real tool's formatting kept byte for byte)
* ``state``: the installed profile, the persisted state, the effective XML (profile XML + state)
* ``mig``: the MIG model, the ``<mig_devices>`` element, the ``mig -lgip/-lgi/-lci`` tables
* ``qtext``: ``-q`` text; ``query_gpu``: ``--query-gpu``; ``table``: the default table
* ``topo``: ``topo -m`` and ``nvlink -s``; ``mig_commands``: ``mig ...``
* ``cli``: the top-level options, queries and setters, ``run`` and ``main``

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from .common import (DEFAULT_PROFILE, DEFAULT_STATE, HELP_HINT, INVALID_COMBINATION, MIG_FILE, NOT_SIMULATED,
                     NVLINK_FILE, RC_BAD_ARG, RC_DRIVER, RC_NO_PERMISSION, RC_NOT_FOUND, RC_NOT_SUPPORTED, RC_OK,
                     RC_OTHER, RUNTIME_FILE, SIM_VERSION, TOPO_FILE, XML_FILE, Exit, Result, bad_argument,
                     not_simulated, parse_options, read_text, require_root, select_gpus, sim_paths)
from .xmldoc import (XmlDoc, block_unit, element_indent, element_span, get_value, has_element, replace_element,
                     set_value)
from .state import GpuInfo, Profile, State, apply_state, effective_blocks
from .mig import (COMPUTE_SLICES, MEMORY_SLOTS, find_gi_profile, free_count, gi_id_for, mig_devices, mig_uuid,
                  place_gi, render_lci, render_lgi, render_lgip)
from .qtext import render_q_text
from .query_gpu import QUERY_ALIASES, QUERY_FIELDS, render_query_gpu
from .table import render_table
from .topo import TOPO_UNDERLINE_SINCE, driver_version_tuple, topo_header_underlined, underline_topo_header
from .cli import COMPUTE_MODES, TOP_OPTIONS, Nvsmi, main, run

__all__ = [
    'DEFAULT_PROFILE', 'DEFAULT_STATE', 'HELP_HINT', 'INVALID_COMBINATION', 'MIG_FILE', 'NOT_SIMULATED',
    'NVLINK_FILE', 'RC_BAD_ARG', 'RC_DRIVER', 'RC_NO_PERMISSION', 'RC_NOT_FOUND', 'RC_NOT_SUPPORTED', 'RC_OK',
    'RC_OTHER', 'RUNTIME_FILE', 'SIM_VERSION', 'TOPO_FILE', 'XML_FILE', 'Exit', 'Result', 'bad_argument',
    'not_simulated', 'parse_options', 'read_text', 'require_root', 'select_gpus', 'sim_paths',
    'XmlDoc', 'block_unit', 'element_indent', 'element_span', 'get_value', 'has_element', 'replace_element',
    'set_value',
    'GpuInfo', 'Profile', 'State', 'apply_state', 'effective_blocks',
    'COMPUTE_SLICES', 'MEMORY_SLOTS', 'find_gi_profile', 'free_count', 'gi_id_for', 'mig_devices', 'mig_uuid',
    'place_gi', 'render_lci', 'render_lgi', 'render_lgip',
    'render_q_text', 'QUERY_ALIASES', 'QUERY_FIELDS', 'render_query_gpu', 'render_table',
    'TOPO_UNDERLINE_SINCE', 'driver_version_tuple', 'topo_header_underlined', 'underline_topo_header',
    'COMPUTE_MODES', 'TOP_OPTIONS', 'Nvsmi', 'main', 'run',
]
