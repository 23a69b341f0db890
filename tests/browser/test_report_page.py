# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rack report page as a browser builds it (Debian's chromium, headless).

The pages (pages.py) are rendered by the collection's report_html from simulated nodes; chromium loads each
file and dumps the DOM it built, which html.parser reads back. Every GPU, NIC and port of each host's drawing
must be an element of the drawing that shows the host; every failure and regression subject of a failing host
must be marked in that host's section (or be in its node-failure banner or unplaced list), with the checks
that name it; nothing else may be marked. The demo and faults pages are also saved as full-page screenshots
in .build/screenshots/.

Skipped only when chromium is not installed and CI is not set; under CI a missing chromium fails.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import warnings

import pytest

import dom
import headless
import pages

SCREENSHOTS = os.path.join(pages.REPO, '.build', 'screenshots')
BUILDERS = {'demo-rack': pages.demo_page, 'faults': pages.faults_page, 'hostile': pages.hostile_page}
SCREENSHOT_PAGES = ('demo-rack', 'faults')
ALL_PAGES = ('demo-rack', 'faults', 'hostile')

GPU_RE = re.compile(r'^GPU\d+$')
PAIR_RE = re.compile(r'^(GPU\d+)-(GPU\d+)$')
SLUG_RE = re.compile(r'^host-[a-z0-9-]+$')
FETCHING_ATTRS = ('href', 'src', 'xlink:href', 'action', 'srcset', 'poster', 'data')


# ---------------------------------------------------------------- fixtures

def require_chromium(environ=None):
    """chromium's path; skips the test when it is missing, fails it when it is missing under CI."""
    path = headless.find_chromium()
    if path is None:
        if headless.in_ci(environ):
            pytest.fail('chromium is not installed and CI is set: install it (apt-get install chromium, '
                        'or `make host`)')
        pytest.skip('chromium is not installed (apt-get install chromium, or `make host`)')
    return path


@pytest.fixture(scope='session')
def chromium():
    return headless.Chromium(require_chromium())


@pytest.fixture(scope='session')
def page(chromium, tmp_path_factory):
    """page(name) -> Page: the file, the report it shows and the DOM chromium built from it."""
    cache = {}

    def get(name):
        if name not in cache:
            try:
                pages.report_html()
            except ImportError as exc:
                pytest.fail('the HTML renderer (plugins/module_utils/report/html.py) cannot be imported: %s' % exc)
            if name in SCREENSHOT_PAGES:
                path = os.path.join(SCREENSHOTS, name + '.html')
            else:
                path = str(tmp_path_factory.mktemp('pages') / (name + '.html'))
            report = BUILDERS[name](path)
            cache[name] = Page(name, path, report, dom.parse(chromium.dump_dom(path)))
        return cache[name]
    return get


class Page(object):

    def __init__(self, name, path, report, doc):
        self.name = name
        self.path = path
        self.report = report
        self.doc = doc
        self.records = [r for rack in report['racks'] for r in rack['hosts']]

    def host_sections(self, host):
        return [s for s in self.doc.find_all('section', cls='host') if s.get('data-host') == host]

    def group_sections(self, host):
        return [s for s in self.doc.find_all('section', cls='group') if host in s.get('data-hosts', '').split()]

    def drawings(self, host):
        """The distinct svg.topology elements shown for ``host`` (its section and the groups that list it)."""
        found = []
        for section in self.host_sections(host) + self.group_sections(host):
            for svg in section.find_all('svg', cls='topology'):
                if all(svg is not other for other in found):
                    found.append(svg)
        return found


# ---------------------------------------------------------------- what a record says

def findings(record):
    """Failures and regressions of the record's pre- and post-check, failures of its failed gates."""
    items = []
    for key in ('pre_check', 'post_check'):
        result = record.get(key) or {}
        items.extend(result.get('failures') or [])
        items.extend(result.get('regressions') or [])
    for gate in record.get('gates') or []:
        if gate.get('ran') and not gate.get('passed'):
            items.extend(gate.get('failures') or [{'check': gate['name'], 'subject': 'node',
                                                   'message': gate.get('summary') or 'the gate failed'}])
    return items


def drawn_names(drawing):
    gpus = ['GPU%d' % g['index'] for g in drawing.get('gpus') or []]
    nics = [n['name'] for n in drawing.get('nics') or []]
    ports = dict(('%s/%s' % (n['name'], p['port']), n['name']) for n in drawing.get('nics') or []
                 for p in n.get('ports') or [])
    return gpus, nics, ports


