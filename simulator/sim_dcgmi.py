# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the simulated DCGM host engine answers to ``dcgmi`` (simulator/sim_dcgm.py sends it the arguments).

Layouts of DCGM 4 (tests/fixtures/real/dcgmi/): ``diag`` text tables as DCGM 4.2.3 / 4.4.1 print them
(plugin names, per-GPU ``GPUn: Pass`` rows, 45-character wrapping), ``diag -j`` in the DCGM 4 JSON shape
(``DCGM Diagnostic`` / ``test_categories`` / per-entity ``results`` / ``test_summary``, jsoncpp's styled
writer), ``discovery -l``, ``health -s/-c [-j]``, ``policy --get/--set/--clear``, scaled to the profile's
GPUs. Marked APPROXIMATION where no capture shows the form. ``handle(root, argv) -> (rc, out, err)``.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

try:
    from . import nvidia_smi
    from . import sim_dcgm_core
except ImportError:  # the stand-in (simulator/sim_dcgm.py) run from the simulator's lib directory
    import nvidia_smi  # noqa: E402
    import sim_dcgm_core  # noqa: E402

USAGE = ('Usage: dcgmi [--host ADDR[:PORT]] <subsystem> ...\n'
         '  discovery -l\n'
         '  health [-g G] -s SYSTEMS | -c [-j]\n'
         '  policy [-g G] --get [-j] | --set ACTION,VALIDATION [-e] [-p] [-n] [-x] [-M N] [-T N] [-P N] | --clear\n'
         '  diag -r 1..4 [-j] [-i GPUS] [-v]\n'
         '(gpuops-sim stand-in: simulator/README.md, "DCGM")\n')

RC_BADPARAM = 254          # DCGM_ST_BADPARAM (-2)
RC_NVVS_ERROR = 226        # DCGM_ST_NVVS_ERROR (-30): dcgmi diag found a failure

# DCGM 4 plugins by level (category, test), in the order the categories print.
CATEGORIES = ('Deployment', 'Hardware', 'Integration', 'Stress')
LEVEL_TESTS = {
    1: (('Deployment', 'software'),),
    2: (('Hardware', 'memory'), ('Integration', 'pcie')),
    3: (('Hardware', 'diagnostic'), ('Stress', 'targeted_stress'), ('Stress', 'targeted_power'),
        ('Stress', 'memory_bandwidth')),
    4: (('Hardware', 'memtest'), ('Stress', 'pulse_test')),
}
# REAL failure message: DCGM 4.2.3
# (tests/fixtures/real/dcgmi/diag-r2-dcgm423-l40s-4gpu-pcie-FAIL-internal-error-k8s.txt)
FAIL_MESSAGE = ("There was an internal error during the test: 'A child process (152) exited with non-zero status 1' "
                "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics.")

# Policy conditions: key, dcgmi flag, label of `dcgmi policy --get` (the collection's table,
# plugins/module_utils/config/dcgm_policy.py CONDITIONS; a unit test keeps the two equal).
CONDITIONS = (
    ('dbe', '-e', 'Double-bit ECC errors'),
    ('pcie', '-p', 'PCI errors and replays'),
    ('max_pages', '-M', 'Max retired pages threshold'),
    ('thermal', '-T', 'Max temperature threshold'),
    ('power', '-P', 'Max power threshold'),
    ('nvlink', '-n', 'NVLink Errors'),
    ('xid', '-x', 'XID error detected.'),
)
ACTIONS = ('None', 'Reset GPU')
VALIDATIONS = ('None', 'System Validation (Short)', 'System Validation (Medium)', 'System Validation (Long)')
GROUP_ALL = 'DCGM_ALL_SUPPORTED_GPUS'
NOT_HOMOGENEOUS = u'**** Non-homogenous settings across group. Use with \u2013v flag to see details.'
HEALTH_SYSTEMS = {'a': 'all', 'p': 'PCIe', 'm': 'Memory', 'i': 'InfoROM', 't': 'Thermal and Power', 'n': 'NVLink',
                  'c': 'CPU', 'C': 'CPU core', 's': 'NVSwitch', 'd': 'Driver'}


