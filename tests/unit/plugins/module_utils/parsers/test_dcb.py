# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.parsers import dcb
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from real_captures import real_text
from transforms import damage_line, truncate_after_line, with_bom

ALL_OFF = dict((p, False) for p in range(8))
# the example in iproute2's dcb-pfc(8) (6.1): `dcb pfc show dev eth0`
MAN_PFC = 'pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:on\n'
NETARBITER = 'dcb/mlnx_qos-i-eth4-mlx5-trust-dscp-pfc3-netarbiter.txt'


def pfc_on(*prios):
    return dict((p, p in prios) for p in range(8))


@pytest.mark.parametrize('text, expected', [
    (MAN_PFC, {'pfc_cap': 8, 'macsec_bypass': False, 'delay': 4096,
               'prio_pfc': pfc_on(6, 7)}),
    # dcb_pfc.c prints every field followed by a space
    ('pfc-cap 8 macsec-bypass on delay 0 \nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n',
     {'pfc_cap': 8, 'macsec_bypass': True, 'delay': 0, 'prio_pfc': pfc_on(3)}),
    # `dcb pfc show dev X prio-pfc` prints one line
    ('prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n',
     {'pfc_cap': None, 'macsec_bypass': None, 'delay': None, 'prio_pfc': pfc_on(3)}),
])
def test_parse_pfc(text, expected):
    assert dcb.parse_pfc(text) == expected
    assert dcb.parse_pfc(with_bom(text)) == expected


def test_parse_pfc_with_statistics():
    text = MAN_PFC + 'requests 0:0 1:0 2:0 3:12 4:0 5:0 6:0 7:0\nindications 0:0 1:0 2:0 3:7 4:0 5:0 6:0 7:0\n'
    parsed = dcb.parse_pfc(text)
    assert parsed['requests'][3] == 12 and parsed['indications'][3] == 7


@pytest.mark.parametrize('text, line_no', [
    ('', None),
    (truncate_after_line(MAN_PFC, 1, keep_chars=30), 2),
    (damage_line(MAN_PFC, 2, 'prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 6:on'), 2),
    (damage_line(MAN_PFC, 1, 'pfc-cap 8 macsec-bypass maybe delay 4096'), 1),
    (damage_line(MAN_PFC, 1, 'pfc-cap eight'), 1),
    (damage_line(MAN_PFC, 1, 'willing on'), 1),
    (real_text('dcb/debian12-iproute2-6.1-pfc-show-lo-ERROR.txt'), 1),
    (real_text('dcb/debian12-iproute2-6.1-pfc-show-nonexistent-dev-ERROR.txt'), 1),
])
def test_parse_pfc_rejects(text, line_no):
    with pytest.raises(ParseError) as err:
        dcb.parse_pfc(text)
    assert err.value.line_no == line_no


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    ('\n', {}),
    # dcb-app(8) examples
    ('dscp-prio 0:0 24:2 24:3 48:6\n', {0: [0], 24: [2, 3], 48: [6]}),
    ('dscp-prio 0:0 24:4 48:6 \n', {0: [0], 24: [4], 48: [6]}),
])
def test_parse_app_dscp(text, expected):
    assert dcb.parse_app_dscp(text) == expected


@pytest.mark.parametrize('text', [
    'dscp-prio 0:0 CS3:2 CS3:3 CS6:6\n',     # without -N: symbolic names
    'dscp-prio 64:0\n',
    'dscp-prio 24:8\n',
    'ethtype-prio 0x8906:3\n',
    real_text('dcb/debian12-iproute2-6.1-app-show-dscp-prio-lo-ERROR.txt'),
])
def test_parse_app_dscp_rejects(text):
    with pytest.raises(ParseError):
        dcb.parse_app_dscp(text)


@pytest.mark.parametrize('parsed, expected', [
    (None, None),
    ({'prio_pfc': None}, None),
    ({'prio_pfc': pfc_on(6, 3)}, [3, 6]),
    ({'pfc': dict(ALL_OFF)}, []),
])
def test_pfc_priorities(parsed, expected):
    assert dcb.pfc_priorities(parsed) == expected


@pytest.mark.parametrize('prios, expected', [
    ([3], ['prio-pfc', 'all:off', '3:on']),
    ([], ['prio-pfc', 'all:off']),
    ((6, 3, 3), ['prio-pfc', 'all:off', '3:on', '6:on']),
])
def test_pfc_set_args(prios, expected):
    assert dcb.pfc_set_args(prios) == expected


@pytest.mark.parametrize('mapping, expected', [
    ({26: 3, 48: 6}, ['dscp-prio', '26:3', '48:6']),
    ({48: 6, 0: 0, 24: [2, 3]}, ['dscp-prio', '0:0', '24:2', '24:3', '48:6']),
])
def test_app_replace_args(mapping, expected):
    assert dcb.app_replace_args(mapping) == expected


def test_args_round_trip_through_the_parsers():
    mapping = {26: [3], 48: [6]}
    assert dcb.parse_app_dscp(' '.join(dcb.app_replace_args(mapping))) == mapping


