# -*- coding: utf-8 -*-
"""kubelet_topology_plan as the role calls it: the role's variables, the parsed configuration, drop-ins as
{name, config}, the state files; refusals fail with every reason, NUMA findings are warnings."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from module_harness import patch_module, run, warnings_of  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpuops.node.plugins.modules import kubelet_topology_plan
from real_captures import real_text
from repo_paths import REPO

ROOT = REPO
with open(os.path.join(ROOT, 'roles', 'kubelet_topology', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
CONFIG = yaml.safe_load(real_text('kubelet/kubeadm-1.27-playwithk8s-node2.yaml'))
FACTS = {'numa_nodes': {'0': '0-7'}, 'gpus': [{'index': 0, 'numa_node': 0, 'pci_bus_id': '00000000:01:00.0'}],
         'nics': [{'name': 'mlx5_0', 'numa_node': 0}], 'gpu_nic_affinity': {'GPU0': {'relation': 'PIX', 'nics': ['mlx5_0']}}}


def test_the_role_defaults_with_a_reservation_plan_a_restart():
    variables = dict(DEFAULTS, kubelet_topology_reserved_system_cpus='0-1')
    result = run(kubelet_topology_plan, {'variables': variables, 'config': CONFIG, 'facts': FACTS,
                                         'state': {'cpu_manager_state': {'policyName': 'none'}}}, check_mode=True)
    assert not result['changed'] and result['restart'] and result['remove_state_files'] == ['cpu_manager_state']
    assert result['settings']['cpuManagerPolicy'] == 'static'


def test_every_reason_is_in_the_message():
    variables = dict(DEFAULTS, kubelet_topology_cpu_manager_policy_options={'nope': 'true'},
                     kubelet_topology_drain=True, kubelet_topology_kubectl_host='')
    result = run(kubelet_topology_plan, {'variables': variables, 'config': CONFIG}, expect_fail=True)
    assert result['msg'].startswith('kubelet_topology_cpu_manager_policy_options: nope is not a CPU manager policy')
    assert 'kubelet_topology_kubectl_host: draining' in result['msg'] and len(result['errors']) == 2


@pytest.mark.parametrize('numa', [1, None])
def test_numa_findings_are_warnings(numa):
    facts = dict(FACTS, numa_nodes={'0': '0-3', '1': '4-7'}, nics=[{'name': 'mlx5_0', 'numa_node': numa}])
    variables = dict(DEFAULTS, kubelet_topology_reserved_system_cpus='0')
    result = run(kubelet_topology_plan, {'variables': variables, 'config': CONFIG, 'facts': facts,
                                         'cmdline': '/usr/bin/kubelet\x00--config=/var/lib/kubelet/config.yaml\x00'})
    warned = warnings_of(result)
    assert len(warned) == 1
    assert ('on NUMA node 1' if numa else 'has no NUMA node in the facts') in warned[0]


def test_drop_ins_come_as_name_and_config():
    variables = dict(DEFAULTS, kubelet_topology_reserved_system_cpus='0', kubelet_topology_mode='drop_in')
    later = {'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration', 'topologyManagerPolicy': 'none'}
    result = run(kubelet_topology_plan, {'variables': variables, 'config': CONFIG, 'facts': FACTS,
                                         'drop_ins': [{'name': '95-site.conf', 'config': later}]}, expect_fail=True)
    assert result['errors'][0].startswith('kubelet_topology_drop_in_name: 95-site.conf comes after')
