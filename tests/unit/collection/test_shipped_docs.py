# -*- coding: utf-8 -*-
"""The built collection is the product: what ``ansible-galaxy collection install`` gives a user holds the docs
(README.md, docs/, the roles' READMEs, CONTRIBUTING.md) and the example inventories, and every link of its Markdown
resolves inside the installed copy (links to the project's repository: inside this checkout). The tarball is built
from the working tree and installed offline once a session (conftest.py: installed_collection); the link checker is
markdown_links.py, and its own tests below show it fails on broken links."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import os
import shutil

import pytest

from galaxy_build import build_tarball, tarball_members
from markdown_links import LinkChecker, anchors, extract_links, slug
from repo_paths import REPO

# The inventories a user starts from; quickstart/ may not exist yet in a checkout.
SHIPPED_INVENTORIES = ('inventories/example', 'inventories/quickstart')
# What a run writes beside an inventory: never shipped.
RUNTIME_OUTPUT = ('captures', 'reports', 'alerts')
# The development tree: never shipped.
NOT_SHIPPED = ('tests', 'molecule', 'simulator', 'bench', '.ci', '.build', '.venv', '.git', '.config', 'Makefile',
               'pytest.ini', 'captures', 'reports')


def _checkout_files(top):
    """Files of the checkout under ``top`` (relative to the checkout) that a build ships: runtime output, caches and
    compiled files left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, top)):
        dirnames[:] = [d for d in dirnames if d not in RUNTIME_OUTPUT + ('__pycache__',)]
        found.extend(os.path.relpath(os.path.join(dirpath, f), REPO) for f in filenames
                     if not f.endswith(('.pyc', '.retry')))
    return sorted(found)


def _checker(installed):
    return LinkChecker(installed.root, checkout=REPO, repo_url=installed.galaxy['repository'])


# ---------------------------------------------------------------- what ships

def test_the_installed_collection_holds_the_docs_and_the_example_inventories(installed_collection):
    files = set(installed_collection.files)
    missing = [p for p in ('README.md', 'LICENSE', 'inventories/example/hosts.yml') if p not in files]
    for optional in ('CONTRIBUTING.md', 'CHANGELOG.rst', 'CHANGELOG.md', 'awx/README.md'):
        if os.path.isfile(os.path.join(REPO, optional)) and optional not in files:
            missing.append(optional)
    for top in ('docs',) + SHIPPED_INVENTORIES:
        missing.extend(p for p in _checkout_files(top) if p not in files)
    missing.extend(os.path.relpath(os.path.join(dirpath, 'README.md'), REPO)
                   for dirpath, _d, names in os.walk(os.path.join(REPO, 'roles')) if 'README.md' in names
                   and os.path.relpath(os.path.join(dirpath, 'README.md'), REPO) not in files)
    assert not missing, 'the installed collection lacks:\n' + '\n'.join(sorted(set(missing)))
    assert [f for f in files if fnmatch.fnmatch(f, 'docs/*.md')], 'no docs/*.md shipped'


def test_the_installed_collection_leaves_out_the_development_tree_and_runtime_output(installed_collection):
    wrong = []
    for path in installed_collection.members:
        parts = path.split('/')
        if parts[0] in NOT_SHIPPED or any(p in ('__pycache__',) for p in parts) or path.endswith('.pyc'):
            wrong.append(path + ' (development tree)')
        elif parts[0] == 'inventories' and len(parts) > 2 and parts[2] in RUNTIME_OUTPUT:
            wrong.append(path + ' (runtime output)')
        elif path.endswith('.tar.gz') and not path.startswith('inventories/quickstart/'):
            wrong.append(path + ' (a tarball outside inventories/quickstart/)')
    assert not wrong, 'the tarball ships:\n' + '\n'.join(wrong)


