# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module of the collection run the way Ansible runs it: one ``ansible-playbook`` process
(tests/unit/collection/modules_through_ansible/playbook.yml, local connection, the JSON callback) with two tasks per
module, one that must pass and one that must fail, and what the operator is shown for each: the status Ansible's task
executor gave the result (a result without ``failed`` whose ``rc`` is not 0 is failed, a result without ``changed``
is not changed), the message or the fields that say why, and no deprecation.

Inputs are real captures (tests/fixtures/real, read only) and the simulator's nodes (profiles derived from real
captures; its nvidia-smi and dcb run as programs); the stand-ins this file writes (dcgmi, scontrol, the package tools)
print real captures where there are some. Everything a module writes is under pytest's temporary directory: each task
names its files, trees and programs through its own parameters, and ``PATH`` where a module has no parameter for a
program (the package tools of nvidia_driver_plan and rdma_plan).

What this cannot prove: that a module behaves so on a real node (the programs are stand-ins and simulations; a
program's answer to an input no capture holds is the stand-in's); how a module runs over SSH, with become or on
another Python than the controller's; anything the unit tests of each module cover (one input each way here). The
JSON callback does not print deprecations; the ``deprecations`` of a result are what the default callback prints as
``[DEPRECATION WARNING]``, so they are checked per task, and the run's standard error for any that was printed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_cli import ansible_playbook, collections_path
from real_captures import real_path, real_text
from repo_paths import REPO
from simhelpers import profile_path, profile_tree
from simulator import bundle

from ansible_collections.gpuops.node.plugins.module_utils.plans import nvidia_packaging

REAL = os.path.abspath(real_path(''))
PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'modules_through_ansible', 'playbook.yml')
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO, 'plugins', 'modules'))
                 if name.endswith('.py') and not name.startswith('_'))

A100 = 'a100-sxm-8gpu-ib'
H100 = 'h100-sxm-8gpu-ib'
PCIE = 'pcie-4gpu-roce'

DIAG_PASS = 'dcgmi/diag-r1-v100-pcie-pass-dcgm339.txt'
DIAG_FAIL = 'dcgmi/diag-r3-fail-early-h100-8gpu-FAIL-cuinit-no-fabricmanager.txt'
POLICY_GROUP1 = 'dcgmi/policy-get-group1-dbe-reset-DOCEXAMPLE-indented.txt'
CORRUPTED_TOPO = 'topo/h100-8gpu-12nic-tpgds-aihub0008-CORRUPTED-paste.txt'
KUBEADM = 'kubelet/kubeadm-1.27-playwithk8s-node2.yaml'
SLURM_IDLE = 'slurm/scontrol-show-node-idle-debian12-22.05.8.txt'
SLURM_NOT_FOUND = 'slurm/scontrol-show-node-notfound-ERROR-debian12-22.05.8.txt'

