# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dcb stand-in: iproute2 6.1's answers (real captures where the real tool gives them without DCB hardware),
the mlx5 driver's PFC and APP semantics, its state, and the real dcb for everything else."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat
import subprocess
import sys

import pytest

from drivertools import FakeDpkg, write
from simhelpers import REAL, profile_path

from simulator import install_node
from simulator import sim_dcb
from simulator import sim_rdma

DEV = 'enp1s0f0np0'
# /etc/iproute2/rt_dsfield of Debian 12's iproute2 6.1.0-3 (the names dcb prints without -N)
RT_DSFIELD = ('# Differentiated field values\n# These include the DSCP and unused bits\n0x0\tdefault\n'
              '# Newer RFC2597 values\n0x28\tAF11\n0x30\tAF12\n0x38\tAF13\n0x48\tAF21\n0x50\tAF22\n0x58\tAF23\n'
              '0x68\tAF31\n0x70\tAF32\n0x78\tAF33\n0x88\tAF41\n0x90\tAF42\n0x98\tAF43\n# Older values RFC2474\n'
              '0x20\tCS1\n0x40\tCS2\n0x60\tCS3\n0x80\tCS4\n0xA0\tCS5\n0xC0\tCS6\n0xE0\tCS7\n# RFC 2598\n0xB8\tEF\n')
PFC_OFF = 'pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n'


@pytest.fixture
def node(tmp_path, monkeypatch):
    monkeypatch.delenv('GPUOPS_SIM_PROFILE', raising=False)
    root = str(tmp_path / 'node')
    install_node.install(profile_path('pcie-4gpu-roce'), root, python=sys.executable)
    names = write(tmp_path, 'rt_dsfield', RT_DSFIELD)
    env = {'GPUOPS_SIM_ROOT': root, 'GPUOPS_SIM_RT_DSFIELD': names}

    def dcb(*argv):
        return sim_dcb.run(list(argv), env)
    dcb.root, dcb.env = root, env
    return dcb


def real(name):
    with open(os.path.join(REAL, 'dcb', 'debian12-iproute2-6.1-%s.txt' % name)) as handle:
        return handle.read()


# ---------------------------------------------------------------- real captures (parsed before any kernel access)

@pytest.mark.parametrize('capture,args,rc', [
    ('app-add-dscp-64-lo-ERROR', 'app add dev lo dscp-prio 64:3', 1),
    ('app-add-dscp-prio-8-lo-ERROR', 'app add dev lo dscp-prio 26:8', 1),
    ('app-add-dscp-unknown-name-lo-ERROR', 'app add dev lo dscp-prio XX:3', 1),
    ('app-add-dscp-non-dscp-bits-lo-ERROR', 'app add dev lo dscp-prio 1a:3', 1),
    ('app-add-dscp-incomplete-lo-ERROR', 'app add dev lo dscp-prio', 255),
    ('app-add-ethtype-reserved-lo-ERROR', 'app add dev lo ethtype-prio 0x100:3', 1),
    ('app-add-default-prio-then-dscp-lo-ERROR', 'app add dev lo default-prio 3 dscp-prio 1:1', 1),
    ('app-add-port-0-lo-ERROR', 'app add dev lo port-prio 0:3', 1),
    ('app-del-dscp-without-colon-lo-ERROR', 'app del dev lo dscp-prio 26', 1),
    ('app-add-no-mapping-lo-usage', 'app add dev lo', 0),
    ('pfc-set-no-setting-lo-usage', 'pfc set dev lo', 0),
])
def test_argument_errors_are_the_real_tools(node, capture, args, rc):
    assert node(*args.replace(' lo', ' ' + DEV).split()) == (rc, '', real(capture))
    assert node('-N', 'app', 'show', 'dev', DEV) == (0, '', '')          # nothing was applied


def test_a_netdev_without_dcb(node):
    sim_rdma.boot(node.root, FakeDpkg({'rdma-core': '44.0-2'}))                 # no IPoIB netdev on a RoCE node
    tmp = os.path.join(node.root, sim_rdma.SYSFS, 'class/net/ibp1s0')
    os.makedirs(tmp)
    write(tmp, 'type', '32\n')
    assert node('-j', 'pfc', 'show', 'dev', 'ibp1s0') == (1, real('json-pfc-show-lo-ERROR'),
                                                          'Attribute read: Operation not supported\n')
    assert node('app', 'add', 'dev', 'ibp1s0', 'dscp-prio', '26:3') == (
        1, '', 'Attribute write: Operation not supported\n')


# ---------------------------------------------------------------- pfc

