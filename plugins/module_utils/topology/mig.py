# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG GPU instances of the node in the facts: ``nvidia-smi mig -lgi``.

``gpu_topology.mig`` is ``{'instances': {<GPU index as text>: [{name, profile_id, id, start, size}]},
'unreadable': why | None}``. ``mig -lgi`` runs only when ``nvidia-smi -q -x`` says some GPU has MIG mode
Enabled; otherwise there are no instances to list and nothing runs. "No GPU instances found" is an empty
listing; any other failure (nvidia-smi missing or failing, an output the parser refuses, the XML itself
not read so that the MIG modes are unknown) leaves ``instances`` empty and says why in ``unreadable``: the
``mig_devices`` check then fails as ``not checked``. A capture bundle holds the output as
``nvidia-smi-mig-lgi.txt`` with its ``.rc``, captured when the XML had a GPU in MIG mode.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import empty_answer, parse_lgi
from ansible_collections.gpuops.node.plugins.module_utils.rawtext import decode
from ansible_collections.gpuops.node.plugins.module_utils.topology.sources import read_bundle_file

BUNDLE_FILE = 'nvidia-smi-mig-lgi.txt'
ARGS = ['mig', '-lgi']
LABEL = 'nvidia-smi ' + ' '.join(ARGS)
# the statuses of the XML output (topology_sources.judge_output) whose GPU list was read
_XML_READ = ('ok', 'exit')


def _result(instances, why):
    return {'instances': instances if why is None else {}, 'unreadable': why}


def _first_lines(text, count=3):
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    shown = ' / '.join(lines[:count])
    return shown + (' ...' if len(lines) > count else '') if shown else 'no output'


def judge(rc, out, err, timed_out, limit=None):
    """``({gpu index as text: [instances]}, None)`` for a listing that was read, else ``({}, why)``."""
    if timed_out:
        return {}, '%s did not finish%s and was killed' % (LABEL, ' within %s s' % limit if limit else '')
    if rc is None:
        return {}, (err or '').strip() or '%s could not run' % LABEL
    text = out if (out or '').strip() else err
    if empty_answer(rc, text):
        return {}, None
    if rc:
        return {}, '%s exited %d: %s' % (LABEL, rc, _first_lines(text))
    try:
        rows = parse_lgi(text)
    except ParseError as exc:
        return {}, str(exc)
    instances = {}
    for row in rows:
        instances.setdefault(str(row['gpu']), []).append(
            dict((key, row[key]) for key in ('name', 'profile_id', 'id', 'start', 'size')))
    return instances, None


def _needed(topo):
    """(True, None) when some GPU has MIG mode Enabled, (False, None) when none has, (False, why) when the
    MIG modes are unknown (the XML was not read)."""
    status = ((topo.get('outputs') or {}).get('xml') or {}).get('status')
    if status not in _XML_READ:
        return False, 'the MIG modes are unknown: nvidia-smi -q -x was not read (%s)' % (status or 'not run')
    return any(gpu.get('mig_mode') == 'Enabled' for gpu in topo.get('gpus') or []), None


def read_live(run, nvidia_smi, topo, limit=None, warnings=None):
    """Run ``nvidia-smi mig -lgi`` through ``run(argv)`` (``(rc, out, err[, timed_out])``) when ``topo``
    (the facts gathered so far) has a GPU in MIG mode."""
    needed, why = _needed(topo)
    if why is not None or not needed:
        return _result({}, why)
    if nvidia_smi is None:
        return _result({}, 'nvidia-smi could not be run, so the MIG instances were not listed')
    result = run([nvidia_smi] + ARGS)
    rc, out, err = result[:3]
    timed_out = len(result) > 3 and bool(result[3])
    warnings = [] if warnings is None else warnings
    out = decode(out or b'', LABEL, warnings)
    err = decode(err or b'', LABEL + ' (stderr)', warnings)
    return _result(*judge(rc, out, err, timed_out, limit))


def read_bundle(bundle_dir, topo, warnings=None):
    """The bundle's ``nvidia-smi-mig-lgi.txt`` (and ``.rc``), read like a live run."""
    needed, why = _needed(topo)
    if why is not None or not needed:
        return _result({}, why)
    warnings = [] if warnings is None else warnings
    found = read_bundle_file(bundle_dir, BUNDLE_FILE, warnings)
    if found is None:
        return _result({}, 'the bundle has no %s, but a GPU is in MIG mode' % BUNDLE_FILE)
    rc, data, _err, timed_out = found
    return _result(*judge(rc, decode(data, LABEL, warnings), '', timed_out))
