# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report built from records and rendered in every format rack_report writes.

The one place that knows all the renderers: report/model.py builds the report
and the JSON, report/markdown.py, report/junit.py and report/html.py render
it; none of them imports this file.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.report.html import render_html
from ansible_collections.gpuops.node.plugins.module_utils.report.junit import render_junit
from ansible_collections.gpuops.node.plugins.module_utils.report.markdown import render_markdown


def render_all(records, title=None, racks=None):
    """Build the report and render it. Returns (report, {'json','markdown','junit','html'})."""
    report = model.build_report(records, title, racks)
    return report, {
        'json': model.render_json(report),
        'markdown': render_markdown(report),
        'junit': render_junit(report),
        'html': render_html(report),
    }
