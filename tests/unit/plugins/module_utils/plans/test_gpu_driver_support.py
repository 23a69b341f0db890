# -*- coding: utf-8 -*-
"""Which driver drives which GPU (plans/gpu_driver_support.py, node/nvidia_pci.py), checked against the sources:
pci.ids 2026.08.22 (tests/fixtures/ids/pci.ids-nvidia) for the architecture of each device id, and the first
release of NVIDIA's open kernel modules that lists each id (tests/fixtures/ids/open-gpu-kernel-modules-first-
release.tsv); then the rules as the driver plan applies them, each refusal naming its variable.

What this cannot prove: that every later release lists a GPU once one has (a branch newer than the first is
taken whole: 575.57.08 may predate a 570 point release that added an id), the proprietary modules' own support
lists (not published as data; they are not limited), and the id of a GPU that pci.ids does not know yet.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest

from repo_paths import REPO

from ansible_collections.gpuops.node.plugins.module_utils.node import nvidia_pci
from ansible_collections.gpuops.node.plugins.module_utils.plans import gpu_driver_support as support
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import PlanError, plan

IDS = os.path.join(REPO, 'tests', 'fixtures', 'ids')
# pci.ids chip codes -> architecture (the first letters of the chip name)
FAMILIES = {'GM': 'Maxwell', 'GP': 'Pascal', 'GV': 'Volta', 'TU': 'Turing', 'GA': 'Ampere', 'AD': 'Ada Lovelace',
            'GH': 'Hopper', 'GB': 'Blackwell'}
# the functions of a GPU board that are not the GPU (their PCI class is not a display or 3D controller, so the
# facts never ask their architecture)
NOT_A_GPU = re.compile(r'Audio|USB|UCSI|NVSwitch|bridge|PCIe host|CPU', re.I)


def pci_ids():
    """(device id, name) of every NVIDIA device in the copy of pci.ids."""
    with open(os.path.join(IDS, 'pci.ids-nvidia'), encoding='utf-8') as handle:
        return [(int(m.group(1), 16), m.group(2)) for m in
                (re.match(r'^\t([0-9a-f]{4})  (.*)$', line.rstrip('\n')) for line in handle) if m]


def gpus_in_pci_ids():
    """(device id, name, architecture) of every GPU of a known chip family in pci.ids; Kepler and Rubin (GK, GR)
    are left out: the collection has no rule for them."""
    found = []
    for device, name in pci_ids():
        chip = re.match(r'(GM|GP|GV|TU|GA|AD|GH|GB)\d', name)
        if chip and not NOT_A_GPU.search(name):
            found.append((device, name, FAMILIES[chip.group(1)]))
    return found


def first_listed():
    with open(os.path.join(IDS, 'open-gpu-kernel-modules-first-release.tsv')) as handle:
        rows = [line.rstrip('\n').split('\t') for line in handle if not line.startswith('#')]
    return dict((int(device, 16), (release, name)) for device, release, name in rows)


def test_the_pci_ids_copy_is_recent_enough_to_know_blackwell_ultra():
    names = dict(pci_ids())
    assert names[0x3182] == 'GB110 [B300 SXM6 AC]' and names[0x31c2] == 'GB110 [GB300]'
    with open(os.path.join(IDS, 'pci.ids-nvidia')) as handle:
        assert handle.readline() == '#\tVersion: 2026.08.22\n'


def test_every_gpu_in_pci_ids_has_its_architecture():
    found = gpus_in_pci_ids()
    assert len(found) > 600, len(found)
    wrong = [(hex(d), n, a, nvidia_pci.architecture(hex(d))) for d, n, a in found if nvidia_pci.architecture(hex(d)) != a]
    assert wrong == []


def test_every_block_of_the_table_holds_gpus_of_its_architecture_only():
    found = gpus_in_pci_ids()
    for first, last, architecture in nvidia_pci.ARCHITECTURES:
        inside = [(d, a) for d, _n, a in found if first <= d <= last]
        assert inside, 'no GPU of pci.ids in %#x-%#x' % (first, last)
        assert set(a for _d, a in inside) == {architecture}, (hex(first), inside)


def test_rubin_and_kepler_have_no_architecture():
    for device, name in pci_ids():
        if re.match(r'(GR|GK)\d', name):
            assert nvidia_pci.architecture(hex(device)) is None, (hex(device), name)


def test_first_release_is_the_readme_table_of_every_release_for_open_only_gpus():
    listed = first_listed()
    assert len(listed) == 293
    open_only = dict((d, release) for d, (release, _n) in listed.items()
                     if support.open_only({'device_id': hex(d), 'architecture': nvidia_pci.architecture(hex(d))}))
    assert len(open_only) == 51
    assert support.FIRST_RELEASE == open_only
    # the data-centre GPUs this collection's operators run
    assert [listed[d][0] for d in (0x2342, 0x2348, 0x2901, 0x2941, 0x3182, 0x31c2)] == [
        '535.43.19', '565.57.01', '570.86.15', '570.123.01', '580.82.07', '580.82.07']


def test_the_readme_table_is_no_first_support_list_for_other_gpus():
    # the T4 has run the open modules since 515, yet the table lists it from 575: no minimum comes from it
    assert first_listed()[0x1eb8][0].startswith('575.')
    t4 = {'device_id': '0x1eb8', 'architecture': 'Turing'}
    assert support.first_release(t4) == (None, None)
    assert support.limits([t4])['min_release'] is None


def test_every_id_the_readme_lists_is_a_gpu_the_table_knows():
    names = dict(pci_ids())
    unknown = [(hex(d), name, names.get(d)) for d, (_r, name) in first_listed().items()
               if nvidia_pci.architecture(hex(d)) is None]
    assert unknown == []


def test_grace_hopper_ids_are_the_gh200_of_pci_ids():
    assert sorted(support.OPEN_ONLY_DEVICES) == sorted(d for d, n in pci_ids() if 'GH200' in n)


@pytest.mark.parametrize('device, architecture, why, first', [
    ('0x15f8', 'Pascal', None, None),
    ('0x2330', 'Hopper', None, None),
    ('0x2342', 'Hopper', 'Grace Hopper', '535.43.19'),
    ('0x2901', 'Blackwell', 'Blackwell', '570.86.15'),
    ('0x2941', 'Blackwell', 'Blackwell', '570.123.01'),
    ('0x3182', 'Blackwell', 'Blackwell', '580.82.07'),
    ('0x31c2', 'Blackwell', 'Blackwell', '580.82.07'),
    # GB110 without a release that lists it: the most the listed ids of 0x3100-0x31ff need
    ('0x31fe', 'Blackwell', 'Blackwell', '580.82.07'),
    # GB112: no id of its block is listed, so nothing is known
    ('0x3200', 'Blackwell', 'Blackwell', None),
])
def test_rules_of_a_gpu(device, architecture, why, first):
    gpu = {'device_id': device, 'architecture': nvidia_pci.architecture(device)}
    assert gpu['architecture'] == architecture
    assert support.open_only(gpu) == why
    assert support.first_release(gpu)[0] == first


NAMES = {'open': ['nvidia-kernel-open-dkms', 'nvidia-smi'], 'proprietary': ['nvidia-kernel-dkms', 'nvidia-smi']}
OFFERED = ('535.261.03-1', '570.195.03-1', '580.126.20-1', '580.159.04-1', '595.45.04-1')


def _gpus(*devices):
    return [{'device_id': device, 'architecture': nvidia_pci.architecture(device), 'model': nvidia_pci.model(device)}
            for device in devices]


def _plan(device, offered=OFFERED, installed=None, **kw):
    request = {'packages': NAMES, 'kernel_module': 'auto', 'fabricmanager': 'off', 'fabricmanager_packages': [],
               'source': 'mirror', 'extra_packages': []}
    request.update(kw)
    gpus = _gpus(*device) if isinstance(device, tuple) else _gpus(*[device] * 4)
    node = {'facts': {'pci_gpus': gpus, 'nvswitch_count': 0}, 'installed': dict(installed or {}), 'held': [],
            'available': {'open': list(offered), 'proprietary': list(offered)}, 'fabricmanager_available': {}}
    return plan(request, node)


def test_pascal_without_a_branch_gets_the_newest_580():
    result = _plan('0x15f8')
    assert result['kernel_module'] == 'proprietary' and result['target_version'] == '580.159.04'


@pytest.mark.parametrize('device, kw, variable, words', [
    ('0x15f8', {'branch': '595'}, 'nvidia_driver_branch', 'Pascal GPUs (PCI id 0x15f8): the 580 series is the last'),
    ('0x1db5', {'version': '595.45.04'}, 'nvidia_driver_version', 'Volta GPUs'),
    ('0x13f2', {'branch': '590'}, 'nvidia_driver_branch', 'use branch 580 or earlier'),
    ('0x3182', {'branch': '570'}, 'nvidia_driver_branch', 'NVIDIA B300 SXM6 AC): NVIDIA\'s open kernel modules drive '
                                                          'it from 580.82.07'),
    # a release of the right branch older than the GPU's first: GB200 from 570.123.01
    ('0x2941', {'version': '570.86.15'}, 'nvidia_driver_version', 'use 570.123.01 or later'),
    ('0x3182', {'kernel_module': 'proprietary'}, 'nvidia_driver_kernel_module', 'Blackwell GPUs need the open'),
    ('0x2342', {'kernel_module': 'proprietary'}, 'nvidia_driver_kernel_module', 'Grace Hopper GPUs need the open'),
    ('0x2901', {'version': '535.261.03'}, 'nvidia_driver_version', 'use 570.86.15 or later'),
    # a node with a Pascal and a Turing GPU: proprietary, and the Pascal limit
    (('0x15f8', '0x1eb8'), {'branch': '595'}, 'nvidia_driver_branch', 'Pascal GPUs'),
])
def test_a_branch_the_gpus_cannot_use_is_refused(device, kw, variable, words):
    with pytest.raises(PlanError) as info:
        _plan(device, **kw)
    assert info.value.variable == variable and words in str(info.value), str(info.value)


def test_a_source_with_only_older_branches_is_refused_on_a_b200():
    # Debian 12's own driver is 535: it installs on a B200 and drives nothing
    with pytest.raises(PlanError) as info:
        _plan('0x2901', offered=['535.216.01-1~deb12u1', '535.261.03-1~deb12u1'], source='debian')
    assert info.value.variable == 'nvidia_driver_source'
    assert 'newest is 535.261.03' in str(info.value) and 'from 570.86.15' in str(info.value)


def test_a_b300_without_a_branch_gets_the_newest_and_never_one_older_than_580():
    assert _plan('0x3182')['target_version'] == '595.45.04'
    with pytest.raises(PlanError) as info:
        _plan('0x3182', offered=['570.195.03-1', '575.64.03-1'])
    assert info.value.variable == 'nvidia_driver_source' and 'from 580.82.07' in str(info.value)


def test_a_branch_whose_newest_release_predates_the_gpu_is_refused():
    with pytest.raises(PlanError) as info:
        _plan('0x2941', offered=['570.86.15-1', '580.159.04-1'], branch='570')
    assert info.value.variable == 'nvidia_driver_branch' and 'offers 570.86.15' in str(info.value)


def test_a_t4_takes_any_branch_with_the_open_modules():
    result = _plan('0x1eb8', branch='570')
    assert result['kernel_module'] == 'open' and result['target_version'] == '570.195.03'


def test_a_version_whose_branch_cannot_be_read_is_never_within_a_limit():
    assert _plan('0x15f8', offered=['595.45.04.1-1', '580.126.20-1'])['target_version'] == '580.126.20'


def test_an_installed_driver_newer_than_the_gpus_allow_says_why_it_would_go_down():
    installed = dict((name, '595.45.04-1') for name in NAMES['proprietary'])
    with pytest.raises(PlanError) as info:
        _plan('0x15f8', installed=installed, kernel_module='proprietary')
    assert info.value.variable == 'nvidia_driver_allow_downgrade'
    assert 'newer than the newest that drives this node, 580.159.04 (Pascal GPUs' in str(info.value)
    assert _plan('0x15f8', installed=installed, kernel_module='proprietary',
                 allow_downgrade=True)['action'] == 'downgrade'


def test_no_gpu_facts_no_limit():
    assert support.limits([]) == {'min_release': None, 'min_branch': None, 'min_reason': None, 'max_branch': None,
                                  'max_reason': None}
