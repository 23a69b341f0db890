# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report's HTML page: the drawings of the simulator profiles, the faults marked on them, the shared
drawings of identical healthy hosts, escaping."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import os
import re
from html.parser import HTMLParser

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.report import model as report_model
from ansible_collections.gpuops.node.plugins.module_utils.report import html as report_html
from ansible_collections.gpuops.node.plugins.module_utils.report import svg as report_svg
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import check_profile
from repo_paths import REPO

ROOT = REPO

from simulator import bundle  # noqa: E402
from simulator import faults  # noqa: E402

H100 = 'h100-sxm-8gpu-ib'
A100 = 'a100-sxm-8gpu-ib'
PCIE = 'pcie-4gpu-roce'
PROFILES = (H100, A100, PCIE)
HOSTILE = u'<script>alert(1)</script>"&\']]>\nx\x1b[31m\u202e'
# the faults of molecule/faults, and two more on the other profiles
FAULT_CASES = [
    (H100, 'gpu_missing', {'gpu': 4}),
    (H100, 'nvlink_down', {'gpu': 3}),
    (H100, 'pcie_downtrained', {'gpu': 5}),
    (H100, 'ib_port_down', {'nic': 'mlx5_6'}),
    (H100, 'ecc_uncorrectable', {'gpu': 2}),
    (H100, 'mig_unexpected', {'gpu': 6}),
    (H100, 'driver_not_loaded', {}),
    (A100, 'ib_port_down', {'nic': 'mlx5_2'}),
    (A100, 'nvlink_down', {'gpu': 1}),
    (PCIE, 'roce_retrans_high', {}),
]
_CACHE = {}


class Node(object):
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], u''

    def classes(self):
        return (self.attrs.get('class') or u'').split()

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, tag=None, cls=None, **attrs):
        return [n for n in self.walk() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes())
                and all(n.attrs.get(k.replace('_', '-')) == v for k, v in attrs.items())]

    def all_text(self):
        return self.text + u''.join(c.all_text() for c in self.children)


class Tree(HTMLParser):
    """The document as a tree of Nodes (html.parser: what a browser test reads)."""
    VOID = ('meta', 'br', 'hr', 'img', 'input', 'link')

    def __init__(self, text):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.root = self.node = Node('#root', {}, None)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.node)
        self.node.children.append(node)
        if tag not in self.VOID:
            self.node = node

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Node(tag, attrs, self.node))

    def handle_endtag(self, tag):
        assert self.node.tag == tag, (self.node.tag, tag)
        self.node = self.node.parent

    def handle_data(self, data):
        self.node.text += data


def _profile(name, fault=None, params=None):
    """(topology, failures, node_class) of a profile with a fault, gathered from its bundle and checked."""
    key = (name, fault, json.dumps(params, sort_keys=True))
    if key not in _CACHE:
        tree = bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', name))
        meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
        if fault:
            faults.FAULTS[fault].apply(tree, **(params or {}))
        target = os.path.join(str(_profile.tmp), '%s-%s-%d' % (name, fault, len(_CACHE)))
        bundle.write_tree(tree, target)
        topology = gather_bundle(target)
        _CACHE[key] = (topology, check_profile(topology, meta['expected_node_class']), meta['node_class'])
    return copy.deepcopy(_CACHE[key])


@pytest.fixture(autouse=True)
def _tmp(tmp_path_factory):
    _profile.tmp = tmp_path_factory.getbasetemp()


def _record(host, name, fault=None, params=None, rack='rack_a', **extra):
    topology, failures, node_class = _profile(name, fault, params)
    record = {'host': host, 'rack': rack, 'node_class': node_class, 'roles': [],
              'pre_check': {'passed': not failures, 'failures': failures, 'regressions': [], 'deferred': []},
              'drawing': report_html.drawing_from_topology(topology)}
    record.update(extra)
    return record


def _page(records, title=None, racks=None):
    text = report_html.render_html(report_model.build_report(records, title, racks))
    return text, Tree(text).root


def _section(root, host):
    found = root.find('section', 'host', data_host=host)
    assert len(found) == 1, host
    return found[0]


def _marked(section):
    return [n for n in section.walk() if n.attrs.get('data-marked') == 'true']


