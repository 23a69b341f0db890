# -*- coding: utf-8 -*-
"""kubelet_config on a tmp tree: merge into a real kubeadm file (check mode, diff, second run, backup, removal),
drop-ins (created, unchanged, emptied, overridden by a later one), and every refusal with nothing written."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from module_harness import patch_module, run  # noqa: F401 pylint: disable=unused-import

from ansible.module_utils import basic

from ansible_collections.gpuops.node.plugins.module_utils.config import kubelet as config_kubelet
from ansible_collections.gpuops.node.plugins.modules import kubelet_config

from real_captures import real_text  # noqa: E402 pylint: disable=import-error,wrong-import-position

KUBEADM = real_text('kubelet/kubeadm-1.27-playwithk8s-node2.yaml')
EDITED = real_text('kubelet/k8s-1.12-full-defaults-annotated-EDITED.yaml')
STATIC = {'cpuManagerPolicy': 'static', 'reservedSystemCPUs': '0-1'}
HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\n'


@pytest.fixture
def tree(tmp_path):
    """A node's kubelet files under tmp_path: config.yaml as kubeadm wrote it, an empty drop-in directory's parent."""
    config = tmp_path / 'var' / 'lib' / 'kubelet' / 'config.yaml'
    config.parent.mkdir(parents=True)
    config.write_text(KUBEADM)
    config.chmod(0o644)
    return {'path': str(config), 'config_dir': str(tmp_path / 'etc' / 'kubernetes' / 'kubelet.conf.d')}


def _args(tree, **extra):
    args = {'path': tree['path'], 'config_dir': tree['config_dir']}
    args.update(extra)
    return args


def _read(path):
    with open(path) as handle:
        return handle.read()


@pytest.fixture
def warned(monkeypatch):
    """The module's warnings, recorded."""
    found = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, text: found.append(text))
    return found


def test_merge_in_check_mode_changes_nothing(tree):
    result = run(kubelet_config, _args(tree, settings=STATIC), check_mode=True, diff=True)
    assert result['changed'] is True
    assert result['changed_keys'] == ['cpuManagerPolicy', 'reservedSystemCPUs']
    assert result['path'] == tree['path']
    assert _read(tree['path']) == KUBEADM
    assert result['diff']['before'] == KUBEADM
    assert 'cpuManagerPolicy: static\ncpuManagerReconcilePeriod: 0s\n' in result['diff']['after']
    assert result['config']['cpuManagerPolicy'] == 'static'
    assert not os.path.exists(tree['config_dir'])


def test_merge_writes_only_the_lines_that_change_then_nothing(tree):
    result = run(kubelet_config, _args(tree, settings=dict(STATIC, memorySwap=None)))
    assert result['changed'] is True and 'backup_file' not in result
    text = _read(tree['path'])
    removed = [line for line in KUBEADM.splitlines() if line not in text.splitlines()]
    added = [line for line in text.splitlines() if line not in KUBEADM.splitlines()]
    assert removed == ['memorySwap: {}']
    assert added == ['cpuManagerPolicy: static', 'reservedSystemCPUs: 0-1']
    assert os.stat(tree['path']).st_mode & 0o777 == 0o644
    mtime = os.stat(tree['path']).st_mtime_ns
    again = run(kubelet_config, _args(tree, settings=dict(STATIC, memorySwap=None)), diff=True)
    assert again['changed'] is False and again['changed_keys'] == []
    assert again['diff']['before'] == again['diff']['after'] == text
    assert os.stat(tree['path']).st_mtime_ns == mtime


def test_merge_with_backup_and_back_to_kubeadm(tree):
    run(kubelet_config, _args(tree, settings=STATIC))
    result = run(kubelet_config, _args(tree, settings={'cpuManagerPolicy': None, 'reservedSystemCPUs': None},
                                       backup=True))
    assert result['changed'] is True
    assert _read(tree['path']) == KUBEADM
    assert 'cpuManagerPolicy: static' in _read(result['backup_file'])


