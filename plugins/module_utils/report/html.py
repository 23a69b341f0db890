# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report as one self-contained HTML page with a topology drawing per host.

``render_html(report)`` takes what ``report.build_report`` returns. The page
has the verdict and counts, a table per rack, then a section per host: its
status, its findings (check failures, regressions, failed gates) as a table,
and its drawing (see report/svg.py) with every finding's subject marked on it
(report/marks.py). Hosts of a node class whose drawings, statuses and findings
are identical share one drawing (1,000 healthy nodes, or 1,000 nodes failing
the same check, make one drawing); each keeps its own section. No script, no
external resource: inline style and SVG only, every text escaped, ids are
slugs. Pure functions, standard library only (Python 3.8+); the output is
deterministic.

A record's drawing is its ``drawing`` key (``drawing_from_topology`` of its
``gpu_topology`` snapshot), else made here from its ``gpu_topology``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import re

from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.report import gates as report_gates
from ansible_collections.gpuops.node.plugins.module_utils.report.marks import marks_for
from ansible_collections.gpuops.node.plugins.module_utils.report.svg import (
    canonical, checks_attr, clean, drawing_from_topology, esc, message, render_svg)

__all__ = ['drawing_from_topology', 'findings', 'group_hosts', 'host_drawing', 'render_html', 'slug']

_SLUG_RE = re.compile(r'[^a-z0-9-]+')

STYLE = u"""
body{font-family:sans-serif;margin:1.5em;color:#1a1a1a;background:#fff}
h1{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;font-size:14px}
th{background:#f2f2f2}
td.msgcell{white-space:pre-wrap}
.check-mode{background:#fff4cc;border:1px solid #e0b400;padding:6px 10px}
.verdict{font-size:1.3em;font-weight:bold}
.verdict.healthy{color:#1d7a1d}
.verdict.unhealthy{color:#b00020}
.st-provisioned,.st-validated{color:#1d7a1d;font-weight:bold}
.st-held_back,.st-reboot_required,.st-not_started{color:#9a6a00;font-weight:bold}
.st-regressed,.st-failed,.st-unreachable{color:#b00020;font-weight:bold}
section.host,section.group{border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:12px 0}
section.host[data-marks="true"],section.group[data-marks="true"]{border-color:#b00020}
.node-failure{background:#fde8ea;border:1px solid #b00020;padding:6px 10px;white-space:pre-wrap}
ul.unplaced li{color:#b00020;white-space:pre-wrap}
.no-drawing{color:#666;font-style:italic}
.hosts{font-family:monospace;font-size:13px;word-break:break-all}
div.drawing{overflow-x:auto;max-width:100%}
h4.drawing-head{margin:.6em 0 .3em;font-size:14px}
svg.topology{display:block;font-family:sans-serif;font-size:12px}
svg .col{fill:#f7f9fc;stroke:#c8d0dc}
svg .head{font-weight:bold;font-size:13px;fill:#334}
svg .box{fill:#fff;stroke:#555;stroke-width:1.2}
svg .nicbox{fill:#f4fbf4}
svg .gpu .box{fill:#eef4ff}
svg .dashed{stroke-dasharray:5 3}
svg .portbox{fill:none;stroke:none}
svg .name{font-weight:bold;font-size:12px}
svg .switch{fill:#dde6f5;stroke:#3a5a99}
svg line.nvlink{stroke:#3a5a99;stroke-width:2}
svg line.stub{stroke:#3a5a99;stroke-width:1;stroke-dasharray:2 2}
svg line.affinity{stroke:#2d8a2d;stroke-width:1.5}
svg line.affinity[data-relation="PHB"],svg line.affinity[data-relation="NODE"]{stroke:#d97a00;stroke-dasharray:7 4}
svg line.affinity[data-relation="SYS"],svg line.affinity[data-relation="SOC"]{stroke:#c0392b;stroke-dasharray:2 3}
svg .dot{fill:#3a5a99}
svg .lbl{font-size:11px;fill:#222;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg .lbl.bad{fill:#b00020;font-weight:bold}
svg .bus{font-family:monospace;font-size:11px;fill:#445}
svg .note{fill:#b00020;font-weight:bold}
svg .msg{font-size:11px;fill:#b00020}
svg .gpu.missing>.box{stroke:#d0021b;fill:#fff5f5;stroke-dasharray:6 4}
svg [data-marked="true"]>.box,svg [data-marked="true"]>.portbox{stroke:#d0021b;stroke-width:2.5}
svg .port[data-marked="true"]>.portbox{fill:#fde8ea}
svg line.nvlink.missing{stroke:#d0021b;stroke-dasharray:6 4}
svg line[data-marked="true"]{stroke:#d0021b;stroke-width:3;stroke-dasharray:6 4}
"""


