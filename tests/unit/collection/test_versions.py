# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The versions the collection states agree with each other: galaxy.yml's version (the next or the current release),
the releases of changelogs/changelog.yaml (antsibull-changelog's record of what was released) and every
`version_added` of the modules' documentation (DOCUMENTATION and RETURN of plugins/modules/*.py and
plugins/doc_fragments/*.py) and of the roles' argument specs (roles/*/meta/argument_specs.yml, entry points, options
and suboptions at any depth).

A `version_added` names the release its content first shipped in: galaxy.yml's version (new in the coming release)
or a release of changelog.yaml, never a version that does not exist or is newer than galaxy.yml's. While nothing is
released (changelog.yaml's `releases: {}`), every version_added is galaxy.yml's version.

The checks are functions of their inputs (`problems`), so the tests below also feed them broken inputs and watch
each check fail.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import glob
import os
import re

import pytest
import yaml

from repo_paths import REPO as ROOT

# semver 2.0.0 (https://semver.org), the form Galaxy and antsibull-changelog require of a collection version
SEMVER = re.compile(r'^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)'
                    r'(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?'
                    r'(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$')


def _load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def _semver(value):
    """ansible-core's SemanticVersion of value (str), or None when value is not a semver string."""
    from ansible.utils.version import SemanticVersion
    if not isinstance(value, str) or not SEMVER.match(value):
        return None
    return SemanticVersion(value)


def _doc_strings(path):
    """The DOCUMENTATION and RETURN strings of a plugin file (module level or a doc fragment's class), by ast."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ('DOCUMENTATION', 'RETURN'):
                    yield target.id, node.value.value


def _options(options, where):
    """(where, version_added) of every option of an options mapping, and of their suboptions at any depth."""
    for name, option in (options or {}).items():
        if not isinstance(option, dict):
            continue
        here = '%s.%s' % (where, name)
        if 'version_added' in option:
            yield here, option['version_added']
        for key in ('options', 'suboptions', 'contains'):
            yield from _options(option.get(key), '%s.%s' % (here, key))


def version_added_values():
    """(where, version_added) of every version_added the collection states."""
    paths = sorted(glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py')) +
                   glob.glob(os.path.join(ROOT, 'plugins', 'doc_fragments', '*.py')))
    for path in paths:
        rel = os.path.relpath(path, ROOT)
        for name, text in _doc_strings(path):
            doc = yaml.safe_load(text) or {}
            if name == 'DOCUMENTATION':
                if 'version_added' in doc:
                    yield '%s DOCUMENTATION' % rel, doc['version_added']
                yield from _options(doc.get('options'), '%s DOCUMENTATION options' % rel)
            else:
                yield from _options(doc, '%s RETURN' % rel)
    for path in sorted(glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.yml'))):
        rel = os.path.relpath(path, ROOT)
        with open(path) as handle:
            docs = yaml.safe_load(handle) or {}
        doc = docs.get('DOCUMENTATION') or {}
        if 'version_added' in doc:
            yield '%s DOCUMENTATION' % rel, doc['version_added']
        yield from _options(doc.get('options'), '%s DOCUMENTATION options' % rel)
        yield from _options(docs.get('RETURN'), '%s RETURN' % rel)
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml'))):
        rel = os.path.relpath(path, ROOT)
        with open(path) as handle:
            specs = (yaml.safe_load(handle) or {}).get('argument_specs') or {}
        for entry, spec in specs.items():
            if 'version_added' in spec:
                yield '%s %s' % (rel, entry), spec['version_added']
            yield from _options(spec.get('options'), '%s %s options' % (rel, entry))


def problems(galaxy_version, releases, added):
    """What is wrong with galaxy.yml's version, changelog.yaml's releases (their version strings) and the
    (where, version_added) pairs added; [] when they agree."""
    found = []
    current = _semver(galaxy_version)
    if current is None:
        return ['galaxy.yml: version %r is not a semantic version' % (galaxy_version,)]
    released = {}
    for release in releases:
        version = _semver(release)
        if version is None:
            found.append('changelog.yaml: release %r is not a semantic version' % (release,))
        elif version > current:
            found.append('changelog.yaml: release %s is newer than galaxy.yml\'s version %s' % (
                release, galaxy_version))
        else:
            released[release] = version
    valid = dict((r, _semver(r)) for r in releases if _semver(r) is not None)
    newest = max(valid, key=valid.get) if valid else None
    if newest is not None and valid[newest] > current:
        found.append('galaxy.yml: version %s is neither the newest release (%s) nor newer (unreleased)' % (
            galaxy_version, newest))
    for where, value in added:
        version = _semver(value)
        if version is None:
            found.append('%s: version_added %r is not a semantic version' % (where, value))
        elif version > current:
            found.append('%s: version_added %s is newer than galaxy.yml\'s version %s' % (
                where, value, galaxy_version))
        elif value != galaxy_version and value not in released:
            found.append('%s: version_added %s is neither galaxy.yml\'s version %s nor a release of changelog.yaml '
                         '(%s)' % (where, value, galaxy_version, ', '.join(sorted(released)) or 'none'))
    return found


def _repo_inputs():
    galaxy = _load('galaxy.yml')
    changelog = _load('changelogs', 'changelog.yaml') or {}
    releases = [str(r) if not isinstance(r, str) else r for r in (changelog.get('releases') or {})]
    return galaxy['version'], releases, list(version_added_values())


def test_the_collection_states_version_added_at_all():
    added = dict(version_added_values())
    modules = glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py'))
    assert modules
    for path in modules:
        if os.path.basename(path) != '__init__.py':
            assert '%s DOCUMENTATION' % os.path.relpath(path, ROOT) in added, path


def test_versions_agree_with_galaxy_yml_and_the_changelog():
    assert problems(*_repo_inputs()) == []


@pytest.mark.parametrize('galaxy_version, releases, added, expected', [
    ('0.1.0', [], [('m', '0.1.0')], []),
    ('0.2.0', ['0.1.0'], [('m', '0.1.0'), ('n', '0.2.0')], []),
    ('0.2.0', ['0.1.0', '0.2.0'], [('m', '0.2.0')], []),
    ('0.1', [], [], ['not a semantic version']),
    ('0.1.0', ['0.1'], [], ['release \'0.1\' is not a semantic version']),
    ('0.1.0', ['0.2.0'], [], ['release 0.2.0 is newer', 'neither the newest release (0.2.0) nor newer']),
    ('0.2.0', ['0.1.0', '0.3.0'], [], ['release 0.3.0 is newer', 'neither the newest release (0.3.0) nor newer']),
    ('0.2.0', ['0.2.0', '0.10.0'], [], ['release 0.10.0 is newer', 'neither the newest release (0.10.0) nor newer']),
    ('0.1.0', [], [('m', 0.1)], ['version_added 0.1 is not a semantic version']),
    ('0.1.0', [], [('m', '0.1')], ['version_added \'0.1\' is not a semantic version']),
    ('0.1.0', [], [('m', '0.7.0')], ['version_added 0.7.0 is newer']),
    ('0.3.0', ['0.1.0'], [('m', '0.2.0')], ['version_added 0.2.0 is neither']),
    ('1.0.0', [], [('m', '0.5.0')], ['version_added 0.5.0 is neither']),
])
def test_each_check_refuses_what_it_should(galaxy_version, releases, added, expected):
    found = problems(galaxy_version, releases, added)
    assert len(found) == len(expected), found
    for problem, text in zip(found, expected):
        assert text in problem, (problem, text)


def test_argument_specs_suboptions_are_read(tmp_path, monkeypatch):
    spec = {'argument_specs': {'main': {'version_added': '0.1.0', 'options': {'a': {'type': 'dict', 'options': {
        'b': {'type': 'list', 'elements': 'dict', 'version_added': '0.9.0', 'options': {
            'c': {'type': 'str', 'version_added': '1.0'}}}}}}}}}
    role = tmp_path / 'roles' / 'r' / 'meta'
    role.mkdir(parents=True)
    (role / 'argument_specs.yml').write_text(yaml.safe_dump(spec))
    monkeypatch.setitem(globals(), 'ROOT', str(tmp_path))
    assert sorted(version_added_values()) == [
        ('roles/r/meta/argument_specs.yml main', '0.1.0'),
        ('roles/r/meta/argument_specs.yml main options.a.options.b', '0.9.0'),
        ('roles/r/meta/argument_specs.yml main options.a.options.b.options.c', '1.0')]
