# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``gpuops.node.nccl`` role writes and installs, decided before it changes anything.

Pure functions over the role's variables, the ``gpu_topology`` facts and the node class profile:

- :func:`validate` checks what the argument spec cannot (ranges, NCCL variable names and values, sources);
- :func:`select_hcas` derives ``NCCL_IB_HCA`` from the GPU-to-NIC relations of the topology facts;
- :func:`conf_lines` gives the ``/etc/nccl.conf`` lines;
- :func:`packages_of` names the packages of the node's OS family from the packaging table
  (``plans/nvidia_packaging.py``, ``LIBRARIES``);
- :func:`choose_version` picks the package version for ``nccl_version`` and the driver's CUDA major.

``plugins/modules/nccl_plan.py`` reads the node and calls them. Every error starts with the variable to change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import closest_nics
from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import bad_glob
from ansible_collections.gpuops.node.plugins.module_utils.versions import DpkgKey

# The socket transport's defaults of the role (nccl_settings is merged over them)
DEFAULT_SETTINGS = {
    'NCCL_NSOCKS_PERTHREAD': '8',
    'NCCL_SOCKET_NTHREADS': '4',
    'NCCL_BUFFSIZE': '4194304',
}

# NCCL variables the role sets from a variable of its own, never from nccl_settings: (NCCL name, variable)
DEDICATED = (
    ('NCCL_IB_HCA', 'nccl_ib_hcas'),
    ('NCCL_IB_TC', 'nccl_ib_tc'),
    ('NCCL_SOCKET_IFNAME', 'nccl_socket_ifname'),
    ('NCCL_TOPO_FILE', 'nccl_topo_file'),
    ('NCCL_ALGO', 'nccl_algo'),
)

