# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests of a simulated node (gpuops.node).

Installed as ``/usr/share/gpuops-sim/lib/sim_nccl.py``. The stand-in nccl-tests source tree
(tests/repo/nccl-tests-src) builds ``build/<collective>_perf`` launchers that run
``python3 /usr/share/gpuops-sim/lib/sim_nccl.py <collective> ARGS``; ``main(argv)`` also takes the
collective from ``argv[0]`` when that is named ``<collective>_perf``.

The output has the layout of nccl-tests 2.18 (tests/fixtures/real/nccl/, the GB10 capture): the node's
GPUs (names and bus ids from the profile's ``nvidia-smi-q-x.xml``, honouring ``CUDA_VISIBLE_DEVICES``),
the hostname, one process, the sizes of ``-b``/``-e`` swept by ``-f`` (or ``-i``), ``-g``/``-t`` GPUs,
``-d``, ``-o``, ``-r``, ``-c 0`` (``#wrong`` N/A), ``-n``, ``-w``, ``-m``, ``-G``, ``-a``, ``-z``.

Bandwidth model (``REFERENCES``): the bus bandwidth of a size is that of a real all_reduce capture of the
node's kind: ``nvswitch`` (H100/H200/B200-class GPUs, or any profile with NVLinks) the 8x H100 capture,
``a100`` (A100 GPUs) the DGX A100 NVSwitch capture, ``pcie`` (no NVLink) the PCIe A40 capture without P2P
(a slow node: 1.4 GB/s). Inside the captured sizes the values are interpolated (log of the size) between
the captured rows, so a run over the captured sizes prints the captured bus bandwidths; above the largest
size the bandwidth stays at the largest size's; below the smallest, ``time = latency + size / busbw_max``
(``busbw = size / time``) with the latency that passes through the smallest row. nccl-tests' bus bandwidth hides the GPU count, so
it is the same for every collective and count of GPUs >= 2; the algorithm bandwidth is
``busbw / factor`` (all_reduce ``2(n-1)/n``; all_gather, reduce_scatter, alltoall ``(n-1)/n``; broadcast,
reduce, sendrecv ``1``) and the time ``size / algbw``. One GPU has bus bandwidth 0 where the factor is.

Faults: ``nccl_slow`` scales every bandwidth by ``factor`` (default 0.25; times grow by 1/factor). It is
read from the profile (``sim/runtime.json`` ``faults``, written with profile.yml's ``faults`` by
simulator/faults.py through ``apply_fault_nccl_slow``) and from the run-time file
``/var/lib/gpuops-sim/faults-runtime.json`` (``{"nccl_slow": {"factor": 0.25}}``, written by
``gpuops-sim fault nccl_slow``); when both are set the lower factor applies.

Failures as nccl-tests prints them (``<host>: Test CUDA failure common.cu:941 '<reason>'``, exit 1):
the node's ``nvidia-smi -L`` fails (no driver: ``no CUDA-capable device is detected``) or more GPUs are
asked than visible (``invalid device ordinal``). Without ``libnccl2`` (dpkg) and no ``libnccl.so.2`` in
``LD_LIBRARY_PATH`` the loader's error is printed (exit 127); the NCCL version of the header is the
installed libnccl2's.

Environment (tests): ``GPUOPS_SIM_ROOT`` (prefix of every path), ``GPUOPS_SIM_PROFILE``,
``GPUOPS_SIM_FAULTS_RUNTIME``, ``GPUOPS_SIM_NVIDIA_SMI`` (the nvidia-smi to ask), ``GPUOPS_SIM_HOSTNAME``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys

PROFILE = 'usr/share/gpuops-sim/profile'
LIB = 'usr/share/gpuops-sim/lib'
RUNTIME_FAULTS = 'var/lib/gpuops-sim/faults-runtime.json'
DPKG_STATUS = 'var/lib/dpkg/status'
NCCL_TESTS_VERSION = '2.18.3'
DEFAULT_SLOW_FACTOR = 0.25

# kind -> the real all_reduce capture it replays and its rows: (size, out-of-place busbw, in-place busbw).
# tests/unit/simulator/test_sim_nccl.py checks these rows against parse_nccl_tests of the capture.
REFERENCES = {
    'nvswitch': {'source': 'nccl/all_reduce-h100-8gpu-single-node-indented.txt', 'rows': (
        (268435456, 419.49, 420.42), (536870912, 435.46, 436.02), (1073741824, 466.57, 466.37),
        (2147483648, 470.73, 470.63))},
    'a100': {'source': 'nccl/all_reduce-dgx-a100-4gpu-nvswitch-table-only.txt', 'rows': (
        (1073741824, 224.84, 224.89), (2147483648, 230.27, 230.13), (4294967296, 232.81, 164.13),
        (8589934592, 234.72, 234.74))},
    'pcie': {'source': 'nccl/all_reduce-a40-4gpu-SYS-p2p-disabled-lowbw-table-only.txt', 'rows': (
        (1073741824, 1.44, 1.44), (2147483648, 1.42, 1.43), (4294967296, 1.4, 1.4), (8589934592, 1.35, 1.35))},
}
MIN_LATENCY_US = 5.0

# collective -> (bus factor of n ranks, count divided by the ranks, has a reduction, has a root)
COLLECTIVES = {
    'all_reduce': (lambda n: 2.0 * (n - 1) / n, False, True, False),
    'all_gather': (lambda n: float(n - 1) / n, True, False, False),
    'reduce_scatter': (lambda n: float(n - 1) / n, True, True, False),
    'alltoall': (lambda n: float(n - 1) / n, True, False, False),
    'broadcast': (lambda n: 1.0, False, False, True),
    'reduce': (lambda n: 1.0, False, True, True),
    'sendrecv': (lambda n: 1.0, False, False, False),
}
TYPES = {'int8': 1, 'char': 1, 'uint8': 1, 'int32': 4, 'int': 4, 'uint32': 4, 'int64': 8, 'uint64': 8,
         'half': 2, 'float16': 2, 'float': 4, 'float32': 4, 'double': 8, 'float64': 8, 'bfloat16': 2,
         'f8e4m3': 1, 'f8e5m2': 1}
OPS = ('sum', 'prod', 'max', 'min', 'avg')

HEADER = (
    '#                                                              out-of-place                       in-place          \n'
    '#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n'
    '#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n')


class NcclSimError(ValueError):
    """Bad arguments (printed like nccl-tests, exit 1) or a bad fault parameter."""


def _root(environ=None):
    return (environ if environ is not None else os.environ).get('GPUOPS_SIM_ROOT') or '/'


def _path(rel, environ=None):
    return os.path.join(_root(environ), rel)


def _read(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


# ---------------------------------------------------------------------------
# the node: GPUs, kind, faults, NCCL library
# ---------------------------------------------------------------------------

def profile_dir(environ=None):
    env = environ if environ is not None else os.environ
    return env.get('GPUOPS_SIM_PROFILE') or _path(PROFILE, env)


def profile_gpus(profile):
    """[{'name', 'bus_id' (nccl-tests' form 0000:19:00)}] from the profile's nvidia-smi-q-x.xml."""
    xml = _read(os.path.join(profile, 'nvidia-smi-q-x.xml'))
    gpus = []
    for found in re.finditer(r'<gpu id="([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.\d">\s*'
                             r'<product_name>([^<]*)</product_name>', xml):
        gpus.append({'name': found.group(4), 'bus_id': '%04x:%s:%s' % (
            int(found.group(1), 16) & 0xffff, found.group(2).lower(), found.group(3).lower())})
    return gpus


def node_kind(profile, gpus):
    """The REFERENCES key of the node: a100, nvswitch (NVLinks) or pcie."""
    names = ' '.join(g['name'] for g in gpus)
    if 'A100' in names:
        return 'a100'
    nvlink = os.path.join(profile, 'nvidia-smi-nvlink-s.txt')
    if re.search(r'\b(H100|H200|H800|B200|B100|GB200)\b', names) or (
            os.path.isfile(nvlink) and re.search(r'Link \d+:', _read(nvlink))):
        return 'nvswitch'
    return 'pcie'


def slow_factor(profile, environ=None):
    """The nccl_slow factor in force (1.0 without the fault): profile fault and run-time fault, the lower."""
    env = environ if environ is not None else os.environ
    factors = []
    runtime = os.path.join(profile, 'sim', 'runtime.json')
    if os.path.isfile(runtime):
        for fault in json.loads(_read(runtime)).get('faults') or []:
            if fault.get('name') == 'nccl_slow':
                factors.append(check_factor((fault.get('params') or {}).get('factor', DEFAULT_SLOW_FACTOR)))
    path = env.get('GPUOPS_SIM_FAULTS_RUNTIME') or _path(RUNTIME_FAULTS, env)
    if os.path.isfile(path):
        entry = json.loads(_read(path) or '{}').get('nccl_slow')
        if entry is not None:
            factors.append(check_factor((entry or {}).get('factor', DEFAULT_SLOW_FACTOR)))
    return min(factors) if factors else 1.0


def check_factor(value):
    try:
        factor = float(value)
    except (TypeError, ValueError):
        raise NcclSimError('nccl_slow: factor must be a number, got %r' % (value,))
    if not 0 < factor <= 1:
        raise NcclSimError('nccl_slow: factor must be > 0 and <= 1, got %s' % value)
    return factor


def nccl_library(environ=None):
    """The NCCL version the program loads: libnccl2's (dpkg), else a libnccl.so.2 in LD_LIBRARY_PATH
    (version unknown: ''); None when there is none."""
    env = environ if environ is not None else os.environ
    status = _path(DPKG_STATUS, env)
    if os.path.isfile(status):
        for stanza in _read(status).split('\n\n'):
            fields = dict(re.findall(r'^([A-Za-z-]+): (.*)$', stanza, re.M))
            if fields.get('Package') == 'libnccl2' and fields.get('Status', '').endswith(' installed'):
                found = re.match(r'(\d+\.\d+\.\d+)', fields.get('Version', ''))
                return found.group(1) if found else ''
    for directory in (env.get('LD_LIBRARY_PATH') or '').split(':'):
        if directory and os.path.exists(os.path.join(directory, 'libnccl.so.2')):
            return ''
    return None


def version_code(version):
    major, minor, patch = (int(p) for p in version.split('.'))
    return major * 10000 + minor * 100 + patch


def driver_answers(environ=None):
    """Whether the node's nvidia-smi lists GPUs (the CUDA driver works)."""
    env = environ if environ is not None else os.environ
    smi = env.get('GPUOPS_SIM_NVIDIA_SMI') or _path('usr/bin/nvidia-smi', env)
    if not os.path.exists(smi):
        return False
    try:
        proc = subprocess.run([smi, '-L'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------

def busbw_at(kind, size, column=1):
    """Bus bandwidth (GB/s) of ``size`` bytes on a node of ``kind``; column 1 out-of-place, 2 in-place."""
    rows = REFERENCES[kind]['rows']
    if size >= rows[-1][0]:
        return rows[-1][column]
    if size < rows[0][0]:
        peak = max(row[column] for row in rows)
        latency = max(MIN_LATENCY_US, rows[0][0] / (rows[0][column] * 1e3) - rows[0][0] / (peak * 1e3))
        return size / (latency + size / (peak * 1e3)) / 1e3 if size > 0 else 0.0
    for low, high in zip(rows, rows[1:]):
        if low[0] <= size <= high[0]:
            at = (math.log(size) - math.log(low[0])) / (math.log(high[0]) - math.log(low[0]))
            return low[column] + at * (high[column] - low[column])
    raise AssertionError(size)


def parse_size(text):
    found = re.match(r'^\s*(\d+)\s*([kKmMgGtT]?)[bB]?\s*$', str(text))
    if not found:
        raise NcclSimError('invalid size %s' % text)
    return int(found.group(1)) * 1024 ** ' KMGT'.index(found.group(2).upper() or ' ')


def sizes(min_bytes, max_bytes, factor, step_bytes):
    out = []
    size = min_bytes
    while size <= max_bytes:
        out.append(size)
        size = size * factor if factor > 1 else size + step_bytes
        if size == out[-1]:
            break
    return out


def fmt_time(usec):
    if usec >= 100000:
        return '%7.0f' % usec
    if usec >= 10000:
        return '%7.1f' % usec
    return '%7.2f' % usec


def result_rows(collective, kind, nranks, options, factor):
    """The rows (size, count, type, op, root, [(time, algbw, busbw) out-of-place, in-place])."""
    bus_factor, per_rank, reduces, rooted = COLLECTIVES[collective]
    type_size = TYPES[options['datatype']]
    rows = []
    for size in sizes(options['min_bytes'], options['max_bytes'], options['step_factor'], options['step_bytes']):
        unit = type_size * (nranks if per_rank else 1)
        count = size // unit
        size = count * unit
        if size == 0:
            continue
        halves = []
        for column in (1, 2):
            busbw_model = busbw_at(kind, size, column) * factor
            scale = bus_factor(nranks)
            algbw = busbw_model / scale if scale > 0 else busbw_model
            busbw = algbw * scale
            time_us = size / (algbw * 1e3) if algbw > 0 else 0.0
            halves.append((time_us, algbw, busbw))
        rows.append((size, count, options['datatype'],
                     options['op'] if reduces else 'none', options['root'] if rooted else -1, halves))
    return rows


# ---------------------------------------------------------------------------
# program
# ---------------------------------------------------------------------------

def parse_args(argv):
    options = {'nthreads': 1, 'ngpus': 1, 'min_bytes': 32 * 1024 * 1024, 'max_bytes': 32 * 1024 * 1024,
               'step_factor': 1, 'step_bytes': 1024 * 1024, 'iters': 20, 'warmup': 5, 'agg': 1, 'check': 1,
               'graph': 0, 'datatype': 'float', 'op': 'sum', 'root': 0}
    short = {'-t': 'nthreads', '-g': 'ngpus', '-b': 'min_bytes', '-e': 'max_bytes', '-i': 'step_bytes',
             '-f': 'step_factor', '-n': 'iters', '-w': 'warmup', '-m': 'agg', '-c': 'check', '-G': 'graph',
             '-d': 'datatype', '-o': 'op', '-r': 'root', '-a': None, '-z': None, '-C': None, '-p': None,
             '-y': None, '-T': None, '-N': None, '-R': None, '-u': None, '-x': None}
    long_names = {'--nthreads': '-t', '--ngpus': '-g', '--minbytes': '-b', '--maxbytes': '-e',
                  '--stepbytes': '-i', '--stepfactor': '-f', '--iters': '-n', '--warmup_iters': '-w',
                  '--agg_iters': '-m', '--check': '-c', '--cudagraph': '-G', '--datatype': '-d', '--op': '-o',
                  '--root': '-r', '--average': '-a', '--blocking': '-z', '--report_cputime': '-C',
                  '--parallel_init': '-p', '--timeout': '-T', '--run_cycles': '-N'}
    i = 0
    while i < len(argv):
        arg = argv[i]
        value = None
        if arg.startswith('--') and '=' in arg:
            arg, value = arg.split('=', 1)
        arg = long_names.get(arg, arg)
        if len(arg) > 2 and arg[:2] in short and not arg.startswith('--'):
            arg, value = arg[:2], arg[2:]
        if arg not in short:
            raise NcclSimError('invalid option: %s' % argv[i])
        if value is None:
            i += 1
            if i >= len(argv):
                raise NcclSimError('option %s requires an argument' % arg)
            value = argv[i]
        key = short[arg]
        i += 1
        if key is None:
            continue
        if key in ('min_bytes', 'max_bytes', 'step_bytes'):
            options[key] = parse_size(value)
        elif key == 'datatype':
            if value not in TYPES and value != 'all':
                raise NcclSimError('invalid type %s' % value)
            options[key] = 'float' if value == 'all' else value
        elif key == 'op':
            if value not in OPS and value != 'all':
                raise NcclSimError('invalid op %s' % value)
            options[key] = 'sum' if value == 'all' else value
        else:
            try:
                options[key] = int(value)
            except ValueError:
                raise NcclSimError('invalid value %s for %s' % (value, arg))
    if options['step_factor'] > 1:
        options['step_bytes'] = 0
    if options['min_bytes'] > options['max_bytes']:
        raise NcclSimError('invalid sizes for minBytes=%d maxBytes=%d: minBytes cannot be larger than maxBytes'
                           % (options['min_bytes'], options['max_bytes']))
    return options


def collective_of(argv):
    """(collective, remaining args) from ``<collective>_perf ARGS`` or ``sim_nccl.py <collective> ARGS``."""
    name = os.path.basename(argv[0]) if argv else ''
    for candidate in (name, name.replace('_perf_mpi', '_perf')):
        if candidate.endswith('_perf') and candidate[:-5] in COLLECTIVES:
            return candidate[:-5], list(argv[1:])
    if len(argv) > 1:
        wanted = argv[1][:-5] if argv[1].endswith('_perf') else argv[1]
        if wanted in COLLECTIVES:
            return wanted, list(argv[2:])
    raise NcclSimError('unknown collective (known: %s)' % ', '.join(sorted(COLLECTIVES)))


def render(collective, options, host, pid, gpus, kind, factor, nccl_version, failure=None):
    """The program's output (text) and exit status."""
    out = []
    if nccl_version:
        code = version_code(nccl_version)
        out.append('# nccl-tests version %s nccl-headers=%d nccl-library=%d' % (NCCL_TESTS_VERSION, code, code))
    out.append('# Collective test starting: %s_perf' % collective)
    step = '%d(factor)' % options['step_factor'] if options['step_factor'] > 1 else '%d(bytes)' % options['step_bytes']
    out.append('# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d '
               'validation: %d graph: %d unalign: 0'
               % (options['nthreads'], options['ngpus'], options['min_bytes'], options['max_bytes'], step,
                  options['warmup'], options['iters'], options['agg'], options['check'], options['graph']))
    out.append('#')
    out.append('# Using devices')
    if failure:
        out.append("%s: Test CUDA failure common.cu:941 '%s'" % (host, failure))
        out.append(' .. %s pid %d: Test failure common.cu:891' % (host, pid))
        return '\n'.join(out) + '\n', 1
    for rank, gpu in enumerate(gpus):
        out.append('#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s'
                   % (rank, pid, host, gpu['device'], gpu['bus_id'], gpu['name']))
    out.append('#')
    text = '\n'.join(out) + '\n' + HEADER
    lines = []
    busbws = []
    for size, count, dtype, op, root, halves in result_rows(collective, kind, len(gpus), options, factor):
        line = '%12d  %12d  %8s  %6s  %6d' % (size, count, dtype, op, root)
        for time_us, algbw, busbw in halves:
            line += '  %7s  %6.2f  %6.2f  %6s' % (fmt_time(time_us), algbw, busbw, '0' if options['check'] else 'N/A')
            busbws.append(busbw)
        lines.append(line)
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    lines += ['# Out of bounds values : 0 OK', '# Avg bus bandwidth    : %g ' % avg, '#',
              '# Collective test concluded: %s_perf' % collective, '#']
    return text + '\n'.join(lines) + '\n', 0


def run(argv, environ=None):
    """(rc, stdout, stderr) of the program run as ``argv``."""
    env = environ if environ is not None else os.environ
    try:
        collective, args = collective_of(argv)
        options = parse_args(args)
    except NcclSimError as exc:
        return 1, '', 'Error: %s\n' % exc
    version = nccl_library(env)
    if version is None:
        return 127, '', ('%s: error while loading shared libraries: libnccl.so.2: cannot open shared object file: '
                         'No such file or directory\n' % (argv[0] if argv else 'nccl-tests'))
    profile = profile_dir(env)
    host = (env.get('GPUOPS_SIM_HOSTNAME') or socket.gethostname()).split('.')[0]
    pid = os.getpid()
    gpus, failure, kind, factor = [], None, 'pcie', 1.0
    if not os.path.isdir(profile) or not driver_answers(env):
        failure = 'no CUDA-capable device is detected'
    else:
        found = profile_gpus(profile)
        kind = node_kind(profile, found)
        factor = slow_factor(profile, env)
        visible = list(range(len(found)))
        if env.get('CUDA_VISIBLE_DEVICES') is not None:
            visible = [int(v) for v in env['CUDA_VISIBLE_DEVICES'].split(',') if v.strip().isdigit()
                       and int(v) < len(found)]
        wanted = options['ngpus'] * options['nthreads']
        if not visible:
            failure = 'no CUDA-capable device is detected'
        elif wanted > len(visible):
            failure = 'invalid device ordinal'
        else:
            gpus = [dict(found[index], device=dev) for dev, index in enumerate(visible[:wanted])]
    text, rc = render(collective, options, host, pid, gpus, kind, factor, version, failure)
    return rc, text, ''


def main(argv=None):
    rc, out, err = run(sys.argv if argv is None else argv)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc


# ---------------------------------------------------------------------------
# simulator hooks
# ---------------------------------------------------------------------------

def apply_fault_nccl_slow(tree, factor=DEFAULT_SLOW_FACTOR):
    """The ``nccl_slow`` profile fault (simulator/faults.py): nothing in the bundle changes, the fault's
    record (profile.yml ``faults:`` and sim/runtime.json ``faults``) is what this program reads. Raises
    NcclSimError (a ValueError) for a factor outside (0, 1]."""
    del tree  # the record written by faults.record is the whole fault
    return {'factor': check_factor(factor)}


def install(root='/', python='/usr/bin/python3'):
    """Put this file into the simulator's lib directory (install_node.py does the same through LIB_MODULES);
    True when it changed. ``python`` is the interpreter of the launchers (they name it themselves)."""
    del python
    dest = os.path.join(root, LIB, 'sim_nccl.py')
    source = os.path.abspath(__file__)
    if os.path.isfile(dest) and _read(dest) == _read(source):
        return False
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(source, dest)
    os.chmod(dest, 0o644)
    return True


if __name__ == '__main__':
    sys.exit(main())