# `dcgmi health -f` (DCGM 4 dcgmi/Health.cpp GetWatches): a tree of every system, On or Off, and the systems each
# `-s` letter turns on (dcgmi/CommandLineParser.cpp: `a` is every system but SM and Driver)
WATCH_SYSTEMS = ('PCIe', 'NVLINK', 'Memory', 'SM', 'InfoROM', 'Thermal', 'Power', 'Driver', 'NvSwitch NF',
                 'NvSwitch F')
WATCH_FLAGS = {'p': ('PCIe',), 'm': ('Memory',), 'i': ('InfoROM',), 't': ('Thermal', 'Power'), 'n': ('NVLINK',),
               's': ('NvSwitch NF', 'NvSwitch F'), 'd': ('Driver',),
               'a': tuple(w for w in WATCH_SYSTEMS if w not in ('SM', 'Driver'))}


def render_watches(letters, left=18, right=70):
    """What `dcgmi health -f` prints for the watches ``letters`` set: header, then one row per system."""
    on = set()
    for letter in letters or '':
        on.update(WATCH_FLAGS.get(letter, ()))
    hline = '+%s+%s+\n' % ('-' * (left - 1), '-' * (right - 2))
    out = [hline, '| %s|\n' % 'Health monitor systems report'.ljust(left + right - 3),
           '+%s+%s+\n' % ('=' * (left - 1), '=' * (right - 2))]
    out.extend('| %s | %s |\n' % (name.ljust(left - 3), ('On' if name in on else 'Off').ljust(right - 4))
               for name in WATCH_SYSTEMS)
    out.append(hline)
    return ''.join(out)


def handle(root, argv):
    """(rc, out, err) of one dcgmi command line (without --host)."""
    if not argv:
        return 1, USAGE, ''
    command, rest = argv[0], argv[1:]
    handler = {'discovery': discovery, 'health': health, 'policy': policy, 'diag': diag}.get(command)
    if handler is None:
        return 1, '', ('ERROR: Invalid subsystem %s. gpuops-sim simulates discovery, health, policy and diag.\n'
                       % command)
    try:
        return handler(root, rest)
    except sim_dcgm_core.DcgmError as exc:
        return RC_BADPARAM, 'Error: %s\n' % exc, ''


def _take(argv, flags_with_value, flags):
    opts, i = {}, 0
    while i < len(argv):
        arg = argv[i]
        if arg in flags_with_value:
            if i + 1 >= len(argv):
                raise sim_dcgm_core.DcgmError('option %s needs a value' % arg)
            opts[flags_with_value[arg]] = argv[i + 1]
            i += 2
            continue
        if arg in flags:
            opts[flags[arg]] = True
        else:
            raise sim_dcgm_core.DcgmError('unknown argument %s' % arg)
        i += 1
    return opts


# ---------------------------------------------------------------------------
# jsoncpp StyledWriter (what dcgmi -j prints: tabs, " : ", sorted keys, containers opened on their own line)
# ---------------------------------------------------------------------------

def styled(value, indent=''):
    inner = indent + '\t'
    if isinstance(value, dict):
        if not value:
            return '{}'
        items = ['%s%s : %s' % (inner, json.dumps(k), _styled_value(value[k], inner)) for k in sorted(value)]
        return '{\n' + ',\n'.join(items) + '\n' + indent + '}'
    if isinstance(value, list):
        if not value:
            return '[]'
        return '[\n' + ',\n'.join(inner + styled(v, inner) for v in value) + '\n' + indent + ']'
    return json.dumps(value)


def _styled_value(value, indent):
    if isinstance(value, (dict, list)) and value:
        return '\n' + indent + styled(value, indent)
    return styled(value, indent)


# ---------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------