# The NCCL variables of NCCL's documentation (user guide, "Environment Variables", 2.18-2.27). A name outside it
# is a warning, not an error: NCCL reads more than it documents, and new releases add names.
KNOWN = frozenset((
    'NCCL_ALGO', 'NCCL_BUFFSIZE', 'NCCL_CHECK_POINTERS', 'NCCL_COLLNET_ENABLE', 'NCCL_COLLNET_NODE_THRESHOLD',
    'NCCL_COMM_BLOCKING', 'NCCL_CONF_FILE', 'NCCL_CREATE_THREAD_CONTEXT', 'NCCL_CROSS_NIC', 'NCCL_CUMEM_ENABLE',
    'NCCL_CUMEM_HOST_ENABLE', 'NCCL_DEBUG', 'NCCL_DEBUG_FILE', 'NCCL_DEBUG_SUBSYS', 'NCCL_DMABUF_ENABLE',
    'NCCL_GRAPH_DUMP_FILE', 'NCCL_GRAPH_FILE', 'NCCL_GRAPH_MIXING_SUPPORT', 'NCCL_HOSTID', 'NCCL_IB_ADAPTIVE_ROUTING',
    'NCCL_IB_ADDR_FAMILY', 'NCCL_IB_ADDR_RANGE', 'NCCL_IB_AR_THRESHOLD', 'NCCL_IB_DISABLE', 'NCCL_IB_ECE_ENABLE',
    'NCCL_IB_FIFO_TC', 'NCCL_IB_GID_INDEX', 'NCCL_IB_HCA', 'NCCL_IB_MERGE_NICS', 'NCCL_IB_MERGE_VFS',
    'NCCL_IB_PCI_RELAXED_ORDERING', 'NCCL_IB_QPS_PER_CONNECTION', 'NCCL_IB_RETRY_CNT', 'NCCL_IB_RETURN_ASYNC_EVENTS',
    'NCCL_IB_ROCE_VERSION_NUM', 'NCCL_IB_SL', 'NCCL_IB_SPLIT_DATA_ON_QPS', 'NCCL_IB_TC', 'NCCL_IB_TIMEOUT',
    'NCCL_IB_USE_INLINE', 'NCCL_IGNORE_CPU_AFFINITY', 'NCCL_IGNORE_DISABLED_P2P', 'NCCL_LAUNCH_MODE',
    'NCCL_LL128_BUFFSIZE', 'NCCL_LL_BUFFSIZE', 'NCCL_LOCAL_REGISTER', 'NCCL_MAX_CTAS', 'NCCL_MAX_NCHANNELS',
    'NCCL_MAX_P2P_NCHANNELS', 'NCCL_MIN_CTAS', 'NCCL_MIN_NCHANNELS', 'NCCL_MNNVL_ENABLE', 'NCCL_NCHANNELS_PER_NET_PEER',
    'NCCL_NET', 'NCCL_NET_DISABLE_INTRA', 'NCCL_NET_FORCE_FLUSH', 'NCCL_NET_GDR_LEVEL', 'NCCL_NET_GDR_READ',
    'NCCL_NET_OVERHEAD', 'NCCL_NET_PLUGIN', 'NCCL_NET_SHARED_BUFFERS', 'NCCL_NET_SHARED_COMMS', 'NCCL_NSOCKS_PERTHREAD',
    'NCCL_NTHREADS', 'NCCL_NVB_DISABLE', 'NCCL_NVLS_ENABLE', 'NCCL_NVLS_NCHANNELS', 'NCCL_P2P_DIRECT_DISABLE',
    'NCCL_P2P_DISABLE', 'NCCL_P2P_LEVEL', 'NCCL_P2P_LL_THRESHOLD', 'NCCL_P2P_NET_CHUNKSIZE',
    'NCCL_P2P_NVL_CHUNKSIZE', 'NCCL_P2P_PCI_CHUNKSIZE', 'NCCL_P2P_PXN_LEVEL', 'NCCL_P2P_READ_ENABLE',
    'NCCL_P2P_USE_CUDA_MEMCPY', 'NCCL_PROFILER_PLUGIN', 'NCCL_PROTO', 'NCCL_PXN_DISABLE', 'NCCL_RAS_ENABLE',
    'NCCL_RUNTIME_CONNECT', 'NCCL_SET_STACK_SIZE', 'NCCL_SET_THREAD_NAME', 'NCCL_SHM_DISABLE', 'NCCL_SHM_LOCALITY',
    'NCCL_SHM_MEMCPY_MODE', 'NCCL_SHM_USE_CUDA_MEMCPY', 'NCCL_SINGLE_RING_THRESHOLD', 'NCCL_SOCKET_FAMILY',
    'NCCL_SOCKET_IFNAME', 'NCCL_SOCKET_NTHREADS', 'NCCL_TOPO_DUMP_FILE', 'NCCL_TOPO_FILE', 'NCCL_TREE_THRESHOLD',
    'NCCL_TUNER_PLUGIN', 'NCCL_WARN_ENABLE_DEBUG_INFO', 'NCCL_WORK_FIFO_DEPTH', 'NCCL_WORK_FIFO_BYTES',
))

_NAME_RE = re.compile(r'^NCCL_[A-Z0-9_]+$')
_VERSION_RE = re.compile(r'^\d+\.\d+\.\d+(-\d+)?$')
# NVIDIA's builds: 2.23.4-1+cuda12.6 (an epoch is allowed)
_PACKAGE_RE = re.compile(r'^(?:\d+:)?(\d+\.\d+\.\d+)-(\d+)(?:\+cuda(\d+)\.(\d+))?')
_CUDART_RE = re.compile(r'(?:^|[\s,|])libcudart(\d+)\b')
_SOURCE_TYPES = ('git', 'tarball', 'path')
_URL = ('http://', 'https://', 'file://')


def _number(value):
    """An int or float from a number or a numeric string (``-e`` gives strings); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                return float(value.strip())
            except ValueError:
                return None
    return None


def _text(value):
    """A setting's value as NCCL reads it: strings and integers; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and '\n' not in value and '\r' not in value:
        return value.strip()
    return None