def test_drawing_of_each_profile_is_small_and_json_safe():
    for name in PROFILES:
        topology = _profile(name)[0]
        drawing = report_html.drawing_from_topology(topology)
        assert json.loads(json.dumps(drawing)) == drawing
        assert len(json.dumps(drawing)) < 6000
        assert [g['index'] for g in drawing['gpus']] == [g['index'] for g in topology['gpus']]
        assert [n['name'] for n in drawing['nics']] == [n['name'] for n in topology['nics']]
        assert drawing['gpu_count'] == topology['gpu_count'] and drawing['driver_loaded'] is True
    h100 = report_html.drawing_from_topology(_profile(H100)[0])
    assert h100['nvswitches'] == 4 and len(h100['nvlink']) == 28
    assert h100['gpus'][3] == {'index': 3, 'name': 'NVIDIA H100 80GB HBM3', 'numa': 0, 'cpu_affinity': '0-191',
                               'pcie': 'Gen5 x16', 'nvlink_active': 18, 'nvlink_total': 18,
                               'bus': '0000:5d:00.0'}
    assert h100['nvlink'][0] == {'a': 0, 'b': 1, 'relation': 'NV18'}
    assert h100['affinity'][3] == {'gpu': 3, 'nics': ['mlx5_5'], 'relation': 'PIX'}
    assert h100['nics'][0] == {'name': 'mlx5_0', 'numa': None, 'ports': [
        {'port': 1, 'state': 'ACTIVE', 'rate_gbps': 400, 'link_layer': 'InfiniBand'}]}
    pcie = report_html.drawing_from_topology(_profile(PCIE)[0])
    assert pcie['nvswitches'] == 0 and pcie['nvlink'] == []
    assert report_html.drawing_from_topology(None) is None
    assert report_html.drawing_from_topology({})['gpus'] == []


@pytest.mark.parametrize('name', PROFILES)
def test_every_device_of_a_profile_is_drawn(name):
    record = _record('gpu-1', name)
    drawing = record['drawing']
    text, root = _page([record])
    section = _section(root, 'gpu-1')
    svgs = section.find('svg', 'topology')
    assert len(svgs) == 1 and svgs[0].find('title')
    svg = svgs[0]
    assert sorted(g.attrs['data-name'] for g in svg.find('g', 'gpu')) == sorted('GPU%d' % g['index']
                                                                                for g in drawing['gpus'])
    assert sorted(g.attrs['data-name'] for g in svg.find('g', 'nic')) == sorted(n['name'] for n in drawing['nics'])
    for nic in drawing['nics']:
        group = svg.find('g', 'nic', data_name=nic['name'])[0]
        ports = group.find('g', 'port')
        assert [(p.attrs['data-name'], p.attrs['data-state']) for p in ports] == [
            ('%s/%s' % (nic['name'], p['port']), p['state']) for p in nic['ports']]
        assert 'Gb/s' in ports[0].all_text()
    for gpu in svg.find('g', 'gpu'):
        assert gpu.attrs['data-name'] in gpu.all_text()
    affinity = [(l.attrs['data-gpu'], l.attrs['data-nic'], l.attrs['data-relation']) for l in svg.find('line', 'affinity')]
    assert affinity == [('GPU%d' % a['gpu'], n, a['relation']) for a in drawing['affinity'] for n in a['nics']]
    nvlink = svg.find('line', 'nvlink')
    if drawing['nvswitches']:
        assert svg.find('g', 'nvswitch')[0].attrs['data-count'] == str(drawing['nvswitches'])
        assert 'NVSwitch x%d' % drawing['nvswitches'] in svg.all_text()
        assert sorted(l.attrs['data-a'] for l in nvlink) == sorted('GPU%d' % g['index'] for g in drawing['gpus'])
        assert set(l.attrs['data-b'] for l in nvlink) == {'NVSwitch'}
    else:
        assert not svg.find('g', 'nvswitch')
        assert [(l.attrs['data-a'], l.attrs['data-b']) for l in nvlink] == [
            ('GPU%d' % p['a'], 'GPU%d' % p['b']) for p in drawing['nvlink']]
    headers = [t.text for t in svg.find('text', 'head')]
    numas = sorted(set(g['numa'] for g in drawing['gpus'] + drawing['nics'] if g['numa'] is not None))
    assert [h.split(' \u00b7 ')[0] for h in headers] == ['NUMA %d' % n for n in numas] + (
        ['NUMA ?'] if any(n['numa'] is None for n in drawing['nics']) else [])
    assert not _marked(section)
    assert '<script' not in text and 'http' not in text and 'url(' not in text


