# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``make demo``: what the rack report must say for the demo to pass (simulator/demo.py, step 6).

Stdlib only; Python 3.8+ (controller side).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

PASSING = ('provisioned', 'validated')

# The checks of gpuops.node.gpu_topology_check that each simulator fault may fail (nothing else may fail on
# the faulty node). A fault missing here is only required to hold its node back.
FAULT_CHECKS = {
    'driver_not_loaded': ('driver_loaded',),
    'ecc_uncorrectable': ('ecc_uncorrected', 'remapped_rows_pending', 'retired_pages_pending'),
    'gpu_device_id': ('gpu_model',),
    'gpu_missing': ('gpu_count', 'outputs_disagree', 'numa_balance', 'gpu_nic_relation', 'nvlink_relation'),
    'ib_port_down': ('nic_port_state',),
    'mig_unexpected': ('mig_mode',),
    'nvlink_down': ('nvlink_active_links', 'nvlink_relation'),
    'pcie_downtrained': ('pcie_gen', 'pcie_width'),
    'roce_retrans_high': ('nic_retrans_ratio',),
}
# Faults the hardware checks cannot see: the gate that must fail the faulty node after its changes.
GATE_FAULTS = {
    'dcgm_diag_fail': 'dcgm_diag',
    'nccl_slow': 'nccl_busbw',
}


def check_report(report, nodes, fault):
    """Problems with the report: [] when every node passed except the faulty one, held back by its fault."""
    hosts = dict((h['host'], h) for rack in report.get('racks', []) for h in rack.get('hosts', []))
    problems = []
    for node in nodes:
        host = hosts.get(node['name'])
        if host is None:
            problems.append('%s is not in the report' % node['name'])
            continue
        failures = (host.get('pre_check') or {}).get('failures') or []
        gates = host.get('gates') or []
        if fault and node['name'] == fault['node'] and fault['name'] in GATE_FAULTS:
            gate = GATE_FAULTS[fault['name']]
            failed = [g['name'] for g in gates if g.get('ran') and not g.get('passed')]
            if host['status'] != 'failed' or failed != [gate]:
                problems.append('%s (fault %s) is %s with failed gates %s, expected failed by the %s gate alone'
                                % (node['name'], fault['spec'], host['status'], failed or 'none', gate))
        elif fault and node['name'] == fault['node']:
            if host['status'] != 'held_back':
                problems.append('%s (fault %s) is %s, expected held_back' % (node['name'], fault['spec'], host['status']))
            elif not failures:
                problems.append('%s is held back without a failed check' % node['name'])
            allowed = FAULT_CHECKS.get(fault['name'])
            unexpected = [f for f in failures if allowed is not None and f.get('check') not in allowed]
            for failure in unexpected:
                problems.append('%s failed %s %s, which its fault %s does not explain: %s' % (
                    node['name'], failure.get('check'), failure.get('subject'), fault['name'], failure.get('message')))
        elif host['status'] not in PASSING:
            detail = '; '.join(f.get('message') or '' for f in failures) or host.get('error') or ''
            problems.append('%s is %s, expected provisioned%s' % (node['name'], host['status'],
                                                                  (': ' + detail) if detail else ''))
        else:
            not_run = [g['name'] for g in gates if not g.get('ran')]
            if not_run:
                problems.append('%s: the gates %s did not run' % (node['name'], ', '.join(not_run)))
    extra = sorted(set(hosts) - set(n['name'] for n in nodes))
    if extra:
        problems.append('unexpected hosts in the report: %s' % ', '.join(extra))
    return problems