def _settings_errors(settings, errors, warnings):
    if not isinstance(settings, dict):
        errors.append('nccl_settings must be a dict of NCCL variables (NCCL_NAME: value), got %r' % (settings,))
        return
    dedicated = dict(DEDICATED)
    for key in sorted(settings, key=str):
        value = settings[key]
        where = 'nccl_settings.%s' % key
        if not isinstance(key, str) or not _NAME_RE.match(key):
            errors.append('%s: %r is not an NCCL variable name (NCCL_ and capitals, digits, _)' % (where, key))
            continue
        if key in dedicated:
            errors.append('%s: set %s instead (the role derives or checks this one)' % (where, dedicated[key]))
            continue
        if value is not None and _text(value) is None:
            errors.append('%s must be a string or an integer (null leaves it out), got %s %r'
                          % (where, type(value).__name__, value))
            continue
        if key not in KNOWN:
            warnings.append('%s: not an NCCL variable NCCL documents; written as given (check its spelling)' % where)


def _source_errors(values, errors):
    url = values.get('nccl_repo_url') or ''
    if url and not url.startswith(_URL):
        errors.append('nccl_repo_url must be an http(s):// or file:// URL (empty: the apt sources the node has), '
                      'got %r' % url)
    if url:
        key = values.get('nccl_repo_key') or ''
        if not key and not values.get('nccl_repo_key_url'):
            errors.append('nccl_repo_key (or nccl_repo_key_url) must give the signing key of nccl_repo_url %s' % url)
        elif key and '-----BEGIN PGP PUBLIC KEY BLOCK-----' not in key:
            errors.append('nccl_repo_key must be an ASCII-armoured public key (-----BEGIN PGP PUBLIC KEY BLOCK-----)')
    version = values.get('nccl_version')
    if not isinstance(version, str) or not (version == '' or _VERSION_RE.match(version)):
        errors.append('nccl_version must be an NCCL version such as "2.23.4" (or "2.23.4-1"; empty: the newest '
                      'for the CUDA major), got %r' % (version,))
    major = _number(values.get('nccl_cuda_major') if values.get('nccl_cuda_major') != '' else 0)
    if major is None or major != int(major) or not (major == 0 or 10 <= major <= 99):
        errors.append('nccl_cuda_major must be a CUDA major version such as 12 (0: the driver\'s), got %r'
                      % (values.get('nccl_cuda_major'),))


def _tests_errors(values, errors):
    if not values.get('nccl_tests_build'):
        return
    kind = values.get('nccl_tests_source_type')
    source = values.get('nccl_tests_source') or ''
    if kind not in _SOURCE_TYPES:
        errors.append('nccl_tests_source_type must be one of %s, got %r' % (', '.join(_SOURCE_TYPES), kind))
    elif not source:
        errors.append('nccl_tests_source must name the nccl-tests source (%s) for nccl_tests_build' % kind)
    elif kind == 'path' and not source.startswith('/'):
        errors.append('nccl_tests_source must be an absolute directory on the node for nccl_tests_source_type '
                      'path, got %r' % source)
    elif kind == 'tarball' and not (source.startswith('/') or source.startswith(_URL)):
        errors.append('nccl_tests_source must be an http(s):// or file:// URL or an absolute path of a tarball on '
                      'the node for nccl_tests_source_type tarball, got %r' % source)
    if kind == 'git' and not values.get('nccl_tests_version'):
        errors.append('nccl_tests_version must name the commit (or tag) of nccl_tests_source to build, for '
                      'nccl_tests_source_type git')
    for name in ('nccl_tests_dest', 'nccl_tests_cuda_home', 'nccl_tests_nccl_home'):
        if name == 'nccl_tests_nccl_home' and not values.get(name):
            continue
        if not str(values.get(name) or '').startswith('/'):
            errors.append('%s must be an absolute path, got %r' % (name, values.get(name)))
    if values.get('nccl_tests_mpi') and not str(values.get('nccl_tests_mpi_home') or '').startswith('/'):
        errors.append('nccl_tests_mpi_home must be the absolute path of the MPI installation for nccl_tests_mpi, '
                      'got %r' % (values.get('nccl_tests_mpi_home'),))
    args = values.get('nccl_tests_make_args')
    if not isinstance(args, list) or any(not isinstance(a, str) or '=' not in a for a in args):
        errors.append('nccl_tests_make_args must be a list of NAME=VALUE make arguments, got %r' % (args,))


