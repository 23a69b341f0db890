# -*- coding: utf-8 -*-
"""plans/dcgm.py: the package versions of dcgm_version and dcgm_exporter_version, and the pins."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.plans import dcgm as plans_dcgm

PACKAGES = {'dcgm': ['datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda12'],
            'exporter': 'datacenter-gpu-manager-exporter', 'dcgm3': 'datacenter-gpu-manager'}


def test_the_version_forms():
    assert plans_dcgm.version_candidates('4.4.1') == ['1:4.4.1-1', '1:4.4.1']
    assert plans_dcgm.version_candidates('1:4.4.1-1') == ['1:4.4.1-1']
    assert plans_dcgm.version_candidates('4.4.1-1') == ['4.4.1-1']
    assert plans_dcgm.exporter_package_version('4.6.0-4.8.3') == '4.8.3-1'


def test_every_package_is_pinned_to_the_form_the_core_is_offered_at():
    offered = dict((name, ['1:4.4.1']) for name in PACKAGES['dcgm'])
    offered['datacenter-gpu-manager-exporter'] = ['4.6.0-1']
    pins, errors = plans_dcgm.pins(PACKAGES, offered, {'dcgm_version': '4.4.1', 'dcgm_exporter_version': '4.4.1-4.6.0'},
                                   'x')
    assert errors == []
    assert pins == {'datacenter-gpu-manager-4-core': '1:4.4.1', 'datacenter-gpu-manager-4-cuda12': '1:4.4.1',
                    'datacenter-gpu-manager-exporter': '4.6.0-1'}


def test_a_cuda_build_the_sources_lack_is_named():
    offered = {'datacenter-gpu-manager-4-core': ['1:4.4.1-1']}
    _pins, errors = plans_dcgm.pins(dict(PACKAGES, exporter=None), offered, {'dcgm_version': '4.4.1'}, 'the sources')
    assert errors[0].startswith('dcgm_cuda_major: the package sources do not offer '
                                'datacenter-gpu-manager-4-cuda12=1:4.4.1-1 (the sources; offered: '
                                'datacenter-gpu-manager-4-core 1:4.4.1-1; datacenter-gpu-manager-4-cuda12 none)')


def test_a_pin_installed_needs_no_offer_and_the_message_names_what_to_change():
    offered = {'datacenter-gpu-manager-4-core': ['1:4.6.0-1'], 'datacenter-gpu-manager-4-cuda12': ['1:4.6.0-1']}
    installed = {'datacenter-gpu-manager-4-core': '1:4.4.1-1', 'datacenter-gpu-manager-4-cuda12': '1:4.4.1-1',
                 'datacenter-gpu-manager-exporter': '4.6.0-1'}
    values = {'dcgm_version': '4.4.1', 'dcgm_exporter_version': '4.4.1-4.6.0'}
    # the mirror pruned 4.4.1: the node at its pins changes nothing and is not refused
    assert plans_dcgm.pins(PACKAGES, offered, values, 'x', installed) == (
        dict(installed), [])
    _pins, errors = plans_dcgm.pins(PACKAGES, offered, dict(values, dcgm_exporter_version='4.4.1-4.8.3'), 'x',
                                    installed)
    assert errors[0].startswith('dcgm_exporter_version: the package sources do not offer '
                                'datacenter-gpu-manager-exporter=4.8.3-1 (x; ')
    profiling = dict(PACKAGES, dcgm=PACKAGES['dcgm'] + ['datacenter-gpu-manager-4-proprietary'])
    _pins, errors = plans_dcgm.pins(profiling, offered, dict(values, dcgm_version='4.6.0'), 'x')
    assert errors[0].startswith('dcgm_profiling: the package sources do not offer '
                                'datacenter-gpu-manager-4-proprietary=1:4.6.0-1, datacenter-gpu-manager-exporter=')


def test_a_package_version_without_its_epoch_is_refused_naming_the_one_with_it():
    offered = {'datacenter-gpu-manager-4-core': ['1:4.6.0-1'], 'datacenter-gpu-manager-4-cuda12': ['1:4.6.0-1']}
    _pins, errors = plans_dcgm.pins(dict(PACKAGES, exporter=None), offered, {'dcgm_version': '4.6.0-1'}, 'x')
    assert errors[0].startswith('dcgm_version: the package sources do not offer datacenter-gpu-manager-4-core=4.6.0-1')
    assert errors[0].endswith('; a package version carries its epoch: 1:4.6.0-1')
    # the same request with the epoch is met
    assert plans_dcgm.pins(dict(PACKAGES, exporter=None), offered, {'dcgm_version': '1:4.6.0-1'}, 'x')[1] == []
