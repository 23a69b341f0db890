# -*- coding: utf-8 -*-
"""Render the README's table of the collection's roles from their roles/*/meta/main.yml.

    python3 tests/scripts/roles_table.py            exit 1 and show what differs when the table is stale
    python3 tests/scripts/roles_table.py --write    rewrite it

The table sits between the line START and the next END line of README.md; the unit test
tests/unit/docs/test_roles_table.py fails when it is stale. One row a role (every roles/<name>/ with a
meta/main.yml), sorted by name: the role linked to its README, what it does, its platforms.

"What it does" is ``galaxy_info.description`` of meta/main.yml (what Galaxy shows, and what every role has), not the
argument spec's ``short_description`` (that describes the role's variables, and ``ansible-doc -t role`` shows it).
Platforms are ``galaxy_info.platforms``: "Debian bookworm, trixie; Ubuntu jammy, noble; EL 8, 9" (``all`` as
"all versions"). The internal role ``gpuops`` (the rollout itself, used by site.yml and playbooks/validate.yml, not a
role to put in ``gpuops_roles``) is the last row, marked "(internal)". Standard library and PyYAML only; run from
anywhere.
"""

from __future__ import (absolute_import, division, print_function)

import os
import sys

import yaml

import generated_docs  # tests/scripts, beside this file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'README.md')
ROLES_DIR = os.path.join(ROOT, 'roles')
INTERNAL = ('gpuops',)
START = '<!-- generated from roles/*/meta by tests/scripts/roles_table.py -->'
END = '<!-- end of generated lines -->'


MarkerError = generated_docs.MarkerError


def role_names(roles_dir=None):
    """Every role with a meta/main.yml: the public ones sorted by name, then the internal ones."""
    roles_dir = roles_dir or ROLES_DIR
    names = sorted(n for n in os.listdir(roles_dir) if os.path.isfile(os.path.join(roles_dir, n, 'meta', 'main.yml')))
    return [n for n in names if n not in INTERNAL] + [n for n in names if n in INTERNAL]


def galaxy_info(name, roles_dir=None):
    with open(os.path.join(roles_dir or ROLES_DIR, name, 'meta', 'main.yml')) as handle:
        return (yaml.safe_load(handle) or {}).get('galaxy_info') or {}


def platforms(info):
    """'Debian bookworm, trixie; Ubuntu jammy, noble; EL 8, 9'."""
    parts = []
    for platform in info.get('platforms') or []:
        versions = [str(v) for v in platform.get('versions') or []]
        if not versions or versions == ['all']:
            parts.append('%s (all versions)' % platform['name'])
        else:
            parts.append('%s %s' % (platform['name'], ', '.join(versions)))
    return '; '.join(parts)


def _cell(text):
    return ' '.join(str(text).split()).replace('|', '\\|')


def table(roles_dir=None):
    lines = ['| role | what it does | platforms |', '|---|---|---|']
    for name in role_names(roles_dir):
        info = galaxy_info(name, roles_dir)
        role = '[`%s`](roles/%s/README.md)' % (name, name)
        description = info.get('description') or ''
        if name in INTERNAL:
            role += ' (internal)'
            # its description says so itself: "Internal: ..."
            if description.lower().startswith('internal:'):
                description = description[len('internal:'):].strip()
                description = description[:1].upper() + description[1:]
        lines.append('| %s | %s | %s |' % (role, _cell(description), _cell(platforms(info))))
    return lines


def replace_block(text, path, body):
    """``text`` with the lines between START and the next END set to ``body``; MarkerError without them."""
    return generated_docs.replace_block(text, path, START, END, body)


def rendered(path=None, roles_dir=None):
    """{README.md (or ``path``): (current text, text with the generated table)}, read now."""
    path = path or README
    with open(path) as handle:
        text = handle.read()
    return {path: (text, replace_block(text, path, table(roles_dir)))}


def stale(path=None):
    """Unified diff of the README when its table is stale (empty when current)."""
    return generated_docs.stale(rendered(path))


if __name__ == '__main__':
    try:
        documents = rendered()
    except MarkerError as exc:
        sys.exit(str(exc))
    sys.exit(generated_docs.main(sys.argv[1:], documents, ROOT))