def test_build_ignore_ships_the_inventories_but_not_their_runtime_output(tmp_path):
    """galaxy.yml's build_ignore on a small tree, through a real build: the patterns are fnmatch'ed on the path
    from the root, '*' matching '/' too."""
    tree = tmp_path / 'collection'
    files = {
        'README.md': '# x\n', 'meta/runtime.yml': "requires_ansible: '>=2.15.0'\n",
        'docs/a.md': '# a\n', 'inventories/example/hosts.yml': 'all: {}\n',
        'inventories/example/group_vars/all.yml': '{}\n',
        'inventories/quickstart/hosts.yml': 'all: {}\n', 'inventories/quickstart/bundles/node1.tar.gz': 'x',
        'inventories/example/captures/node1/bundle.tar.gz': 'x',
        'inventories/example/reports/rack-report.html': 'x', 'inventories/quickstart/alerts/a.rules.yml': 'x',
        'gpuops-node-0.0.9.tar.gz': 'x', 'captures/node1.tar.gz': 'x', 'reports/r.json': 'x',
        'tests/unit/test_x.py': 'x', 'molecule/default/molecule.yml': 'x', 'simulator/x.py': 'x',
        'bench/x.py': 'x', '.ci/run': 'x', 'Makefile': 'x', 'roles/r/tasks/main.yml': '[]\n',
        'plugins/modules/__pycache__/m.cpython-312.pyc': 'x', 'plugins/modules/m.py': '#\n',
    }
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    shutil.copyfile(os.path.join(REPO, 'galaxy.yml'), str(tree / 'galaxy.yml'))
    members = tarball_members(build_tarball(str(tree), str(tmp_path / 'dist')))
    assert [m for m in members if m not in ('MANIFEST.json', 'FILES.json')] == sorted([
        'README.md', 'meta/runtime.yml', 'docs/a.md', 'inventories/example/hosts.yml',
        'inventories/example/group_vars/all.yml', 'inventories/quickstart/hosts.yml',
        'inventories/quickstart/bundles/node1.tar.gz', 'roles/r/tasks/main.yml', 'plugins/modules/m.py'])


# ---------------------------------------------------------------- the links of the shipped docs

def test_every_link_of_the_shipped_markdown_resolves_inside_the_installed_copy(installed_collection):
    checker = _checker(installed_collection)
    report = checker.check()
    counts = ', '.join('%s %d' % kv for kv in sorted(report.counts.items()))
    print('shipped Markdown: %s' % counts)
    assert report.counts['files'] > 0
    assert not report.broken, '%d broken links in the installed collection (%s):\n%s' % (
        len(report.broken), counts, report.message())


def test_the_installed_readme_links_every_shipped_doc(installed_collection):
    docs = sorted(f for f in installed_collection.files if fnmatch.fnmatch(f, 'docs/*.md') and '/' not in f[5:])
    linked = _checker(installed_collection).resolved_targets('README.md')
    unlinked = [d for d in docs if d not in linked]
    assert not unlinked, 'README.md (its table of contents of docs/) does not link, by a relative link:\n' + \
        '\n'.join(unlinked)


# ---------------------------------------------------------------- the checker itself

def _tree(tmp_path, files):
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return str(tmp_path)


def test_slugs_follow_githubs_rules():
    assert slug('Getting started') == 'getting-started'
    assert slug('What `gpuops_validate` checks: NVLink, PCIe & NUMA!') == 'what-gpuops_validate-checks-nvlink-pcie--numa'
    assert slug('  A -- b_c  ') == '--a----b_c--'
    assert anchors('# `site.yml` (the rollout)\n') == {'siteyml-the-rollout'}
    assert anchors('# [Roles](docs/roles.md) and **bold** _it_\n') == {'roles-and-bold-it'}
    assert anchors('Setext\n======\n\ntext\n\n---\n') == {'setext'}


def test_duplicate_headings_are_numbered():
    assert anchors('# Setup\n## Setup\n### Setup\n# Setup-1\n') == {'setup', 'setup-1', 'setup-2', 'setup-1-1'}