def _expected_marks(failures, drawing):
    """{data-name or ('line', a, b) or 'node' or ('unplaced', subject): set of checks} the page must mark.

    A failing GPU pair marks the GPU(s) of the pair that most failing pairs share, and its NVLink element: that
    GPU's line to the NVSwitch, or (no NVSwitch) the pair's line (drawn as missing when the matrix has none); a
    link-count failure marks the GPU's NVSwitch line or pair lines too. A GPU on the PCI bus that nvidia-smi does
    not list is a box named by its bus id, marked with the node failures naming it, else gpu_count (driver
    loaded) or driver_loaded.
    """
    gpus = set('GPU%d' % g['index'] for g in drawing['gpus'])
    ports = set('%s/%s' % (n['name'], p['port']) for n in drawing['nics'] for p in n['ports'])
    nics = set(n['name'] for n in drawing['nics'])
    switched = bool(drawing['nvswitches'] and drawing['gpus'])
    lines = set(('GPU%d' % p['a'], 'GPU%d' % p['b']) for p in drawing['nvlink']) if not switched else set()
    marks = {}

    def add(name, check):
        marks.setdefault(name, set()).add(check)
    pairs = [f for f in failures if re.match(r'GPU[0-9]+-GPU[0-9]+\Z', f['subject'] or '')]
    count = {}
    for item in pairs:
        for gpu in item['subject'].split('-'):
            count[gpu] = count.get(gpu, 0) + 1
    for item in pairs:
        first, second = item['subject'].split('-')
        for gpu in (first, second):
            if count[gpu] == max(count[first], count[second]):
                add(gpu, item['check'])
                if switched:
                    add(('line', gpu, 'NVSwitch'), item['check'])
        if not switched:
            add(('line', first, second), item['check'])
            lines.add((first, second))
    for item in failures:
        subject = item['subject']
        if item in pairs:
            continue
        if subject in (None, 'node'):
            add('node', item['check'])
        elif re.match(r'GPU[0-9]+\Z', subject) or subject in nics:
            add(subject, item['check'])
            if item['check'] == 'nvlink_active_links' and subject in gpus:
                if switched:
                    add(('line', subject, 'NVSwitch'), item['check'])
                for line in lines:
                    if subject in line:
                        add(('line',) + line, item['check'])
        elif subject in ports:
            add(subject, item['check'])
            add(subject.rsplit('/', 1)[0], item['check'])
        else:
            add(('unplaced', subject), item['check'])
    node = [f for f in failures if f['subject'] in (None, 'node')]
    fallback = 'gpu_count' if drawing['driver_loaded'] else 'driver_loaded'
    for gpu in drawing.get('pci_gpus') or []:
        named = [f for f in node if gpu['bus'] in f['message']] or [f for f in node if f['check'] == fallback]
        for item in named:
            add(gpu['bus'], item['check'])
    return marks, gpus


def _found_marks(section):
    found = {}
    for node in _marked(section):
        if node.tag == 'line':
            key = ('line', node.attrs['data-a'], node.attrs['data-b'])
        else:
            key = node.attrs['data-name']
        found[key] = set(node.attrs['data-checks'].split())
    for banner in section.find('p', 'node-failure'):
        found['node'] = set(banner.attrs['data-checks'].split())
    for item in section.find('li'):
        found[('unplaced', item.attrs['data-subject'])] = set(item.attrs['data-checks'].split())
    return found


@pytest.mark.parametrize('name,fault,params', FAULT_CASES, ids=['%s-%s' % c[:2] for c in FAULT_CASES])
def test_fault_subjects_are_marked_on_the_drawing(name, fault, params):
    healthy = _record('gpu-ok', name)
    record = _record('gpu-bad', name, fault, params)
    failures = record['pre_check']['failures']
    assert failures, fault
    text, root = _page([healthy, record])
    section = _section(root, 'gpu-bad')
    assert section.attrs['data-status'] == 'held_back' and 'data-group' not in section.attrs
    expected, gpus = _expected_marks(failures, record['drawing'])
    assert _found_marks(section) == expected
    svg = section.find('svg', 'topology')
    assert len(svg) == 1
    for node in _marked(svg[0]):
        titles = [c for c in node.children if c.tag == 'title']
        assert titles and titles[0].text
        checks = node.attrs['data-checks'].split()
        assert checks == sorted(set(checks))
        if node.tag == 'g' and 'port' not in node.classes():
            # the message is written beside the element
            messages = [f['message'] for f in failures if f['check'] in checks]
            assert any(m.split()[0] in node.all_text() for m in messages)
    for gpu in svg[0].find('g', 'gpu'):
        if 'missing' in gpu.classes():
            assert gpu.attrs['data-name'] not in gpus and gpu.attrs['data-marked'] == 'true'
    # every failure is in the table, with its message
    rows = section.find('tr', 'failure')
    assert [(r.attrs['data-check'], r.attrs['data-subject']) for r in rows] == [
        (f['check'], f['subject']) for f in failures]
    assert _section(root, 'gpu-ok').find('svg', 'topology') and not _marked(_section(root, 'gpu-ok'))


