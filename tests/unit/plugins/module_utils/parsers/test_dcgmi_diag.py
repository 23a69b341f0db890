# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""dcgmi diag: every real capture (DCGM 3 and 4 text, the DCGM 4 JSON test object) read to its verdict, tests and
failing GPUs; variants and faults derived by the transforms below; whatever cannot be read is an error."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re

import pytest

from real_captures import REAL, real_text
from transforms import damage_line, truncate_after_line, with_bom

from ansible_collections.gpuops.node.plugins.module_utils.parsers import dcgmi_diag
from ansible_collections.gpuops.node.plugins.module_utils.parsers.dcgmi_health import styled_json

R1_PASS = 'dcgmi/diag-r1-v100-pcie-pass-dcgm339.txt'
R2_K8S = 'dcgmi/diag-r2-dcgm423-l40s-4gpu-pcie-FAIL-internal-error-k8s.txt'
R2_B200 = 'dcgmi/diag-r2-dcgm441-b200-8gpu-pcie-FAIL-slurm.txt'
R3_CUINIT = 'dcgmi/diag-r3-fail-early-h100-8gpu-FAIL-cuinit-no-fabricmanager.txt'
R3_V = 'dcgmi/diag-r3-v-v100-pcie-pass-verbose-eud-skip.txt'
FRAGMENT = 'dcgmi/diag-r3-j-dcgm4-8gpu-diagnostic-test-object-FRAGMENT.json'


# ---------------------------------------------------------------- documented transforms (local)

def complete_dcgm4_document(fragment, category='Hardware', version='4.1.0', gpus=8, device_id='2330'):
    """The complete ``dcgmi diag -j`` document of DCGM 4 around a FRAGMENT that holds one element of a ``tests``
    array (its trailing comma dropped): ``{"DCGM Diagnostic": {"test_categories": [{"category", "tests":
    [<fragment>]}]}, "entity_groups": [GPU 0..gpus-1], "metadata": {"version"}}``, the layout of DCGM 4's
    Diag::HelperJsonBuildOutput. The fragment's text is kept verbatim."""
    body = fragment.rstrip().rstrip(',')
    entities = ',\n'.join('\t\t\t\t{\n\t\t\t\t\t"device_id" : "%s",\n\t\t\t\t\t"entity_id" : %d\n\t\t\t\t}'
                          % (device_id, g) for g in range(gpus))
    return ('{\n\t"DCGM Diagnostic" : \n\t{\n\t\t"test_categories" : \n\t\t[\n\t\t\t{\n'
            '\t\t\t\t"category" : "%s",\n\t\t\t\t"tests" : \n\t\t\t\t[\n%s\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t},\n'
            '\t"entity_groups" : \n\t[\n\t\t{\n\t\t\t"entities" : \n\t\t\t[\n%s\n\t\t\t],\n'
            '\t\t\t"entity_group" : "GPU",\n\t\t\t"entity_group_id" : 1\n\t\t}\n\t],\n'
            '\t"metadata" : \n\t{\n\t\t"version" : "%s"\n\t}\n}\n' % (category, body, entities, version))


def fail_gpu_in_dcgm4_json(text, test, gpu, message):
    """A DCGM 4 JSON document where ``gpu`` failed ``test`` with ``message`` (its result and the test summary set
    to Fail, the message added as the entity's warning and to the summary, as DCGM 4 reports a failure)."""
    doc = json.loads(text)
    for category in doc['DCGM Diagnostic']['test_categories']:
        for entry in category['tests']:
            if entry['name'] != test:
                continue
            warning = {'warning': message, 'error_id': 43, 'error_category': 10, 'error_severity': 2}
            for result in entry['results']:
                if result['entity_id'] == gpu:
                    result['status'] = 'Fail'
                    result['warnings'] = [warning]
            entry['test_summary'] = {'status': 'Fail', 'warnings': [warning]}
    return styled_json(doc) + '\n'


def text_row(text, name):
    """The 1-based number of the first table row whose name column is ``name``."""
    for no, line in enumerate(text.split('\n'), 1):
        if line.startswith('| ') and line[2:27].strip() == name:
            return no
    raise ValueError(name)


