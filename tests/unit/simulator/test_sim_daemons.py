# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvidia-persistenced and nv-fabricmanager stand-ins: their decisions, without forking."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from drivertools import FakeDpkg, bare_node

from simulator import nvidia_smi
from simulator import sim_daemons
from simulator import sim_driver


class Log(object):
    def __init__(self):
        self.lines = []

    def __call__(self, _priority, message):
        self.lines.append(message)


def _persistence(root):
    out = nvidia_smi.run(['--query-gpu=persistence_mode', '--format=csv,noheader'], {'GPUOPS_SIM_ROOT': root}).out
    return sorted(set(out.split()))


def _boot(root, version='535.261.03-1'):
    dpkg = FakeDpkg().nvml('libnvidia-ml1', version)
    sim_driver.boot(root, query=dpkg)
    return dpkg


def test_parse_persistenced_options():
    opts = sim_daemons.parse_persistenced(['--user', 'nvpd', '-V', '--no-persistence-mode'])
    assert (opts['user'], opts['verbose'], opts['mode'], opts['action']) == ('nvpd', True, 'Disabled', 'run')
    assert sim_daemons.parse_persistenced(['--user=nvpd', '--persistence-mode'])['user'] == 'nvpd'
    assert sim_daemons.parse_persistenced(['-v'])['action'] == 'version'
    with pytest.raises(sim_daemons.Usage):
        sim_daemons.parse_persistenced(['--bogus'])
    with pytest.raises(sim_daemons.Usage):
        sim_daemons.parse_persistenced(['--user'])


def test_persistenced_fails_without_a_loaded_module(tmp_path, monkeypatch):
    root, _summary = bare_node(tmp_path, monkeypatch=monkeypatch)
    log = Log()
    ok, handle = sim_daemons.persistenced_start(root, sim_daemons.parse_persistenced(['--user', 'root']), log, pid=77)
    assert (ok, handle) == (False, None)
    assert log.lines == ['Started (77)', sim_daemons.PD_NO_DEVICES % 0, 'Shutdown (77)']
    assert not os.path.exists(os.path.join(root, sim_daemons.PD_PID_FILE))


def test_persistenced_enables_persistence_until_stopped(tmp_path, monkeypatch):
    root, _summary = bare_node(tmp_path, monkeypatch=monkeypatch)
    dpkg = _boot(root)
    os.environ['GPUOPS_SIM_DPKG_QUERY'] = dpkg.script(str(tmp_path / 'dpkg-query'))
    assert _persistence(root) == ['Disabled']
    log = Log()
    ok, handle = sim_daemons.persistenced_start(root, sim_daemons.parse_persistenced(['--verbose']), log, pid=88)
    assert ok is True and _persistence(root) == ['Enabled']
    with open(os.path.join(root, sim_daemons.PD_PID_FILE)) as pid_file:
        assert pid_file.read() == '88\n'
    assert log.lines[:2] == ['Verbose syslog connection opened', 'Started (88)']
    assert 'device 0000:19:00.0 - persistence mode enabled.' in log.lines
    second = Log()               # another instance finds the PID file locked
    assert sim_daemons.persistenced_start(root, sim_daemons.parse_persistenced([]), second, pid=99) == (False, None)
    assert second.lines[0].startswith('Failed to lock PID file: ')
    sim_daemons.persistenced_stop(root, log, handle, pid=88, verbose=True)
    assert _persistence(root) == ['Disabled']
    assert log.lines[-3:] == ['PID file unlocked.', 'PID file closed.', 'Shutdown (88)']
    assert not os.path.exists(os.path.join(root, sim_daemons.PD_PID_FILE))
    ok, handle = sim_daemons.persistenced_start(root, sim_daemons.parse_persistenced(['--no-persistence-mode']), Log(), pid=89)
    assert ok is True and _persistence(root) == ['Disabled']
    sim_daemons.persistenced_stop(root, Log(), handle)


def test_fabricmanager_checks(tmp_path, monkeypatch):
    root, _summary = bare_node(tmp_path, 'h100-sxm-8gpu-ib', monkeypatch=monkeypatch)
    assert sim_daemons.nvswitches(root) == ['0000:05:00.0', '0000:06:00.0', '0000:07:00.0', '0000:08:00.0']
    dpkg = FakeDpkg().nvml('libnvidia-ml1', '535.261.03-1')
    assert sim_daemons.fabricmanager_check(root, dpkg) == sim_daemons.FM_NO_DRIVER
    _boot(root)
    assert sim_daemons.fabricmanager_check(root, dpkg) is None            # not installed from a package: no version to check
    dpkg.packages['nvidia-fabricmanager-535'] = '535.230.02-1'
    dpkg.owners['/usr/bin/nv-fabricmanager'] = 'nvidia-fabricmanager-535'
    assert sim_daemons.fabricmanager_check(root, dpkg) == (
        "fabric manager NVIDIA GPU driver interface version 535.230.02 don't match with driver version "
        "535.261.03. Please update with matching NVIDIA driver package.")
    dpkg.packages['nvidia-fabricmanager-535'] = '535.261.03-1'
    assert sim_daemons.fabricmanager_check(root, dpkg) is None
    log = Log()
    ok, handle = sim_daemons.fabricmanager_start(root, log, pid=55)
    assert ok and log.lines == list(sim_daemons.FM_STARTED)
    sim_daemons.fabricmanager_stop(root, handle)
    assert not os.path.exists(os.path.join(root, sim_daemons.FM_PID_FILE))


def test_fabricmanager_without_nvswitches(tmp_path, monkeypatch):
    root, _summary = bare_node(tmp_path, 'pcie-4gpu-roce', monkeypatch=monkeypatch)
    _boot(root)
    assert sim_daemons.nvswitches(root) == []
    assert sim_daemons.fabricmanager_check(root, FakeDpkg()) == sim_daemons.FM_NO_NVSWITCH
