#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: sysctl_conf
short_description: Kernel parameters in a sysctl.d file of their own, and on the running kernel as boot sets them
version_added: 0.1.0
description:
  - Writes the kernel parameters of O(base_settings) with O(settings) over them (null removes a base key) into one
    sysctl.d file, O(path), C(key = value) lines sorted by key under a header, only when its text differs.
  - Sets the same keys, and only those, on the running kernel the way the node's boot would, reading each value
    first and writing only the differences. The value of a key is the one the node's files yield in the order of
    C(sysctl --system) (procps), which is every C(*.conf) of C(/etc/sysctl.d), C(/run/sysctl.d), C(/usr/local/lib/sysctl.d),
    C(/usr/lib/sysctl.d) and C(/lib/sysctl.d), a file name counted once (in the first of these directories that has
    it; a name linked to C(/dev/null) is masked), sorted by name whatever the directory, then C(/etc/sysctl.conf)
    (counted once, last, also where C(/etc/sysctl.d/99-sysctl.conf) links to it). An explicit assignment wins over
    a glob pattern (systemd 249 and later) whatever the order, as systemd-sysctl does at boot; procps' C(sysctl
    --system) applies patterns and keys in file order, so there a pattern in a later file wins over our key.
  - The running value set is therefore the one the node's files yield, not always the one of O(settings) - the node
    runs now with what its next boot sets. Where another file wins, its value is set, even when that lowers the
    running value (a stale C(/etc/sysctl.conf)); M(ansible.posix.sysctl) sets the value it is given instead.
  - A key another file sets to another value after ours is an override. It is set to that file's value (what the
    next boot sets), reported in RV(overrides) with the file and a warning; with O(fail_on_override) it fails the
    module before any change.
  - A running value that, before the run, differed from what the node's files gave it (changed at run time by a tool
    such as tuned, or by hand) is drift, reported in RV(drifted) with a warning, and set to the files' value.
  - Refused before any change, with every reason, are a key that has no file under C(<proc_root>/sys) (unless
    O(allow_missing) lists it; it is then written into the file and reported in RV(missing)), a key that is not a
    key or is a pattern, a value that is a boolean, a float, a mapping or empty, a path outside the sysctl.d
    directories. Each message starts with the option, prefixed by O(name_prefix) (a role passes its variables'
    prefix).
  - Whether the kernel accepts a value (its range, the words it takes) is known only when the value is written, so
    check mode cannot tell. A value the kernel refuses (C(Invalid argument)) fails the module naming the key; a value
    the kernel reads back otherwise than written (clamped, normalised) fails it too and is reported in RV(differs).
    On either failure the keys already set in this run get back the value they had before it, and the file is not
    written, so the running kernel and the next boot are left as they were. Values are compared word by word (the
    kernel prints C(net.ipv4.tcp_rmem) with tabs).
author:
  - gpuops.node maintainers (@gpuops)
attributes:
  check_mode:
    support: full
    description: Reads the files and the running values, validates, and returns what would be written and set.
  diff_mode:
    support: full
    description: The file's text before and after, and the keys' running values before and after (C(key = value)).
