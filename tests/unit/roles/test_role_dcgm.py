# -*- coding: utf-8 -*-
"""gpuops.node.dcgm (its contract with the other roles: test_role_contract.py): the defaults pass the policy's
validation and pin a DCGM and exporter pair the test repository has, the exporter's counters carry every
dcgm-exporter metric the alert rules read, and its expressions render as meant through Ansible's templar."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from role_files import load, options, templar

ROLE = 'dcgm'


def _load(*parts):
    return load(ROLE, *parts)


def _options():
    return options(ROLE)


def _cuda_repo():
    import build_cuda_repo  # tests/repo  pylint: disable=import-error,import-outside-toplevel
    return build_cuda_repo


def test_the_default_policy_is_valid_and_the_diag_levels_are_the_modules():
    from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_policy
    normalized, errors = dcgm_policy.validate(_load('defaults', 'main.yml')['dcgm_policy'])
    assert errors == []
    assert normalized['conditions']
    spec = _options()['dcgm_policy']['options']
    assert tuple(spec['action']['choices']) == dcgm_policy.ACTIONS
    assert tuple(spec['validation']['choices']) == dcgm_policy.VALIDATIONS
    assert _options()['dcgm_diag_level']['choices'] == [0, 1, 2, 3, 4]


def test_the_default_versions_are_a_pair_the_test_repository_has():
    repo = _cuda_repo()
    defaults = _load('defaults', 'main.yml')
    release = [r for r in repo.DCGM if r['upstream'] == defaults['dcgm_version']]
    assert release, 'dcgm_version %s is not in tests/repo/build_cuda_repo.py' % defaults['dcgm_version']
    dcgm_half, exporter_half = defaults['dcgm_exporter_version'].split('-', 1)
    assert dcgm_half == defaults['dcgm_version']
    assert release[0]['exporter'] == exporter_half + '-1'
    # the newest DCGM 4 of the repository
    newest = max(repo.DCGM, key=lambda r: tuple(int(p) for p in r['upstream'].split('.')))
    assert release[0] is newest


def test_the_counters_carry_every_dcgm_exporter_metric_of_the_alerts():
    from ansible_collections.gpuops.node.plugins.module_utils.config import dcgm_alerts
    repo = _cuda_repo()
    exporter = _load('defaults', 'main.yml')['dcgm_exporter_version'].split('-', 1)[1] + '-1'
    defaults = set(line.split(',')[0].strip() for line in repo.counters(exporter).splitlines()
                   if line.strip() and not line.lstrip().startswith('#'))
    health = set(row['field'] for row in _load('vars', 'main.yml')['__dcgm_exporter_health_counters'])
    for alert in dcgm_alerts.ALERTS:
        if not alert['exporter'].startswith('dcgm-exporter'):
            continue
        for metric in alert['metrics']:
            if alert.get('when') == 'sm_util_max_percent':
                continue  # added with the quota (vars/main.yml __dcgm_exporter_quota_counters)
            assert metric in defaults | health, '%s (%s) is not in the counters' % (metric, alert['name'])


def test_the_watch_rows_regex_reads_dcgmis_table():
    pattern = _load('vars', 'main.yml')['__dcgm_watch_row_re']
    # DcgmiOutputTree(18, 70) rows of `dcgmi health -f` (dcgmi/Health.cpp GetWatches, dcgmi/DcgmiOutput.cpp rowStr)
    rows = ['| %-15s | %-66s |' % (system, state) for system, state in
            (('PCIe', 'On'), ('NVLINK', 'On'), ('Memory', 'On'), ('SM', 'Off'), ('NvSwitch NF', 'On'))]
    found = [re.match(pattern, row).groups() for row in rows]
    assert found == [('PCIe', 'On'), ('NVLINK', 'On'), ('Memory', 'On'), ('SM', 'Off'), ('NvSwitch NF', 'On')]
    assert re.match(pattern, 'Health monitor systems report') is None


def _templar(**extra):
    return templar(ROLE, **extra)


def test_the_watches_read_from_dcgmis_table_and_wanted_from_the_flags():
    rows = ['Health monitor systems report', '+' + '-' * 17 + '+' + '-' * 68 + '+']
    states = (('PCIe', 'On'), ('NVLINK', 'Off'), ('SM', 'Off'), ('NvSwitch NF', 'On'))
    rows += ['| %-15s | %-66s |' % state for state in states]
    render = _templar(__dcgm_watches_read={'stdout_lines': rows + [rows[1]]}, dcgm_health_watches='pt')
    assert render('{{ __dcgm_watch_rows }}') == [['PCIe', 'On'], ['NVLINK', 'Off'], ['SM', 'Off'],
                                                 ['NvSwitch NF', 'On']]
    assert render('{{ __dcgm_watches_on }}') == ['NvSwitch NF', 'PCIe']
    assert render('{{ __dcgm_watches_wanted }}') == ['PCIe', 'Power', 'Thermal']
    assert _templar(__dcgm_watches_read={'stdout_lines': ['Health monitor systems for group 0: a']})(
        '{{ __dcgm_watch_rows }}') == []


def test_the_simulated_watches_read_as_the_role_wants_them():
    from simulator import sim_dcgmi  # pylint: disable=import-outside-toplevel
    for letters in ('a', 'pt', 'mi'):
        lines = sim_dcgmi.render_watches(letters).splitlines()
        render = _templar(__dcgm_watches_read={'stdout_lines': lines}, dcgm_health_watches=letters)
        assert render('{{ __dcgm_watches_on }}') == render('{{ __dcgm_watches_wanted }}'), letters
        assert len(render('{{ __dcgm_watch_rows }}')) == 10


def test_the_upstream_version_of_dcgm_version():
    render = _templar()
    assert render('{{ __dcgm_upstream_version }}') == '4.6.0'
    assert _templar(dcgm_version='1:4.4.1-1')('{{ __dcgm_upstream_version }}') == '4.4.1'
