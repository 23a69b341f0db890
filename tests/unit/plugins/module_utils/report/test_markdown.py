# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report/markdown.py: the rack report as Markdown, every cell one line of harmless plain text."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import markdown
from ansible_collections.gpuops.node.plugins.module_utils.report import model

import report_records as R
from report_records import PASS

# what must never reach the Markdown (line ends only between lines)
_MD_FORBIDDEN = re.compile(u'[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]')


def _md(records, title=None, racks=None):
    return markdown.render_markdown(model.build_report(records, title, racks))


def test_markdown():
    md = _md(R.records(), 'Night | run')
    assert md.startswith('# Night \\| run\n')
    assert '**NOT HEALTHY** - 5 hosts: 1 passed, 1 held back, 1 regressed, 1 failed, 1 unreachable.' in md
    assert '## Rack rack_a' in md and '## Rack rack_b' in md
    assert '| Host | Class | Status | Pre-check | Changes | Post-check | Regressions | Gates |' in md
    assert '| gpu-a10 | dgx_h100 | provisioned | PASS | mofed: ok, nvidia_driver: 3 | PASS | 0 |' in md
    assert '| gpu-a2 | dgx_h100 | held_back | FAIL (2) | held back | - | - |' in md
    assert '| gpu-b1 | hgx_a100 | regressed | PASS | nvidia_driver: changed | FAIL | 1 |' in md
    assert '| gpu-b2 | pcie_l40s | unreachable | not run | - | - | - |' in md
    # details: every failure with check, subject, expected, actual, message; pipes escaped
    assert '| nvlink_active_links | GPU3 | `18` | `16` | links down |' in md
    assert '| gpu_count |  | `8` | `7` | GPU \\| lost |' in md
    assert '| nic_port_down | mlx5_3/1 | `ACTIVE` | `DOWN` | port went down |' in md
    assert 'Error: task "Install driver" failed: &lt;no package&gt;' in md
    assert 'Host unreachable.' in md
    assert '### gpu-a10' not in md
    # every table row of the summary has the same number of cells
    for line in md.splitlines():
        if line.startswith('| gpu-'):
            assert line.replace('\\|', '').count('|') == 9


def test_markdown_healthy():
    md = _md([{'host': 'h1', 'rack': 'r', 'pre_check': PASS}])
    assert '**HEALTHY**' in md
    assert 'No failures, regressions or errors.' in md


def test_markdown_empty_report():
    md = _md([])
    assert '**NOT HEALTHY** - 0 hosts' in md
    assert 'No hosts were reported.' in md


def test_markdown_is_deterministic():
    records = R.records()
    assert _md(records) == _md(list(reversed(records)))


def test_changes_text():
    record = model.normalize_record({'host': 'h', 'changes': {'a': '2', 'b': 1.0, 'c': None, 'd': 'yes', 'e': False}})
    assert markdown.changes_text(record) == 'a: 2, b: 1, c: not reported, d: changed, e: ok'


def test_markdown_not_started_hosts():
    records, racks = R.not_started_run()
    md = _md(records, 'T', racks)
    assert '**NOT HEALTHY** - 4 hosts: 1 passed, 0 held back, 0 regressed, 1 failed, 0 unreachable, 2 not started.' in md
    assert 'Not started: 2 hosts in rack_2; the rollout had not reached them when this report was written.' in md
    assert '| h3 | - | not_started | not started | - | - | - |' in md
    assert '### h3' not in md


def test_markdown_rollout_details():
    md = _md(R.reboot_run())
    assert '| a | c | provisioned | PASS (3 deferred) | mps: 1, nvidia_driver: 4; rebooted | PASS | 0 |' in md
    assert '| b | c | reboot_required | PASS | mps: 2; reboot required | after reboot | - |' in md
    assert '2 hosts: 1 passed, 0 held back, 0 regressed, 0 failed, 0 unreachable, 1 waiting for a reboot.' in md
    assert '## Deferred to the post-change check' in md
    assert '| a | compute_mode, driver_loaded, driver_version | mps, nvidia_driver |' in md
    assert '### b (r, c): reboot_required' in md
    assert 'Waiting for a reboot required by mps; the post-change check runs after it.' in md
    assert 'Check mode' not in md


def test_markdown_check_mode():
    records = [R.rollout(check_mode=True, changes={'mps': 2}, reboot_required={'mps': True},
                         reboot={'changed': True, 'rebooted': True, 'elapsed': 0})]
    md = _md(records)
    assert md.splitlines()[2] == ('**Check mode: nothing changed.** Changes, reboots and statuses are what a real run '
                                  'would do.')
    assert '| h | c | provisioned | PASS | would change mps: 2; would reboot | PASS | 0 |' in md


# ---------------------------------------------------------------- odd names and control characters

def test_markdown_natural_order_of_odd_names():
    hosts = [u'node10', u'node1\u00b2', u'node2', u'node1', u'GPU-1', u'gpu-01']
    md = _md([{'host': h, 'rack': h} for h in hosts])
    assert [line[len(u'## Rack '):] for line in md.splitlines() if line.startswith(u'## Rack ')] == [
        u'GPU-1', u'gpu-01', u'node1', u'node1\u00b2', u'node2', u'node10']


@pytest.mark.parametrize('value, expected', [
    (u'a\x00b', u'a\ufffdb'),
    (u'a\x1b[31mred\x1b[0m', u'a\ufffd[31mred\ufffd[0m'),
    (u'a\x07\x08b', u'a\ufffd\ufffdb'),
    (u'a\x1cb\x1f', u'a\ufffdb\ufffd'),
    (u'a\x7fb', u'a\ufffdb'),
    (u'a\x9b31mb', u'a\ufffd31mb'),
    (u'a\u202eb\u2066c\u2069', u'a\ufffdb\ufffdc\ufffd'),
    (u'a\ud800b', u'a\ufffdb'),
    (u'a\tb', u'a b'),
    (u'a \r\n b', u'a b'),
    (u'a\x0bb\x0cc', u'a b c'),
    (u'a\x85b', u'a b'),
    (u'a\u2028b\u2029c', u'a b c'),
    (u'\n\x00\n', u'\ufffd'),
    (u'\n\t \n', u''),
    (u'a  b', u'a  b'),
    (u'caf\u00e9 \u00b2', u'caf\u00e9 \u00b2'),
])
def test_markdown_cell_controls(value, expected):
    assert markdown._cell(value) == expected
    assert markdown._cell(value, code=True) == (u'`%s`' % expected if expected else u'')


@pytest.mark.parametrize('field', R.FIELDS)
@pytest.mark.parametrize('value', R.CONTROL_VALUES)
def test_no_control_character_reaches_markdown(field, value):
    record, title = R.record_with(field, value)
    md = _md([record], title)
    assert not _MD_FORBIDDEN.search(md), repr(md)
    md.encode('utf-8')
    for line in md.splitlines():
        if line.startswith(u'| ') and not line.startswith(u'| ---'):
            assert line.replace(u'\\|', u'').count(u'|') in (5, 6, 9), line
    # the value is there, made harmless, where it belongs
    shown = markdown._cell(value)
    assert u'\ufffd' in shown or u' ' in shown
    assert shown in md
