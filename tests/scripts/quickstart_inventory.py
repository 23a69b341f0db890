# -*- coding: utf-8 -*-
"""Write the quick start's inventory (inventories/quickstart) from the simulator's DGX H100 bundle.

    python3 tests/scripts/quickstart_inventory.py            exit 1 and show what differs when a file is stale
    python3 tests/scripts/quickstart_inventory.py --write    rewrite them

The quick start (README.md) validates two capture bundles with no node and no container: the collection ships
``inventories/quickstart/bundles.tar.gz`` and an inventory whose two hosts read them (``gpuops_bundle_dir``).

* ``h100-good``: the bundle of the simulator profile ``h100-sxm-8gpu-ib`` (simulator/profiles/, derived from real
  captures: its ``profile.yml`` lists them), as ``playbooks/capture.yml`` lays a bundle out; the simulator's own
  files (``profile.yml``, ``sim/``) are left out and a ``capture.source`` says where the bundle comes from.
* ``h100-ib-down``: the same bundle with the simulator's fault ``ib_port_down`` applied to ``mlx5_6`` (a transform
  in code, simulator/faults.py): port 1 of that HCA DOWN, as a cable pulled from the switch.
* ``group_vars/dgx_h100.yml``: the node class's profile, what ``playbooks/profile.yml`` derives from the healthy
  bundle (the collection's ``profile_from_topology``, options ``OPTIONS``), nothing added.

The archive is reproducible (members sorted, owner root, mtime 0, gzip without a time stamp), so a rebuild is
byte-identical; tests/unit/inventories/test_quickstart_inventory.py compares its members, and the class file, with
what this script generates. Run from the repository root with the collection importable (``make units`` sets that
up).
"""

from __future__ import (absolute_import, division, print_function)

import gzip
import io
import os
import sys
import tarfile

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
QUICKSTART = os.path.join(ROOT, 'inventories', 'quickstart')
ARCHIVE = os.path.join(QUICKSTART, 'bundles.tar.gz')
PROFILE = 'h100-sxm-8gpu-ib'
FAULT = ('ib_port_down', {'nic': 'mlx5_6'})
HOSTS = ('h100-good', 'h100-ib-down')
OPTIONS = {'driver_version': 'branch', 'gpu_model': 'family', 'nic_names': 'glob'}
SIMULATOR_ONLY = ('profile.yml', 'sim/')


def _imports():
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from simulator import bundle
    from simulator import faults
    return bundle, faults


def _source(meta, host, fault):
    lines = [
        'host: %s' % host,
        'derived from: simulator/profiles/%s (the gpuops.node repository), a bundle built from these real captures:'
        % PROFILE,
    ]
    for item in meta.get('derived_from') or []:
        lines.append('  - %s (sha256 %s)' % (item['path'], item['sha256']))
    if fault:
        lines.append('fault: %s %s (simulator/faults.py, applied in code)' % (
            fault[0], ' '.join('%s=%s' % kv for kv in sorted(fault[1].items()))))
    lines.append('written by: tests/scripts/quickstart_inventory.py')
    return ('\n'.join(lines) + '\n').encode('utf-8')


def trees():
    """host -> bundle tree (relative path -> bytes or bundle.Link)."""
    bundle, faults = _imports()
    tree = bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', PROFILE))
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    faulty_tree = dict(tree)
    faults.FAULTS[FAULT[0]].apply(faulty_tree, **FAULT[1])
    result = {}
    for host, source, fault in ((HOSTS[0], tree, None), (HOSTS[1], faulty_tree, FAULT)):
        kept = dict((rel, value) for rel, value in source.items()
                    if not any(rel == s or rel.startswith(s) for s in SIMULATOR_ONLY))
        kept['capture.source'] = _source(meta, host, fault)
        result[host] = kept
    return result


def members(host_trees):
    """Sorted (name, kind, payload) of the archive: kind 'file' (bytes) or 'link' (target)."""
    bundle, _faults = _imports()
    result = []
    for host in sorted(host_trees):
        for rel, value in host_trees[host].items():
            name = 'bundles/%s/%s' % (host, rel)
            if isinstance(value, bundle.Link):
                result.append((name, 'link', value.target))
            else:
                result.append((name, 'file', value))
    return sorted(result)


