# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rack model pages made in Python from simulator profiles, the way the playbooks make their records.

Each node: its profile's capture bundle, a fault applied to it first, the collection's gatherer, the
pre-change check against the profile's expected_node_class, a record with the check's failures and the
drawing of the gather (a node that passes is rolled out and passes its post-change check: provisioned; the
others are held back); then model.build_report and report_html.render_html.

``demo_page(dest)``: the rack of simulator/demo-layout.yml, its fault on its node.
``faults_page(dest)``: one H100 node per fault of the faults scenario (molecule/faults/molecule.yml) and a
healthy one. ``hostile_page(dest)``: host, NIC names and a message made of markup and quotes.
Each returns the model the page was rendered from.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os
import shutil
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# simhelpers (tests/unit/simulator), simulator and ansible_collections.gpuops.node: pytest.ini's pythonpath
from simhelpers import profile_path
from simulator import bundle
from simulator import demo
from simulator import faults
from ansible_collections.gpuops.node.plugins.module_utils.report import model
from ansible_collections.gpuops.node.plugins.module_utils.topology import gather
from ansible_collections.gpuops.node.plugins.module_utils.topology import checks

H100 = 'h100-sxm-8gpu-ib'
DEMO_LAYOUT = os.path.join(REPO, 'simulator', 'demo-layout.yml')
FAULTS_RACK = 'rack_faults'
# the hosts of the faults scenario and their gpuops_sim_faults (molecule/faults/molecule.yml)
FAULT_NODES = (
    ('gpuops-fault-driver-not-loaded', ['driver_not_loaded']),
    ('gpuops-fault-ecc-uncorrectable', ['ecc_uncorrectable:gpu=2']),
    ('gpuops-fault-golden', []),
    ('gpuops-fault-gpu-missing', ['gpu_missing:gpu=4']),
    ('gpuops-fault-ib-port-down', ['ib_port_down:nic=mlx5_6']),
    ('gpuops-fault-mig-unexpected', ['mig_unexpected:gpu=6']),
    ('gpuops-fault-nvlink-down', ['nvlink_down:gpu=3']),
    ('gpuops-fault-pcie-downtrained', ['pcie_downtrained:gpu=5']),
)
HOSTILE_HOST = '<script>alert(1)</script>"&\'x]]>'
HOSTILE_NIC = 'mlx5_6<b>"&\''
HOSTILE_MESSAGE = 'port <script>alert(2)</script> is "DOWN" & \'gone\' ]]>\nsecond line'


def report_html():
    """The collection's HTML renderer (an ImportError when it is missing)."""
    from ansible_collections.gpuops.node.plugins.module_utils.report import html as report_html
    return report_html


def node_record(host, rack, profile, fault_specs=(), roles=()):
    """The record of one simulated node after its pre-change check (see the report_html docstring)."""
    renderer = report_html()
    tree = bundle.read_profile(profile_path(profile))
    for spec in fault_specs:
        name, params = faults.parse_spec(spec)
        faults.FAULTS[name].apply(tree, **params)
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    work = tempfile.mkdtemp(prefix='gpuops-page-')
    try:
        bundle_dir = os.path.join(work, 'bundle')
        bundle.write_tree(tree, bundle_dir)
        facts = gather.gather_bundle(bundle_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failures, dummy = checks.run_checks(facts, meta['expected_node_class'])
    record = {
        'host': host,
        'rack': rack,
        'node_class': meta['node_class'],
        'roles': list(roles),
        'pre_check': {'passed': not failures, 'failures': failures, 'regressions': [], 'deferred': []},
        'drawing': renderer.drawing_from_topology(facts),
    }
    if not failures:
        # a node that passes its pre-change check is rolled out and passes the post-change check (provisioned);
        # the others are held back
        record['post_check'] = {'passed': True, 'failures': [], 'regressions': [], 'deferred': []}
    return record


def write_page(records, title, dest, racks=None):
    """Render ``records`` into ``dest``; returns the model."""
    doc = model.build_report(records, title, racks)
    html = report_html().render_html(doc)
    parent = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(parent):
        os.makedirs(parent)
    with open(dest, 'wb') as handle:
        handle.write(html.encode('utf-8'))
    return doc


def demo_nodes(layout_path=DEMO_LAYOUT):
    """[(host, rack, profile, [fault spec])] of a demo layout file, named as the demo names them."""
    layout = demo.load_layout(layout_path)
    nodes = demo.build_nodes(demo.racks_from_layout(layout, layout_path))
    demo.place_fault(nodes, demo.fault_from_layout(layout))
    return [(n['name'], n['rack'], n['profile'], list(n['faults'])) for n in nodes]


def demo_page(dest, layout_path=DEMO_LAYOUT):
    records = [node_record(host, rack, profile, faults) for host, rack, profile, faults in demo_nodes(layout_path)]
    return write_page(records, 'Demo rack', dest)


def faults_page(dest):
    records = [node_record(host, FAULTS_RACK, H100, faults) for host, faults in FAULT_NODES]
    return write_page(records, 'Hardware faults', dest)


def hostile_page(dest):
    """A node whose name, one NIC name and one failure message are markup: the page must show them as text."""
    record = node_record(HOSTILE_HOST, 'rack_x', H100, ['ib_port_down:nic=mlx5_6'])
    drawing = copy.deepcopy(record['drawing'])
    for nic in drawing.get('nics') or []:
        if nic.get('name') == 'mlx5_6':
            nic['name'] = HOSTILE_NIC
    for item in drawing.get('affinity') or []:
        item['nics'] = [HOSTILE_NIC if n == 'mlx5_6' else n for n in item.get('nics') or []]
    record['drawing'] = drawing
    for failure in record['pre_check']['failures']:
        if failure['subject'] == 'mlx5_6/1':
            failure['subject'] = HOSTILE_NIC + '/1'
            failure['message'] = HOSTILE_MESSAGE
    return write_page([record], 'Hostile <names> & "quotes"', dest)
