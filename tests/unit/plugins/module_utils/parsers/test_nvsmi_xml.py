# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
from real_captures import real_text
from transforms import xml_value

A100 = 'nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml'
P100 = 'nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml'


def test_a100_mig_capture():
    result = parse_nvsmi_xml(real_text(A100))
    assert result['driver_version'] == '510.47.03'
    assert result['cuda_version'] == '11.6'
    assert result['attached_gpus'] == 1
    gpu = result['gpus'][0]
    assert gpu['index'] == 0
    assert gpu['uuid'] == 'GPU-27b94a00-ed54-5c24-b1fd-1054085de32a'
    assert gpu['name'] == 'NVIDIA A100-SXM4-40GB'
    assert gpu['pci_bus_id'] == '00000000:00:04.0'
    assert gpu['serial'] == '1324321002473'
    assert gpu['pcie'] == {'gen_current': 4, 'gen_max': 4, 'width_current': 16, 'width_max': 16}
    assert gpu['persistence_mode'] == 'Disabled'
    assert (gpu['mig_mode'], gpu['mig_mode_pending'], gpu['mig_devices']) == ('Enabled', 'Enabled', 2)
    assert gpu['compute_mode'] == 'Default'
    assert (gpu['ecc_mode'], gpu['ecc_mode_pending']) == ('Enabled', 'Enabled')
    # volatile counters are N/A in MIG mode, aggregate are 0
    assert gpu['ecc_uncorrected_volatile'] is None
    assert gpu['ecc_uncorrected_aggregate'] == 0
    assert gpu['retired_pages_pending'] is None
    assert gpu['remapped_rows_pending'] is None


def test_p100_pre_ampere_ecc_layout():
    result = parse_nvsmi_xml(real_text(P100))
    gpu = result['gpus'][0]
    assert gpu['name'] == 'Tesla P100-PCIE-16GB'
    assert gpu['architecture'] == 'Pascal'
    assert gpu['pcie']['gen_max'] == 3
    # aggregate single-bit is 3, but uncorrectable (double-bit) is 0
    assert gpu['ecc_uncorrected_volatile'] == 0
    assert gpu['ecc_uncorrected_aggregate'] == 0
    assert gpu['retired_pages_pending'] is False
    assert gpu['mig_devices'] == 0


def test_truncated_xml_names_the_line():
    text = real_text(A100)
    cut = '\n'.join(text.splitlines()[:150])       # transform: output cut after 150 lines
    with pytest.raises(ParseError) as err:
        parse_nvsmi_xml(cut)
    assert err.value.command == 'nvidia-smi -q -x'
    assert 'malformed or truncated XML' in str(err.value)
    assert err.value.line_no is not None


def test_driver_error_text_is_not_xml():
    with pytest.raises(ParseError) as err:
        parse_nvsmi_xml(real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-not-loaded.txt'))
    assert 'not XML' in str(err.value)


def test_newer_remapped_rows_and_kmd_version():
    # transform: the A100 capture with driver 610 tag names and a filled remapped_rows element
    text = real_text(A100)
    text = text.replace('<driver_version>', '<kmd_version>').replace('</driver_version>', '</kmd_version>')
    text = text.replace('<remapped_rows>N/A</remapped_rows>',
                        '<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>2</remapped_row_unc>'
                        '<remapped_row_pending>Yes</remapped_row_pending><remapped_row_failure>No</remapped_row_failure>'
                        '</remapped_rows>')
    gpu_result = parse_nvsmi_xml(text)
    assert gpu_result['driver_version'] == '510.47.03'
    gpu = gpu_result['gpus'][0]
    assert gpu['remapped_rows_pending'] is True
    assert gpu['remapping_failure'] is False
    assert gpu['remapped_rows_uncorrectable'] == 2


@pytest.mark.parametrize('value', ['[Unknown Error]', 'Unknown Error', '[GPU requires reset]', 'garbage'])
def test_unreadable_counter_is_not_zero(value):
    # transform: the aggregate dram_uncorrectable counter (0 in the capture) turned into an NVML error value
    text = xml_value(real_text(A100), 'dram_uncorrectable', value, occurrence=1)
    gpu = parse_nvsmi_xml(text)['gpus'][0]
    assert gpu['ecc_uncorrected_aggregate'] is None
    assert gpu['unreadable'] == ['ecc_errors/aggregate/dram_uncorrectable: %s' % value]


def test_readable_gpu_has_nothing_unreadable():
    assert parse_nvsmi_xml(real_text(A100))['gpus'][0]['unreadable'] == []
    assert parse_nvsmi_xml(real_text(P100))['gpus'][0]['unreadable'] == []


def test_pending_retirement_error_is_listed():
    # transform: the P100's pending_retirement ("No") read as an NVML error
    text = xml_value(real_text(P100), 'pending_retirement', '[Unknown Error]')
    gpu = parse_nvsmi_xml(text)['gpus'][0]
    assert gpu['retired_pages_pending'] is None
    assert gpu['unreadable'] == ['pending_retirement: [Unknown Error]']


def test_insufficient_permissions_as_a_value_is_just_a_value():
    # transform: a field holding the words GB200 / driver 580 print in <power_smoothing>
    text = real_text(A100).replace('<persistence_mode>', '<power_smoothing>Insufficient Permissions</power_smoothing>'
                                   '\n\t\t<persistence_mode>', 1)
    result = parse_nvsmi_xml(text)
    assert result['gpus'][0]['name'] == 'NVIDIA A100-SXM4-40GB'
