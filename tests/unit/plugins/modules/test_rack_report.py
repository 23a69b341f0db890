# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

import module_harness as harness
# patch_module: an autouse fixture
from module_harness import patch_module  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.modules import rack_report


def run(args, check_mode=False, diff=False, expect_fail=False):
    return harness.run(rack_report, args, check_mode=check_mode, diff=diff, expect_fail=expect_fail)


RECORDS = [
    {'host': 'gpu-a01', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'pre_check': {'passed': True, 'failures': []},
     'changes': {'nvidia_driver': 2}, 'post_check': {'passed': True, 'failures': [], 'regressions': []},
     'phase': 'done'},
    {'host': 'gpu-a02', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'held_back': True, 'phase': 'done',
     'pre_check': {'passed': False, 'failures': [
         {'check': 'nic_rate', 'subject': 'mlx5_2/1', 'expected': 400, 'actual': 200, 'message': 'slow'}]},
     'gpu_topology': {'gpu_count': 8}},
    {'host': 'gpu-b01', 'rack': 'rack_b', 'node_class': 'hgx_a100', 'pre_check': {'passed': True, 'failures': []},
     'changes': {}, 'phase': 'done', 'post_check': {'passed': False, 'failures': [], 'regressions': [
         {'check': 'pcie_downtrained', 'subject': 'GPU1', 'before': 16, 'after': 8, 'message': 'x8'}]}},
    {'host': 'gpu-b02', 'rack': 'rack_b', 'unreachable': True},
]


def test_writes_four_files_and_summary(tmp_path):
    dest = tmp_path / 'reports'
    result = run({'records': RECORDS, 'dest': str(dest), 'title': 'Rollout'})
    assert result['changed'] is True
    assert result['paths']['json'] == str(dest / 'rack-report.json')
    assert result['paths']['markdown'] == str(dest / 'rack-report.md')
    assert result['paths']['junit'] == str(dest / 'rack-report.xml')
    assert result['paths']['html'] == str(dest / 'rack-report.html')
    assert result['paths']['hosts'] == []
    assert sorted(os.listdir(str(dest))) == ['rack-report.html', 'rack-report.json', 'rack-report.md',
                                             'rack-report.xml']
    page = (dest / 'rack-report.html').read_text()
    assert page.startswith('<!DOCTYPE html>') and '<script' not in page
    assert all('data-host="%s"' % h in page for h in ('gpu-a01', 'gpu-a02', 'gpu-b01', 'gpu-b02'))
    s = result['summary']
    assert (s['hosts'], s['passed'], s['held_back'], s['regressed'], s['failed'], s['unreachable']) == (4, 1, 1, 1, 0, 1)
    assert result['statuses'] == {'gpu-a01': 'provisioned', 'gpu-a02': 'held_back', 'gpu-b01': 'regressed',
                                  'gpu-b02': 'unreachable'}
    assert result['markdown'] == (dest / 'rack-report.md').read_text()
    assert result['markdown'].startswith('# Rollout\n')
    assert json.loads((dest / 'rack-report.json').read_text())['summary']['hosts'] == 4
    root = ET.parse(str(dest / 'rack-report.xml')).getroot()
    assert [s.get('name') for s in root.findall('testsuite')] == ['rack_a', 'rack_b']


def test_idempotent(tmp_path):
    args = {'records': RECORDS, 'dest': str(tmp_path), 'basename': 'night', 'host_dir': str(tmp_path / 'hosts')}
    first = run(args)
    assert first['changed'] is True
    assert len(first['changed_files']) == 4 + 4
    mtimes = dict((p, os.stat(p).st_mtime_ns) for p in first['changed_files'])
    second = run(args)
    assert second['changed'] is False
    assert second['changed_files'] == []
    assert mtimes == dict((p, os.stat(p).st_mtime_ns) for p in first['changed_files'])
    # a different record changes exactly the files whose content differs
    records = [dict(r) for r in RECORDS]
    records[3] = {'host': 'gpu-b02', 'rack': 'rack_b', 'pre_check': {'passed': True, 'failures': []}}
    third = run(dict(args, records=records))
    assert third['changed'] is True
    assert str(tmp_path / 'hosts' / 'gpu-b02.json') in third['changed_files']
    assert str(tmp_path / 'hosts' / 'gpu-a01.json') not in third['changed_files']


