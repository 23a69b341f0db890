# -*- coding: utf-8 -*-
"""The RHEL module stream the nvidia_driver plan enables, decided on real ``dnf module list`` outputs.

The real captures show the 550 branch's streams and the virtual ones (latest, latest-dkms, open-dkms) with their
default and enabled markers; the 580 rows are the same rows of the same generator, derived from them by renaming
the branch (``_as_branch``). tests/unit/repos/test_rhel_repo.py runs the same decisions against a real dnf."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers.dnf_module import parse_module_list
from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging as P
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import PlanError, choose_stream
from real_captures import real_text
from transforms import command_output

FEDORA = 'dnf/fedora39-cuda-module-list-latest-dkms-enabled.txt'
RHEL8 = 'dnf/rhel810-cuda-module-list-latest-enabled.txt'
REQUEST = {'family': 'RedHat', 'source': 'cuda_repo', 'branch': '580'}


def _as_branch(text, branch):
    """The 550 rows of a capture as the same generator writes them for ``branch``."""
    return text.replace('550', branch)


def rows(name, branch=None):
    text = command_output(real_text(name), 'dnf module list nvidia-driver')
    return parse_module_list(_as_branch(text, branch) if branch else text, 'nvidia-driver')


def test_the_table_names_a_stream_per_flavour():
    row = P.driver_row('RedHat', 'mirror', 580)
    assert P.module_stream(row, 'open', '580') == ('nvidia-driver', '580-open')
    assert P.module_stream(row, 'proprietary', '595') == ('nvidia-driver', '595-dkms')
    assert P.module_stream(P.driver_row('Debian', 'cuda_repo', 580), 'open', '580') is None


@pytest.mark.parametrize('flavour, stream', [('open', '580-open'), ('proprietary', '580-dkms')])
def test_another_enabled_stream_is_reset_first(flavour, stream):
    # Fedora 39: latest-dkms enabled (and its default profile installed)
    assert choose_stream(REQUEST, flavour, '580', rows(FEDORA, '580')) == {
        'module': 'nvidia-driver', 'stream': stream, 'enabled': 'latest-dkms', 'change': 'switch'}


def test_nothing_enabled_is_enabled():
    found = [dict(r, enabled=False) for r in rows(FEDORA, '580')]
    assert choose_stream(REQUEST, 'open', '580', found)['change'] == 'enable'


def test_the_enabled_stream_of_the_branch_changes_nothing():
    found = [dict(r, enabled=r['stream'] == '580-open') for r in rows(FEDORA, '580')]
    assert choose_stream(REQUEST, 'open', '580', found) == {
        'module': 'nvidia-driver', 'stream': '580-open', 'enabled': '580-open', 'change': 'none'}


def test_a_disabled_module_is_reset():
    found = [dict(r, enabled=False, disabled=True) for r in rows(FEDORA, '580')]
    assert choose_stream(REQUEST, 'open', '580', found)['change'] == 'switch'


def test_a_branch_without_its_stream_is_refused_naming_the_variable():
    # RHEL 8.10, August 2024: only the virtual streams in the capture
    with pytest.raises(PlanError) as refused:
        choose_stream(REQUEST, 'open', '580', rows(RHEL8))
    assert refused.value.variable == 'nvidia_driver_branch'
    assert 'no stream 580-open' in str(refused.value) and 'latest, latest-dkms, open-dkms' in str(refused.value)


def test_no_module_is_nothing_to_enable():
    assert choose_stream(REQUEST, 'open', '580', []) is None
    assert choose_stream(REQUEST, 'open', '580', None) is None