def test_merge_leaves_a_formatted_file_alone_when_the_data_does_not_change(tree):
    with open(tree['path'], 'w') as handle:
        handle.write(EDITED)
    result = run(kubelet_config, _args(tree, settings={'cpuManagerPolicy': 'none', 'readOnlyPort': 10255}))
    assert result['changed'] is False
    assert _read(tree['path']) == EDITED


def test_merge_without_the_file_fails(tree):
    os.remove(tree['path'])
    result = run(kubelet_config, _args(tree, settings=STATIC), expect_fail=True)
    assert result['msg'] == 'no kubelet configuration at %s: kubeadm writes it when the node joins' % tree['path']


@pytest.mark.parametrize('text, words', [
    ('apiVersion: v1\nkind: Config\n', 'apiVersion v1 and kind Config'),
    ('a: [\n', 'not YAML'),
])
def test_a_file_that_is_not_a_kubelet_configuration_is_refused(tree, text, words):
    with open(tree['path'], 'w') as handle:
        handle.write(text)
    for mode in ('merge', 'drop_in'):
        result = run(kubelet_config, _args(tree, settings=STATIC, mode=mode), expect_fail=True)
        assert result['msg'].startswith(tree['path'] + ': ') and words in result['msg']
        assert _read(tree['path']) == text
    assert not os.path.exists(tree['config_dir'])


@pytest.mark.parametrize('args, words', [
    ({'settings': {'kind': 'KubeletConfiguration'}}, 'settings: kind is not a setting'),
    ({'settings': STATIC, 'mode': 'drop_in', 'drop_in_name': '90-gpuops.yaml'}, "drop_in_name: '90-gpuops.yaml' must"),
    ({'settings': STATIC, 'mode': 'drop_in', 'drop_in_name': 'x/90.conf'}, 'must be a file name ending in .conf'),
    ({'settings': STATIC, 'mode': 'drop_in', 'drop_in_name': '.conf'}, 'must be a file name ending in .conf'),
])
def test_refusals_write_nothing(tree, args, words):
    result = run(kubelet_config, _args(tree, **args), expect_fail=True)
    assert words in result['msg']
    assert _read(tree['path']) == KUBEADM
    assert not os.path.exists(tree['config_dir'])


def test_without_pyyaml_the_module_says_so(tree, monkeypatch):
    monkeypatch.setattr(kubelet_config, 'HAS_YAML', False)
    result = run(kubelet_config, _args(tree, settings=STATIC), expect_fail=True)
    assert 'PyYAML' in result['msg']


def test_drop_in_created_then_unchanged_then_removed(tree):
    args = _args(tree, settings=dict(STATIC, topologyManagerPolicy=None), mode='drop_in')
    check = run(kubelet_config, args, check_mode=True, diff=True)
    assert check['changed'] is True and not os.path.exists(tree['config_dir'])
    assert check['diff']['before_header'].endswith('(absent)') and check['diff']['before'] == ''
    result = run(kubelet_config, args)
    dropin = os.path.join(tree['config_dir'], '90-gpuops.conf')
    assert result['path'] == dropin and result['changed'] is True
    assert result['changed_keys'] == ['cpuManagerPolicy', 'reservedSystemCPUs']
    assert _read(dropin) == HEAD + 'cpuManagerPolicy: static\nkind: KubeletConfiguration\nreservedSystemCPUs: 0-1\n'
    assert os.stat(tree['config_dir']).st_mode & 0o777 == 0o755
    assert os.stat(dropin).st_mode & 0o777 == 0o644
    assert _read(tree['path']) == KUBEADM
    # the main file with the drop-in over it
    assert result['config']['cpuManagerPolicy'] == 'static' and result['config']['staticPodPath'] == '/etc/kubernetes/manifests'
    assert run(kubelet_config, args)['changed'] is False
    gone = run(kubelet_config, _args(tree, settings={'cpuManagerPolicy': None}, mode='drop_in', backup=True))
    assert gone['changed'] is True and gone['changed_keys'] == ['cpuManagerPolicy', 'reservedSystemCPUs']
    assert not os.path.exists(dropin)
    assert 'reservedSystemCPUs' in _read(gone['backup_file'])
    assert 'cpuManagerPolicy' not in gone['config']
    assert run(kubelet_config, _args(tree, settings={}, mode='drop_in'))['changed'] is False