def discovery(root, argv):
    opts = _take(argv, {}, {'-l': 'list', '--list': 'list', '-v': 'verbose'})
    if not opts.get('list'):
        raise sim_dcgm_core.DcgmError('gpuops-sim simulates dcgmi discovery -l only')
    rule = '+--------+----------------------------------------------------------------------+'
    found = sim_dcgm_core.gpus(root)
    lines = ['%d GPU%s found.' % (len(found), '' if len(found) == 1 else 's'), rule,
             '| GPU ID | Device Information                                                   |', rule]
    for gpu in found:
        lines += ['| %-6d | %-68s |' % (gpu['id'], 'Name: ' + gpu['name']),
                  '| %-6s | %-68s |' % ('', 'PCI Bus ID: ' + gpu['bus_id']),
                  '| %-6s | %-68s |' % ('', 'Device UUID: ' + gpu['uuid']), rule]
    lines += ['0 NvSwitches found.', '+-----------+', '| Switch ID |', '+-----------+', '+-----------+',
              '0 CPUs found.', rule, '| CPU ID | %-68s |' % 'Device Information',
              rule, rule]
    return 0, '\n'.join(lines) + '\n', ''


# ---------------------------------------------------------------------------
# health
# ---------------------------------------------------------------------------

def _group(opts):
    value = opts.get('group', '0')
    if not re.match(r'^\d+$', value):
        raise sim_dcgm_core.DcgmError('group id must be a number, got %s' % value)
    return value


def _ecc_failures(root, selected):
    """Health incidents the profile shows: uncorrectable ECC errors (memory system). APPROXIMATION of the text."""
    incidents = {}
    for gpu in sim_dcgm_core.gpus(root):
        if gpu['id'] not in selected:
            continue
        from_xml = [nvidia_smi.get_value(gpu['block'], path) for path in
                    ('ecc_errors/volatile/dram_uncorrectable', 'ecc_errors/volatile/double_bit/total')]
        count = sum(int(v) for v in from_xml if v and v.isdigit())
        if count:
            incidents[gpu['id']] = [{'system': 'Memory', 'health': 'Failure',
                                     'message': 'A volatile double-bit ECC error has occurred on GPU %d: %d errors.'
                                                % (gpu['id'], count)}]
    return incidents


def health(root, argv):
    opts = _take(argv, {'-g': 'group', '--group': 'group', '-s': 'set', '--set': 'set'},
                 {'-c': 'check', '--check': 'check', '-j': 'json', '--json': 'json', '-f': 'fetch',
                  '--fetch': 'fetch', '--clear': 'clear'})
    group = _group(opts)
    if opts.get('set') is not None:
        letters = opts['set']
        if not letters or set(letters) - set(HEALTH_SYSTEMS):
            raise sim_dcgm_core.DcgmError('invalid health systems %r (known: %s)' % (letters, ''.join(sorted(HEALTH_SYSTEMS))))
        with sim_dcgm_core.Locked(root) as state:
            state['groups'].setdefault(group, {})['health'] = letters
        return 0, 'Health monitor systems set successfully.\n', ''
    if opts.get('clear'):
        with sim_dcgm_core.Locked(root) as state:
            state['groups'].setdefault(group, {})['health'] = ''
        return 0, 'Health monitor systems set successfully.\n', ''
    if opts.get('fetch'):
        with sim_dcgm_core.Locked(root) as state:
            letters = state['groups'].get(group, {}).get('health', '')
        return 0, render_watches(letters), ''
    if not opts.get('check'):
        raise sim_dcgm_core.DcgmError('health needs -s, -c, -f or --clear')
    with sim_dcgm_core.Locked(root) as state:
        letters = state['groups'].get(group, {}).get('health', '')
    watched = 'a' in letters or 'm' in letters
    incidents = _ecc_failures(root, set(g['id'] for g in sim_dcgm_core.gpus(root))) if watched else {}
    overall = 'Failure' if incidents else 'Healthy'
    gpus_status = dict((gpu_id, {'status': found[0]['health'], 'incidents': found})
                       for gpu_id, found in incidents.items())
    return 0, render_health(gpus_status, overall, opts.get('json')), ''