def element_key(elem):
    """What a drawing element stands for: ('gpu', 'GPU3'), ('nic', ...), ('port', ...), ('nvlink', {a, b})."""
    classes = elem.classes
    if elem.tag == 'g' and 'gpu' in classes:
        return ('gpu', elem.get('data-name'))
    if elem.tag == 'g' and 'nic' in classes:
        return ('nic', elem.get('data-name'))
    if elem.tag == 'g' and 'port' in classes:
        return ('port', elem.get('data-name'))
    if elem.tag == 'line' and 'nvlink' in classes:
        return ('nvlink', frozenset((elem.get('data-a'), elem.get('data-b'))))
    if 'node-failure' in classes:
        return ('node', 'node')
    return None


def expected_marks(drawing, items):
    """({element key: checks} the findings ``items`` mark, {key: [messages its <title> carries]}, [unplaced]).

    A GPU pair (nvlink_relation) marks the GPU(s) of the pair that most failing pairs share, with every pair
    message, and the NVLink element: that GPU's line to the NVSwitch, or without NVSwitch the pair's line (drawn
    as missing when the matrix has none). nvlink_active_links also marks the GPU's NVSwitch line or pair lines.
    A GPU on the PCI bus nvidia-smi does not list is a g.gpu.missing named by its bus id, marked with the node
    failures naming it, else gpu_count (driver loaded) or driver_loaded.
    """
    gpus, nics, ports = drawn_names(drawing)
    switched = bool(drawing.get('nvswitches') and gpus)
    lines = set() if switched else set(frozenset(('GPU%s' % p['a'], 'GPU%s' % p['b']))
                                       for p in drawing.get('nvlink') or [])
    expected, titled, unplaced = {}, {}, []

    def add(key, item, title=False):
        expected.setdefault(key, set()).add(item['check'])
        if title:
            titled.setdefault(key, []).append(item['message'])
    pairs = [(i, PAIR_RE.match(i['subject'] or '')) for i in items]
    pairs = [(i, m.groups()) for i, m in pairs if m]
    count = {}
    for item, pair in pairs:
        for gpu in pair:
            count[gpu] = count.get(gpu, 0) + 1
    for item, pair in pairs:
        for gpu in pair:
            if count[gpu] == max(count[pair[0]], count[pair[1]]):
                add(('gpu', gpu), item, True)
                if switched and gpu in gpus:
                    add(('nvlink', frozenset((gpu, 'NVSwitch'))), item)
        if not switched:
            add(('nvlink', frozenset(pair)), item)
            lines.add(frozenset(pair))
    for item in items:
        subject = item['subject']
        if PAIR_RE.match(subject or ''):
            continue
        if subject in (None, 'node'):
            add(('node', 'node'), item)
        elif subject in ports:
            add(('port', subject), item, True)
            add(('nic', ports[subject]), item)
        elif subject in nics:
            add(('nic', subject), item, True)
        elif GPU_RE.match(subject.replace(' ', '')):
            gpu = subject.replace(' ', '')
            add(('gpu', gpu), item, True)
            if item['check'] == 'nvlink_active_links' and gpu in gpus:
                for line in ([frozenset((gpu, 'NVSwitch'))] if switched else [x for x in lines if gpu in x]):
                    add(('nvlink', line), item)
        else:
            unplaced.append(item)
    node = [i for i in items if i['subject'] in (None, 'node')]
    fallback = 'gpu_count' if drawing.get('driver_loaded') else 'driver_loaded'
    for gpu in drawing.get('pci_gpus') or []:
        for item in [i for i in node if gpu['bus'] in i['message']] or [i for i in node if i['check'] == fallback]:
            add(('gpu', gpu['bus']), item, True)
    return expected, titled, unplaced


# ---------------------------------------------------------------- checks (each returns a list of problems)

