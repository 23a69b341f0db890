# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the nvidia-smi and dcb outputs come from, and what a failed output means.

A source gives, for each part (``xml``, ``topo``, ``nvlink``), the raw result
of one nvidia-smi query: a live node runs the command with a time limit, a
capture bundle reads the file and its ``.rc``. ``judge_output`` turns a raw
result into a status by one decision table; nothing else decides it. The
same sources give the ``dcb`` queries of each RoCE netdev (``DCB_QUERIES``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcb import parse_app_dscp, parse_pfc
from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_errors import classify_nvsmi_failure
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_nvlink import parse_nvlink_status
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import parse_topo_matrix
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import decode

# part -> (bundle file name, nvidia-smi arguments, parser)
OUTPUTS = (
    ('xml', 'nvidia-smi-q-x.xml', ['-q', '-x'], parse_nvsmi_xml),
    ('topo', 'nvidia-smi-topo-m.txt', ['topo', '-m'], parse_topo_matrix),
    ('nvlink', 'nvidia-smi-nvlink-s.txt', ['nvlink', '-s'], parse_nvlink_status),
)
PARTS = tuple(part for part, _fname, _args, _parser in OUTPUTS)
PARSERS = dict((part, parser) for part, _fname, _args, parser in OUTPUTS)
BUNDLE_FILES = dict((part, fname) for part, fname, _args, _parser in OUTPUTS)
NVSMI_ARGS = dict((part, args) for part, _fname, args, _parser in OUTPUTS)
COMMANDS = dict((part, ' '.join(['nvidia-smi'] + args)) for part, _fname, args, _parser in OUTPUTS)
# failures that mean nvidia-smi cannot talk to the GPUs at all, whatever was asked
DRIVER_FAILURES = ('driver_not_loaded', 'nvml_mismatch', 'nvml_missing', 'nvml_error', 'no_devices',
                   'permission_denied')
# dcb query -> (bundle file name for a netdev, dcb arguments for a netdev, parser)
DCB_QUERIES = {
    'pfc': ('dcb-pfc-%s.txt', lambda dev: ['pfc', 'show', 'dev', dev], parse_pfc),
    'dscp_prio': ('dcb-app-dscp-prio-%s.txt', lambda dev: ['-N', 'app', 'show', 'dev', dev, 'dscp-prio'],
                  parse_app_dscp),
}
DEFAULT_TIMEOUT = 60
# the status timeout(1) gives a command it stopped; capture bundles record it in <file>.rc
TIMEOUT_RC = (124, 137)

# Statuses of one output, in the facts' ``outputs.<part>.status``.
STATUSES = {
    'ok': 'read',
    'exit': 'exit status not 0; what it printed was read',
    'failed': 'nvidia-smi failed: it printed a failure instead of the output, or could not run',
    'timeout': 'did not finish in time and was killed',
    'unreadable': 'printed something the parser could not read',
    'missing': 'not available (no file in the bundle, no nvidia-smi on the node)',
    'skipped': 'not run: an earlier query showed the driver is not loaded',
}


class BundleSource(object):
    """Reads outputs from a capture bundle directory.

    ``<file>.rc`` beside an output holds nvidia-smi's exit status when the
    capture recorded a failure (124 or 137: the capture's time limit stopped
    it); without it the status is 0.
    """

    limit = None

    def __init__(self, bundle_dir):
        self.bundle_dir = bundle_dir

    def label(self, part):
        return BUNDLE_FILES[part]

    def read(self, part, warnings):
        """``(rc, stdout, stderr, timed_out)``, or None when the bundle has no such file."""
        return self._file(BUNDLE_FILES[part], warnings)

    def dcb_label(self, query, netdev):
        return DCB_QUERIES[query][0] % netdev

    def read_dcb(self, query, netdev, warnings):
        """What ``dcb`` printed for ``netdev`` at capture time (file and ``.rc``), or None without the file."""
        return self._file(self.dcb_label(query, netdev), warnings)

    def dcb_absent(self, query, netdev):
        return 'the bundle has no %s' % self.dcb_label(query, netdev)

    def _file(self, name, warnings):
        return read_bundle_file(self.bundle_dir, name, warnings)


def read_bundle_file(bundle_dir, name, warnings):
    """A captured output of a bundle, ``name`` and its ``name.rc``, as ``(rc, stdout, stderr, timed_out)`` like a
    live run (no ``.rc``: exit 0; one that holds no exit status: a failure, with a warning), or None when the
    bundle has no such file."""
    path = os.path.join(bundle_dir, name)
    if not os.path.isfile(path):
        if os.path.exists(path):
            warnings.append('%s is not a regular file' % name)
        return None
    with open(path, 'rb') as handle:
        data = handle.read()
    rc = 0
    rc_path = path + '.rc'
    if os.path.isfile(rc_path):
        with open(rc_path, 'rb') as handle:
            value = decode(handle.read(), name + '.rc', warnings).strip()
        if re.match(r'^-?[0-9]+$', value):
            rc = int(value)
        else:
            rc = 1
            warnings.append('%s.rc holds %r, not an exit status: taken as a failure (exit 1)' % (name, value[:40]))
    elif os.path.exists(rc_path):
        rc = 1
        warnings.append('%s.rc is not a regular file: taken as a failure (exit 1)' % name)
    return rc, data, b'', rc in TIMEOUT_RC


class CommandSource(object):
    """Runs nvidia-smi (and dcb) on the node through ``run(argv)``.

    ``run`` returns ``(rc, out, err)`` or ``(rc, out, err, timed_out)``, as
    the function of ``module_utils.command.runner`` (``binary=True``) does;
    ``nvidia_smi`` None means the binary was not found; ``limit`` is the
    time limit ``run`` applies, in seconds, for messages. ``dcb`` is the dcb
    binary (None: not found, ``dcb_problem`` says why when it is something
    else).
    """

    def __init__(self, run, nvidia_smi, limit=None, dcb=None, dcb_problem=None):
        self.run = run
        self.nvidia_smi = nvidia_smi
        self.limit = limit
        self.dcb = dcb
        self.dcb_problem = dcb_problem

    def label(self, part):
        return COMMANDS[part]

    def read(self, part, warnings):
        if self.nvidia_smi is None:
            return None
        return self._run([self.nvidia_smi] + NVSMI_ARGS[part])

    def dcb_label(self, query, netdev):
        return ' '.join(['dcb'] + DCB_QUERIES[query][1](netdev))

    def read_dcb(self, query, netdev, warnings):
        if self.dcb is None:
            return None
        return self._run([self.dcb] + DCB_QUERIES[query][1](netdev))

    def dcb_absent(self, query, netdev):
        return self.dcb_problem or 'dcb (iproute2) was not found on the node'

    def _run(self, argv):
        result = self.run(argv)
        rc, out, err = result[:3]
        timed_out = len(result) > 3 and bool(result[3])
        return rc, out or b'', err or b'', timed_out


def judge_output(label, rc, out, err, timed_out, limit=None):
    """What one raw output means: ``(status, failure, text)``.

    ``failure`` is ``{kind, message, rc}`` or None; ``text`` is what the parser
    reads (None when there is nothing to read). The one decision table:

    ======== ========== ============================== ============ ===========================================
    timed    exit       whole-output failure form      stdout       status (what the facts and the check do)
    out      status     (first line, or any line when
                        the exit status is not 0)
    ======== ========== ============================== ============ ===========================================
    yes      any        any                            any          timeout: part left out; nvsmi_timeout
    no       any        driver-level (not loaded,      any          failed: driver_error set, driver_loaded
                        NVML, no devices, permission)               false; the check fails driver_loaded
    no       not 0      other or none                  empty        failed: part left out; nvsmi_exit
    no       not 0      other or none                  printed      exit: parsed and kept; nvsmi_exit with the
                                                                    tool's first line
    no       0          none                           any          ok: parsed (a parse error: unreadable)
    ======== ========== ============================== ============ ===========================================

    stderr is never parsed: with exit status 0 and a readable stdout, stderr
    (for example "Failed to initialize NVML: Unknown Error") is a warning.
    """
    if timed_out:
        if limit:
            message = '%s did not finish within %s s and was killed' % (label, limit)
        else:
            message = '%s was stopped by the capture\'s time limit (exit %s)' % (label, rc)
        return 'timeout', {'kind': 'timeout', 'rc': rc, 'message': message}, None
    if rc is None:
        return 'failed', {'kind': 'not_run', 'rc': None, 'message': err.strip() or '%s could not run' % label}, None
    both = out + ('\n' if out and err else '') + err
    failure = classify_nvsmi_failure(rc, out if rc == 0 else both)
    if failure is None and rc == 0 and not out.strip() and err.strip():
        # nothing on stdout: stderr is the whole output
        failure = classify_nvsmi_failure(rc, err)
    if failure is not None and failure['kind'] in DRIVER_FAILURES:
        return 'failed', failure, None
    if failure is not None:
        if not out.strip():
            return 'failed', failure, None
        return 'exit', failure, out
    return 'ok', None, out


def judge_dcb(label, result, limit=None):
    """``(parsed, None)`` for a ``dcb`` output that was read, else ``(None, why)``.

    ``result`` is ``(query, rc, out, err, timed_out)``. A dcb that timed out,
    could not run or exited non-zero (``Attribute read: Operation not
    supported`` on a netdev without DCB, exit 1) is not read; neither is
    output the parser refuses.
    """
    query, rc, out, err, timed_out = result
    if timed_out:
        return None, '%s did not finish%s and was killed' % (label, ' within %s s' % limit if limit else '')
    if rc is None:
        return None, err.strip() or '%s could not run' % label
    if rc != 0:
        said = (err.strip() or out.strip() or 'nothing').splitlines()[0]
        return None, '%s exited %d: %s' % (label, rc, said)
    try:
        return DCB_QUERIES[query][2](out), None
    except ParseError as exc:
        return None, str(exc)
