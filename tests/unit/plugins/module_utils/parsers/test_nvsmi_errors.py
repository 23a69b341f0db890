# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import (
    classify_nvsmi_failure, device_errors)
from real_captures import real_text


@pytest.mark.parametrize('name,rc,kind', [
    ('couldnt-communicate-with-driver-a100-module-not-loaded.txt', 9, 'driver_not_loaded'),
    ('couldnt-communicate-debian13-550-no-kernel-module-container.txt', 9, 'driver_not_loaded'),
    ('nvml-driver-library-mismatch-470-single-line.txt', 18, 'nvml_mismatch'),
    ('nvml-driver-library-mismatch-580-with-library-version-line.txt', 18, 'nvml_mismatch'),
    ('no-devices-were-found-slurm-no-gres.txt', 6, 'no_devices'),
    ('no-devices-after-gsp-rminitadapter-failed-dmesg.txt', 6, 'no_devices'),
    ('gpu-is-lost-old-format-busid-only.txt', 15, 'gpu_lost'),
])
def test_whole_tool_failures(name, rc, kind):
    failure = classify_nvsmi_failure(rc, real_text('nvsmi-errors/' + name))
    assert failure['kind'] == kind
    assert failure['rc'] == rc
    assert failure['message']


@pytest.mark.parametrize('name', ['couldnt-communicate-with-driver-a100-module-not-loaded.txt',
                                  'couldnt-communicate-debian13-550-no-kernel-module-container.txt'])
def test_driver_not_loaded_message_is_the_tools_own(name):
    failure = classify_nvsmi_failure(9, real_text('nvsmi-errors/' + name))
    assert failure['message'] == ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                  "Make sure that the latest NVIDIA driver is installed and running.")


def test_unknown_failure_uses_exit_code_meaning():
    assert classify_nvsmi_failure(14, '')['kind'] == 'inforom_corrupt'
    assert classify_nvsmi_failure(77, 'something odd')['kind'] == 'unknown'


def test_success_is_not_a_failure():
    assert classify_nvsmi_failure(0, real_text('nvsmi-misc/pm-1-already-enabled-gh200.txt')) is None


def test_device_errors_old_and_new_forms():
    assert device_errors(real_text('nvsmi-errors/gpu-is-lost-old-format-busid-only.txt')) == [
        {'gpu': None, 'pci_bus_id': '0000:05:00.0', 'reason': 'GPU is lost', 'readable': False}]
    assert device_errors(real_text('nvsmi-errors/gpu-is-lost-new-format-then-csv-row-windows.txt')) == [
        {'gpu': 0, 'pci_bus_id': '0000:24:00.0', 'reason': 'GPU is lost', 'readable': False}]
    text = real_text('nvsmi-errors/unable-to-determine-device-handle-GPU1-then-partial-table-rtxpro6000.txt')
    assert device_errors(text) == [{'gpu': 1, 'pci_bus_id': '0000:34:00.0', 'reason': 'Unknown Error', 'readable': False}]
    # the table after it is real output: not a whole-tool failure when nvidia-smi exits 0
    assert classify_nvsmi_failure(0, text) is None


def test_words_inside_a_successful_output_are_not_a_failure():
    # transform: a complete -q -x with GB200's <power_smoothing>Insufficient Permissions</power_smoothing>
    text = real_text('nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml').replace(
        '<persistence_mode>', '<power_smoothing>Insufficient Permissions</power_smoothing><persistence_mode>', 1)
    assert classify_nvsmi_failure(0, text) is None
    # the same words with exit status 4 are nvidia-smi's own permission failure
    assert classify_nvsmi_failure(4, 'Unable to query: Insufficient Permissions')['kind'] == 'permission_denied'


@pytest.mark.parametrize('name,kind', [
    ('no-devices-were-found-slurm-no-gres.txt', 'no_devices'),
    ('couldnt-communicate-with-driver-a100-module-not-loaded.txt', 'driver_not_loaded'),
    ('nvml-driver-library-mismatch-470-single-line.txt', 'nvml_mismatch'),
])
def test_whole_output_failure_with_exit_status_0(name, kind):
    assert classify_nvsmi_failure(0, real_text('nvsmi-errors/' + name))['kind'] == kind


def test_exit_255_with_output_is_a_failure_with_the_tools_text():
    failure = classify_nvsmi_failure(255, real_text('topo/dgx-a100-8gpu-12nic.txt'))
    assert failure['kind'] == 'unknown' and failure['rc'] == 255
    assert failure['message'].startswith('GPU0')


def test_inforom_warning_before_an_output_names_the_gpu():
    # transform: the warning nvidia-smi prints for a GPU with a corrupted infoROM, before a real table
    text = 'WARNING: infoROM is corrupted at gpu 0000:07:00.0\n' + real_text('topo/dgx-a100-8gpu-12nic.txt')
    assert device_errors(text) == [
        {'gpu': None, 'pci_bus_id': '0000:07:00.0', 'reason': 'infoROM is corrupted', 'readable': True}]
    assert classify_nvsmi_failure(0, text) is None
