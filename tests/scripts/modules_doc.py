# -*- coding: utf-8 -*-
"""Render docs/modules.md, the reference of the collection's modules, from the modules' own documentation.

    python3 tests/scripts/modules_doc.py            exit 1 and show what differs when docs/modules.md is stale
    python3 tests/scripts/modules_doc.py --write    rewrite it

The whole file is generated. Each plugins/modules/*.py is read the way ansible-doc reads it, without importing it:
``ansible.parsing.plugin_docs.read_docstring`` (ast, then Ansible's YAML loader) for DOCUMENTATION, EXAMPLES and
RETURN, and ``ansible.utils.plugin_docs.add_fragments`` for ``extends_documentation_fragment``, given a loader that
reads plugins/doc_fragments/*.py with ast too (no collection loader, nothing imported). Ansible markup becomes
Markdown: C() V() O() RV() E() P() code, I() italic, B() bold, M() a link to the module's section (or code for a
module of another collection), U() and L() links. A relative link is kept only to a file that exists and that the
built collection ships (galaxy.yml's build_ignore); else its text is code. EXAMPLES are included when they have at
most MAX_EXAMPLE_LINES lines. The unit test tests/unit/docs/test_modules_doc.py fails when the page is stale.
ansible-core and PyYAML only; run from anywhere.
"""

from __future__ import (absolute_import, division, print_function)

import ast
import fnmatch
import glob
import json
import os
import re
import sys

import yaml

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
MODULES_DIR = os.path.join(ROOT, 'plugins', 'modules')
FRAGMENTS_DIR = os.path.join(ROOT, 'plugins', 'doc_fragments')
DOC = os.path.join(ROOT, 'docs', 'modules.md')
GALAXY = os.path.join(ROOT, 'galaxy.yml')
COLLECTION = 'gpuops.node'
SCRIPT = 'tests/scripts/modules_doc.py'
MAX_EXAMPLE_LINES = 40


# ---------------------------------------------------------------- reading, as ansible-doc does

class _Fragment(object):
    """What ansible's fragment loader gives: the class's string attributes and its ``ansible_name``."""

    def __init__(self, name, attributes):
        self.ansible_name = name
        for key, value in attributes.items():
            setattr(self, key, value)


class _FragmentLoader(object):
    """``get('gpuops.node.NAME')``: plugins/doc_fragments/NAME.py's ModuleDocFragment, read with ast."""

    def get(self, name):
        prefix = COLLECTION + '.'
        if not name.startswith(prefix) or '.' in name[len(prefix):]:
            return None  # add_fragments then retries NAME.VAR; a fragment of another collection stays unknown
        path = os.path.join(FRAGMENTS_DIR, name[len(prefix):] + '.py')
        if not os.path.isfile(path):
            return None
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == 'ModuleDocFragment':
                attributes = {}
                for item in node.body:
                    if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant) \
                            and isinstance(item.value.value, str):
                        for target in item.targets:
                            if isinstance(target, ast.Name):
                                attributes[target.id] = item.value.value
                return _Fragment(name, attributes)
        return None


def _plain(value):
    """Ansible's tagged YAML values as plain Python values."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def module_names():
    """The modules' names, sorted: plugins/modules/*.py but __init__.py."""
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(MODULES_DIR, '*.py'))
                  if not os.path.basename(p).startswith('_'))


def read_module(name):
    """{'doc': DOCUMENTATION with its fragments, 'examples': EXAMPLES text, 'returns': RETURN} of one module."""
    from ansible.parsing.plugin_docs import read_docstring
    from ansible.utils.plugin_docs import add_fragments
    path = os.path.join(MODULES_DIR, name + '.py')
    data = read_docstring(path, verbose=False, ignore_errors=False)
    doc = data['doc']
    if not doc:
        raise SystemExit('%s: no DOCUMENTATION' % path)
    add_fragments(doc, path, fragment_loader=_FragmentLoader(), is_module=True)
    return {'doc': _plain(doc), 'examples': data.get('plainexamples') or '',
            'returns': _plain(data['returndocs'] or {})}


def modules():
    """[(name, read_module(name))] of every module."""
    return [(name, read_module(name)) for name in module_names()]


# ---------------------------------------------------------------- markup

