# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Installing the simulator into a node tree, and the live gatherer against it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

from simhelpers import REPO, profile_path

from simulator import bundle
from simulator import install_node

from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live

INSTALLER = os.path.join(REPO, 'simulator', 'install_node.py')


def _install(root, *args):
    done = subprocess.run([sys.executable, INSTALLER, '--root', str(root), '--python', sys.executable] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.decode('utf-8'))


def _runner(root):
    env = dict(os.environ, GPUOPS_SIM_ROOT=str(root))

    def run_command(argv):
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        return done.returncode, done.stdout.decode('utf-8'), done.stderr.decode('utf-8')
    return run_command


def test_install_layout_and_idempotence(tmp_path):
    root = tmp_path / 'node'
    summary = _install(root, '--profile', 'h100-sxm-8gpu-ib')
    assert summary['changed'] is True and summary['profile_name'] == 'h100-sxm-8gpu-ib' and summary['faults'] == []
    smi = root / 'usr' / 'bin' / 'nvidia-smi'
    assert os.access(str(smi), os.X_OK)
    with open(str(smi), 'rb') as handle:
        assert handle.readline() == ('#!%s\n' % sys.executable).encode('utf-8')
    assert os.access(str(root / 'usr' / 'local' / 'sbin' / 'gpuops-sim'), os.X_OK)
    assert bundle.read_tree(str(root / 'usr' / 'share' / 'gpuops-sim' / 'profile')) == bundle.read_profile(
        profile_path('h100-sxm-8gpu-ib'))
    assert os.readlink(str(root / 'usr' / 'share' / 'gpuops-sim' / 'sys' / 'class' / 'infiniband' / 'mlx5_0' /
                           'device')) == '../../../bus/pci/devices/0000:18:00.0'
    assert os.path.isdir(str(root / 'usr' / 'share' / 'gpuops-sim' / 'sys' / 'class' / 'infiniband' / 'mlx5_11'))
    assert os.path.isdir(str(root / 'var' / 'lib' / 'gpuops-sim'))
    # state survives a re-run that changes nothing, and is reset by one that changes the node
    run = _runner(root)
    assert run([str(smi), '-pm', '0', '-i', '0'])[0] == 0
    assert _install(root, '--profile', 'h100-sxm-8gpu-ib')['changed'] is False
    assert run([str(smi), '--query-gpu=persistence_mode', '--format=csv,noheader', '-i', '0'])[1] == 'Disabled\n'
    summary = _install(root, '--profile', 'h100-sxm-8gpu-ib', '--fault', 'ecc_uncorrectable:gpu=2')
    assert summary['changed'] is True and summary['faults'] == ['ecc_uncorrectable']
    assert run([str(smi), '--query-gpu=persistence_mode', '--format=csv,noheader', '-i', '0'])[1] == 'Enabled\n'
    assert run([str(root / 'usr' / 'local' / 'sbin' / 'gpuops-sim'), 'state'])[0] == 0


def test_live_gather_on_installed_node_equals_bundle_gather(tmp_path):
    """The modules' live path (commands + sysfs_root) sees what the bundle path sees."""
    for name, faults in (('h100-sxm-8gpu-ib', ['nvlink_down:gpu=5', 'ib_port_down:nic=mlx5_2']),
                         ('pcie-4gpu-roce', ['pcie_downtrained'])):
        root = tmp_path / name
        args = ['--profile', name]
        for fault in faults:
            args += ['--fault', fault]
        summary = _install(root, *args)
        live = gather_live(_runner(root), summary['nvidia_smi'], summary['sysfs_root'], dcb=summary['dcb'])
        offline = gather_bundle(summary['profile'])
        # the same facts; only the outputs' sources differ (commands on the node, files in the bundle)
        assert [o['source'] for o in live['outputs'].values()] == [
            'nvidia-smi -q -x', 'nvidia-smi topo -m', 'nvidia-smi nvlink -s']
        assert live['warnings'] == []
        assert [o['source'] for o in offline['outputs'].values()] == [
            'nvidia-smi-q-x.xml', 'nvidia-smi-topo-m.txt', 'nvidia-smi-nvlink-s.txt']
        for facts in (live, offline):
            for output in facts['outputs'].values():
                del output['source']
            # DCGM is not installed: the reason names where dcgmi was looked for (the node, or the bundle)
            assert facts['dcgm']['health'] is None and 'dcgmi' in facts['dcgm'].pop('unreadable')
        # Secure Boot is read on the node only (a bundle's sys tree holds no firmware); the simulator has none
        assert live.pop('secure_boot')['state'] == 'not_efi' and offline.pop('secure_boot') is None
        assert live == offline
        assert live['errors'] == [] and live['driver_loaded'] is True


def test_live_gather_driver_not_loaded(tmp_path):
    root = tmp_path / 'n'
    summary = _install(root, '--profile', 'a100-sxm-8gpu-ib', '--fault', 'driver_not_loaded')
    live = gather_live(_runner(root), summary['nvidia_smi'], summary['sysfs_root'])
    assert live['driver_loaded'] is False and live['driver_error']['kind'] == 'driver_not_loaded'
    assert live['driver_error']['rc'] == 9


