# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report/render.py: the report built once and rendered in the four formats rack_report writes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import html
from ansible_collections.gpuops.node.plugins.module_utils.report import junit
from ansible_collections.gpuops.node.plugins.module_utils.report import markdown
from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.report import render

import report_records as R


def test_render_all_is_each_renderer_over_one_report():
    records, racks = R.not_started_run()
    report, out = render.render_all(records, 'T', racks)
    assert report == model.build_report(records, 'T', racks)
    assert sorted(out) == ['html', 'json', 'junit', 'markdown']
    assert out['json'] == model.render_json(report)
    assert out['markdown'] == markdown.render_markdown(report)
    assert out['junit'] == junit.render_junit(report)
    assert out['html'] == html.render_html(report)


def test_empty_report():
    report, out = render.render_all([])
    assert report['summary']['hosts'] == 0 and not report['summary']['healthy']
    assert 'No hosts were reported.' in out['markdown']
    assert ET.fromstring(out['junit'].encode('utf-8')).get('tests') == '0'
    assert json.loads(out['json'])['racks'] == []


def test_rendering_is_deterministic():
    records = R.records()
    first = render.render_all(records)[1]
    second = render.render_all(list(reversed(records)))[1]
    assert first == second


@pytest.mark.parametrize('hosts', [
    [u'node10', u'node1\u00b2', u'node2', u'node1'],
    [u'node\u0661', u'node10', u'node2'],
    [u'gpu-1', u'GPU-1', u'gpu-01', u'gpu-2'],
])
def test_odd_names_as_racks_render_everywhere(hosts):
    _report, out = render.render_all([{'host': h, 'rack': h} for h in hosts])
    for text in out.values():
        text.encode('utf-8')