# dcgmi policy: --get prints NVIDIA's documented group-1 policy (double-bit ECC errors, reset, short validation)
# whatever was set; --set answers as dcgmi does
DCGMI = '''#!/bin/sh
case " $* " in
    *" --get "*) exec cat '%(get)s' ;;
    *" --set "*) echo 'Policy successfully set.' ;;
    *" --clear "*) ;;
    *) echo "dcgmi stand-in: unexpected arguments: $*" >&2; exit 2 ;;
esac
'''
# scontrol show node: slurmx-n2 answers with the captured idle node; any other name gets the captured "not found"
# answer (exit 1)
SCONTROL = '''#!/bin/sh
[ "$1 $2" = "show node" ] || { echo "scontrol stand-in: unexpected arguments: $*" >&2; exit 2; }
rc=0
for name in $(echo "$3" | tr , ' '); do
    if [ "$name" = slurmx-n2 ]; then cat '%(idle)s'; else sed "s/nosuch/$name/" '%(not_found)s'; rc=1; fi
done
exit $rc
'''
# the simulator's nvidia-smi and dcb as programs, each node with its own state under the temporary directory
SIMULATED = '''#!/bin/sh
export GPUOPS_SIM_ROOT='%(root)s' GPUOPS_SIM_PROFILE='%(profile)s' GPUOPS_SIM_STATE='%(state)s'
export GPUOPS_SIM_ALLOW_NONROOT=1 GPUOPS_SIM_REAL_DCB='%(root)s/usr/sbin/dcb'
exec '%(python)s' '%(program)s' "$@"
'''
# Debian 12's package tools on a node without the driver: non-free offers 535.261.03-1 of every package (the form
# of apt-cache madison's lines from a bookworm host), dpkg knows none, nothing is held, DKMS has no module
APT_CACHE = '''#!/bin/sh
[ "$1" = madison ] || { echo "apt-cache stand-in: unexpected arguments: $*" >&2; exit 100; }
echo " $2 | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages"
'''
DPKG_QUERY_NONE = '''#!/bin/sh
shift 2
for name in "$@"; do echo "dpkg-query: no packages found matching $name" >&2; done
exit 1
'''
APT_MARK = '''#!/bin/sh
[ "$1" = showhold ] || { echo "apt-mark stand-in: unexpected arguments: $*" >&2; exit 100; }
'''
DKMS = '''#!/bin/sh
[ "$1" = status ] || { echo "dkms stand-in: unexpected arguments: $*" >&2; exit 2; }
'''
# dpkg-query -W of a node with Debian 12's RDMA stack (rdma-core 44.0-2)
DPKG_QUERY_RDMA = '''#!/bin/sh
printf 'rdma-core\\t44.0-2\\tii \\nibverbs-providers\\t44.0-2\\tii \\n'
'''
# the running values of a node before the sysctl file: the kernel's defaults
PROC_SYS = {'net/core/rmem_max': '212992\n', 'kernel/numa_balancing': '1\n'}


def _write(path, text, mode=0o644):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def _program(tmp, name, text, **values):
    return _write(os.path.join(tmp, 'bin', name), text % values, 0o755)


def _simulated(tmp, name, program, profile=None):
    root = os.path.join(tmp, 'sim', name)
    os.makedirs(root)
    return _program(tmp, name, SIMULATED, root=root, profile=profile or os.path.join(root, 'no-profile'),
                    state=os.path.join(root, 'state.json'), python=sys.executable,
                    program=os.path.join(REPO, 'simulator', program))


def _bundle(tmp, name, profile, fault_list=()):
    tree = profile_tree(profile)
    if fault_list:
        from simulator import faults
        for fault, params in fault_list:
            faults.FAULTS[fault].apply(tree, **params)
    path = os.path.join(tmp, 'bundles', name)
    bundle.write_tree(tree, path)
    return path


def _defaults(role):
    with open(os.path.join(REPO, 'roles', role, 'defaults', 'main.yml')) as handle:
        return yaml.safe_load(handle)