def _gate_errors(values, errors):
    busbw = values.get('nccl_test_min_busbw_gbps')
    if busbw is not None and busbw != '':
        number = _number(busbw)
        if number is None or number < 0:
            errors.append('nccl_test_min_busbw_gbps must be a bus bandwidth in GB/s, 0 or more (null: no '
                          'threshold), got %r' % (busbw,))
    command = values.get('nccl_test_command')
    if not (isinstance(command, str) or (isinstance(command, list) and all(isinstance(c, str) for c in command))):
        errors.append('nccl_test_command must be a command line or a list of arguments, got %r' % (command,))
    elif (command or values.get('nccl_tests_build')) and (busbw is None or busbw == ''):
        # a gate without a threshold would pass any bandwidth: it is not a gate
        errors.append('nccl_test_min_busbw_gbps: the gate runs nccl-tests (%s) and needs the bus bandwidth the node '
                      'class must reach at the largest size, in GB/s (about 400 for 8x H100 on NVSwitch); set it '
                      'in the node class\'s group_vars' % ('nccl_test_command' if command else 'nccl_tests_build'))
    env = values.get('nccl_test_environment')
    if not isinstance(env, dict) or any(_text(v) is None for v in env.values()):
        errors.append('nccl_test_environment must map variable names to strings or integers, got %r' % (env,))
    timeout = _number(values.get('nccl_test_timeout'))
    if timeout is None or timeout <= 0:
        errors.append('nccl_test_timeout must be a number of seconds above 0, got %r'
                      % (values.get('nccl_test_timeout'),))


def validate(values):
    """``(errors, warnings)`` of the role's variables: what a spec cannot say, each naming the variable."""
    errors, warnings = [], []
    _settings_errors(values.get('nccl_settings'), errors, warnings)
    _source_errors(values, errors)
    for pattern in values.get('nccl_ib_hcas') or []:
        if not isinstance(pattern, str) or bad_glob(pattern):
            errors.append('nccl_ib_hcas: %r is not a glob (empty, or an unclosed [)' % (pattern,))
    tc = values.get('nccl_ib_tc')
    if tc not in (None, ''):
        number = _number(tc)
        if number is None or number != int(number) or not 0 <= number <= 255:
            errors.append('nccl_ib_tc must be a traffic class from 0 to 255 (empty: unset), got %r' % (tc,))
    for name in ('nccl_socket_ifname', 'nccl_topo_file', 'nccl_algo'):
        if _text(values.get(name) if values.get(name) is not None else '') is None:
            errors.append('%s must be a string (empty: unset), got %r' % (name, values.get(name)))
    topo = values.get('nccl_topo_file') or ''
    if isinstance(topo, str) and topo and not topo.startswith('/'):
        errors.append('nccl_topo_file must be an absolute path, got %r' % topo)
    connections = _number(values.get('nccl_cuda_device_max_connections'))
    if connections is None or connections != int(connections) or not 0 <= connections <= 32:
        errors.append('nccl_cuda_device_max_connections must be from 1 to 32 (0: not set), got %r'
                      % (values.get('nccl_cuda_device_max_connections'),))
    _tests_errors(values, errors)
    _gate_errors(values, errors)
    return errors, warnings


def _ports(nic):
    ports = [p.get('port') for p in nic.get('ports') or [] if isinstance(p.get('port'), int)]
    return ports or [1]


