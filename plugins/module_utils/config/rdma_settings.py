# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The RoCE and IPoIB settings of ``gpuops.node.rdma``: wanted values, the current ones, their differences, and
the boot script that re-applies them.

A setting is a dict ``{hca, netdev, name, kind, before, after}`` (plus ``path`` for files): ``kind`` is ``file``
(a sysfs or configfs value), ``pfc`` (PFC priorities, through ``dcb pfc`` or ``mlnx_qos --pfc``), ``trust``
(``mlnx_qos --trust``), ``app`` (the DSCP-to-priority table, ``dcb app replace``) or ``flags`` (an interface's
administrative state). ``before`` is None when the value could not be read, which counts as a difference.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.node.plugins.module_utils.node.rdma_sysfs import (
    cnp_path, ecn_path, netdev_dir, rdma_cm_dir, rdma_cm_path)

IFF_UP = 0x1


def wanted(hca, netdev, ports, priority, dscp, tos, cnp_dscp, cnp_priority, ecn=True):
    """The RoCE settings of one HCA, without their current values; without ``ecn`` (a driver that has no
    ``class/net/<netdev>/ecn``, such as the inbox mlx5), no DCQCN or CNP value."""
    items = []
    for point in ('rp', 'np') if ecn else ():
        items.append({'name': 'ecn/roce_%s/enable/%d' % (point, priority), 'kind': 'file', 'after': '1',
                      'path_args': ('ecn', point, priority)})
    if ecn:
        items.append({'name': 'ecn/roce_np/cnp_dscp', 'kind': 'file', 'after': str(cnp_dscp),
                      'path_args': ('cnp', 'cnp_dscp')})
        items.append({'name': 'ecn/roce_np/cnp_802p_prio', 'kind': 'file', 'after': str(cnp_priority),
                      'path_args': ('cnp', 'cnp_802p_prio')})
    items.append({'name': 'pfc', 'kind': 'pfc', 'after': [priority]})
    items.append({'name': 'dscp-prio', 'kind': 'app', 'after': {dscp: [priority], cnp_dscp: [cnp_priority]}})
    for port in ports:
        items.append({'name': 'rdma_cm/ports/%d/default_roce_tos' % port, 'kind': 'file', 'after': str(tos),
                      'path_args': ('rdma_cm', port, 'default_roce_tos')})
    for item in items:
        item.update(hca=hca, netdev=netdev)
    return items


def path_of(sysfs_root, item):
    args = item['path_args']
    if args[0] == 'ecn':
        return ecn_path(sysfs_root, item['netdev'], args[1], args[2])
    if args[0] == 'cnp':
        return cnp_path(sysfs_root, item['netdev'], args[1])
    return rdma_cm_path(sysfs_root, item['hca'], args[1], args[2])


def app_before(table, after):
    """The entries of the DSCP table for the DSCPs ``after`` sets: ``{dscp: [prio, ...]}`` (missing ones: [])."""
    return dict((dscp, sorted(table.get(dscp, []))) for dscp in after)


def differs(item):
    before, after = item['before'], item['after']
    if before is None:
        return True
    if item['kind'] == 'app':
        return any(sorted(before.get(d, [])) != sorted(p) for d, p in after.items())
    if item['kind'] == 'pfc':
        return sorted(before) != sorted(after)
    return before != after


def show(item, which):
    """A value as ``--diff`` prints it."""
    value = item[which]
    if value is None:
        return '(unreadable)'
    if item['kind'] == 'pfc':
        return 'PFC on %s' % (', '.join(str(p) for p in value) or 'no priority')
    if item['kind'] == 'app':
        return ' '.join('%d:%s' % (d, ','.join(str(p) for p in value[d]) or '-') for d in sorted(value))
    return str(value)


def diff_text(items, which):
    return ''.join('%s %s %s = %s\n' % (i['hca'], i['netdev'], i['name'], show(i, which)) for i in items)


