# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the kubelet on simulated nodes (``python3 simulator/sim_kubelet install``, then ``kubelet``);
what it does and does not is in ``cli.py``'s docstring (``kubelet --help``).

The modules: ``messages`` (the kubelet's texts, klog), ``quantity`` (quantities, CPU sets), ``machine`` (CPUs and
NUMA nodes of the simulated sysfs), ``config`` (decoding, defaults, validation, the managers' checks),
``checkpoints`` (the CPU and memory managers' states), ``cli`` (/healthz, ``run``, ``main``), ``install``.

Stdlib + PyYAML (python3-yaml); Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from .messages import KubeletError, klog, quote
from .quantity import add_quantities, format_cpuset, format_quantity, parse_cpuset, parse_quantity
from .machine import machine, sysfs_root
from .config import (API_VERSION, DEFAULT_MAX_NUMA_NODES, DEFAULT_MEMORY_AVAILABLE, DEFAULT_RUNTIME_DELAY, FIELDS, KIND,
                     decode, defaults, eviction_memory, load, managers, merge_patch, static_memory, topology_manager,
                     validate, validate_node_allocatable)
from .checkpoints import (cpu_checksum, fnv32a, machine_state, memory_checksum, start_cpu_manager,
                          start_memory_manager)
from .install import FILES, KEEP, LIB, install
from .cli import Healthz, main, parse_flags, run, runtime_delay, serve_healthz, start_container_manager

__all__ = [
    'KubeletError', 'klog', 'quote', 'add_quantities', 'format_cpuset', 'format_quantity', 'parse_cpuset',
    'parse_quantity', 'machine', 'sysfs_root', 'API_VERSION', 'DEFAULT_MAX_NUMA_NODES', 'DEFAULT_MEMORY_AVAILABLE',
    'DEFAULT_RUNTIME_DELAY', 'FIELDS', 'KIND', 'decode', 'defaults', 'eviction_memory', 'load', 'managers',
    'merge_patch', 'static_memory', 'topology_manager', 'validate', 'validate_node_allocatable', 'cpu_checksum',
    'fnv32a', 'machine_state', 'memory_checksum', 'start_cpu_manager', 'start_memory_manager', 'FILES', 'KEEP', 'LIB',
    'install', 'Healthz', 'main', 'parse_flags', 'run', 'runtime_delay', 'serve_healthz', 'start_container_manager',
]
