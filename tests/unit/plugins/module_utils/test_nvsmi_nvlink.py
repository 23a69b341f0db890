# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.nvsmi_nvlink import parse_nvlink_status
from real_captures import real_text


def test_h100_18_links():
    result = parse_nvlink_status(real_text('nvlink/h100-nvlink-status-i0.txt'))
    gpu = result['gpus'][0]
    assert gpu['index'] == 0
    assert gpu['name'] == 'NVIDIA H100 80GB HBM3'
    assert gpu['uuid'] == 'GPU-5a10e6e5-95f7-2785-ed63-6f6147f304f7'
    assert len(gpu['links']) == 18
    assert all(l['active'] and l['speed_gbps'] == 26.562 for l in gpu['links'])
    assert result['elided'] is False and result['warnings'] == []


def test_v100_inactive_links_and_elision():
    result = parse_nvlink_status(real_text('nvlink/v100-sxm2-32gb-nvlink-s-2-inactive-links-ELIDED.txt'))
    gpu = result['gpus'][0]
    assert gpu['index'] == 3
    assert gpu['uuid'] is None
    assert [l['link'] for l in gpu['links'] if not l['active']] == [3, 5]
    assert sum(l['active'] for l in gpu['links']) == 4
    assert result['elided'] is True


def test_gb200_two_gpus_truncated():
    result = parse_nvlink_status(real_text('nvlink/gb200-nvlink-s-53GBps-TRUNCATED.txt'))
    assert [g['index'] for g in result['gpus']] == [0, 1]
    assert len(result['gpus'][0]['links']) == 18
    assert result['gpus'][0]['links'][0]['speed_gbps'] == 53.125
    assert result['elided'] is True


def test_error_counters_output():
    result = parse_nvlink_status(real_text('nvlink/h100-nvlink-e-18links-all-zero-ELIDED.txt'))
    counters = result['gpus'][0]['counters']
    assert counters[17] == {'Replay Errors': 0, 'Recovery Errors': 0, 'CRC Errors': 0}


def test_other_nvlink_output_is_reported_not_guessed():
    result = parse_nvlink_status(real_text('nvlink/gb200-nvlink-info-firmware-TRUNCATED.txt'))
    assert [g['links'] for g in result['gpus']] == [[], []]
    assert any("'NVLE: disabled'" in w for w in result['warnings'])


def test_link_line_without_gpu_is_an_error():
    with pytest.raises(ParseError) as err:
        parse_nvlink_status('         Link 0: 26.562 GB/s\n')
    assert err.value.line_no == 1
