# -*- coding: utf-8 -*-
"""gpuops.node.mps (its contract with the other roles: test_role_contract.py): the defaults pass mps_plan on the
simulated DGX A100, and the unit starts the daemon the way the package's binary runs (forking, quit on stop)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from real_captures import profile_text
from role_files import load, text

ROLE = 'mps'


def _load(*parts):
    return load(ROLE, *parts)


def _text(*parts):
    return text(ROLE, *parts)


def test_the_defaults_plan_one_set_of_every_gpu():
    from ansible_collections.gpuops.node.plugins.module_utils.plans.mps import plan
    from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_xml import parse_nvsmi_xml
    gpus = parse_nvsmi_xml(profile_text('a100-sxm-8gpu-ib', 'nvidia-smi-q-x.xml'))['gpus']
    result = plan(_load('defaults', 'main.yml'), {'gpus': gpus})
    assert result['errors'] == []
    assert [s['name'] for s in result['sets']] == ['all']
    assert len(result['exclusive']) == 8


def test_the_unit_runs_the_daemon_from_its_environment_and_stops_it_with_quit():
    unit = _text('templates', 'gpuops-mps@.service.j2')
    assert unit.startswith('{{ ansible_managed | comment }}\n')
    lines = dict(line.split('=', 1) for line in unit.splitlines() if re.match(r'^[A-Za-z]+=', line))
    assert lines['Type'] == 'forking'
    assert lines['ExecStart'] == '{{ __mps_control }} -d'
    assert lines['ExecStop'] == ("/bin/sh -c 'echo quit | {{ __mps_control }}; "
                                 "while kill -0 \"$MAINPID\" 2>/dev/null; do sleep 0.2; done'")
    assert lines['EnvironmentFile'] == '{{ __mps_conf_dir }}/%i.env'
    assert 'ExecStartPre={{ mps_nvidia_smi }} -i ${GPUOPS_MPS_GPUS} -c EXCLUSIVE_PROCESS' in unit
    assert '-m 0770 ${CUDA_MPS_PIPE_DIRECTORY} ${CUDA_MPS_LOG_DIRECTORY}' in unit