def check_drawing(host, drawing, svg):
    problems = []
    gpus, nics, ports = drawn_names(drawing)
    where = 'host %r' % host
    drawn_gpus = [e for e in svg.find_all('g', cls='gpu') if 'missing' not in e.classes]
    if sorted(e.get('data-name') for e in drawn_gpus) != sorted(gpus):
        problems.append('%s: g.gpu data-name %s, the drawing has %s'
                        % (where, sorted(e.get('data-name') for e in drawn_gpus), sorted(gpus)))
    drawn_nics = svg.find_all('g', cls='nic')
    if sorted(e.get('data-name') for e in drawn_nics) != sorted(nics):
        problems.append('%s: g.nic data-name %s, the drawing has %s'
                        % (where, sorted(e.get('data-name') for e in drawn_nics), sorted(nics)))
    for nic in drawing.get('nics') or []:
        boxes = [e for e in drawn_nics if e.get('data-name') == nic['name']]
        for port in nic.get('ports') or []:
            name = '%s/%s' % (nic['name'], port['port'])
            found = [p for box in boxes for p in box.find_all('g', cls='port', data_name=name)]
            if not found:
                problems.append('%s: no g.port data-name=%r inside g.nic %r' % (where, name, nic['name']))
            for elem in found:
                if elem.get('data-state') != str(port.get('state')):
                    problems.append('%s: port %r data-state=%r, the drawing says %r'
                                    % (where, name, elem.get('data-state'), port.get('state')))
    count = drawing.get('nvswitches') or 0
    lines = [element_key(e)[1] for e in svg.find_all('line', cls='nvlink')]
    if count and gpus:
        # the bar spans the GPUs: a node without GPUs listed (driver not loaded) may leave it out
        bars = svg.find_all('g', cls='nvswitch')
        if [b.get('data-count') for b in bars] != [str(count)]:
            problems.append('%s: g.nvswitch data-count %s, the drawing has %d NVSwitches'
                            % (where, [b.get('data-count') for b in bars], count))
        for gpu in drawing.get('gpus') or []:
            if gpu.get('nvlink_active') and frozenset(('GPU%d' % gpu['index'], 'NVSwitch')) not in lines:
                problems.append('%s: no line.nvlink from GPU%d to the NVSwitch' % (where, gpu['index']))
    elif not count:
        for link in drawing.get('nvlink') or []:
            if frozenset(('GPU%s' % link['a'], 'GPU%s' % link['b'])) not in lines:
                problems.append('%s: no line.nvlink between GPU%s and GPU%s' % (where, link['a'], link['b']))
    affinity = set((e.get('data-gpu'), e.get('data-nic'), e.get('data-relation'))
                   for e in svg.find_all('line', cls='affinity'))
    for item in drawing.get('affinity') or []:
        for nic in item.get('nics') or []:
            if nic in nics and ('GPU%s' % item['gpu'], nic, item.get('relation')) not in affinity:
                problems.append('%s: no line.affinity GPU%s -> %s (%s)' % (where, item['gpu'], nic, item.get('relation')))
    return problems


def check_marks(host, scope, drawing, svg, items):
    """The marks in ``scope`` (the host's section) are exactly those the failures/regressions ``items`` name."""
    problems = []
    where = 'host %r' % host
    gpus = drawn_names(drawing)[0] + [g['bus'] for g in drawing.get('pci_gpus') or []]
    expected, titled, unplaced = expected_marks(drawing, items)
    elements = {}
    for elem in scope.iter():
        key = element_key(elem)
        if key is not None and key[0] != 'node':
            elements.setdefault(key, []).append(elem)
        if elem.get('data-marked') == 'true' and (key is None or key not in expected):
            problems.append('%s: %s is marked, but no failure or regression names it' % (where, elem.describe()))
    for key, checks in sorted(expected.items(), key=lambda kv: repr(kv[0])):
        if key[0] == 'node':
            continue
        found = elements.get(key, [])
        if not found:
            problems.append('%s: no element for %s (checks %s)' % (where, _key_text(key), sorted(checks)))
        if key[0] == 'gpu' and key[1] not in gpus and not any('missing' in e.classes for e in found):
            problems.append('%s: %s is not in the drawing and has no g.gpu.missing placeholder' % (where, key[1]))
        for elem in found:
            if elem.get('data-marked') != 'true':
                problems.append('%s: %s is not data-marked (checks %s)' % (where, elem.describe(), sorted(checks)))
            elif elem.get('data-checks', '').split() != sorted(checks):
                problems.append('%s: %s data-checks=%r, expected %r'
                                % (where, elem.describe(), elem.get('data-checks'), ' '.join(sorted(checks))))
    for key, messages in titled.items():
        for elem in elements.get(key, []):
            tip = dom.collapse(' '.join(elem.own_titles()))
            for message in messages:
                if dom.collapse(message) not in tip:
                    problems.append('%s: the <title> of %s does not carry the message %r (it says %r)'
                                    % (where, elem.describe(), message, tip))
    banners = scope.find_all('p', cls='node-failure')
    node_checks = sorted(expected.get(('node', 'node'), ()))
    banner_checks = sorted(set(c for b in banners for c in b.get('data-checks', '').split()))
    if banner_checks != node_checks:
        problems.append('%s: p.node-failure data-checks %s, expected %s' % (where, banner_checks, node_checks))
    if banners and svg is not None and _position(scope, banners[0]) > _position(scope, svg):
        problems.append('%s: the node-failure banner is below the drawing' % where)
    lists = ' '.join(u.text() for u in scope.find_all('ul', cls='unplaced'))
    for item in unplaced:
        for text in (item['subject'], item['message']):
            if dom.collapse(text) not in lists:
                problems.append('%s: subject %r (%s) is not listed in ul.unplaced with %r'
                                % (where, item['subject'], item['check'], text))
    return problems