def slug(name):
    """``name`` as an id fragment: [a-z0-9-], with 8 hex digits of its sha256 when it had other characters."""
    text = clean(name)
    base = _SLUG_RE.sub(u'-', text.lower()).strip(u'-')
    if base == text and base:
        return base
    digest = hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:8]
    return (base[:40].strip(u'-') + u'-' + digest) if base else digest


def host_drawing(record):
    """The record's drawing: its ``drawing``, else the digest of its ``gpu_topology``, else None."""
    drawing = record.get('drawing')
    if isinstance(drawing, dict):
        return drawing
    return drawing_from_topology(record.get('gpu_topology'))


def _gates(record):
    gates = record.get('gates') or []
    if isinstance(gates, dict):
        try:
            gates = report_gates.normalize_gates(gates, record.get('host'))
        except report_gates.GateError:
            return []
    return [g for g in gates if isinstance(g, dict) and 'ran' in g and 'passed' in g]


def findings(record):
    """[(phase, kind, item)] of the record's failures (pre-check, post-check), regressions and the failures of its
    failed gates (a failed gate that names none is one node failure)."""
    out = []
    for phase, check in (('pre-check', record.get('pre_check')), ('post-check', record.get('post_check'))):
        for item in (check or {}).get('failures') or []:
            out.append((phase, 'failure', item))
    for item in (record.get('post_check') or {}).get('regressions') or []:
        out.append(('post-check', 'regression', item))
    for gate in report_gates.failed(_gates(record)):
        items = [f for f in gate.get('failures') or [] if isinstance(f, dict)]
        if not items:
            items = [{'check': gate.get('name'), 'subject': u'node', 'expected': u'PASS', 'actual': u'FAIL',
                      'message': gate.get('summary') or u'the %s gate failed' % clean(gate.get('name'))}]
        for item in items:
            out.append(('gate', 'failure', dict(item, check=item.get('check') or gate.get('name'))))
    return out


def _findings_key(items):
    return canonical(sorted(set((clean(i.get('check')), clean(i.get('subject')), clean(i.get('message')))
                                for dummy, kind, i in items)))


def group_hosts(report):
    """{host: group} for the hosts that share a drawing, and the groups [{id, node_class, status, hosts, drawing,
    items}].

    Hosts of one node class with identical drawings, the same status and the same findings (check, subject,
    message) share one; a group has at least two hosts.
    """
    groups = {}
    order = []
    for rack in report['racks']:
        for record in rack['hosts']:
            drawing = host_drawing(record)
            if drawing is None:
                continue
            items = findings(record)
            text = u'\n'.join((record.get('node_class') or u'', clean(record['status']), canonical(drawing),
                               _findings_key(items)))
            if text not in groups:
                digest = hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:12]
                groups[text] = {'id': u'group-' + digest, 'node_class': record.get('node_class') or u'',
                                'status': record['status'], 'hosts': [], 'drawing': drawing,
                                'items': [entry[2] for entry in items]}
                order.append(text)
            groups[text]['hosts'].append(record['host'])
    shared = [groups[k] for k in order if len(groups[k]['hosts']) > 1]
    by_host = dict((host, group) for group in shared for host in group['hosts'])
    return by_host, shared


def _check_cell(check, missing):
    if check is None:
        return missing
    if check.get('passed') and not check.get('regressions'):
        deferred = len(check.get('deferred') or [])
        return u'PASS (%d deferred)' % deferred if deferred else u'PASS'
    failures = len(check.get('failures') or [])
    return u'FAIL (%d)' % failures if failures else u'FAIL'


def _status(status):
    return u'<span class="st-%s">%s</span>' % (esc(status), esc(status))


