# -*- coding: utf-8 -*-
"""site.yml and validate.yml run by ansible-runner the way AWX runs a job: a private data directory with the
inventory, env/extravars and env/envvars, the project beside it, and the job's artifacts read back. The hosts are
capture bundles of the simulator's profiles read on this machine (local connection); the summary AWX shows as the
job's artifacts is what the playbooks publish with set_stats (``rack_report``)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import sys

import yaml

from ansible_cli import collections_path
from repo_paths import REPO as ROOT
from simhelpers import profile_path, profile_tree
from simulator import bundle

H100 = 'h100-sxm-8gpu-ib'


def _private_data_dir(tmp, hosts):
    """An AWX job's private data directory: inventory/hosts (racks and the node class), env/extravars,
    env/envvars; the project is this checkout."""
    pdd = os.path.join(tmp, 'pdd')
    os.makedirs(os.path.join(pdd, 'inventory'))
    os.makedirs(os.path.join(pdd, 'env'))
    with open(os.path.join(profile_path(H100), 'profile.yml')) as handle:
        profile = bundle.load_yaml(handle.read())['expected_node_class']
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'children': {
            'rack_a': {'hosts': dict((h, {'gpuops_bundle_dir': b}) for h, b in sorted(hosts.items()))},
            'dgx_h100': {'hosts': dict((h, None) for h in hosts),
                         'vars': {'gpuops_node_class': 'dgx_h100', 'gpuops_node_class_profile': profile}}}}}
    with open(os.path.join(pdd, 'inventory', 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)
    with open(os.path.join(pdd, 'env', 'extravars'), 'w') as handle:
        yaml.safe_dump({'gpuops_report_dir': os.path.join(pdd, 'reports')}, handle)
    with open(os.path.join(pdd, 'env', 'envvars'), 'w') as handle:
        yaml.safe_dump({'ANSIBLE_COLLECTIONS_PATH': collections_path(), 'ANSIBLE_NOCOLOR': '1',
                        'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', '')}, handle)
    return pdd


def _bundle(tmp, host, fault=None):
    from simulator import faults
    tree = profile_tree(H100)
    if fault:
        name, _sep, params = fault.partition(':')
        faults.FAULTS[name].apply(tree, **dict(p.split('=', 1) for p in params.split(',') if p))
    path = os.path.join(tmp, 'bundles', host)
    bundle.write_tree(tree, path)
    return path


def _run(pdd, playbook, ident):
    import ansible_runner   # tests/requirements.txt
    result = ansible_runner.run(private_data_dir=pdd, project_dir=ROOT, playbook=playbook, ident=ident,
                                quiet=True, settings={'suppress_ansible_output': True})
    stats = [e for e in result.events if e.get('event') == 'playbook_on_stats']
    return result, stats[-1]['event_data'] if stats else {}


def test_site_and_validate_through_ansible_runner(tmp_path):
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01'), 'gpu-a02': _bundle(tmp, 'gpu-a02', 'ib_port_down:nic=mlx5_6')}
    pdd = _private_data_dir(tmp, hosts)

    result, stats = _run(pdd, 'site.yml', 'site')
    assert result.status == 'successful' and result.rc == 0, result.stdout.read()
    artifacts = stats['artifact_data']['rack_report']
    assert artifacts['summary']['hosts'] == 2
    assert artifacts['statuses'] == {'gpu-a01': 'provisioned', 'gpu-a02': 'held_back'}
    assert artifacts['paths']['html'] == os.path.join(pdd, 'reports', 'rack-report.html')
    assert os.path.isfile(artifacts['paths']['json'])
    # the job's artifacts directory as AWX reads it
    job = os.path.join(pdd, 'artifacts', 'site')
    assert open(os.path.join(job, 'rc')).read().strip() == '0'
    assert open(os.path.join(job, 'status')).read().strip() == 'successful'
    assert os.listdir(os.path.join(job, 'job_events'))

    result, stats = _run(pdd, 'playbooks/validate.yml', 'validate')
    assert result.status == 'failed' and result.rc == 2
    artifacts = stats['artifact_data']['rack_report']
    assert artifacts['statuses'] == {'gpu-a01': 'validated', 'gpu-a02': 'failed'}
    assert 'mlx5_6/1 is DOWN' in artifacts['failing']['gpu-a02']
    record = json.load(open(os.path.join(pdd, 'reports', 'validate', 'gpu-a02.json')))
    assert [(f['check'], f['subject']) for f in record['pre_check']['failures']] == [('nic_port_state', 'mlx5_6/1')]


def test_slices_report_their_own_hosts_and_merge_into_one(tmp_path):
    """Two slices of one job (AWX job slicing: each slice's inventory holds its hosts; here --limit) each write a
    complete report of their hosts; playbooks/merge_reports.yml makes one report of both, drawings included."""
    tmp = str(tmp_path)
    hosts = {'gpu-a01': _bundle(tmp, 'gpu-a01'), 'gpu-a02': _bundle(tmp, 'gpu-a02', 'nvlink_down:gpu=3')}
    pdd = _private_data_dir(tmp, hosts)
    import ansible_runner
    reports = []
    for host in sorted(hosts):
        out = os.path.join(tmp, 'slice-' + host)
        with open(os.path.join(pdd, 'env', 'extravars'), 'w') as handle:
            yaml.safe_dump({'gpuops_report_dir': out}, handle)
        result = ansible_runner.run(private_data_dir=pdd, project_dir=ROOT, playbook='site.yml', ident=host,
                                    quiet=True, limit=host)
        assert result.rc == 0, result.stdout.read()
        doc = json.load(open(os.path.join(out, 'rack-report.json')))
        assert [h['host'] for r in doc['racks'] for h in r['hosts']] == [host]
        assert doc['summary']['not_started'] == 0
        reports.append(os.path.join(out, 'rack-report.json'))
    merged = os.path.join(tmp, 'merged')
    with open(os.path.join(pdd, 'env', 'extravars'), 'w') as handle:
        yaml.safe_dump({'gpuops_merge_reports': reports, 'gpuops_report_dir': merged}, handle)
    result = ansible_runner.run(private_data_dir=pdd, project_dir=ROOT, playbook='playbooks/merge_reports.yml',
                                ident='merge', quiet=True)
    # gpu-a02 was held back: the merged report says so, and a held-back host does not fail the run (as in site.yml)
    assert result.rc == 0, result.stdout.read()
    doc = json.load(open(os.path.join(merged, 'rack-report.json')))
    assert dict((h['host'], h['status']) for r in doc['racks'] for h in r['hosts']) == {
        'gpu-a01': 'provisioned', 'gpu-a02': 'held_back'}
    page = open(os.path.join(merged, 'rack-report.html')).read()
    assert page.count('<svg class="topology"') == 2
    assert 'data-name="GPU3" data-marked="true" data-checks="nvlink_active_links nvlink_relation"' in page
