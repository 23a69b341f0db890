"""Gathering stays linear in the number of per-GPU error lines nvidia-smi prints.

A GPU flapping on the bus can make nvidia-smi print "Unable to determine the
device handle for GPU1 ..." thousands of times before its output. The bundle
here is the simulator's A100 profile with the first line of the real
``unable-to-determine-device-handle-GPU1`` capture repeated N times before its
``-q -x``, for N = 8,000, 16,000 and 32,000. Each doubling prints the ratio of
the two times: about 2 is linear, about 4 quadratic.

    python3 bench/bench_device_errors.py [--repeat N]
"""

from __future__ import print_function

import argparse
import os
import shutil
import tempfile
import timeit

from bench_gather import ROOT, _importable

PROFILE = os.path.join(ROOT, 'simulator', 'profiles', 'a100-sxm-8gpu-ib')
CAPTURE = os.path.join(ROOT, 'tests', 'fixtures', 'real', 'nvsmi-errors',
                       'unable-to-determine-device-handle-GPU1-then-partial-table-rtxpro6000.txt')
SIZES = (8000, 16000, 32000)


def bundle(work, lines, count):
    dest = os.path.join(work, str(count))
    os.makedirs(dest)
    for name in ('nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt'):
        shutil.copyfile(os.path.join(PROFILE, name), os.path.join(dest, name))
    with open(os.path.join(dest, 'nvidia-smi-q-x.xml'), 'r+') as handle:
        xml = handle.read()
        handle.seek(0)
        handle.write(lines * count + xml)
    return dest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    _importable()
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle

    with open(CAPTURE) as handle:
        line = handle.readline()
    work = tempfile.mkdtemp(prefix='gpuops-bench-')
    try:
        times = []
        for count in SIZES:
            path = bundle(work, line, count)
            topo = gather_bundle(path)
            assert len(topo['device_errors']) == 1, topo['device_errors'][:2]
            times.append(min(timeit.repeat(lambda: gather_bundle(path), number=1, repeat=args.repeat)))
            print('%6d error lines: gather %8.1f ms' % (count, times[-1] * 1000))
        for (small, t_small), (large, t_large) in zip(zip(SIZES, times), zip(SIZES[1:], times[1:])):
            print('%6d -> %6d lines: time ratio %.2f (2 is linear, 4 quadratic)' % (small, large, t_large / t_small))
    finally:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
