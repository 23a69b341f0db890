# -*- coding: utf-8 -*-
"""Every call of a gpuops.node module in the roles, playbooks and Molecule scenarios gives the module's required
options and only options the module has (its DOCUMENTATION): a role that calls a module with a missing option
otherwise fails only on the node, in the one scenario that reaches that task.

What it cannot prove: options given through a variable that holds the whole argument dict, or values of the
right type; the module's own argument spec checks those when it runs."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import yaml

from repo_paths import REPO

PREFIX = 'gpuops.node.'
YAML_DIRS = ('roles', 'playbooks', 'molecule')


def _documentation(text):
    match = re.search(r"DOCUMENTATION = r?\'\'\'(.*?)\'\'\'", text, re.S)
    return (yaml.safe_load(match.group(1)) or {}) if match else None


def _fragment_options(name):
    """The options of doc fragment ``gpuops.node.<name>`` (plugins/doc_fragments/<name>.py)."""
    with open(os.path.join(REPO, 'plugins', 'doc_fragments', name + '.py')) as handle:
        return (_documentation(handle.read()) or {}).get('options') or {}


def _options():
    """{module: (required, known)} from each module's DOCUMENTATION and the doc fragments it extends."""
    found = {}
    for path in glob.glob(os.path.join(REPO, 'plugins', 'modules', '*.py')):
        with open(path) as handle:
            text = handle.read()
        doc = _documentation(text)
        if doc is None:
            continue
        options = {}
        for fragment in doc.get('extends_documentation_fragment') or []:
            if fragment.startswith(PREFIX):
                options.update(_fragment_options(fragment[len(PREFIX):]))
        options.update(doc.get('options') or {})
        required = set(n for n, spec in options.items() if (spec or {}).get('required'))
        known = set(options)
        for spec in options.values():
            known.update((spec or {}).get('aliases') or [])
        found[os.path.basename(path)[:-3]] = (required, known)
    return found


def _calls(node, path):
    """(path, module, args) of every task mapping under ``node`` that calls a gpuops.node module."""
    if isinstance(node, list):
        for item in node:
            yield from _calls(item, path)
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith(PREFIX) and isinstance(value, dict):
                yield path, key[len(PREFIX):], value
            else:
                yield from _calls(value, path)


def _yaml_files():
    for folder in YAML_DIRS:
        for root, _dirs, files in os.walk(os.path.join(REPO, folder)):
            for name in files:
                if name.endswith(('.yml', '.yaml')):
                    yield os.path.join(root, name)


def test_every_module_call_gives_the_required_options_and_no_unknown_one():
    options = _options()
    problems, seen = [], 0
    for path in _yaml_files():
        with open(path) as handle:
            try:
                documents = list(yaml.safe_load_all(handle))
            except yaml.YAMLError:
                continue
        for where, module, args in _calls(documents, os.path.relpath(path, REPO)):
            if module not in options:
                continue
            seen += 1
            required, known = options[module]
            missing = sorted(required - set(args))
            unknown = sorted(set(args) - known)
            if missing:
                problems.append('%s: %s misses %s' % (where, module, ', '.join(missing)))
            if unknown:
                problems.append('%s: %s has no option %s' % (where, module, ', '.join(unknown)))
    assert seen > 30, 'found only %d calls: the scan is broken' % seen
    assert problems == []


def test_the_scan_finds_a_missing_option():
    task = [{'name': 'plan', 'gpuops.node.nccl_plan': {'variables': {}, 'facts': {}}}]
    calls = list(_calls(task, 'x.yml'))
    assert calls == [('x.yml', 'nccl_plan', {'variables': {}, 'facts': {}})]
    required, _known = _options()['nccl_plan']
    assert 'family' in required - set(calls[0][2])
