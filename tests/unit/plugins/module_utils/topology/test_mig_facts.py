# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG GPU instances in the facts (topology_mig.py): live, from a bundle, from the capture script and from the
simulated nvidia-smi."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.topology import mig as topology_mig
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle, gather_live
from real_captures import real_path, real_text
from repo_paths import REPO

ROOT = REPO
SCRIPT = os.path.join(ROOT, 'playbooks', 'files', 'gpuops-capture.sh')
MIG_XML = 'nvsmi-q-xml/a100-sxm4-40gb-mig-netdata.xml'
NO_MIG_XML = 'nvsmi-xml/tesla-p100-pcie-16gb-driver510-gce-netdata.xml'
LGI = 'mig/h100-80gb-lgi-2gi.txt'
TWO_GI = {'0': [{'name': '2g.20gb', 'profile_id': 14, 'id': 3, 'start': 0, 'size': 2},
                {'name': '3g.40gb', 'profile_id': 9, 'id': 2, 'start': 4, 'size': 4}]}
NOT_FOUND = b'No GPU instances found: Not Found\n'


def facts(*modes):
    """Facts gathered so far: the XML read, one GPU per MIG mode given."""
    return {'outputs': {'xml': {'status': 'ok'}}, 'gpus': [{'index': i, 'mig_mode': m} for i, m in enumerate(modes)]}


def runner(rc, out, err=b'', timed_out=False):
    calls = []

    def run(argv):
        calls.append(argv)
        return rc, out, err, timed_out
    run.calls = calls
    return run


def test_instances_listed_when_a_gpu_is_in_mig_mode():
    run = runner(0, real_text(LGI).encode('utf-8'))
    mig = topology_mig.read_live(run, '/usr/bin/nvidia-smi', facts('Disabled', 'Enabled'))
    assert run.calls == [['/usr/bin/nvidia-smi', 'mig', '-lgi']]
    assert mig == {'instances': TWO_GI, 'unreadable': None}


@pytest.mark.parametrize('topo', [facts('Disabled', 'Disabled'), facts(None, None), facts()])
def test_nothing_runs_without_a_gpu_in_mig_mode(topo):
    run = runner(0, b'')
    assert topology_mig.read_live(run, 'nvidia-smi', topo) == {'instances': {}, 'unreadable': None}
    assert run.calls == []


def test_pending_enable_is_not_mig_mode():
    topo = facts('Disabled')
    topo['gpus'][0]['mig_mode_pending'] = 'Enabled'
    assert topology_mig.read_live(runner(0, b''), 'nvidia-smi', topo) == {'instances': {}, 'unreadable': None}


@pytest.mark.parametrize('rc,out', [(6, NOT_FOUND), (6, b'No MIG-enabled devices found.\n')])
def test_none_found_is_an_empty_listing(rc, out):
    assert topology_mig.read_live(runner(rc, out), 'nvidia-smi', facts('Enabled')) == {'instances': {}, 'unreadable': None}


@pytest.mark.parametrize('nvidia_smi,run,why', [
    (None, runner(0, b''), 'nvidia-smi could not be run'),
    ('nvidia-smi', runner(4, b'Insufficient Permissions\n'), 'nvidia-smi mig -lgi exited 4: Insufficient Permissions'),
    ('nvidia-smi', runner(6, b'No MIG-supported devices found.\n'), 'exited 6: No MIG-supported devices found.'),
    ('nvidia-smi', runner(0, b'garbage\n'), 'nvidia-smi mig -lgi: line 1 not a "GPU instances" table'),
    ('nvidia-smi', runner(0, b''), 'empty output'),
    ('nvidia-smi', runner(0, real_text(LGI)[:400].encode('utf-8')), 'cut short'),
    ('nvidia-smi', runner(124, b'', timed_out=True), 'did not finish'),
    ('nvidia-smi', runner(None, b'', b'[Errno 13] Permission denied'), 'Permission denied'),
])
def test_what_could_not_be_read_says_why(nvidia_smi, run, why):
    mig = topology_mig.read_live(run, nvidia_smi, facts('Enabled'))
    assert mig['instances'] == {} and why in mig['unreadable']


def test_unknown_mig_modes_are_unreadable():
    topo = {'outputs': {'xml': {'status': 'failed'}}, 'gpus': []}
    run = runner(0, b'')
    mig = topology_mig.read_live(run, 'nvidia-smi', topo)
    assert mig['instances'] == {} and 'MIG modes are unknown' in mig['unreadable'] and run.calls == []
    assert 'not run' in topology_mig.read_bundle('/nonexistent', {})['unreadable']


def _bundle(tmp_path, xml, lgi=None, rc=None):
    bundle = tmp_path / 'bundle'
    bundle.mkdir()
    shutil.copy(real_path(xml), str(bundle / 'nvidia-smi-q-x.xml'))
    if lgi is not None:
        (bundle / topology_mig.BUNDLE_FILE).write_bytes(lgi)
    if rc is not None:
        (bundle / (topology_mig.BUNDLE_FILE + '.rc')).write_text(u'%d\n' % rc)
    return str(bundle)


def test_bundle_with_a_gpu_in_mig_mode(tmp_path):
    """The real A100 XML has MIG mode Enabled; its GPU is GPU 0, as in the real -lgi."""
    topo = gather_bundle(_bundle(tmp_path, MIG_XML, real_text(LGI).encode('utf-8')))
    assert topo['gpus'][0]['mig_mode'] == 'Enabled'
    assert topo['mig'] == {'instances': TWO_GI, 'unreadable': None}


