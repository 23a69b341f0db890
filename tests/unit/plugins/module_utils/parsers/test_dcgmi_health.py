# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""dcgmi health -c (text and JSON) and discovery -l: the real outputs read, rendered back, and dcgmi's errors or an
unreadable output raised with dcgmi's text."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from real_captures import real_text
from transforms import damage_line, truncate_after_line

from ansible_collections.gpuops.node.plugins.module_utils.parsers import dcgmi_health

WARNING_DOC = 'dcgmi/health-c-warning-pcie-replay-inforom-DOCEXAMPLE-indented.txt'
HEALTHY_JSON = 'dcgmi/health-c-j-healthy-despite-gpu1-recovery-reset.json'
DISCOVERY = 'dcgmi/discovery-l-v100-pcie-1gpu.txt'
CONNECTION = ('Error: unable to establish a connection to the specified host: localhost\n'
              'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')

WARNING_PARSED = {'overall': 'Warning', 'gpus': {
    0: {'status': 'Warning', 'incidents': [{'system': 'PCIe', 'health': 'Warning',
                                            'message': 'Detected more than 8 PCIe replays per minute for GPU 0: 13'}]},
    1: {'status': 'Warning', 'incidents': [{'system': 'InfoROM', 'health': 'Warning',
                                            'message': 'A corrupt InfoROM has been detected in GPU 1.'}]}}}


def test_documented_warning_is_read():
    assert dcgmi_health.parse_health_check(real_text(WARNING_DOC)) == WARNING_PARSED


def test_healthy_json_is_read_although_a_gpu_needs_a_reset():
    """DCGM's health check reports Healthy while GPU 1 waits for a reset: the check alone is not enough."""
    assert dcgmi_health.parse_health_check(real_text(HEALTHY_JSON)) == {'overall': 'Healthy', 'gpus': {}}


@pytest.mark.parametrize('json_output', [False, True])
def test_rendered_health_reads_back(json_output):
    text = dcgmi_health.render_health_check(WARNING_PARSED['gpus'], json_output=json_output)
    assert dcgmi_health.parse_health_check(text) == WARNING_PARSED
    failure = {3: {'status': 'Failure', 'incidents': [
        {'system': 'Memory', 'health': 'Failure', 'message': 'A double-bit ECC error was detected on GPU 3 ' * 3},
        {'system': 'Driver', 'health': 'Warning', 'message': 'Xid 79 seen'}]}}
    parsed = dcgmi_health.parse_health_check(dcgmi_health.render_health_check(failure, json_output=json_output))
    assert parsed['overall'] == 'Failure'
    # the JSON lists the systems in key order, as jsoncpp sorts them
    incidents = dict((i['system'], i) for i in parsed['gpus'][3]['incidents'])
    assert incidents['Memory']['message'] == ('A double-bit ECC error was detected on GPU 3 ' * 3).strip()
    assert incidents['Driver'] == {'system': 'Driver', 'health': 'Warning', 'message': 'Xid 79 seen'}


def test_rendered_healthy_json_is_the_real_one_modulo_tabs():
    rendered = dcgmi_health.render_health_check({}, json_output=True)
    assert rendered.replace('\t', ' ' * 8) == real_text(HEALTHY_JSON)


def test_dcgm4_tree_layout():
    lines = dcgmi_health.render_health_check(WARNING_PARSED['gpus']).rstrip('\n').split('\n')
    assert lines[1] == '| Health Monitor Report'.ljust(87) + '|'
    assert lines[5] == '| -> 0                      | Warning                                                  |'
    assert lines[7] == '|       -> PCIe system      | Warning                                                  |'
    assert all(len(l) == 88 for l in lines)


@pytest.mark.parametrize('text,match', [
    ('', 'empty output'),
    (CONNECTION, 'Unable to connect to host engine'),
    ('Error: Health watches not enabled. Please enable watches. \n', 'Health watches not enabled'),
    ('Segmentation fault\n', 'no table'),
    ('{"body": {"Overall Health": {"value": "Heal', 'JSON cannot be read'),
    ('{"header": ["Health Monitor Report"]}', 'no "body"'),
    (real_text(HEALTHY_JSON).replace('Healthy', 'Internal error'), 'none of'),
    (truncate_after_line(real_text(WARNING_DOC), 5, keep_chars=30), 'cut short'),
    (damage_line(real_text(WARNING_DOC), 6, '    |                  | no incident header here |'), 'before any incident'),
])
def test_unreadable_health_is_an_error_with_dcgmis_text(text, match):
    with pytest.raises(dcgmi_health.HealthParseError, match=match):
        dcgmi_health.parse_health_check(text)


def test_discovery_is_read_and_rendered_back():
    gpus = dcgmi_health.parse_discovery(real_text(DISCOVERY))
    assert gpus == [{'gpu': 0, 'name': 'Tesla V100-PCIE-16GB', 'bus_id': '00000000:60:00.0',
                     'uuid': 'GPU-ef97eb30-627e-f4cd-11b2-37b04ef508ba'}]
    assert dcgmi_health.render_discovery(gpus) == real_text(DISCOVERY)
    eight = [{'gpu': g, 'name': 'NVIDIA H100 80GB HBM3', 'bus_id': '00000000:%02X:00.0' % (0x18 + g),
              'uuid': 'GPU-%08d-0000-0000-0000-000000000000' % g} for g in range(8)]
    assert dcgmi_health.parse_discovery(dcgmi_health.render_discovery(eight, cpus=False)) == eight


@pytest.mark.parametrize('text,match', [
    ('', 'empty output'),
    (CONNECTION, 'Unable to connect'),
    ('nothing here\n', 'no "N GPUs found"'),
    (damage_line(real_text(DISCOVERY), 1, '2 GPUs found.'), 'says 2 GPU'),
    (damage_line(real_text(DISCOVERY), 7, '|        | Garbage                                                              |'),
     'no uuid'),
])
def test_unreadable_discovery_is_an_error(text, match):
    with pytest.raises(dcgmi_health.HealthParseError, match=match):
        dcgmi_health.parse_discovery(text)
