#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubelet_config
short_description: Set top-level fields of the kubelet's configuration, in its file or in a drop-in
version_added: 0.1.0
description:
  - Sets top-level fields of the kubelet's C(KubeletConfiguration) (C(kubelet.config.k8s.io/v1beta1)), either in the file
    kubeadm writes when a node joins (O(mode=merge), O(path)) or in a drop-in file of the kubelet's C(--config-dir)
    directory (O(mode=drop_in)), which the kubelet (1.28 and later; on by default from 1.30) reads over its main file.
  - A field given replaces the whole value of that field (C(cpuManagerPolicyOptions), C(kubeReserved), C(evictionHard) are
    exactly what is given); a field set to V(null) is removed (in O(mode=merge)) or left out of the drop-in (in O(mode=drop_in)).
  - In O(mode=merge) the other fields keep their values and their order, and a new field goes where it sorts when the
    file's fields are sorted (kubeadm writes them sorted). The file is written the way kubeadm writes it (the YAML of
    C(sigs.k8s.io/yaml)), so a file kubeadm wrote changes only in the lines of the fields that change; comments are lost.
  - When the data does not change the file is not rewritten, whatever its formatting.
  - The kubelet reads its configuration when it starts; restarting it is left to the caller.
  - Warns when a drop-in of O(config_dir) that the kubelet reads after the one changed (or after the main file) sets one of
    the fields to another value.
author:
  - gpuops.node maintainers (@gpuops)
requirements:
  - PyYAML on the node
attributes:
  check_mode:
    support: full
    description: Reports what would change and writes nothing.
  diff_mode:
    support: full
    description: The file's text before and after.
options:
  path:
    description: The kubelet's main configuration file (its C(--config)).
    type: path
    default: /var/lib/kubelet/config.yaml
  settings:
    description:
      - Top-level fields of C(KubeletConfiguration) by name (C(cpuManagerPolicy), C(reservedSystemCPUs), C(kubeReserved)...),
        each with its whole value; V(null) removes the field. C(apiVersion) and C(kind) are not settings.
    type: dict
    required: true
  mode:
    description:
      - V(merge) changes O(path) itself.
      - V(drop_in) writes O(drop_in_name) in O(config_dir) with C(apiVersion), C(kind) and the settings (fields set to V(null)
        left out), and removes it when no field is left; O(path), when it exists, must be a kubelet configuration too.
    type: str
    choices: [merge, drop_in]
    default: merge
  config_dir:
    description: The kubelet's drop-in directory (its C(--config-dir)), created with mode 0755 when missing in O(mode=drop_in).
    type: path
    default: /etc/kubernetes/kubelet.conf.d
  drop_in_name:
    description:
      - The drop-in's file name in O(config_dir); it must end in C(.conf), the only files the kubelet reads there, in the
        lexical order of their names (a later file wins).
    type: str
    default: 90-gpuops.conf
  backup:
    description: Keep a copy of the file changed (or removed) next to it, with a timestamp in its name.
    type: bool
    default: false
notes:
  - The kubelet applies each drop-in over the configuration so far as a JSON merge patch (mappings merged field by field,
    lists and other values replaced); RV(config) is computed the same way.
seealso:
  - name: Kubelet Configuration Directory Merging
    description: How the kubelet merges the drop-ins of C(--config-dir).
    link: https://kubernetes.io/docs/reference/node/kubelet-config-directory-merging/
'''

EXAMPLES = r'''
- name: Static CPU and memory managers in kubeadm's kubelet configuration
  gpuops.node.kubelet_config:
    settings:
      cpuManagerPolicy: static
      reservedSystemCPUs: "0-1"
      memoryManagerPolicy: Static
      topologyManagerPolicy: single-numa-node
    backup: true
  register: kubelet_config

- name: The same in a drop-in of the kubelet's --config-dir
  gpuops.node.kubelet_config:
    mode: drop_in
    settings:
      cpuManagerPolicy: static
      reservedSystemCPUs: "0-1"

- name: Back to kubeadm's defaults
  gpuops.node.kubelet_config:
    settings:
      cpuManagerPolicy: null
      reservedSystemCPUs: null
'''

RETURN = r'''
path:
  description: The file written, or that would be (O(path), or the drop-in in O(mode=drop_in)).
  returned: always
  type: str
  sample: /var/lib/kubelet/config.yaml
backup_file:
  description: The copy made with O(backup).
  returned: when a file was changed with O(backup)
  type: str
  sample: /var/lib/kubelet/config.yaml.12345.2026-12-01@03:14:15~
changed_keys:
  description: The top-level fields whose value changes (added, replaced or removed), sorted.
  returned: always
  type: list
  elements: str
  sample: [cpuManagerPolicy, reservedSystemCPUs]