def test_pfc_show_and_set(node):
    assert node('pfc', 'show', 'dev', DEV) == (0, PFC_OFF, '')
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc', 'all:off', '3:on') == (0, '', '')
    assert node('pfc', 'show', 'dev', DEV, 'prio-pfc') == (0, 'prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off '
                                                              '7:off \n', '')
    assert node('pfc', 'sh', 'd', DEV, 'pfc-cap', 'del') == (0, 'pfc-cap 8 \ndelay 7 \n', '')     # prefixes
    assert node('-j', 'pfc', 'show', 'dev', DEV)[1] == (
        '{"pfc_cap":8,"macsec_bypass":false,"delay":7,"prio_pfc":[false,false,false,true,false,false,false,false]}\n')
    assert node('-j', '-p', 'pfc', 'show', 'dev', DEV)[1] == (
        '{\n    "pfc_cap": 8,\n    "macsec_bypass": false,\n    "delay": 7,\n'
        '    "prio_pfc": [ false,false,false,true,false,false,false,false ]\n}\n')
    stats = node('-s', 'pfc', 'show', 'dev', DEV)[1].splitlines()
    assert stats[2:] == ['requests 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 ', 'indications 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 ']
    # 4:on 4:off: the last mapping wins; all: the whole map; on/off by prefix
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc', '4:on', '4:of', 'a:o', '6:on') == (0, '', '')
    assert node('pfc', 'show', 'dev', DEV, 'prio-pfc')[1] == (
        'prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:off \n')
    # mlx5: the delay is the cable length (kept below 1000), MACsec bypass is not kept
    assert node('pfc', 'set', 'dev', DEV, 'delay', '0x10', 'macsec-bypass', 'on') == (0, '', '')
    assert node('pfc', 'show', 'dev', DEV)[1].splitlines()[0] == 'pfc-cap 8 macsec-bypass off delay 16 '
    assert node('pfc', 'set', 'dev', DEV, 'delay', '4096') == (0, '', '')
    assert node('pfc', 'show', 'dev', DEV, 'delay')[1] == 'delay 16 \n'


def test_pfc_errors(node):
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc', '8:on') == (
        1, '', 'In PRIO:PFC mapping, PRIO is expected to be 0..7\nInvalid pfc mapping 8\n')
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc', '3:maybe') == (
        1, '', 'Error: argument of "PFC" must be one of "off", "on", not "maybe"\nInvalid pfc mapping 3\n')
    assert node('pfc', 'set', 'dev', DEV, 'delay', '70000') == (
        1, '', "Invalid delay `70000', expected an integer 0..65535\n")
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc') == (255, '', 'Command line is not complete. Try option "help"\n')
    rc, out, err = node('pfc', 'set', 'dev', DEV, 'bogus')
    assert (rc, out) == (1, '') and err.startswith('What is "bogus"?\nUsage: dcb pfc set dev STRING\n')
    rc, out, err = node('pfc', 'show', 'dev', DEV, 'bogus')
    assert (rc, out) == (1, '') and err.startswith('What is "bogus"?\nUsage: dcb [ -s ] pfc show dev STRING\n')
    assert node('pfc', 'show', 'dev', DEV) == (0, PFC_OFF, '')          # nothing applied


# ---------------------------------------------------------------- app

def test_app_dscp_table(node):
    assert node('app', 'show', 'dev', DEV) == (0, '', '') and node('-j', 'app', 'show', 'dev', DEV) == (0, '{}\n', '')
    assert node('app', 'add', 'dev', DEV, 'dscp-prio', '48:6', 'AF31:3', '0:0', 'CS4:4') == (0, '', '')
    assert node('-N', 'app', 'show', 'dev', DEV, 'dscp-prio') == (0, 'dscp-prio 0:0 26:3 32:4 48:6 \n', '')
    # names as iproute2 prints them; DSCP 0 is looked up before the names are read, so it stays "0"
    assert node('app', 'show', 'dev', DEV) == (0, 'dscp-prio 0:0 AF31:3 CS4:4 CS6:6 \n', '')
    assert node('-j', 'app', 'show', 'dev', DEV, 'dscp-prio')[1] == '{"dscp_prio":[[0,0],[26,3],[32,4],[48,6]]}\n'
    assert node('-j', '-p', 'app', 'show', 'dev', DEV)[1] == (
        '{\n    "dscp_prio": [ [ 0,0 ],[ 26,3 ],[ 32,4 ],[ 48,6 ] ]\n}\n')
    assert node('app', 'show', 'dev', DEV, 'ethtype-prio', 'default-prio') == (0, '', '')
    # mlx5: one priority per DSCP (an add replaces), only DSCP entries, a delete must match
    assert node('app', 'add', 'dev', DEV, 'dscp-prio', '26:5') == (0, '', '')
    assert node('-N', 'app', 'show', 'dev', DEV, 'dscp-prio')[1] == 'dscp-prio 0:0 26:5 32:4 48:6 \n'
    assert node('app', 'add', 'dev', DEV, 'ethtype-prio', '0x8906:3') == (1, '', 'Attribute write: Invalid argument\n')
    assert node('app', 'del', 'dev', DEV, 'dscp-prio', '26:3') == (
        1, '', 'Attribute write: No such file or directory\n')
    assert node('app', 'del', 'dev', DEV, 'dscp-prio', '0:0', '32:4') == (0, '', '')
    assert node('app', 'flush', 'dev', DEV, 'dscp-prio') == (0, '', '')
    assert node('app', 'show', 'dev', DEV) == (0, '', '')
    assert node('app', 'add', 'dev', DEV, 'dscp-prio', 'all:1') == (0, '', '')
    assert node('-N', 'app', 'show', 'dev', DEV)[1] == 'dscp-prio %s \n' % ' '.join('%d:1' % d for d in range(64))
    assert node('app', 'flush', 'dev', DEV) == (0, '', '')
    with open(os.path.join(node.root, sim_rdma.DCB_STATE)) as handle:
        assert json.load(handle)[DEV] == dict(sim_rdma.PFC_DEFAULTS, app=[])


