# -*- coding: utf-8 -*-
"""``apt-cache show NAME=VERSION ...`` as apt 2.6 prints it: real outputs of Debian's own NVIDIA driver packages
(tests/fixtures/real/apt), and faults derived from them by a documented transform. What this cannot prove: the
stanzas of NVIDIA's own repositories, which no public capture shows byte-exact; they are written by the same
apt-ftparchive and read by the same apt."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.apt_show import parse_relations, parse_show
from real_captures import real_text
from transforms import damage_line

SHOW = 'apt/debian12-535-open-1-apt-cache-show.txt'
V = '535.261.03-1'


def by_name(stanzas):
    return dict((s['package'], s) for s in stanzas)


def test_every_stanza_of_the_driver_set_in_the_order_printed():
    stanzas = parse_show(real_text(SHOW))
    assert [s['package'] for s in stanzas] == ['nvidia-open-kernel-dkms', 'nvidia-open-kernel-support',
                                               'firmware-nvidia-gsp', 'nvidia-smi', 'libnvidia-ml1', 'libcuda1']
    assert set(s['version'] for s in stanzas) == {V}


def test_exact_version_relations_and_alternatives():
    found = by_name(parse_show(real_text(SHOW)))
    smi = found['nvidia-smi']['depends']
    assert smi[0] == [{'name': 'nvidia-alternative', 'op': '=', 'version': V}]
    assert smi[2] == [{'name': 'libc6', 'op': '>=', 'version': '2.34'}]
    dkms = found['nvidia-open-kernel-dkms']
    # "firmware-nvidia-gsp (= 535.261.03) | firmware-nvidia-gsp-535.261.03": a versioned name or a virtual one
    assert dkms['depends'][0] == [{'name': 'firmware-nvidia-gsp', 'op': '=', 'version': '535.261.03'},
                                  {'name': 'firmware-nvidia-gsp-535.261.03', 'op': None, 'version': None}]
    assert dkms['pre_depends'] == [[{'name': 'nvidia-installer-cleanup', 'op': None, 'version': None}]]
    assert {'name': 'nvidia-open-kernel-dkms-any', 'op': '=', 'version': '535.261.03'} in [
        alt for group in dkms['provides'] for alt in group]
    # a field without relations: empty lists; the long Provides of libcuda1 read whole
    assert found['firmware-nvidia-gsp']['depends'] == [] and found['firmware-nvidia-gsp']['pre_depends'] == []
    assert len(found['libcuda1']['provides']) == 27
    assert found['libcuda1']['fields']['Filename'].endswith('libcuda1_535.261.03-1_amd64.deb')


def test_nothing_printed_is_no_stanza():
    # apt-cache show NAME=VERSION of a version apt does not know prints nothing (and exits 0)
    assert parse_show('') == []


def test_relations_with_architecture_qualifiers_and_profiles():
    assert parse_relations('python3:any (>= 3.9~), libfoo [amd64] <!nocheck>') == [
        [{'name': 'python3', 'op': '>=', 'version': '3.9~'}], [{'name': 'libfoo', 'op': None, 'version': None}]]


# Faults derived from the real output (transforms.damage_line): each is refused naming its line.
@pytest.mark.parametrize('line_no, replacement, words', [
    (1, ' continued: nothing to continue', 'continuation line outside a field'),
    (9, 'Depends nvidia-alternative', 'not a "Field: value" line'),
    (8, 'Depends: nvidia-alternative (= )', 'not a package relation in Depends'),
])
def test_damaged_lines_are_refused(line_no, replacement, words):
    with pytest.raises(ParseError) as info:
        parse_show(damage_line(real_text(SHOW), line_no, replacement))
    assert words in str(info.value)


def test_a_stanza_without_a_version_is_refused():
    text = damage_line(real_text(SHOW), 3, 'Installed-Size: 1')  # line 3 is the first stanza's Version
    with pytest.raises(ParseError) as info:
        parse_show(text)
    assert 'without Package and Version' in str(info.value)
