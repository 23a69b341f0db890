# -*- coding: utf-8 -*-
"""The example inventory's node classes are derived from the simulator's bundles (tests/scripts/example_profiles.py),
never written by hand: a stale or hand-edited class file fails here."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import yaml

import example_profiles  # tests/scripts

from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import validate_profile


def test_example_class_files_are_current():
    diffs = example_profiles.stale()
    assert diffs == [], 'run: python3 tests/scripts/example_profiles.py --write\n' + '\n'.join(diffs)


def test_example_class_files_are_valid_profiles_with_their_reasons():
    for path, (_current, text) in example_profiles.rendered().items():
        data = yaml.safe_load(text)
        assert validate_profile(data['gpuops_node_class_profile']) == [], path
        body = text.split('gpuops_node_class_profile:\n', 1)[1]
        # each key with why it has its value (on its line, or on the comment line above)
        assert all('#' in line or previous.strip().startswith('#')
                   for previous, line in zip([''] + body.splitlines(), body.splitlines())
                   if not line.startswith('    ') and not line.strip().startswith('#')), path
