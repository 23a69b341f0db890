# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Records the rack report tests share (test_model, test_markdown, test_junit, test_render).

    import report_records as R
    R.records()           # five hosts over two racks: provisioned, held back, regressed, unreachable, failed
    R.rollout(**steps)    # a rollout record as the playbooks hand it over, every step registered
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

PASS = {'passed': True, 'failures': []}
POST_PASS = {'passed': True, 'failures': [], 'regressions': []}


def failure(check='nvlink_active_links', subject='GPU3', expected=18, actual=16, message='links down'):
    return {'check': check, 'subject': subject, 'expected': expected, 'actual': actual, 'message': message}


def regression(check='nic_port_down', subject='mlx5_3/1', before='ACTIVE', after='DOWN', message='port went down'):
    return {'check': check, 'subject': subject, 'before': before, 'after': after, 'message': message}


def records():
    return [
        {'host': 'gpu-a10', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'pre_check': PASS,
         'changes': {'nvidia_driver': 3, 'mofed': False}, 'post_check': POST_PASS, 'phase': 'done'},
        {'host': 'gpu-a2', 'rack': 'rack_a', 'node_class': 'dgx_h100', 'held_back': True,
         'pre_check': {'passed': False, 'failures': [failure(), failure('gpu_count', None, 8, 7, 'GPU | lost')]},
         'phase': 'done', 'gpu_topology': {'gpu_count': 7}},
        {'host': 'gpu-b1', 'rack': 'rack_b', 'node_class': 'hgx_a100', 'pre_check': PASS,
         'changes': {'nvidia_driver': True},
         'post_check': {'passed': False, 'failures': [], 'regressions': [regression()]}, 'phase': 'done'},
        {'host': 'gpu-b2', 'rack': 'rack_b', 'node_class': 'pcie_l40s', 'unreachable': True,
         'error': 'Failed to connect to the host via ssh'},
        {'host': 'gpu-b3', 'rack': 'rack_b', 'node_class': 'pcie_l40s', 'pre_check': PASS,
         'error': 'task "Install driver" failed: <no package>', 'phase': 'changes'},
    ]


# ---------------------------------------------------------------- rollout records from registered results

def deferred(check='compute_mode', role='mps'):
    return {'check': check, 'key': check, 'role': role, 'why': 'converged by the %s role in this run' % role}


def registered(passed=True, failures=None, regressions=None, deferred=None):
    """A gpu_topology_check result as a playbook registers it, bulky keys included."""
    return {'changed': False, 'passed': passed, 'failures': failures or [], 'regressions': regressions or [],
            'deferred': deferred or [], 'baseline_gaps': [], 'gpu_topology': {'gpu_count': 8},
            'invocation': {'module_args': {'expected': {'gpu_count': 8}}}, 'msg': '0 failure(s)'}


def rollout(**steps):
    record = {'host': 'h', 'rack': 'r', 'node_class': 'c', 'phase': 'done', 'check_mode': False, 'errors': [],
              'gather': {'changed': False}, 'pre_check': registered(), 'roles': ['mps'], 'changes': {'mps': 0},
              'reboot_required': {'mps': False}, 'reboot': {'skipped': True, 'skip_reason': 'Conditional result was False'},
              'post_check': registered()}
    record.update(steps)
    return record


def not_started_run():
    """(records, racks) of a rollout that stopped after rack_1: h3 and h4 of rack_2 have no record."""
    racks = {'rack_1': ['h1', 'h2'], 'rack_2': ['h3', 'h4']}
    return [rollout(host='h1', rack='rack_1'), rollout(host='h2', rack='rack_1', errors=['x: boom'])], racks


def reboot_run():
    """Host a rebooted after its deferred checks, host b waits for a reboot."""
    return [
        rollout(host='a', pre_check=registered(deferred=[deferred('driver_loaded', 'nvidia_driver'),
                                                         deferred('driver_version', 'nvidia_driver'),
                                                         deferred()]),
                roles=['nvidia_driver', 'mps'], changes={'nvidia_driver': 4, 'mps': 1},
                reboot_required={'nvidia_driver': True}, reboot={'rebooted': True, 'elapsed': 90}),
        rollout(host='b', changes={'mps': 2}, reboot_required={'mps': True}, post_check={'skipped': True}),
    ]


# ---------------------------------------------------------------- odd names and control characters

FIELDS = ['title', 'host', 'rack', 'node_class', 'error', 'change', 'check', 'subject', 'expected', 'actual',
          'message', 'before', 'after', 'regression_message']

# control characters, escape sequences, line and paragraph separators, a bidirectional override, a lone surrogate
CONTROL_VALUES = [
    u'x\x00y', u'x\x1b[31my\x1b[0m', u'x\x1b]0;title\x07y', u'x\ry', u'x\x7fy', u'x\x9by', u'x\u2028y',
    u'x\u2029y', u'x\u202ey', u'x\ud800y',
]


def record_with(field, value):
    """(record, title): a record whose ``field`` (one of FIELDS) is ``value``."""
    fail = failure()
    regress = regression()
    record = {'host': 'h', 'rack': 'r', 'node_class': 'c', 'pre_check': PASS, 'changes': {'driver': 1},
              'post_check': {'passed': False, 'failures': [fail], 'regressions': [regress]},
              'error': 'boom', 'phase': 'done'}
    title = 'T'
    if field == 'title':
        title = value
    elif field in ('host', 'rack', 'node_class', 'error'):
        record[field] = value
    elif field == 'change':
        record['changes'] = {value: 2}
    elif field in ('before', 'after'):
        regress[field] = value
    elif field == 'regression_message':
        regress['message'] = value
    else:
        fail[field] = value
    return record, title
