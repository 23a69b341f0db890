"""How much parsing adds to gathering GPU topology facts.

Times ``gather_bundle`` on an 8-GPU, 8+NIC capture bundle against only reading
its raw inputs (the three nvidia-smi outputs and every sysfs file the facts
use), and prints the ratio. Goal: parsing adds under 20 %.

On a live node the raw inputs are nvidia-smi runs, which take hundreds of
milliseconds each; reading files is the harshest baseline for the parsers.

    python3 bench/bench_gather.py [BUNDLE_DIR] [--repeat N]
"""

from __future__ import print_function

import argparse
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')


def _importable():
    link = os.path.join(COLLECTIONS, 'ansible_collections', 'gpuops', 'node')
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link))
        os.symlink(ROOT, link)
    sys.path.insert(0, COLLECTIONS)


def read_raw(bundle):
    total = 0
    for name in ('nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt'):
        path = os.path.join(bundle, name)
        if os.path.isfile(path):
            with open(path, 'rb') as handle:
                total += len(handle.read())
    for top, _dirs, files in os.walk(os.path.join(bundle, 'sys'), followlinks=False):
        for name in files:
            with open(os.path.join(top, name), 'rb') as handle:
                total += len(handle.read())
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('bundle', nargs='?', default=os.path.join(ROOT, 'simulator', 'profiles', 'h100-sxm-8gpu-ib'))
    parser.add_argument('--repeat', type=int, default=200)
    args = parser.parse_args()
    _importable()
    from ansible_collections.gpuops.node.plugins.module_utils.topology import gather_bundle

    topo = gather_bundle(args.bundle)
    print('bundle: %s' % args.bundle)
    print('gpus: %d, nics: %d, ports: %d, matrix devices: %d'
          % (topo['gpu_count'], len(topo['nics']), sum(len(n['ports']) for n in topo['nics']), len(topo['matrix'])))
    raw = min(timeit.repeat(lambda: read_raw(args.bundle), number=args.repeat, repeat=5)) / args.repeat
    full = min(timeit.repeat(lambda: gather_bundle(args.bundle), number=args.repeat, repeat=5)) / args.repeat
    print('read raw inputs only : %8.3f ms' % (raw * 1000))
    print('gather + parse       : %8.3f ms' % (full * 1000))
    print('ratio (gather / raw) : %8.2f  (parsing adds %.0f %%)' % (full / raw, (full / raw - 1) * 100))


if __name__ == '__main__':
    main()