def _inputs(tmp):
    """The extra variables of the playbook: paths under ``tmp``, facts and variables; writes what they name."""
    from ansible_collections.gpuops.node.plugins.module_utils.topology.gather import gather_bundle
    bundles = {
        'a100': _bundle(tmp, 'a100', A100),
        'a100_nvlink_down': _bundle(tmp, 'a100-nvlink-down', A100, [('nvlink_down', {'gpu': 3})]),
        'corrupted_topo': _bundle(tmp, 'corrupted-topo', A100),
        'pcie': _bundle(tmp, 'pcie', PCIE),
    }
    shutil.copyfile(real_path(CORRUPTED_TOPO), os.path.join(bundles['corrupted_topo'], 'nvidia-smi-topo-m.txt'))
    with open(os.path.join(profile_path(A100), 'profile.yml')) as handle:
        a100_expected = bundle.load_yaml(handle.read())['expected_node_class']
    # the RoCE node's sysfs where the simulator's dcb finds its netdevs; rdma_settings writes into it
    rdma_node = os.path.join(tmp, 'sim', 'rdma-node')
    bundle.write_tree(profile_tree(PCIE), os.path.join(rdma_node, 'usr', 'share', 'gpuops-sim'))
    for rel, value in PROC_SYS.items():
        _write(os.path.join(tmp, 'sysctl-node', 'proc', 'sys', rel), value)
    os.makedirs(os.path.join(tmp, 'sysctl-node', 'etc', 'sysctl.d'))
    os.makedirs(os.path.join(tmp, 'prometheus', 'rules'))
    _write(os.path.join(tmp, 'var', 'lib', 'kubelet', 'config.yaml'), real_text(KUBEADM))
    for name, text in (('apt-cache', APT_CACHE), ('dpkg-query', DPKG_QUERY_NONE), ('apt-mark', APT_MARK),
                       ('dkms', DKMS)):
        _program(tmp, os.path.join('debian-driverless', name), text)
    _program(tmp, os.path.join('debian-rdma', 'dpkg-query'), DPKG_QUERY_RDMA)
    debian = nvidia_packaging.driver_packages('Debian', 'distro', None)
    return {
        'tmp': tmp,
        'real': REAL,
        'bundles': bundles,
        'a100_expected': a100_expected,
        'facts': {'a100': gather_bundle(bundles['a100']), 'pcie': gather_bundle(bundles['pcie'])},
        'standins': {
            'dcgmi': _program(tmp, 'dcgmi', DCGMI, get=real_path(POLICY_GROUP1)),
            'scontrol': _program(tmp, 'scontrol', SCONTROL, idle=real_path(SLURM_IDLE),
                                 not_found=real_path(SLURM_NOT_FOUND)),
            'nvidia_smi_a100': _simulated(tmp, 'nvidia-smi-a100', 'nvidia_smi', bundles['a100']),
            'nvidia_smi_h100': _simulated(tmp, 'nvidia-smi-h100', 'nvidia_smi', _bundle(tmp, 'h100', H100)),
            'dcb': _program(tmp, 'dcb', SIMULATED, root=rdma_node, profile='', state='', python=sys.executable,
                            program=os.path.join(REPO, 'simulator', 'sim_dcb.py')),
            'package_tools': os.path.join(tmp, 'bin', 'debian-driverless'),
            'rdma_package_tools': os.path.join(tmp, 'bin', 'debian-rdma'),
        },
        'rdma_sysfs_root': os.path.join(rdma_node, 'usr', 'share', 'gpuops-sim', 'sys'),
        'kubeadm_config': yaml.safe_load(real_text(KUBEADM)),
        'defaults': dict((role, _defaults(role)) for role in ('kubelet_topology', 'nccl', 'rdma')),
        # what the dcgm role passes dcgm_plan (repository.yml)
        'dcgm_variables': dict((k, v) for k, v in _defaults('dcgm').items()
                               if k in ('dcgm_version', 'dcgm_exporter_version', 'dcgm_exporter', 'dcgm_profiling')),
        'mps_variables': dict(_defaults('mps'), mps_gpu_sets=[{'name': 'train', 'devices': [0, 1, 2, 3]}],
                              mps_active_thread_percentage=25),
        'debian_driver_packages': debian['packages'],
        'rack_records': [
            {'host': 'gpu-a01', 'rack': 'rack_a', 'node_class': 'dgx_a100', 'phase': 'done',
             'pre_check': {'passed': True, 'failures': []}},
            {'host': 'gpu-a02', 'rack': 'rack_a', 'node_class': 'dgx_a100', 'phase': 'done',
             'pre_check': {'passed': False, 'failures': [
                 {'check': 'nic_rate', 'subject': 'mlx5_2/1', 'expected': 200, 'actual': 100,
                  'message': 'mlx5_2/1 runs at 100 Gb/s, expected at least 200'}]}},
        ],
    }