def test_app_replace_on_mlx5(node):
    """iproute2 6.1 replace: adds the new entries, then deletes the replaced ones; mlx5 already replaced them on
    the add, so the delete fails and dcb says so, yet exits 0 (dcb_cmd_app_replace returns 0)."""
    assert node('app', 'replace', 'dev', DEV, 'dscp-prio', '26:3', '48:6') == (0, '', '')
    assert node('app', 'replace', 'dev', DEV, 'dscp-prio', '26:3') == (0, '', '')
    assert node('app', 'replace', 'dev', DEV, 'dscp-prio', '26:4') == (
        0, '', 'Attribute write: No such file or directory\nCould not remove replaced APP entries\n')
    assert node('-N', 'app', 'show', 'dev', DEV, 'dscp-prio')[1] == 'dscp-prio 26:4 48:6 \n'
    assert node('app', 'replace', 'dev', DEV, 'dscp-prio', '64:3') == (
        0, '', 'In DSCP:PRIO mapping, DSCP is expected to be 0..63\nInvalid mapping 64\n')


def test_writes_need_root(node, monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    assert node('pfc', 'set', 'dev', DEV, 'prio-pfc', '3:on') == (1, '', 'Attribute write: Operation not permitted\n')
    assert node('pfc', 'show', 'dev', DEV) == (0, PFC_OFF, '')
    assert sim_dcb.run(['app', 'add', 'dev', DEV, 'dscp-prio', '26:3'], dict(node.env, GPUOPS_SIM_ALLOW_NONROOT='1'))[0] == 0


def test_not_simulated_objects(node):
    assert node('ets', 'show', 'dev', DEV) == (
        2, '', 'gpuops-sim: dcb ets is not simulated by gpuops-sim (pfc and app are).\n')


@pytest.mark.parametrize('argv', [['pfc', 'show', 'dev', 'eth0'], ['-V'], ['pfc'], ['app', 'help'],
                                  ['pfc', 'show'], ['pfc', 'show', 'dev'], ['-b', 'file'], ['bogus'],
                                  ['pfc', 'show', 'dev', 'x' * 16], ['pfc', 'show', DEV]])
def test_anything_else_is_the_real_dcb(node, argv):
    with pytest.raises(sim_dcb.Passthrough):
        node(*argv)


# ---------------------------------------------------------------- the installed command

def test_installed_stand_in_keeps_state_across_runs_and_execs_the_real_dcb(node, tmp_path):
    fake = write(tmp_path, 'real-dcb', '#!/bin/sh\necho "real dcb: $*"\n')
    os.chmod(fake, stat.S_IRWXU)
    env = dict(os.environ, GPUOPS_SIM_REAL_DCB=fake, **node.env)
    dcb = os.path.join(node.root, 'usr/local/sbin/dcb')

    def run(*argv, **extra):
        done = subprocess.run([dcb] + list(argv), env=dict(env, **extra), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    assert run('pfc', 'set', 'dev', DEV, 'prio-pfc', '3:on') == (0, '', '')
    assert run('-N', 'app', 'replace', 'dev', DEV, 'dscp-prio', '26:3') == (0, '', '')
    assert run('pfc', 'show', 'dev', DEV, 'prio-pfc')[1] == 'prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n'
    assert run('-N', 'app', 'show', 'dev', DEV, 'dscp-prio')[1] == 'dscp-prio 26:3 \n'
    assert run('pfc', 'show', 'dev', 'eth0') == (0, 'real dcb: pfc show dev eth0\n', '')
    assert run('-V') == (0, 'real dcb: -V\n', '')
    assert run('-V', GPUOPS_SIM_REAL_DCB=str(tmp_path / 'none')) == (
        127, '', 'gpuops-sim: dcb: %s is not installed (iproute2)\n' % (tmp_path / 'none'))
    sim_rdma.boot(node.root, FakeDpkg())                                          # a reboot
    assert run('pfc', 'show', 'dev', DEV) == (0, PFC_OFF, '')
    assert run('-N', 'app', 'show', 'dev', DEV, 'dscp-prio') == (0, '', '')


def test_iproute2_number_parsing():
    assert [sim_dcb.strtoul(a, 255) for a in ('0', '010', '0x1a', '26', '+5', ' 7')] == [0, 8, 26, 26, 5, 7]
    assert [sim_dcb.strtoul(a, 255) for a in ('-1', '0x', '1a', '08', '256', '')] == [None] * 6
    assert sim_dcb.strtoul('1a', 255, 16) == 26
