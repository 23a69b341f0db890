# -*- coding: utf-8 -*-
"""inventories/quickstart is what tests/scripts/quickstart_inventory.py generates: its bundles (the simulator's
DGX H100 bundle, and the same with a port down, a documented transform) and the class profile derived from the
healthy one. What it cannot prove: that the bundles are a real node's (they are the simulator's, built from the real
captures their capture.source lists)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import tarfile

import quickstart_inventory  # tests/scripts


def test_quickstart_inventory_is_current():
    diffs = quickstart_inventory.stale()
    assert diffs == [], 'run: python3 tests/scripts/quickstart_inventory.py --write\n' + '\n'.join(diffs)


def test_the_archive_is_reproducible():
    host_trees = quickstart_inventory.trees()
    items = quickstart_inventory.members(host_trees)
    assert quickstart_inventory.archive_bytes(items) == quickstart_inventory.archive_bytes(items)


def test_the_archive_holds_a_bundle_per_host_and_nothing_of_the_simulator():
    with tarfile.open(quickstart_inventory.ARCHIVE) as tar:
        names = tar.getnames()
        for member in tar.getmembers():
            assert not member.name.startswith('/') and '..' not in member.name.split('/'), member.name
            if member.issym():
                target = os.path.normpath(os.path.join(os.path.dirname(member.name), member.linkname))
                assert target.startswith('bundles/'), (member.name, member.linkname)
    for host in quickstart_inventory.HOSTS:
        for rel in ('capture.source', 'nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt'):
            assert 'bundles/%s/%s' % (host, rel) in names, (host, rel)
    assert not [n for n in names if '/sim/' in n or n.endswith('/profile.yml')]


def test_the_faulty_bundle_differs_from_the_healthy_one_by_its_port_only():
    host_trees = quickstart_inventory.trees()
    good, bad = (host_trees[h] for h in quickstart_inventory.HOSTS)
    differ = sorted(rel for rel in set(good) | set(bad) if good.get(rel) != bad.get(rel))
    assert 'capture.source' in differ
    rest = [rel for rel in differ if rel != 'capture.source']
    assert rest and all('mlx5_6' in rel for rel in rest), rest


def test_the_hosts_read_the_bundles_the_archive_holds():
    import yaml
    with open(os.path.join(quickstart_inventory.QUICKSTART, 'hosts.yml')) as handle:
        hosts = yaml.safe_load(handle)
    rack = hosts['all']['children']['rack_q1']['hosts']
    assert sorted(rack) == sorted(quickstart_inventory.HOSTS)
    for host, values in rack.items():
        assert values['gpuops_bundle_dir'] == '{{ inventory_dir }}/bundles/%s' % host
    assert sorted(hosts['all']['children']['dgx_h100']['hosts']) == sorted(quickstart_inventory.HOSTS)