def _key_text(key):
    if key[0] == 'nvlink':
        return 'line.nvlink %s' % '-'.join(sorted(key[1]))
    return '%s %r' % key


def _position(scope, target):
    for number, elem in enumerate(scope.iter()):
        if elem is target:
            return number
    return -1


def page_problems(page):
    """Every host of the page: its drawing complete, its failures marked, nothing else marked."""
    problems = []
    for record in page.records:
        host = record['host']
        items = findings(record)
        sections = page.host_sections(host)
        drawing = record.get('drawing')
        svgs = page.drawings(host)
        if len(sections) > 1:
            problems.append('host %r has %d section.host elements' % (host, len(sections)))
        for section in sections:
            if section.get('data-status') != record['status']:
                problems.append('host %r: section data-status=%r, status %r'
                                % (host, section.get('data-status'), record['status']))
        if not drawing:
            if svgs:
                problems.append('host %r has no drawing but %d svg.topology' % (host, len(svgs)))
            continue
        if len(svgs) != 1:
            problems.append('host %r is shown with %d svg.topology, expected 1' % (host, len(svgs)))
            continue
        svg = svgs[0]
        problems.extend(check_drawing(host, drawing, svg))
        groups = page.group_sections(host)
        for group in groups:
            if group.get('data-status') != record['status']:
                problems.append('host %r (%s) shares the drawing of group %r (%s)'
                                % (host, record['status'], group.get('data-hosts'), group.get('data-status')))
        if items:
            # its own drawing, or the drawing it shares with hosts of the same status and findings
            scope = groups[0] if groups else (sections[0] if len(sections) == 1 else None)
            if scope is None or svg not in scope.find_all('svg', cls='topology'):
                problems.append('host %r has failures but no section with its drawing' % host)
                continue
            if len(sections) != 1 or not sections[0].find_all('tr', cls='failure') + \
                    sections[0].find_all('tr', cls='regression'):
                problems.append('host %r has failures but no section.host with its findings table' % host)
            problems.extend(check_marks(host, scope, drawing, svg, items))
        else:
            scopes = sections + page.group_sections(host)
            marked = [e for s in scopes for e in s.iter() if e.get('data-marked') == 'true']
            marked += [b for s in scopes for b in s.find_all('p', cls='node-failure')]
            for elem in marked:
                problems.append('host %r has no failure, yet %s is marked' % (host, elem.describe()))
    return problems


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize('name', ALL_PAGES)
def test_drawings_complete_and_failures_marked(page, name):
    shown = page(name)
    problems = page_problems(shown)
    assert not problems, '%s (%s):\n  %s' % (name, shown.path, '\n  '.join(problems))


@pytest.mark.parametrize('name', ALL_PAGES)
def test_page_is_self_contained(page, name):
    shown = page(name)
    doc = shown.doc
    assert not doc.find_all('script'), 'the page has a <script> element'
    fetching = [e.describe() + ' ' + a for e in doc.iter() for a in FETCHING_ATTRS
                if a in e.attrs and re.match(r'^\s*(?!#)\S', e.attrs[a])]
    assert not fetching, 'elements that load something: %s' % fetching
    text = doc.text()
    for record in shown.records:
        assert record['host'] in text, 'host %r is not shown as text' % record['host']
    ids = [e.get('id') for e in doc.find_all('section', cls='host')]
    assert len(ids) == len(set(ids)), 'duplicate section ids: %s' % ids
    bad = [i for i in ids if not SLUG_RE.match(i or '')]
    assert not bad, 'section ids that are not slugs: %s' % bad


def test_demo_identical_healthy_hosts_share_one_drawing(page):
    shown = page('demo-rack')
    healthy = [r['host'] for r in shown.records if not findings(r) and r['node_class'] == 'dgx_h100']
    assert len(healthy) == 2, healthy
    first, second = [shown.drawings(host) for host in healthy]
    assert len(first) == 1 and first[0] is second[0], 'the identical H100 nodes %s have separate drawings' % healthy
    groups = [g for g in shown.doc.find_all('section', cls='group') if set(healthy) <= set(g.get('data-hosts').split())]
    assert len(groups) == 1
    assert len(shown.doc.find_all('svg', cls='topology')) == 3
    faulty = [r for r in shown.records if findings(r)]
    assert [(r['host'], [f['subject'] for f in findings(r)]) for r in faulty] == [('rack_b-a100-1', ['mlx5_2/1'])]
    assert [(r['host'], r['status']) for r in shown.records] == [
        ('rack_a-h100-1', 'provisioned'), ('rack_a-h100-2', 'provisioned'), ('rack_b-a100-1', 'held_back'),
        ('rack_b-pcie-1', 'provisioned')]


