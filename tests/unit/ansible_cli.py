# -*- coding: utf-8 -*-
"""The ansible-playbook the unit tests run playbooks with: the virtualenv's, else the one on PATH."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import sys

import pytest


def ansible_playbook():
    """Path of ansible-playbook; the test is skipped when there is none."""
    exe = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    if not os.path.exists(exe):
        exe = shutil.which('ansible-playbook')
    if not exe:
        pytest.skip('ansible-playbook is not installed')
    return exe
