# -*- coding: utf-8 -*-
"""The collection as a user gets it: ``installed_collection`` builds the tarball of this checkout (ansible-galaxy
collection build, galaxy.yml's build_ignore) and installs it offline into a temporary directory, once a session,
as ``make build`` does."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import os

import pytest
import yaml

from ansible_cli import site_packages
from galaxy_build import build_tarball, galaxy_cli, tarball_members
from repo_paths import REPO

Installed = collections.namedtuple('Installed', 'tarball members root files galaxy')


@pytest.fixture(scope='session')
def installed_collection(tmp_path_factory):
    """Installed(tarball, members: the files of the tarball, root: the installed gpuops/node directory, files: its
    files relative to it, sorted, galaxy: galaxy.yml)."""
    with open(os.path.join(REPO, 'galaxy.yml')) as handle:
        galaxy = yaml.safe_load(handle)
    work = str(tmp_path_factory.mktemp('installed-collection'))
    tarball = build_tarball(REPO, os.path.join(work, 'dist'))
    target = os.path.join(work, 'collections')
    install = galaxy_cli('collection', 'install', '--offline', '-p', target, tarball, cwd=work,
                         env={'ANSIBLE_COLLECTIONS_PATH': os.pathsep.join([target] + site_packages())})
    assert install.returncode == 0, install.stdout
    root = os.path.join(target, 'ansible_collections', galaxy['namespace'], galaxy['name'])
    assert os.path.isdir(root), install.stdout
    files = []
    for dirpath, _dirnames, filenames in os.walk(root):
        files.extend(os.path.relpath(os.path.join(dirpath, name), root) for name in filenames)
    return Installed(tarball, tarball_members(tarball), root, sorted(files), galaxy)