def ipoib_down_item(sysfs_root, hca, netdev, flags):
    """The item that keeps an IPoIB interface down; ``flags`` is the text of ``class/net/<netdev>/flags``."""
    value = None
    try:
        value = int(flags, 16) if flags is not None else None
    except ValueError:
        value = None
    return {'hca': hca, 'netdev': netdev, 'name': 'flags (IFF_UP)', 'kind': 'flags',
            'path': '%s/flags' % netdev_dir(sysfs_root, netdev),
            'before': None if value is None else ('up' if value & IFF_UP else 'down'), 'after': 'down',
            'flags': value}


def _q(text):
    return "'%s'" % str(text).replace("'", "'\\''")


def boot_script(sysfs_root, hcas, settings, ipoib_down, mlnx_qos, header):
    """The shell script the boot unit runs: every wanted value written, without reading first. A command that
    fails does not stop the others; the script exits 1 when one did, so the unit shows it failed.

    ``hcas``: ``[{hca, netdev, ports, ecn}]`` (``ecn`` false: no DCQCN or CNP value, the driver has none);
    ``settings``: ``{priority, dscp, tos, cnp_dscp, cnp_priority}``; ``ipoib_down``: InfiniBand HCAs whose IPoIB
    interfaces stay down; ``mlnx_qos``: True to set PFC and trust with mlnx_qos.
    """
    lines = ['#!/bin/sh', header, 'set -u', 'failed=0',
             'run() { "$@" || { echo "gpuops-rdma-settings: failed: $*" >&2; failed=1; }; }',
             'put() { printf \'%s\\n\' "$1" > "$2" || { echo "gpuops-rdma-settings: cannot write $1 to $2" >&2; failed=1; }; }',
             '']
    if hcas and sysfs_root.rstrip('/') == '/sys':
        lines += ['# RDMA CM\'s configfs exists once rdma_cm is loaded', 'modprobe rdma_cm 2>/dev/null || true', '']
    for entry in hcas:
        hca, netdev = entry['hca'], entry['netdev']
        lines.append('# %s (%s)' % (hca, netdev))
        for item in wanted(hca, netdev, entry['ports'], ecn=entry.get('ecn', True), **settings):
            if item['kind'] == 'file':
                path = path_of(sysfs_root, item)
                if item['path_args'][0] == 'rdma_cm':
                    lines.append('run mkdir -p %s' % _q(rdma_cm_dir(sysfs_root, hca)))
                lines.append('put %s %s' % (item['after'], _q(path)))
            elif item['kind'] == 'pfc' and mlnx_qos:
                bits = ','.join('1' if p in item['after'] else '0' for p in range(8))
                lines.append('run mlnx_qos -i %s --trust dscp --pfc %s' % (_q(netdev), bits))
            elif item['kind'] == 'pfc':
                lines.append('run dcb pfc set dev %s prio-pfc all:off %s' % (
                    _q(netdev), ' '.join('%d:on' % p for p in item['after'])))
            elif item['kind'] == 'app':
                lines.append('run dcb app replace dev %s dscp-prio %s' % (_q(netdev), ' '.join(
                    '%d:%d' % (d, p) for d in sorted(item['after']) for p in item['after'][d])))
        lines.append('')
    for hca in ipoib_down:
        net = _q('%s/class/infiniband/%s/device/net' % (sysfs_root, hca))
        lines.append('# IPoIB stays down on %s: clear IFF_UP of its interfaces of type 32' % hca)
        lines.append('for dev in %s/*; do' % net)
        lines.append('  [ "$(cat "$dev/type" 2>/dev/null)" = 32 ] || continue')
        lines.append('  flags=$(cat "$dev/flags") && put "$(printf \'0x%x\' $((flags & ~1)))" "$dev/flags"')
        lines.append('done')
    lines += ['', 'exit "$failed"']
    return '\n'.join(lines).rstrip('\n') + '\n'