def _counts(summary):
    keys = (('hosts', u'Hosts'), ('passed', u'Passed'), ('held_back', u'Held back'),
            ('reboot_required', u'Waiting for a reboot'), ('regressed', u'Regressed'), ('failed', u'Failed'),
            ('unreachable', u'Unreachable'), ('not_started', u'Not started'))
    head = u''.join(u'<th>%s</th>' % pair[1] for pair in keys)
    row = u''.join(u'<td data-count="%s">%d</td>' % (pair[0], summary.get(pair[0]) or 0) for pair in keys)
    return u'<table class="counts"><tr>%s</tr><tr>%s</tr></table>' % (head, row)


def _rack_table(rack):
    out = [u'<table class="rack" data-rack="%s"><tr><th>Host</th><th>Class</th><th>Status</th><th>Pre-check</th>'
           u'<th>Post-check</th><th>Gates</th><th>Regressions</th></tr>' % esc(rack['name'])]
    for record in rack['hosts']:
        post = record.get('post_check')
        pre = u'not started' if record['status'] == 'not_started' else _check_cell(record.get('pre_check'), u'not run')
        out.append(u'<tr data-host="%s"><td><a href="#host-%s">%s</a></td><td>%s</td><td>%s</td><td>%s</td>'
                   u'<td>%s</td><td>%s</td><td>%s</td></tr>'
                   % (esc(record['host']), slug(record['host']), esc(record['host']),
                      esc(record.get('node_class') or u'-'), _status(record['status']), esc(pre),
                      esc(_check_cell(post, u'-')), esc(report_gates.cell(_gates(record))),
                      u'-' if post is None else len(post.get('regressions') or [])))
    out.append(u'</table>')
    return u''.join(out)


def _value(value):
    text = clean(value)
    return esc(text) if text else u'<span class="no-drawing">-</span>'


def _findings_table(items):
    out = [u'<table class="findings"><tr><th>Phase</th><th>Check</th><th>Subject</th><th>Expected / before</th>'
           u'<th>Actual / after</th><th>Message</th></tr>']
    for phase, kind, item in items:
        first, second = ('before', 'after') if kind == 'regression' else ('expected', 'actual')
        out.append(u'<tr class="%s" data-check="%s" data-subject="%s"><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                   u'<td>%s</td><td class="msgcell">%s</td></tr>'
                   % (kind, esc(item.get('check')), esc(item.get('subject')),
                      esc(phase + (u' regression' if kind == 'regression' else u'')), _value(item.get('check')),
                      _value(item.get('subject')), _value(item.get(first)), _value(item.get(second)),
                      _value(item.get('message'))))
    out.append(u'</table>')
    return u''.join(out)


def _no_drawing_reason(record):
    if record['status'] == 'not_started':
        return u'no topology: not started'
    if record.get('unreachable') or record['status'] == 'unreachable':
        return u'no topology: unreachable'
    if record.get('error'):
        return u'no topology: not gathered (%s)' % clean(record['error'])
    return u'no topology: not gathered'


def _node_banner(items):
    if not items:
        return u''
    text = u'\n'.join(u'%s: %s' % (clean(i.get('check')) or u'check', message(i)) for i in items)
    return u'<p class="node-failure" data-checks="%s"><strong>Node:</strong> %s</p>' % (
        esc(checks_attr(items)), esc(text))


def _unplaced(items):
    if not items:
        return u''
    out = [u'<ul class="unplaced">']
    for item in items:
        subject = clean(item.get('subject'))
        out.append(u'<li data-subject="%s" data-checks="%s"><strong>%s</strong> %s: %s</li>'
                   % (esc(subject), esc(checks_attr([item])), esc(subject or u'(no subject)'),
                      esc(item.get('check') or u'check'), esc(message(item))))
    out.append(u'</ul>')
    return u''.join(out)


