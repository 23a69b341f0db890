# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_nvlink import parse_nvlink_status
from real_captures import real_text
from transforms import damage_line, truncate_after_line, with_bom


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
    with pytest.raises(ParseError) as err:
        parse_nvlink_status(real_text('nvlink/gb200-nvlink-info-firmware-TRUNCATED.txt'))
    assert err.value.line_no == 2
    assert err.value.line.strip() == 'NVLE: disabled'


def test_link_line_without_gpu_is_an_error():
    with pytest.raises(ParseError) as err:
        parse_nvlink_status('         Link 0: 26.562 GB/s\n')
    assert err.value.line_no == 1


def two_h100s():
    """Transform: the one-GPU H100 capture twice, as GPU 0 and GPU 1 of one node (the second UUID changed)."""
    text = real_text('nvlink/h100-nvlink-status-i0.txt').rstrip('\n')
    return text + '\n' + text.replace('GPU 0:', 'GPU 1:').replace('GPU-5a10', 'GPU-5a11') + '\n'


def test_two_gpu_transform_reads_fully():
    result = parse_nvlink_status(two_h100s())
    assert [len(g['links']) for g in result['gpus']] == [18, 18]
    assert result['warnings'] == []


@pytest.mark.parametrize('cut,keep,line_no,reason', [
    (20 + 15, None, 35, 'GPU 1 lists 15 link(s) while GPU 0 of the same model lists 18: truncated or lines lost'),
    (20, None, 20, 'GPU 1 lists 0 link(s) while GPU 0 of the same model lists 18: truncated or lines lost'),
    (19, 25, 20, 'GPU 1 has no UUID while GPU 0 has one: the line was cut'),
    (20 + 15, 15, 36, 'not a GPU, link or counter line'),
])
def test_truncated_output_is_unreadable_not_fewer_links(cut, keep, line_no, reason):
    text = truncate_after_line(two_h100s(), cut, keep)
    with pytest.raises(ParseError) as err:
        parse_nvlink_status(text)
    assert err.value.reason == reason
    assert err.value.line_no == line_no


@pytest.mark.parametrize('line_no,replacement,reason', [
    (5, '\t Link 3: 26.562 GB/', 'not a GPU, link or counter line'),
    (5, '\t Link 4: 26.562 GB/s', 'GPU 0: link 4 where link 3 was expected (a line is missing or repeated)'),
    (5, '\t Link 2: 26.562 GB/s', 'GPU 0: link 2 where link 3 was expected (a line is missing or repeated)'),
    (20, 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)', 'GPU 0 follows GPU 0'),
])
def test_damaged_line_is_named(line_no, replacement, reason):
    with pytest.raises(ParseError) as err:
        parse_nvlink_status(damage_line(two_h100s(), line_no, replacement))
    assert err.value.reason == reason
    assert err.value.line_no == line_no


def test_byte_order_mark_and_terminal_codes_are_ignored():
    text = real_text('nvlink/h100-nvlink-status-i0.txt')
    assert parse_nvlink_status(with_bom(text)) == parse_nvlink_status(text)


def test_a_lost_link_line_of_an_earlier_gpu_is_unreadable():
    lines = two_h100s().split('\n')
    del lines[18]                     # transform: GPU 0's last link line (Link 17) lost
    with pytest.raises(ParseError) as err:
        parse_nvlink_status('\n'.join(lines))
    assert err.value.reason == 'GPU 0 lists 17 link(s) while GPU 1 of the same model lists 18: truncated or lines lost'
