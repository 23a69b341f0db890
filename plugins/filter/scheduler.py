# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters site.yml drains nodes with (documented beside): the rollout's batches, which hosts of a batch it
drains, and a Kubernetes node's state in the form Slurm's is read."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.node.plugins.module_utils.plans import gpuops as plans_gpuops


def rack_batches(sizes, max_unavailable=0):
    try:
        return plans_gpuops.rack_batches(sizes, max_unavailable)
    except plans_gpuops.SchedulerError as exc:
        raise AnsibleFilterError('rack_batches: %s' % exc)


def drain_plan(batch, states, max_unavailable=0):
    try:
        return plans_gpuops.drain_plan(batch, states, max_unavailable)
    except plans_gpuops.SchedulerError as exc:
        raise AnsibleFilterError('drain_plan: %s' % exc)


def k8s_node_status(resource, annotation=plans_gpuops.K8S_ANNOTATION):
    if resource is not None and not isinstance(resource, dict):
        raise AnsibleFilterError('k8s_node_status: the input must be a Node object or null, got %s'
                                 % type(resource).__name__)
    return plans_gpuops.k8s_node_status(resource, annotation)


class FilterModule(object):
    def filters(self):
        return {'rack_batches': rack_batches, 'drain_plan': drain_plan, 'k8s_node_status': k8s_node_status}