def dcgm4_text_gpu_fails(text, test, gpu, message):
    """A DCGM 4 text table where ``gpu`` failed ``test``: the test's row and the ``GPUn:`` row say Fail and a
    ``Warning: GPUn`` row (cut every 45 characters, as DCGM 4 prints) follows."""
    start = text_row(text, test)
    text = damage_line(text, start, '| %s | %s |' % (test.ljust(25), 'Fail'.ljust(46)))
    lines = text.split('\n')
    at = next(i for i in range(start, len(lines)) if lines[i].strip('| ').startswith('GPU%d: ' % gpu))
    lines[at] = '| %s | %s |' % (''.ljust(25), ('GPU%d: Fail' % gpu).ljust(46))
    chunks = [message[i:i + 45] for i in range(0, len(message), 45)]
    rows = ['| %s | %s |' % (('Warning: GPU%d' % gpu if i == 0 else '').ljust(25), c.ljust(46))
            for i, c in enumerate(chunks)]
    return '\n'.join(lines[:at + 1] + rows + lines[at + 1:])


def from_text_as_json(rel, layout):
    """The JSON DCGM 3 or 4 prints for the run a real text table shows (render_diag_json of its parse)."""
    return dcgmi_diag.render_diag_json(dcgmi_diag.parse_diag(real_text(rel)), layout)


# ---------------------------------------------------------------- the table

MEMTEST = 'Memory test failed: 1 bad page found on GPU 3'
CASES = [
    # id, input, format, version, verdict, tests, gpus, failing subjects
    ('r1-pass-dcgm3', lambda: real_text(R1_PASS), 'text-dcgm3', '3.3.9', 'Pass', 9, [0], []),
    ('r3-verbose-pass-dcgm3', lambda: real_text(R3_V), 'text-dcgm3', '3.3.9', 'Pass', 16, [0], []),
    ('r3-cuinit-fail-dcgm3', lambda: real_text(R3_CUINIT), 'text-dcgm3', '3.3.8', 'Fail', 13, list(range(8)),
     ['GPU %d' % g for g in range(8)]),
    ('r2-b200-pcie-fail-dcgm4', lambda: real_text(R2_B200), 'text-dcgm4', '4.4.1', 'Fail', 3, list(range(8)),
     ['node']),
    ('r2-k8s-cut-fail-dcgm4', lambda: real_text(R2_K8S), 'text-dcgm4', '4.2.3', 'Fail', 3, list(range(4)),
     ['node', 'node']),
    ('fragment-in-dcgm4-document', lambda: complete_dcgm4_document(real_text(FRAGMENT)), 'json-dcgm4', '4.1.0',
     'Pass', 1, list(range(8)), []),
    ('fragment-gpu3-fails', lambda: fail_gpu_in_dcgm4_json(complete_dcgm4_document(real_text(FRAGMENT)),
                                                           'diagnostic', 3, MEMTEST),
     'json-dcgm4', '4.1.0', 'Fail', 1, list(range(8)), ['GPU 3']),
    ('b200-memory-gpu3-fails-text', lambda: dcgm4_text_gpu_fails(real_text(R2_B200), 'memory', 3, MEMTEST),
     'text-dcgm4', '4.4.1', 'Fail', 3, list(range(8)), ['GPU 3', 'node']),
    ('cuinit-as-dcgm3-json', lambda: from_text_as_json(R3_CUINIT, 'dcgm3'), 'json-dcgm3', '3.3.8', 'Fail', 13,
     list(range(8)), ['GPU %d' % g for g in range(8)]),
    ('verbose-pass-as-dcgm3-json', lambda: from_text_as_json(R3_V, 'dcgm3'), 'json-dcgm3', '3.3.9', 'Pass', 16,
     [0], []),
    ('b200-as-dcgm4-json', lambda: from_text_as_json(R2_B200, 'dcgm4'), 'json-dcgm4', '4.4.1', 'Fail', 3,
     list(range(8)), ['node']),
    ('r1-with-bom-and-crlf', lambda: with_bom(real_text(R1_PASS)).replace('\n', '\r\n'), 'text-dcgm3', '3.3.9',
     'Pass', 9, [0], []),
    ('r1-with-error-before-table', lambda: 'Error: cuInit failed\n' + real_text(R1_PASS), 'text-dcgm3', '3.3.9',
     'Fail', 9, [0], ['node']),
]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_verdicts(case):
    _id, make, fmt, version, verdict, count, gpus, subjects = case
    parsed = dcgmi_diag.parse_diag(make())
    assert parsed['format'] == fmt
    assert parsed['dcgm_version'] == version
    assert parsed['verdict'] == verdict
    assert len(parsed['tests']) == count
    assert parsed['gpus'] == gpus
    failures = dcgmi_diag.diag_failures(parsed)
    assert [f['subject'] for f in failures] == subjects
    for failure in failures:
        assert failure['check'] == 'dcgm_diag' and failure['expected'] == 'Pass' and failure['actual'] == 'Fail'


