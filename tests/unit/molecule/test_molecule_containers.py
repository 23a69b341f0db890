# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""molecule/shared/files/containers.py, the create and destroy steps of every scenario: each platform of each
scenario becomes the podman command the podman driver would run for its keys, and an unknown key is refused.

What this cannot prove: that podman starts the container (every scenario's create step does that); that the
driver's own playbook would pass exactly these options (its podman_container module builds them: the keys here are
the ones the scenarios use, each mapped to the option the module documents).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import pytest
import yaml

import containers  # molecule/shared/files  pylint: disable=import-error
from repo_paths import REPO as ROOT


def platforms():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'molecule', '*', 'molecule.yml'))):
        with open(path) as handle:
            found.extend((os.path.basename(os.path.dirname(path)), p) for p in yaml.safe_load(handle)['platforms'])
    assert len(found) >= 14
    return found


@pytest.mark.parametrize('scenario,platform', platforms(), ids=lambda v: v if isinstance(v, str) else v['name'])
def test_every_platform_becomes_its_podman_run(scenario, platform):
    argv = containers.run_argv(platform)
    assert argv[:9] == ['podman', 'run', '-d', '--name', platform['name'], '--hostname', platform['name'],
                        '--label', 'owner=molecule']
    assert '--privileged' in argv and '--systemd=always' in argv, scenario
    for limit in platform['ulimits']:
        assert ['--ulimit', limit] == argv[argv.index(limit) - 1:argv.index(limit) + 1]
    for volume in platform.get('volumes', []):
        assert argv[argv.index(volume) - 1] == '--volume'
    if 'network' in platform:
        assert argv[argv.index('--network') + 1] == platform['network']
    for option in platform.get('extra_opts', []):
        assert option in argv
    assert argv[-2:] == [platform['image'], '/sbin/init']


def test_an_unknown_key_or_a_built_image_is_refused_before_anything_runs(monkeypatch):
    ran = []
    monkeypatch.setattr(containers, 'run', lambda argv, done, check=True: ran.append(argv))
    with pytest.raises(containers.Failed, match='keys tmpfs are not applied'):
        containers.create([{'name': 'a', 'image': 'x', 'pre_build_image': True},
                           {'name': 'b', 'image': 'x', 'pre_build_image': True, 'tmpfs': ['/run']}])
    with pytest.raises(containers.Failed, match='only pre-built images'):
        containers.create([{'name': 'a', 'image': 'x'}])
    assert ran == []


def test_prune_keeps_only_molecules_files(tmp_path):
    # molecule.yml: the merged configuration Molecule writes before every step, which create.yml reads
    for name in ('ansible.cfg', 'molecule.yml', 'state.yml', 'stale.txt'):
        (tmp_path / name).write_text('x')
    for name in ('inventory', 'reports', 'profile'):
        (tmp_path / name).mkdir()
    (tmp_path / 'inventory' / 'ansible_inventory.yml').write_text('x')
    (tmp_path / 'reports' / 'rack-report.json').write_text('{}')
    removed = containers.prune(str(tmp_path))
    assert sorted(os.path.basename(r[-1]) for r in removed) == ['profile', 'reports', 'stale.txt']
    assert sorted(os.listdir(str(tmp_path))) == ['ansible.cfg', 'inventory', 'molecule.yml', 'state.yml']
    assert os.path.exists(str(tmp_path / 'inventory' / 'ansible_inventory.yml'))
    assert containers.prune(str(tmp_path)) == []
