# -*- coding: utf-8 -*-
"""Real captures stay verbatim and keep their provenance."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import filecmp
import os

import pytest

from real_captures import REAL

SHARED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'fixtures', 'real')


def captures():
    found = []
    for kind in sorted(os.listdir(REAL)):
        folder = os.path.join(REAL, kind)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith('.source'):
                found.append(os.path.join(kind, name))
    return found


@pytest.mark.parametrize('rel', captures())
def test_every_capture_names_its_source(rel):
    base = rel.rsplit('.', 1)[0] if not os.path.isdir(os.path.join(REAL, rel)) else rel
    assert os.path.isfile(os.path.join(REAL, base + '.source')), '%s has no .source' % rel


@pytest.mark.skipif(not os.path.isdir(SHARED), reason='the shared capture set is not beside the checkout')
def test_captures_are_byte_identical_to_the_shared_set():
    comparison = filecmp.dircmp(SHARED, REAL)

    def differences(cmp, prefix=''):
        diff = [os.path.join(prefix, n) for n in cmp.diff_files + cmp.left_only]
        for name, sub in cmp.subdirs.items():
            diff.extend(differences(sub, os.path.join(prefix, name)))
        return diff
    assert differences(comparison) == []