@pytest.mark.parametrize('call', [
    lambda: dcb.pfc_set_args([8]),
    lambda: dcb.pfc_set_args([True]),
    lambda: dcb.pfc_set_args(['x']),
    lambda: dcb.app_replace_args({}),
    lambda: dcb.app_replace_args({64: 1}),
    lambda: dcb.app_replace_args({26: 9}),
])
def test_args_refuse_bad_values(call):
    with pytest.raises(ValueError):
        call()


def test_mlnx_qos_ofed4_trust_dscp():
    parsed = dcb.parse_mlnx_qos(real_text(NETARBITER))
    assert parsed['trust'] == 'dscp'
    assert parsed['dcbx_mode'] == 'OS controlled'
    assert parsed['cable_len'] == 7
    assert dcb.pfc_priorities(parsed) == [3]
    assert parsed['dscp2prio'][26] == 3 and parsed['dscp2prio'][48] == 6 and len(parsed['dscp2prio']) == 64
    assert parsed['buffer'] is None and parsed['buffer_size'] is None and parsed['default_prio'] is None
    assert parsed['tc'][0] == {'ratelimit': 'unlimited', 'tsa': 'vendor', 'bw': None, 'priorities': [1]}
    assert sorted(parsed['tc']) == list(range(8))


@pytest.mark.parametrize('transform, line_no', [
    (lambda t: truncate_after_line(t, 14), None),       # cut before the PFC "enabled" row
    (lambda t: damage_line(t, 7, '        prio:2 dscp:23,22,21,20,19,18,17,16,'), 7),
    (lambda t: damage_line(t, 2, 'Priority trust state: vlan'), 2),
    (lambda t: damage_line(t, 15, '        enabled     0   0   0   1   0   0   0'), 15),
    (lambda t: damage_line(t, 1, 'unexpected banner'), 1),
])
def test_mlnx_qos_rejects_damage(transform, line_no):
    with pytest.raises(ParseError) as err:
        dcb.parse_mlnx_qos(transform(real_text(NETARBITER)))
    assert err.value.line_no == line_no


def test_mlnx_qos_rejects_dcb_output():
    with pytest.raises(ParseError):
        dcb.parse_mlnx_qos(MAN_PFC)


def test_mlnx_qos_trust_pcp_with_buffer_row():
    parsed = dcb.parse_mlnx_qos(real_text('dcb/mlnx_qos-i-ens6-mlx5-trust-pcp-buffer-row.txt'))
    assert parsed['trust'] == 'pcp'
    assert parsed['dscp2prio'] is None and parsed['default_prio'] is None
    assert dcb.pfc_priorities(parsed) == []
    assert parsed['buffer'] == dict((p, 0) for p in range(8))
    assert parsed['buffer_size'] == [524160, 0, 0, 0, 0, 0, 0, 0] and parsed['buffer_max_size'] is None


def test_mlnx_qos_ofed23_connectx7():
    parsed = dcb.parse_mlnx_qos(real_text('dcb/mlnx_qos-i-ens4np0-cx7-ofed23.10-trust-dscp-pfc5-max-buffer-size.txt'))
    assert parsed['trust'] == 'dscp'
    assert dcb.pfc_priorities(parsed) == [5]
    assert parsed['default_prio'] == []
    assert parsed['dscp2prio'][40] == 5 and parsed['dscp2prio'][48] == 6 and len(parsed['dscp2prio']) == 64
    assert parsed['buffer'][5] == 1 and parsed['buffer_max_size'] == 4151520
    assert parsed['buffer_size'][:2] == [19872, 220896]
    assert parsed['cable_len'] == 30
    assert parsed['tc'][2] == {'ratelimit': 'unlimited', 'tsa': 'ets', 'bw': 80, 'priorities': [2]}
    assert parsed['tc'][7]['tsa'] == 'strict' and parsed['tc'][7]['bw'] is None


def test_mlnx_qos_without_trust_state_is_not_guessed():
    text = real_text('dcb/mlnx_qos-i-ens6-mlx5-trust-pcp-buffer-row.txt')
    with pytest.raises(ParseError):
        dcb.parse_mlnx_qos('\n'.join(l for l in text.split('\n') if not l.startswith('Priority trust')))


@pytest.mark.parametrize('rel, expected', [
    ('dcb/dcb-pfc-show-ens6-connectx3-mlx4-pfc3-crlf.txt', [3]),
    ('dcb/dcb-pfc-show-ens6-connectx3-mlx4-all-off-crlf.txt', []),
])
def test_real_dcb_pfc_show(rel, expected):
    parsed = dcb.parse_pfc(real_text(rel))
    assert dcb.pfc_priorities(parsed) == expected
    assert (parsed['pfc_cap'], parsed['macsec_bypass'], parsed['delay']) == (8, False, 0)


def test_real_dcb_app_show_without_numeric_flag_is_refused():
    with pytest.raises(ParseError) as err:
        dcb.parse_app_dscp(real_text('dcb/dcb-app-show-ens6-connectx3-mlx4-symbolic-AF31-crlf.txt'))
    assert 'AF31:3' in str(err.value)
