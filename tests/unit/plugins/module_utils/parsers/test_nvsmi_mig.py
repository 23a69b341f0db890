# -*- coding: utf-8 -*-
"""nvsmi_mig: the MIG tables and messages of nvidia-smi, on every real capture in mig/ and on the simulator's
renderings of the same tables."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers import nvsmi_mig as parsers_nvsmi_mig
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from real_captures import real_text
from transforms import damage_line, truncate_after_line, with_bom
from repo_paths import REPO

ROOT = REPO

from simulator import nvidia_smi  # noqa: E402

H100_LGIP = [
    # name, id, free, total, memory_gib, sm, dec, enc, ce, jpeg, ofa
    ('1g.10gb', 19, 7, 7, 9.75, 16, 1, 0, 1, 1, 0),
    ('1g.10gb+me', 20, 1, 1, 9.75, 16, 1, 0, 1, 1, 1),
    ('1g.20gb', 15, 4, 4, 19.62, 26, 1, 0, 1, 1, 0),
    ('2g.20gb', 14, 3, 3, 19.62, 32, 2, 0, 2, 2, 0),
    ('3g.40gb', 9, 2, 2, 39.5, 60, 3, 0, 3, 3, 0),
    ('4g.40gb', 5, 1, 1, 39.5, 64, 4, 0, 4, 4, 0),
    ('7g.80gb', 0, 1, 1, 79.25, 132, 7, 0, 8, 7, 1),
]


def _rows(table):
    return [(r['name'], r['id'], r['free'], r['total'], r['memory_gib'], r['sm'], r['dec'], r['enc'], r['ce'],
             r['jpeg'], r['ofa']) for r in table]


def test_lgip_h100_80gb():
    rows = parsers_nvsmi_mig.parse_lgip(real_text('mig/h100-80gb-lgip.txt'))
    assert _rows(rows) == H100_LGIP
    assert set(r['gpu'] for r in rows) == set([0])
    assert set(r['p2p'] for r in rows) == set(['No'])


def test_lgip_gh200_narrower_table():
    rows = parsers_nvsmi_mig.parse_lgip(real_text('mig/gh200-96gb-lgip.txt'))
    assert [(r['name'], r['id'], r['total'], r['memory_gib']) for r in rows] == [
        ('1g.12gb', 19, 7, 11.0), ('1g.12gb+me', 20, 1, 11.0), ('1g.24gb', 15, 4, 23.0), ('2g.24gb', 14, 3, 23.0),
        ('3g.48gb', 9, 2, 46.5), ('4g.48gb', 5, 1, 46.5), ('7g.96gb', 0, 1, 93.0)]
    assert rows[-1]['sm'] == 132 and rows[-1]['ce'] == 8


def test_lgip_h100_pcie():
    rows = parsers_nvsmi_mig.parse_lgip(real_text('mig/h100-pcie-scaleway-mig-lgip.txt'))
    assert [r['sm'] for r in rows] == [14, 14, 14, 30, 46, 62, 114]
    assert [r['name'] for r in rows] == [r[0] for r in H100_LGIP]


def test_lgip_with_bom():
    assert len(parsers_nvsmi_mig.parse_lgip(with_bom(real_text('mig/h100-80gb-lgip.txt')))) == 7


def test_lgip_cut_short_is_an_error():
    text = truncate_after_line(real_text('mig/h100-80gb-lgip.txt'), 6)
    with pytest.raises(ParseError) as err:
        parsers_nvsmi_mig.parse_lgip(text)
    assert 'cut short' in str(err.value)


def test_lgip_header_only_is_an_error():
    text = truncate_after_line(real_text('mig/h100-80gb-lgip.txt'), 4)
    with pytest.raises(ParseError):
        parsers_nvsmi_mig.parse_lgip(text)


def test_lgi_h100_two_instances_in_printed_order():
    assert parsers_nvsmi_mig.parse_lgi(real_text('mig/h100-80gb-lgi-2gi.txt')) == [
        {'gpu': 0, 'name': '2g.20gb', 'profile_id': 14, 'id': 3, 'start': 0, 'size': 2},
        {'gpu': 0, 'name': '3g.40gb', 'profile_id': 9, 'id': 2, 'start': 4, 'size': 4},
    ]


def test_lci_h100_two_compute_instances():
    assert parsers_nvsmi_mig.parse_lci(real_text('mig/h100-80gb-lci-2ci.txt')) == [
        {'gpu': 0, 'gi': 3, 'name': '2g.20gb', 'profile_id': 1, 'id': 0, 'start': 0, 'size': 2},
        {'gpu': 0, 'gi': 2, 'name': '3g.40gb', 'profile_id': 2, 'id': 0, 'start': 0, 'size': 4},
    ]


@pytest.mark.parametrize('parser,rel', [
    (parsers_nvsmi_mig.parse_lgi, 'mig/h100-80gb-lgip.txt'),
    (parsers_nvsmi_mig.parse_lci, 'mig/h100-80gb-lgi-2gi.txt'),
    (parsers_nvsmi_mig.parse_lgip, 'mig/h100-80gb-lci-2ci.txt'),
    (parsers_nvsmi_mig.parse_lgi, 'mig/h100-pcie-scaleway-nvsmi-table-7x1g10gb.txt'),
    (parsers_nvsmi_mig.parse_lgi, 'mig/h100-pcie-nvsmi-L-7x1g10gb.txt'),
    (parsers_nvsmi_mig.parse_lgi, 'mig/gh200-cgi-15x3-C-success.txt'),
    (parsers_nvsmi_mig.parse_lci, 'mig/gh200-cgi-C-ERROR-insufficient-resources.txt'),
])
def test_other_outputs_are_not_read_as_tables(parser, rel):
    with pytest.raises(ParseError):
        parser(real_text(rel))


@pytest.mark.parametrize('parser', [parsers_nvsmi_mig.parse_lgip, parsers_nvsmi_mig.parse_lgi, parsers_nvsmi_mig.parse_lci])
def test_empty_and_not_found_texts_are_parse_errors(parser):
    for text in ('', None, 'No GPU instances found: Not Found\n'):
        with pytest.raises(ParseError):
            parser(text)


@pytest.mark.parametrize('rc,text,expected', [
    (6, 'No GPU instances found: Not Found\n', True),
    (6, 'No compute instances found: Not Found\n', True),
    (6, 'No MIG-enabled devices found.\n', True),
    (0, 'No GPU instances found: Not Found\n', True),
    (6, 'No MIG-supported devices found.\n', False),
    (9, 'No GPU instances found: Not Found\n', False),
    (6, '', False),
    (0, None, False),
])
def test_empty_answer(rc, text, expected):
    assert parsers_nvsmi_mig.empty_answer(rc, text) is expected


def test_empty_answer_not_for_a_table():
    assert parsers_nvsmi_mig.empty_answer(0, real_text('mig/h100-80gb-lgi-2gi.txt')) is False


# --- the simulator prints the same tables --------------------------------------------------------------------

def _sim_table():
    path = os.path.join(ROOT, 'simulator', 'profiles', 'h100-sxm-8gpu-ib', 'sim', 'mig-profiles.json')
    with open(path) as handle:
        return json.load(handle)['NVIDIA H100 80GB HBM3']['profiles']


def test_simulated_lgip_reads_like_the_real_one():
    profiles = _sim_table()
    text = nvidia_smi.render_lgip([(gpu, prof, prof['total']) for gpu in (0, 7) for prof in profiles])
    rows = parsers_nvsmi_mig.parse_lgip(text)
    assert _rows([r for r in rows if r['gpu'] == 0]) == H100_LGIP
    assert _rows([r for r in rows if r['gpu'] == 7]) == H100_LGIP


def test_simulated_lgi_and_lci():
    profiles = dict((p['name'], p) for p in _sim_table())
    gis = [(2, {'id': 1, 'start': 0, 'size': 4}, profiles['3g.40gb']),
           (2, {'id': 13, 'start': 6, 'size': 1}, profiles['1g.10gb']),
           (11, {'id': 5, 'start': 4, 'size': 2}, profiles['1g.20gb'])]
    assert parsers_nvsmi_mig.parse_lgi(nvidia_smi.render_lgi(gis)) == [
        {'gpu': 2, 'name': '3g.40gb', 'profile_id': 9, 'id': 1, 'start': 0, 'size': 4},
        {'gpu': 2, 'name': '1g.10gb', 'profile_id': 19, 'id': 13, 'start': 6, 'size': 1},
        {'gpu': 11, 'name': '1g.20gb', 'profile_id': 15, 'id': 5, 'start': 4, 'size': 2},
    ]
    cis = [(gpu, gi, {'id': 0, 'profile_id': prof['ci_profile_id'], 'start': 0, 'size': prof['ci_placement_size']},
            prof) for gpu, gi, prof in gis]
    assert parsers_nvsmi_mig.parse_lci(nvidia_smi.render_lci(cis)) == [
        {'gpu': 2, 'gi': 1, 'name': '3g.40gb', 'profile_id': 2, 'id': 0, 'start': 0, 'size': 4},
        {'gpu': 2, 'gi': 13, 'name': '1g.10gb', 'profile_id': 0, 'id': 0, 'start': 0, 'size': 1},
        {'gpu': 11, 'gi': 5, 'name': '1g.20gb', 'profile_id': 7, 'id': 0, 'start': 0, 'size': 1},
    ]
    assert parsers_nvsmi_mig.instances_by_gpu(parsers_nvsmi_mig.parse_lgi(nvidia_smi.render_lgi(gis))) == {2: {'3g.40gb': 1, '1g.10gb': 1},
                                                                                                           11: {'1g.20gb': 1}}


# --- mode changes ---------------------------------------------------------------------------------------------

def test_mode_change_enabled_with_persistence_warning():
    assert parsers_nvsmi_mig.parse_mode_change(real_text('mig/gh200-mig-1-enabled-with-persistence-disabled-warning.txt')) == [
        {'bus_id': '00000009:01:00.0', 'result': 'enabled', 'message': 'Enabled MIG Mode for GPU 00000009:01:00.0'}]


def test_mode_change_pending_in_use():
    result = parsers_nvsmi_mig.parse_mode_change(real_text('mig/mig-1-WARN-pending-in-use-by-another-client-0B.txt'))
    assert [(r['bus_id'], r['result']) for r in result] == [('00000000:0B:00.0', 'pending')]
    assert result[0]['message'].endswith(':In use by another client')


@pytest.mark.parametrize('rel,bus', [
    ('mig/mig-1-WARN-pending-not-supported-esxi-TERMINAL-WRAPPED.txt', '00000000:0F:00.0'),
    ('mig/mig-1-WARN-pending-not-supported-vm-passthrough-DOCEXAMPLE.txt', '00000000:00:03.0'),
])
def test_mode_change_pending_not_supported_in_a_vm(rel, bus):
    result = parsers_nvsmi_mig.parse_mode_change(real_text(rel))
    assert [(r['bus_id'], r['result']) for r in result] == [(bus, 'pending')]
    assert result[0]['message'].startswith('Warning: MIG mode is in pending enable state')


@pytest.mark.parametrize('text,expected', [
    ('Disabled MIG Mode for GPU 00000000:1B:00.0\nAll done.\n', [('00000000:1B:00.0', 'disabled')]),
    ('Unable to enable MIG Mode for GPU 00000000:61:00.0: Not Supported\nTreating as warning and moving on.\n'
     'All done.\n', [('00000000:61:00.0', 'not_supported')]),
    ('Unable to disable MIG Mode for GPU 00000000:1B:00.0: In use by another client\n'
     'Terminating early due to previous errors.\n', [('00000000:1B:00.0', 'error')]),
    ('Unable to enable MIG Mode for GPU 00000000:1B:00.0: Insufficient Permissions\n'
     'Terminating early due to previous errors.\n', [('00000000:1B:00.0', 'error')]),
    ('All done.\n', []),
])
def test_mode_change_simulator_texts(text, expected):
    assert [(r['bus_id'], r['result']) for r in parsers_nvsmi_mig.parse_mode_change(text)] == expected


# --- create and destroy ---------------------------------------------------------------------------------------

def test_cgi_with_default_compute_instances():
    text = real_text('mig/gh200-cgi-15x3-C-success.txt')
    assert parsers_nvsmi_mig.mig_errors(text) == []
    result = parsers_nvsmi_mig.parse_results(text)
    assert [(r['kind'], r['gi']) for r in result] == [
        ('gpu_instance', 5), ('compute_instance', 5), ('gpu_instance', 3), ('compute_instance', 3),
        ('gpu_instance', 4), ('compute_instance', 4)]
    assert result[0] == {'action': 'created', 'kind': 'gpu_instance', 'gi': 5, 'gpu': 0, 'name': '1g.24gb',
                         'profile_id': 15}
    assert result[1] == {'action': 'created', 'kind': 'compute_instance', 'ci': 0, 'gpu': 0, 'gi': 5,
                         'name': '1g.24gb', 'profile_id': 7}


def test_cgi_without_compute_instances_and_cci():
    assert [(r['gi'], r['name'], r['profile_id']) for r in
            parsers_nvsmi_mig.parse_results(real_text('mig/h100-80gb-cgi-9-14-no-C.txt'))] == [(2, '3g.40gb', 9), (3, '2g.20gb', 14)]
    assert [(r['kind'], r['gi'], r['ci']) for r in
            parsers_nvsmi_mig.parse_results(real_text('mig/h100-80gb-cci-gi2-and-gi3.txt'))] == [
        ('compute_instance', 2, 0), ('compute_instance', 3, 0)]


@pytest.mark.parametrize('rel,reason', [
    ('mig/gh200-cgi-C-ERROR-insufficient-resources.txt', 'Insufficient Resources'),
    ('mig/gh200-cgi-C-ERROR-in-use-by-another-client.txt', 'In use by another client'),
])
def test_cgi_errors_verbatim(rel, reason):
    text = real_text(rel)
    assert parsers_nvsmi_mig.mig_errors(text) == text.splitlines()
    assert all(line.endswith(reason) for line in parsers_nvsmi_mig.mig_errors(text))
    assert parsers_nvsmi_mig.parse_results(text) == []


def test_destroy_lines_of_the_simulator():
    text = ('Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  7\n'
            'Successfully destroyed GPU instance ID  7 from GPU  0\n'
            'Unable to destroy GPU instance ID  8 from GPU  0: In use by another client\n'
            'Failed to destroy GPU instances: In use by another client\n')
    assert parsers_nvsmi_mig.parse_results(text) == [
        {'action': 'destroyed', 'kind': 'compute_instance', 'ci': 0, 'gpu': 0, 'gi': 7},
        {'action': 'destroyed', 'kind': 'gpu_instance', 'gi': 7, 'gpu': 0}]
    assert parsers_nvsmi_mig.mig_errors(text) == text.splitlines()[2:]


@pytest.mark.parametrize('name,expected', [('MIG 1g.10gb', '1g.10gb'), ('1g.10gb+me', '1g.10gb+me'),
                                           (' mig 7g.80gb ', '7g.80gb'), (None, '')])
def test_profile_name(name, expected):
    assert parsers_nvsmi_mig.profile_name(name) == expected


@pytest.mark.parametrize('parser,rel,line_no', [
    (parsers_nvsmi_mig.parse_lgi, 'mig/h100-80gb-lgi-2gi.txt', 5),
    (parsers_nvsmi_mig.parse_lgi, 'mig/h100-80gb-lgi-2gi.txt', 6),
    (parsers_nvsmi_mig.parse_lci, 'mig/h100-80gb-lci-2ci.txt', 7),
    (parsers_nvsmi_mig.parse_lgip, 'mig/h100-80gb-lgip.txt', 5),
    (parsers_nvsmi_mig.parse_lgip, 'mig/h100-80gb-lgip.txt', 7),
])
def test_tables_cut_short_are_errors(parser, rel, line_no):
    """Cut after the header rule, or after a row before its border line: never fewer rows."""
    with pytest.raises(ParseError):
        parser(truncate_after_line(real_text(rel), line_no))


def test_damaged_row_names_the_line():
    with pytest.raises(ParseError) as err:
        parsers_nvsmi_mig.parse_lgi(damage_line(real_text('mig/h100-80gb-lgi-2gi.txt'), 8, '|   0  MIG 3g.40gb   9   2   4-4 |'))
    assert err.value.line_no == 8