def test_links_in_code_are_ignored():
    text = ('```yaml\n[a](fenced.md)\n```\n'
            '~~~~\n[b](tilde.md)\n```\n[c](still-fenced.md)\n~~~~\n'
            'use `[d](span.md)` or ``[e](`double`.md)`` here\n'
            '<!-- [f](comment.md) -->\n'
            '[g](real.md) ![h](img.png "title") [i][ref] <a href="page.md#x">j</a> <https://example.org/k>\n'
            '[ref]: <ref target.md>\n')
    links, definitions, uses = extract_links(text)
    assert [(l.line, l.target, l.kind) for l in links] == [
        (11, 'real.md', 'inline'), (11, 'img.png', 'image'), (11, 'page.md#x', 'html'),
        (11, 'https://example.org/k', 'autolink'), (12, 'ref target.md', 'reference')]
    assert definitions == {'ref': 'ref target.md'} and uses == [(11, 'ref')]


def test_the_checker_reports_each_broken_link_with_its_file_line_and_why(tmp_path):
    checkout = _tree(tmp_path / 'checkout', {'docs/only-in-repo.md': '# x\n', 'Makefile': 'x'})
    root = _tree(tmp_path / 'installed', {
        'README.md': ('# Title\n\n## Setup\n\n## Setup\n\n'
                      '[ok](docs/a.md#part-two) [dup](#setup-1) [self](#title)\n'
                      '[missing](docs/nope.md)\n'
                      '[anchor](docs/a.md#no-such-part)\n'
                      '[dup-too-far](#setup-2)\n'
                      '```\n[in code](docs/nope-too.md)\n```\n'
                      '`[span](docs/nope-three.md)`\n'
                      '[repo ok](https://github.com/o/r/blob/main/Makefile)'
                      ' [repo gone](https://github.com/o/r/tree/main/tests)'
                      ' [outside](../../etc/passwd) [ext](https://example.org/x#y)\n'
                      '[unshipped](docs/only-in-repo.md) [undefined][nowhere] [lines](docs/b.yml#L2-L3)\n'
                      '![img](docs/img.png)\n'),
        'docs/a.md': '# A\n\n## Part two\n\n[up](../README.md#setup)\n',
        'docs/b.yml': 'a: 1\nb: 2\n',
    })
    report = LinkChecker(root, checkout=checkout, repo_url='https://github.com/o/r').check()
    assert report.message().splitlines() == [
        'README.md:8: docs/nope.md (no docs/nope.md in the installed collection)',
        'README.md:9: docs/a.md#no-such-part (no heading #no-such-part in docs/a.md)',
        'README.md:10: #setup-2 (no heading #setup-2 in README.md)',
        'README.md:15: ../../etc/passwd (outside the installed collection)',
        'README.md:15: https://github.com/o/r/tree/main/tests (no tests in the repository checkout)',
        'README.md:16: [nowhere] (reference never defined)',
        'README.md:16: docs/b.yml#L2-L3 (lines #L2-L3 past the 2 lines of docs/b.yml)',
        'README.md:16: docs/only-in-repo.md (no docs/only-in-repo.md in the installed collection: not shipped; '
        'link https://github.com/o/r/blob/main/docs/only-in-repo.md)',
        'README.md:17: docs/img.png (no docs/img.png in the installed collection)',
    ]
    assert report.counts['external'] == 1 and report.counts['own repository'] == 2
    assert report.counts['files'] == 2


def test_a_clean_tree_passes(tmp_path):
    root = _tree(tmp_path, {'README.md': '# T\n\n[a](docs/a.md) [b](docs/) [c](#t)\n', 'docs/a.md': '# A\n'})
    report = LinkChecker(root).check()
    assert report.broken == [] and report.counts['relative'] == 3


@pytest.mark.parametrize('target', ['docs/a.md?plain=1#a', 'docs/a%20b.md', '/docs/a.md', 'docs/../docs/a.md#A'])
def test_queries_escapes_and_root_relative_paths_resolve(tmp_path, target):
    root = _tree(tmp_path, {'README.md': '[x](%s)\n' % target, 'docs/a.md': '# A\n', 'docs/a b.md': '# B\n'})
    assert LinkChecker(root).check().broken == []
