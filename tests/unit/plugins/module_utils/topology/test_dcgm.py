# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM's health report in the facts (topology_dcgm.py) and the dcgm_health check."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology import dcgm as topology_dcgm
from ansible_collections.gpuops.node.plugins.module_utils.topology.checks import BY_KEY, owned_keys, run_checks

from repo_paths import REPO

REAL = os.path.join(REPO, 'tests', 'fixtures', 'real', 'dcgmi')
HEALTHY_JSON = 'health-c-j-healthy-despite-gpu1-recovery-reset.json'
WARNING_TEXT = 'health-c-warning-pcie-replay-inforom-DOCEXAMPLE-indented.txt'


def real(name):
    with open(os.path.join(REAL, name), 'rb') as handle:
        return handle.read()


def warning_to_failure(data):
    """Transform: the DOCEXAMPLE warning report with every "Warning" read as "Failure" (the same table, DCGM's
    other health state), for a report that must fail."""
    return data.replace(b'Warning', b'Failure')


def runner(rc, out, err=b'', timed_out=False):
    calls = []

    def run(argv):
        calls.append(argv)
        return rc, out, err, timed_out
    run.calls = calls
    return run


def dcgm_failures(dcgm):
    topo = {'dcgm': dcgm}
    return [f for f in run_checks(topo, {'dcgm_health': True})[0] if f['check'] == 'dcgm_health']


def test_healthy_json_passes():
    run = runner(0, real(HEALTHY_JSON))
    dcgm = topology_dcgm.read_live(run, '/usr/bin/dcgmi')
    assert run.calls == [['/usr/bin/dcgmi', 'health', '-c', '-j']]
    assert dcgm['unreadable'] is None and dcgm['health']['overall'] == 'Healthy'
    assert dcgm_failures(dcgm) == []


def test_warnings_pass():
    dcgm = topology_dcgm.read_live(runner(0, real(WARNING_TEXT)), 'dcgmi')
    assert dcgm['health']['overall'] == 'Warning'
    assert dcgm_failures(dcgm) == []


def test_a_failure_fails_naming_the_gpu_and_the_incident():
    dcgm = topology_dcgm.read_live(runner(0, warning_to_failure(real(WARNING_TEXT))), 'dcgmi')
    failures = dcgm_failures(dcgm)
    assert [(f['subject'], f['actual']) for f in failures] == [('GPU0', 'Failure'), ('GPU1', 'Failure')]
    assert 'PCIe' in failures[0]['message']


@pytest.mark.parametrize('dcgmi,run,why', [
    (None, None, 'dcgmi was not found'),
    ('dcgmi', runner(255, b'', b'Error: unable to establish a connection to the specified host: localhost\n'
                               b'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n'),
     'Unable to connect to host engine'),
    ('dcgmi', runner(0, b'garbage\n'), 'dcgmi health -c -j'),
    ('dcgmi', runner(0, b''), 'dcgmi health -c -j'),
    ('dcgmi', runner(124, b'', timed_out=True), 'did not finish'),
])
def test_what_could_not_be_read_is_not_checked(dcgmi, run, why):
    dcgm = topology_dcgm.read_live(run, dcgmi)
    assert dcgm['health'] is None and why in dcgm['unreadable']
    failures = dcgm_failures(dcgm)
    assert [(f['subject'], f['actual']) for f in failures] == [('node', 'not checked')]
    assert why in failures[0]['message']


def test_facts_without_dcgm_are_not_checked():
    assert [f['actual'] for f in dcgm_failures(None)] == ['not checked']


def test_bundle(tmp_path):
    assert 'the bundle has no dcgmi-health-c.json' in topology_dcgm.read_bundle(str(tmp_path))['unreadable']
    (tmp_path / topology_dcgm.BUNDLE_FILE).write_bytes(real(HEALTHY_JSON))
    assert topology_dcgm.read_bundle(str(tmp_path))['health']['overall'] == 'Healthy'
    (tmp_path / (topology_dcgm.BUNDLE_FILE + '.rc')).write_text(u'124\n')
    (tmp_path / topology_dcgm.BUNDLE_FILE).write_bytes(b'')
    assert 'did not finish' in topology_dcgm.read_bundle(str(tmp_path))['unreadable']


def test_the_dcgm_role_owns_the_key():
    assert owned_keys('dcgm') == ['dcgm_health']
    assert BY_KEY['dcgm_health'].role == 'dcgm'
    # off: nothing is checked, not even whether DCGM is there
    assert [f for f in run_checks({'dcgm': None}, {'dcgm_health': False})[0] if f['check'] == 'dcgm_health'] == []
