# -*- coding: utf-8 -*-
"""``dnf module list nvidia-driver`` as DNF 4 prints it against NVIDIA's modular repositories: real pasted outputs
(tests/fixtures/real/dnf), each read as the command's output (the author's prompt lines dropped by
transforms.command_output). What this cannot prove: the rows of the 580 and later branches, which no public
capture shows whole; they are the same generator's rows (NVIDIA/cuda-repo-management genmodules.py)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.dnf_module import parse_module_list
from real_captures import real_text
from transforms import command_output, damage_line

COMMAND = 'dnf module list nvidia-driver'


def rows(name, occurrence=-1):
    return parse_module_list(command_output(real_text('dnf/' + name), COMMAND, occurrence), 'nvidia-driver')


def streams(parsed, flag=None):
    return [r['stream'] for r in parsed if flag is None or r[flag]]


def test_fedora39_whole_table_with_default_enabled_and_installed_markers():
    parsed = rows('fedora39-cuda-module-list-latest-dkms-enabled.txt')
    assert streams(parsed) == ['latest', 'latest-dkms', 'open-dkms', '550', '550-dkms', '550-open']
    assert streams(parsed, 'default') == ['latest-dkms'] and streams(parsed, 'enabled') == ['latest-dkms']
    dkms = parsed[1]
    assert dkms['profiles'] == ['default', 'fm', 'ks'] and dkms['default_profiles'] == ['default']
    assert dkms['installed_profiles'] == ['default']
    assert dkms['summary'] == 'Nvidia driver for latest-dkms branch'
    assert set(r['repo'] for r in parsed) == {'cuda-fedora39-x86_64'}
    assert parsed[5]['profiles'] == ['default', 'fm', 'ks', 'src'] and parsed[5]['installed_profiles'] == []


def test_rhel8_subscription_manager_line_and_an_enabled_stream_that_is_not_the_default():
    parsed = rows('rhel810-cuda-module-list-latest-enabled.txt')
    assert streams(parsed) == ['latest', 'latest-dkms', 'open-dkms']
    assert streams(parsed, 'enabled') == ['latest'] and streams(parsed, 'default') == ['open-dkms']
    assert parsed[0]['repo'] == 'cuda-rhel8-x86_64'


@pytest.mark.parametrize('name, last, default, enabled', [
    # cut by the search excerpt inside a row: the stream is still read
    ('rhel9-cuda-module-list-TRUNCATED.txt', '520-dkms', ['open-dkms'], []),
    # the default stream auto-enabled ([d][e]); no repository line (a blank line in its place)
    ('rocky94-cuda-module-list-open-dkms-enabled-TRUNCATED.txt', 'open-dkms', ['open-dkms'], ['open-dkms']),
    # the preview repository's precompiled, signed open streams (-open-gpu)
    ('rhel9-cuda-preview-module-list-open-gpu-TRUNCATED.txt', '570', ['open-dkms'], []),
])
def test_cut_tables(name, last, default, enabled):
    parsed = rows(name)
    assert parsed[-1]['stream'] == last
    assert streams(parsed, 'default') == default and streams(parsed, 'enabled') == enabled


def test_the_preview_repository_has_open_gpu_streams():
    assert 'latest-open-gpu' in streams(rows('rhel9-cuda-preview-module-list-open-gpu-TRUNCATED.txt'))


def test_no_repository_with_the_module_is_no_row():
    # the first run, before NVIDIA's repository was added
    assert rows('rhel8-cuda-no-module-then-module-list-ELIDED-TRUNCATED.txt', occurrence=0) == []


def test_an_elided_table_is_refused():
    # the author replaced rows with "...": not a row DNF prints
    with pytest.raises(ParseError) as failed:
        rows('rhel8-cuda-no-module-then-module-list-ELIDED-TRUNCATED.txt')
    assert "'...'" in str(failed.value) and 'line 4' in str(failed.value)


def test_a_row_outside_a_table_is_refused():
    text = command_output(real_text('dnf/fedora39-cuda-module-list-latest-dkms-enabled.txt'), COMMAND)
    # the header damaged: the rows under it are no table's
    with pytest.raises(ParseError) as failed:
        parse_module_list(damage_line(text, 3, 'Stream Name Summary'), 'nvidia-driver')
    assert 'line 3' in str(failed.value)


def test_other_modules_are_left_out():
    text = command_output(real_text('dnf/fedora39-cuda-module-list-latest-dkms-enabled.txt'), COMMAND)
    assert parse_module_list(text, 'nvidia-fabricmanager') == []
    assert len(parse_module_list(text)) == 6
