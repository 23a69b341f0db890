# -*- coding: utf-8 -*-
"""The AWX job templates of awx/job_templates.yml against the playbooks and the argument specs: every survey
question names an option of the spec its playbook validates (roles/gpuops for the playbooks, roles/<name> for a
role's template), with a matching type, a default the spec accepts and bounds the role accepts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import jinja2
import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpuops.node.plugins.module_utils.plans import mps, nccl, rdma

from ansible_cli import site_packages
from repo_paths import REPO as ROOT

TYPES = ('text', 'textarea', 'password', 'integer', 'float', 'multiplechoice', 'multiselect')


def _load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


DATA = _load('awx', 'job_templates.yml')
TEMPLATES = DATA['controller_templates']
IDS = [t['name'] for t in TEMPLATES]


def _spec(role):
    return _load('roles', role, 'meta', 'argument_specs.yml')['argument_specs']['main']['options']


def _spec_of(template):
    return _spec(template.get('job_tags') or 'gpuops')


def _questions(template):
    return template['survey_spec']['spec']


def _all_questions():
    return [(t, q) for t in TEMPLATES for q in _questions(t)]


QIDS = ['%s: %s' % (t['name'], q['variable']) for t, q in _all_questions()]


def _accepted(options, name, value):
    """The errors of the spec's option ``name`` on ``value``, as the role's argument spec validation finds them."""
    result = ArgumentSpecValidator({name: options[name]}).validate({name: value})
    return [str(e) for e in result.errors]


def _sent(question, value):
    """The value as AWX sends it: a choice as a string, an integer as an int, a float as a number."""
    if question['type'] == 'integer':
        return int(value)
    if question['type'] == 'float':
        return float(value)
    if question['type'] == 'multiselect':
        return [str(v) for v in value]
    return str(value)


# The ranges the roles and playbooks enforce beyond their spec, each with the file that enforces it and a check that
# runs that enforcement (the role's own validation function, or the expression of its assert), True when accepted.
def _spec_values(role, **values):
    merged = dict((n, o.get('default')) for n, o in _spec(role).items())
    merged.update(values)
    return merged


def _expression(path, expression, variable):
    """Evaluate ``expression`` (it must appear in ``path``) with ``variable`` set, as the assert does."""
    with open(os.path.join(ROOT, path)) as handle:
        assert expression in handle.read(), '%s no longer has %r' % (path, expression)
    env = jinja2.Environment()
    env.filters['int'] = int
    env.filters['string'] = str
    env.tests['match'] = lambda value, pattern: re.match(pattern, value) is not None

    def check(value):
        return env.compile_expression(expression)(**{variable: value}) is True
    return check


def _mps(value):
    return not mps.check_values(_spec_values('mps', mps_active_thread_percentage=value))


def _rdma(name):
    def check(value):
        return not [e for e in rdma.validate(_spec_values('rdma', **{name: value})) if e.startswith(name)]
    return check


def _nccl(name):
    def check(value):
        errors, _warnings = nccl.validate(_spec_values('nccl', **{name: value}))
        return not [e for e in errors if e.startswith(name)]
    return check


def _spec_choices(role, name):
    def check(value):
        return not _accepted(_spec(role), name, value)
    return check


_CAPTURE_CHECK = _expression('playbooks/capture.yml', "__gpuops_command_timeout | int > 0", '__gpuops_command_timeout')


def _batches(value):
    from ansible_collections.gpuops.node.plugins.module_utils.plans import gpuops as plans_gpuops
    try:
        plans_gpuops.rack_batches([4], value)
    except plans_gpuops.SchedulerError:
        return False
    return True


_DCGM_TIMEOUT = _expression('roles/dcgm/tasks/preflight.yml', 'dcgm_diag_timeout > 0', 'dcgm_diag_timeout')

# (role or gpuops, variable): (low, high or None, file that enforces it, check)
RANGES = {
    ('mps', 'mps_active_thread_percentage'): (1, 100, 'plugins/module_utils/plans/mps.py', _mps),
    ('rdma', 'rdma_roce_priority'): (0, 7, 'plugins/module_utils/plans/rdma.py', _rdma('rdma_roce_priority')),
    ('rdma', 'rdma_roce_cnp_priority'): (0, 7, 'plugins/module_utils/plans/rdma.py', _rdma('rdma_roce_cnp_priority')),
    ('nccl', 'nccl_cuda_device_max_connections'): (0, 32, 'plugins/module_utils/plans/nccl.py',
                                                   _nccl('nccl_cuda_device_max_connections')),
    ('nccl', 'nccl_test_min_busbw_gbps'): (0, None, 'plugins/module_utils/plans/nccl.py',
                                           _nccl('nccl_test_min_busbw_gbps')),
    ('nccl', 'nccl_test_timeout'): (1, None, 'plugins/module_utils/plans/nccl.py', _nccl('nccl_test_timeout')),
    ('dcgm', 'dcgm_diag_level'): (0, 4, 'roles/dcgm/meta/argument_specs.yml',
                                  _spec_choices('dcgm', 'dcgm_diag_level')),
    ('dcgm', 'dcgm_diag_timeout'): (1, None, 'roles/dcgm/tasks/preflight.yml', _DCGM_TIMEOUT),
    ('gpuops', 'gpuops_command_timeout'): (1, None, 'playbooks/capture.yml', _CAPTURE_CHECK),
    ('gpuops', 'gpuops_max_unavailable_per_rack'): (0, None, 'plugins/module_utils/plans/gpuops.py', _batches),
}


def test_template_names_are_unique():
    assert len(IDS) == len(set(IDS))


def test_top_level_names():
    assert DATA['awx_inventory'] == 'gpuops'
    assert DATA['awx_project'] == 'gpuops.node'
    assert DATA['awx_execution_environment'] == 'gpuops-node-ee'
    assert not [k for k in DATA if k.startswith('gpuops_')]


def test_every_role_has_a_template():
    roles = set(t['job_tags'] for t in TEMPLATES if t.get('job_tags'))
    assert roles == set(d for d in os.listdir(os.path.join(ROOT, 'roles')) if d != 'gpuops')


@pytest.mark.parametrize('template', TEMPLATES, ids=IDS)
def test_template(template):
    assert os.path.isfile(os.path.join(ROOT, template['playbook'])), template['playbook']
    assert template['job_type'] in ('run', 'check')
    assert template['inventory'] == '{{ awx_inventory }}'
    assert template['project'] == '{{ awx_project }}'
    assert template['execution_environment'] == '{{ awx_execution_environment }}'
    assert template['allow_simultaneous'] is False
    assert template['survey_enabled'] is True
    assert template['ask_limit_on_launch'] is True
    if template.get('job_tags'):
        role = template['job_tags']
        assert template['playbook'] == 'site.yml'
        assert os.path.isfile(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')), role
        assert template['name'] == 'gpuops.node role %s' % role
        assert template['ask_job_type_on_launch'] is True
    survey = template['survey_spec']
    assert survey['name'] and survey['description'] and survey['spec']
    variables = [q['variable'] for q in survey['spec']]
    assert len(variables) == len(set(variables)), variables
    # short enough to read at launch: the rest is inventory
    assert len(variables) <= 8


def test_job_template_options_are_the_modules():
    path = os.path.join((site_packages() or [''])[0], 'ansible_collections', 'awx', 'awx', 'plugins', 'modules',
                        'job_template.py')
    if not os.path.isfile(path):
        pytest.skip('awx.awx is not installed')
    with open(path) as handle:
        source = handle.read()
    options = yaml.safe_load(source.split("DOCUMENTATION = '''")[1].split("'''")[0])['options']
    for template in TEMPLATES:
        assert set(template) <= set(options), set(template) - set(options)


@pytest.mark.parametrize('template,question', _all_questions(), ids=QIDS)
def test_question(template, question):
    options = _spec_of(template)
    name = question['variable']
    assert name in options, '%s is not an option of %s' % (name, template.get('job_tags') or 'gpuops')
    option = options[name]
    kind = question['type']
    assert kind in TYPES
    assert question['question_name'] and question['question_description']
    assert isinstance(question['required'], bool)
    spec_type = option.get('type', 'str')
    if spec_type == 'bool':
        assert kind == 'multiplechoice' and question['choices'] == ['true', 'false']
    elif spec_type == 'int':
        assert kind == 'integer'
        if option.get('choices'):
            assert set(range(question['min'], question['max'] + 1)) <= set(option['choices'])
    elif spec_type == 'float':
        assert kind in ('float', 'integer')
    elif spec_type in ('str', 'path') and option.get('choices'):
        assert kind == 'multiplechoice'
        assert question['choices'] and set(question['choices']) <= set(option['choices'])
    elif spec_type in ('str', 'path'):
        assert kind in ('text', 'textarea')
    else:
        pytest.fail('%s: no survey type for spec type %s' % (name, spec_type))
    if kind in ('multiplechoice', 'multiselect'):
        for choice in question['choices']:
            assert not _accepted(options, name, _sent(question, choice)), choice
    if 'default' in question:
        assert not _accepted(options, name, _sent(question, question['default']))
        if kind in ('multiplechoice',):
            assert question['default'] in question['choices']
    elif not question['required']:
        # AWX sends nothing for an unanswered integer, float or choice, but may send '' or null for text
        assert kind in ('integer', 'float', 'multiplechoice', 'multiselect'), name
    if kind in ('integer', 'float'):
        low, high = question['min'], question['max']
        assert isinstance(low, (int, float)) and isinstance(high, (int, float)) and low <= high
        for bound in (low, high):
            assert not _accepted(options, name, _sent(question, bound)), bound
        if 'default' in question:
            assert low <= question['default'] <= high
        enforced = RANGES.get((template.get('job_tags') or 'gpuops', name))
        if enforced:
            r_low, r_high, _path, check = enforced
            assert low >= r_low and (r_high is None or high <= r_high)
            assert check(_sent(question, low)) and check(_sent(question, high))
    if kind in ('text', 'textarea'):
        assert 0 <= question['min'] <= question['max']
        if 'default' in question:
            assert question['min'] <= len(question['default']) <= question['max']


@pytest.mark.parametrize('key', sorted(RANGES), ids=['%s.%s' % k for k in sorted(RANGES)])
def test_enforced_range(key):
    low, high, path, check = RANGES[key]
    assert os.path.isfile(os.path.join(ROOT, path))
    assert check(low) and not check(low - 1)
    if high is not None:
        assert check(high) and not check(high + 1)
    if isinstance(low, float) or key[1].endswith('_gbps'):
        assert not check(low - 0.5)


# The bool questions send "true" or "false" (strings): every read of such a variable must go through `| bool` or
# be the whole value of a module option of type bool, and no role may hand it to a module in a dict of its variables.
_JINJA = re.compile(r'{{(.*?)}}|{%(.*?)%}', re.S)
_CONDITIONS = ('when', 'failed_when', 'changed_when', 'until', 'that')


def _module_bool_options(module):
    if not module.startswith('gpuops.node.'):
        return set()
    path = os.path.join(ROOT, 'plugins', 'modules', module.split('.')[-1] + '.py')
    with open(path) as handle:
        source = handle.read()
    doc = yaml.safe_load(re.search(r"DOCUMENTATION = r?'''(.*?)'''", source, re.S).group(1))
    return set(n for n, o in doc.get('options', {}).items() if o.get('type') == 'bool')


def _expressions(node, module=None, key=None):
    """(expression, module, option, whole value) of every Jinja expression in a parsed task file."""
    if isinstance(node, dict):
        task_module = next((k for k in node if isinstance(k, str) and re.match(r'^[a-z_]+\.[a-z_]+\.[a-z_]+$', k)),
                           None)
        for k, v in node.items():
            if k in _CONDITIONS:
                for cond in v if isinstance(v, list) else [v]:
                    if isinstance(cond, str):
                        yield cond, None, None, False
                continue
            if k == task_module and isinstance(v, dict):
                for option, value in v.items():
                    yield from _expressions(value, task_module, option)
                continue
            yield from _expressions(v, module, key if module else None)
    elif isinstance(node, list):
        for v in node:
            yield from _expressions(v, module, key)
    elif isinstance(node, str):
        whole = re.match(r'^\s*{{\s*([a-z_0-9]+)\s*}}\s*$', node)
        for m in _JINJA.finditer(node):
            yield m.group(1) or m.group(2), module, key, bool(whole)


def _role_files(role):
    if role == 'gpuops':
        dirs = [os.path.join(ROOT, 'roles', 'gpuops', d) for d in ('tasks', 'vars', 'handlers')]
        dirs.append(os.path.join(ROOT, 'playbooks'))
        files = [os.path.join(ROOT, 'site.yml')]
    else:
        dirs = [os.path.join(ROOT, 'roles', role, d) for d in ('tasks', 'vars', 'handlers')]
        files = []
    for d in dirs:
        if os.path.isdir(d):
            files.extend(os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith('.yml'))
    return files


BOOL_QUESTIONS = [(t, q) for t, q in _all_questions() if q['type'] == 'multiplechoice'
                  and q['choices'] == ['true', 'false']]


@pytest.mark.parametrize('template,question', BOOL_QUESTIONS,
                         ids=['%s: %s' % (t['name'], q['variable']) for t, q in BOOL_QUESTIONS])
def test_bool_question_reads_through_bool(template, question):
    role = template.get('job_tags') or 'gpuops'
    name = question['variable']
    use = re.compile(r'(?<![\w.])%s(?!\w)' % re.escape(name))
    found = 0
    for path in _role_files(role):
        with open(path) as handle:
            text = handle.read()
        for varnames in re.findall(r"varnames',\s*'([^']+)'", text):
            try:
                pattern = re.compile(varnames)
            except re.error:
                continue  # the start of a pattern built in Jinja (the roles' <name>_changed), not a literal one
            assert not pattern.match(name), '%s hands %s to a module as a string' % (path, name)
        for expression, module, option, whole in _expressions(yaml.safe_load(text)):
            for m in use.finditer(expression):
                found += 1
                if re.match(r'\s*\|\s*bool\b', expression[m.end():]):
                    continue
                assert whole and option in _module_bool_options(module or ''), \
                    '%s: %s is read without | bool in %r' % (os.path.relpath(path, ROOT), name, expression)
    assert found, '%s is not read by %s' % (name, role)
