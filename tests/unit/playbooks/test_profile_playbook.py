# -*- coding: utf-8 -*-
"""playbooks/profile.yml on the controller (local connection) against capture bundles of the simulator's profiles:
it writes the class file from good nodes, and writes nothing from a bad golden node, from nodes that disagree, over
a file it did not write, or in check mode."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_cli import ansible_playbook, collections_path
from repo_paths import REPO
from simhelpers import profile_path
from simulator import bundle

PLAYBOOK = os.path.join(REPO, 'playbooks', 'profile.yml')

H100 = 'h100-sxm-8gpu-ib'
A100 = 'a100-sxm-8gpu-ib'


def _bundle(tmp, host, profile, port_state=None, rate=None):
    """A capture bundle of a simulator profile; ``port_state``/``rate``: a transform of every compute rail's sysfs
    (mlx5_0's state file only for ``port_state``, every port's rate file for ``rate``)."""
    path = os.path.join(tmp, 'bundles', host)
    bundle.write_tree(bundle.read_profile(profile_path(profile)), path)
    ib = os.path.join(path, 'sys', 'class', 'infiniband')
    if port_state:
        with open(os.path.join(ib, 'mlx5_0', 'ports', '1', 'state'), 'w') as handle:
            handle.write(port_state + '\n')
    if rate:
        for nic in os.listdir(ib):
            with open(os.path.join(ib, nic, 'ports', '1', 'rate'), 'w') as handle:
                handle.write(rate + '\n')
    return path


def _run(tmp, hosts, *args, **kwargs):
    group = kwargs.get('group', 'dgx_h100')
    exe = ansible_playbook()
    inventory = os.path.join(tmp, 'inventory')
    os.makedirs(inventory, exist_ok=True)
    with open(os.path.join(inventory, 'hosts'), 'w') as handle:
        for host, bundle_dir in hosts.items():
            handle.write('%s ansible_connection=local ansible_python_interpreter=%s gpuops_bundle_dir=%s\n'
                         % (host, sys.executable, bundle_dir))
        handle.write('[%s]\n%s\n' % (group, '\n'.join(hosts)))
    # PWD as a shell sets it: a relative gpuops_profile_dest is taken from it
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, 'ansible-local'), ANSIBLE_RETRY_FILES_ENABLED='0', PWD=tmp)
    return subprocess.run([exe, '-i', inventory, PLAYBOOK] + list(args), cwd=tmp, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=180, env=env, check=False)


def _written(tmp, name='dgx_h100'):
    return os.path.join(tmp, 'inventory', 'group_vars', name + '.yml')


def test_two_good_nodes_give_the_class_file(tmp_path):
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', H100), 'gpu-a02': _bundle(tmp, 'gpu-a02', H100)}
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100', '-e', 'gpuops_profile_nic_names=glob')
    assert run.returncode == 0, run.stdout
    with open(_written(tmp)) as handle:
        text = handle.read()
    header = ' '.join(line.lstrip('# ') for line in text.splitlines()[1:4])
    assert re.match(r'Node class dgx_h100: profile derived by playbooks/profile.yml from gpu-a01, gpu-a02 on '
                    r'\d{4}-\d\d-\d\d \(options driver_version: branch, gpu_model: exact, '
                    r'nic_names: glob\)', header), header
    data = yaml.safe_load(text)
    assert data['gpuops_node_class'] == 'dgx_h100'
    assert data['gpuops_node_class_profile']['nic_names'] == ['mlx5_[0-25-8]', 'mlx5_11']
    # a second run writes the same profile (the header's time aside) and replaces its own file
    again = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100', '-e', 'gpuops_profile_nic_names=glob')
    assert again.returncode == 0, again.stdout
    with open(_written(tmp)) as handle:
        assert yaml.safe_load(handle) == data


def test_a_bad_golden_node_is_refused_and_nothing_is_written(tmp_path):
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', H100), 'gpu-a02': _bundle(tmp, 'gpu-a02', H100, port_state='1: DOWN')}
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100')
    assert run.returncode == 2, run.stdout
    assert 'gpu-a02 fails the profile derived from it, so it is no golden node for dgx_h100 (fix it or derive ' \
        'from another node): mlx5_0/1 is DOWN (LinkUp), expected ACTIVE' in run.stdout
    assert not os.path.exists(os.path.dirname(_written(tmp)))


def test_nodes_that_disagree_are_listed_and_nothing_is_written(tmp_path):
    """One node's rails at HDR (200 Gb/s) instead of NDR: each passes its own profile, the class is undecided."""
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', H100), 'gpu-a02': _bundle(tmp, 'gpu-a02', H100,
                                                                          rate='200 Gb/sec (4X HDR)')}
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100')
    assert run.returncode == 2, run.stdout
    assert 'No profile written: the hosts differ on 1 key(s), pick the truth before rolling out (fix the odd ' \
        'node, or derive from the right ones with --limit): nic_rate_min_gbps: gpu-a01=400, gpu-a02=200' in run.stdout
    assert not os.path.exists(os.path.dirname(_written(tmp)))


def test_a_file_profile_yml_did_not_write_is_kept(tmp_path):
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', A100)}
    os.makedirs(os.path.dirname(_written(tmp, 'dgx_a100')))
    with open(_written(tmp, 'dgx_a100'), 'w') as handle:
        handle.write('nccl_test_min_busbw_gbps: 200\n')
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_a100', group='dgx_a100')
    assert run.returncode == 2, run.stdout
    assert 'exists and was not written by playbooks/profile.yml' in run.stdout
    with open(_written(tmp, 'dgx_a100')) as handle:
        assert handle.read() == 'nccl_test_min_busbw_gbps: 200\n'


