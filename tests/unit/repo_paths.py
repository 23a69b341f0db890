# -*- coding: utf-8 -*-
"""Where the unit tests find the repository, whatever the depth of the test file: REPO is the checkout's root."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The collection as ansible_collections.gpuops.node (a symlink tree made by `make collection-link`).
COLLECTIONS = os.path.join(REPO, '.build', 'collections')


def repo_path(*parts):
    """The path of REPO/parts..."""
    return os.path.join(REPO, *parts)