def test_fault_marks_by_kind():
    marks = {}
    for name, fault, params in FAULT_CASES:
        text, root = _page([_record('h', name, fault, params)])
        marks[(name, fault)] = _found_marks(_section(root, 'h'))
    assert marks[(H100, 'ib_port_down')] == {'mlx5_6/1': {'nic_port_state'}, 'mlx5_6': {'nic_port_state'}}
    assert marks[(H100, 'pcie_downtrained')] == {'GPU5': {'pcie_gen', 'pcie_width'}}
    buses = ['0000:19:00.0', '0000:3b:00.0', '0000:4c:00.0', '0000:5d:00.0', '0000:9b:00.0', '0000:bb:00.0',
             '0000:cb:00.0', '0000:db:00.0']
    expected = dict((bus, {'driver_loaded'}) for bus in buses)
    expected['node'] = {'driver_loaded'}
    assert marks[(H100, 'driver_not_loaded')] == expected
    assert marks[(H100, 'gpu_missing')] == {'node': {'gpu_count', 'outputs_disagree'},
                                            '0000:9b:00.0': {'outputs_disagree'}}
    both = {'nvlink_active_links', 'nvlink_relation'}
    # only the GPU all failing pairs share, and its line to the NVSwitch
    assert marks[(H100, 'nvlink_down')] == {'GPU3': both, ('line', 'GPU3', 'NVSwitch'): both}
    # no NVSwitch: GPU1 and the links it should have, drawn as missing
    assert marks[(A100, 'nvlink_down')] == dict(
        [('GPU1', both)] + [(('line',) + tuple(sorted(('GPU1', 'GPU%d' % i))), both) for i in (0, 2, 3, 4, 5, 6, 7)])
    assert marks[(PCIE, 'roce_retrans_high')] == {'rocep1s0f0/1': {'nic_retrans_ratio'},
                                                  'rocep1s0f0': {'nic_retrans_ratio'}}
    # the GPU whose NVLink is down is drawn with a dashed line to the switch, labelled 0
    text, root = _page([_record('h', H100, 'nvlink_down', {'gpu': 3})])
    line = root.find('line', 'nvlink', data_a='GPU3')[0]
    assert line.attrs['data-links'] == '0' and 'stroke-dasharray' in line.attrs


def test_subjects_that_name_nothing_on_the_drawing_are_never_dropped():
    failures = [
        {'check': 'gpu_present', 'subject': 'GPU9', 'expected': 'present', 'actual': 'absent', 'message': 'GPU9 lost'},
        {'check': 'pci_seen', 'subject': '0000:3b:00.0', 'expected': 1, 'actual': 0, 'message': 'bus gone'},
        {'check': 'nic_missing', 'subject': 'mlx5_99', 'expected': 'present', 'actual': 'absent', 'message': 'no'},
        {'check': 'nic_port_state', 'subject': 'mlx5_0/7', 'expected': 'ACTIVE', 'actual': 'not checked',
         'message': 'port 7 of mlx5_0 is not in sysfs'},
        {'check': 'gpu_count', 'subject': None, 'expected': 8, 'actual': 7, 'message': 'one short'},
        {'check': 'nvlink_relation', 'subject': 'GPU0-GPU1', 'expected': 'NV12', 'actual': 'NV4', 'message': 'few'},
        {'check': 'nic_link_layer', 'subject': 'mlx5_1', 'expected': 'IB', 'actual': 'not checked',
         'message': 'mlx5_1 not read'},
    ]
    record = _record('h', A100)
    record['pre_check'] = {'passed': False, 'failures': failures}
    text, root = _page([record])
    section = _section(root, 'h')
    found = _found_marks(section)
    assert found == {
        'GPU9': {'gpu_present'}, ('unplaced', '0000:3b:00.0'): {'pci_seen'}, ('unplaced', 'mlx5_99'): {'nic_missing'},
        ('unplaced', 'mlx5_0/7'): {'nic_port_state'}, 'node': {'gpu_count'}, 'GPU0': {'nvlink_relation'},
        'GPU1': {'nvlink_relation'}, ('line', 'GPU0', 'GPU1'): {'nvlink_relation'}, 'mlx5_1': {'nic_link_layer'}}
    missing = section.find('g', 'gpu', data_name='GPU9')[0]
    assert missing.classes() == ['gpu', 'missing'] and 'GPU9 lost' in missing.all_text()
    assert 'bus gone' in section.find('ul', 'unplaced')[0].all_text()
    assert 'one short' in section.find('p', 'node-failure')[0].all_text()
    line = section.find('line', 'nvlink', data_a='GPU0', data_b='GPU1')[0]
    assert line.children[0].tag == 'title' and 'few' in line.children[0].text