def test_every_real_capture_is_in_the_table():
    covered = {R1_PASS, R2_K8S, R2_B200, R3_CUINIT, R3_V, FRAGMENT}
    real = set('dcgmi/' + n for n in os.listdir(os.path.join(REAL, 'dcgmi'))
               if n.startswith('diag-') and not n.endswith('.source'))
    assert real == covered


def test_wrapped_messages_are_joined_mid_word():
    parsed = dcgmi_diag.parse_diag(real_text(R3_CUINIT))
    memory = next(t for t in parsed['tests'] if t['name'] == 'GPU Memory')
    gpu5 = next(r for r in memory['results'] if r['gpu'] == 5)
    assert gpu5['warnings'] == ["GPU 5 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. "
                                "Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet "
                                "initialized'. . Please check if a CUDA sample program can be run successfully on "
                                "this host. Refer to https://github.com/nvidia/cuda-samples"]
    persistence = next(t for t in parsed['tests'] if t['name'] == 'Persistence Mode')
    assert persistence['result'] == 'Pass'
    assert persistence['results'][0]['info'].startswith('Persistence mode for GPU 0 is disabled. Enable persistence')
    skipped = [t['name'] for t in parsed['tests'] if t['result'] == 'Skip']
    assert skipped == ['PCIe', 'Memory Bandwidth', 'EUD Test']


def test_dcgm4_text_keeps_unattributed_warnings_on_the_node():
    parsed = dcgmi_diag.parse_diag(real_text(R2_B200))
    pcie = parsed['tests'][2]
    assert (pcie['name'], pcie['category'], pcie['result']) == ('pcie', 'Integration', 'Fail')
    assert pcie['results'][0]['gpu'] is None
    assert pcie['results'][0]['warnings'][0].startswith("There was an internal error during the test: 'Output of "
                                                        "child process (11167) couldn't be parsed")
    assert all(r['result'] == 'Pass' for r in pcie['results'][1:])
    assert dcgmi_diag.summary(parsed, 2) == 'level 2: Fail: pcie failed'


def test_dcgm4_per_gpu_failure_names_the_gpu():
    parsed = dcgmi_diag.parse_diag(dcgm4_text_gpu_fails(real_text(R2_B200), 'memory', 3, MEMTEST))
    failure = dcgmi_diag.diag_failures(parsed)[0]
    assert failure == {'check': 'dcgm_diag', 'subject': 'GPU 3', 'expected': 'Pass', 'actual': 'Fail',
                       'message': 'memory: ' + MEMTEST}
    assert dcgmi_diag.summary(parsed, 2).startswith('level 2: Fail: memory failed on GPU 3')


def test_fragment_info_lists_are_joined_and_later_gpus_have_none():
    parsed = dcgmi_diag.parse_diag(complete_dcgm4_document(real_text(FRAGMENT)))
    test = parsed['tests'][0]
    assert (test['name'], test['category'], test['result']) == ('diagnostic', 'Hardware', 'Pass')
    assert test['results'][0]['info'].endswith('GPU 0 calculated at approximately 859.08 gigaflops during this test')
    assert test['results'][7]['info'] is None
    assert dcgmi_diag.summary(parsed, 3) == 'level 3: 1 tests Pass on 8 GPUs'


@pytest.mark.parametrize('rel', [R1_PASS, R3_V, R3_CUINIT, R2_B200, R2_K8S])
@pytest.mark.parametrize('layout', ['dcgm3', 'dcgm4'])
def test_rendered_json_reads_back_as_the_text(rel, layout):
    text = dcgmi_diag.parse_diag(real_text(rel))
    back = dcgmi_diag.parse_diag(dcgmi_diag.render_diag_json(text, layout))
    for key in ('verdict', 'gpus', 'tests', 'errors', 'dcgm_version'):
        assert back[key] == text[key]


# ---------------------------------------------------------------- faults: never a pass

FAULTS = [
    ('empty', lambda: ''),
    ('blank', lambda: '\n  \n'),
    ('garbage', lambda: 'Segmentation fault (core dumped)\n'),
    ('fragment-alone', lambda: real_text(FRAGMENT)),
    ('json-cut-in-half', lambda: complete_dcgm4_document(real_text(FRAGMENT))[:2500]),
    ('json-without-diagnostic-key', lambda: '{"something": {}}\n'),
    ('pass-table-cut-mid-table', lambda: truncate_after_line(real_text(R3_V), 30)),
    ('pass-table-cut-mid-row', lambda: truncate_after_line(real_text(R3_V), 30, keep_chars=20)),
    ('pass-row-damaged', lambda: damage_line(real_text(R1_PASS), 12, '| NVML Library              | Pazz   |')),
    ('pass-row-garbled', lambda: damage_line(real_text(R1_PASS), 12, 'NVML Library Pass')),
    ('k8s-cut-before-any-failure', lambda: truncate_after_line(real_text(R2_K8S), 21)),
]