def test_host_dir_keeps_full_record(tmp_path):
    result = run({'records': RECORDS, 'dest': str(tmp_path), 'host_dir': str(tmp_path / 'h')})
    assert sorted(os.path.basename(p) for p in result['paths']['hosts']) == [
        'gpu-a01.json', 'gpu-a02.json', 'gpu-b01.json', 'gpu-b02.json']
    doc = json.loads((tmp_path / 'h' / 'gpu-a02.json').read_text())
    assert doc['gpu_topology'] == {'gpu_count': 8}
    assert doc['status'] == 'held_back'
    rack = json.loads((tmp_path / 'rack-report.json').read_text())
    assert 'gpu_topology' not in rack['racks'][0]['hosts'][0]


def test_check_mode_with_diff_writes_nothing(tmp_path):
    dest = tmp_path / 'new'
    result = run({'records': RECORDS, 'dest': str(dest)}, check_mode=True, diff=True)
    assert result['changed'] is True
    assert not dest.exists()
    assert [d['after_header'] for d in result['diff']] == [
        str(dest / 'rack-report.json'), str(dest / 'rack-report.md'), str(dest / 'rack-report.xml')]
    assert all(d['before'] == '' for d in result['diff'])
    # after a real run, check mode reports no change and an empty diff
    run({'records': RECORDS, 'dest': str(dest)})
    again = run({'records': RECORDS, 'dest': str(dest)}, check_mode=True, diff=True)
    assert again['changed'] is False
    assert again['diff'] == []


def test_check_mode_diff_shows_before(tmp_path):
    run({'records': RECORDS, 'dest': str(tmp_path)})
    before = (tmp_path / 'rack-report.md').read_text()
    result = run({'records': RECORDS[:1], 'dest': str(tmp_path)}, check_mode=True, diff=True)
    assert result['changed'] is True
    md = [d for d in result['diff'] if d['after_header'].endswith('.md')][0]
    assert md['before'] == before
    assert (tmp_path / 'rack-report.md').read_text() == before


def test_invalid_record_fails(tmp_path):
    result = run({'records': [{'rack': 'rack_a'}], 'dest': str(tmp_path)}, expect_fail=True)
    assert 'invalid records' in result['msg']
    assert os.listdir(str(tmp_path)) == []


def test_bad_basename_fails(tmp_path):
    result = run({'records': [], 'dest': str(tmp_path), 'basename': 'a/b'}, expect_fail=True)
    assert 'basename' in result['msg']


def test_dest_is_a_file_fails(tmp_path):
    target = tmp_path / 'file'
    target.write_text('x')
    result = run({'records': [], 'dest': str(target)}, expect_fail=True)
    assert 'not a directory' in result['msg']


def test_existing_file_mode_is_kept(tmp_path):
    run({'records': RECORDS, 'dest': str(tmp_path)})
    md = tmp_path / 'rack-report.md'
    os.chmod(str(md), 0o600)
    run({'records': RECORDS[:2], 'dest': str(tmp_path)})
    assert os.stat(str(md)).st_mode & 0o777 == 0o600


# ---------------------------------------------------------------- host names as file names

def _host_records(hosts):
    return [{'host': h, 'rack': 'r', 'pre_check': {'passed': True, 'failures': []}} for h in hosts]