def test_faults_page_one_drawing_per_fault(page):
    shown = page('faults')
    faulty = [r['host'] for r in shown.records if findings(r)]
    assert sorted(faulty) == sorted(h for h, specs in pages.FAULT_NODES if specs)
    assert len(shown.doc.find_all('svg', cls='topology')) == len(pages.FAULT_NODES)
    marked = {}
    for host, dummy in pages.FAULT_NODES:
        for elem in shown.host_sections(host)[0].iter():
            if elem.get('data-marked') == 'true':
                key = element_key(elem)
                name = '-'.join(sorted(key[1])) if key[0] == 'nvlink' else key[1]
                marked.setdefault(host, {})['%s %s' % (key[0], name)] = elem.get('data-checks')
    buses = ['0000:19:00.0', '0000:3b:00.0', '0000:4c:00.0', '0000:5d:00.0', '0000:9b:00.0', '0000:bb:00.0',
             '0000:cb:00.0', '0000:db:00.0']
    nvlink = 'nvlink_active_links nvlink_relation'
    assert marked == {
        # every board on the PCI bus, none listed by nvidia-smi
        'gpuops-fault-driver-not-loaded': dict(('gpu %s' % bus, 'driver_loaded') for bus in buses),
        'gpuops-fault-ecc-uncorrectable': {'gpu GPU2': 'ecc_uncorrected remapped_rows_pending'},
        # the board nvidia-smi lost, by bus id; the others keep their boxes, renumbered
        'gpuops-fault-gpu-missing': {'gpu 0000:9b:00.0': 'outputs_disagree'},
        'gpuops-fault-ib-port-down': {'nic mlx5_6': 'nic_port_state', 'port mlx5_6/1': 'nic_port_state'},
        'gpuops-fault-mig-unexpected': {'gpu GPU6': 'mig_mode'},
        # only the GPU every failing pair shares, and its NVLink to the switch
        'gpuops-fault-nvlink-down': {'gpu GPU3': nvlink, 'nvlink GPU3-NVSwitch': nvlink},
        'gpuops-fault-pcie-downtrained': {'gpu GPU5': 'pcie_gen pcie_width'},
    }
    banners = shown.doc.find_all('p', cls='node-failure')
    assert sorted(set(c for b in banners for c in b.get('data-checks').split())) == [
        'driver_loaded', 'gpu_count', 'outputs_disagree']


def test_hostile_names_stay_text(page):
    shown = page('hostile')
    doc = shown.doc
    assert not doc.find_all('script') and not doc.find_all('b')
    sections = shown.host_sections(pages.HOSTILE_HOST)
    assert len(sections) == 1
    nic = sections[0].find_all('g', cls='nic', data_name=pages.HOSTILE_NIC)
    port = sections[0].find_all('g', cls='port', data_name=pages.HOSTILE_NIC + '/1')
    assert len(nic) == 1 and len(port) == 1
    assert port[0].get('data-marked') == 'true' and nic[0].get('data-marked') == 'true'
    assert dom.collapse(pages.HOSTILE_MESSAGE) in dom.collapse(' '.join(port[0].own_titles()))
    assert pages.HOSTILE_HOST in doc.text()


@pytest.mark.parametrize('name', SCREENSHOT_PAGES)
def test_full_page_screenshot(page, chromium, name):
    shown = page(name)
    png = os.path.join(SCREENSHOTS, name + '.png')
    shot = chromium.screenshot(shown.path, png)
    width, height = headless.png_size(png)
    assert (width, height) == (headless.WIDTH, shot['height'])
    assert os.path.getsize(png) > 10000
    if shot['cut']:
        warnings.warn('%s: the page is %d px tall; the screenshot stops at %d px'
                      % (png, shot['page_height'], shot['height']))


def test_missing_chromium_skips_only_outside_ci(monkeypatch):
    monkeypatch.setattr(headless, 'find_chromium', lambda: None)
    with pytest.raises(pytest.skip.Exception):
        require_chromium({})
    with pytest.raises(pytest.skip.Exception):
        require_chromium({'CI': 'false'})
    with pytest.raises(pytest.fail.Exception):
        require_chromium({'CI': 'true'})
    assert headless.in_ci({'CI': '1'}) and not headless.in_ci({'CI': ''})