@pytest.mark.parametrize('case', FAULTS, ids=[c[0] for c in FAULTS])
def test_unreadable_output_is_an_error_never_a_pass(case):
    with pytest.raises(dcgmi_diag.DiagParseError):
        dcgmi_diag.parse_diag(case[1]())


CONNECTION = ('Error: unable to establish a connection to the specified host: localhost\n'
              'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')


def test_connection_errors():
    with pytest.raises(dcgmi_diag.DiagConnectionError, match='Unable to connect to host engine'):
        dcgmi_diag.parse_diag(CONNECTION)
    runtime = styled_json({'DCGM Diagnostic': {'runtime_error': 'Error: Unable to complete diagnostic for group 0. '
                                                                'Return: (-21) Host engine connection '
                                                                'invalid/disconnected.', 'version': '4.4.1'}})
    with pytest.raises(dcgmi_diag.DiagConnectionError, match='invalid/disconnected'):
        dcgmi_diag.parse_diag(runtime)


def test_runtime_error_is_a_failure():
    doc = styled_json({'DCGM GPU Diagnostic': {'runtime_error': 'Error: Diagnostic could not be run while DCGM is '
                                                                'paused.', 'version': '3.3.8'}})
    parsed = dcgmi_diag.parse_diag(doc)
    assert (parsed['format'], parsed['verdict'], parsed['tests']) == ('json-dcgm3', 'Fail', [])
    assert dcgmi_diag.diag_failures(parsed)[0]['message'].startswith('dcgmi diag: Error: Diagnostic could not be run')


def test_iterations_and_warn():
    one = json.loads(from_text_as_json(R3_V, 'dcgm4'))
    one['DCGM Diagnostic']['test_categories'][-1]['tests'][0]['test_summary']['status'] = 'Warn'
    doc = styled_json({'iterations': [one, one], 'Overall Result': 'Pass'})
    parsed = dcgmi_diag.parse_diag(doc)
    assert parsed['verdict'] == 'Warn'
    assert len(parsed['tests']) == 32
    failed = styled_json({'iterations': [one], 'Overall Result': 'Fail', 'Warning': 'Generic error'})
    assert dcgmi_diag.parse_diag(failed)['verdict'] == 'Fail'


def test_dcgm3_level_one_warning_key():
    """DCGM 3 names a level-one test's message ``warnings`` inside its warning object."""
    doc = styled_json({'DCGM GPU Diagnostic': {'test_categories': [{'category': 'Deployment', 'tests': [
        {'name': 'Persistence Mode', 'results': [{'status': 'Fail', 'warnings': [{'warnings': 'off on GPU 0'}]}]}]}]},
        'version': '3.3.8', 'GPU Device IDs': ['2330']})
    parsed = dcgmi_diag.parse_diag(doc)
    assert parsed['verdict'] == 'Fail'
    assert dcgmi_diag.diag_failures(parsed)[0]['message'] == 'Persistence Mode: off on GPU 0'


def test_dcgm3_per_gpu_result_rows():
    text = real_text(R3_V)
    no = text_row(text, 'Targeted Power')
    text = damage_line(text, no, '| %s | %s |' % ('Targeted Power'.ljust(25), 'Fail - GPU: 0'.ljust(46)))
    parsed = dcgmi_diag.parse_diag(text)
    assert [f['subject'] for f in dcgmi_diag.diag_failures(parsed)] == ['GPU 0']
    assert re.match(r'^Targeted Power: GPU 0 GPU 0 max power', dcgmi_diag.diag_failures(parsed)[0]['message'])


def every_result_skipped(text):
    """Transform: the JSON DCGM 4 prints for a real run (render_diag_json of its parse) with every test and every
    GPU's result set to Skip: a run that tested nothing."""
    parsed = dcgmi_diag.parse_diag(text)
    for test in parsed['tests']:
        test['result'] = 'Skip'
        for result in test['results']:
            result['result'] = 'Skip'
    return dcgmi_diag.render_diag_json(parsed, 'dcgm4')


def test_a_run_that_skipped_every_test_is_never_a_pass():
    with pytest.raises(dcgmi_diag.DiagParseError, match='every test was skipped'):
        dcgmi_diag.parse_diag(every_result_skipped(real_text('dcgmi/diag-r1-v100-pcie-pass-dcgm339.txt')))