def test_bundle_without_the_file(tmp_path):
    mig = gather_bundle(_bundle(tmp_path, MIG_XML))['mig']
    assert mig == {'instances': {}, 'unreadable': 'the bundle has no nvidia-smi-mig-lgi.txt, but a GPU is in MIG mode'}


def test_bundle_none_found_and_timeout(tmp_path):
    assert gather_bundle(_bundle(tmp_path, MIG_XML, NOT_FOUND, 6))['mig'] == {'instances': {}, 'unreadable': None}
    (tmp_path / 'bundle' / (topology_mig.BUNDLE_FILE + '.rc')).write_text(u'124\n')
    assert 'did not finish' in gather_bundle(str(tmp_path / 'bundle'))['mig']['unreadable']


def test_bundle_of_a_node_without_mig(tmp_path):
    assert gather_bundle(_bundle(tmp_path, NO_MIG_XML))['mig'] == {'instances': {}, 'unreadable': None}


# --- the capture script --------------------------------------------------------------------------------------

def _fake_smi(tmp, xml, lgi_rel=None, lgi_rc=0):
    path = os.path.join(tmp, 'nvidia-smi')
    lgi = 'cat %s; exit %d' % (real_path(lgi_rel), lgi_rc) if lgi_rel else 'echo "No GPU instances found: Not Found"; exit 6'
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\ncase "$*" in\n    "-q -x") cat %s ;;\n    "mig -lgi") %s ;;\n'
                     '    *) echo "fake nvidia-smi: unknown arguments: $*" >&2; exit 2 ;;\nesac\n'
                     % (real_path(xml), lgi))
    os.chmod(path, 0o755)
    return path


def _capture(tmp, smi):
    work = os.path.join(tmp, 'work')
    sysfs = os.path.join(tmp, 'sys')
    os.makedirs(sysfs)
    done = subprocess.run(['sh', SCRIPT, work, smi, sysfs, 'node-1', '10'], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return os.path.join(work, 'bundle')


def test_capture_keeps_the_instances_and_reads_them_back(tmp_path):
    bundle = _capture(str(tmp_path), _fake_smi(str(tmp_path), MIG_XML, LGI))
    with open(os.path.join(bundle, topology_mig.BUNDLE_FILE)) as handle:
        assert handle.read() == real_text(LGI)
    assert not os.path.exists(os.path.join(bundle, topology_mig.BUNDLE_FILE + '.rc'))
    assert gather_bundle(bundle)['mig'] == {'instances': TWO_GI, 'unreadable': None}
    with open(os.path.join(bundle, 'capture.source')) as handle:
        assert 'mig -lgi > nvidia-smi-mig-lgi.txt   (exit status 0)' in handle.read()


def test_capture_of_a_gpu_in_mig_mode_without_instances(tmp_path):
    bundle = _capture(str(tmp_path), _fake_smi(str(tmp_path), MIG_XML))
    with open(os.path.join(bundle, topology_mig.BUNDLE_FILE + '.rc')) as handle:
        assert handle.read() == '6\n'
    assert gather_bundle(bundle)['mig'] == {'instances': {}, 'unreadable': None}


def test_capture_without_mig_mode_does_not_ask(tmp_path):
    bundle = _capture(str(tmp_path), _fake_smi(str(tmp_path), NO_MIG_XML, 'mig/h100-80gb-lgip.txt', 9))
    assert not os.path.exists(os.path.join(bundle, topology_mig.BUNDLE_FILE))
    assert gather_bundle(bundle)['mig'] == {'instances': {}, 'unreadable': None}


# --- the simulated nvidia-smi ---------------------------------------------------------------------------------

def _sim_node(tmp_path):
    from simulator import bundle
    from simulator import nvidia_smi
    profile = str(tmp_path / 'profile')
    bundle.write_tree(bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', 'h100-sxm-8gpu-ib')), profile)
    env = {'GPUOPS_SIM_PROFILE': profile, 'GPUOPS_SIM_STATE': str(tmp_path / 'state.json'),
           'GPUOPS_SIM_ALLOW_NONROOT': '1'}

    def run(argv):
        result = nvidia_smi.run(list(argv[1:]), dict(env))
        return result.rc, result.out.encode('utf-8'), result.err.encode('utf-8')
    return run


def test_simulated_node(tmp_path):
    run = _sim_node(tmp_path)
    sysfs = str(tmp_path / 'no-sys')
    assert gather_live(run, 'nvidia-smi', sysfs)['mig'] == {'instances': {}, 'unreadable': None}
    assert run(['nvidia-smi', '-i', '3', '-mig', '1'])[0] == 0
    assert gather_live(run, 'nvidia-smi', sysfs)['mig'] == {'instances': {}, 'unreadable': None}
    assert run(['nvidia-smi', 'mig', '-i', '3', '-cgi', '3g.40gb,1g.10gb,1g.10gb', '-C'])[0] == 0
    topo = gather_live(run, 'nvidia-smi', sysfs)
    assert topo['gpus'][3]['mig_mode'] == 'Enabled' and topo['gpus'][3]['mig_devices'] == 3
    assert topo['mig']['unreadable'] is None
    assert [(i['name'], i['start'], i['size']) for i in topo['mig']['instances']['3']] == [
        ('1g.10gb', 0, 1), ('1g.10gb', 1, 1), ('3g.40gb', 4, 4)]