def _host_section(record, group):
    host = record['host']
    items = findings(record)
    attrs = u' data-group="%s"' % group['id'] if group else u''
    if items:
        attrs += u' data-marks="true"'
    out = [u'<section class="host" id="host-%s" data-host="%s" data-status="%s"%s>'
           % (slug(host), esc(host), esc(record['status']), attrs)]
    out.append(u'<h3>%s</h3>' % esc(host))
    out.append(u'<p>%s \u00b7 rack %s \u00b7 class %s</p>' % (
        _status(record['status']), esc(record['rack']), esc(record.get('node_class') or u'-')))
    reason = model.host_reason(record)
    if reason and reason != record['status'] and not items:
        out.append(u'<p class="reason">%s</p>' % esc(reason))
    if items:
        out.append(_findings_table(items))
    if group:
        others = len(group['hosts']) - 1
        out.append(u'<p class="shared">Drawing shared with %d other host%s of the same class, status and findings: '
                   u'<a href="#%s">see the shared drawing</a>.</p></section>'
                   % (others, u'' if others == 1 else u's', group['id']))
        return u''.join(out)
    drawing = host_drawing(record)
    if drawing is None:
        out.append(_node_banner([entry[2] for entry in items if entry[2].get('subject') in (None, 'node')]))
        out.append(_unplaced([entry[2] for entry in items if entry[2].get('subject') not in (None, 'node')]))
        out.append(u'<p class="no-drawing">%s</p>' % esc(_no_drawing_reason(record)))
    else:
        out.append(_drawing(drawing, [entry[2] for entry in items], u'Topology of %s' % clean(host)))
    out.append(u'</section>')
    return u''.join(out)


def _driver(drawing):
    version = clean(drawing.get('driver_version'))
    return u'driver %s' % version if version else u'driver not loaded' if not drawing.get('driver_loaded') \
        else u'driver version unknown'


def _drawing(drawing, items, title, heading=True):
    """The node banner, the unplaced list, the drawing's heading and the SVG with ``items`` marked."""
    marks = marks_for(drawing, items)
    out = [_node_banner(marks['node']), _unplaced(marks['unplaced'])]
    if heading:
        out.append(u'<h4 class="drawing-head">Topology \u00b7 %s</h4>' % esc(_driver(drawing)))
    out.append(u'<div class="drawing">%s</div>' % render_svg(drawing, marks, title))
    return u''.join(out)


def _group_section(group):
    names = u' '.join(clean(h) for h in group['hosts'])
    title = u'%s: %d hosts with this topology' % (group['node_class'] or u'no class', len(group['hosts']))
    return u''.join([
        u'<section class="group" id="%s" data-hosts="%s" data-node-class="%s" data-status="%s"%s>' % (
            group['id'], esc(names), esc(group['node_class']), esc(group['status']),
            u' data-marks="true"' if group['items'] else u''),
        u'<h3>%s \u00b7 %s \u00b7 %s</h3>' % (esc(title), esc(_driver(group['drawing'])), _status(group['status'])),
        u'<p class="hosts">%s</p>' % u', '.join(
            u'<a href="#host-%s">%s</a>' % (slug(h), esc(h)) for h in group['hosts']),
        _drawing(group['drawing'], group['items'], clean(title), heading=False),
        u'</section>'])


def render_html(report):
    """The report (see report.build_report) as one HTML5 document: no script, no external resource."""
    summary = report['summary']
    by_host, groups = group_hosts(report)
    out = [u'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           u'<meta name="viewport" content="width=device-width, initial-scale=1">',
           u'<title>%s</title><style>%s</style></head><body>' % (esc(report['title']), STYLE),
           u'<h1>%s</h1>' % esc(report['title'])]
    if report.get('check_mode'):
        out.append(u'<p class="check-mode"><strong>Check mode: nothing changed.</strong> Changes, reboots and '
                   u'statuses are what a real run would do.</p>')
    healthy = summary.get('healthy')
    out.append(u'<p class="verdict %s" data-verdict="%s">%s</p>' % (
        u'healthy' if healthy else u'unhealthy', u'HEALTHY' if healthy else u'NOT HEALTHY',
        u'HEALTHY' if healthy else u'NOT HEALTHY'))
    out.append(_counts(summary))
    if not report['racks']:
        out.append(u'<p>No hosts were reported.</p>')
    for rack in report['racks']:
        out.append(u'<h2>Rack %s</h2>' % esc(rack['name']))
        out.append(_rack_table(rack))
    for rack in report['racks']:
        out.append(u'<h2 id="rack-%s">Hosts of rack %s</h2>' % (slug(rack['name']), esc(rack['name'])))
        for record in rack['hosts']:
            out.append(_host_section(record, by_host.get(record['host'])))
    if groups:
        out.append(u'<h2>Shared drawings</h2><p>Hosts of one class with the same topology, the same status and '
                   u'the same findings share one drawing.</p>')
        for group in groups:
            out.append(_group_section(group))
    out.append(u'</body></html>\n')
    return u'\n'.join(out)
