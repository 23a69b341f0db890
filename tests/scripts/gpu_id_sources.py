# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write tests/fixtures/ids/ from NVIDIA's and the PCI ID Repository's own files (git mirrors of both).

- ``pci.ids-nvidia``: the NVIDIA block of pciutils/pciids ``pci.ids``, verbatim (its lines from ``10de  NVIDIA
  Corporation`` up to the next vendor line, the file's own header line with its version first);
- ``open-gpu-kernel-modules-first-release.tsv``: for each PCI device id that the "Compatible GPUs" table of
  NVIDIA/open-gpu-kernel-modules ``README.md`` lists, the first release tag whose table lists it, and the
  product name it gives there (every release tag of the mirror, in version order).

    python3 tests/scripts/gpu_id_sources.py --pciids MIRROR --open-modules MIRROR [--out tests/fixtures/ids]

The two files are what tests/unit/plugins/module_utils/plans/test_gpu_driver_support.py checks the collection's id
tables against; nothing at run time reads them.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import os
import re
import subprocess

ROW = re.compile(r'^\|\s*(.+?)\s*\|\s*([0-9A-F]{4})(?:\s+[0-9A-F]{4}\s+[0-9A-F]{4})?\s*\|\s*$', re.M)
TAG = re.compile(r'^\d+\.\d+(\.\d+)?$')


def git(mirror, *args):
    return subprocess.run(['git', '--git-dir', mirror] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          check=False)


def nvidia_block(text):
    lines = text.split('\n')
    start = lines.index('10de  NVIDIA Corporation')
    end = next(i for i in range(start + 1, len(lines)) if re.match(r'^[0-9a-f]{4}  ', lines[i]))
    version = next(line for line in lines[:40] if line.startswith('#\tVersion:'))
    return '\n'.join([version] + lines[start:end]) + '\n'


def first_releases(mirror):
    tags = [t for t in git(mirror, 'tag').stdout.decode().split() if TAG.match(t)]
    tags.sort(key=lambda t: tuple(int(x) for x in t.split('.')))
    first, empty = {}, []
    for tag in tags:
        shown = git(mirror, 'show', tag + ':README.md')
        rows = list(ROW.finditer(shown.stdout.decode('utf-8', 'replace'))) if shown.returncode == 0 else []
        if not rows:
            empty.append(tag)
        for match in rows:
            first.setdefault(match.group(2), (tag, match.group(1)))
    # a README whose table this cannot read would push its ids to a later "first" release: only the first tag
    # (515.43.04, whose table has another layout) may have none
    if empty and empty != tags[:len(empty)] or len(empty) > 1:
        raise SystemExit('no Compatible GPUs rows read at %s' % ', '.join(empty))
    return tags, first


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--pciids', required=True, help='git directory of a pciutils/pciids mirror')
    ap.add_argument('--open-modules', required=True, help='git directory of an NVIDIA/open-gpu-kernel-modules mirror')
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'ids'))
    a = ap.parse_args(argv)
    commit = git(a.pciids, 'rev-parse', 'HEAD').stdout.decode().strip()
    with open(os.path.join(a.out, 'pci.ids-nvidia'), 'w', encoding='utf-8') as handle:
        handle.write(nvidia_block(git(a.pciids, 'show', 'HEAD:pci.ids').stdout.decode('utf-8')))
    tags, first = first_releases(a.open_modules)
    with open(os.path.join(a.out, 'open-gpu-kernel-modules-first-release.tsv'), 'w', encoding='utf-8') as handle:
        handle.write('# device_id\tfirst_release\tproduct_name (NVIDIA/open-gpu-kernel-modules README.md, '
                     'tags %s to %s)\n' % (tags[0], tags[-1]))
        for device in sorted(first):
            handle.write('%s\t%s\t%s\n' % (device, first[device][0], first[device][1]))
    print('pciids %s; open modules %d tags, %d device ids' % (commit, len(tags), len(first)))


if __name__ == '__main__':
    main()