def render_tree(headers, rows, left, right):
    """DCGM 4's output tree (DcgmiOutputTree(left, right)): ``rows`` are (level, label, value, overflow lines)."""
    hline = '+%s+%s+' % ('-' * (left - 1), '-' * (right - 2))
    lines = [hline] + ['| %s|' % h.ljust(left + right - 3) for h in headers]
    if headers:
        lines.append('+%s+%s+' % ('=' * (left - 1), '=' * (right - 2)))
    for level, label, value, overflow in rows:
        name = ('%s%s' % ('-> '.rjust(level * 3), label)) if level else label
        lines.append('| %s | %s |' % (name.ljust(left - 3), (value or '').ljust(right - 4)))
        lines += ['| %s | %s |' % (''.ljust(left - 3), line.ljust(right - 4)) for line in overflow]
    lines.append(hline)
    return '\n'.join(lines) + '\n'


def split_message(message, width=54):
    lines, line = [], ''
    for word in message.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + ' ' + word) if line else word
    return lines + ([line] if line else [])


def render_health(gpus_status, overall, as_json=False):
    """``dcgmi health -c`` in DCGM 4's tree (28/60) or ``-j``; ``gpus_status`` {id: {status, incidents}}."""
    def label(incident):
        return incident['system'] if incident['system'] == 'Driver' else '%s system' % incident['system']
    if as_json:
        body = {'Overall Health': {'value': overall}}
        if gpus_status:
            body['GPU'] = {'children': dict((str(gpu), {'value': st['status'], 'children': {'Errors': {'children': dict(
                (label(i), {'value': i['health'], 'overflow': split_message(i['message'])})
                for i in st['incidents'])}}}) for gpu, st in gpus_status.items())}
        return styled({'header': ['Health Monitor Report'], 'body': body}) + '\n'
    rows = [(0, 'Overall Health', overall, [])]
    if gpus_status:
        rows.append((0, 'GPU', '', []))
        for gpu in sorted(gpus_status):
            rows += [(1, str(gpu), gpus_status[gpu]['status'], []), (2, 'Errors', '', [])]
            rows += [(3, label(i), i['health'], split_message(i['message'])) for i in gpus_status[gpu]['incidents']]
    return render_tree(['Health Monitor Report'], rows, 28, 60)


# ---------------------------------------------------------------------------
# policy
# ---------------------------------------------------------------------------

def _int_option(value, flag):
    if not re.match(r'^\d+$', value or ''):
        raise sim_dcgm_core.DcgmError('%s needs a number, got %s' % (flag, value))
    return int(value)


def policy(root, argv):
    flags = dict((flag, key) for key, flag, _label in CONDITIONS if flag not in ('-M', '-T', '-P'))
    flags.update({'--get': 'get', '--clear': 'clear', '-j': 'json', '--json': 'json', '-v': 'verbose'})
    valued = {'-g': 'group', '--group': 'group', '--set': 'set', '-M': 'max_pages', '-T': 'thermal', '-P': 'power'}
    opts = _take(argv, valued, flags)
    group = _group(opts)
    if opts.get('set') is not None:
        match = re.match(r'^([01]),([0-3])$', opts['set'])
        if not match:
            raise sim_dcgm_core.DcgmError('--set needs ACTION,VALIDATION (action 0-1, validation 0-3), got %s' % opts['set'])
        conditions = {}
        for key, flag, _label in CONDITIONS:
            if key in opts:
                conditions[key] = _int_option(opts[key], flag) if flag in ('-M', '-T', '-P') else True
        if not conditions:
            raise sim_dcgm_core.DcgmError('no policy condition given (-e, -p, -n, -x, -M, -T, -P)')
        with sim_dcgm_core.Locked(root) as state:
            state['groups'].setdefault(group, {})['policy'] = {
                'conditions': conditions, 'action': int(match.group(1)), 'validation': int(match.group(2))}
        return 0, 'Policy successfully set.\n', ''
    if opts.get('clear'):
        with sim_dcgm_core.Locked(root) as state:
            state['groups'].setdefault(group, {}).pop('policy', None)
        return 0, 'Policy successfully cleared.\n', ''
    if not opts.get('get'):
        raise sim_dcgm_core.DcgmError('policy needs --get, --set or --clear')
    with sim_dcgm_core.Locked(root) as state:
        current = state['groups'].get(group, {}).get('policy') or {'conditions': {}, 'action': 0, 'validation': 0}
    return 0, render_policy(current, opts.get('json'), group), ''


