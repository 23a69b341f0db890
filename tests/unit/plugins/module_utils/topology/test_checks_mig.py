# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mig_devices check: on facts gathered from the simulated nvidia-smi of an H100 node, taken to the layouts of
mig-parted configurations, and on facts that could not be read."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import (
    BY_KEY, owned_keys, run_checks, validate_profile)
from real_captures import real_path, real_text
from repo_paths import REPO

ROOT = REPO
HALF = [{'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}},
        {'devices': [4, 5, 6, 7], 'mig-enabled': False}]
ALL_DISABLED = [{'devices': 'all', 'mig-enabled': False}]


class SimNode(object):
    """The simulated nvidia-smi of the h100-sxm-8gpu-ib profile, run in-process."""

    def __init__(self, tmp_path):
        from simulator import admin
        from simulator import bundle
        from simulator import nvidia_smi
        self.programs = {'gpuops-sim': admin, 'nvidia-smi': nvidia_smi}
        profile = str(tmp_path / 'profile')
        bundle.write_tree(bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', 'h100-sxm-8gpu-ib')), profile)
        self.env = {'GPUOPS_SIM_PROFILE': profile, 'GPUOPS_SIM_STATE': str(tmp_path / 'state.json'),
                    'GPUOPS_SIM_ALLOW_NONROOT': '1'}
        self.sysfs = str(tmp_path / 'no-sys')

    def run(self, argv):
        program = self.programs['gpuops-sim' if argv[0] == 'gpuops-sim' else 'nvidia-smi']
        result = program.run(list(argv[1:]), dict(self.env))
        return result.rc, result.out.encode('utf-8'), result.err.encode('utf-8')

    def smi(self, *args):
        rc, out, err = self.run(['nvidia-smi'] + list(args))
        assert rc == 0, (out, err)
        return out.decode('utf-8')

    def facts(self):
        return gather_live(self.run, 'nvidia-smi', self.sysfs)

    def half(self):
        """GPUs 0-3 in MIG mode with 7x 1g.10gb each, as the half-1g.10gb configuration asks."""
        for gpu in range(4):
            self.smi('-i', str(gpu), '-mig', '1')
            self.smi('mig', '-i', str(gpu), '-cgi', ','.join(['1g.10gb'] * 7), '-C')
        return self


def mig_failures(topo, entries):
    failures, _deferred = run_checks(topo, {'mig_devices': entries})
    return [(f['subject'], f['expected'], f['actual'], f['message']) for f in failures if f['check'] == 'mig_devices']


@pytest.fixture
def node(tmp_path):
    return SimNode(tmp_path)


def test_the_mig_role_owns_the_key():
    assert owned_keys('mig') == ['mig_devices', 'mig_mode']
    assert BY_KEY['mig_devices'].role == 'mig'


def test_fresh_node_passes_all_disabled_and_fails_half(node):
    topo = node.facts()
    assert mig_failures(topo, ALL_DISABLED) == []
    failures = mig_failures(topo, HALF)
    assert [f[:3] for f in failures] == [('GPU%d' % i, 'MIG Enabled, 7x 1g.10gb', 'MIG Disabled') for i in range(4)]
    assert failures[0][3] == 'GPU0 MIG mode is Disabled, expected MIG Enabled, 7x 1g.10gb'


def test_half_layout_passes(node):
    topo = node.half().facts()
    assert topo['mig']['unreadable'] is None and len(topo['mig']['instances']['3']) == 7
    assert mig_failures(topo, HALF) == []
    # the same layout named by PCI bus id (any case, 4- or 8-digit domain) and through device-filter
    buses = [g['pci_bus_id'] for g in topo['gpus']]
    by_bus = [{'devices': [buses[0].lower(), buses[1][4:], 2, 3], 'mig-enabled': True,
               'mig-devices': {'MIG 1g.10gb': 7}},
              {'devices': 'all', 'device-filter': '0x0000DEAD', 'mig-enabled': True},
              {'devices': [4, 5, 6, 7], 'mig-enabled': False}]
    assert mig_failures(topo, by_bus) == []
    # and the other way round, every GPU fails
    assert [f[0] for f in mig_failures(topo, ALL_DISABLED)] == ['GPU0', 'GPU1', 'GPU2', 'GPU3']


def test_other_instances_are_named_expected_and_found(node):
    node.half()
    node.smi('mig', '-i', '3', '-dci')
    node.smi('mig', '-i', '3', '-dgi')
    node.smi('mig', '-i', '3', '-cgi', '3g.40gb,1g.10gb,1g.10gb,1g.10gb', '-C')
    failures = mig_failures(node.facts(), HALF)
    assert failures == [('GPU3', '7x 1g.10gb', '3x 1g.10gb, 1x 3g.40gb',
                         'GPU3 has GPU instances 3x 1g.10gb, 1x 3g.40gb, expected 7x 1g.10gb')]


def test_no_instances_on_a_gpu_in_mig_mode(node):
    node.smi('-i', '0', '-mig', '1')
    topo = node.facts()
    entries = [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}]
    assert [f[2] for f in mig_failures(topo, entries)] == ['none']
    assert mig_failures(topo, [{'devices': [0], 'mig-enabled': True}]) == []


def test_a_gpu_instance_without_its_compute_instance(node):
    node.half()
    node.smi('mig', '-i', '2', '-gi', '7', '-dci')
    topo = node.facts()
    failures = mig_failures(topo, HALF)
    assert [f[:3] for f in failures] == [('GPU2', 'one compute instance per GPU instance', 'GPU instance 7 has 0')]
    assert 'each GPU instance needs exactly its one compute instance' in failures[0][3]
    # facts without the GPU instance of each MIG device (an older bundle): the numbers still tell
    del topo['gpus'][2]['mig_device_gpu_instances']
    failures = mig_failures(topo, HALF)
    assert [f[:3] for f in failures] == [('GPU2', '7 MIG devices', '6 MIG devices')]
    assert 'each GPU instance needs its one compute instance' in failures[0][3]


def test_a_mode_left_pending_fails(node):
    rc, _out, _err = node.run(['gpuops-sim', 'busy', '1', '4242', 'python3'])
    assert rc == 0
    node.run(['nvidia-smi', '-i', '1', '-mig', '1'])
    topo = node.facts()
    assert (topo['gpus'][1]['mig_mode'], topo['gpus'][1]['mig_mode_pending']) == ('Disabled', 'Enabled')
    failures = mig_failures(topo, [{'devices': [1], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}])
    assert failures == [('GPU1', 'MIG Enabled, 7x 1g.10gb', 'MIG Disabled',
                         'GPU1 MIG mode is Disabled (Enabled pending: applied at the next GPU reset or reboot), '
                         'expected MIG Enabled, 7x 1g.10gb')]
    failures = mig_failures(topo, [{'devices': [1], 'mig-enabled': False}])
    assert [f[2] for f in failures] == ['MIG Disabled, Enabled pending']


def test_gpus_no_entry_matches_are_left_alone(node):
    node.half()
    assert mig_failures(node.facts(), [{'devices': [5], 'mig-enabled': False}]) == []


def test_unreadable_instances_are_not_checked(node):
    topo = node.half().facts()
    broken = copy.deepcopy(topo)
    broken['mig'] = {'instances': {}, 'unreadable': 'nvidia-smi mig -lgi exited 4: Insufficient Permissions'}
    failures = mig_failures(broken, HALF)
    assert [f[:3] for f in failures] == [('GPU%d' % i, 'MIG Enabled, 7x 1g.10gb', 'not checked') for i in range(4)]
    assert failures[0][3] == ('not checked: the GPU instances of GPU0 could not be listed: nvidia-smi mig -lgi '
                              'exited 4: Insufficient Permissions')
    # facts from before gpu_topology.mig existed
    del broken['mig']
    assert [f[2] for f in mig_failures(broken, HALF)] == ['not checked'] * 4
    # MIG off is still known from the XML alone
    assert mig_failures(broken, [{'devices': [4, 5, 6, 7], 'mig-enabled': False}]) == []


def test_a_gpu_the_node_does_not_have_is_not_checked(node):
    topo = node.facts()
    failures = mig_failures(topo, [{'devices': [0, 8], 'mig-enabled': False}])
    assert [f[:3] for f in failures] == [('node', 'the GPUs mig_devices names', 'not checked')]
    assert failures[0][3].startswith('not checked: mig_devices[0].devices[1]: no GPU 8 on this node')
    failures = mig_failures(topo, [{'devices': ['0000:ff:00.0'], 'mig-enabled': False}])
    assert 'mig_devices[0].devices[0]: no GPU 0000:ff:00.0 on this node' in failures[0][3]


def test_without_the_driver_the_check_waits_for_driver_loaded(tmp_path):
    """The XML cannot be read: driver_loaded fails and says why, mig_devices is not made."""
    bundle = tmp_path / 'bundle'
    bundle.mkdir()
    (bundle / 'nvidia-smi-q-x.xml').write_text(real_text('nvsmi-errors/couldnt-communicate-with-driver-a100-module-'
                                                         'not-loaded.txt'))
    (bundle / 'nvidia-smi-q-x.xml.rc').write_text(u'9\n')
    topo = gather_bundle(str(bundle))
    assert 'MIG modes are unknown' in topo['mig']['unreadable']
    failures = run_checks(topo, {'mig_devices': HALF})[0]
    assert [f['check'] for f in failures] == ['driver_loaded']


def test_a_gpu_without_mig_passes_only_mig_off(tmp_path):
    """The real Tesla P100 XML: MIG mode N/A."""
    bundle = tmp_path / 'bundle'
    bundle.mkdir()
    with open(real_path('nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml'), 'rb') as handle:
        (bundle / 'nvidia-smi-q-x.xml').write_bytes(handle.read())
    topo = gather_bundle(str(bundle))
    assert topo['gpus'][0]['mig_mode'] is None
    assert mig_failures(topo, ALL_DISABLED) == []
    failures = mig_failures(topo, [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}])
    assert [f[2] for f in failures] == ['MIG N/A']


