# -*- coding: utf-8 -*-
"""Render the README's table of supported platforms from the roles' meta and the Molecule scenarios.

    python3 tests/scripts/platforms_table.py            exit 1 and show what differs when the table is stale
    python3 tests/scripts/platforms_table.py --write    rewrite it

One row per OS release some role declares in ``galaxy_info.platforms`` (roles/*/meta/main.yml; ``all`` is not a
release). "Roles" lists the roles that declare it. "NVIDIA driver" says, from the packaging table (plugins/module_utils/plans/nvidia_packaging.py,
docs/packaging.md), which sources and branches the nvidia_driver role installs there. "Tested" says how, from what
the repository runs: the Molecule
scenarios whose nodes boot that release (``localhost/gpuops-base:<suite>`` in molecule/*/molecule.yml, images
debootstrapped from Debian), else, for releases whose
userland the test machines cannot fetch, "not run" and where the packaging comes from. The table sits between START and END in README.md; the unit test
tests/unit/docs/test_platforms_table.py fails when it is stale.
"""

from __future__ import (absolute_import, division, print_function)

import glob
import os
import re
import sys

import yaml

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'README.md')
START = '<!-- generated from roles/*/meta/main.yml and molecule/*/molecule.yml by tests/scripts/platforms_table.py -->'
END = '<!-- end of generated lines -->'
INTERNAL = ('gpuops',)
# release code name -> NVIDIA's repository for it (plans/nvidia_packaging.py, REPOSITORIES)
REPOSITORY = {('Debian', 'bookworm'): 'debian12', ('Debian', 'trixie'): 'debian13', ('Ubuntu', 'jammy'): 'ubuntu2204',
              ('Ubuntu', 'noble'): 'ubuntu2404', ('EL', '8'): 'rhel8', ('EL', '9'): 'rhel9',
              ('EL', '10'): 'rhel10'}
# where the driver plan of a release no scenario boots is tested instead (docs/testing.md)
PLAN_TESTED = {'Ubuntu': 'the driver plan with a real apt against stand-ins of NVIDIA\'s Ubuntu packages',
               'EL': 'the driver, NCCL and DCGM plans with a real dnf against a stand-in of NVIDIA\'s modular repository',
               ('EL', '10'): 'the driver plan with a real dnf against a stand-in of NVIDIA\'s rhel10 repository (no '
                             'module streams)'}
# release code name -> (OS, version, what else it is)
RELEASES = {
    ('Debian', 'bookworm'): ('Debian', '12 (bookworm)', ''),
    ('Debian', 'trixie'): ('Debian', '13 (trixie)', ''),
    ('Ubuntu', 'jammy'): ('Ubuntu', '22.04 (jammy)', 'DGX OS 6'),
    ('Ubuntu', 'noble'): ('Ubuntu', '24.04 (noble)', 'DGX OS 7'),
    ('EL', '8'): ('RHEL, Rocky, Alma', '8', ''),
    ('EL', '9'): ('RHEL, Rocky, Alma', '9', ''),
    ('EL', '10'): ('RHEL, Rocky, Alma', '10', ''),
}
NOT_RUN = ('not run: the test machines cannot fetch %s userland; package names and sources follow NVIDIA\'s and '
           'the distribution\'s documentation')
_IMAGE = re.compile(r'localhost/gpuops-base:([a-z]+)')
# a scenario whose nodes keep a Debian userland but say they are Ubuntu (their os-release, written by its prepare)
_UBUNTU = re.compile(r'ubuntu_release: "([0-9.]+)"')
UBUNTU_CODENAMES = {'22.04': 'jammy', '24.04': 'noble'}
EMULATED = ('Molecule, a Debian 12 userland whose os-release says Ubuntu, against stand-ins of NVIDIA\'s Ubuntu '
            'packages: %s; Ubuntu\'s own packages and kernel are not run')


def declared(roles_dir=None):
    """(OS, release) -> the roles that declare it, in name order."""
    roles_dir = roles_dir or os.path.join(ROOT, 'roles')
    result = {}
    for meta in sorted(glob.glob(os.path.join(roles_dir, '*', 'meta', 'main.yml'))):
        role = meta.split(os.sep)[-3]
        if role in INTERNAL:
            continue
        with open(meta) as handle:
            info = (yaml.safe_load(handle) or {}).get('galaxy_info') or {}
        for platform in info.get('platforms') or []:
            for version in platform.get('versions') or []:
                if str(version) == 'all':
                    continue
                result.setdefault((platform['name'], str(version)), []).append(role)
    return result


