# -*- coding: utf-8 -*-
"""mig_config: mig-parted documents it accepts and normalizes, the ones it refuses (each message starts with the
path of the bad part), and how entries map onto a node's GPUs, as data."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.config.mig_parted import (
    ConfigError, expand, load, normalize_bus_id, profile_name, select, validate_entries)

DOC = {
    'version': 'v1',
    'mig-configs': {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
        'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
        'half-1g.10gb': [
            {'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}},
            {'devices': ['0000:1B:00.0', 4, 6, 7], 'mig-enabled': False},
        ],
    },
}

TEXT = '''\
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  mixed:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "MIG 3g.40gb": 2
        "1g.10gb+me": 1
    - device-filter: "0x233010DE"
      devices: ["00000000:1B:00.0"]
      mig-enabled: true
      mig-devices: {}
'''

H100_BUS = ['00000000:18:00.0', '00000000:2A:00.0', '00000000:3A:00.0', '00000000:5D:00.0',
            '00000000:9A:00.0', '00000000:1B:00.0', '00000000:BA:00.0', '00000000:DB:00.0']
GPUS = [{'index': i, 'bus_id': bus, 'pci_device_id': '0x233010DE', 'name': 'NVIDIA H100 80GB HBM3'}
        for i, bus in enumerate(H100_BUS)]


def _doc(entries, name='c'):
    return {'version': 'v1', 'mig-configs': {name: entries}}


def test_load_normalizes_a_mapping():
    doc = load(DOC)
    assert sorted(doc['mig-configs']) == ['all-1g.10gb', 'all-disabled', 'half-1g.10gb']
    assert doc['mig-configs']['half-1g.10gb'] == [
        {'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}, 'device-filter': None},
        {'devices': ['0000:1b:00.0', 4, 6, 7], 'mig-enabled': False, 'mig-devices': {}, 'device-filter': None},
    ]
    assert load(doc) == doc


def test_load_reads_yaml_text():
    doc = load(TEXT)
    assert doc['mig-configs']['mixed'] == [
        {'devices': [0], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2, '1g.10gb+me': 1},
         'device-filter': None},
        {'devices': ['0000:1b:00.0'], 'mig-enabled': True, 'mig-devices': {}, 'device-filter': ['0x233010de']},
    ]
    assert load(TEXT.encode('utf-8')) == doc


@pytest.mark.parametrize('data, says', [
    ('version: v1\nmig-configs: [\n', 'not YAML: while parsing'),
    ('- a\n', 'a mig-parted configuration is a mapping'),
    ({'version': 'v2', 'mig-configs': {}}, "version: must be v1, got 'v2'"),
    ({'mig-configs': {'a': []}}, 'version: must be v1, got None'),
    ({'version': 'v1'}, 'mig-configs: must be a mapping'),
    ({'version': 'v1', 'mig-configs': {}}, 'mig-configs: must be a mapping of configuration names to entry lists, '
                                           'got an empty mapping'),
    ({'version': 'v1', 'mig-configs': {}, 'extra': 1}, 'extra: unknown key'),
    (_doc({'devices': 'all'}), 'mig-configs.c: must be a list of entries'),
    (_doc([]), 'mig-configs.c: has no entry'),
    (_doc(['all']), 'mig-configs.c[0]: must be a mapping'),
    (_doc([{'devices': 'all'}]), 'mig-configs.c[0]: mig-enabled is required'),
    (_doc([{'mig-enabled': True}]), 'mig-configs.c[0]: devices is required'),
    (_doc([{'devices': 'all', 'mig-enabled': 'yes'}]), "mig-configs.c[0].mig-enabled: must be true or false"),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig_devices': {}}]), 'mig-configs.c[0].mig_devices: unknown key'),
    (_doc([{'devices': 'some', 'mig-enabled': True}]), 'mig-configs.c[0].devices: must be "all" or a list'),
    (_doc([{'devices': [], 'mig-enabled': True}]), 'mig-configs.c[0].devices: must name at least one GPU'),
    (_doc([{'devices': [0, 'gpu1'], 'mig-enabled': True}]),
     "mig-configs.c[0].devices[1]: expected a GPU index or a PCI bus id like 0000:1b:00.0, got 'gpu1'"),
    (_doc([{'devices': [-1], 'mig-enabled': True}]), 'mig-configs.c[0].devices[0]: a GPU index is 0 or more'),
    (_doc([{'devices': [True], 'mig-enabled': True}]), 'mig-configs.c[0].devices[0]: expected a GPU index'),
    (_doc([{'devices': [1, 1], 'mig-enabled': True}]), 'mig-configs.c[0].devices[1]: 1 is listed twice'),
    (_doc([{'devices': ['1b:00.0', '0000:1B:00.0'], 'mig-enabled': True}]),
     'mig-configs.c[0].devices[1]: 0000:1B:00.0 is listed twice'),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 8, '1g.99': 1}}]),
     'mig-configs.c[0].mig-devices.1g.99: not a GPU-instance profile name'),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': -1}}]),
     'mig-configs.c[0].mig-devices.1g.10gb: the count must be an integer, 0 or more, got -1'),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': '7'}}]),
     "mig-configs.c[0].mig-devices.1g.10gb: the count must be an integer, 0 or more, got '7'"),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 1, 'MIG 1g.10gb': 2}}]),
     'mig-configs.c[0].mig-devices.MIG 1g.10gb: profile 1g.10gb is given twice'),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': ['1g.10gb']}]),
     'mig-configs.c[0].mig-devices: must be a mapping'),
    (_doc([{'devices': 'all', 'mig-enabled': False, 'mig-devices': {'1g.10gb': 7}}]),
     'mig-configs.c[0].mig-devices: MIG devices need mig-enabled: true'),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'device-filter': '0x2330'}]),
     "mig-configs.c[0].device-filter: expected a PCI device id like 0x233010DE, got '0x2330'"),
    (_doc([{'devices': 'all', 'mig-enabled': True, 'device-filter': ['0x233010DE', 5]}]),
     'mig-configs.c[0].device-filter[1]: expected a PCI device id'),
    (_doc([{'devices': 'all', 'mig-enabled': True}, {'devices': 'all'}], name='half-1g.10gb'),
     'mig-configs.half-1g.10gb[1]: mig-enabled is required'),
])
def test_load_refuses(data, says):
    with pytest.raises(ConfigError) as exc:
        load(data)
    assert str(exc.value).startswith(says) or says in str(exc.value), str(exc.value)


def test_error_carries_path_and_reason():
    with pytest.raises(ConfigError) as exc:
        validate_entries([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 'x'}}], 'mig_config')
    assert exc.value.path == 'mig_config[0].mig-devices.1g.10gb'
    assert exc.value.reason.startswith('the count must be')


def test_validate_entries_alone_drops_zero_counts():
    assert validate_entries([{'devices': 'ALL', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 0, '2g.20gb': 1}}],
                            'x') == [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'2g.20gb': 1},
                                      'device-filter': None}]


@pytest.mark.parametrize('name, profile', [
    ('1g.10gb', '1g.10gb'), ('MIG 1g.10gb', '1g.10gb'), (' MIG 7G.80GB ', '7g.80gb'), ('1g.10gb+me', '1g.10gb+me'),
    ('1g.24gb+me', '1g.24gb+me'), ('1c.3g.40gb', None), ('3g', None), ('0g.10gb', None), (7, None),
])
def test_profile_name(name, profile):
    assert profile_name(name) == profile


@pytest.mark.parametrize('bus, normalized', [
    ('00000000:1B:00.0', '0000:1b:00.0'), ('0000:1b:00.0', '0000:1b:00.0'), ('1b:00.0', '0000:1b:00.0'),
    ('0001:1B:00.0', '0001:1b:00.0'), ('00010000:1B:00.0', None), ('1b:00', None), ('x', None), (None, None),
])
def test_normalize_bus_id(bus, normalized):
    assert normalize_bus_id(bus) == normalized


def test_select():
    doc = load(DOC)
    assert select(doc, 'all-disabled') == [{'devices': 'all', 'mig-enabled': False, 'mig-devices': {},
                                            'device-filter': None}]
    with pytest.raises(ConfigError) as exc:
        select(doc, 'all-2g.20gb')
    assert str(exc.value) == ("selected: no configuration 'all-2g.20gb' in mig-configs; "
                              "known: all-1g.10gb, all-disabled, half-1g.10gb")


def test_expand_the_mixed_layout():
    wanted = expand(select(load(DOC), 'half-1g.10gb'), GPUS)
    assert sorted(wanted) == sorted(normalize_bus_id(b) for b in H100_BUS)
    assert wanted['0000:18:00.0'] == {'index': 0, 'enabled': True, 'devices': {'1g.10gb': 7}, 'entry': 0}
    assert wanted['0000:1b:00.0'] == {'index': 5, 'enabled': False, 'devices': {}, 'entry': 1}
    assert [wanted[normalize_bus_id(b)]['enabled'] for b in H100_BUS] == [True] * 4 + [False] * 4


def test_expand_all_and_unmatched_gpus_left_alone():
    assert len(expand([{'devices': 'all', 'mig-enabled': False}], GPUS)) == 8
    wanted = expand([{'devices': [2, '0000:DB:00.0'], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}}], GPUS)
    assert wanted == {'0000:3a:00.0': {'index': 2, 'enabled': True, 'devices': {'3g.40gb': 2}, 'entry': 0},
                      '0000:db:00.0': {'index': 7, 'enabled': True, 'devices': {'3g.40gb': 2}, 'entry': 0}}
    # pci_bus_id as nvsmi_xml names it works too
    xml_gpus = [{'index': 0, 'pci_bus_id': '00000000:18:00.0', 'pci_device_id': '0x233010DE'}]
    assert list(expand([{'devices': 'all', 'mig-enabled': True}], xml_gpus)) == ['0000:18:00.0']


def test_expand_device_filter():
    gpus = GPUS[:2] + [dict(GPUS[2], pci_device_id='0x20B010DE', name='NVIDIA A100-SXM4-40GB')]
    entries = [{'devices': 'all', 'device-filter': '0x20b010de', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}},
               {'devices': 'all', 'device-filter': ['0x233010DE'], 'mig-enabled': False}]
    wanted = expand(entries, gpus)
    assert sorted((w['index'], w['enabled'], w['entry']) for w in wanted.values()) == [
        (0, False, 1), (1, False, 1), (2, True, 0)]


@pytest.mark.parametrize('entries, says', [
    ([{'devices': [8], 'mig-enabled': True}],
     'mig_config[0].devices[0]: no GPU 8 on this node (GPUs: 0 0000:18:00.0, 1 0000:2a:00.0'),
    ([{'devices': ['0000:19:00.0'], 'mig-enabled': True}], 'mig_config[0].devices[0]: no GPU 0000:19:00.0 on'),
    ([{'devices': [0, 1], 'mig-enabled': True}, {'devices': ['00000000:2A:00.0'], 'mig-enabled': False}],
     'mig_config[1].devices[0]: GPU 1 (0000:2a:00.0) is also matched by mig_config[0]'),
    ([{'devices': 'all', 'mig-enabled': True}, {'devices': [3], 'mig-enabled': False}],
     'mig_config[1].devices[0]: GPU 3 (0000:5d:00.0) is also matched by mig_config[0]'),
    ([{'devices': [5, '0000:1b:00.0'], 'mig-enabled': True}], 'mig_config[0].devices[1]: GPU 5 (0000:1b:00.0) is listed twice'),
    ([{'devices': 'all', 'mig-enabled': 1}], 'mig_config[0].mig-enabled: must be true or false'),
])
def test_expand_refuses(entries, says):
    with pytest.raises(ConfigError) as exc:
        expand(entries, GPUS, 'mig_config')
    assert str(exc.value).startswith(says), str(exc.value)


@pytest.mark.parametrize('key, says', [
    ('1c.3g.40gb', 'mig-configs.c[0].mig-devices.1c.3g.40gb: compute-instance profiles are not supported'),
    ('MIG 2c.3g.40gb', 'mig-configs.c[0].mig-devices.MIG 2c.3g.40gb: compute-instance profiles are not supported'),
])
def test_compute_instance_profiles_are_refused_when_selected_only(key, says):
    """A site's file may hold such configurations: it loads, and only selecting one is refused."""
    doc = load(dict(_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': {key: 1}}]),
                    **{'mig-configs': {'c': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {key: 1}}],
                                       'all-disabled': [{'devices': 'all', 'mig-enabled': False}]}}))
    assert select(doc, 'all-disabled') == [{'devices': 'all', 'mig-enabled': False, 'mig-devices': {},
                                            'device-filter': None}]
    with pytest.raises(ConfigError) as exc:
        select(doc, 'c')
    assert str(exc.value) == says + ': give GPU-instance profiles (like 3g.40gb), each gets its default compute ' \
        'instance'


def test_profile_names_of_nvidia_default_configuration():
    """The GPU-instance profile names of mig-parted's config-default.yaml (media extensions, graphics, -me)."""
    names = ['1g.5gb+me', '1g.24gb+gfx', '1g.24gb+me.all', '1g.24gb-me', '2g.48gb-me', '4g.96gb+gfx', '7g.189gb']
    doc = load(_doc([{'devices': 'all', 'mig-enabled': True, 'mig-devices': dict((n, 1) for n in names)},
                     {'device-filter': '0x20B710DE', 'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]))
    assert sorted(select(doc, 'c')[0]['mig-devices']) == sorted(names)
    assert select(doc, 'c')[1]['device-filter'] == ['0x20b710de']
