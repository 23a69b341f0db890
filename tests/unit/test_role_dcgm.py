# -*- coding: utf-8 -*-
"""gpuops.node.dcgm: its argument spec is its defaults, its README documents every variable, every OS vars file has
the same keys, the defaults pass the policy's validation and pin a DCGM and exporter pair the test repository has,
and the exporter's counters carry every dcgm-exporter metric the alert rules read."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'dcgm')


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def _options():
    return _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']


def _cuda_repo():
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'repo'))
    try:
        import build_cuda_repo  # pylint: disable=import-error
    finally:
        sys.path.pop(0)
    return build_cuda_repo


def test_defaults_are_the_spec_defaults():
    assert _load('defaults', 'main.yml') == dict((name, opt['default']) for name, opt in _options().items())


def test_every_variable_is_public_and_documented_in_the_readme():
    with open(os.path.join(ROLE, 'README.md')) as handle:
        readme = handle.read()
    for name, opt in _options().items():
        assert re.match(r'dcgm_[a-z0-9_]+\Z', name), name
        assert opt.get('description') and opt.get('type'), name
        row = re.search(r'^\| `%s` \| `([^`]*)` \|' % name, readme, re.M)
        assert row, name
        assert yaml.safe_load(row.group(1) or '""') == opt['default'], name
    rows = re.findall(r'^\| `(dcgm_[a-z0-9_]+)` \|', readme, re.M)
    assert sorted(rows) == sorted(_options()), 'README rows that are not variables'


def test_os_vars_have_the_same_keys():
    files = [f for f in glob.glob(os.path.join(ROLE, 'vars', '*.yml')) if os.path.basename(f) != 'main.yml']
    keys = None
    assert len(files) >= 3
    for path in files:
        data = _load('vars', os.path.basename(path))
        assert all(name.startswith('__dcgm_') for name in data), path
        keys = keys or sorted(data)
        assert sorted(data) == keys, path


def test_private_variables_are_prefixed():
    assert all(name.startswith('__dcgm_') for name in _load('vars', 'main.yml'))


def test_the_default_policy_is_valid_and_the_diag_levels_are_the_modules():
    from ansible_collections.gpuops.node.plugins.module_utils import dcgm_policy
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
    from ansible_collections.gpuops.node.plugins.module_utils import dcgm_alerts
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
    """An Ansible templar over the role's defaults and vars/main.yml (what the role's expressions see)."""
    template = pytest.importorskip('ansible.template')
    if not hasattr(template, 'trust_as_template'):
        pytest.skip('ansible-core without trust_as_template')
    from ansible.parsing.dataloader import DataLoader

    def trusted(value):
        return template.trust_as_template(value) if isinstance(value, str) else value

    variables = dict(_load('defaults', 'main.yml'))
    variables.update(_load('vars', 'main.yml'))
    variables.update(extra)
    variables = dict((name, trusted(value)) for name, value in variables.items())
    templar = template.Templar(loader=DataLoader(), variables=variables)
    return lambda expression: templar.template(template.trust_as_template(expression))


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
    import sys
    sys.path.insert(0, os.path.join(ROOT, 'simulator'))
    import sim_dcgmi
    for letters in ('a', 'pt', 'mi'):
        lines = sim_dcgmi.render_watches(letters).splitlines()
        render = _templar(__dcgm_watches_read={'stdout_lines': lines}, dcgm_health_watches=letters)
        assert render('{{ __dcgm_watches_on }}') == render('{{ __dcgm_watches_wanted }}'), letters
        assert len(render('{{ __dcgm_watch_rows }}')) == 10


def test_the_pins_follow_the_package_version_apt_offers():
    probe = {'results': [{'item': '1:4.2.3-1', 'rc': 100}, {'item': '1:4.2.3', 'rc': 0}]}
    render = _templar(dcgm_version='4.2.3', dcgm_exporter_version='4.2.3-4.1.3', dcgm_cuda_major=12,
                      __dcgm_version_probe=probe)
    assert render('{{ __dcgm_pins }}') == {'datacenter-gpu-manager-4-core': '1:4.2.3',
                                           'datacenter-gpu-manager-4-cuda12': '1:4.2.3',
                                           'datacenter-gpu-manager-exporter': '4.1.3-1'}
    render = _templar(dcgm_cuda_major=13, dcgm_profiling=True, dcgm_exporter=False)
    assert render('{{ __dcgm_pins }}') == dict((name, '1:4.4.1-1') for name in (
        'datacenter-gpu-manager-4-core', 'datacenter-gpu-manager-4-cuda13', 'datacenter-gpu-manager-4-proprietary',
        'datacenter-gpu-manager-4-proprietary-cuda13'))
    assert render('{{ __dcgm_upstream_version }}') == '4.4.1'
    assert _templar(dcgm_version='1:4.4.1-1')('{{ __dcgm_upstream_version }}') == '4.4.1'
