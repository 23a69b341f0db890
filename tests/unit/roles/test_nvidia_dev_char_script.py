# -*- coding: utf-8 -*-
"""gpuops.node.nvidia_driver's files/gpuops-nvidia-dev-char, run as the boot unit and the role run it (/bin/sh,
dash on Debian and Ubuntu) on a device directory of real character devices. What it cannot prove: that runc and
systemd then keep a running container's GPUs through a daemon-reload (NVIDIA/nvidia-docker#1730 is that report)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import stat
import subprocess

import pytest

from role_files import path

SCRIPT = path('nvidia_driver', 'files', 'gpuops-nvidia-dev-char')

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='mknod of a character device needs root')


def run(*args):
    proc = subprocess.run(['/bin/sh', SCRIPT] + list(args), capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def node(dev, name, major, minor):
    target = os.path.join(str(dev), name)
    if not os.path.isdir(os.path.dirname(target)):
        os.makedirs(os.path.dirname(target))
    os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


def links(dev):
    char = os.path.join(str(dev), 'char')
    if not os.path.isdir(char):
        return {}
    return dict((name, os.readlink(os.path.join(char, name))) for name in os.listdir(char)
                if os.path.islink(os.path.join(char, name)))


@pytest.fixture
def dev(tmp_path):
    # the nodes and numbers of a real node's nvidia-ctk log (Azure/aks-gpu#106): 195:254/255, 509:0/1, caps on 234
    for name, major, minor in (('nvidia0', 195, 0), ('nvidia1', 195, 1), ('nvidiactl', 195, 255),
                               ('nvidia-modeset', 195, 254), ('nvidia-uvm', 509, 0), ('nvidia-uvm-tools', 509, 1),
                               ('nvidia-caps/nvidia-cap1', 234, 1), ('nvidia-caps/nvidia-cap2', 234, 2)):
        node(tmp_path, name, major, minor)
    os.mknod(str(tmp_path / 'null'), 0o666 | stat.S_IFCHR, os.makedev(1, 3))   # not NVIDIA's: no link
    (tmp_path / 'nvidia-fake').write_text('a regular file is no device node\n')
    return tmp_path


EXPECTED = {'195:0': '../nvidia0', '195:1': '../nvidia1', '195:255': '../nvidiactl', '195:254': '../nvidia-modeset',
            '509:0': '../nvidia-uvm', '509:1': '../nvidia-uvm-tools', '234:1': '../nvidia-caps/nvidia-cap1',
            '234:2': '../nvidia-caps/nvidia-cap2'}


@needs_root
def test_check_prints_the_links_and_makes_none(dev):
    rc, out, err = run('--check', '--dev', str(dev))
    assert (rc, err) == (0, '')
    assert sorted(out) == sorted('%s/char/%s -> %s' % (dev, k, v) for k, v in EXPECTED.items())
    assert links(dev) == {}


@needs_root
def test_makes_every_link_then_has_nothing_to_do(dev):
    rc, out, _err = run('--dev', str(dev), '--require')
    assert rc == 0 and len(out) == len(EXPECTED)
    assert links(dev) == EXPECTED
    assert all(os.path.samefile(os.path.join(str(dev), 'char', k), os.path.join(str(dev), v[3:]))
               for k, v in EXPECTED.items())
    assert run('--dev', str(dev), '--require') == (0, [], '')


@needs_root
def test_keeps_a_link_that_leads_to_the_node_and_replaces_a_stale_one(dev):
    os.makedirs(str(dev / 'char'))
    os.symlink(str(dev / 'nvidia0'), str(dev / 'char' / '195:0'))       # udev's kind: absolute
    os.symlink('../nvidia7', str(dev / 'char' / '195:1'))               # left from another boot
    rc, out, _err = run('--dev', str(dev))
    assert rc == 0 and '%s/char/195:0 -> ../nvidia0' % dev not in out and '%s/char/195:1 -> ../nvidia1' % dev in out
    assert links(dev)['195:0'] == str(dev / 'nvidia0') and links(dev)['195:1'] == '../nvidia1'


@needs_root
def test_leaves_a_path_that_is_no_link_alone_and_fails(dev):
    os.makedirs(str(dev / 'char'))
    (dev / 'char' / '195:255').write_text('not a link\n')
    rc, _out, err = run('--dev', str(dev))
    assert rc == 2 and 'char/195:255 is not a link; left alone' in err
    assert (dev / 'char' / '195:255').read_text() == 'not a link\n'
    assert links(dev)['195:0'] == '../nvidia0'                          # the others are made


def test_require_fails_without_the_driver_nodes_and_nothing_is_fine_without_it(tmp_path):
    rc, out, err = run('--dev', str(tmp_path), '--require')
    assert (rc, out) == (3, []) and 'nvidiactl is not a character device' in err
    assert run('--dev', str(tmp_path)) == (0, [], '')
    assert not os.path.exists(str(tmp_path / 'char'))


@pytest.mark.parametrize('args', [['--dev'], ['--bogus']])
def test_usage_errors(args):
    rc, out, err = run(*args)
    assert rc == 64 and out == [] and err.startswith('gpuops-nvidia-dev-char: ')


@pytest.mark.skipif(shutil.which('shellcheck') is None, reason='shellcheck is not installed (make host installs it)')
def test_shellcheck_posix_sh():
    proc = subprocess.run(['shellcheck', '-s', 'sh', SCRIPT], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
