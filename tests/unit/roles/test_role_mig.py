# -*- coding: utf-8 -*-
"""gpuops.node.mig (its contract with the other roles: test_role_contract.py): the facts it reports, and its
expressions (when to stop the GPU clients, which of them run, the boot unit's ordering and whether it is wanted, the
variable a refused layout is blamed on) render as meant through Ansible's templar; the Molecule scenario's mig-parted
file maps onto the simulated node it runs on."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from role_files import ROOT, path, reported_facts, templar

ROLE = 'mig'


def test_the_reported_facts():
    assert sorted(reported_facts(ROLE)) == ['mig_apply_after_reboot', 'mig_changed', 'mig_layout', 'mig_pending',
                                            'mig_reboot_required']


def _templar(**extra):
    return templar(ROLE, **extra)


def _gpu(index, mode_change=None, destroy=(), create=(), after=None):
    return {'index': index, 'bus_id': '00000000:%02X:00.0' % (0x19 + index), 'mode_change': mode_change,
            'destroy': list(destroy), 'create': list(create),
            'after': {'mig_mode': 'Enabled', 'mig_mode_pending': 'Enabled', 'instances': after or {}}}


@pytest.mark.parametrize('plan, disruptive', [
    ([_gpu(0), _gpu(1)], False),
    ([_gpu(0, create=['1g.10gb'] * 2, after={'1g.10gb': 7})], False),
    ([_gpu(0), _gpu(1, mode_change='enable', create=['1g.10gb'] * 7)], True),
    ([_gpu(0, destroy=[{'gi': 2, 'name': '3g.40gb', 'cis': [0]}], create=['1g.10gb'] * 7)], True),
    ([_gpu(0, mode_change='disable')], True),
    ([], False),
])
def test_the_clients_stop_only_for_a_mode_change_or_a_destroy(plan, disruptive):
    render = _templar(__mig_plan={'plan': plan})
    assert render('{{ __mig_disruptive }}') is disruptive


def test_the_running_clients_in_the_order_of_mig_gpu_clients():
    # `systemctl list-units --plain --no-legend PATTERN` per entry of mig_gpu_clients (layout.yml)
    found = {'results': [
        {'item': 'nvidia-dcgm-exporter.service', 'stdout_lines': [
            'nvidia-dcgm-exporter.service loaded active running NVIDIA DCGM exporter']},
        {'item': 'nvidia-dcgm.service', 'stdout_lines': ['nvidia-dcgm.service loaded active running NVIDIA DCGM']},
        {'item': 'dcgm-exporter.service', 'stdout_lines': []},
        {'item': 'gpuops-mps@*.service', 'stdout_lines': [
            'gpuops-mps@a.service loaded active running MPS a', 'gpuops-mps@b.service loaded active running MPS b']},
        {'item': 'nvidia-device-plugin.service', 'stdout_lines': []},
        {'item': 'kubelet.service', 'stdout_lines': ['kubelet.service    loaded active running kubelet']},
    ]}
    render = _templar(__mig_clients_found=found)
    assert render('{{ __mig_clients_running }}') == [
        'nvidia-dcgm-exporter.service', 'nvidia-dcgm.service', 'gpuops-mps@a.service', 'gpuops-mps@b.service',
        'kubelet.service']
    # not looked for (the plan only creates, or nothing changes): none
    skipped = {'results': [{'item': 'kubelet.service', 'skipped': True}]}
    assert _templar(__mig_clients_found=skipped)('{{ __mig_clients_running }}') == []
    assert _templar()('{{ __mig_clients_running }}') == []


def test_the_boot_unit_orders_before_the_clients_named_without_a_pattern():
    render = _templar()
    assert render('{{ __mig_boot_before }}') == [
        'nvidia-dcgm-exporter.service', 'nvidia-dcgm.service', 'dcgm-exporter.service', 'dcgm.service',
        'nvidia-device-plugin.service']
    unit = _render_unit(render)
    assert 'After=systemd-modules-load.service nvidia-persistenced.service gpuops-sim-driver.service' in unit
    assert 'Before=nvidia-dcgm-exporter.service nvidia-dcgm.service dcgm-exporter.service' in unit
    assert 'ExecStart=/usr/local/libexec/gpuops-mig-layout' in unit
    assert 'Before=containerd.service docker.service' in unit and 'Wants=nvidia-persistenced.service' in unit
    only_patterns = _render_unit(_templar(mig_gpu_clients=['gpuops-mps@*.service']))
    assert [line for line in only_patterns.splitlines() if line.startswith('Before=')] == [
        'Before=containerd.service docker.service']


def _render_unit(render):
    with open(path(ROLE, 'templates', 'gpuops-mig-layout.service.j2')) as handle:
        text = handle.read()
    # the first line needs ansible_managed, which only a play sets
    return render(text.split('\n', 1)[1].replace('{{ mig_selected }}', 'half-1g.10gb'))


@pytest.mark.parametrize('boot_unit, plan, wanted', [
    (True, [_gpu(0, after={'1g.10gb': 7}), _gpu(4)], True),
    (True, [_gpu(0), _gpu(1)], False),
    (True, [_gpu(0, after={'1g.10gb': 0})], False),
    (False, [_gpu(0, after={'1g.10gb': 7})], False),
    (True, [], False),
])
def test_the_boot_unit_is_wanted_when_the_configuration_creates_instances(boot_unit, plan, wanted):
    render = _templar(mig_boot_unit=boot_unit, __mig_plan={'plan': plan})
    assert render('{{ __mig_boot_wanted }}') is wanted


@pytest.mark.parametrize('config_file, result, blamed', [
    ('', {'msg': "selected: no configuration 'x' in mig-configs; known: a, b"},
     "mig_selected: no configuration 'x' in mig-configs; known: a, b"),
    ('', {'msg': 'mig-configs.x[0].mig-devices.1g.99gb: GPU 0 (NVIDIA H100 80GB HBM3) has no GPU-instance profile '
                 '1g.99gb', 'errors': ['...']},
     'mig_config: mig-configs.x[0].mig-devices.1g.99gb: GPU 0'),
    ('/srv/mig.yaml', {'msg': 'mig-configs.x[0].mig-devices: GPU 0 cannot hold them'},
     'mig_config_file: mig-configs.x[0]'),
    ('', {'msg': 'nvidia_smi: nvidia-smi is not on the PATH'}, 'mig_nvidia_smi: nvidia-smi is not on the PATH'),
    ('', {'msg': 'nvidia-smi -q -x failed (exit 9): NVIDIA-SMI has failed', 'commands': []},
     'the GPUs could not be read: nvidia-smi -q -x failed'),
])
def test_a_refused_layout_is_blamed_on_its_variable(config_file, result, blamed):
    render = _templar(mig_config_file=config_file, __mig_plan=dict(result, failed=True))
    assert render('{{ __mig_plan_error }}').startswith(blamed)


def test_the_scenario_file_maps_onto_the_simulated_node():
    from ansible_collections.gpuops.node.plugins.module_utils.config import mig_parted
    with open(os.path.join(ROOT, 'molecule', 'mig', 'files', 'mig-parted.yaml')) as handle:
        doc = mig_parted.load(handle.read())
    with open(os.path.join(ROOT, 'simulator', 'profiles', 'h100-sxm-8gpu-ib', 'profile.yml')) as handle:
        profile = yaml.safe_load(handle)
    gpus = [{'index': g['index'], 'bus_id': g['pci_bus_id'], 'pci_device_id': '0x233010DE', 'name': g['name']}
            for g in profile['gpus']]
    layout = mig_parted.expand(mig_parted.select(doc, 'half-1g.10gb'), gpus)
    enabled = sorted(bus for bus, want in layout.items() if want['enabled'])
    assert len(layout) == 8
    assert enabled == ['0000:19:00.0', '0000:3b:00.0', '0000:4c:00.0', '0000:5d:00.0']
    assert all(layout[bus]['devices'] == {'1g.10gb': 7} for bus in enabled)
