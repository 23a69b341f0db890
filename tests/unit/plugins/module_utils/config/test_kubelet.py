# -*- coding: utf-8 -*-
"""kubelet_conf: real kubeadm files round-trip byte for byte, merge keeps order and replaces whole values, drop-ins
merge like the kubelet's --config-dir, quantities and CPU lists."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.config.kubelet import (
    KubeletConfigError, check, dropin, dump, effective, format_cpuset, format_quantity, load, merge, merge_patch,
    parse_cpuset, parse_quantity, same)

from real_captures import REAL, real_text  # noqa: E402 pylint: disable=import-error,wrong-import-position

KUBELET = os.path.join(REAL, 'kubelet')
FIXTURES = sorted(n for n in os.listdir(KUBELET) if n.endswith('.yaml'))
ROUND_TRIP = [n for n in FIXTURES if 'EDITED' not in n]


def fixture(name):
    return real_text(os.path.join('kubelet', name))


def test_there_are_real_kubeadm_files():
    assert len(ROUND_TRIP) >= 2 and len(FIXTURES) >= 3


@pytest.mark.parametrize('name', ROUND_TRIP)
def test_kubeadm_files_round_trip_byte_for_byte(name):
    text = fixture(name)
    assert dump(load(text, name)) == text


def test_an_edited_file_keeps_its_data_and_loses_its_comments():
    """The annotated 1.12 file has comment lines and a blank line: the data round-trips, the text without them too."""
    name = 'k8s-1.12-full-defaults-annotated-EDITED.yaml'
    text = fixture(name)
    doc = load(text, name)
    assert doc['cpuManagerPolicy'] == 'none' and doc['readOnlyPort'] == 10255
    stripped = ''.join(line for line in text.splitlines(True) if line.strip() and not line.startswith('#'))
    assert dump(doc) == stripped
    assert same(load(dump(doc)), doc)


def test_load_keeps_strings_that_look_like_other_types():
    doc = load(fixture('kubeadm-1.27-playwithk8s-node2.yaml'))
    assert doc['logging']['options']['json']['infoBufferSize'] == '0'
    assert doc['containerRuntimeEndpoint'] == '' and doc['memorySwap'] == {}
    assert doc['cpuManagerReconcilePeriod'] == '0s' and doc['healthzPort'] == 10248


@pytest.mark.parametrize('text, found', [
    ('', 'found nothing (an empty document)'),
    ('- a\n', 'found a list'),
    ('just text\n', "found a str ('just text')"),
    ('apiVersion: v1\nkind: ConfigMap\n', 'apiVersion v1 and kind ConfigMap'),
    ('kind: KubeletConfiguration\n', 'apiVersion (none) and kind KubeletConfiguration'),
    ('apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n', 'apiVersion kubelet.config.k8s.io/v1 and'),
    ('apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n---\napiVersion: kubelet.config.k8s.io/v1beta1\n'
     'kind: KubeletConfiguration\n', '2 YAML documents'),
    ('a: [\n', 'not YAML'),
])
def test_load_refuses_what_is_not_a_kubelet_configuration(text, found):
    with pytest.raises(KubeletConfigError) as exc:
        load(text, '/var/lib/kubelet/config.yaml')
    assert str(exc.value).startswith('/var/lib/kubelet/config.yaml: ')
    assert found in str(exc.value)


def test_check_accepts_a_document():
    doc = {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration'}
    assert check(doc, 'x') is doc


@pytest.mark.parametrize('settings, keys, changed', [
    # a new key goes where it sorts in kubeadm's sorted file
    ({'cpuManagerPolicy': 'static'}, ['a', 'cpuManagerPolicy', 'kind', 'z'], ['cpuManagerPolicy']),
    # the whole value is replaced, order kept
    ({'kind': 'KubeletConfiguration', 'z': {'n': 1}}, ['a', 'kind', 'z'], ['z']),
    # None removes; removing what is not there changes nothing
    ({'a': None, 'nothere': None}, ['kind', 'z'], ['a']),
    # the same value (types included) is no change
    ({'a': 1}, ['a', 'kind', 'z'], []),
    ({'a': True}, ['a', 'kind', 'z'], ['a']),
])
def test_merge_on_a_sorted_file(settings, keys, changed):
    doc = {'a': 1, 'kind': 'KubeletConfiguration', 'z': {'m': 2}}
    new, changed_keys = merge(doc, settings)
    assert list(new) == keys
    assert changed_keys == changed
    assert doc == {'a': 1, 'kind': 'KubeletConfiguration', 'z': {'m': 2}}  # not modified


def test_merge_appends_to_an_unsorted_file_and_replaces_whole_values():
    doc = {'kind': 'KubeletConfiguration', 'apiVersion': 'kubelet.config.k8s.io/v1beta1',
           'cpuManagerPolicyOptions': {'full-pcpus-only': 'true', 'align-by-socket': 'true'}}
    new, changed = merge(doc, {'cpuManagerPolicyOptions': {'full-pcpus-only': 'true'}, 'address': '0.0.0.0'})
    assert list(new) == ['kind', 'apiVersion', 'cpuManagerPolicyOptions', 'address']
    assert new['cpuManagerPolicyOptions'] == {'full-pcpus-only': 'true'}
    assert changed == ['address', 'cpuManagerPolicyOptions']


def test_merge_into_a_kubeadm_file_changes_only_those_lines():
    text = fixture('kubeadm-1.27-playwithk8s-node2.yaml')
    new, changed = merge(load(text), {'cpuManagerPolicy': 'static', 'reservedSystemCPUs': '0-1',
                                      'kubeReserved': {'cpu': '500m', 'memory': '1Gi'}, 'memorySwap': None})
    assert changed == ['cpuManagerPolicy', 'kubeReserved', 'memorySwap', 'reservedSystemCPUs']
    out = dump(new)
    lines = text.splitlines()
    lines.insert(lines.index('cpuManagerReconcilePeriod: 0s'), 'cpuManagerPolicy: static')
    lines.insert(lines.index('kind: KubeletConfiguration') + 1, 'kubeReserved:\n  cpu: 500m\n  memory: 1Gi')
    lines.remove('memorySwap: {}')
    lines.insert(lines.index('rotateCertificates: true'), 'reservedSystemCPUs: 0-1')
    assert out == '\n'.join(lines) + '\n'


@pytest.mark.parametrize('value, text', [
    ('', '""'), ('0', '"0"'), ('true', '"true"'), ('null', '"null"'), ('1.5', '"1.5"'), ('0-1', '0-1'),
    ('0,8', '0,8'), ('*', "'*'"), ('=', '='), ('a: b', "'a: b'"), (None, 'null'), (True, 'true'), (12, '12'),
    ('2024-01-01', '"2024-01-01"'), ({}, '{}'), ([], '[]'),
])
def test_dump_quotes_like_sigs_k8s_io_yaml(value, text):
    assert dump({'k': value}) == 'k: %s\n' % text


def test_dump_lists_and_nesting():
    doc = {'reservedMemory': [{'numaNode': 0, 'limits': {'memory': '1Gi'}}], 'clusterDNS': ['10.96.0.10'],
           'x': 'a\nb'}
    assert dump(doc) == ('reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\nclusterDNS:\n- 10.96.0.10\n'
                         'x: |-\n  a\n  b\n')


def test_dump_does_not_wrap_long_lines():
    long = ' '.join(['word'] * 60)
    assert dump({'k': long}) == 'k: %s\n' % long


def test_effective_merges_maps_and_replaces_lists_like_the_kubelet():
    """The examples of the Kubernetes documentation "Kubelet Configuration Directory Merging"."""
    main = {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration', 'port': 20250,
            'authorization': {'mode': 'Webhook', 'webhook': {'cacheAuthorizedTTL': '5m', 'cacheUnauthorizedTTL': '30s'}},
            'serializeImagePulls': False, 'address': '192.168.0.1', 'clusterDNS': ['192.168.0.9', '192.168.0.8'],
            'evictionHard': {'memory.available': '100Mi', 'nodefs.available': '10%'}}
    one = {'authorization': {'mode': 'AlwaysAllow', 'webhook': {'cacheAuthorizedTTL': '8m'}}, 'address': '192.168.0.8',
           'clusterDNS': ['192.168.0.2', '192.168.0.3', '192.168.0.5']}
    two = {'evictionHard': {'memory.available': '500Mi'}, 'port': None}
    result = effective(main, {'20-b.conf': two, '10-a.conf': one})
    assert result['authorization'] == {'mode': 'AlwaysAllow',
                                       'webhook': {'cacheAuthorizedTTL': '8m', 'cacheUnauthorizedTTL': '30s'}}
    assert result['clusterDNS'] == ['192.168.0.2', '192.168.0.3', '192.168.0.5']
    assert result['address'] == '192.168.0.8' and result['serializeImagePulls'] is False
    assert result['evictionHard'] == {'memory.available': '500Mi', 'nodefs.available': '10%'}
    assert 'port' not in result
    assert main['port'] == 20250  # not modified
    # a list of documents is read in the order given; no drop-ins is the main file
    assert effective(main, [two, {'port': 1}])['port'] == 1
    assert effective(main, []) == main and effective(None, [one])['address'] == '192.168.0.8'


@pytest.mark.parametrize('target, patch, result', [
    ({'a': {'b': 1}}, {'a': {'c': 2}}, {'a': {'b': 1, 'c': 2}}),
    ({'a': {'b': 1}}, {'a': 3}, {'a': 3}),
    ({'a': 3}, {'a': {'b': None, 'c': 1}}, {'a': {'c': 1}}),
    ({'a': [1, 2]}, {'a': [3]}, {'a': [3]}),
])
def test_merge_patch(target, patch, result):
    assert merge_patch(target, patch) == result


def test_dropin_document():
    assert list(dropin({'z': 1, 'cpuManagerPolicy': 'static', 'gone': None})) == [
        'apiVersion', 'cpuManagerPolicy', 'kind', 'z']


@pytest.mark.parametrize('value, number', [
    ('1Gi', 1 << 30), ('100Mi', 100 << 20), ('512M', 512 * 10 ** 6), ('1e3', 1000), ('1000', 1000), (1000, 1000),
    ('1.5Gi', 3 << 29), ('500m', 1), ('100k', 100000), ('1Ki', 1024), ('2Ei', 2 << 60), ('1E', 10 ** 18),
    ('0', 0), ('-1Mi', -(1 << 20)), ('+5', 5), ('.5Ki', 512), ('1E-2', 1), ('12e+1', 120), (' 1Gi ', 1 << 30),
    (1.0, 1), ('1n', 1), ('1000u', 1),
])
def test_parse_quantity(value, number):
    assert parse_quantity(value) == number


@pytest.mark.parametrize('value', ['', 'Gi', '1 Gi', '1GB', '1gi', '1.2.3', 'abc', True, None, [1], '1K', 'NaN',
                                   float('inf')])
def test_parse_quantity_refuses(value):
    with pytest.raises(ValueError):
        parse_quantity(value)


@pytest.mark.parametrize('number, text', [
    (1 << 30, '1Gi'), (1100 << 20, '1100Mi'), (1536 << 20, '1536Mi'), (1000, '1000'), (1024, '1Ki'), (0, '0'),
    (3 << 40, '3Ti'), (1 << 60, '1Ei'), (1025, '1025'), (-(1 << 20), '-1Mi'),
])
def test_format_quantity(number, text):
    assert format_quantity(number) == text
    assert parse_quantity(text) == number


@pytest.mark.parametrize('value', ['1Gi', 1.5, True, None])
def test_format_quantity_refuses(value):
    with pytest.raises(ValueError):
        format_quantity(value)


@pytest.mark.parametrize('text, cpus', [
    ('0-3,8,10-11', [0, 1, 2, 3, 8, 10, 11]), ('', []), ('  ', []), ('5', [5]), ('3,1,2', [1, 2, 3]),
    ('0-1,1-2', [0, 1, 2]), (' 0-1 , 4 ', [0, 1, 4]), (7, [7]), ([3, 1, 3], [1, 3]), ('2-2', [2]),
])
def test_parse_cpuset(text, cpus):
    assert parse_cpuset(text) == cpus


@pytest.mark.parametrize('text, words', [
    ('3-1', 'goes backwards'), ('a', 'neither a number nor a range'), ('1,,2', 'neither'), ('-1', 'neither'),
    ('1-', 'neither'), ('0-1-2', 'neither'), (True, 'not a CPU list'), (None, 'not a CPU list'),
    ([1, -1], 'not a CPU number'), ([True], 'not a CPU number'), (1.5, 'not a CPU list'),
])
def test_parse_cpuset_refuses(text, words):
    with pytest.raises(ValueError) as exc:
        parse_cpuset(text)
    assert words in str(exc.value)


@pytest.mark.parametrize('cpus, text', [
    ([0, 1, 2, 3, 8, 10, 11], '0-3,8,10-11'), ([], ''), ([5], '5'), ([11, 10, 3, 2, 2], '2-3,10-11'),
    (range(0, 64, 2), ','.join(str(n) for n in range(0, 64, 2))), ({1, 2, 3}, '1-3'),
])
def test_format_cpuset(cpus, text):
    assert format_cpuset(cpus) == text
    assert parse_cpuset(text) == sorted(set(cpus))


@pytest.mark.parametrize('a, b, equal', [
    (1, 1, True), (1, True, False), (1, 1.0, False), ({'a': [1]}, {'a': [1]}, True), ({'a': 1}, {'a': 1, 'b': 2}, False),
    ([1, 2], [2, 1], False), ({'x': 1, 'y': 2}, {'y': 2, 'x': 1}, True), (None, None, True),
])
def test_same(a, b, equal):
    assert same(a, b) is equal