@pytest.mark.parametrize('hosts, expected', [
    # safe names are kept; a changed name gets the hash of the host name, so a/b and a_b do not overwrite each other
    (['a/b', 'a_b'], {'a/b': 'a_b-c14cddc0.json', 'a_b': 'a_b.json'}),
    (['a\x00b', 'a_b'], {'a\x00b': 'a_b-59b271ae.json', 'a_b': 'a_b.json'}),
    # superscript two is a digit to str.isdigit() but not to int()
    ([u'node1\u00b2', 'node1'], {u'node1\u00b2': 'node1_-628faf66.json', 'node1': 'node1.json'}),
    # names equal but for the case both get the suffix (case-insensitive file systems)
    (['GPU-A01', 'gpu-a01', 'gpu-a02'],
     {'GPU-A01': 'GPU-A01-08f9b598.json', 'gpu-a01': 'gpu-a01-f70c5d1f.json', 'gpu-a02': 'gpu-a02.json'}),
    (['.', '..', '.hidden'], {'.': '_-cdb4ee2a.json', '..': '_.-5ec1f7e7.json', '.hidden': '_hidden-16924190.json'}),
    (['a b', 'a\tb', 'a\x1b[31mb', u'gpu\u2028a01'],
     {'a b': 'a_b-c8687a08.json', 'a\tb': 'a_b-894891f8.json', 'a\x1b[31mb': 'a__31mb-ba3c30e7.json',
      u'gpu\u2028a01': 'gpu_a01-908aac57.json'}),
    # lone surrogate (an undecodable byte)
    ([u'node\ud800'], {u'node\ud800': 'node_-05a5510a.json'}),
    (['gpu-a01.example.org', '10.0.0.7', 'x' * 200],
     {'gpu-a01.example.org': 'gpu-a01.example.org.json', '10.0.0.7': '10.0.0.7.json', 'x' * 200: 'x' * 200 + '.json'}),
    (['x' * 250], {'x' * 250: 'x' * 191 + '-086d4a1c.json'}),
])
def test_host_filenames(tmp_path, hosts, expected):
    assert rack_report.host_filenames(hosts) == expected
    host_dir = tmp_path / 'hosts'
    result = run({'records': _host_records(hosts), 'dest': str(tmp_path), 'host_dir': str(host_dir)})
    assert sorted(os.listdir(str(host_dir))) == sorted(expected.values())
    assert sorted(result['paths']['hosts']) == sorted(str(host_dir / name) for name in expected.values())
    for host, name in expected.items():
        assert json.loads((host_dir / name).read_text(encoding='utf-8'))['host'] == host
    # the Markdown holds no control character but its line ends
    md = (tmp_path / 'rack-report.md').read_text(encoding='utf-8')
    assert md == result['markdown']
    assert not re.search(u'[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]', md)
    # the same names on the next run: nothing changes
    again = run({'records': _host_records(hosts), 'dest': str(tmp_path), 'host_dir': str(host_dir)})
    assert again['changed'] is False


@pytest.mark.parametrize('hosts, same_dir, message', [
    # a safe name that is literally another host's changed name
    (['a/b', 'a_b-c14cddc0', 'x'], False,
     "host 'a/b' and host 'a_b-c14cddc0' would both be written to {dir}/a_b-c14cddc0.json"),
    # the same, but for the case
    (['A/B', 'a_b-998d3ed8'], False,
     "host 'A/B' and host 'a_b-998d3ed8' would both be written to {dir}/a_b-998d3ed8.json"),
    # host_dir is dest: a host named like the report
    (['gpu-a01', 'rack-report'], True,
     "the JSON report and host 'rack-report' would both be written to {dir}/rack-report.json"),
    (['Rack-Report'], True,
     "the JSON report and host 'Rack-Report' would both be written to {dir}/Rack-Report.json"),
])
def test_host_file_clash_fails_before_writing(tmp_path, hosts, same_dir, message):
    dest = tmp_path / 'out'
    host_dir = dest if same_dir else dest / 'hosts'
    result = run({'records': _host_records(hosts), 'dest': str(dest), 'host_dir': str(host_dir)}, expect_fail=True)
    assert result['msg'] == message.format(dir=host_dir) + '; rename a host or set host_dir to another directory'
    assert not dest.exists()


def test_host_file_clash_leaves_the_previous_report(tmp_path):
    run({'records': RECORDS, 'dest': str(tmp_path), 'host_dir': str(tmp_path / 'h')})
    before = dict((p.name, p.read_bytes()) for p in list(tmp_path.iterdir()) + list((tmp_path / 'h').iterdir())
                  if p.is_file())
    records = RECORDS + _host_records(['gpu/a01', 'gpu_a01-2f78fe98'])
    result = run({'records': records, 'dest': str(tmp_path), 'host_dir': str(tmp_path / 'h')}, expect_fail=True)
    assert 'would both be written to' in result['msg']
    after = dict((p.name, p.read_bytes()) for p in list(tmp_path.iterdir()) + list((tmp_path / 'h').iterdir())
                 if p.is_file())
    assert after == before


# ---------------------------------------------------------------- rollout: partial reports, failing hosts

def _rollout(host, rack, **steps):
    record = {'host': host, 'rack': rack, 'phase': 'done', 'roles': [], 'pre_check': {'passed': True, 'failures': []},
              'post_check': {'passed': True, 'failures': [], 'regressions': []}}
    record.update(steps)
    return record


RACKS = {'rack_a': ['gpu-a01', 'gpu-a02'], 'rack_b': ['gpu-b01']}