@pytest.fixture(scope='module')
def played(tmp_path_factory):
    """``(results by task name, the run's standard error, tmp)`` of one ansible-playbook run of the playbook."""
    exe = ansible_playbook()
    tmp = str(tmp_path_factory.mktemp('modules-through-ansible'))
    inputs = _write(os.path.join(tmp, 'inputs.json'), json.dumps(_inputs(tmp)))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_DEPRECATION_WARNINGS='1', ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_PIPELINING='1',
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_HOME=os.path.join(tmp, 'ansible-home'),
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, 'ansible-local'),
               ANSIBLE_REMOTE_TEMP=os.path.join(tmp, 'ansible-remote'))
    proc = subprocess.run([exe, '-i', 'localhost,', PLAYBOOK, '-e', '@' + inputs,
                           '-e', 'ansible_python_interpreter=' + sys.executable],
                          cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    output = json.loads(proc.stdout)
    results = {}
    for play in output['plays']:
        for task in play['tasks']:
            name = task['task']['name']
            assert name not in results, 'two tasks are named %r' % name
            results[name] = task['hosts']['localhost']
    return results, proc.stderr, tmp


def status(result):
    """What Ansible shows for the task: failed, changed or ok."""
    if result.get('failed'):
        return 'failed'
    return 'changed' if result.get('changed') else 'ok'


def _get(result, path):
    """``result['a']['b'][0]`` for the path ``a.b.0``."""
    value = result
    for part in path.split('.'):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


# For each module: (status, the start of msg or None when the module returns no msg, {field path: value}) of its
# task that passes, then of its task that fails. {tmp} and {real} in a string are the run's directories.
EXPECTED = {
    'dcgm_alert_rules': (
        ('changed', None, {'alerts.6': 'GpuSmUtilisationQuota', 'checked': False,
                           'changed_files': ['{tmp}/prometheus/rules/gpuops-dcgm.yml',
                                             '{tmp}/prometheus/rules/gpuops-dcgm.tests.yml']}),
        ('failed', 'dcgm_alert_thresholds.gpu_util_percent: a percentage below 100 (no rate can exceed 100 %), '
                   'got 120; dcgm_alert_thresholds.sm_utilization: unknown threshold', {})),
    'dcgm_diag': (
        ('ok', 'dcgmi diag output {real}/%s: 9 tests Pass on 1 GPU' % DIAG_PASS,
         {'verdict': 'Pass', 'passed': True, 'ran': True, 'failures': []}),
        ('failed', 'dcgmi diag output {real}/%s: Fail: GPU Memory failed on GPU 0, 1, 2' % DIAG_FAIL,
         {'verdict': 'Fail', 'passed': False, 'failures.0.subject': 'GPU 0'})),
    'dcgm_plan': (
        ('ok', None, {'packages.dcgm': ['datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda12'],
                      'packages.exporter': 'datacenter-gpu-manager-exporter', 'package_manager.name': 'dnf',
                      'pins': {}}),
        ('failed', "gpuops_dcgm_enabled: gpuops.node.dcgm has no DCGM packages for the OS family 'Suse'",
         {'packages': None})),
    'dcgm_policy': (
        ('ok', None, {'policy': {'conditions': {'dbe': True}, 'action': 'reset', 'validation': 'short'}}),
        ('failed', 'dcgmi policy -g 0: the policy read back differs from the one set: condition dbe; action = reset; '
                   'validation = short', {'after.conditions': {'pcie': True}})),
    'gpu_compute_mode': (
        ('changed', None, {'changes': [{'index': 0, 'pci_bus_id': '00000000:07:00.0', 'before': 'Default',
                                        'after': 'Exclusive_Process'}],
                           'gpus': {'00000000:07:00.0': 'Exclusive_Process'}}),
        ('failed', 'modes: no GPU at 0000:ff:00.0 (nvidia-smi lists 00000000:07:00.0, ', {})),
    'gpu_topology_check': (
        ('ok', '0 failure(s), 0 regression(s)', {'passed': True, 'failures': []}),
        ('failed', '8 failure(s), 0 regression(s): GPU0 to GPU3 is SYS, expected NV12; ',
         {'passed': False, 'failures.6.subject': 'GPU3-GPU7', 'failures.7.check': 'nvlink_active_links'})),
    'gpu_topology_facts': (
        ('ok', None, {'ansible_facts.gpu_topology.gpu_count': 8, 'ansible_facts.gpu_topology.driver_loaded': True}),
        ('failed', 'could not read: nvidia-smi topo -m: line 7', {})),
    'kubelet_config': (
        ('changed', None, {'changed_keys': ['cpuManagerPolicy', 'reservedSystemCPUs'],
                           'config.cpuManagerPolicy': 'static', 'path': '{tmp}/var/lib/kubelet/config.yaml'}),
        ('failed', 'no kubelet configuration at {tmp}/var/lib/kubelet/absent.yaml: kubeadm writes it when the node '
                   'joins', {})),
    'kubelet_topology_plan': (
        ('ok', None, {'restart': True, 'remove_state_files': ['cpu_manager_state'],
                      'settings.cpuManagerPolicy': 'static', 'settings.reservedSystemCPUs': '16-17'}),
        ('failed', 'kubelet_topology_cpu_manager_policy_options: nope is not a CPU manager policy option (known: '
                   'full-pcpus-only', {})),
    'mig_layout': (
        ('changed', None, {'gpus.0.mig_mode': 'Enabled', 'gpus.0.instances': {'1g.10gb': 3, '4g.40gb': 1},
                           'gpus.1.mig_mode': 'Disabled', 'reboot_required': False}),
        ('failed', 'mig-configs.bad[0].mig-devices.1g.99gb: GPU 1 (NVIDIA H100 80GB HBM3) has no GPU-instance profile '
                   '1g.99gb; its profiles: 1g.10gb, ', {})),
    'mps_plan': (
        ('ok', None, {'sets.0.name': 'train', 'compute_modes': {
            '00000000:07:00.0': 'Exclusive_Process', '00000000:0F:00.0': 'Exclusive_Process',
            '00000000:47:00.0': 'Exclusive_Process', '00000000:4E:00.0': 'Exclusive_Process'}}),
        ('failed', 'mps_active_thread_percentage: 150 is not a percentage from 1 to 100 (or null for all threads); '
                   'mps_pipe_dir: /tmp/mps is under /tmp, ', {})),
    'nccl_plan': (
        ('ok', None, {'ib_hca': ['mlx5_0:1', 'mlx5_1:1', 'mlx5_2:1', 'mlx5_3:1', 'mlx5_6:1', 'mlx5_7:1', 'mlx5_8:1',
                                 'mlx5_9:1'], 'errors': []}),
        ('failed', 'nccl_test_min_busbw_gbps must be a bus bandwidth in GB/s, 0 or more (null: no threshold), got -1',
         {'conf_lines': []})),
    'nccl_test': (
        ('ok', 'nccl-tests: 470.73 GB/s at 2147483648 bytes >= 400: passed', {'passed': True, 'busbw_gbps': 470.73}),
        ('failed', 'nccl-tests: 470.73 GB/s at 2147483648 bytes < 500: failed: bus bandwidth 470.73 GB/s at '
                   '2147483648 bytes is below 500 GB/s', {'passed': False})),
    'nvidia_driver_plan': (
        ('ok', None, {'plan.kernel_module': 'proprietary', 'plan.action': 'install',
                      'plan.target_version': '535.261.03'}),
        ('failed', 'nvidia_driver_kernel_module: open kernel modules do not support the Pascal GPUs on this node (they '
                   'need Turing or later); use proprietary', {'variable': 'nvidia_driver_kernel_module'})),
    'rack_report': (
        ('changed', None, {'statuses': {'gpu-a01': 'validated', 'gpu-a02': 'failed'}, 'written': True,
                           'paths.json': '{tmp}/reports/rack-report.json'}),
        ('failed', "invalid records: host gpu-a03: status 'fine' is not one of provisioned, validated, ", {})),
    'rdma_plan': (
        ('ok', None, {'stack.installed': 'distro', 'stack.evidence': ['rdma-core 44.0-2'],
                      'roce': [{'hca': 'rocep1s0f0', 'netdev': 'enp1s0f0np0', 'ports': [1]}]}),
        ('failed', 'rdma_roce_priority must be an integer from 0 to 7, got 8', {})),
    'rdma_settings': (
        ('changed', None, {'changes': ['rocep1s0f0 enp1s0f0np0 pfc', 'rocep1s0f0 enp1s0f0np0 dscp-prio',
                                       'rocep1s0f0 enp1s0f0np0 rdma_cm/ports/1/default_roce_tos'],
                           'tool': 'dcb', 'unmanaged': [], 'reboot_required': False}),
        ('failed', 'rocep1s0f0: network interface enp2s0f0np0 is not in '
                   '{tmp}/sim/rdma-node/usr/share/gpuops-sim/sys/class/net', {})),
    'slurm_node': (
        ('ok', None, {'nodes.slurmx-n2.found': True, 'nodes.slurmx-n2.in_service': True, 'drained': []}),
        ('failed', 'Slurm does not know the node gpu-x99 (scontrol show node: Node gpu-x99 not found)', {'rc': 1})),
    'sysctl_conf': (
        ('changed', None, {'path': '/etc/sysctl.d/90-gpuops.conf', 'file_changed': True,
                           'live': {'kernel.numa_balancing': '0', 'net.core.rmem_max': '268435456'}}),
        ('failed', 'sysctl_settings: net.core.no_such_key has no {tmp}/sysctl-node/proc/sys/net/core/no_such_key on '
                   'this node', {})),
}


def _expand(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', tmp).replace('{real}', REAL)
    if isinstance(value, list):
        return [_expand(v, tmp) for v in value]
    if isinstance(value, dict):
        return dict((k, _expand(v, tmp)) for k, v in value.items())
    return value


def test_every_module_has_a_passing_and_a_failing_task(played):
    assert sorted(EXPECTED) == MODULES
    assert sorted(played[0]) == sorted('%s %s' % (m, way) for m in MODULES for way in ('passes', 'fails'))


def test_no_deprecation_was_printed(played):
    assert '[DEPRECATION WARNING]' not in played[1], played[1]


def test_the_passing_tasks_wrote_where_their_parameters_say(played):
    """The files and values the passing tasks changed, read back under the temporary directory."""
    tmp = played[2]

    def read(rel):
        with open(os.path.join(tmp, rel)) as handle:
            return handle.read()
    assert '- alert: GpuSmUtilisationQuota' in read('prometheus/rules/gpuops-dcgm.yml')
    assert 'cpuManagerPolicy: static\n' in read('var/lib/kubelet/config.yaml')
    assert "NVIDIA_SMI='%s/bin/nvidia-smi-h100'" % tmp in read('usr/local/libexec/gpuops-mig-layout')
    assert read('sim/rdma-node/usr/share/gpuops-sim/sys/kernel/config/rdma_cm/rocep1s0f0/ports/1/'
                'default_roce_tos') == '106\n'
    assert "run dcb pfc set dev 'enp1s0f0np0' prio-pfc all:off 3:on\n" in read('usr/local/libexec/gpuops-rdma-settings')
    assert json.loads(read('reports/rack-report.json'))['summary']['hosts'] == 2
    assert 'net.core.rmem_max = 268435456\n' in read('sysctl-node/etc/sysctl.d/90-gpuops.conf')
    assert read('sysctl-node/proc/sys/net/core/rmem_max') == '268435456\n'


@pytest.mark.parametrize('module', MODULES)
def test_module_through_ansible(played, module):
    for way, (wanted, msg, fields) in zip(('passes', 'fails'), EXPECTED[module]):
        name = '%s %s' % (module, way)
        result = played[0][name]
        shown = dict((k, v) for k, v in result.items() if k not in ('invocation', 'ansible_facts', 'gpu_topology'))
        assert status(result) == wanted, (name, result.get('msg'), 'rc: %r' % (result.get('rc', 'absent'),), shown)
        if msg is not None:
            assert result.get('msg', '').startswith(_expand(msg, played[2])), (name, result.get('msg'))
        for path, value in fields.items():
            assert _get(result, path) == _expand(value, played[2]), (name, path, shown)
        assert 'deprecations' not in result, (name, result.get('deprecations'))
