# -*- coding: utf-8 -*-
"""kubelet_plan: what the kubelet_topology role writes, refuses and restarts, from its variables, the kubelet's
configuration (real kubeadm files), its state files and the simulator profiles' topology facts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os
import tempfile

import pytest
import yaml

from ansible_collections.gpuops.node.plugins.module_utils.plans import kubelet_topology as plans_kubelet_topology
from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
from real_captures import real_text
from repo_paths import REPO

ROOT = REPO
from simulator import bundle  # noqa: E402  pylint: disable=wrong-import-position

with open(os.path.join(ROOT, 'roles', 'kubelet_topology', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
KUBEADM = 'kubelet/kubeadm-1.27-playwithk8s-node2.yaml'
REAL_FILES = ['kubelet/kubeadm-1.27-playwithk8s-node2.yaml', 'kubelet/kubeadm-1.20-centos7-cgroupfs.yaml',
              'kubelet/k8s-1.12-full-defaults-annotated-EDITED.yaml']
_FACTS = {}


def facts(profile):
    """The gpu_topology facts of a simulator profile, read the way a node's bundle is."""
    if profile not in _FACTS:
        where = tempfile.mkdtemp()
        bundle.write_profile(bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', profile)), where)
        _FACTS[profile] = gather_bundle(where)
    return copy.deepcopy(_FACTS[profile])


def config(rel=KUBEADM):
    return yaml.safe_load(real_text(rel))


def variables(**values):
    return dict(DEFAULTS, **dict(('kubelet_topology_' + k, v) for k, v in values.items()))


SEED = dict(reserved_system_cpus='0-1')
NONE_STATE = {'cpu_manager_state': {'policyName': 'none', 'defaultCpuSet': '', 'checksum': 1},
              'memory_manager_state': {'policyName': 'None', 'machineState': {}, 'checksum': 2}}


def test_the_seed_policies_on_a_kubeadm_node():
    result = plans_kubelet_topology.plan(variables(**SEED), config(), state=NONE_STATE, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == [] and result['warnings'] == []
    # the kubelet's defaults (topologyManagerScope container, memoryManagerPolicy None) are not written where the
    # file leaves them out: nothing would change
    assert result['settings'] == {'cpuManagerPolicy': 'static', 'cpuManagerPolicyOptions': None,
                                  'topologyManagerPolicy': 'restricted', 'reservedSystemCPUs': '0-1'}
    assert result['changed_keys'] == ['cpuManagerPolicy', 'reservedSystemCPUs', 'topologyManagerPolicy']
    # the CPU manager changes policy: its state file goes; the memory manager's stays (None, as before)
    assert result['remove_state_files'] == ['cpu_manager_state'] and result['restart']
    assert result['healthz'] == {'address': '127.0.0.1', 'port': 10248, 'url': 'http://127.0.0.1:10248/healthz'}


@pytest.mark.parametrize('rel', REAL_FILES)
def test_every_other_key_of_a_real_file_stays(rel):
    before = config(rel)
    result = plans_kubelet_topology.plan(variables(**SEED), before, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == []
    after = result['config']
    assert set(k for k in before if before[k] != after.get(k)) <= set(result['settings'])
    assert [k for k in after if k in before] == [k for k in before if k in after]


def test_a_converged_node_changes_nothing():
    first = plans_kubelet_topology.plan(variables(**SEED), config(), state=NONE_STATE, facts=facts('pcie-4gpu-roce'))
    state = {'cpu_manager_state': {'policyName': 'static', 'defaultCpuSet': '0-7'},
             'memory_manager_state': NONE_STATE['memory_manager_state']}
    second = plans_kubelet_topology.plan(variables(**SEED), first['config'], state=state, facts=facts('pcie-4gpu-roce'))
    assert (second['changed_keys'], second['remove_state_files'], second['restart']) == ([], [], False)


def test_a_state_file_of_another_policy_goes_even_when_the_configuration_is_right():
    first = plans_kubelet_topology.plan(variables(**SEED), config(), facts=facts('pcie-4gpu-roce'))
    second = plans_kubelet_topology.plan(variables(**SEED), first['config'], state=NONE_STATE, facts=facts('pcie-4gpu-roce'))
    assert second['changed_keys'] == [] and second['remove_state_files'] == ['cpu_manager_state'] and second['restart']


def test_switching_back_to_none_removes_the_reservation_and_the_state():
    static = plans_kubelet_topology.plan(variables(**SEED), config(), facts=facts('pcie-4gpu-roce'))['config']
    back = plans_kubelet_topology.plan(variables(cpu_manager_policy='none', topology_manager_policy='none'), static,
                                       state={'cpu_manager_state': {'policyName': 'static'}}, facts=facts('pcie-4gpu-roce'))
    assert back['errors'] == [] and 'reservedSystemCPUs' not in back['config']
    assert back['config']['cpuManagerPolicy'] == 'none' and back['remove_state_files'] == ['cpu_manager_state']


@pytest.mark.parametrize('values, file_keys, expected', [
    ({}, {}, 'kubelet_topology_cpu_manager_policy: static needs CPUs reserved for the system'),
    ({'reserved_system_cpus': '0-7'}, {}, 'kubelet_topology_reserved_system_cpus: 0-7 is every CPU of the node'),
    ({'reserved_system_cpus': '6-9'}, {}, 'kubelet_topology_reserved_system_cpus: 6-9 names CPUs the node does not have'),
    ({'reserved_system_cpus': '0-x'}, {}, "kubelet_topology_reserved_system_cpus: '0-x' is not a CPU list"),
    ({'kube_reserved': {'cpu': '0'}}, {}, 'kubelet_topology_cpu_manager_policy: static needs CPUs reserved'),
    ({'cpu_manager_policy_options': {'full-pcpus-only': 'true'}, 'cpu_manager_policy': 'none'}, {},
     'kubelet_topology_cpu_manager_policy_options: options are for the static policy only'),
    ({'cpu_manager_policy_options': {'full-cpus': 'true'}, 'reserved_system_cpus': '0'}, {},
     'kubelet_topology_cpu_manager_policy_options: full-cpus is not a CPU manager policy option'),
    ({'cpu_manager_policy_options': {'full-pcpus-only': 'yes'}, 'reserved_system_cpus': '0'}, {},
     "kubelet_topology_cpu_manager_policy_options: full-pcpus-only is 'yes'"),
    ({'reserved_memory': [{'numaNode': 0, 'limits': {'memory': '1Gi'}}], 'reserved_system_cpus': '0'}, {},
     'kubelet_topology_reserved_memory: reserved memory per NUMA node is for the Static memory manager'),
    ({'memory_manager_policy': 'Static', 'reserved_system_cpus': '0',
      'reserved_memory': [{'numaNode': 0, 'limits': {'memory': '1Gi'}}]}, {},
     'kubelet_topology_reserved_memory: it reserves 1Gi in all, and the Static memory manager needs exactly '
     'kubeReserved + systemReserved + evictionHard memory.available = 100Mi'),
    ({'memory_manager_policy': 'Static', 'reserved_system_cpus': '0',
      'reserved_memory': [{'numaNode': 3, 'limits': {'memory': '100Mi'}}]}, {},
     'kubelet_topology_reserved_memory: NUMA node 3 has no CPUs on this node'),
    ({'memory_manager_policy': 'Static', 'reserved_system_cpus': '0'}, {'evictionHard': {'nodefs.available': '5%'}},
     'kubelet_topology_memory_manager_policy: Static needs memory reserved'),
    ({'memory_manager_policy': 'Static', 'reserved_system_cpus': '0'}, {'evictionHard': {'memory.available': '5%'}},
     'kubelet_topology_eviction_hard: evictionHard memory.available is 5%'),
    ({'mode': 'drop_in', 'drop_in_name': 'gpuops.yaml', 'reserved_system_cpus': '0'}, {},
     "kubelet_topology_drop_in_name: 'gpuops.yaml' must be a file name ending in .conf"),
    ({'drain': True, 'kubectl_host': '', 'reserved_system_cpus': '0'}, {},
     'kubelet_topology_kubectl_host: draining (kubelet_topology_drain) needs the host'),
    ({'drain': True, 'drain_options': {'ignore_daemonsets': True}, 'reserved_system_cpus': '0'}, {},
     'kubelet_topology_drain_options: give wait_timeout'),
])
def test_refused_before_any_change(values, file_keys, expected):
    current = dict(config(), **file_keys)
    result = plans_kubelet_topology.plan(variables(**values), current, state=NONE_STATE, facts=facts('pcie-4gpu-roce'))
    assert [e for e in result['errors'] if e.startswith(expected)], result['errors']


def test_a_cpu_reservation_in_the_file_is_enough_for_static():
    current = dict(config(), kubeReserved={'cpu': '500m', 'memory': '1Gi'})
    assert plans_kubelet_topology.plan(variables(), current, facts=facts('pcie-4gpu-roce'))['errors'] == []
    assert plans_kubelet_topology.plan(variables(system_reserved={'cpu': '1'}), config(), facts=facts('pcie-4gpu-roce'))['errors'] == []


def test_static_memory_is_spread_over_the_numa_nodes_with_cpus():
    topo = facts('pcie-4gpu-roce')
    topo['numa_nodes'] = {'0': '0-3', '1': '4-7', '2': ''}
    result = plans_kubelet_topology.plan(variables(memory_manager_policy='Static', reserved_system_cpus='0',
                                                   kube_reserved={'memory': '1Gi'}, system_reserved={'memory': '500Mi'}),
                                         config(), facts=topo)
    assert result['errors'] == []
    # 1Gi + 500Mi + the default eviction threshold 100Mi = 1624Mi over nodes 0 and 1 (node 2 has no CPUs)
    assert result['settings']['reservedMemory'] == [{'numaNode': 0, 'limits': {'memory': '812Mi'}},
                                                    {'numaNode': 1, 'limits': {'memory': '812Mi'}}]
    assert result['remove_state_files'] == []  # no state file on the node


def test_an_odd_total_leaves_the_rest_on_the_first_node():
    entries = plans_kubelet_topology.compute_reserved_memory(3 * 1024 * 1024 + 1, [0, 1])
    assert entries == [{'numaNode': 0, 'limits': {'memory': '%d' % (2 * 1024 * 1024 + 1)}},
                       {'numaNode': 1, 'limits': {'memory': '1Mi'}}]


def test_given_reserved_memory_that_sums_right_is_kept():
    given = [{'numaNode': 0, 'limits': {'memory': '100Mi'}}]
    result = plans_kubelet_topology.plan(variables(memory_manager_policy='Static', reserved_system_cpus='0', reserved_memory=given),
                                         config(), state=NONE_STATE, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == [] and result['settings']['reservedMemory'] == given
    assert result['remove_state_files'] == ['cpu_manager_state', 'memory_manager_state']


def _nic_moved(profile, nic, numa):
    """Transform: the facts of a node whose NIC sits on another NUMA node."""
    topo = facts(profile)
    for entry in topo['nics']:
        if entry['name'] == nic:
            entry['numa_node'] = numa
    return topo


def test_a_gpu_and_its_closest_nic_on_different_numa_nodes_is_a_warning():
    topo = _nic_moved('a100-sxm-8gpu-ib', 'mlx5_0', 1)
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='16'), config(), facts=topo)
    assert result['errors'] == []
    assert result['numa_apart'] == [{'gpu': 'GPU0', 'gpu_pci_bus_id': topo['gpus'][0]['pci_bus_id'], 'gpu_numa_node': 3,
                                     'nic': 'mlx5_0', 'nic_numa_node': 1, 'relation': 'PXB'},
                                    {'gpu': 'GPU1', 'gpu_pci_bus_id': topo['gpus'][1]['pci_bus_id'], 'gpu_numa_node': 3,
                                     'nic': 'mlx5_0', 'nic_numa_node': 1, 'relation': 'PXB'}]
    assert result['warnings'][0].startswith('GPU0 (%s) is on NUMA node 3 and its closest NIC mlx5_0 (PXB) on NUMA node 1'
                                            % topo['gpus'][0]['pci_bus_id'])


def test_strict_numa_makes_it_a_failure():
    topo = _nic_moved('a100-sxm-8gpu-ib', 'mlx5_0', 1)
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='16', strict_numa=True), config(), facts=topo)
    assert result['errors'][0].startswith('kubelet_topology_topology_manager_policy: GPU0 ')
    assert result['errors'][0].endswith('(kubelet_topology_strict_numa)')


