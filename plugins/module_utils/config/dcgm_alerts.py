# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Prometheus alert rules of ``gpuops.node.dcgm``: one table (``ALERTS``), the thresholds it reads
(``THRESHOLDS``, the variable ``dcgm_alert_thresholds``), and what is generated from it: the rules file
(``render_rules``), the ``promtool test rules`` file that proves every alert fires on a synthetic series above its
threshold and stays quiet below it (``render_tests``), and the README's alerts table (``alerts_markdown``).

Metrics and where they come from:

- ``DCGM_FI_*``: NVIDIA dcgm-exporter, which names each metric after its DCGM field. ``DCGM_FI_DEV_GPU_UTIL`` and
  ``DCGM_FI_DEV_XID_ERRORS`` are in the exporter's ``etc/default-counters.csv``; ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL``
  and ``DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL`` are commented out there, and
  ``DCGM_FI_DEV_ROW_REMAP_PENDING`` (DCGM field 396) is not listed: the counters file must add them;
  ``DCGM_FI_PROF_SM_ACTIVE`` (a ratio 0..1, commented out in ``etc/dcp-metrics-included.csv``) needs DCGM's
  profiling module. ``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding the last XID the GPU reported.
- ``node_infiniband_*``: prometheus/node_exporter's infiniband collector. No exporter counts retransmitted packets
  of native InfiniBand; the HCA counts what causes a retransmission in the mlx5 driver's ``retrans_q_cnts``
  (``hw_counters/packet_seq_err``: a NAK sequence error, the responder asks for a resend;
  ``hw_counters/local_ack_timeout_err``: the requester's ACK timer expired and it resends), on InfiniBand and RoCE
  ports alike. node_exporter exports them since 1.11.0 as ``node_infiniband_packet_sequence_errors_total`` and
  ``node_infiniband_local_ack_timeout_errors_total``; the rate of retransmissions is their sum over
  ``node_infiniband_port_packets_transmitted_total`` (``counters/port_xmit_packets``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

VARIABLE = 'dcgm_alert_thresholds'

# XIDs that mean trouble with the GPU rather than with an application (NVIDIA's Xid catalog, "Analyzing Xid
# Errors with the Xid Catalog": the immediate action is a GPU reset, a node reboot or a hardware check, not
# "restart the application"): 48 double-bit ECC error, 63 ECC page retirement or row remapping recorded,
# 64 ECC page retirement or row remapping failed, 74 NVLink error, 79 GPU has fallen off the bus, 92 high
# single-bit ECC error rate, 94 contained ECC error, 95 uncontained ECC error, 119 GSP RPC timeout, 120 GSP error.
TROUBLE_XIDS = [48, 63, 64, 74, 79, 92, 94, 95, 119, 120]

THRESHOLDS = {
    'gpu_util_percent': 95,
    'gpu_util_for': '5m',
    'nvlink_crc_per_hour': 10,
    'ib_retrans_percent': 0.1,
    'ecc_uncorrectable': 0,
    'row_remap_pending': 0,
    'xid_codes': list(TROUBLE_XIDS),
    'sm_util_max_percent': None,
}

# What each threshold is: 'percent' (0 <= x < 100), 'count' (>= 0), 'duration' (a Prometheus duration),
# 'xids' (a list of XID codes), with the text the README shows.
THRESHOLD_KINDS = {
    'gpu_util_percent': ('percent', 'GPU utilisation (%) above which GpuUtilisationHigh fires'),
    'gpu_util_for': ('duration', 'how long the GPU or SM utilisation must stay above its threshold'),
    'nvlink_crc_per_hour': ('count', 'NVLink flow-control CRC errors per GPU in the last hour'),
    'ib_retrans_percent': ('percent', 'InfiniBand/RoCE retransmissions per transmitted packet (%)'),
    'ecc_uncorrectable': ('count', 'uncorrectable (double-bit) ECC errors since the driver loaded'),
    'row_remap_pending': ('count', 'pending row remaps (DCGM reports 0 or 1)'),
    'xid_codes': ('xids', 'the XIDs that fire GpuXidError'),
    'sm_util_max_percent': ('percent', "a site's SM-utilisation quota (%); no rule when null"),
}

DCGM_SERIES = {'gpu': '0', 'UUID': 'GPU-00000000-0000-0000-0000-000000000000', 'device': 'nvidia0',
               'modelName': 'NVIDIA H100 80GB HBM3', 'Hostname': 'node01', 'instance': 'node01:9400',
               'job': 'dcgm'}
IB_SERIES = {'device': 'mlx5_0', 'port': '1', 'instance': 'node01:9100', 'job': 'node'}

# (braces doubled: the annotations go through str.format with the thresholds)
GPU = '{{{{ $labels.instance }}}} GPU {{{{ $labels.gpu }}}}'
PORT = '{{{{ $labels.instance }}}} {{{{ $labels.device }}}} port {{{{ $labels.port }}}}'

# One entry per alert. 'expr' is a template filled from the thresholds; 'for' is a duration or a threshold key;
# 'when' names the threshold that must be set (not null, not empty) for the rule to exist; 'fires' and
# 'quiet' give the synthetic series of the promtool tests (see _series below).
ALERTS = [
    {'name': 'GpuUtilisationHigh', 'severity': 'warning', 'threshold': 'gpu_util_percent', 'for': 'gpu_util_for',
     'exporter': 'dcgm-exporter', 'metrics': ['DCGM_FI_DEV_GPU_UTIL'],
     'expr': 'DCGM_FI_DEV_GPU_UTIL > {gpu_util_percent}',
     'fires_when': 'GPU utilisation above {gpu_util_percent} % for {gpu_util_for}',
     'summary': 'GPU utilisation above {gpu_util_percent} %% on %s' % GPU,
     'description': '%s has been more than {gpu_util_percent} %% busy for {gpu_util_for}.' % GPU,
     'kind': 'gauge_percent'},
    {'name': 'NvlinkCrcErrors', 'severity': 'warning', 'threshold': 'nvlink_crc_per_hour', 'for': '0m',
     'exporter': 'dcgm-exporter', 'metrics': ['DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL'],
     'expr': 'increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[1h]) > {nvlink_crc_per_hour}',
     'fires_when': 'more than {nvlink_crc_per_hour} NVLink CRC errors in an hour',
     'summary': 'NVLink CRC errors on %s' % GPU,
     'description': '%s counted more than {nvlink_crc_per_hour} NVLink flow-control CRC errors in the last hour: '
                    'check the NVLink connections (nvidia-smi nvlink -e).' % GPU,
     'kind': 'counter_per_hour'},
    {'name': 'InfinibandRetransmissions', 'severity': 'warning', 'threshold': 'ib_retrans_percent', 'for': '5m',
     'exporter': 'node_exporter >= 1.11.0 (infiniband collector)',
     'metrics': ['node_infiniband_packet_sequence_errors_total', 'node_infiniband_local_ack_timeout_errors_total',
                 'node_infiniband_port_packets_transmitted_total'],
     'expr': '100 * (rate(node_infiniband_packet_sequence_errors_total[5m])'
             ' + rate(node_infiniband_local_ack_timeout_errors_total[5m]))'
             ' / rate(node_infiniband_port_packets_transmitted_total[5m]) > {ib_retrans_percent}',
     'fires_when': 'retransmissions above {ib_retrans_percent} % of the packets sent, for 5m',
     'summary': 'InfiniBand retransmissions on %s' % PORT,
     'description': '%s retransmits more than {ib_retrans_percent} %% of the packets it sends (NAK sequence '
                    'errors and ACK timeouts): check the cable, the switch port and congestion control.' % PORT,
     'kind': 'ratio_percent'},
    {'name': 'GpuEccUncorrectable', 'severity': 'critical', 'threshold': 'ecc_uncorrectable', 'for': '0m',
     'exporter': 'dcgm-exporter', 'metrics': ['DCGM_FI_DEV_ECC_DBE_VOL_TOTAL'],
     'expr': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > {ecc_uncorrectable}',
     'fires_when': 'more than {ecc_uncorrectable} uncorrectable ECC errors since the driver loaded',
     'summary': 'Uncorrectable ECC errors on %s' % GPU,
     'description': '%s reported more than {ecc_uncorrectable} uncorrectable (double-bit) ECC errors since the '
                    'driver loaded: drain the node and reset the GPU.' % GPU,
     'kind': 'gauge_count'},
    {'name': 'GpuRowRemapPending', 'severity': 'warning', 'threshold': 'row_remap_pending', 'for': '0m',
     'exporter': 'dcgm-exporter', 'metrics': ['DCGM_FI_DEV_ROW_REMAP_PENDING'],
     'expr': 'DCGM_FI_DEV_ROW_REMAP_PENDING > {row_remap_pending}',
     'fires_when': 'a row remap is pending (value above {row_remap_pending})',
     'summary': 'Row remap pending on %s' % GPU,
     'description': '%s has a memory row remap pending, which takes effect at the next GPU reset: drain the '
                    'node and reset the GPU.' % GPU,
     'kind': 'gauge_count'},
    {'name': 'GpuXidError', 'severity': 'critical', 'threshold': 'xid_codes', 'for': '0m', 'when': 'xid_codes',
     'exporter': 'dcgm-exporter', 'metrics': ['DCGM_FI_DEV_XID_ERRORS'],
     'expr': '{xid_expr}',
     'fires_when': 'the last XID is one of {xid_list}',
     'summary': 'XID {{{{ $value }}}} on %s' % GPU,
     'description': '%s reported XID {{{{ $value }}}}, one that means trouble with the GPU (NVIDIA Xid '
                    'catalog): see the kernel log and act as the catalog says.' % GPU,
     'kind': 'xid'},
    {'name': 'GpuSmUtilisationQuota', 'severity': 'warning', 'threshold': 'sm_util_max_percent',
     'for': 'gpu_util_for', 'when': 'sm_util_max_percent',
     'exporter': 'dcgm-exporter (DCGM profiling module)', 'metrics': ['DCGM_FI_PROF_SM_ACTIVE'],
     'expr': '100 * DCGM_FI_PROF_SM_ACTIVE > {sm_util_max_percent}',
     'fires_when': 'SM activity above the quota ({sm_quota}) for {gpu_util_for}',
     'summary': 'SM utilisation above the quota on %s' % GPU,
     'description': '%s has kept its SMs more than {sm_util_max_percent} %% active for {gpu_util_for}, above '
                    "the site's quota (DCGM has no SM-utilisation policy; this rule is the quota)." % GPU,
     'kind': 'gauge_ratio'},
]

DURATION = re.compile(r'^([0-9]+(ms|[smhdwy]))+$')
LABEL_NAME = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*$')


class AlertsError(ValueError):
    pass


def _number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return int(number) if number == int(number) and '.' not in value and 'e' not in value.lower() else number
    return None


def validate(thresholds):
    """``(normalized, errors)``: the defaults overlaid with ``thresholds``; each error names
    ``dcgm_alert_thresholds.<key>``."""
    normalized = dict(THRESHOLDS)
    normalized['xid_codes'] = list(TROUBLE_XIDS)
    errors = []
    if thresholds is None:
        thresholds = {}
    if not isinstance(thresholds, dict):
        return normalized, ['%s: must be a dict, got %s' % (VARIABLE, type(thresholds).__name__)]
    for key in sorted(thresholds, key=str):
        value = thresholds[key]
        name = '%s.%s' % (VARIABLE, key)
        if key not in THRESHOLD_KINDS:
            if str(key).startswith('sm_util') or str(key).startswith('sm_utilization'):
                hint = ' (the SM-utilisation quota is %s.sm_util_max_percent)' % VARIABLE
            else:
                hint = ''
            errors.append('%s: unknown threshold%s (known: %s)' % (name, hint, ', '.join(sorted(THRESHOLD_KINDS))))
            continue
        kind = THRESHOLD_KINDS[key][0]
        if kind == 'duration':
            if not isinstance(value, str) or not DURATION.match(value):
                errors.append('%s: must be a Prometheus duration such as 5m or 1h30m, got %r' % (name, value))
                continue
            normalized[key] = value
        elif kind == 'xids':
            if not isinstance(value, list):
                errors.append('%s: must be a list of XID codes, got %r' % (name, value))
                continue
            codes = [_number(v) for v in value]
            bad = [v for v, c in zip(value, codes) if not isinstance(c, int) or c <= 0]
            if bad:
                errors.append('%s: XID codes are positive integers, got %s' % (name, ', '.join(repr(b) for b in bad)))
                continue
            normalized[key] = sorted(set(codes))
        else:
            if value is None and key == 'sm_util_max_percent':
                normalized[key] = None
                continue
            number = _number(value)
            if number is None:
                errors.append('%s: must be a number, got %r' % (name, value))
            elif number < 0:
                errors.append('%s: must not be negative, got %s' % (name, value))
            elif kind == 'percent' and number >= 100:
                errors.append('%s: a percentage below 100 (no rate can exceed 100 %%), got %s' % (name, value))
            else:
                normalized[key] = number
    return normalized, errors


def checked(thresholds):
    normalized, errors = validate(thresholds)
    if errors:
        raise AlertsError('; '.join(errors))
    return normalized


def _num(value):
    """A number as PromQL and the README write it: 95, 0.1, 0.0416667."""
    if isinstance(value, int):
        return str(value)
    text = '%.6g' % value
    return text


def _fields(t):
    fields = dict((k, _num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                  for k, v in t.items())
    codes = t['xid_codes'] or []
    fields['xid_list'] = ', '.join(str(c) for c in codes)
    fields['xid_expr'] = ' or '.join('DCGM_FI_DEV_XID_ERRORS == %d' % c for c in codes)
    quota = t.get('sm_util_max_percent')
    fields['sm_quota'] = 'unset: no rule' if quota is None else '%s %%' % _num(quota)
    return fields


def active(t):
    """The alerts of ``ALERTS`` rendered for thresholds ``t`` (normalized)."""
    return [a for a in ALERTS if 'when' not in a or t.get(a['when']) not in (None, [], '')]


def _duration(alert, t):
    return t[alert['for']] if alert['for'] in t else alert['for']


def _quote(text):
    return json.dumps(text)


def rule_dicts(t, labels=None):
    fields = _fields(t)
    rules = []
    for alert in active(t):
        rule_labels = dict(labels or {})
        rule_labels['severity'] = alert['severity']
        rules.append({'alert': alert['name'], 'expr': alert['expr'].format(**fields), 'for': _duration(alert, t),
                      'labels': rule_labels,
                      'annotations': {'summary': alert['summary'].format(**fields),
                                      'description': alert['description'].format(**fields)}})
    return rules


def check_labels(labels):
    errors = []
    for key in sorted(labels or {}, key=str):
        if not LABEL_NAME.match(str(key)) or str(key).startswith('__'):
            errors.append('labels.%s: not a Prometheus label name' % key)
        elif key in ('severity', 'alertname'):
            errors.append('labels.%s: set by each alert, not a site label' % key)
    return errors


def render_rules(thresholds, labels=None, group='gpuops-dcgm'):
    """The rules file (YAML text, the same bytes for the same input)."""
    t = checked(thresholds)
    errors = check_labels(labels)
    if errors:
        raise AlertsError('; '.join(errors))
    lines = ['# Generated by gpuops.node (dcgm_alert_rules) from dcgm_alert_thresholds; do not edit.',
             'groups:', '  - name: %s' % _quote(group), '    rules:']
    for rule in rule_dicts(t, labels):
        lines.append('      - alert: %s' % rule['alert'])
        lines.append('        expr: %s' % _quote(rule['expr']))
        lines.append('        for: %s' % rule['for'])
        lines.append('        labels:')
        for key in sorted(rule['labels']):
            lines.append('          %s: %s' % (key, _quote(str(rule['labels'][key]))))
        lines.append('        annotations:')
        for key in ('summary', 'description'):
            lines.append('          %s: %s' % (key, _quote(rule['annotations'][key])))
    return '\n'.join(lines) + '\n'


def _above_percent(p):
    if p == 0:
        return 1.0
    return p * 2 if p <= 50 else (p + 100) / 2.0


def _series_text(name, labels):
    return '%s{%s}' % (name, ','.join('%s="%s"' % (k, labels[k]) for k in sorted(labels)))


def _series(alert, t, fire, minutes):
    """The input series ``[(metric, labels, values)]`` of one alert, above its threshold (``fire``) or below
    it, ``minutes`` samples one minute apart."""
    value = t[alert['threshold']]
    kind = alert['kind']
    metric = alert['metrics'][0]
    if kind == 'gauge_percent':
        level = _above_percent(value) if fire else value / 2.0
        return [(metric, DCGM_SERIES, '%sx%d' % (_num(level), minutes))]
    if kind == 'gauge_ratio':
        level = (_above_percent(value) if fire else value / 2.0) / 100.0
        return [(metric, DCGM_SERIES, '%sx%d' % (_num(level), minutes))]
    if kind == 'gauge_count':
        level = value + 1 if fire else value
        return [(metric, DCGM_SERIES, '%sx%d' % (_num(level), minutes))]
    if kind == 'counter_per_hour':
        per_hour = value * 2 + 2 if fire else value / 2.0
        return [(metric, DCGM_SERIES, '0+%sx%d' % (_num(per_hour / 60.0), minutes))]
    if kind == 'ratio_percent':
        packets = 1000000
        percent = _above_percent(value) if fire else value / 2.0
        errors = packets * percent / 100.0 / 2
        return [(alert['metrics'][0], IB_SERIES, '0+%sx%d' % (_num(errors), minutes)),
                (alert['metrics'][1], IB_SERIES, '0+%sx%d' % (_num(errors), minutes)),
                (alert['metrics'][2], IB_SERIES, '0+%dx%d' % (packets, minutes))]
    if kind == 'xid':
        codes = value
        if fire:
            code = codes[0]
        else:
            code = 13 if 13 not in codes else min(c for c in range(1, max(codes) + 2) if c not in codes)
        return [(metric, DCGM_SERIES, '0x5 %dx%d' % (code, minutes))]
    raise AlertsError('alert %s: unknown kind %s' % (alert['name'], kind))


def _minutes(duration):
    total = 0.0
    scale = {'ms': 1 / 60000.0, 's': 1 / 60.0, 'm': 1, 'h': 60, 'd': 1440, 'w': 10080, 'y': 525600}
    for number, unit in re.findall(r'([0-9]+)(ms|[smhdwy])', duration):
        total += int(number) * scale[unit]
    return total


def _expand(template, labels, value):
    text = re.sub(r'\{\{ \$labels\.([a-zA-Z_][a-zA-Z0-9_]*) \}\}', lambda m: labels.get(m.group(1), ''), template)
    return text.replace('{{ $value }}', _num(value))


def promtool_cases(thresholds, labels=None):
    """The promtool test cases: for each alert, a series above its threshold (firing once ``for`` has passed,
    and not before) and one below (quiet)."""
    t = checked(thresholds)
    rules = dict((r['alert'], r) for r in rule_dicts(t, labels))
    cases = []
    for alert in active(t):
        rule = rules[alert['name']]
        wait = _minutes(rule['for'])
        # when the expression first holds: a gauge at once, a rate once it has two samples, an hourly increase
        # once the whole hour is in the window, an XID after the minutes of 0 that precede it
        start = {'counter_per_hour': 60, 'ratio_percent': 1, 'xid': 5}.get(alert['kind'], 0)
        eval_min = int(start + wait + 2)
        for fire in (True, False):
            series = _series(alert, t, fire, eval_min + 10)
            base = dict(series[0][1])
            exp_labels = dict(base)
            exp_labels.update(rule['labels'])
            value = t['xid_codes'][0] if alert['kind'] == 'xid' else 0
            expected = []
            if fire:
                expected = [{'exp_labels': exp_labels,
                             'exp_annotations': dict((k, _expand(v, base, value))
                                                     for k, v in rule['annotations'].items())}]
            evals = [(eval_min, expected)]
            if fire and wait >= 1:
                evals.insert(0, (int(start + wait - 1), []))
            cases.append({'name': '%s %s %s %s' % (alert['name'], 'fires above' if fire else 'quiet below',
                                                   alert['threshold'], _num_any(t[alert['threshold']])),
                          'alert': alert['name'], 'fire': fire,
                          'input_series': [{'series': _series_text(m, l), 'values': v} for m, l, v in series],
                          'evals': evals})
    return cases


def _num_any(value):
    if isinstance(value, list):
        return ','.join(str(v) for v in value)
    return _num(value)


def render_tests(thresholds, rules_file, labels=None):
    """The ``promtool test rules`` file for the rules of ``render_rules(thresholds, labels)`` at ``rules_file``
    (relative to the test file's directory, or absolute)."""
    lines = ['# Generated by gpuops.node (dcgm_alert_rules): promtool test rules THIS_FILE', 'rule_files:',
             '  - %s' % _quote(rules_file), 'evaluation_interval: 1m', 'tests:']
    for case in promtool_cases(thresholds, labels):
        lines.append('  - name: %s' % _quote(case['name']))
        lines.append('    interval: 1m')
        lines.append('    input_series:')
        for series in case['input_series']:
            lines.append('      - series: %s' % _quote(series['series']))
            lines.append('        values: %s' % _quote(series['values']))
        lines.append('    alert_rule_test:')
        for minute, expected in case['evals']:
            lines.append('      - eval_time: %dm' % minute)
            lines.append('        alertname: %s' % case['alert'])
            if not expected:
                lines.append('        exp_alerts: []')
                continue
            lines.append('        exp_alerts:')
            for exp in expected:
                lines.append('          - exp_labels:')
                for key in sorted(exp['exp_labels']):
                    lines.append('              %s: %s' % (key, _quote(str(exp['exp_labels'][key]))))
                lines.append('            exp_annotations:')
                for key in sorted(exp['exp_annotations']):
                    lines.append('              %s: %s' % (key, _quote(exp['exp_annotations'][key])))
    return '\n'.join(lines) + '\n'


def alerts_markdown(thresholds=None):
    """The README's alerts table, for the defaults unless ``thresholds`` says otherwise."""
    t = checked(thresholds)
    fields = _fields(t)
    fields['xid_list'] = fields['xid_list'] or '(none: no rule)'
    rows = ['| Alert | Severity | Fires when | Metrics | Exporter | Threshold |', '|---|---|---|---|---|---|']
    for alert in ALERTS:
        rows.append('| `%s` | %s | %s | %s | %s | `%s.%s` |' % (
            alert['name'], alert['severity'], alert['fires_when'].format(**fields),
            ', '.join('`%s`' % m for m in alert['metrics']), alert['exporter'], VARIABLE, alert['threshold']))
    rows.append('')
    rows.append('| Threshold | Default | Meaning |')
    rows.append('|---|---|---|')
    for key in sorted(THRESHOLDS):
        default = THRESHOLDS[key]
        shown = 'null' if default is None else (', '.join(str(c) for c in default)
                                                if isinstance(default, list) else str(default))
        rows.append('| `%s` | `%s` | %s |' % (key, shown, THRESHOLD_KINDS[key][1]))
    return '\n'.join(rows) + '\n'
