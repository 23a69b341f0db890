# -*- coding: utf-8 -*-
"""Helpers for the unit tests: real captures, capture bundles built from them, ttar archives."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil

from repo_paths import REPO

REAL = os.path.join(REPO, 'tests', 'fixtures', 'real')


def real_path(rel):
    return os.path.join(REAL, rel)


def real_text(rel):
    with open(real_path(rel), 'rb') as handle:
        return handle.read().decode('utf-8')


def extract_ttar(archive, dest):
    """Materialise a ttar archive (prometheus/procfs test-data format).

    Records are ``Path:``/``Lines:``/content/``Mode:`` or ``Directory:``/``Mode:``
    or ``SymlinkTo:``, separated by ``# ttar - - -`` lines. A content ending in
    ``EOF`` has no trailing newline.
    """
    with open(archive) as handle:
        lines = handle.read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('Directory: '):
            os.makedirs(os.path.join(dest, line[len('Directory: '):]), exist_ok=True)
        elif line.startswith('Path: '):
            path = os.path.join(dest, line[len('Path: '):])
            nxt = lines[i + 1]
            if nxt.startswith('SymlinkTo: '):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.symlink(nxt[len('SymlinkTo: '):], path)
                i += 2
                continue
            count = int(nxt[len('Lines: '):])
            body = lines[i + 2:i + 2 + count]
            text = '\n'.join(body)
            if text.endswith('EOF'):
                text = text[:-3]
            else:
                text += '\n'
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as out:
                out.write(text)
            i += 2 + count
            continue
        i += 1


def make_bundle(dest, xml=None, topo=None, nvlink=None, ib_tree=None, ttar=None, rc=None):
    """Lay out a capture bundle in ``dest`` from real captures (paths relative to tests/fixtures/real)."""
    os.makedirs(dest, exist_ok=True)
    for rel, name in ((xml, 'nvidia-smi-q-x.xml'), (topo, 'nvidia-smi-topo-m.txt'),
                      (nvlink, 'nvidia-smi-nvlink-s.txt')):
        if rel is not None:
            shutil.copyfile(real_path(rel), os.path.join(dest, name))
            if rc is not None:
                with open(os.path.join(dest, name + '.rc'), 'w') as handle:
                    handle.write('%d\n' % rc)
    if ib_tree is not None:
        target = os.path.join(dest, 'sys', 'class', 'infiniband')
        shutil.copytree(real_path(ib_tree), target)
    if ttar is not None:
        extract_ttar(real_path(ttar), os.path.join(dest, 'sys'))
    return dest


PROFILES = os.path.join(REPO, 'simulator', 'profiles')


def profile_text(profile, name):
    """A file of a simulator profile: one node's outputs derived from real captures (see its profile.yml)."""
    with open(os.path.join(PROFILES, profile, name), 'rb') as handle:
        return handle.read().decode('utf-8')
