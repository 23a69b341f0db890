# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compute_mode check, one mode for every GPU or one per GPU index (MPS on some GPUs of a node), on facts
gathered from the simulated nvidia-smi of an H100 node."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import run_checks, validate_profile
from test_checks_mig import SimNode


def mode_failures(topo, wanted):
    failures, _deferred = run_checks(topo, {'compute_mode': wanted})
    return [(f['subject'], f['expected'], f['actual']) for f in failures if f['check'] == 'compute_mode']


@pytest.fixture
def half_exclusive(tmp_path):
    """GPUs 0-3 in EXCLUSIVE_PROCESS, 4-7 Default."""
    node = SimNode(tmp_path)
    node.smi('-i', '0,1,2,3', '-c', 'EXCLUSIVE_PROCESS')
    return node.facts()


def test_one_mode_for_every_gpu(half_exclusive):
    expected = [('GPU%d' % i, 'Default', 'Exclusive_Process') for i in range(4)]
    assert mode_failures(half_exclusive, 'Default') == expected


@pytest.mark.parametrize('wanted', [
    {0: 'Exclusive_Process', 1: 'Exclusive_Process', 2: 'Exclusive_Process', 3: 'Exclusive_Process', '*': 'Default'},
    {'0': 'Exclusive_Process', '1': 'exclusive_process', '2': 'Exclusive_Process', '3': 'Exclusive_Process',
     '4': 'Default', '5': 'Default', '6': 'Default', '7': 'Default'},
    # GPUs the mapping leaves out are not checked
    {0: 'Exclusive_Process', 7: 'Default'},
])
def test_per_gpu_modes_pass(half_exclusive, wanted):
    assert mode_failures(half_exclusive, wanted) == []


def test_per_gpu_modes_name_the_gpu_that_differs(half_exclusive):
    assert mode_failures(half_exclusive, {0: 'Exclusive_Process', '*': 'Default'}) == [
        ('GPU%d' % i, 'Default', 'Exclusive_Process') for i in (1, 2, 3)]


@pytest.mark.parametrize('value', [{}, {'all': 'Default'}, {0: ''}, {-1: 'Default'}, {True: 'Default'}, 7, ''])
def test_bad_values_are_refused(value):
    (error,) = validate_profile({'compute_mode': value})
    assert error.startswith('profile key compute_mode must be a compute mode for every GPU')
