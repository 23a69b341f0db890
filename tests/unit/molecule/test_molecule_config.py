# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Molecule scenarios share one base configuration (.config/molecule/config.yml) and their shared files
(molecule/shared/): every scenario's configuration, as Molecule itself computes it, has the base's settings; no
scenario repeats what the base or Molecule's defaults already set; no file under molecule/ is a copy of another; the
rack reports are read through molecule/shared/tasks/read_report.yml only; and every include under molecule/ resolves."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import copy
import fnmatch
import glob
import hashlib
import os
import re
import sys

import pytest
import yaml

from repo_paths import REPO as ROOT

MOLECULE = os.path.join(ROOT, 'molecule')
BASE = os.path.join(ROOT, '.config', 'molecule', 'config.yml')
SCENARIOS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(MOLECULE, '*', 'molecule.yml')))
READER = os.path.join(MOLECULE, 'shared', 'tasks', 'read_report.yml')
# where Molecule looks for its base configuration, from the repository root (LOCAL_CONFIG_SEARCH in molecule/shell.py,
# not imported: importing molecule.shell configures the logging of the whole test run)
LOCAL_CONFIG_SEARCH = '.config/molecule/config.yml'
# what every platform needs on this podman (CONTRIBUTING.md, "Molecule on podman"); Molecule replaces the list of platforms,
# so these cannot come from the base
PODMAN_SETTINGS = {'pre_build_image': True, 'privileged': True, 'systemd': 'always', 'command': '/sbin/init'}
# Molecule moves these provisioner keys to its ansible section (molecule/config.py, _migrate_user_config)
LEGACY = {'config_options': 'cfg', 'playbooks': 'playbooks', 'env': 'env'}


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _migrated(data):
    data = copy.deepcopy(data)
    provisioner = data.get('provisioner', {})
    for key, new in LEGACY.items():
        if key in provisioner:
            data.setdefault('ansible', {})[new] = provisioner.pop(key)
    return data


def _leaves(data, path=()):
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from _leaves(value, path + (key,))
    else:
        yield path, data


