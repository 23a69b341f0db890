# -*- coding: utf-8 -*-
"""The execution environment definition (execution-environment.yml, ansible-builder v3) and the collection's own EE
metadata (meta/execution-environment.yml): ansible-builder creates a build context from them, it installs the
collection from the tarball of this checkout with the collections galaxy.yml depends on, each locked to the exact
version the tested `ansible` package bundles, on a base image pinned by digest, and `ansible-builder introspect` finds
the collection's Python and system packages."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import json
import shutil
import subprocess
import sys
import sysconfig

import pytest
import yaml

from repo_paths import REPO as ROOT

BIN = os.path.dirname(sys.executable)


def _load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.fail('%s is not installed in the virtualenv (tests/requirements.txt)' % name)
    return path


def _pins():
    pins = {}
    with open(os.path.join(ROOT, 'tests', 'requirements.txt')) as handle:
        for line in handle:
            match = re.match(r'^([A-Za-z0-9_.-]+)==(\S+)', line)
            if match:
                pins[match.group(1).lower()] = match.group(2)
    return pins


def test_the_definition_installs_what_galaxy_yml_and_the_tests_use():
    ee = _load('execution-environment.yml')
    galaxy = _load('galaxy.yml')
    assert ee['version'] == 3
    tarball = '%s-%s-%s.tar.gz' % (galaxy['namespace'], galaxy['name'], galaxy['version'])
    collections = ee['dependencies']['galaxy']['collections']
    assert collections[0] == {'name': 'files/' + tarball, 'type': 'file'}
    assert sorted(c['name'] for c in collections[1:]) == sorted(galaxy['dependencies'])
    assert ee['additional_build_files'] == [{'src': '.build/dist/' + tarball, 'dest': 'files'}]
    pins = _pins()
    assert ee['dependencies']['ansible_core']['package_pip'] == 'ansible-core==' + pins['ansible-core']
    assert ee['dependencies']['ansible_runner']['package_pip'] == 'ansible-runner==' + pins['ansible-runner']


def _bundled_version(fqcn):
    """The version of the collection fqcn that the venv's `ansible` package (tests/requirements.txt) bundles."""
    namespace, name = fqcn.split('.')
    manifest = os.path.join(sysconfig.get_paths()['purelib'], 'ansible_collections', namespace, name,
                            'MANIFEST.json')
    if not os.path.isfile(manifest):
        pytest.fail('%s is not bundled in the virtualenv (the ansible package of tests/requirements.txt)' % fqcn)
    with open(manifest) as handle:
        return json.load(handle)['collection_info']['version']


def test_the_base_image_is_pinned_by_digest():
    name = _load('execution-environment.yml')['images']['base_image']['name']
    assert re.match(r'^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?@sha256:[0-9a-f]{64}$', name), name


def test_every_collection_is_locked_to_the_tested_version_inside_galaxy_yml_range():
    from ansible.galaxy.dependency_resolution.versioning import meets_requirements
    from importlib.metadata import version as installed
    # the bundled versions below are those of the ansible package the collection is tested with
    assert installed('ansible') == _pins()['ansible'], 'the virtualenv is stale: rebuild it (make venv)'
    galaxy = _load('galaxy.yml')
    collections = _load('execution-environment.yml')['dependencies']['galaxy']['collections'][1:]
    assert collections
    for collection in collections:
        fqcn, lock = collection['name'], collection.get('version')
        match = re.match(r'^==(\d+\.\d+\.\d+)$', str(lock))
        assert match, '%s is not locked to one exact version: %r' % (fqcn, lock)
        version = match.group(1)
        assert version == _bundled_version(fqcn), (fqcn, version, _bundled_version(fqcn))
        allowed = galaxy['dependencies'][fqcn]
        assert meets_requirements(version, allowed), '%s %s is outside galaxy.yml\'s %s' % (fqcn, version, allowed)


def test_the_collections_own_requirements_admit_the_tested_versions():
    from packaging.requirements import Requirement
    meta = _load('meta', 'execution-environment.yml')
    pins = _pins()
    with open(os.path.join(ROOT, meta['dependencies']['python'])) as handle:
        reqs = [Requirement(line.strip()) for line in handle if line.strip() and not line.startswith('#')]
    assert reqs
    for req in reqs:
        name = req.name.lower()
        if name in pins:
            assert req.specifier.contains(pins[name]), (str(req), pins[name])
    assert 'kubernetes' in [r.name for r in reqs]


def test_ansible_builder_creates_the_build_context(tmp_path, installed_collection):
    galaxy = _load('galaxy.yml')
    tarball = '%s-%s-%s.tar.gz' % (galaxy['namespace'], galaxy['name'], galaxy['version'])
    work = tmp_path / 'ee'
    (work / '.build' / 'dist').mkdir(parents=True)
    # the tarball of this checkout, built once a session (conftest.py), where `make build` puts it
    assert os.path.basename(installed_collection.tarball) == tarball
    shutil.copyfile(installed_collection.tarball, str(work / '.build' / 'dist' / tarball))
    shutil.copyfile(os.path.join(ROOT, 'execution-environment.yml'), str(work / 'execution-environment.yml'))
    run = subprocess.run([_tool('ansible-builder'), 'create', '-f', 'execution-environment.yml', '--context',
                          str(tmp_path / 'context')], cwd=str(work), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout
    context = tmp_path / 'context'
    containerfile = (context / 'Containerfile').read_text()
    pins = _pins()
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (
        pins['ansible-core'], pins['ansible-runner']) in containerfile
    base_image = _load('execution-environment.yml')['images']['base_image']['name']
    assert 'ARG EE_BASE_IMAGE="%s"' % base_image in containerfile
    assert 'ansible-galaxy collection install' in containerfile and 'COPY _build /build' in containerfile
    assert (context / '_build' / 'files' / tarball).is_file()
    assert yaml.safe_load((context / '_build' / 'requirements.yml').read_text()) == {
        'collections': _load('execution-environment.yml')['dependencies']['galaxy']['collections']}


def test_introspection_finds_the_collections_packages():
    collections = os.path.join(ROOT, '.build', 'collections')
    if not os.path.isdir(os.path.join(collections, 'ansible_collections', 'gpuops', 'node')):
        pytest.fail('the collection is not linked under .build/collections (make units sets it up)')
    run = subprocess.run([_tool('ansible-builder'), 'introspect', '--sanitize', collections],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stdout
    found = yaml.safe_load(run.stdout.split('---', 1)[1])
    assert 'kubernetes>=24.2.0  # from collection gpuops.node' in found['python']
    assert sorted(found['system']) == ['openssh-client [platform:dpkg]  # from collection gpuops.node',
                                       'openssh-clients [platform:rpm]  # from collection gpuops.node']
