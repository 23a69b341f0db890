#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rack_report
short_description: Write the rack report of a GPU node rollout as JSON, Markdown, JUnit XML and an HTML page
version_added: 0.1.0
description:
  - Builds a report from one record per host (pre-change check, changes, reboot, post-change check, regressions,
    status), grouped by rack, and writes it to O(dest) as C(<basename>.json), C(<basename>.md),
    C(<basename>.xml) and C(<basename>.html).
  - Every status is decided here, from what each step of the run returned; RV(failing) names the hosts the play
    must fail after the report, with the reason.
  - The Markdown file has a summary table per rack, the checks each host deferred to the post-change check, and a
    details section listing every failed check and regression with its subject, expected and actual values. A
    report of a check-mode run says so at the top, and its changes are what a real run would make.
  - The JUnit XML file has one C(testsuite) per rack and one C(testcase) per host and check phase, so CI systems can
    show node health like test results.
  - The HTML page is one self-contained file (inline CSS and SVG, no script, nothing fetched from the network).
    It has the summary per rack, then every host with its status, failed checks and regressions, and a drawing of its
    topology from the record's C(drawing) (P(gpuops.node.topology_drawing#filter)) or C(gpu_topology). The drawing
    has the GPUs and NICs in columns by NUMA node, the NVSwitches, NVLink with its link counts, each GPU's closest
    NIC with the relation, and what a failure or regression names marked on it with its message. Hosts of one node
    class with the same topology, status and findings share one drawing. Its changes are not shown in the diff (the
    other files' are).
  - Output is deterministic; a file is only rewritten when its content differs, so running the module twice with the
    same records reports no change.
  - Meant to run on the controller, usually with C(delegate_to=localhost) and C(run_once=true), with records built
    from C(hostvars).
author:
  - gpuops.node maintainers (@gpuops)
options:
  records:
    description:
      - One dictionary per host.
      - V(host) (required) is the inventory hostname; V(rack) the rack name (default V(unracked)); V(node_class) the
        node class.
      - V(pre_check) is V(null) or the result of M(gpuops.node.gpu_topology_check) as registered (V(passed),
        V(failures), V(deferred); an V(unreachable) result makes the host unreachable, a V(skipped) or V(failed) one
        counts as not run), or a dictionary with V(passed), V(failures) and V(deferred).
      - V(post_check) is the same for the post-change check, with V(regressions).
      - V(gates) maps a role with an acceptance gate to its C(<role>_gate) (V(name), V(ran), V(passed), V(summary),
        V(failures) in the format of a check's failures). A gate that ran and did not pass, or that reported nothing
        (V(null)), fails its host; one that did not run says why in V(summary).
      - V(gather) is the registered result of the fact gathering; only V(unreachable) and V(msg) are read.
      - V(roles) lists the roles the rollout applies to the host. A record with V(roles) is a rollout record, whose
        failed pre-change check holds the host back (V(held_back)) and whose post-change check must have run; a
        record without it (a validation) is V(validated) or V(failed).
      - V(changes) maps a role to its C(<role>_changed), the number of tasks that changed something (V(true)/V(false)
        also accepted; V(null) when the role did not say).
      - V(reboot_required) maps a role to its C(<role>_reboot_required). V(reboot) is the registered result of the
        reboot (V(rebooted)). When a role asked for a reboot that did not happen, the host is V(reboot_required).
      - V(check_mode) is V(true) for a check-mode run, and the report then says that nothing changed.
      - V(errors) (a list of messages, or V(error), one message) says what failed; V(unreachable) (boolean) and
        V(held_back) may be given. V(phase) is V(done) once the host reached the report; any other phase (the
        playbooks start every record with V(started)) means the host left the play on the way.
      - V(status) is one of V(provisioned), V(validated), V(held_back), V(reboot_required), V(regressed),
        V(unreachable), V(failed), V(not_started). When omitted it is derived, in this order of precedence; unreachable, held back, regressed,
        failed (an error), reboot required, then the post-change check and the gates (V(provisioned) or V(failed)) or,
        without one,
        the pre-change check (V(validated) or V(failed)).
      - V(scheduler) is the host's node in its scheduler, when the rollout drains through one; V(name) (V(slurm) or
        V(kubernetes)), V(node) (its name there), V(before) (its state as read before any change; V(drain), V(ours),
        V(in_service), V(state), V(reason)), V(drained) (this run drained it), V(applied) (the roles ran after the drain),
        V(error). The report adds a scheduler section and RV(service).
      - V(drawing) is what P(gpuops.node.topology_drawing#filter) makes of the host's C(gpu_topology); the HTML page
        draws it (or the record's V(gpu_topology) when there is no V(drawing)).
      - Other keys, for example V(gpu_topology), are kept in the per-host files (see O(host_dir)) and left out of the
        JSON, Markdown and JUnit reports.
    type: list
    elements: dict
    required: true
  dest:
    description:
      - Directory the report files are written to. Created when missing.
    type: path
    required: true
  racks:
    description:
      - Every host of the run by rack (a rack name maps to the list of its hosts), in rollout order. A host without a record is reported
        as V(not_started) in its rack, so the report shows the whole fleet of the run when the rollout stops.
      - While a host of O(racks) has no record (the rollout has not reached its batch yet), the report is partial
        and is written only when a host must fail (the rollout may stop after this batch); otherwise nothing is
        written (RV(written) is V(false)), so a rollout writes its report once, after its last batch.
    type: dict
  fail_held_back:
    description:
      - Also fail the hosts that are V(held_back) (see RV(failing)).
    type: bool
    default: false
  fail_reboot_required:
    description:
      - Also fail the hosts that are V(reboot_required) (see RV(failing)).
    type: bool
    default: false
  basename:
    description:
      - File name of the report files without extension.
    type: str
    default: rack-report
  title:
    description:
      - Title of the report (Markdown heading and JUnit C(testsuites) name).
    type: str
    default: GPU rack report
  host_dir:
    description:
      - When set, also write one JSON file per host, C(<host_dir>/<host>.json), holding the complete record.
      - A host name of ASCII letters, digits, C(.), C(_) and C(-), not starting with C(.) and at most 200 characters
        long, is the file name as it is. Any other name (a C(/), a space, a control or NUL character, a non-ASCII
        letter or digit) is made safe and kept apart from the others; each character outside that set, and a
        leading C(.), becomes C(_), the result is cut to 191 characters, and C(-) and the first 8 hexadecimal digits
        of the SHA-256 of the host name (UTF-8) are appended. So V(a/b) is written to C(a_b-<8 hex digits>.json)
        while V(a_b) keeps C(a_b.json).
      - Host names that differ only in case (V(GPU-A01), V(gpu-a01)) get the suffix too, so that they do not
        overwrite each other on a case-insensitive file system.
      - When two hosts still map to the same file (file names compared without case), or a host's file is one of
        the report files, the module fails naming both before it writes anything.
      - Created when missing.
    type: path
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
notes:
  - Records are validated; an unknown C(status) or a record without V(host) fails the module. Records, file names
    and the content of every file are checked before the first file is written, so such a failure writes nothing.
  - Control characters (line breaks, terminal escape sequences, bidirectional overrides) in host names, racks,
    classes and messages become a space (line breaks) or U+FFFD in the Markdown and JUnit files; the JSON files keep
    them, escaped.
  - A host listed more than once keeps its last record.
seealso:
  - module: gpuops.node.gpu_topology_check
'''

EXAMPLES = r'''
- name: Write the rack report on the controller
  gpuops.node.rack_report:
    records: "{{ ansible_play_hosts_all | map('extract', hostvars) | selectattr('host_record', 'defined')
                 | map(attribute='host_record') | list }}"
    racks: {rack_a: [gpu-a01, gpu-a02], rack_b: [gpu-b01]}
    dest: "{{ playbook_dir }}/reports"
    basename: rack-report
    title: "Rollout {{ ansible_date_time.date | default('') }}"
  delegate_to: localhost
  run_once: true
  register: report

- name: Fail the hosts the report says must fail
  ansible.builtin.fail:
    msg: "{{ report.failing[inventory_hostname] }}"
  when: inventory_hostname in report.failing

- name: A record as a rollout keeps it, from what each step returned
  gpuops.node.rack_report:
    dest: /var/tmp/gpuops
    records:
      - host: gpu-a03
        rack: rack_a
        phase: done
        pre_check: "{{ pre_check }}"
        roles: [nvidia_driver]
        changes: {nvidia_driver: 3}
        reboot_required: {nvidia_driver: true}
        reboot: "{{ reboot_result }}"
        post_check: "{{ post_check }}"
  delegate_to: localhost
  run_once: true

- name: Report two hosts, one held back
  gpuops.node.rack_report:
    dest: /var/tmp/gpuops
    host_dir: /var/tmp/gpuops/hosts
    records:
      - host: gpu-a01
        rack: rack_a
        node_class: dgx_h100
        pre_check: {passed: true, failures: []}
        changes: {nvidia_driver: 2}
        post_check: {passed: true, failures: [], regressions: []}
      - host: gpu-a02
        rack: rack_a
        node_class: dgx_h100
        held_back: true
        pre_check:
          passed: false
          failures:
            - check: nvlink_active_links
              subject: GPU3
              expected: 18
              actual: 16
              message: GPU3 has 16 of 18 NVLink links active
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
paths:
  description: Files of the report.
  returned: always
  type: dict
  contains:
    json:
      description: Path of the JSON report.
      type: str
      sample: /srv/gpuops/reports/rack-report.json
    markdown:
      description: Path of the Markdown report.
      type: str
      sample: /srv/gpuops/reports/rack-report.md
    junit:
      description: Path of the JUnit XML report.
      type: str
      sample: /srv/gpuops/reports/rack-report.xml
    html:
      description: Path of the HTML page.
      type: str
      sample: /srv/gpuops/reports/rack-report.html
    hosts:
      description: Paths of the per-host JSON files, empty unless O(host_dir) is set.
      type: list
      elements: str
      sample: [/srv/gpuops/reports/hosts/gpu-a01.json]
changed_files:
  description: Paths of the files that were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [/srv/gpuops/reports/rack-report.md]
summary:
  description: Host counts over all records.
  returned: always
  type: dict
  contains:
    hosts:
      description: Number of hosts in the report.
      type: int
      sample: 6
    passed:
      description: Hosts whose status is V(provisioned) or V(validated).
      type: int
      sample: 4
    held_back:
      description: Hosts held back because their pre-change check failed.
      type: int
      sample: 1
    reboot_required:
      description: Hosts waiting for a reboot a role asked for.
      type: int
      sample: 0
    not_started:
      description: Hosts of O(racks) the rollout had not reached.
      type: int
      sample: 0
    regressed:
      description: Hosts whose post-change check found regressions.
      type: int
      sample: 0
    failed:
      description: Hosts with status V(failed).
      type: int
      sample: 1
    unreachable:
      description: Hosts that could not be reached.
      type: int
      sample: 0
    by_status:
      description: Number of hosts for every status.
      type: dict
      sample: {provisioned: 4, validated: 0, held_back: 1, reboot_required: 0, regressed: 0, unreachable: 0, failed: 1,
               not_started: 0}
    healthy:
      description: V(true) when there is at least one host and every host passed.
      type: bool
      sample: false
statuses:
  description: Status of every host in the report, by inventory hostname.
  returned: always
  type: dict
  sample: {gpu-a01: provisioned, gpu-a02: held_back}
failing:
  description:
    - The hosts the play must fail after the report, with the reason (errors, failed checks, regressions, a reboot
      not done), by inventory hostname. Statuses V(failed), V(regressed) and V(unreachable) always; V(held_back)
      with O(fail_held_back), V(reboot_required) with O(fail_reboot_required).
  returned: always
  type: dict
  sample: {gpu-b02: "GPU3 has 16 of 18 NVLink links active"}
written:
  description:
    - V(false) when the report was partial and no host must fail, so no file was written (see O(racks)); V(true) when
      the files hold this report (written now, in check mode would be, or already up to date).
  returned: always
  type: bool
  sample: true
service:
  description:
    - What becomes of each host's node in its scheduler (hosts whose record has C(scheduler)), decided from its status
      here; site.yml carries it out after the report.
    - C(action) is V(resume) (back to service), V(keep) (stays drained, C(reason) the new drain reason), V(left)
      (drained by someone else, left so) or V(none); C(text) says it in one line, as the report does.
  returned: always
  type: dict
  sample: {gpu-a01: {action: keep, node: gpu-a01, reason: 'gpuops: failed: nvlink_active 17 != 18', text: 'stays drained: ...'}}
markdown:
  description: The Markdown report.
  returned: always
  type: str
  sample: "# GPU rack report\n\n**HEALTHY** - 2 hosts: 2 passed, 0 held back, 0 regressed, 0 failed, 0 unreachable.\n"
'''

import hashlib
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

from ansible_collections.gpuops.node.plugins.module_utils.files import write_atomic
from ansible_collections.gpuops.node.plugins.module_utils.report.model import (
    ReportError,
    failing_hosts,
    render_host_json,
)
from ansible_collections.gpuops.node.plugins.module_utils.report.render import render_all


# host names kept as they are in host_dir; other characters become _
_SAFE_HOST = re.compile(r'[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z')
_UNSAFE_CHAR = re.compile(r'[^A-Za-z0-9._-]')


def _read(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except (IOError, OSError):
        return None


def _write(module, path, content):
    write_atomic(module, path, content)


def _ensure_dir(module, path, result):
    if os.path.isdir(path):
        return
    if os.path.exists(path):
        module.fail_json(msg='%s exists and is not a directory' % path, **result)
    result['changed'] = True
    if module.check_mode:
        return
    try:
        os.makedirs(path)
    except OSError as e:
        module.fail_json(msg='cannot create %s: %s' % (path, to_native(e)), **result)


def _hashed_name(host):
    name = _UNSAFE_CHAR.sub('_', host[:191])
    if name.startswith('.'):
        name = '_' + name[1:]
    return '%s-%s' % (name, hashlib.sha256(host.encode('utf-8', 'surrogatepass')).hexdigest()[:8])


def host_filenames(hosts):
    """File name in host_dir of every host (see the host_dir option), by host.

    Deterministic: the name of a host depends only on the host name, and on whether another host of the list has
    the same name but for the case. Two hosts can still map to the same file, in theory; the caller checks.
    """
    by_case = {}
    for host in hosts:
        if _SAFE_HOST.match(host):
            by_case.setdefault(host.lower(), []).append(host)
    names = {}
    for host in hosts:
        if _SAFE_HOST.match(host) and len(by_case[host.lower()]) == 1:
            names[host] = host + '.json'
        else:
            names[host] = _hashed_name(host) + '.json'
    return names


def _same_file(files):
    """The first two (owner, path) of files that are one file (file names compared without case), or None."""
    seen = {}
    for owner, path in files:
        key = (os.path.realpath(os.path.dirname(path)), os.path.basename(path).lower())
        if key in seen:
            return seen[key], (owner, path)
        seen[key] = (owner, path)
    return None


def run_module(module):
    params = module.params
    dest = params['dest']
    basename = params['basename']
    if not basename or os.sep in basename or basename in ('.', '..'):
        module.fail_json(msg='basename must be a plain file name, got %r' % basename)

    try:
        report, rendered = render_all(params['records'], params['title'], params['racks'])
    except ReportError as e:
        module.fail_json(msg='invalid records: %s' % to_native(e))

    paths = {
        'json': os.path.join(dest, basename + '.json'),
        'markdown': os.path.join(dest, basename + '.md'),
        'junit': os.path.join(dest, basename + '.xml'),
        'html': os.path.join(dest, basename + '.html'),
        'hosts': [],
    }
    files = [(paths['json'], rendered['json']), (paths['markdown'], rendered['markdown']),
             (paths['junit'], rendered['junit']), (paths['html'], rendered['html'])]
    owners = [('the JSON report', paths['json']), ('the Markdown report', paths['markdown']),
              ('the JUnit report', paths['junit']), ('the HTML page', paths['html'])]
    if params['host_dir']:
        records = [record for rack in report['racks'] for record in rack['hosts']]
        names = host_filenames([record['host'] for record in records])
        for record in records:
            path = os.path.join(params['host_dir'], names[record['host']])
            paths['hosts'].append(path)
            files.append((path, render_host_json(record)))
            owners.append(('host %r' % (record['host'],), path))
    clash = _same_file(owners)
    if clash:
        module.fail_json(msg='%s and %s would both be written to %s; rename a host or set host_dir to another '
                         'directory' % (clash[0][0], clash[1][0], clash[1][1]))
    try:
        files = [(path, to_bytes(content, errors='surrogate_or_strict')) for path, content in files]
    except UnicodeError as e:
        module.fail_json(msg='cannot encode the report: %s' % to_native(e))

    statuses = dict((r['host'], r['status']) for rack in report['racks'] for r in rack['hosts'])
    failing = failing_hosts(report, params['fail_held_back'], params['fail_reboot_required'])
    # a partial report (hosts of later batches) is written only when the rollout may stop after this batch
    written = not report['summary']['not_started'] or bool(failing)
    service = dict((r['host'], r['service']) for rack in report['racks'] for r in rack['hosts'] if r.get('service'))
    result = dict(changed=False, paths=paths, changed_files=[], summary=report['summary'],
                  statuses=statuses, failing=failing, written=written, markdown=rendered['markdown'],
                  service=service)
    if not written:
        if module._diff:
            result['diff'] = []
        module.exit_json(**result)
    diffs = []

    _ensure_dir(module, dest, result)
    if params['host_dir']:
        _ensure_dir(module, params['host_dir'], result)

    for path, content in files:
        before = _read(path)
        if before == content:
            continue
        result['changed'] = True
        result['changed_files'].append(path)
        if module._diff and path != paths['html']:
            diffs.append({'before_header': path, 'after_header': path,
                          'before': to_text(before or b'', errors='surrogate_or_replace'),
                          'after': to_text(content, errors='surrogate_or_strict')})
        if not module.check_mode:
            try:
                _write(module, path, content)
            except (IOError, OSError) as e:
                module.fail_json(msg='cannot write %s: %s' % (path, to_native(e)), **result)

    if module._diff:
        result['diff'] = diffs
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            records=dict(type='list', elements='dict', required=True),
            dest=dict(type='path', required=True),
            basename=dict(type='str', default='rack-report'),
            title=dict(type='str', default='GPU rack report'),
            host_dir=dict(type='path'),
            racks=dict(type='dict'),
            fail_held_back=dict(type='bool', default=False),
            fail_reboot_required=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module)


if __name__ == '__main__':
    main()
