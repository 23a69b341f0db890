# -*- coding: utf-8 -*-
"""docs/modules.md is generated from the modules' DOCUMENTATION and RETURN (tests/scripts/modules_doc.py): current,
one section per module, every option and return value in it, no raw Ansible markup, no link the collection does not
ship."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import os
import re

import yaml

import modules_doc  # tests/scripts


def _doc_text():
    with open(modules_doc.DOC) as handle:
        return handle.read()


def _sections(text):
    """{module name: its section's text}, and the number of headings each name has."""
    parts = re.split(r'^## gpuops\.node\.(\w+)$', text, flags=re.M)
    sections, counts = {}, {}
    for name, body in zip(parts[1::2], parts[2::2]):
        counts[name] = counts.get(name, 0) + 1
        sections[name] = body
    return sections, counts


def _strings(path, owner=None):
    """The string constants assigned at the top level of a file (or in its class ``owner``), read with ast."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    body = tree.body
    if owner:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner).body
    return dict((t.id, n.value.value) for n in body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                for t in n.targets if isinstance(t, ast.Name))


def _names(specs, key, prefix=''):
    names = []
    for name, spec in (specs or {}).items():
        names.append(prefix + name)
        names.extend(_names(spec.get(key), key, prefix + name + '.'))
    return names


def _source_options(name):
    """Every option of a module, suboptions as parent.child, its fragments' included (read with plain PyYAML)."""
    strings = _strings(os.path.join(modules_doc.MODULES_DIR, name + '.py'))
    doc = yaml.safe_load(strings['DOCUMENTATION'])
    options = dict(doc.get('options') or {})
    for fragment in doc.get('extends_documentation_fragment') or []:
        assert fragment.startswith('gpuops.node.'), fragment
        path = os.path.join(modules_doc.FRAGMENTS_DIR, fragment.split('.')[2] + '.py')
        fragment_doc = yaml.safe_load(_strings(path, 'ModuleDocFragment')['DOCUMENTATION'])
        options.update(fragment_doc.get('options') or {})
    returns = yaml.safe_load(strings['RETURN']) or {}
    return _names(options, 'suboptions'), _names(returns, 'contains')


def _first_cells(section, header):
    """The first cells (without backquotes) of the table that follows the heading ``header`` in a section."""
    match = re.search(r'^### %s\n\n((?:\|.*\n)+)' % re.escape(header), section, flags=re.M)
    assert match, header
    rows = match.group(1).splitlines()[2:]
    return [row.split(' | ')[0].lstrip('| ').strip('`') for row in rows]


def test_modules_doc_is_current():
    diffs = modules_doc.stale()
    assert diffs == [], 'run: python3 tests/scripts/modules_doc.py --write\n' + '\n'.join(diffs)


def test_every_module_has_one_section_and_one_summary_row():
    expected = sorted(f[:-3] for f in os.listdir(modules_doc.MODULES_DIR)
                      if f.endswith('.py') and not f.startswith('_'))
    assert expected, modules_doc.MODULES_DIR
    text = _doc_text()
    sections, counts = _sections(text)
    assert sorted(counts) == expected
    assert [n for n, c in counts.items() if c != 1] == []
    summary = re.findall(r'^\| \[`gpuops\.node\.(\w+)`\]\(#([\w-]+)\) \|', text, flags=re.M)
    assert [n for n, _a in summary] == expected
    assert all(a == modules_doc.anchor('gpuops.node.' + n) for n, a in summary)


def test_every_option_and_return_value_is_in_its_modules_section():
    sections, _counts = _sections(_doc_text())
    for name in sections:
        options, returns = _source_options(name)
        if options:
            assert _first_cells(sections[name], 'Options of %s' % name) == options, name
        if returns:
            assert _first_cells(sections[name], 'Return values of %s' % name) == returns, name


def test_no_raw_markup_and_only_shipped_links():
    text = _doc_text()
    prose = re.sub(r'```.*?```', '', text, flags=re.S)
    prose = re.sub(r'``.*?``|`[^`\n]*`', '', prose)
    assert re.findall(r'\b(?:[CVIOBUMEPL]|RV)\([^)]*\)', prose) == []
    assert re.findall(r'<(?!br>)', prose) == []
    anchors = set(modules_doc.anchor(h) for h in re.findall(r'^#+ (.*)$', text, flags=re.M))
    for target in re.findall(r'\]\(([^)]*)\)', prose):
        if target.startswith('#'):
            assert target[1:] in anchors, target
        elif not re.match(r'https?://', target):
            assert modules_doc.shipped(target), target


def test_markup_conversion():
    md = modules_doc.markdown
    assert md('C(a|b) V(x) O(opt=1) RV(ret) E(PATH) I(it) B(bold)') == '`a|b` `x` `opt=1` `ret` `PATH` *it* **bold**'
    assert md('U(https://example.org/x)') == '[https://example.org/x](https://example.org/x)'
    assert md('L(the guide,https://example.org/g)') == '[the guide](https://example.org/g)'
    assert md('M(gpuops.node.rack_report) M(ansible.posix.sysctl)') == \
        '[`gpuops.node.rack_report`](#gpuopsnoderack_report) `ansible.posix.sysctl`'
    # the page ships in the collection: a link into what is not shipped, or to nothing, stays text
    assert md('L(the simulator,../simulator/README.md)') == '`the simulator (../simulator/README.md)`'
    assert md('L(tests,../tests/ci_plan.yml)') == '`tests (../tests/ci_plan.yml)`'
    assert md('L(gone,../no/such/file.md)') == '`gone (../no/such/file.md)`'
    assert md('L(the licence,../LICENSE)') == '[the licence](../LICENSE)'
    assert md('a <b> & c') == 'a &lt;b&gt; &amp; c'
    assert modules_doc.cell(['C(a|b)', 'two']) == '`a\\|b`<br>two'
