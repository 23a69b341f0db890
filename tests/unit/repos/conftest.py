# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stand-ins of NVIDIA's rhel9 and rhel10 repositories (tests/repo/build_rhel_repo.py), each built once per
test session and shared by the driver, DCGM and NCCL tests; no test writes into them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

import build_rhel_repo  # tests/repo


@pytest.fixture(scope='session')
def rhel_repo(tmp_path_factory):
    """``rhel_repo('9')`` or ``rhel_repo('10')``: the path of that release's stand-in, built on first use."""
    built = {}

    def get(release):
        if release not in built:
            out = tmp_path_factory.mktemp('rhel%s-repo' % release) / 'repo'
            built[release] = build_rhel_repo.build(str(out), rhel=release)
        return built[release]
    return get
