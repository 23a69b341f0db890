# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DCGM's view of the node in the facts: ``dcgmi health -c -j`` through the host engine.

``gpu_topology.dcgm`` is ``{'health': {overall, gpus} | None, 'unreadable': why | None}``: what the host
engine's health watches report (module_utils/parsers/dcgmi_health.py parses it), or why it could not be read (dcgmi not on
the node, the host engine not answering, an output the parser refuses). A capture bundle holds the same output as
``dcgmi-health-c.json`` with its ``.rc``; a bundle taken on a node without dcgmi has no such file. Nothing here
decides whether the node is healthy: the ``dcgm_health`` check does, and it never passes what was not read.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcgmi_health import HealthParseError, parse_health_check
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import decode
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import read_bundle_file

BUNDLE_FILE = 'dcgmi-health-c.json'
DCGMI_ARGS = ['health', '-c', '-j']
LABEL = 'dcgmi ' + ' '.join(DCGMI_ARGS)


def judge(rc, out, err, timed_out, limit=None):
    """``({overall, gpus}, None)`` for a health report that was read, else ``(None, why)``."""
    if timed_out:
        return None, '%s did not finish%s and was killed' % (LABEL, ' within %s s' % limit if limit else '')
    if rc is None:
        return None, err.strip() or '%s could not run' % LABEL
    text = out if out.strip() else err
    try:
        health = parse_health_check(text)
    except HealthParseError as exc:
        said = str(exc)
        return None, '%s exited %d: %s' % (LABEL, rc, said) if rc else '%s: %s' % (LABEL, said)
    # a report dcgmi printed is read whatever its exit status (it is not 0 when a watch reports a failure)
    return health, None


def _result(health, why):
    return {'health': health, 'unreadable': why}


def read_live(run, dcgmi, problem=None, limit=None, warnings=None):
    """Run ``dcgmi health -c -j`` through ``run(argv)`` (``(rc, out, err[, timed_out])``)."""
    if dcgmi is None:
        return _result(None, problem or 'dcgmi was not found on the node (DCGM is not installed)')
    result = run([dcgmi] + DCGMI_ARGS)
    rc, out, err = result[:3]
    timed_out = len(result) > 3 and bool(result[3])
    warnings = [] if warnings is None else warnings
    out = decode(out or b'', LABEL, warnings)
    err = decode(err or b'', LABEL + ' (stderr)', warnings)
    return _result(*judge(rc, out, err, timed_out, limit))


def read_bundle(bundle_dir, warnings=None):
    """The bundle's ``dcgmi-health-c.json`` (and ``.rc``), read like a live run."""
    warnings = [] if warnings is None else warnings
    found = read_bundle_file(bundle_dir, BUNDLE_FILE, warnings)
    if found is None:
        return _result(None, 'the bundle has no %s (dcgmi was not on the node when it was captured)' % BUNDLE_FILE)
    rc, data, _err, timed_out = found
    return _result(*judge(rc, decode(data, LABEL, warnings), '', timed_out))