def test_regressions_and_post_check_failures_are_marked():
    record = _record('h', H100)
    record['post_check'] = {'passed': False, 'failures': [
        {'check': 'pcie_gen', 'subject': 'GPU1', 'expected': 5, 'actual': 3, 'message': 'GPU1 at Gen3'}],
        'regressions': [{'check': 'nic_port_down', 'subject': 'mlx5_3/1', 'before': 'ACTIVE', 'after': 'DOWN',
                         'message': 'went down'}]}
    record['phase'] = 'done'
    text, root = _page([record, _record('h2', H100)])
    section = _section(root, 'h')
    assert section.attrs['data-status'] == 'regressed'
    assert _found_marks(section) == {'GPU1': {'pcie_gen'}, 'mlx5_3/1': {'nic_port_down'}, 'mlx5_3': {'nic_port_down'}}
    rows = section.find('tr', 'regression')
    assert [c.all_text() for c in rows[0].children][1:5] == ['nic_port_down', 'mlx5_3/1', 'ACTIVE', 'DOWN']
    assert 'went down' in section.all_text()


def test_identical_healthy_hosts_share_one_drawing():
    records = [_record('gpu-a%02d' % i, H100, rack='rack_a') for i in range(1, 4)]
    records += [_record('gpu-b01', H100, 'ib_port_down', {'nic': 'mlx5_6'}, rack='rack_b'),
                _record('gpu-b02', PCIE, rack='rack_b'), _record('gpu-b03', H100, rack='rack_b')]
    other_class = _record('gpu-c01', H100, rack='rack_c')
    other_class['node_class'] = 'other'
    text, root = _page(records + [other_class])
    groups = root.find('section', 'group')
    assert len(groups) == 1
    group = groups[0]
    assert group.attrs['data-hosts'] == 'gpu-a01 gpu-a02 gpu-a03 gpu-b03'
    assert len(group.find('svg', 'topology')) == 1 and len(group.find('g', 'gpu')) == 8
    for host in ('gpu-a01', 'gpu-a02', 'gpu-a03', 'gpu-b03'):
        section = _section(root, host)
        assert section.attrs['data-group'] == group.attrs['id'] and not section.find('svg')
        assert section.find('a')[0].attrs['href'] == '#' + group.attrs['id']
    for host in ('gpu-b01', 'gpu-b02', 'gpu-c01'):
        assert len(_section(root, host).find('svg', 'topology')) == 1
    assert len(root.find('svg')) == 4
    assert report_html.render_html(report_model.build_report(records + [other_class])) == text