options:
  base_settings:
    description:
      - Kernel parameters by key (C(net.core.rmem_max) or C(net/core/rmem_max); the slash form keeps dots literal,
        as in C(net/ipv4/conf/eth0.100/rp_filter)), each an integer, a string (whitespace collapsed) or a list of
        integers and strings (joined with spaces).
    type: dict
    default: {}
  settings:
    description:
      - Kernel parameters over O(base_settings); a key set to null removes that key of O(base_settings).
    type: dict
    default: {}
  path:
    description: Our file, a C(*.conf) directly in one of the sysctl.d directories.
    type: path
    default: /etc/sysctl.d/90-gpuops.conf
  header:
    description: The comment at the top of the file (each line becomes a C(#) line).
    type: str
    default: "Managed by gpuops.node.sysctl_conf: changes made here are overwritten"
  proc_root:
    description: Where procfs is mounted (the kernel parameters are under C(<proc_root>/sys)).
    type: path
    default: /proc
  root:
    description: The directory the sysctl files are read and written under (C(/) on a node; a tree in tests).
    type: path
    default: /
  allow_missing:
    description:
      - Keys (or shell-style patterns, where C(*) also matches dots) that may have no file under
        C(<proc_root>/sys) yet, such as those of a kernel module not loaded now. They are written into the file as
        C(-key = value), which sysctl.d(5) skips quietly at boot while the key does not exist, not set now, and
        reported in RV(missing). Set as any other key once the kernel has them.
    type: list
    elements: str
    default: []
  fail_on_override:
    description: Fail, before any change, when another file sets one of our keys to another value after ours.
    type: bool
    default: false
  name_prefix:
    description: Put before the option names in messages (C(sysctl_) makes C(settings) read C(sysctl_settings)).
    type: str
    default: ""
  option_names:
    description:
      - The name messages use for an option, by option name, put after O(name_prefix) (a role whose variable for
        O(path) is C(sysctl_file) maps C(path) to C(file)).
    type: dict
    default: {}
notes:
  - The file is written atomically, mode 0644.
  - Keys the settings no longer have are removed from the file, and their running values left as they are (the
    kernel has no default to go back to); a reboot gives them the values of the other files or the kernel's.
seealso:
  - name: sysctl.d(5)
    description: The format of the files, and the order systemd-sysctl reads them at boot.
    link: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
  - module: ansible.posix.sysctl
    description: One key at a time, in a file of the caller's choice, without the override check.
'''

EXAMPLES = r'''
- name: Socket buffers and NUMA settings of a GPU node
  gpuops.node.sysctl_conf:
    base_settings:
      net.core.rmem_max: 268435456
      net.ipv4.tcp_rmem: [4096, 87380, 134217728]
      kernel.numa_balancing: 0
    settings:
      kernel.numa_balancing: null
      net/ipv4/conf/eth0.100/rp_filter: 2
    allow_missing: [net.bridge.*]
  register: sysctl

- name: What would change, failing when another file wins over ours
  gpuops.node.sysctl_conf:
    settings: {vm.zone_reclaim_mode: 0}
    fail_on_override: true
  check_mode: true
'''

RETURN = r'''
changed:
  description: The file was written or a running value set (or would be, in check mode).
  returned: always
  type: bool
file_changed:
  description: The file's text differed from ours (it was, or would be, written).
  returned: always
  type: bool
path:
  description: Our file.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-gpuops.conf
settings:
  description: Our keys (dot form) and values, as written into the file.
  returned: success
  type: dict
  sample: {kernel.numa_balancing: "0", net.ipv4.tcp_rmem: "4096 87380 134217728"}
live:
  description: The running value of each of our keys after the change (in check mode, the value it would have).
  returned: success
  type: dict
  sample: {kernel.numa_balancing: "0", net.ipv4.tcp_rmem: "4096\t87380\t134217728"}
applied:
  description: The running values set (or that would be), C(key), C(before), C(after).
  returned: success
  type: list
  elements: dict
  sample: [{key: kernel.numa_balancing, before: "1", after: "0"}]
overrides:
  description:
    - Our keys that another file, applied after ours, sets to another value; the node runs with that value. C(key),
      C(wanted) (ours), C(value) (the other file's), C(file) (the other file), C(ours) (our file).
  returned: success
  type: list
  elements: dict
  sample: [{key: net.core.rmem_max, wanted: "268435456", value: "16777216", file: /etc/sysctl.conf,
            ours: /etc/sysctl.d/90-gpuops.conf}]
drifted:
  description:
    - Our keys whose running value before the run was not what the node's sysctl files (as they were before the run)
      give them, changed at run time by a tool such as tuned or by hand. C(key), C(value) (the running value
      before), C(expected) (the files' value), C(file) (the file that gives it). They are set to the files' value
      and are also in RV(applied).
  returned: success
  type: list
  elements: dict
  sample: [{key: net.core.rmem_max, value: "212992", expected: "268435456", file: /etc/sysctl.d/90-gpuops.conf}]
differs:
  description:
    - Keys the kernel reads back otherwise than written (C(key), C(wanted), C(value)); the module fails, and the
      values set in this run are put back.
  returned: success
  type: list
  elements: dict
missing:
  description: Keys of O(allow_missing) without a file under C(<proc_root>/sys) now; written into the file, not set.
  returned: success
  type: list
  elements: str
  sample: [net.bridge.bridge-nf-call-iptables]
errors:
  description:
    - The reasons the module failed, each starting with the option. Refused before any change, or a value the
      kernel refused or read back otherwise (the values set in this run then put back, RV(applied) listing those
      that could not be).
  returned: failure
  type: list
  elements: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.config.sysctl import DEFAULT_PATH, converge


def install(module, root, path, text):
    """Writes the file atomically, mode 0644."""
    write_atomic(module, os.path.join(root, path.lstrip('/')), text, 0o644)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_settings=dict(type='dict', default={}),
            settings=dict(type='dict', default={}),
            path=dict(type='path', default=DEFAULT_PATH),
            header=dict(type='str', default='Managed by gpuops.node.sysctl_conf: changes made here are overwritten'),
            proc_root=dict(type='path', default='/proc'),
            root=dict(type='path', default='/'),
            allow_missing=dict(type='list', elements='str', default=[]),
            fail_on_override=dict(type='bool', default=False),
            name_prefix=dict(type='str', default=''),
            option_names=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params

    def write_file(path, text):
        install(module, p['root'], path, text)

    result = converge(base_settings=p['base_settings'], settings=p['settings'], path=p['path'],
                      proc_root=p['proc_root'], root=p['root'], allow_missing=p['allow_missing'],
                      fail_on_override=p['fail_on_override'], header=p['header'], name_prefix=p['name_prefix'],
                      option_names=p['option_names'], check_mode=module.check_mode, write_file=write_file)
    for warning in result.pop('warnings'):
        module.warn(warning)
    diff = result.pop('diff')
    if module._diff:
        result['diff'] = diff
    # errors: refused before any change; failures: after one (put back: applied lists what could not be)
    failures = result.pop('failures')
    if result['errors'] or failures:
        result['errors'] = result['errors'] or failures
        module.fail_json(msg='; '.join(result['errors']), **result)
    del result['errors']
    module.exit_json(**result)


if __name__ == '__main__':
    main()