def select_hcas(facts, nic_names, patterns):
    """``(hcas, errors, warnings)``: the ``NAME:PORT`` entries of ``NCCL_IB_HCA``.

    ``patterns`` (``nccl_ib_hcas``) given: the RDMA devices they select, every glob selecting one. Otherwise the
    NICs closest to each GPU (its ``nvidia-smi topo -m`` relations) among those the node class's ``nic_names``
    globs select (all when None), so storage and front-end NICs stay out; without GPU-to-NIC relations (no
    driver loaded), every NIC ``nic_names`` selects. In the order of the RDMA devices.
    """
    nics = facts.get('nics') or []
    order = [n['name'] for n in nics]
    errors, warnings = [], []
    if patterns:
        chosen = []
        for pattern in patterns:
            hits = [name for name in order if fnmatch.fnmatchcase(name, pattern)]
            if not hits:
                errors.append('nccl_ib_hcas: %r selects no RDMA device; the node has %s'
                              % (pattern, ', '.join(order) or 'none'))
            chosen.extend(h for h in hits if h not in chosen)
    else:
        candidates = [n for n in order if nic_names is None or any(fnmatch.fnmatchcase(n, p) for p in nic_names)]
        if nic_names is not None and order and not candidates:
            warnings.append('the node class\'s nic_names (%s) select none of the RDMA devices (%s): NCCL_IB_HCA '
                            'is not set' % (', '.join(nic_names), ', '.join(order)))
        matrix = facts.get('matrix') or {}
        gpus = [g for g in matrix if g.startswith('GPU')]
        in_matrix = [n for n in candidates if any(n in matrix.get(g, {}) for g in gpus)]
        chosen = []
        if gpus and in_matrix:
            for gpu in gpus:
                _relation, closest = closest_nics(matrix, gpu, in_matrix)
                chosen.extend(n for n in closest if n not in chosen)
        elif candidates:
            chosen = list(candidates)
            warnings.append('no GPU-to-NIC relation in the topology (driver not loaded?): NCCL_IB_HCA lists every '
                            'RDMA device nic_names selects')
        if not order:
            warnings.append('the node has no RDMA device: NCCL_IB_HCA is not set (NCCL uses sockets)')
    by_name = dict((n['name'], n) for n in nics)
    chosen = sorted(chosen, key=order.index)
    return ['%s:%d' % (name, port) for name in chosen for port in _ports(by_name[name])], errors, warnings