def test_the_class_directory_and_a_relative_destination(tmp_path):
    """With group_vars/<class>/ present the file goes into it (Ansible reads one of <class>.yml and <class>/);
    a relative gpuops_profile_dest is taken from the current directory."""
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', A100)}
    directory = os.path.join(tmp, 'inventory', 'group_vars', 'dgx_a100')
    os.makedirs(directory)
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_a100', group='dgx_a100')
    assert run.returncode == 0, run.stdout
    assert os.path.exists(os.path.join(directory, 'dgx_a100.yml'))
    assert not os.path.exists(_written(tmp, 'dgx_a100'))
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_a100', '-e', 'gpuops_profile_dest=out/classes',
               group='dgx_a100')
    assert run.returncode == 0, run.stdout
    assert os.path.exists(os.path.join(tmp, 'out', 'classes', 'dgx_a100.yml'))


def test_check_mode_shows_the_file_and_writes_nothing(tmp_path):
    tmp = str(tmp_path)
    run = _run(tmp, {'gpu-a01': _bundle(tmp, 'gpu-a01', A100)}, '-e', 'gpuops_profile_class=dgx_a100', '--check',
               '--diff', group='dgx_a100')
    assert run.returncode == 0, run.stdout
    assert '+  nvlink_relation: "NV12"  # every GPU pair of the matrix' in run.stdout
    assert 'Would write %s' % _written(tmp, 'dgx_a100') in run.stdout
    assert not os.path.exists(_written(tmp, 'dgx_a100'))


@pytest.mark.parametrize('args, message', [
    ((), 'gpuops_profile_class is required (-e gpuops_profile_class=<node class>)'),
    (('-e', 'gpuops_profile_class=9x'), 'gpuops_profile_class must be the name of a node class group'),
    (('-e', 'gpuops_profile_class=all'), 'gpuops_profile_class must be the name of a node class group'),
    (('-e', 'gpuops_profile_class=dgx_h10'), 'the inventory has no node in a group dgx_h10 (gpuops_profile_class)'),
    (('-e', 'gpuops_profile_class=c', '-e', 'gpuops_profile_nic_names=all'),
     'value of gpuops_profile_nic_names must be one of: exact, glob, got: all'),
    (('-e', 'gpuops_profile_class=c', '-e', 'gpuops_profile_driver_version=latest'),
     'value of gpuops_profile_driver_version must be one of: branch, exact, none, got: latest'),
])
def test_bad_variables_are_refused_before_the_node_is_read(tmp_path, args, message):
    tmp = str(tmp_path)
    run = _run(tmp, {'gpu-a01': os.path.join(tmp, 'no-bundle')}, *args)
    assert run.returncode == 2, run.stdout
    assert message in run.stdout
    assert 'Derive a node class profile' not in run.stdout


def test_an_edited_class_file_is_replaced_only_when_asked(tmp_path):
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01', H100)}
    assert _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100').returncode == 0
    with open(_written(tmp)) as handle:
        edited = handle.read() + '  nic_link_downed_max: 5  # site policy\n'
    with open(_written(tmp), 'w') as handle:
        handle.write(edited)
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100')
    assert run.returncode == 2, run.stdout
    assert 'was written by playbooks/profile.yml and changed since (a review\'s edits would be lost)' in run.stdout
    assert 'gpuops_profile_replace=true' in run.stdout
    with open(_written(tmp)) as handle:
        assert handle.read() == edited
    run = _run(tmp, hosts, '-e', 'gpuops_profile_class=dgx_h100', '-e', 'gpuops_profile_replace=true')
    assert run.returncode == 0, run.stdout
    with open(_written(tmp)) as handle:
        assert 'nic_link_downed_max: 5' not in handle.read()


def test_a_host_outside_the_class_group_is_refused(tmp_path):
    tmp = str(tmp_path)
    run = _run(tmp, {'gpu-a01': _bundle(tmp, 'gpu-a01', H100)}, '-e', 'gpuops_profile_class=dgx_h100',
               '-e', 'gpuops_profile_hosts=all', '-e', 'gpuops_profile_dest=' + tmp, group='dgx_a100')
    assert run.returncode == 2, run.stdout
    assert 'the inventory has no node in a group dgx_h100 (gpuops_profile_class)' in run.stdout


def test_a_host_list_inventory_has_no_class_group(tmp_path):
    """-i host, has no groups (and no group_vars): refused before the node is read."""
    tmp = str(tmp_path)
    bundle = _bundle(tmp, 'gpu-a01', H100)
    exe = ansible_playbook()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', PWD=tmp)
    base = [exe, '-i', 'gpu-a01,', PLAYBOOK, '-e', 'gpuops_profile_class=ungrouped_x', '-e',
            'ansible_connection=local', '-e', 'ansible_python_interpreter=' + sys.executable,
            '-e', 'gpuops_bundle_dir=' + bundle, '-e', 'gpuops_profile_hosts=all']
    run = subprocess.run(base, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         timeout=120, env=env, check=False)
    assert run.returncode == 2, run.stdout
    assert 'the inventory has no node in a group ungrouped_x' in run.stdout