def scenarios_by_suite(molecule_dir=None):
    """Debian suite -> the scenarios whose nodes boot it (a scenario whose nodes say they are Ubuntu left out)."""
    return _scenarios(molecule_dir)[0]


def scenarios_by_ubuntu(molecule_dir=None):
    """Ubuntu code name -> the scenarios whose nodes say they are that Ubuntu release."""
    return _scenarios(molecule_dir)[1]


def _scenarios(molecule_dir=None):
    molecule_dir = molecule_dir or os.path.join(ROOT, 'molecule')
    suites, ubuntu = {}, {}
    for path in sorted(glob.glob(os.path.join(molecule_dir, '*', 'molecule.yml'))):
        name = path.split(os.sep)[-2]
        with open(path) as handle:
            text = handle.read()
        releases = set(_UBUNTU.findall(text))
        for release in releases:
            ubuntu.setdefault(UBUNTU_CODENAMES[release], []).append(name)
        if not releases:
            for suite in set(_IMAGE.findall(text)):
                suites.setdefault(suite, []).append(name)
    return suites, ubuntu


def _branches(low, high):
    if not low and high is None:
        return 'all branches'
    return 'up to %d' % high if not low else ('%d and later' % low if high is None else '%d to %d' % (low, high))


def driver_cell(repo_id):
    """What the nvidia_driver role installs on the release of NVIDIA's repository ``repo_id``, per source."""
    from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging as P
    repo = P.repository(repo_id)
    parts = []
    for row in [r for r in P.DRIVER if r.family == repo.family and r.supported]:
        low, high = row.branches
        if row.source == 'cuda_repo' and repo.min_branch:
            low = max(low, repo.min_branch)
        how = ['names by branch' if '{branch}' in row.packages['open'][0] else 'names without the branch']
        if row.stream:
            how.append('module streams' if repo_id in P.MODULAR else 'version locks, no module streams')
        if row.pinning:
            how.append('pinning packages')
        where = ' `%s`' % repo_id if row.source == 'cuda_repo' else ''
        parts.append('`%s`%s: %s (%s)' % (row.source, where, _branches(low, high), ', '.join(how)))
    return '; '.join(parts)


def table(roles_dir=None, molecule_dir=None):
    rows = declared(roles_dir)
    by_suite = scenarios_by_suite(molecule_dir)
    by_ubuntu = scenarios_by_ubuntu(molecule_dir)
    unknown = sorted(set(rows) - set(RELEASES))
    if unknown:
        raise ValueError('platforms_table.RELEASES does not know %s: add them' % ', '.join('%s %s' % k for k in unknown))
    lines = ['| OS | release | also | roles | NVIDIA driver | tested |', '|---|---|---|---|---|---|']
    for key in sorted(rows, key=lambda k: list(RELEASES).index(k)):
        os_name, release, also = RELEASES[key]
        scenarios = by_suite.get(key[1]) if key[0] == 'Debian' else None
        if key[0] == 'Ubuntu' and by_ubuntu.get(key[1]):
            tested = EMULATED % ', '.join('`%s`' % s for s in by_ubuntu[key[1]])
        elif scenarios:
            tested = ('Molecule, %d scenarios on podman (systemd nodes debootstrapped from Debian, real packages): %s'
                      % (len(scenarios), ', '.join('`%s`' % s for s in scenarios)))
        else:
            tested = NOT_RUN % ('an Ubuntu' if key[0] == 'Ubuntu' else 'a RHEL' if key[0] == 'EL' else 'a ' + key[0])
            if key in PLAN_TESTED or key[0] in PLAN_TESTED:
                tested += '; %s (docs/testing.md)' % PLAN_TESTED.get(key, PLAN_TESTED.get(key[0]))
        roles = 'all %d' % len(rows[key]) if len(rows[key]) == max(len(r) for r in rows.values()) else \
            ', '.join('`%s`' % r for r in rows[key])
        driver = driver_cell(REPOSITORY[key])
        lines.append('| %s | %s | %s | %s | %s | %s |' % (os_name, release, also or '-', roles, driver, tested))
    return '\n'.join(lines)


def rendered(readme=None):
    readme = readme or README
    with open(readme) as handle:
        current = handle.read()
    return {readme: (current, generated_docs.replace_block(current, readme, START, END, table().split('\n')))}


def stale():
    return generated_docs.stale(rendered())


if __name__ == '__main__':
    sys.exit(generated_docs.main(sys.argv[1:], rendered(), ROOT))