def archive_bytes(items):
    """The reproducible .tar.gz of ``members``: directories implied by the paths, sorted, root-owned, mtime 0."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.PAX_FORMAT) as tar:
        seen = set()
        for name, kind, payload in items:
            parts = name.split('/')
            for depth in range(1, len(parts)):
                directory = '/'.join(parts[:depth])
                if directory not in seen:
                    seen.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            info = tarfile.TarInfo(name)
            if kind == 'link':
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, payload, 0o777
                tar.addfile(info)
            else:
                info.size, info.mode = len(payload), 0o644
                tar.addfile(info, io.BytesIO(payload))
    out = io.BytesIO()
    with gzip.GzipFile(filename='', fileobj=out, mode='wb', compresslevel=9, mtime=0) as handle:
        handle.write(raw.getvalue())
    return out.getvalue()


def read_members(path):
    """(name, kind, payload) of an existing archive, as ``members`` gives them; None when absent."""
    if not os.path.exists(path):
        return None
    result = []
    with tarfile.open(path, 'r:gz') as tar:
        for info in tar.getmembers():
            if info.isdir():
                continue
            if info.issym():
                result.append((info.name, 'link', info.linkname))
            elif info.isfile():
                result.append((info.name, 'file', tar.extractfile(info).read()))
            else:
                result.append((info.name, 'other', info.type))
    return sorted(result)


def class_file():
    """(path, text) of group_vars/dgx_h100.yml: the profile playbooks/profile.yml derives from the healthy bundle."""
    from ansible_collections.gpuops.node.plugins.module_utils.topology.profile import document
    bundle, _faults = _imports()
    from simulator.build_profiles import derive_tree
    tree = bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', PROFILE))
    node_class = bundle.load_yaml(bundle.text(tree, 'profile.yml'))['node_class']
    derivation = derive_tree(tree, OPTIONS)
    derivation['review'] = ('Derived from the healthy bundle h100-good of bundles.tar.gz as playbooks/profile.yml '
                            'derives it: ansible-playbook -i quickstart/hosts.yml gpuops.node.profile --limit '
                            'h100-good -e gpuops_profile_class=dgx_h100 -e gpuops_profile_gpu_model=family '
                            '-e gpuops_profile_nic_names=glob --check --diff shows the same profile (only these '
                            'header lines differ).')
    text = document(node_class, derivation, ['bundles/%s' % HOSTS[0]], by='tests/scripts/quickstart_inventory.py')
    return os.path.join(QUICKSTART, 'group_vars', node_class + '.yml'), text


def rendered():
    """path -> (current text, generated text) of the class file."""
    path, text = class_file()
    return {path: (generated_docs.current(path), text)}


def stale():
    """Diffs of the class file, and a line per archive member that differs from what is generated."""
    diffs = generated_docs.stale(rendered())
    wanted = members(trees())
    found = read_members(ARCHIVE)
    if found is None:
        return diffs + ['%s: missing' % os.path.relpath(ARCHIVE, ROOT)]
    if found != wanted:
        wanted_map, found_map = dict((m[0], m[1:]) for m in wanted), dict((m[0], m[1:]) for m in found)
        for name in sorted(set(wanted_map) | set(found_map)):
            if wanted_map.get(name) != found_map.get(name):
                state = 'missing' if name not in found_map else 'extra' if name not in wanted_map else 'differs'
                diffs.append('%s: %s %s' % (os.path.relpath(ARCHIVE, ROOT), name, state))
    return diffs


def main(argv):
    if '--write' in argv:
        data = archive_bytes(members(trees()))
        current = None
        if os.path.exists(ARCHIVE):
            with open(ARCHIVE, 'rb') as handle:
                current = handle.read()
        if current != data:
            with open(ARCHIVE, 'wb') as handle:
                handle.write(data)
            print('wrote %s' % os.path.relpath(ARCHIVE, ROOT))
        return generated_docs.main(argv, rendered(), ROOT)
    diffs = stale()
    for line in diffs:
        print(line)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
