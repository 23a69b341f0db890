# -*- coding: utf-8 -*-
"""Fixtures shared by the unit tests (helpers live in real_captures.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from real_captures import make_bundle


@pytest.fixture
def bundle(tmp_path):
    def _make(**kwargs):
        return make_bundle(str(tmp_path / 'bundle'), **kwargs)
    return _make
