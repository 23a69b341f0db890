# -*- coding: utf-8 -*-
"""write_atomic: the whole file or nothing, the mode given or the old file's kept."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic


class Module(object):
    """What write_atomic uses of AnsibleModule: atomic_move (a rename, keeping an existing file's mode)."""

    def atomic_move(self, src, dest):
        if os.path.exists(dest):
            os.chmod(src, stat.S_IMODE(os.stat(dest).st_mode))
        os.rename(src, dest)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize('data', ['text é\n', b'bytes\n'])
def test_a_new_file_in_a_new_directory(tmp_path, data):
    path = str(tmp_path / 'a' / 'b' / 'file')
    write_atomic(Module(), path, data, 0o644)
    with open(path, 'rb') as handle:
        assert handle.read() == (data if isinstance(data, bytes) else data.encode('utf-8'))
    assert mode(path) == 0o644 and os.listdir(str(tmp_path / 'a' / 'b')) == ['file']


def test_the_mode_given_or_the_old_one(tmp_path):
    path = str(tmp_path / 'script')
    write_atomic(Module(), path, '#!/bin/sh\n', 0o755)
    assert mode(path) == 0o755
    os.chmod(path, 0o700)
    write_atomic(Module(), path, '#!/bin/sh\ntrue\n')
    assert mode(path) == 0o700


def test_a_failed_move_leaves_no_temporary_file(tmp_path):
    class Failing(Module):
        def atomic_move(self, src, dest):
            raise OSError('no room')
    with pytest.raises(OSError):
        write_atomic(Failing(), str(tmp_path / 'file'), 'x')
    assert os.listdir(str(tmp_path)) == []