def test_drop_in_keeps_a_file_whose_data_is_the_same(tree):
    os.makedirs(tree['config_dir'])
    dropin = os.path.join(tree['config_dir'], '90-gpuops.conf')
    text = '# written by hand\nkind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\ncpuManagerPolicy: static\n'
    with open(dropin, 'w') as handle:
        handle.write(text)
    result = run(kubelet_config, _args(tree, settings={'cpuManagerPolicy': 'static'}, mode='drop_in'))
    assert result['changed'] is False and _read(dropin) == text


def test_drop_in_without_a_main_file_and_a_later_drop_in_that_wins(tree, warned):
    os.remove(tree['path'])
    os.makedirs(tree['config_dir'])
    with open(os.path.join(tree['config_dir'], '99-site.conf'), 'w') as handle:
        handle.write(HEAD + 'kind: KubeletConfiguration\ncpuManagerPolicy: none\nkubeReserved:\n  memory: 1Gi\n')
    with open(os.path.join(tree['config_dir'], '10-early.conf'), 'w') as handle:
        handle.write(HEAD + 'kind: KubeletConfiguration\nkubeReserved:\n  cpu: 500m\nmaxPods: 50\n')
    with open(os.path.join(tree['config_dir'], 'notes.txt'), 'w') as handle:
        handle.write('not read by the kubelet\n')
    result = run(kubelet_config, _args(tree, settings=dict(STATIC, maxPods=200), mode='drop_in'))
    assert result['config']['cpuManagerPolicy'] == 'none'
    assert result['config']['maxPods'] == 200
    assert result['config']['kubeReserved'] == {'cpu': '500m', 'memory': '1Gi'}
    assert result['overridden'] == [{'key': 'cpuManagerPolicy', 'file': os.path.join(tree['config_dir'], '99-site.conf'),
                                     'value': 'none'}]
    assert any('cpuManagerPolicy is set to' in w and '99-site.conf' in w for w in warned)


def test_merge_warns_about_a_drop_in_that_would_win(tree, warned):
    os.makedirs(tree['config_dir'])
    with open(os.path.join(tree['config_dir'], '50-x.conf'), 'w') as handle:
        handle.write(HEAD + 'kind: KubeletConfiguration\nreservedSystemCPUs: "0"\n')
    result = run(kubelet_config, _args(tree, settings=STATIC))
    assert result['config']['reservedSystemCPUs'] == '0-1'  # the main file
    assert [o['key'] for o in result['overridden']] == ['reservedSystemCPUs']
    assert any('when it runs with --config-dir=' in w for w in warned)


def test_merge_is_not_stopped_by_a_broken_drop_in(tree, warned):
    os.makedirs(tree['config_dir'])
    with open(os.path.join(tree['config_dir'], '50-x.conf'), 'w') as handle:
        handle.write('[')
    result = run(kubelet_config, _args(tree, settings=STATIC))
    assert result['changed'] is True and result['overridden'] == []
    assert any('are not checked for overrides' in w for w in warned)


def test_drop_in_refuses_a_broken_drop_in(tree):
    os.makedirs(tree['config_dir'])
    with open(os.path.join(tree['config_dir'], '50-x.conf'), 'w') as handle:
        handle.write('apiVersion: v1\nkind: Pod\n')
    result = run(kubelet_config, _args(tree, settings=STATIC, mode='drop_in'), expect_fail=True)
    assert '50-x.conf: not a kubelet configuration' in result['msg']
    assert not os.path.exists(os.path.join(tree['config_dir'], '90-gpuops.conf'))


def test_written_files_load_back(tree):
    run(kubelet_config, _args(tree, settings={'kubeReserved': {'cpu': '1', 'memory': '2Gi'}, 'featureGates': {'A': True}}))
    doc = config_kubelet.load(_read(tree['path']))
    assert doc['kubeReserved'] == {'cpu': '1', 'memory': '2Gi'} and doc['featureGates'] == {'A': True}