@pytest.mark.parametrize('profile', ['a100-sxm-8gpu-ib', 'h100-sxm-8gpu-ib', 'pcie-4gpu-roce'])
def test_the_simulated_nodes_have_their_gpus_and_nics_together(profile):
    cpus = {'a100-sxm-8gpu-ib': '16'}.get(profile, '0')
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus=cpus, strict_numa=True), config(), facts=facts(profile))
    assert result['errors'] == [] and result['numa_apart'] == []


@pytest.mark.parametrize('policy', ['restricted', 'single-numa-node'])
def test_what_the_facts_cannot_tell_is_never_passed(policy):
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', topology_manager_policy=policy), config(), facts={})
    assert result['warnings'] == ['the facts name no CPU of the node: kubelet_topology_reserved_system_cpus 0 could '
                                  'not be checked against it',
                                  'cannot check the GPU and NIC NUMA nodes for the %s policy: the facts list no GPU '
                                  '(the driver does not answer?)' % policy]
    strict = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', topology_manager_policy=policy, strict_numa=True), config(),
                                         facts={})
    assert strict['errors'] and strict['errors'][0].startswith('kubelet_topology_topology_manager_policy: cannot check')


def test_best_effort_does_not_look_at_numa():
    topo = _nic_moved('a100-sxm-8gpu-ib', 'mlx5_0', 1)
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='16', topology_manager_policy='best-effort', strict_numa=True),
                                         config(), facts=topo)
    assert result['errors'] == [] and result['numa_apart'] == []