config:
  description:
    - The configuration the kubelet reads after the change; in O(mode=drop_in), its main file with the drop-ins of
      O(config_dir) applied in order (fields it does not set take the kubelet's defaults).
  returned: success
  type: dict
  sample: {apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, cpuManagerPolicy: static}
overridden:
  description: The fields given that a later drop-in of O(config_dir) sets to another value, with that file.
  returned: success
  type: list
  elements: dict
  sample: [{key: cpuManagerPolicy, file: /etc/kubernetes/kubelet.conf.d/99-site.conf, value: none}]
'''

import glob
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.config.kubelet import (
    HAS_YAML, KubeletConfigError, dropin, dump, effective, load, merge, same)

MISSING = object()


def read_text(path):
    """The text of ``path``, or None when it does not exist."""
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def read_dropins(config_dir):
    """(path, document) of the ``*.conf`` files of ``config_dir``, in the lexical order the kubelet reads them."""
    if not os.path.isdir(config_dir):
        return []
    return [(name, load(read_text(name), name)) for name in sorted(glob.glob(os.path.join(config_dir, '*.conf')))
            if os.path.isfile(name)]


def write(module, path, text, backup):
    """Writes ``text`` (None removes the file); returns the backup file's path or None."""
    backup_file = None
    if backup and os.path.exists(path):
        backup_file = module.backup_local(path)
    if text is None:
        os.remove(path)
        return backup_file
    # a file that exists keeps its mode and owner
    write_atomic(module, path, text, None if os.path.exists(path) else 0o644)
    return backup_file


def overrides(settings, after, dropins):
    """The fields of ``settings`` a drop-in in ``dropins`` (read after ours) sets to another value."""
    found = []
    for key in sorted(settings):
        value = settings[key]
        winner = None
        for name, doc in dropins:
            if key in doc:
                winner = (name, doc[key])
        if winner is None:
            continue
        if value is None or not same(after.get(key, MISSING), value):
            found.append({'key': key, 'file': winner[0], 'value': winner[1]})
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/var/lib/kubelet/config.yaml'),
            settings=dict(type='dict', required=True),
            mode=dict(type='str', choices=['merge', 'drop_in'], default='merge'),
            config_dir=dict(type='path', default='/etc/kubernetes/kubelet.conf.d'),
            drop_in_name=dict(type='str', default='90-gpuops.conf'),
            backup=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib('PyYAML'))
    settings = p['settings']
    fixed = sorted(k for k in settings if k in ('apiVersion', 'kind'))
    if fixed:
        module.fail_json(msg='settings: %s is not a setting (the module writes apiVersion and kind itself)' % fixed[0])
    name = p['drop_in_name']
    if p['mode'] == 'drop_in' and (not name.endswith('.conf') or '/' in name or name.startswith('.') or name == '.conf'):
        module.fail_json(msg='drop_in_name: %r must be a file name ending in .conf (the kubelet reads only *.conf '
                             'files of its --config-dir)' % name)

    try:
        if p['mode'] == 'merge':
            target = p['path']
            before = read_text(target)
            if before is None:
                module.fail_json(msg='no kubelet configuration at %s: kubeadm writes it when the node joins' % target,
                                 path=target)
            old_doc = load(before, target)
            new_doc, changed_keys = merge(old_doc, settings)
            after = dump(new_doc) if changed_keys else before
            config = new_doc
            try:
                later = read_dropins(p['config_dir'])
            except KubeletConfigError as exc:  # only read for the warnings: the kubelet may not use --config-dir
                module.warn('the drop-ins of %s are not checked for overrides: %s' % (p['config_dir'], exc))
                later = []
        else:
            target = os.path.join(p['config_dir'], name)
            main_text = read_text(p['path'])
            main_doc = load(main_text, p['path']) if main_text is not None else None
            before = read_text(target)
            old_doc = load(before, target) if before is not None else None
            new_doc = dropin(settings)
            if len(new_doc) == 2:  # apiVersion and kind only
                new_doc = None
            old_fields, new_fields = old_doc or {}, new_doc or {}
            changed_keys = sorted(
                k for k in set(old_fields) | set(new_fields)
                if k not in ('apiVersion', 'kind') and not same(old_fields.get(k, MISSING), new_fields.get(k, MISSING)))
            unchanged = (old_doc is None and new_doc is None) or (
                old_doc is not None and new_doc is not None and same(old_doc, new_doc))
            after = before if unchanged else (dump(new_doc) if new_doc is not None else None)
            others = [d for d in read_dropins(p['config_dir']) if d[0] != target]
            ours = [(target, new_doc)] if new_doc is not None else []
            dropins = sorted(others + ours, key=lambda d: d[0])
            config = effective(main_doc, [doc for n, doc in dropins])
            later = [d for d in others if d[0] > target]
    except KubeletConfigError as exc:
        module.fail_json(msg=str(exc))

    changed = after != before
    backup_file = None
    if changed and not module.check_mode:
        directory = os.path.dirname(target)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
            os.chmod(directory, 0o755)
        backup_file = write(module, target, after, p['backup'])

    # in merge mode the drop-ins count only when the kubelet runs with --config-dir: a warning, not the result
    seen = effective(config, [doc for n, doc in later]) if p['mode'] == 'merge' else config
    overridden = overrides(settings, seen, later)
    for item in overridden:
        module.warn('%s is set to %r by %s, which the kubelet reads after %s%s' % (
            item['key'], item['value'], item['file'], target,
            ' when it runs with --config-dir=%s' % p['config_dir'] if p['mode'] == 'merge' else ''))

    result = dict(changed=changed, path=target, changed_keys=changed_keys, config=config, overridden=overridden)
    if backup_file:
        result['backup_file'] = backup_file
    if module._diff:
        result['diff'] = {'before_header': target if before is not None else '%s (absent)' % target,
                          'after_header': target if after is not None else '%s (absent)' % target,
                          'before': before or '', 'after': after or ''}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