@pytest.mark.parametrize('value,error', [
    (HALF, None),
    (ALL_DISABLED, None),
    ([], 'profile key mig_devices: has no entry'),
    ({'devices': 'all'}, 'profile key mig_devices: must be a list of entries'),
    ([{'devices': 'all'}], 'profile key mig_devices[0]: mig-enabled is required'),
    ([{'devices': [0], 'mig-enabled': 'yes'}], 'profile key mig_devices[0].mig-enabled: must be true or false'),
    ([{'devices': [0], 'mig-enabled': True, 'mig-devices': {'1c.3g.40gb': 1}}], 'profile key mig_devices[0]'),
    ([{'devices': [0], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 'seven'}}],
     'profile key mig_devices[0].mig-devices'),
    ([{'devices': [0], 'mig-enabled': True, 'gpus': [1]}], 'profile key mig_devices[0].gpus: unknown key'),
])
def test_profile_validation(value, error):
    errors = validate_profile({'mig_devices': value})
    if error is None:
        assert errors == []
    else:
        assert len(errors) == 1 and errors[0].startswith(error), errors


def test_each_gpu_instance_needs_exactly_its_compute_instance(node):
    """The XML names the GPU instance of each MIG device: two compute instances on one GPU instance and none on
    another fail, although the numbers add up."""
    topo = node.half().facts()
    gpu3 = topo['gpus'][3]
    ids = sorted(i['id'] for i in topo['mig']['instances']['3'])
    assert sorted(gpu3['mig_device_gpu_instances']) == ids
    assert mig_failures(topo, HALF) == []
    gpu3['mig_device_gpu_instances'] = [ids[0]] + ids[:-1]
    (failed,) = mig_failures(topo, HALF)
    assert failed[:3] == ('GPU3', 'one compute instance per GPU instance',
                          'GPU instance %d has 2, GPU instance %d has 0' % (ids[0], ids[-1]))
