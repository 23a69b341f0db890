# -*- coding: utf-8 -*-
"""rdma_settings on a sysfs tree: what it reads, what differs, what it writes (files and dcb commands), that a second
pass finds nothing to change, and that the boot script sets the same values."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.config import rdma_settings as config_rdma_settings
from ansible_collections.gpuops.node.plugins.modules import rdma_settings as module_rdma_settings

from module_harness import answer_commands

SETTINGS = {'priority': 3, 'dscp': 26, 'tos': 106, 'cnp_dscp': 48, 'cnp_priority': 6}
ENTRY = {'hca': 'rocep1s0f0', 'netdev': 'enp1s0f0np0', 'ports': [1]}


def _tree(root, rdma_cm=True):
    ecn = root / 'class' / 'net' / 'enp1s0f0np0' / 'ecn'
    for point in ('rp', 'np'):
        (ecn / ('roce_' + point) / 'enable').mkdir(parents=True)
        for prio in range(8):
            (ecn / ('roce_' + point) / 'enable' / str(prio)).write_text('0\n')
    (ecn / 'roce_np' / 'cnp_dscp').write_text('46\n')
    (ecn / 'roce_np' / 'cnp_802p_prio').write_text('6\n')
    (root / 'kernel' / 'config' / 'rdma_cm').mkdir(parents=True)
    if rdma_cm:
        port = root / 'kernel' / 'config' / 'rdma_cm' / 'rocep1s0f0' / 'ports' / '1'
        port.mkdir(parents=True)
        (port / 'default_roce_tos').write_text('0\n')
        (port / 'default_roce_mode').write_text('RoCE v2\n')


class FakeDcb(object):
    """Answers dcb as iproute2 6.1 prints, from a PFC set and a DSCP table; the module it stands for."""

    def __init__(self):
        self.pfc = set()
        self.app = {}
        self.calls = []
        self.check_mode = False
        self.params = {'sysfs_root': None, 'priority': 3}

    def answer(self, argv):
        self.calls.append(argv)
        if argv[1:3] == ['pfc', 'show']:
            return 0, 'pfc-cap 8 macsec-bypass off delay 0\nprio-pfc %s\n' % ' '.join(
                '%d:%s' % (p, 'on' if p in self.pfc else 'off') for p in range(8)), ''
        if argv[1:4] == ['-N', 'app', 'show']:
            entries = ['%d:%d' % (d, p) for d in sorted(self.app) for p in self.app[d]]
            return 0, ('dscp-prio ' + ' '.join(entries) + '\n') if entries else '', ''
        if argv[1:3] == ['pfc', 'set']:
            self.pfc = set(int(w.split(':')[0]) for w in argv[6:] if w.endswith(':on'))
            return 0, '', ''
        if argv[1:3] == ['app', 'replace']:
            for word in argv[6:]:
                dscp, prio = word.split(':')
                self.app[int(dscp)] = [int(prio)]
            return 0, '', ''
        raise AssertionError(argv)

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture
def dcb(monkeypatch):
    """A FakeDcb answering every command the module runs."""
    fake = FakeDcb()
    answer_commands(monkeypatch, fake.answer)
    return fake


def _pass(tmp_path, dcb, write=True):
    dcb.params['sysfs_root'] = str(tmp_path)
    runner = module_rdma_settings.Runner(dcb, 'dcb', None)
    items = module_rdma_settings.read_items(dcb, runner, dict(ENTRY), SETTINGS)
    changed = [i for i in items if config_rdma_settings.differs(i)]
    if write:
        for item in changed:
            module_rdma_settings.write_item(dcb, runner, item)
    return items, changed


def test_reads_compares_writes_only_differences_and_converges(tmp_path, dcb):
    _tree(tmp_path)
    dcb.app = {0: [0]}
    _items, changed = _pass(tmp_path, dcb)
    assert sorted(i['name'] for i in changed) == sorted([
        'ecn/roce_rp/enable/3', 'ecn/roce_np/enable/3', 'ecn/roce_np/cnp_dscp', 'pfc', 'dscp-prio',
        'rdma_cm/ports/1/default_roce_tos'])
    ecn = tmp_path / 'class' / 'net' / 'enp1s0f0np0' / 'ecn'
    assert (ecn / 'roce_rp' / 'enable' / '3').read_text() == '1\n'
    assert (ecn / 'roce_rp' / 'enable' / '2').read_text() == '0\n'
    assert (ecn / 'roce_np' / 'cnp_dscp').read_text() == '48\n'
    assert dcb.pfc == set([3]) and dcb.app == {0: [0], 26: [3], 48: [6]}
    assert ['dcb', 'pfc', 'set', 'dev', 'enp1s0f0np0', 'prio-pfc', 'all:off', '3:on'] in dcb.calls
    items, changed = _pass(tmp_path, dcb)
    assert changed == []
    assert 'rocep1s0f0 enp1s0f0np0 pfc = PFC on 3\n' in config_rdma_settings.diff_text(items, 'before')


def test_rdma_cm_group_is_created_when_absent(tmp_path, dcb):
    _tree(tmp_path, rdma_cm=False)
    items, changed = _pass(tmp_path, dcb, write=False)
    tos = [i for i in items if i['name'] == 'rdma_cm/ports/1/default_roce_tos'][0]
    assert tos['before'] is None and tos in changed
    assert config_rdma_settings.show(tos, 'before') == '(unreadable)'


def test_an_interface_without_ecn_gets_everything_but_dcqcn(tmp_path, dcb):
    # the inbox mlx5 driver: no ecn in sysfs, DCQCN is the firmware's
    _tree(tmp_path)
    shutil.rmtree(str(tmp_path / 'class' / 'net' / 'enp1s0f0np0' / 'ecn'))
    dcb.params['sysfs_root'] = str(tmp_path)
    entry = dict(ENTRY)
    items = module_rdma_settings.read_items(dcb, module_rdma_settings.Runner(dcb, 'dcb', None), entry, SETTINGS)
    assert entry['ecn'] is False
    assert sorted(i['name'] for i in items) == ['dscp-prio', 'pfc', 'rdma_cm/ports/1/default_roce_tos']
    assert '/ecn/' not in config_rdma_settings.boot_script(str(tmp_path), [entry], SETTINGS, [], False, '# test')


def test_no_rdma_cm_configfs_fails_naming_it(tmp_path, dcb):
    _tree(tmp_path)
    shutil.rmtree(str(tmp_path / 'kernel'))
    dcb.params['sysfs_root'] = str(tmp_path)
    with pytest.raises(AssertionError, match='configfs is not mounted or rdma_cm is not loaded'):
        module_rdma_settings.read_items(dcb, module_rdma_settings.Runner(dcb, 'dcb', None), dict(ENTRY), SETTINGS)


@pytest.mark.parametrize('flags, before', [('0x1003', 'up'), ('0x1002', 'down'), ('junk', None)])
def test_ipoib_down_item(flags, before):
    item = config_rdma_settings.ipoib_down_item('/sys', 'mlx5_0', 'ibp24s0', flags)
    assert item['before'] == before and item['after'] == 'down'
    assert config_rdma_settings.differs(item) == (before != 'down')


def test_boot_script_sets_the_same_values(tmp_path):
    _tree(tmp_path)      # configfs populates ports/ on mkdir; a plain tree has them already
    ib = tmp_path / 'class' / 'infiniband' / 'mlx5_0' / 'device' / 'net'
    for name, kind in (('ibp24s0', '32'), ('eth9', '1')):
        (ib / name).mkdir(parents=True)
        (ib / name / 'type').write_text(kind + '\n')
        (ib / name / 'flags').write_text('0x1003\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'dcb.log'
    (bin_dir / 'dcb').write_text('#!/bin/sh\necho "$*" >> %s\n' % log)
    os.chmod(str(bin_dir / 'dcb'), 0o755)
    script = tmp_path / 'apply'
    script.write_text(config_rdma_settings.boot_script(str(tmp_path), [ENTRY], SETTINGS, ['mlx5_0'], False, '# test'))
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']))
    # the script goes on after a failure and exits 1: a port whose rdma_cm group is missing is reported
    subprocess.check_call(['sh', str(script)], env=env)
    ecn = tmp_path / 'class' / 'net' / 'enp1s0f0np0' / 'ecn'
    assert (ecn / 'roce_np' / 'enable' / '3').read_text() == '1\n'
    assert (ecn / 'roce_np' / 'cnp_dscp').read_text() == '48\n'
    assert (tmp_path / 'kernel/config/rdma_cm/rocep1s0f0/ports/1/default_roce_tos').read_text() == '106\n'
    assert log.read_text().splitlines() == ['pfc set dev enp1s0f0np0 prio-pfc all:off 3:on',
                                            'app replace dev enp1s0f0np0 dscp-prio 26:3 48:6']
    assert (ib / 'ibp24s0' / 'flags').read_text() == '0x1002\n'
    assert (ib / 'eth9' / 'flags').read_text() == '0x1003\n'


def test_a_refused_dcb_command_fails_with_its_words(tmp_path, dcb, monkeypatch):
    _tree(tmp_path)

    def refuse_set(argv):
        if argv[1:3] == ['pfc', 'set']:
            return 1, '', 'Error: Operation not supported\n'
        return dcb.answer(argv)
    answer_commands(monkeypatch, refuse_set)
    with pytest.raises(AssertionError) as failed:
        _pass(tmp_path, dcb)
    assert failed.value.args[0] == {'msg': 'dcb pfc set dev enp1s0f0np0 prio-pfc all:off 3:on exited 1: '
                                           'Error: Operation not supported'}
