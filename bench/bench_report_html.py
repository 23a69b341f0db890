"""How the HTML rack report grows with the number of hosts.

Racks of the simulator's H100 node: most hosts identical and healthy (they
share one drawing), 2 % with one of the faults of molecule/faults (each drawn
on its own). For 50, 200 and 1000 hosts it prints the time to build and render
the page and its size, then the ratios between sizes (the host ratio is
linear). Also the cost and size of one drawing digest (drawing_from_topology,
run once per host on the controller). Never asserts a time.

    python3 bench/bench_report_html.py [--repeat N]
"""

from __future__ import print_function

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
PROFILE = 'h100-sxm-8gpu-ib'
SIZES = (50, 200, 1000)
FAULTS = (('gpu_missing', {'gpu': 4}), ('nvlink_down', {'gpu': 3}), ('pcie_downtrained', {'gpu': 5}),
          ('ib_port_down', {'nic': 'mlx5_6'}), ('ecc_uncorrectable', {'gpu': 2}), ('mig_unexpected', {'gpu': 6}),
          ('driver_not_loaded', {}))


def _importable():
    link = os.path.join(COLLECTIONS, 'ansible_collections', 'gpuops', 'node')
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link))
        os.symlink(ROOT, link)
    sys.path.insert(0, COLLECTIONS)
    sys.path.insert(0, ROOT)


def node_records(work):
    """{fault or None: (record template, topology)} of the H100 profile, healthy and with each fault."""
    from simulator import bundle
    from simulator import faults
    from ansible_collections.gpuops.node.plugins.module_utils.report.html import drawing_from_topology
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import check_profile

    out = {}
    for fault, params in ((None, {}),) + FAULTS:
        tree = bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', PROFILE))
        meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
        if fault:
            faults.FAULTS[fault].apply(tree, **params)
        target = os.path.join(work, fault or 'healthy')
        bundle.write_tree(tree, target)
        topology = gather_bundle(target)
        failures = check_profile(topology, meta['expected_node_class'])
        record = {'host': None, 'rack': None, 'node_class': meta['node_class'],
                  'pre_check': {'passed': not failures, 'failures': failures, 'regressions': [], 'deferred': []},
                  'drawing': drawing_from_topology(topology)}
        out[fault] = (record, topology)
    return out


def records_for(count, templates):
    records = []
    every = 50          # 2 % of the hosts have a fault
    for i in range(count):
        fault = FAULTS[(i // every) % len(FAULTS)][0] if i % every == every - 1 else None
        record = copy.deepcopy(templates[fault][0])
        record['host'] = 'gpu-%04d' % i
        record['rack'] = 'rack_%02d' % (i // 32)
        records.append(record)
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    _importable()
    from ansible_collections.gpuops.node.plugins.module_utils.report.model import build_report
    from ansible_collections.gpuops.node.plugins.module_utils.report.html import drawing_from_topology, render_html

    work = tempfile.mkdtemp(prefix='gpuops-bench-')
    try:
        templates = node_records(work)
    finally:
        shutil.rmtree(work)
    topology = templates[None][1]
    digest = min(timeit.repeat(lambda: drawing_from_topology(topology), number=100, repeat=3)) / 100
    print('drawing digest: %.3f ms per host, %d bytes of JSON (the snapshot: %d bytes)'
          % (digest * 1000, len(json.dumps(templates[None][0]['drawing'])), len(json.dumps(topology, default=str))))
    times, sizes = [], []
    for count in SIZES:
        records = records_for(count, templates)
        html = render_html(build_report(records))
        times.append(min(timeit.repeat(lambda: render_html(build_report(records)), number=1, repeat=args.repeat)))
        sizes.append(len(html.encode('utf-8')))
        faulty = sum(1 for r in records if r['pre_check']['failures'])
        print('%5d hosts (%2d with a fault): build + render %8.1f ms, page %8.1f KiB, %d drawings'
              % (count, faulty, times[-1] * 1000, sizes[-1] / 1024.0, html.count('<svg ')))
    for i in range(1, len(SIZES)):
        print('%5d -> %5d hosts (ratio %.1f): time ratio %.2f, size ratio %.2f (equal to the host ratio is linear)'
              % (SIZES[i - 1], SIZES[i], SIZES[i] / float(SIZES[i - 1]), times[i] / times[i - 1],
                 sizes[i] / float(sizes[i - 1])))


if __name__ == '__main__':
    main()