def _get(data, path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            raise KeyError(path)
        data = data[key]
    return data


def _merge(a, b):
    result = copy.deepcopy(a)
    for key, value in b.items():
        if isinstance(result.get(key), dict) and isinstance(value, dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


@pytest.fixture(scope='module')
def configs(tmp_path_factory):
    """Each scenario's Config, built as molecule.command.base.get_configs builds it for `molecule test`, with the base
    configuration Molecule finds itself; its state file is not written."""
    pytest.importorskip('molecule')
    from molecule import state, util
    from molecule.command import base

    saved = dict(os.environ), os.getcwd(), state.State._write_state_file
    os.environ['MOLECULE_GLOB'] = 'molecule/*/molecule.yml'
    os.environ['MOLECULE_EPHEMERAL_DIRECTORY'] = str(tmp_path_factory.mktemp('ephemeral'))
    # ansible-compat runs ansible-config, which is next to this interpreter
    os.environ['PATH'] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', '')
    state.State._write_state_file = lambda self: None
    os.chdir(ROOT)
    try:
        found = util.lookup_config_file(LOCAL_CONFIG_SEARCH)
        assert not found or os.path.isfile(found)
        args = {'base_config': [found] if found else [], 'debug': False, 'verbose': 0, 'env_file': '.env.yml'}
        built = dict((c.scenario.name, c) for c in base.get_configs(args, {'subcommand': 'test'}))
        yield {'base_config': found, 'ephemeral': os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'configs': built}
    finally:
        os.chdir(saved[1])
        os.environ.clear()
        os.environ.update(saved[0])
        state.State._write_state_file = saved[2]


def test_molecule_finds_the_base_configuration(configs):
    import molecule
    with open(os.path.join(os.path.dirname(molecule.__file__), 'shell.py')) as handle:
        assert 'LOCAL_CONFIG_SEARCH = "%s"' % LOCAL_CONFIG_SEARCH in handle.read()
    assert configs['base_config'] == BASE
    assert sorted(configs['configs']) == SCENARIOS


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_every_scenario_has_the_base_settings(configs, scenario):
    """What the base sets and the scenario does not override is in the scenario's configuration as Molecule merged
    it, interpolated."""
    merged = configs['configs'][scenario].config_data
    own = _migrated(_load(os.path.join(MOLECULE, scenario, 'molecule.yml')))
    missing = []
    for path, value in _leaves(_migrated(_load(BASE))):
        try:
            _get(own, path)
            continue
        except KeyError:
            pass
        if isinstance(value, str):
            value = value.replace('${MOLECULE_EPHEMERAL_DIRECTORY}', configs['ephemeral'])
            value = value.replace('${MOLECULE_SCENARIO_NAME}', scenario)
        try:
            if _get(merged, path) == value:
                continue
        except KeyError:
            pass
        missing.append('.'.join(path))
    assert missing == []
    assert merged['driver']['name'] == 'podman'
    assert merged['dependency']['enabled'] is False
    assert merged['prerun'] is False
    assert merged['provisioner']['inventory']['group_vars']['all']['gpuops_report_title'] == 'molecule ' + scenario


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_every_platform_has_the_podman_settings(configs, scenario):
    platforms = configs['configs'][scenario].config_data['platforms']
    assert platforms
    for platform in platforms:
        assert dict((k, platform.get(k)) for k in PODMAN_SETTINGS) == PODMAN_SETTINGS, platform['name']
        assert platform['image'].startswith('localhost/gpuops-base:'), platform['name']
        assert [u.split('=')[0] for u in platform['ulimits']] == ['nproc', 'nofile'], platform['name']


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_no_scenario_repeats_the_base_or_molecules_defaults(scenario):
    """A key a scenario sets to the value the base (or Molecule, by default) already gives it is boilerplate copied
    back: the scenario must leave it out."""
    pytest.importorskip('molecule')
    from molecule.constants import DEFAULT_CONFIG

    given = _merge(DEFAULT_CONFIG, _migrated(_load(BASE)))
    own = _migrated(_load(os.path.join(MOLECULE, scenario, 'molecule.yml')))
    repeated = []
    for path, value in _leaves(own):
        try:
            if _get(given, path) == value:
                repeated.append('.'.join(path))
        except KeyError:
            pass
    assert repeated == []


def _molecule_files(pattern='*'):
    for top, dirs, files in os.walk(MOLECULE):
        dirs.sort()
        for name in sorted(files):
            if fnmatch.fnmatch(name, pattern):
                yield os.path.join(top, name)


def test_no_file_under_molecule_is_a_copy_of_another():
    by_content = collections.defaultdict(list)
    for path in _molecule_files():
        with open(path, 'rb') as handle:
            by_content[hashlib.sha256(handle.read()).hexdigest()].append(os.path.relpath(path, ROOT))
    assert [paths for paths in by_content.values() if len(paths) > 1] == []


def test_the_shared_converge_and_bad_value_runner_are_the_only_ones():
    shared = os.path.join(MOLECULE, 'shared', 'converge.yml')
    with open(shared) as handle:
        text = handle.read()
    for scenario in SCENARIOS:
        own = os.path.join(MOLECULE, scenario, 'converge.yml')
        if os.path.exists(own):
            with open(own) as handle:
                assert handle.read() != text, scenario
    assert glob.glob(os.path.join(MOLECULE, '*', 'tasks', 'bad_value.yml')) == [
        os.path.join(MOLECULE, 'shared', 'tasks', 'bad_value.yml')]


def _variables_set(node):
    """The names a play, a block or a task defines: vars, set_fact keys, include parameters."""
    if isinstance(node, list):
        for item in node:
            yield from _variables_set(item)
    elif isinstance(node, dict):
        for key in ('vars',):
            if isinstance(node.get(key), dict):
                yield from node[key]
        for key in ('ansible.builtin.set_fact', 'set_fact'):
            if isinstance(node.get(key), dict):
                yield from node[key]
        for key in ('tasks', 'block', 'rescue', 'always', 'pre_tasks', 'post_tasks', 'handlers'):
            if key in node:
                yield from _variables_set(node[key])


def test_rack_reports_are_read_through_the_shared_reader():
    """read_report.yml sets __report, __hosts and __records as facts, which outrank task and play variables: a file
    that defined one of them itself would read a stale report, and one that parses a report itself repeats the
    reader."""
    offenders = []
    for path in _molecule_files('*.yml'):
        if path == READER:
            continue
        with open(path) as handle:
            text = handle.read()
        names = set(_variables_set(yaml.safe_load(text))) & {'__report', '__hosts', '__records'}
        if names or re.search(r"\.json'\)\s*\|\s*from_json\)\s*\.racks", text) or 'zip(__hosts)' in text:
            offenders.append((os.path.relpath(path, ROOT), sorted(names)))
    assert offenders == []


def _includes(node):
    if isinstance(node, list):
        for item in node:
            yield from _includes(item)
    elif isinstance(node, dict):
        for key in ('ansible.builtin.include_tasks', 'ansible.builtin.import_tasks', 'ansible.builtin.import_playbook'):
            target = node.get(key)
            if isinstance(target, dict):
                target = target.get('file')
            if isinstance(target, str):
                yield target
        for value in node.values():
            if isinstance(value, (list, dict)):
                yield from _includes(value)


def test_every_include_under_molecule_resolves_next_to_its_file():
    unresolved = []
    for path in _molecule_files('*.yml'):
        for target in _includes(_load(path)):
            if '{{' not in target and not os.path.exists(os.path.join(os.path.dirname(path), target)):
                unresolved.append((os.path.relpath(path, ROOT), target))
    assert unresolved == []


def test_a_verify_that_includes_features_holds_no_assertion_itself():
    for scenario in SCENARIOS:
        path = os.path.join(MOLECULE, scenario, 'verify.yml')
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            text = handle.read()
        if 'tasks/verify_' in text:
            assert 'ansible.builtin.assert' not in text, scenario
            features = re.findall(r'include_tasks: (tasks/verify_[a-z0-9_]+\.yml)', text)
            assert len(features) == len(set(features)), scenario
            assert sorted(set(features)) == sorted(
                os.path.relpath(p, os.path.join(MOLECULE, scenario))
                for p in glob.glob(os.path.join(MOLECULE, scenario, 'tasks', 'verify_*.yml'))), scenario