def policy_values(current):
    """[(field, [values])] of `dcgmi policy --get` for a stored policy."""
    conditions = []
    for key, _flag, label in CONDITIONS:
        value = current['conditions'].get(key)
        if value is True:
            conditions.append(label)
        elif value is not None and value is not False:
            conditions.append('%s - %d' % (label, value))
    return [('Violation conditions', conditions or ['None']), ('Isolation mode', ['Manual']),
            ('Action on violation', [ACTIONS[current['action']]]),
            ('Validation after action', [VALIDATIONS[current['validation']]]),
            ('Validation failure action', ['None'])]


def render_policy(current, as_json=False, group='0'):
    """DCGM 4's `dcgmi policy -g G --get`: the tree (30/50) with both headers, and the closing remark."""
    title = GROUP_ALL if str(group) == '0' else 'group%s' % group
    values = policy_values(current)
    if as_json:
        body = {}
        for field, vals in values:
            body[field] = dict([('value', vals[0])] + ([('overflow', vals[1:])] if vals[1:] else []))
        document = styled({'header': ['Policy Information', title], 'body': body})
        return 'Policy information\n%s\n%s\n' % (document, NOT_HOMOGENEOUS)
    rows = [(0, field, vals[0], vals[1:]) for field, vals in values]
    return 'Policy information\n' + render_tree(['Policy Information', title], rows, 30, 50) + NOT_HOMOGENEOUS + '\n'


# ---------------------------------------------------------------------------
# diag
# ---------------------------------------------------------------------------

def level_tests(level):
    tests = []
    for number in range(1, level + 1):
        tests.extend(LEVEL_TESTS[number])
    return sorted(tests, key=lambda t: CATEGORIES.index(t[0]))


def default_fail_test(level):
    """The test dcgm_diag_fail hits without ``test``: memory from level 2 on, software at level 1."""
    return 'memory' if level >= 2 else 'software'


def run_diag(root, level, selected):
    """[{'category', 'name', 'status', 'warnings': [str], 'gpus': [(id, status)]}] for the chosen GPUs."""
    fails = {}
    for fault in sim_dcgm_core.diag_failures(root):
        fails.setdefault(fault.get('test') or default_fail_test(level), set()).add(int(fault.get('gpu', 1)))
    results = []
    for category, name in level_tests(level):
        bad = sorted(fails.get(name, set()) & set(selected))
        results.append({'category': category, 'name': name, 'status': 'Fail' if bad else 'Pass',
                        'warnings': [FAIL_MESSAGE for _gpu in bad],
                        'gpus': [(gpu, 'Fail' if gpu in bad else 'Pass') for gpu in selected]})
    return results


def _chunks(text, width=45):
    return [text[i:i + width] for i in range(0, len(text), width)] or ['']


def _section(name, ends='+'):
    return ends + ('-----  %s  ' % name).ljust(27, '-') + '+' + '-' * 48 + ends


