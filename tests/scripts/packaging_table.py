# -*- coding: utf-8 -*-
"""Write docs/packaging.md from the one table of NVIDIA's packaging (plugins/module_utils/plans/nvidia_packaging.py).

    python3 tests/scripts/packaging_table.py            exit 1 and show what differs when the page is stale
    python3 tests/scripts/packaging_table.py --write    rewrite it

The whole page is generated: NVIDIA's repositories with their keys, the driver packages per OS family, source and
branch range, what the nvidia_driver role does not do yet for each row, and every source with how sure it is.
tests/unit/docs/test_packaging_table.py fails when the page is stale. Run with the collection importable (``make
units`` sets that up).
"""

from __future__ import (absolute_import, division, print_function)

import os
import sys

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PAGE = os.path.join(ROOT, 'docs', 'packaging.md')
FAMILIES = {'Ubuntu': 'Ubuntu 22.04, 24.04', 'Debian': 'Debian 12, 13', 'RedHat': 'RHEL, Rocky, Alma 8, 9, 10'}


def _cell(text):
    return ' '.join(str(text).split()).replace('|', '\\|')


def _code(names):
    return ', '.join('`%s`' % n for n in names) if names else '-'


def _branches(row):
    low, high = row.branches
    if high is None:
        return 'all' if low == 0 else '%d and later' % low
    return 'up to %d' % high if low == 0 else '%d to %d' % (low, high)


def _span(since, previous):
    """The branches a name is used for: from its since_branch to the branch before the next (newer) name's."""
    if previous is None:
        return 'from %d' % since if since else 'all'
    if since:
        return '%d to %d' % (since, previous - 5)
    return 'before %d' % previous


def _by_branch(entries):
    if not entries:
        return '-'
    parts, previous = [], None
    for entry in entries:
        since = entry['since_branch']
        parts.append('`%s` (%s)' % (entry['name'], _span(since, previous)))
        previous = since
    return ', '.join(parts)


def _persistenced(entry):
    return '`%s`%s' % (entry['name'], '' if entry['versioned'] else ' (its own version)')


def _pinning(templates):
    if not templates:
        return ''
    return ' or '.join('`%s`' % t for t in templates) + ', the first the source offers, installed before the driver'


def page():
    from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging as P
    lines = [
        '# NVIDIA driver packaging per OS and branch',
        '',
        '<!-- generated from plugins/module_utils/plans/nvidia_packaging.py by tests/scripts/packaging_table.py -->',
        '',
        'What the `nvidia_driver` role installs, per OS family, source (`nvidia_driver_source`: `distro`, `cuda_repo`,',
        'or `mirror`, a copy of NVIDIA\'s repository) and driver branch, from one table',
        '(`plugins/module_utils/plans/nvidia_packaging.py`), which the plan module (`gpuops.node.nvidia_driver_plan`)',
        'reads. Beyond the packages a row names, the plan installs and holds every package they depend on that the',
        'source offers at exactly the driver\'s package version, as the repository\'s own metadata says (`apt-cache',
        'show`): the exact-version closure, so that a version older than the newest installs. Each row names its',
        'sources (below, with how sure each is) and what the role does not do yet for it.',
        '',
        '## NVIDIA\'s repositories',
        '',
        '`https://developer.download.nvidia.com/compute/cuda/repos/<os>/<arch>/`, `<arch>` `x86_64` or `sbsa`.',
        '',
        '| `<os>` | OS | key | fingerprint | branches | note | sources |',
        '|---|---|---|---|---|---|---|',
    ]
    for repo in P.REPOSITORIES:
        lines.append('| `%s` | %s %s | `%s` | %s | %s | %s | %s |' % (
            repo.os, repo.family, repo.release, repo.key, '`%s`' % repo.fingerprint if repo.fingerprint else 'not recorded',
            '%d and later' % repo.min_branch if repo.min_branch else 'all', _cell(repo.note or '-'),
            ', '.join('[%s](#%s)' % (s, s) for s in repo.sources)))
    lines += ['', '## Driver packages', '',
              '`{branch}` is the target\'s branch (`580`), `{version}` its version (`580.126.20`); the fabric manager,',
              'NSCQ and IMEX package names change with the branch.', '',
              '| OS | source | branches | open modules | proprietary modules | persistenced | fabric manager | NSCQ | '
              'IMEX | pinning / stream | installed by the role | sources |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for row in P.DRIVER:
        lines.append('| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            FAMILIES[row.family], row.source, _branches(row), _code(row.packages['open']),
            _code(row.packages['proprietary']), _persistenced(row.persistenced), _by_branch(row.fabricmanager),
            _by_branch(row.nscq), _by_branch(row.imex),
            _cell(_pinning(row.pinning) or P.stream_text(row.stream) or '-'),
            ('yes' if row.supported else '**no**') + ('; not yet: ' + _cell(row.gap) if row.gap else ''),
            ', '.join('[%s](#%s)' % (s, s) for s in row.sources)))
    lines += ['', '## NVIDIA\'s libraries', '',
              'The packages of the libraries that come from NVIDIA\'s repository beside the driver, per OS family, as',
              'their roles install them (`nccl_plan` names them): each at one package version, held.', '',
              '| library | OS | packages | a package version | held with | installed by the role | sources |',
              '|---|---|---|---|---|---|---|']
    for row in P.LIBRARIES:
        lines.append('| %s | %s | %s | `%s` | %s | %s | %s |' % (
            row.component, FAMILIES[row.family],
            ', '.join('`%s` (%s)' % (name, part) for part, name in sorted(row.packages.items(), key=lambda i: i[0] != 'lib')),
            row.example, row.hold, ('yes' if row.supported else '**no**') + ('; not yet: ' + _cell(row.gap) if row.gap else ''),
            ', '.join('[%s](#%s)' % (s, s) for s in row.sources)))
    lines += ['', '## Sources', '']
    for key, (sureness, text) in P.SOURCES.items():
        lines += ['### %s' % key, '', '%s: %s' % (sureness.capitalize(), _cell(text)), '']
    return '\n'.join(lines).rstrip('\n') + '\n'


def rendered():
    return {PAGE: (generated_docs.current(PAGE), page())}


def stale():
    return generated_docs.stale(rendered())


if __name__ == '__main__':
    sys.exit(generated_docs.main(sys.argv[1:], rendered(), ROOT))
