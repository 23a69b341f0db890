"""How much parsing adds to gathering GPU topology facts.

Two measurements on the simulator's 8-GPU, 12-NIC H100 profile (8 InfiniBand
rails, 4 storage ports), each printed with its ratio:

* ``live``: the node as the module sees it. Raw = running its three
  nvidia-smi commands (the simulator's replaying nvidia-smi, a real process
  each) and reading every sysfs file the facts use. Gather = the facts
  module's ``gather_live`` doing the same and parsing. Goal: parsing adds
  under 20 %.
* ``bundle``: a capture bundle on disk. Raw = reading its files; gather =
  ``gather_bundle``. No process is started, so this is the harshest view of
  the parsers' own cost.

    python3 bench/bench_gather.py [--profile h100-sxm-8gpu-ib] [--repeat N]
"""

from __future__ import print_function

import argparse
import os
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
COMMANDS = (['-q', '-x'], ['topo', '-m'], ['nvlink', '-s'])


def _importable():
    link = os.path.join(COLLECTIONS, 'ansible_collections', 'gpuops', 'node')
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link))
        os.symlink(ROOT, link)
    sys.path.insert(0, COLLECTIONS)


def read_sysfs(sysfs):
    total = 0
    for top, _dirs, files in os.walk(sysfs, followlinks=False):
        for name in files:
            with open(os.path.join(top, name), 'rb') as handle:
                total += len(handle.read())
    return total


def read_bundle(bundle):
    total = 0
    for name in ('nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt'):
        with open(os.path.join(bundle, name), 'rb') as handle:
            total += len(handle.read())
    return total + read_sysfs(os.path.join(bundle, 'sys'))


def run(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    return proc.returncode, out.decode(), err.decode()


def timed(func, repeat):
    return min(timeit.repeat(func, number=repeat, repeat=5)) / repeat


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--profile', default='h100-sxm-8gpu-ib')
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args()
    _importable()
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live

    work = tempfile.mkdtemp(prefix='gpuops-bench-')
    subprocess.check_call([sys.executable, '-m', 'simulator.build_profiles', '--unpacked', '--out',
                           os.path.join(work, 'bundles')], cwd=ROOT, stdout=subprocess.DEVNULL)
    bundle = os.path.join(work, 'bundles', args.profile)
    node = os.path.join(work, 'node')
    subprocess.check_call([sys.executable, os.path.join(ROOT, 'simulator', 'install_node.py'),
                           '--profile', args.profile, '--root', node, '--python', sys.executable],
                          stdout=subprocess.DEVNULL)
    os.environ['GPUOPS_SIM_ROOT'] = node
    nvidia_smi = os.path.join(node, 'usr', 'bin', 'nvidia-smi')
    sysfs = os.path.join(node, 'usr', 'share', 'gpuops-sim', 'sys')

    topo = gather_live(run, nvidia_smi, sysfs)
    assert not topo['errors'] and topo['driver_loaded'], topo['errors']
    print('profile: %s: %d GPUs, %d NICs, %d ports, %d matrix devices'
          % (args.profile, topo['gpu_count'], len(topo['nics']),
             sum(len(n['ports']) for n in topo['nics']), len(topo['matrix'])))

    raw_live = timed(lambda: ([run([nvidia_smi] + c) for c in COMMANDS], read_sysfs(sysfs)), args.repeat)
    full_live = timed(lambda: gather_live(run, nvidia_smi, sysfs), args.repeat)
    raw_bundle = timed(lambda: read_bundle(bundle), args.repeat * 10)
    full_bundle = timed(lambda: gather_bundle(bundle), args.repeat * 10)
    for label, raw, full in (('live  ', raw_live, full_live), ('bundle', raw_bundle, full_bundle)):
        print('%s raw inputs %8.2f ms, gather %8.2f ms, ratio %.2f (parsing adds %.0f %%)'
              % (label, raw * 1000, full * 1000, full / raw, (full / raw - 1) * 100))


if __name__ == '__main__':
    main()