def settings(values, hcas):
    """The ``{NCCL_NAME: value}`` of ``/etc/nccl.conf``: the defaults, ``nccl_settings`` over them (null removes
    one), then the dedicated variables that are set."""
    merged = dict(DEFAULT_SETTINGS)
    for key, value in (values.get('nccl_settings') or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _text(value)
    if hcas:
        # '=': exact device names (NCCL matches prefixes otherwise: mlx5_1 would select mlx5_10 and mlx5_11)
        merged['NCCL_IB_HCA'] = '=' + ','.join(hcas)
    tc = values.get('nccl_ib_tc')
    if tc not in (None, ''):
        merged['NCCL_IB_TC'] = str(int(_number(tc)))
    for key, name in (('NCCL_SOCKET_IFNAME', 'nccl_socket_ifname'), ('NCCL_TOPO_FILE', 'nccl_topo_file'),
                      ('NCCL_ALGO', 'nccl_algo')):
        if values.get(name):
            merged[key] = _text(values[name])
    return merged


def conf_lines(merged):
    """``NAME=value`` lines, sorted by name: the same settings always give the same file."""
    return ['%s=%s' % (key, merged[key]) for key in sorted(merged)]


def cuda_of(facts, values):
    """``((major, minor), errors)``: the CUDA version packages must match: ``nccl_cuda_major``, else the driver's
    (``cuda_version`` of the facts, minor None when only the major is known)."""
    major = _number(values.get('nccl_cuda_major') or 0) or 0
    version = facts.get('cuda_version') or ''
    found = re.match(r'^(\d+)\.(\d+)', version)
    if major:
        minor = int(found.group(2)) if found and int(found.group(1)) == major else None
        return (int(major), minor), []
    if found:
        return (int(found.group(1)), int(found.group(2))), []
    return (None, None), ['nccl_cuda_major: the driver reports no CUDA version (%s); set nccl_cuda_major to the '
                          'CUDA major version of the driver the node will run (12 for drivers 525 to 575)'
                          % ('driver not loaded' if not facts.get('driver_loaded') else 'cuda_version unreadable')]


def package_cuda(version, depends=''):
    """``(major, minor)`` a package version was built for: ``+cudaNN.M`` (NVIDIA's builds), else a dependency on
    ``libcudartNN`` (the distribution's builds, minor None); ``(None, None)`` when neither says."""
    found = _PACKAGE_RE.match(version or '')
    if found and found.group(3):
        return int(found.group(3)), int(found.group(4))
    dep = _CUDART_RE.search(depends or '')
    if dep:
        return int(dep.group(1)), None
    return None, None


def packages_of(family, values):
    """``(packages, package_manager, error)``: the NCCL packages of OS ``family`` (the runtime, and its headers with
    ``nccl_dev`` or ``nccl_tests_build``) and ``{name, hold}`` of its package manager, from the packaging table."""
    row = nvidia_packaging.library('nccl', family)
    if row is None or not row.supported:
        known = [r.family for r in nvidia_packaging.LIBRARIES if r.component == 'nccl' and r.supported]
        return [], None, ('gpuops_nccl_enabled: gpuops.node.nccl has no NCCL packages for the OS family %r (known: '
                          '%s); set gpuops_nccl_enabled: false for this host' % (family, ', '.join(known)))
    packages = [row.packages['lib']]
    if values.get('nccl_dev') or values.get('nccl_tests_build'):
        packages.append(row.packages['dev'])
    return packages, {'name': nvidia_packaging.MANAGERS[family], 'hold': row.hold}, None


def choose_version(entries, nccl_version, cuda, package='libnccl2'):
    """``(version, error)``: the package version of ``package`` to install from ``entries`` (``[{version,
    depends}]``, the versions the package manager offers).

    Only builds for the CUDA major of ``cuda`` count; of those, the ``nccl_version`` ones (``2.23.4`` or
    ``2.23.4-1``), or all when it is empty. Among them the newest NCCL, and for one NCCL version the build for the
    newest CUDA minor the driver supports (else the oldest minor above it).
    """
    major, minor = cuda
    matching = []
    for entry in entries:
        found = _PACKAGE_RE.match(entry['version'])
        if not found:
            continue
        built = package_cuda(entry['version'], entry.get('depends'))
        if built[0] != major:
            continue
        release = '%s-%s' % (found.group(1), found.group(2))
        if nccl_version and nccl_version not in (found.group(1), release):
            continue
        matching.append((entry['version'], found.group(1), built[1]))
    if not matching:
        offered = ', '.join(e['version'] for e in entries) or 'none'
        if nccl_version:
            return None, ('nccl_version: the package sources offer no %s %s built for CUDA %d (offered: %s); choose '
                          'a version built for the driver\'s CUDA major, or set nccl_cuda_major'
                          % (package, nccl_version, major, offered))
        return None, 'nccl_version: the package sources offer no %s built for CUDA %d (offered: %s)' % (
            package, major, offered)

    def rank(item):
        version, _upstream, built_minor = item
        fits = built_minor is None or minor is None or built_minor <= minor
        return (DpkgKey(_PACKAGE_RE.match(version).group(1) + '-' + _PACKAGE_RE.match(version).group(2)),
                fits, (built_minor or 0) if fits else -(built_minor or 0))

    return sorted(matching, key=rank)[-1][0], None


def test_command(values, gpu_count):
    """The acceptance command of the gate: ``nccl_test_command``, else all_reduce_perf of the built nccl-tests
    over the node's GPUs, else "" (the gate is off)."""
    command = values.get('nccl_test_command')
    if command:
        return command
    if values.get('nccl_tests_build') and gpu_count:
        return '%s/build/all_reduce_perf -b 8 -e 8G -f 2 -g %d' % (values['nccl_tests_dest'].rstrip('/'), gpu_count)
    return ''
