# -*- coding: utf-8 -*-
"""mig_profiles: the known profiles agree with the real -lgip captures of their models; fits() on layouts that
fit and layouts that do not."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.node import mig_profiles as node_mig_profiles
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import parse_lgip
from real_captures import real_text

# product name -> the real -lgip capture of that model
CAPTURED = {
    'NVIDIA H100 80GB HBM3': 'mig/h100-80gb-lgip.txt',
    'NVIDIA H100 PCIe': 'mig/h100-pcie-scaleway-mig-lgip.txt',
    'NVIDIA GH200 480GB': 'mig/gh200-96gb-lgip.txt',
}

H100 = node_mig_profiles.KNOWN['NVIDIA H100 80GB HBM3']


@pytest.mark.parametrize('product', sorted(CAPTURED))
def test_known_profiles_match_the_real_capture(product):
    rows = parse_lgip(real_text(CAPTURED[product]))
    captured = [(r['name'], r['id'], r['total'], r['memory_gib']) for r in rows]
    known = [(p['name'], p['id'], p['total'], p['memory_gib']) for p in node_mig_profiles.KNOWN[product]]
    assert known == captured
    assert node_mig_profiles.profiles_for(product, rows) == node_mig_profiles.KNOWN[product]


@pytest.mark.parametrize('product', sorted(node_mig_profiles.KNOWN))
def test_every_known_model_has_the_seven_slice_geometry(product):
    geometry = [(p['compute_slices'], p['memory_slices'], p['total']) for p in node_mig_profiles.KNOWN[product]]
    assert geometry == [(1, 1, 7), (1, 1, 1), (1, 2, 4), (2, 2, 3), (3, 4, 2), (4, 4, 1), (7, 8, 1)]
    assert [p['id'] for p in node_mig_profiles.KNOWN[product]] == [19, 20, 15, 14, 9, 5, 0]


def test_profiles_for():
    assert node_mig_profiles.profiles_for('NVIDIA A100-SXM4-40GB')[0]['name'] == '1g.5gb'
    assert node_mig_profiles.profiles_for(' NVIDIA H100 80GB HBM3 ') == H100
    assert node_mig_profiles.profiles_for('Tesla P100-PCIE-16GB') is None
    assert node_mig_profiles.profiles_for(None) is None
    # the -lgip rows win over KNOWN (a newer driver's profiles), rows of a second GPU count once
    rows = parse_lgip(real_text('mig/gh200-96gb-lgip.txt'))
    two_gpus = rows + [dict(r, gpu=1) for r in rows]
    assert [p['name'] for p in node_mig_profiles.profiles_for('NVIDIA H100 80GB HBM3', two_gpus)][0] == '1g.12gb'
    assert len(node_mig_profiles.profiles_for('NVIDIA H100 80GB HBM3', two_gpus)) == 7


def test_known_is_not_changed_through_profiles_for():
    node_mig_profiles.profiles_for('NVIDIA H100 80GB HBM3')[0]['total'] = 99
    assert H100[0]['total'] == 7


@pytest.mark.parametrize('wanted', [
    {'1g.10gb': 7},
    {'MIG 1g.10gb': 7},
    {'3g.40gb': 2},
    {'4g.40gb': 1, '3g.40gb': 1},
    {'4g.40gb': 1, '2g.20gb': 1, '1g.10gb': 1},
    {'2g.20gb': 3, '1g.10gb': 1},
    {'1g.20gb': 4},
    {'1g.10gb+me': 1, '1g.10gb': 6},
    {'7g.80gb': 1},
    {'3g.40gb': 0, '1g.10gb': 7},
    {},
])
def test_layouts_that_fit(wanted):
    assert node_mig_profiles.fits(H100, wanted) is None


@pytest.mark.parametrize('wanted,reason', [
    ({'1g.10gb': 8}, '8x 1g.10gb: at most 7 fit on one GPU'),
    ({'1g.10gb+me': 2}, '2x 1g.10gb+me: at most 1 fit on one GPU'),
    ({'3g.40gb': 2, '1g.10gb': 1}, '1x 1g.10gb, 2x 3g.40gb: 9 memory slices, a GPU has 8'),
    ({'4g.40gb': 1, '1g.10gb': 4}, '4x 1g.10gb, 1x 4g.40gb: 8 compute slices, a GPU has 7'),
    ({'1g.20gb': 4, '1g.10gb': 1}, '1x 1g.10gb, 4x 1g.20gb: 9 memory slices, a GPU has 8'),
    ({'7g.80gb': 1, '1g.10gb': 1}, '8 compute slices'),
    ({'1g.99gb': 1}, 'unknown GPU-instance profile 1g.99gb (this GPU has: 1g.10gb, 1g.10gb+me, 1g.20gb'),
    ({'1c.3g.40gb': 1}, 'unknown GPU-instance profile 1c.3g.40gb'),
    ({'1g.10gb': '7'}, '1g.10gb: the count must be a whole number'),
    ({'1g.10gb': True}, '1g.10gb: the count must be a whole number'),
    ({'1g.10gb': -1}, 'cannot be negative'),
])
def test_layouts_that_do_not_fit(wanted, reason):
    found = node_mig_profiles.fits(H100, wanted)
    assert found is not None and reason in found


def test_fits_on_a_gpu_without_profiles():
    assert node_mig_profiles.fits(None, {'1g.10gb': 1}) == 'unknown GPU-instance profile 1g.10gb (this GPU has: none)'
    assert node_mig_profiles.fits([], {}) is None


def test_a100_40gb_memory_slices():
    a100 = node_mig_profiles.profiles_for('NVIDIA A100-SXM4-40GB')
    assert node_mig_profiles.fits(a100, {'1g.5gb': 7}) is None
    assert node_mig_profiles.fits(a100, {'1g.10gb': 4, '1g.5gb': 1}) == '4x 1g.10gb, 1x 1g.5gb: 9 memory slices, a GPU has 8'


@pytest.mark.parametrize('name,expected', [('1g.10gb', 1), ('MIG 7g.80gb', 7), ('1g.10gb+me', 1),
                                           ('1c.3g.40gb', None), ('', None)])
def test_compute_slices(name, expected):
    assert node_mig_profiles.compute_slices(name) == expected