def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces as ``-``."""
    return re.sub(r'[^\w\- ]', '', heading.lower()).replace(' ', '-')


def module_anchor(name):
    return '#' + anchor('%s.%s' % (COLLECTION, name))


def _build_ignore():
    try:
        with open(GALAXY) as handle:
            return (yaml.safe_load(handle) or {}).get('build_ignore') or []
    except (IOError, OSError):
        return []


def shipped(target):
    """True when a relative link target of docs/modules.md is a file of the built collection."""
    path = os.path.normpath(os.path.join(os.path.dirname(DOC), target.split('#', 1)[0]))
    relative = os.path.relpath(path, ROOT)
    if relative.startswith('..') or not os.path.exists(path):
        return False
    parts = relative.split(os.sep)
    for pattern in _build_ignore():
        pattern = str(pattern).rstrip('/')
        if fnmatch.fnmatch(relative, pattern) or any(fnmatch.fnmatch(part, pattern) for part in parts):
            return False
    return True


def _code(text):
    text = text.replace('\\)', ')').replace('\\(', '(').replace('\\,', ',').replace('\\\\', '\\')
    ticks = '``' if '`' in text else '`'
    return '%s%s%s' % (ticks, text, ticks)


def _link(text, url):
    if re.match(r'[a-z][a-z0-9+.-]*:', url) or url.startswith('#') or shipped(url):
        return '[%s](%s)' % (text, url)
    return _code(text if text == url else '%s (%s)' % (text, url))


def _module_ref(name):
    if name.startswith(COLLECTION + '.') and name[len(COLLECTION) + 1:] in module_names():
        return '[`%s`](%s)' % (name, module_anchor(name[len(COLLECTION) + 1:]))
    return '`%s`' % name


# one markup a match; the semantic ones (O V RV E P) may escape ")" as "\)"
_MARKUP = re.compile(r'\b(?:(?P<simple>[CIBMU])\((?P<simple_arg>[^)]*)\)'
                     r'|(?P<semantic>RV|[OVEP])\((?P<semantic_arg>(?:\\.|[^\\)])*)\)'
                     r'|L\((?P<link_text>[^,)]*),\s*(?P<link_url>[^)]*)\)'
                     r'|(?P<rule>HORIZONTALLINE))')


def _html(text):
    """Plain text outside markup: no HTML, no table cell break."""
    return text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def markdown(text):
    """Ansible markup of one paragraph as Markdown (``|`` not escaped: see cell())."""
    out = []
    position = 0
    for match in _MARKUP.finditer(text):
        out.append(_html(text[position:match.start()]))
        position = match.end()
        kind = match.group('simple') or match.group('semantic')
        if match.group('rule'):
            out.append('---')
        elif kind in ('C', 'O', 'V', 'RV', 'E', 'P'):
            out.append(_code(match.group('simple_arg') if kind == 'C' else match.group('semantic_arg')))
        elif kind == 'I':
            out.append('*%s*' % _html(match.group('simple_arg')))
        elif kind == 'B':
            out.append('**%s**' % _html(match.group('simple_arg')))
        elif kind == 'M':
            out.append(_module_ref(match.group('simple_arg')))
        elif kind == 'U':
            out.append(_link(match.group('simple_arg'), match.group('simple_arg')))
        else:
            out.append(_link(_html(match.group('link_text')), match.group('link_url').strip()))
    out.append(_html(text[position:]))
    return ''.join(out)


def paragraphs(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def cell(value):
    """A table cell: paragraphs joined by <br>, ``|`` escaped (also inside code spans, as GitHub wants)."""
    return '<br>'.join(markdown(p) for p in paragraphs(value)).replace('|', '\\|')


def _value(value):
    text = value if isinstance(value, str) and value else json.dumps(value, separators=(', ', ': '), sort_keys=True)
    return _code(text).replace('|', '\\|')


def _type(spec):
    kind = spec.get('type', 'str')
    if spec.get('elements'):
        kind = '%s of %s' % (kind, spec['elements'])
    return kind


# ---------------------------------------------------------------- the page

def flatten(specs, key, prefix=''):
    """[(dotted name, spec)] of ``specs`` and their ``key`` (suboptions, contains), parents first."""
    rows = []
    for name, spec in (specs or {}).items():
        rows.append((prefix + name, spec))
        rows.extend(flatten(spec.get(key), key, prefix + name + '.'))
    return rows


def options_table(doc):
    lines = ['| option | type | required / default | choices | description |', '|---|---|---|---|---|']
    for name, spec in flatten(doc.get('options'), 'suboptions'):
        if spec.get('required'):
            default = 'required'
        elif 'default' in spec:
            default = _value(spec['default'])
        else:
            default = '—'
        choices = spec.get('choices')
        if isinstance(choices, dict):
            choices = list(choices)
        choices = ', '.join(_value(c) for c in choices) if choices else ''
        description = cell(spec.get('description'))
        if spec.get('aliases'):
            description += '<br>Aliases: %s.' % ', '.join(_value(a) for a in spec['aliases'])
        if spec.get('version_added') and spec['version_added'] != doc.get('version_added'):
            description += '<br>Added in %s.' % spec['version_added']
        lines.append('| `%s` | %s | %s | %s | %s |' % (name, _type(spec), default, choices, description))
    return lines


def returns_table(returns):
    lines = ['| key | type | returned | description |', '|---|---|---|---|']
    for name, spec in flatten(returns, 'contains'):
        row = (name, _type(spec), cell(spec.get('returned', '')), cell(spec.get('description')))
        lines.append('| `%s` | %s | %s | %s |' % row)
    return lines


def attributes_table(attributes):
    lines = ['| attribute | support | description |', '|---|---|---|']
    for name, spec in sorted(attributes.items()):
        lines.append('| `%s` | %s | %s |' % (name, cell(spec.get('support', '')), cell(spec.get('description'))))
    return lines


def _seealso(entry):
    if 'module' in entry:
        line = _module_ref(entry['module'])
    elif 'plugin' in entry:
        line = '`%s` (%s)' % (entry['plugin'], entry.get('plugin_type', 'plugin'))
    elif 'link' in entry:
        line = _link(_html(entry.get('name') or entry['link']), entry['link'])
    else:
        line = _code(entry.get('ref') or entry.get('name') or '')
    if entry.get('description'):
        line += ': ' + markdown(' '.join(paragraphs(entry['description'])))
    return '* ' + line


def module_section(name, module):
    doc = module['doc']
    lines = ['## %s.%s' % (COLLECTION, name), '', markdown(doc.get('short_description', '')), '']
    for paragraph in paragraphs(doc.get('description')):
        lines.extend([markdown(paragraph), ''])
    if doc.get('requirements'):
        lines.extend(['Requirements:', ''] + ['* ' + markdown(r) for r in paragraphs(doc['requirements'])] + [''])
    lines.extend(['### Options of %s' % name, ''])
    lines.extend(options_table(doc) if doc.get('options') else ['None.'])
    lines.append('')
    if doc.get('attributes'):
        lines.extend(['### Attributes of %s' % name, ''] + attributes_table(doc['attributes']) + [''])
    if doc.get('notes'):
        lines.extend(['### Notes on %s' % name, ''] + ['* ' + markdown(n) for n in paragraphs(doc['notes'])] + [''])
    if doc.get('seealso'):
        lines.extend(['### See also', ''] + [_seealso(e) for e in doc['seealso']] + [''])
    example_lines = module['examples'].strip('\n').splitlines()
    if example_lines and len(example_lines) <= MAX_EXAMPLE_LINES:
        lines.extend(['### Examples of %s' % name, '', '```yaml'] + example_lines + ['```', ''])
    elif example_lines:
        lines.extend(['### Examples of %s' % name, '',
                      '%d lines: `ansible-doc %s.%s` shows them.' % (len(example_lines), COLLECTION, name), ''])
    lines.extend(['### Return values of %s' % name, ''])
    lines.extend(returns_table(module['returns']) if module['returns'] else ['None.'])
    lines.append('')
    return lines


def page(mods=None):
    mods = modules() if mods is None else mods
    lines = ['# Modules of %s' % COLLECTION, '',
             'Generated from the documentation of each `plugins/modules/*.py` by `%s` (do not edit: run it with '
             '`--write`); `ansible-doc %s.<name>` shows the same.' % (SCRIPT, COLLECTION), '',
             '| module | what it does | added in |', '|---|---|---|']
    for name, module in mods:
        doc = module['doc']
        row = (COLLECTION, name, module_anchor(name), cell(doc.get('short_description')), doc.get('version_added', ''))
        lines.append('| [`%s.%s`](%s) | %s | %s |' % row)
    lines.append('')
    for name, module in mods:
        lines.extend(module_section(name, module))
    return '\n'.join(lines).rstrip('\n') + '\n'


def rendered():
    """{docs/modules.md: (current text, generated text)}; current is '' while the file does not exist."""
    return {DOC: (generated_docs.current(DOC), page())}


def stale():
    """Unified diff of docs/modules.md when it is stale (empty when current)."""
    return generated_docs.stale(rendered())


if __name__ == '__main__':
    sys.exit(generated_docs.main(sys.argv[1:], rendered(), ROOT))