def render_diag_text(version, driver_version, device_ids, results):
    rule = '+---------------------------+------------------------------------------------+'
    lines = ['Successfully ran diagnostic for group.', rule,
             '| Diagnostic                | Result                                         |',
             '+===========================+================================================+',
             _section('Metadata', '|'),
             '| %-25s | %-46s |' % ('DCGM Version', version),
             '| %-25s | %-46s |' % ('Driver Version Detected', driver_version)]
    ids = ', '.join(device_ids)
    lines += ['| %-25s | %-46s |' % ('GPU Device IDs Detected' if i == 0 else '', part)
              for i, part in enumerate([ids] if len(ids) <= 46 else _chunks(ids))]
    category = None
    for test in results:
        if test['category'] != category:
            category = test['category']
            lines.append(_section(category, '|' if category == 'Deployment' else '+'))
        lines.append('| %-25s | %-46s |' % (test['name'], test['status']))
        for warning in test['warnings']:
            lines += ['| %-25s | %-46s |' % ('Warning' if i == 0 else '', part)
                      for i, part in enumerate(_chunks(warning))]
        lines += ['| %-25s | %-46s |' % ('', 'GPU%d: %s' % (gpu, status)) for gpu, status in test['gpus']]
    lines.append(rule)
    return '\n'.join(lines) + '\n'


def render_diag_json(version, driver_version, device_ids, results):
    categories = []
    for name in CATEGORIES:
        tests = []
        for test in (t for t in results if t['category'] == name):
            entries = []
            bad = [gpu for gpu, status in test['gpus'] if status == 'Fail']
            for gpu, status in test['gpus']:
                entry = {'entity_group': 'GPU', 'entity_group_id': 1, 'entity_id': gpu, 'status': status}
                if status == 'Fail':
                    entry['warnings'] = [{'warning': test['warnings'][bad.index(gpu)]}]
                entries.append(entry)
            tests.append({'name': test['name'], 'results': entries, 'test_summary': {'status': test['status']}})
        if tests:
            categories.append({'category': name, 'tests': tests})
    document = {'DCGM Diagnostic': {'test_categories': categories},
                'metadata': {'DCGM Version': version, 'Driver Version Detected': driver_version,
                             'GPU Device IDs Detected': device_ids}}
    return styled(document) + '\n'


def diag(root, argv):
    opts = _take(argv, {'-r': 'level', '--run': 'level', '-i': 'gpus', '--gpuList': 'gpus', '-g': 'group',
                        '--group': 'group', '-p': 'params', '--parameters': 'params'},
                 {'-j': 'json', '--json': 'json', '-v': 'verbose', '--verbose': 'verbose', '--fail-early': 'fail_early',
                  '-F': 'fail_early'})
    level = opts.get('level')
    aliases = {'short': '1', 'medium': '2', 'long': '3', 'xlong': '4'}
    level = aliases.get(level, level)
    if level not in ('1', '2', '3', '4'):
        raise sim_dcgm_core.DcgmError('gpuops-sim simulates diag -r 1..4 (short, medium, long, xlong), got %s' % level)
    state = sim_dcgm_core.driver(root)
    if not state['loaded']:
        return RC_NVVS_ERROR, 'Error: Unable to complete diagnostic for group 0. Return: (-30) %s\n' % (
            state['reason'] or 'NVML not loaded'), ''
    found = sim_dcgm_core.gpus(root)
    selected = [g['id'] for g in found]
    if opts.get('gpus'):
        try:
            selected = sorted(set(int(x) for x in opts['gpus'].split(',') if x.strip()))
        except ValueError:
            raise sim_dcgm_core.DcgmError('-i needs a comma-separated list of GPU ids, got %s' % opts['gpus'])
        unknown = set(selected) - set(g['id'] for g in found)
        if unknown:
            raise sim_dcgm_core.DcgmError('no GPU %s on this node' % ', '.join(str(u) for u in sorted(unknown)))
    results = run_diag(root, int(level), selected)
    device_ids = [g['device_id'] for g in found if g['id'] in selected]
    render = render_diag_json if opts.get('json') else render_diag_text
    out = render(sim_dcgm_core.dcgm_version(root), state['version'], device_ids, results)
    return (RC_NVVS_ERROR if any(t['status'] == 'Fail' for t in results) else 0), out, ''