def test_install_from_a_copy_of_the_directory(tmp_path):
    """The simulator directory copied under another name (as ansible.builtin.copy does) installs the same."""
    copy = tmp_path / 'copied-sim'
    shutil.copytree(os.path.join(REPO, 'simulator'), str(copy), ignore=shutil.ignore_patterns('__pycache__'))
    root = tmp_path / 'node'
    done = subprocess.run([sys.executable, str(copy / 'install_node.py'), '--root', str(root), '--profile',
                           'a100-sxm-8gpu-ib'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert done.returncode == 0, done.stderr
    installed = root / 'usr' / 'share' / 'gpuops-sim'
    assert bundle.read_tree(str(installed / 'profile')) == bundle.read_profile(profile_path('a100-sxm-8gpu-ib'))
    assert os.readlink(str(installed / 'sys' / 'class' / 'infiniband' / 'mlx5_0' / 'device')) == \
        '../../../bus/pci/devices/0000:0c:00.0'


def test_uninstall_and_errors(tmp_path, capsys):
    root = tmp_path / 'n'
    _install(root, '--profile', 'pcie-4gpu-roce')
    assert install_node.main(['--uninstall', '--root', str(root)]) == 0
    assert not (root / 'usr' / 'bin' / 'nvidia-smi').exists()
    assert not (root / 'usr' / 'share' / 'gpuops-sim' / 'profile').exists()
    assert install_node.main(['--root', str(root), '--profile', 'pcie-4gpu-roce', '--fault', 'nvlink_down']) == 1
    assert 'no NVLink' in capsys.readouterr().err


# ---------------------------------------------------------------- --bare

def test_bare_install_writes_no_nvidia_smi(tmp_path):
    root = tmp_path / 'bare'
    summary = _install(root, '--profile', 'h100-sxm-8gpu-ib', '--bare')
    assert summary['changed'] is True and summary['bare'] is True and 'nvidia_smi' not in summary
    assert not os.path.lexists(str(root / 'usr' / 'bin' / 'nvidia-smi'))
    assert os.access(str(root / 'usr' / 'local' / 'sbin' / 'gpuops-sim'), os.X_OK)
    with open(str(root / 'usr' / 'share' / 'gpuops-sim' / 'profile' / 'sim' / 'runtime.json')) as handle:
        assert json.load(handle)['driver'] == 'emulated'
    assert summary['proc_root'] == str(root / 'run' / 'gpuops-sim' / 'proc')
    assert summary['boot']['loaded'] is False and not os.path.exists(summary['driver_json'])
    # not the node's own root: the diversions are only planned, with the exact commands
    assert [(d['argv'], d['ran']) for d in summary['diversions']] == [
        (['dpkg-divert', '--no-rename', '--divert', path + '.distrib', '--add', path], False) for path in (
            '/usr/lib/nvidia/current/nvidia-smi', '/usr/bin/nvidia-smi', '/usr/bin/nvidia-persistenced',
            '/usr/bin/nv-fabricmanager')]
    with open(str(root / 'etc' / 'dpkg' / 'dpkg.cfg.d' / 'gpuops-sim')) as handle:
        assert 'post-invoke=if [ -x /usr/local/sbin/gpuops-sim ]; then /usr/local/sbin/gpuops-sim sync' in handle.read()
    with open(str(root / 'etc' / 'apt' / 'apt.conf.d' / '80gpuops-sim')) as handle:
        assert 'DPkg::Post-Invoke {' in handle.read()
    unit = root / 'etc' / 'systemd' / 'system' / 'gpuops-sim-driver.service'
    with open(str(unit)) as handle:
        text = handle.read()
    assert 'Before=sysinit.target shutdown.target nvidia-persistenced.service nvidia-fabricmanager.service' in text
    assert 'ExecStart=/usr/local/sbin/gpuops-sim boot' in text and 'WantedBy=sysinit.target' in text
    assert os.readlink(str(root / 'etc/systemd/system/sysinit.target.wants/gpuops-sim-driver.service')) == \
        '../gpuops-sim-driver.service'
    assert _install(root, '--profile', 'h100-sxm-8gpu-ib', '--bare')['changed'] is False
    # back to a replayed node: the bare parts go, nvidia-smi comes back
    summary = _install(root, '--profile', 'h100-sxm-8gpu-ib')
    assert summary['changed'] is True and os.access(summary['nvidia_smi'], os.X_OK) and not unit.exists()
    assert not (root / 'etc' / 'dpkg' / 'dpkg.cfg.d' / 'gpuops-sim').exists()
    _install(root, '--profile', 'h100-sxm-8gpu-ib', '--bare')
    assert not os.path.lexists(str(root / 'usr' / 'bin' / 'nvidia-smi'))
    assert install_node.main(['--uninstall', '--root', str(root)]) == 0
    left = sorted(os.path.join(d, f)[len(str(root)):] for d, _dirs, files in os.walk(str(root)) for f in files)
    assert left == []


def test_dpkg_divert_failure_is_reported(tmp_path, monkeypatch, capsys):
    """On the node itself a failing dpkg-divert stops the install with its exit status and message."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'dpkg-divert').write_text('#!/bin/sh\ncase "$1" in --truename) echo "$2";; '
                                        '*) echo "dpkg-divert: error: cannot divert" >&2; exit 2;; esac\n')
    (bindir / 'dpkg-divert').chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (bindir, os.environ['PATH']))
    monkeypatch.setattr(install_node, 'live', lambda root: True)
    monkeypatch.setattr(os.path, 'isdir', lambda path, _isdir=os.path.isdir: False if path == '/run/systemd/system'
                        else _isdir(path))
    assert install_node.main(['--root', str(tmp_path / 'n'), '--profile', 'pcie-4gpu-roce', '--bare']) == 1
    err = capsys.readouterr().err
    assert ('dpkg-divert --no-rename --divert /usr/lib/nvidia/current/nvidia-smi.distrib --add '
            '/usr/lib/nvidia/current/nvidia-smi failed (exit status 2): dpkg-divert: error: cannot divert') in err