def test_not_a_kubelet_configuration_is_refused():
    result = plans_kubelet_topology.plan(variables(**SEED), {'apiVersion': 'v1', 'kind': 'ConfigMap'}, facts=facts('pcie-4gpu-roce'))
    assert result['errors'][0].startswith('kubelet_topology_config_file: /var/lib/kubelet/config.yaml: not a kubelet')
    missing = plans_kubelet_topology.plan(variables(**SEED), None)
    assert missing['errors'][0].startswith('kubelet_topology_config_file: there is no kubelet configuration at')
    assert not missing['restart']


def _drop_in(**keys):
    return dict({'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration'}, **keys)


def test_drop_in_mode_writes_our_file_over_the_others():
    drop_ins = [('10-site.conf', _drop_in(cpuManagerPolicy='none', maxPods=50))]
    result = plans_kubelet_topology.plan(variables(mode='drop_in', **SEED), config(), drop_ins, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == []
    assert result['config']['cpuManagerPolicy'] == 'static' and result['config']['maxPods'] == 50
    assert 'cpuManagerPolicy' in result['changed_keys'] and 'maxPods' not in result['changed_keys']


def test_a_later_drop_in_that_sets_our_keys_is_refused():
    drop_ins = [('99-site.conf', _drop_in(cpuManagerPolicy='none'))]
    result = plans_kubelet_topology.plan(variables(mode='drop_in', **SEED), config(), drop_ins, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == ['kubelet_topology_drop_in_name: 99-site.conf comes after 90-gpuops-topology.conf in the '
                                'kubelet config directory and sets cpuManagerPolicy, so the kubelet would not run with '
                                'the values the role writes']


def test_our_drop_in_again_changes_nothing():
    first = plans_kubelet_topology.plan(variables(mode='drop_in', **SEED), config(), [], facts=facts('pcie-4gpu-roce'))
    ours = _drop_in(**plans_kubelet_topology.drop_in_content(first['settings']))
    second = plans_kubelet_topology.plan(variables(mode='drop_in', **SEED), config(), [('90-gpuops-topology.conf', ours)],
                                         state={'cpu_manager_state': {'policyName': 'static'}}, facts=facts('pcie-4gpu-roce'))
    assert (second['errors'], second['changed_keys'], second['restart']) == ([], [], False)


@pytest.mark.parametrize('keys, expected', [
    ({}, 'http://127.0.0.1:10248/healthz'),
    ({'healthzBindAddress': '0.0.0.0', 'healthzPort': 10249}, 'http://127.0.0.1:10249/healthz'),
    ({'healthzBindAddress': '::'}, 'http://[::1]:10248/healthz'),
    ({'healthzBindAddress': '10.0.0.5'}, 'http://10.0.0.5:10248/healthz'),
])
def test_the_health_endpoint(keys, expected):
    assert plans_kubelet_topology.healthz_endpoint(keys)['url'] == expected


def test_a_disabled_health_endpoint_is_none():
    assert plans_kubelet_topology.healthz_endpoint({'healthzPort': 0}) is None


def test_a_node_already_at_the_policies_is_not_restarted():
    """A hand-tuned node (static, restricted, its reservation, its state file) with the kubelet's default scope and
    memory policy left out: nothing to write, no restart, no drain."""
    current = dict(config(), cpuManagerPolicy='static', topologyManagerPolicy='restricted', reservedSystemCPUs='0-1')
    result = plans_kubelet_topology.plan(variables(**SEED), current, state={'cpu_manager_state': {'policyName': 'static'}},
                                         facts=facts('pcie-4gpu-roce'))
    assert (result['errors'], result['changed_keys'], result['restart']) == ([], [], False)


def test_a_reservation_map_is_merged_into_the_files():
    current = dict(config(), kubeReserved={'cpu': '1', 'ephemeral-storage': '1Gi'})
    result = plans_kubelet_topology.plan(variables(memory_manager_policy='Static', reserved_system_cpus='0',
                                                   kube_reserved={'memory': '1Gi'}, eviction_hard={'memory.available': '500Mi'}),
                                         current, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == []
    assert result['config']['kubeReserved'] == {'cpu': '1', 'ephemeral-storage': '1Gi', 'memory': '1Gi'}
    # without evictionHard the kubelet used its defaults: they stay, memory.available replaced
    assert result['config']['evictionHard'] == dict(plans_kubelet_topology.DEFAULT_EVICTION_HARD, **{'memory.available': '500Mi'})
    assert result['settings']['reservedMemory'] == [{'numaNode': 0, 'limits': {'memory': '1524Mi'}}]


KUBELET = ['/usr/bin/kubelet', '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
           '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=/var/lib/kubelet/config.yaml',
           '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock']


@pytest.mark.parametrize('extra, values, expected', [
    (['--cpu-manager-policy=none'], {}, 'kubelet_topology_cpu_manager_policy: the kubelet runs with '
                                        '--cpu-manager-policy=none, which overrides its configuration file'),
    (['--reserved-cpus', '0-3'], {}, 'kubelet_topology_reserved_system_cpus: the kubelet runs with --reserved-cpus=0-3'),
    (['--root-dir=/data/kubelet'], {}, 'kubelet_topology_root_dir: the kubelet runs with --root-dir=/data/kubelet, '
                                       'not --root-dir=/var/lib/kubelet'),
    ([], {'mode': 'drop_in'}, 'kubelet_topology_config_dir: the kubelet runs with no --config-dir'),
    ([], {'config_file': '/etc/kubelet.yaml'}, 'kubelet_topology_config_file: the kubelet runs with '
                                               '--config=/var/lib/kubelet/config.yaml, not --config=/etc/kubelet.yaml'),
])
def test_flags_that_would_make_the_change_vanish_are_refused(extra, values, expected):
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', **values), config(), facts=facts('pcie-4gpu-roce'),
                                         cmdline=KUBELET + extra)
    assert [e for e in result['errors'] if e.startswith(expected)], result['errors']


def test_the_running_kubelet_with_its_config_dir_is_accepted_and_names_the_node():
    cmdline = KUBELET + ['--config-dir=/etc/kubernetes/kubelet.conf.d/', '--hostname-override=GPU-07']
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', mode='drop_in'), config(), facts=facts('pcie-4gpu-roce'),
                                         cmdline=cmdline, hostname='GPU-07.example.com\n')
    assert result['errors'] == [] and result['node_name'] == 'gpu-07'
    # as /proc/<pid>/cmdline gives it
    plain = plans_kubelet_topology.plan(variables(reserved_system_cpus='0'), config(), facts=facts('pcie-4gpu-roce'),
                                        cmdline='\x00'.join(KUBELET) + '\x00', hostname='GPU-07\n')
    assert plain['errors'] == []
    assert plain['node_name'] == 'gpu-07'


def test_a_kubelet_that_is_not_running_is_said():
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0'), config(), facts=facts('pcie-4gpu-roce'), cmdline=None)
    assert result['errors'] == [] and result['warnings'][0].startswith('the kubelet (kubelet.service) is not running')


def test_drop_in_mode_cannot_remove_what_the_file_sets():
    current = dict(config(), cpuManagerPolicy='static', cpuManagerPolicyOptions={'full-pcpus-only': 'true'},
                   reservedSystemCPUs='0')
    result = plans_kubelet_topology.plan(variables(mode='drop_in', cpu_manager_policy='none', topology_manager_policy='none'), current, [],
                                         facts=facts('pcie-4gpu-roce'))
    assert 'kubelet_topology_mode: drop_in cannot remove cpuManagerPolicyOptions, which the configuration file' \
        in ' '.join(result['errors'])
    assert any(e.startswith('kubelet_topology_cpu_manager_policy_options: the kubelet would run with the CPU manager '
                            'policy none') for e in result['errors'])


def test_a_state_file_holding_running_pods_is_not_removed_without_a_drain():
    held = {'cpu_manager_state': {'policyName': 'none', 'defaultCpuSet': '',
                                  'entries': {'0a1b': {'train': '2-5'}}, 'checksum': 1}}
    result = plans_kubelet_topology.plan(variables(**SEED), config(), state=held, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == ['kubelet_topology_drain: cpu_manager_state holds the CPUs of 1 running pod(s); removing '
                                'it under them hands those to other pods: drain the node first (kubelet_topology_drain: '
                                'true, or drain it yourself)']
    drained = plans_kubelet_topology.plan(variables(drain=True, **SEED), config(), state=held, facts=facts('pcie-4gpu-roce'))
    assert drained['errors'] == [] and drained['remove_state_files'] == ['cpu_manager_state']


def test_no_health_endpoint_is_said():
    result = plans_kubelet_topology.plan(variables(**SEED), dict(config(), healthzPort=0), facts=facts('pcie-4gpu-roce'))
    assert result['healthz'] is None and result['warnings'][-1].startswith('healthzPort is 0')


@pytest.mark.parametrize('policy, options, refused', [('restricted', None, True), ('best-effort', None, True),
                                                      ('none', None, False),
                                                      ('restricted', {'max-allowable-numa-nodes': '16'}, False)])
def test_more_numa_nodes_than_the_topology_manager_takes(policy, options, refused):
    """A GH200-like node: one CPU node and GPU memory nodes without CPUs, nine in all."""
    topo = facts('pcie-4gpu-roce')
    topo['numa_nodes'] = dict([('0', '0-7')] + [(str(n), '') for n in range(1, 9)])
    current = dict(config(), topologyManagerPolicyOptions=options) if options else config()
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', topology_manager_policy=policy), current, facts=topo)
    found = [e for e in result['errors'] if e.startswith('kubelet_topology_topology_manager_policy: the node has 9 NUMA')]
    assert bool(found) == refused, result['errors']


def test_null_in_a_reservation_map_removes_that_key():
    current = dict(config(), kubeReserved={'cpu': '1', 'memory': '1Gi'})
    result = plans_kubelet_topology.plan(variables(reserved_system_cpus='0', kube_reserved={'cpu': None}, system_reserved={'cpu': '1'}),
                                         current, facts=facts('pcie-4gpu-roce'))
    assert result['errors'] == []
    assert result['config']['kubeReserved'] == {'memory': '1Gi'} and result['config']['systemReserved'] == {'cpu': '1'}