def test_partial_report_is_not_written_until_the_last_batch(tmp_path):
    # after rack_a, nobody fails: the rollout goes on, nothing is written yet
    first = run({'records': [_rollout('gpu-a01', 'rack_a'), _rollout('gpu-a02', 'rack_a')], 'racks': RACKS,
                 'dest': str(tmp_path)})
    assert (first['changed'], first['written'], first['failing']) == (False, False, {})
    assert first['statuses']['gpu-b01'] == 'not_started'
    assert first['summary']['not_started'] == 1
    assert 'Not started: 1 host in rack_b;' in first['markdown']
    assert os.listdir(str(tmp_path)) == []
    # after rack_b every host has a record: written
    records = [_rollout('gpu-a01', 'rack_a'), _rollout('gpu-a02', 'rack_a'), _rollout('gpu-b01', 'rack_b')]
    last = run({'records': records, 'racks': RACKS, 'dest': str(tmp_path)})
    assert (last['changed'], last['written'], last['summary']['not_started']) == (True, True, 0)
    assert sorted(os.listdir(str(tmp_path))) == ['rack-report.html', 'rack-report.json', 'rack-report.md',
                                                 'rack-report.xml']
    # a rerun: the partial report is again not written, the last one is unchanged
    assert run({'records': records[:2], 'racks': RACKS, 'dest': str(tmp_path)})['changed'] is False
    assert run({'records': records, 'racks': RACKS, 'dest': str(tmp_path)})['changed'] is False


def test_partial_report_with_a_failing_host_is_written(tmp_path):
    records = [_rollout('gpu-a01', 'rack_a'),
               _rollout('gpu-a02', 'rack_a', errors=['Install: no package'], post_check=None)]
    result = run({'records': records, 'racks': RACKS, 'dest': str(tmp_path)}, diff=True)
    assert (result['changed'], result['written']) == (True, True)
    assert result['failing'] == {'gpu-a02': 'Install: no package'}
    doc = json.loads((tmp_path / 'rack-report.json').read_text())
    assert [(h['host'], h['status']) for r in doc['racks'] for h in r['hosts']] == [
        ('gpu-a01', 'provisioned'), ('gpu-a02', 'failed'), ('gpu-b01', 'not_started')]
    assert [d['after_header'] for d in result['diff']] == [
        str(tmp_path / 'rack-report.json'), str(tmp_path / 'rack-report.md'), str(tmp_path / 'rack-report.xml')]


@pytest.mark.parametrize('flags, failing', [
    ({}, []),
    ({'fail_held_back': True}, ['gpu-a02']),
    ({'fail_reboot_required': True}, ['gpu-b01']),
    ({'fail_held_back': True, 'fail_reboot_required': True}, ['gpu-a02', 'gpu-b01']),
])
def test_fail_held_back_and_reboot_required(tmp_path, flags, failing):
    records = [_rollout('gpu-a01', 'rack_a'),
               _rollout('gpu-a02', 'rack_a', pre_check={'passed': False, 'failures': [
                   {'check': 'gpu_count', 'subject': 'node', 'expected': 8, 'actual': 7, 'message': '7 GPUs'}]},
                   post_check=None),
               _rollout('gpu-b01', 'rack_b', roles=['mps'], changes={'mps': 1}, reboot_required={'mps': True},
                        post_check=None)]
    result = run(dict({'records': records, 'racks': RACKS, 'dest': str(tmp_path)}, **flags))
    assert result['statuses'] == {'gpu-a01': 'provisioned', 'gpu-a02': 'held_back', 'gpu-b01': 'reboot_required'}
    assert sorted(result['failing']) == failing
    reasons = {'gpu-a02': '7 GPUs', 'gpu-b01': 'reboot required by mps, not rebooted'}
    assert result['failing'] == dict((h, reasons[h]) for h in failing)
    assert result['summary']['reboot_required'] == 1


def test_check_mode_report_says_so(tmp_path):
    records = [_rollout('gpu-a01', 'rack_a', check_mode=True, roles=['mps'], changes={'mps': 2})]
    result = run({'records': records, 'dest': str(tmp_path)}, check_mode=True, diff=True)
    assert result['changed'] is True and result['written'] is True
    assert '**Check mode: nothing changed.**' in result['markdown']
    assert '| gpu-a01 | - | provisioned | PASS | would change mps: 2 | PASS | 0 |' in result['markdown']
    assert json.loads(result['diff'][0]['after'])['check_mode'] is True
    assert os.listdir(str(tmp_path)) == []


def test_invalid_racks_fail(tmp_path):
    result = run({'records': [], 'racks': {'rack_a': 'gpu-a01'}, 'dest': str(tmp_path)}, expect_fail=True)
    assert 'rack rack_a must list its hosts' in result['msg']