def test_a_thousand_identical_hosts_make_a_small_page():
    one = _record('gpu-0000', H100)
    records = []
    for i in range(1000):
        record = copy.deepcopy(one)
        record['host'] = 'gpu-%04d' % i
        record['rack'] = 'rack_%02d' % (i // 40)
        records.append(record)
    text, root = _page(records)
    assert len(root.find('svg')) == 1 and len(root.find('section', 'host')) == 1000
    assert len(text) < 800 * 1000
    assert len(root.find('section', 'group')[0].attrs['data-hosts'].split()) == 1000


def test_hosts_without_a_drawing_say_why():
    records = [{'host': 'gone', 'rack': 'rack_a', 'gather': {'unreachable': True, 'msg': 'ssh timeout'}},
               {'host': 'failed', 'rack': 'rack_a', 'error': 'task X failed', 'pre_check': {
                   'passed': False, 'failures': [{'check': 'pcie_gen', 'subject': 'GPU2', 'message': 'slow'}]}}]
    text, root = _page(records, racks={'rack_a': ['gone', 'failed', 'later']})
    assert _section(root, 'gone').find('p', 'no-drawing')[0].text == 'no topology: unreachable'
    assert _section(root, 'later').find('p', 'no-drawing')[0].text == 'no topology: not started'
    assert _section(root, 'later').attrs['data-status'] == 'not_started'
    failed = _section(root, 'failed')
    assert failed.find('p', 'no-drawing')[0].text.startswith('no topology: not gathered')
    assert _found_marks(failed) == {('unplaced', 'GPU2'): {'pcie_gen'}}
    assert not root.find('svg')


def test_the_snapshot_is_drawn_when_the_record_has_no_drawing():
    topology = _profile(PCIE)[0]
    record = {'host': 'h', 'rack': 'r', 'pre_check': {'passed': True, 'failures': []}, 'gpu_topology': topology}
    text, root = _page([record])
    assert len(_section(root, 'h').find('g', 'gpu')) == 4


def test_unknown_numa_nodes_share_one_column():
    drawing = report_html.drawing_from_topology(_profile(PCIE)[0])
    drawing['gpus'][1]['numa'] = None
    drawing['gpus'][2]['numa'] = 1
    drawing['nics'][0]['numa'] = None
    svg = Tree(report_svg.render_svg(drawing)).root
    assert [t.text for t in svg.find('text', 'head')] == ['NUMA 0 \u00b7 CPUs 0-7', 'NUMA 1 \u00b7 CPUs 0-7',
                                                          'NUMA ?']
    assert [n.attrs['data-numa'] for n in svg.find('g', 'numa')] == ['0', '1', '?']
    topology = _profile(PCIE)[0]
    topology['gpus'][0]['numa_node'] = -1
    assert report_html.drawing_from_topology(topology)['gpus'][0]['numa'] is None


def test_hostile_text_is_escaped_everywhere():
    record = _record(HOSTILE, PCIE, rack=HOSTILE)
    record['node_class'] = HOSTILE
    record['drawing']['nics'][0]['name'] = HOSTILE
    record['drawing']['affinity'][0]['nics'] = [HOSTILE]
    record['drawing']['gpus'][0]['name'] = HOSTILE
    record['pre_check'] = {'passed': False, 'failures': [
        {'check': HOSTILE, 'subject': HOSTILE + '/1', 'expected': HOSTILE, 'actual': 'not checked',
         'message': HOSTILE},
        {'check': 'x', 'subject': HOSTILE, 'expected': None, 'actual': None, 'message': HOSTILE},
        {'check': 'y', 'subject': 'GPU0', 'expected': {'a': HOSTILE}, 'actual': [HOSTILE], 'message': HOSTILE}]}
    twin = copy.deepcopy(record)
    twin['host'] = HOSTILE + '2'
    twin['pre_check'] = {'passed': True, 'failures': []}
    triplet = copy.deepcopy(twin)
    triplet['host'] = HOSTILE + '3'
    text, root = _page([record, twin, triplet], title=HOSTILE)
    assert '<script' not in text and ']]>' not in text and '\x1b' not in text and '\u202e' not in text
    assert 'alert(1)' in text
    tags = [n.tag for n in root.walk()]
    assert 'script' not in tags
    clean = HOSTILE.replace('\x1b', '\ufffd').replace('\u202e', '\ufffd')
    section = _section(root, clean)
    assert re.match(r'host-[a-z0-9-]*[0-9a-f]{8}\Z', section.attrs['id'])
    assert section.find('g', 'nic', data_name=clean)[0].attrs['data-marked'] == 'true'
    assert section.find('g', 'port', data_name=clean + '/1')
    assert section.find('line', 'affinity', data_nic=clean)
    assert root.find('title')[0].text == clean
    for node in root.walk():
        if 'id' in node.attrs:
            assert re.match(r'[a-z0-9-]+\Z', node.attrs['id']), node.attrs['id']
    group = root.find('section', 'group')[0]
    assert group.attrs['data-hosts'] == clean + '2 ' + clean + '3'


def test_page_head_verdict_and_check_mode():
    record = _record('h', PCIE)
    del record['roles']
    text, root = _page([record], title='Rack report')
    assert text.startswith('<!DOCTYPE html>')
    assert root.find('meta')[0].attrs == {'charset': 'utf-8'}
    assert root.find('p', 'verdict')[0].attrs['data-verdict'] == 'HEALTHY'
    assert not root.find('p', 'check-mode')
    assert [c.all_text() for c in root.find('table', 'rack')[0].find('tr')[1].children] == [
        'h', 'pcie_p100', 'validated', 'PASS', '-', '-', '-']
    record['check_mode'] = True
    record['pre_check'] = {'passed': False, 'failures': [{'check': 'c', 'subject': 'GPU0', 'message': 'm'}]}
    text, root = _page([record])
    assert root.find('p', 'check-mode') and root.find('p', 'verdict')[0].attrs['data-verdict'] == 'NOT HEALTHY'
    assert root.find('td', data_count='failed')[0].text == '1'
    assert not re.search(r'<(?:link|img|iframe|object|embed)\b', text) and 'http' not in text


def test_slug():
    assert report_html.slug('gpu-a01') == 'gpu-a01'
    assert re.match(r'gpu-a01-[0-9a-f]{8}\Z', report_html.slug('GPU_A01'))
    assert report_html.slug('GPU_A01') != report_html.slug('gpu-a01') != report_html.slug('gpu.a01')
    assert re.match(r'[0-9a-f]{8}\Z', report_html.slug(u'\u00e9\u00e9'))
    assert re.match(r'[0-9a-f]{8}\Z', report_html.slug(''))


def test_nvlink_pairs_mark_the_common_gpu_and_its_link():
    # H100 (NVSwitch): GPU3's box and its line to the switch, red dashed, with every pair message; peers unmarked
    text, root = _page([_record('h', H100, 'nvlink_down', {'gpu': 3})])
    section = _section(root, 'h')
    gpu3 = section.find('g', 'gpu', data_name='GPU3')[0]
    assert all(('GPU%d to GPU3' % i if i < 3 else 'GPU3 to GPU%d' % i) in gpu3.children[0].text
               for i in (0, 1, 2, 4, 5, 6, 7))
    line = section.find('line', 'nvlink', data_a='GPU3', data_b='NVSwitch')[0]
    assert line.attrs['data-checks'] == 'nvlink_active_links nvlink_relation' and 'GPU0 to GPU3' in line.all_text()
    assert [n.attrs.get('data-name', n.attrs.get('data-a')) for n in _marked(section)] == ['GPU3', 'GPU3']
    # A100 (no NVSwitch): the links GPU1 should have are drawn as missing, red dashed
    text, root = _page([_record('h', A100, 'nvlink_down', {'gpu': 1})])
    missing = _section(root, 'h').find('line', 'missing')
    assert sorted((n.attrs['data-a'], n.attrs['data-b']) for n in missing) == sorted(
        tuple(sorted(('GPU1', 'GPU%d' % i))) for i in (0, 2, 3, 4, 5, 6, 7))
    assert all(n.classes() == ['nvlink', 'missing'] and n.attrs['data-marked'] == 'true' for n in missing)
    assert 'svg line.nvlink.missing{stroke:#d0021b;stroke-dasharray' in text
    # one failing pair marks both of its GPUs
    record = _record('h', A100)
    record['pre_check'] = {'passed': False, 'failures': [
        {'check': 'nvlink_relation', 'subject': 'GPU0-GPU1', 'message': 'GPU0 to GPU1 is NV4, expected NV12'}]}
    assert set(_found_marks(_section(_page([record])[1], 'h'))) == {'GPU0', 'GPU1', ('line', 'GPU0', 'GPU1')}


def test_gpus_nvidia_smi_does_not_list_are_drawn_by_bus_id():
    drawing = _record('h', H100, 'gpu_missing', {'gpu': 4})['drawing']
    assert drawing['pci_gpus'] == [{'bus': '0000:9b:00.0', 'model': 'NVIDIA H100 80GB HBM3', 'numa': None}]
    assert [g['bus'] for g in drawing['gpus']][3:5] == ['0000:5d:00.0', '0000:bb:00.0']
    text, root = _page([_record('h', H100, 'gpu_missing', {'gpu': 4})])
    section = _section(root, 'h')
    box = section.find('g', 'missing')[0]
    assert box.attrs['data-name'] == '0000:9b:00.0' and box.attrs['data-checks'] == 'outputs_disagree'
    assert '9b:00.0' in box.all_text() and 'not listed by nvidia-smi' in box.all_text()
    # the renumbered GPU4 shows the bus id of the board it is
    assert 'bb:00.0' in section.find('g', 'gpu', data_name='GPU4')[0].all_text()
    text, root = _page([_record('h', H100, 'driver_not_loaded')])
    boxes = _section(root, 'h').find('g', 'missing')
    assert len(boxes) == 8 and all(b.attrs['data-checks'] == 'driver_loaded' for b in boxes)


def _gated(host, rack='rack_a', summary='level 1: Fail (Memtest on GPU 1)'):
    record = _record(host, H100, rack=rack, phase='done')
    record['post_check'] = {'passed': True, 'failures': [], 'regressions': [], 'deferred': []}
    record['gates'] = {'dcgm': {'name': 'dcgm_diag', 'ran': True, 'passed': False, 'summary': summary,
                                'failures': [{'check': 'dcgm_diag', 'subject': 'GPU 1', 'expected': 'Pass',
                                              'actual': 'Fail', 'message': 'Memtest failed on GPU 1'}]}}
    return record


def test_hosts_share_a_drawing_only_with_the_same_status_and_findings():
    healthy = [_record('ok-%d' % i, H100, phase='done', post_check={'passed': True, 'failures': []})
               for i in range(2)]
    reboot = _record('reboot', H100, phase='done', reboot={'required_by': ['driver'], 'rebooted': False},
                     post_check={'passed': True, 'failures': []})
    port = [_record('port-%d' % i, H100, 'ib_port_down', {'nic': 'mlx5_6'}) for i in range(3)]
    gated = [_gated('gate-0'), _gated('gate-1'), _gated('gate-2', summary='other')]
    text, root = _page(healthy + [reboot] + port + gated)
    groups = dict((g.attrs['data-hosts'], g) for g in root.find('section', 'group'))
    assert sorted(groups) == ['gate-0 gate-1 gate-2', 'ok-0 ok-1', 'port-0 port-1 port-2']
    assert len(_section(root, 'reboot').find('svg')) == 1
    group = groups['port-0 port-1 port-2']
    assert group.attrs['data-status'] == 'held_back' and group.attrs['data-marks'] == 'true'
    assert set(_found_marks(group)) == {'mlx5_6', 'mlx5_6/1'}
    assert 'held_back' in group.find('h3')[0].all_text() and 'driver 545.23.08' in group.find('h3')[0].all_text()
    section = _section(root, 'port-1')
    assert section.find('tr', 'failure') and 'Drawing shared with 2 other hosts' in section.all_text()
    # a failed gate is a finding: in the table, marked on the drawing (subject "GPU 1")
    gate = groups['gate-0 gate-1 gate-2']
    assert gate.attrs['data-status'] == 'failed' and _found_marks(gate) == {'GPU1': {'dcgm_diag'}}
    rows = _section(root, 'gate-0').find('tr', 'failure')
    assert [(r.attrs['data-check'], r.children[0].all_text()) for r in rows] == [('dcgm_diag', 'gate')]
    # the Gates column of the rack table
    table = root.find('table', 'rack')[0]
    assert table.find('tr')[0].children[5].all_text() == 'Gates'
    assert table.find('tr', data_host='gate-0')[0].children[5].all_text() == 'dcgm_diag FAIL'
    assert table.find('tr', data_host='ok-0')[0].children[5].all_text() == '-'


def test_drawings_keep_their_width_and_readable_text():
    text, root = _page([_record('h', A100, 'ib_port_down', {'nic': 'mlx5_2'})])
    style = root.find('style')[0].text
    assert 'max-width:100%;height:auto' not in style and 'div.drawing{overflow-x:auto' in style
    sizes = [float(m) for m in re.findall(r'svg \.(?:msg|lbl)\{font-size:([0-9.]+)px', style)]
    assert len(sizes) == 2 and min(sizes) >= 11
    assert root.find('div', 'drawing')[0].children[0].tag == 'svg'
    assert 'line.affinity[data-relation="SYS"]' in style and 'line.affinity[data-relation="NODE"]' in style
    assert re.match(r'Topology . driver [0-9.]+\Z', root.find('h4', 'drawing-head')[0].text)
    # H100: the NICs of unknown NUMA node that are PIX to a GPU sit in that GPU's column
    svg = Tree(report_svg.render_svg(_record('h', H100)['drawing'])).root
    columns = dict((c.attrs['data-numa'], c) for c in svg.find('g', 'numa'))
    nic = svg.find('g', 'nic', data_name='mlx5_5')[0]
    rect = columns['0'].find('rect')[0].attrs
    x = int(nic.find('rect')[0].attrs['x'])
    assert int(rect['x']) <= x < int(rect['x']) + int(rect['width'])


def test_bidi_marks_and_separators_are_replaced():
    assert report_svg.clean(u'a\u200eb\u200fc\u061cd\u2028e\u2029f') == u'a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf'
