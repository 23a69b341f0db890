# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulated HCAs: netdevs and counters of the profiles, the RDMA state a boot resets, the ib_ipoib rule,
the traffic source and the roce_retrans_high fault, and what install_node.py installs for them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from drivertools import FakeDpkg, write
from simhelpers import PROFILE_NAMES, REPO, profile_path

from simulator import admin
from simulator import build_rdma
from simulator import bundle
from simulator import faults
from simulator import install_node
from simulator import sim_rdma


H100 = 'h100-sxm-8gpu-ib'
A100 = 'a100-sxm-8gpu-ib'
PCIE = 'pcie-4gpu-roce'
ROCE = 'class/infiniband/rocep1s0f0/ports/1'
NETDEV = 'class/net/enp1s0f0np0'
# /etc/rdma/modules/infiniband.conf of Debian 12's rdma-core 44.0-2 (a conffile), verbatim
INFINIBAND_CONF = ('# These modules are loaded by the system if any InfiniBand device is installed\n'
                   '# InfiniBand over IP netdevice\nib_ipoib\n\n'
                   '# Access to fabric management SMPs and GMPs from userspace.\nib_umad\n\n'
                   '# SCSI Remote Protocol target support\n# ib_srpt\n\n'
                   '# ib_ucm provides the obsolete /dev/infiniband/ucm0\n# ib_ucm\n')
RDMA_CORE = FakeDpkg({'rdma-core': '44.0-2'})
NO_RDMA_CORE = FakeDpkg({'iproute2': '6.1.0-3'})


@pytest.fixture(autouse=True)
def _environment(monkeypatch):
    monkeypatch.delenv('GPUOPS_SIM_PROFILE', raising=False)
    monkeypatch.delenv('GPUOPS_SIM_ROOT', raising=False)


def install(tmp_path, name=PCIE, faults=(), label='node'):
    root = str(tmp_path / label)
    return root, install_node.install(profile_path(name), root, fault_specs=faults, python=sys.executable)


def sysfs(root, rel):
    return os.path.join(root, sim_rdma.SYSFS, rel)


def read(root, rel):
    with open(sysfs(root, rel)) as handle:
        return handle.read()


def put(root, rel, text):
    with open(sysfs(root, rel), 'w') as handle:
        handle.write(text)


def rdma_of(name):
    return json.loads(bundle.text(bundle.read_profile(profile_path(name)), sim_rdma.RDMA_FILE))


# ---------------------------------------------------------------- profiles

@pytest.mark.parametrize('name', PROFILE_NAMES)
def test_every_hca_has_the_captured_counters_and_its_netdev(name):
    tree = bundle.read_profile(profile_path(name))
    counters, hw_counters, _rate = build_rdma.captured_counters(REPO)
    meta = bundle.load_yaml(bundle.text(tree, 'profile.yml'))
    rdma = json.loads(bundle.text(tree, sim_rdma.RDMA_FILE))
    assert [h['name'] for h in rdma['hcas']] == [n['name'] for n in meta['nics']] and rdma['faults'] == {}
    for nic, hca in zip(meta['nics'], rdma['hcas']):
        base = 'sys/class/infiniband/%s/ports/1/' % nic['name']
        rate = int(nic['rate'].split()[0])          # e.g. 400, 200 or 40 (Gb/s); the capture's port: 25
        for group, values in (('counters', counters), ('hw_counters', hw_counters)):
            names = sorted(rel.split('/')[-1] for rel in tree if rel.startswith(base + group + '/'))
            assert names == sorted(values)
            for counter, value in values.items():
                expected = value * rate // 25 if counter in build_rdma.TRAFFIC else value
                assert bundle.text(tree, base + '%s/%s' % (group, counter)) == '%d\n' % expected
        for counter in ('roce_adp_retrans', 'local_ack_timeout_err', 'out_of_sequence', 'packet_seq_err',
                        'rx_write_requests', 'roce_slow_restart'):
            assert base + 'hw_counters/' + counter in tree
        assert bundle.text(tree, base + 'counters/symbol_error') == bundle.text(tree, base + 'counters/port_rcv_errors') == '0\n'
        if nic['link_layer'] == 'Ethernet':
            netdev = 'sys/bus/pci/devices/%s/net/%s/' % (nic['pci'], nic['netdev'])
            assert hca['netdev'] == nic['netdev'] and hca['ipoib'] is None
            assert (bundle.text(tree, netdev + 'type'), bundle.text(tree, netdev + 'operstate')) == ('1\n', 'up\n')
            assert bundle.text(tree, netdev + 'flags') == '0x1003\n'
            assert tree['sys/class/net/' + nic['netdev']] == bundle.Link('../../bus/pci/devices/%s/net/%s' % (
                nic['pci'], nic['netdev']))
            assert tree[netdev + 'device'] == bundle.Link('../../../' + nic['pci'])
            for prio in range(8):
                assert bundle.text(tree, netdev + 'ecn/roce_rp/enable/%d' % prio) == '1\n'
                assert bundle.text(tree, netdev + 'ecn/roce_np/enable/%d' % prio) == '1\n'
            assert bundle.text(tree, netdev + 'ecn/roce_np/cnp_dscp') == '48\n'
            assert bundle.text(tree, netdev + 'ecn/roce_np/cnp_802p_prio') == '6\n'
            assert bundle.text(tree, 'sys/kernel/config/rdma_cm/%s/ports/1/default_roce_mode' % nic['name']) == 'RoCE v2\n'
            assert bundle.text(tree, 'sys/kernel/config/rdma_cm/%s/ports/1/default_roce_tos' % nic['name']) == '0\n'
            assert bundle.text(tree, 'dcb-pfc-%s.txt' % nic['netdev']) == (
                'pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n')
            assert bundle.text(tree, 'dcb-app-dscp-prio-%s.txt' % nic['netdev']) == ''
        else:
            assert hca['netdev'] is None and hca['ipoib']['name'] == nic['ipoib']
            assert not any(rel.startswith('sys/bus/pci/devices/%s/net/' % nic['pci']) for rel in tree)


def test_netdev_names_and_addresses():
    roce = rdma_of(PCIE)['hcas'][0]
    assert (roce['name'], roce['netdev']) == ('rocep1s0f0', 'enp1s0f0np0')   # ibdev2netdev capture
    tree = bundle.read_profile(profile_path(PCIE))
    # ibv_devinfo node_guid 4821:0b03:0096:04cb without its 03:00
    assert bundle.text(tree, 'sys/bus/pci/devices/0000:01:00.0/net/enp1s0f0np0/address') == '48:21:0b:96:04:cb\n'
    h100 = dict((h['name'], h) for h in rdma_of(H100)['hcas'])
    assert h100['mlx5_0']['pci'] == '0000:18:00.0' and h100['mlx5_0']['ipoib']['name'] == 'ibp24s0'
    assert (h100['mlx5_3']['netdev'], h100['mlx5_4']['netdev']) == ('enp42s0f0np0', 'enp42s0f1np1')
    a100 = dict((h['name'], h) for h in rdma_of(A100)['hcas'])
    # the port GUID of the first captured HDR port (default gid fe80::15:5dff:fd34:11eb)
    assert a100['mlx5_0']['ipoib']['address'] == '00:00:10:29:fe:80:00:00:00:00:00:00:00:15:5d:ff:fd:34:11:eb'
    assert build_rdma.ethernet_name('0000:e1:00.1', True) == 'enp225s0f1np1' == a100['mlx5_5']['netdev']


# ---------------------------------------------------------------- install, boot

def test_install_writes_units_dcb_and_a_booted_state(tmp_path):
    root, summary = install(tmp_path)
    assert summary['dcb'] == os.path.join(root, 'usr/local/sbin/dcb') and os.access(summary['dcb'], os.X_OK)
    with open(summary['dcb']) as handle:
        assert handle.readline() == '#!%s\n' % sys.executable
    unit, traffic = summary['rdma_units']
    with open(unit) as handle:
        text = handle.read()
    assert 'Before=sysinit.target shutdown.target network-pre.target rdma-hw.target' in text
    assert 'ExecStart=%s /usr/share/gpuops-sim/lib/sim_rdma.py boot' % sys.executable in text
    assert 'WantedBy=sysinit.target' in text and 'Type=oneshot' in text
    with open(traffic) as handle:
        text = handle.read()
    assert 'ExecStart=%s /usr/share/gpuops-sim/lib/sim_rdma.py traffic' % sys.executable in text
    assert 'After=gpuops-sim-rdma.service' in text and 'WantedBy=multi-user.target' in text
    assert os.readlink(os.path.join(root, 'etc/systemd/system/sysinit.target.wants/gpuops-sim-rdma.service')) == \
        '../gpuops-sim-rdma.service'
    assert os.readlink(os.path.join(root, 'etc/systemd/system/multi-user.target.wants/gpuops-sim-traffic.service')) \
        == '../gpuops-sim-traffic.service'
    for module in ('sim_rdma.py', 'sim_dcb.py', 'sim_iproute2.py'):
        assert os.path.isfile(os.path.join(root, 'usr/share/gpuops-sim/lib', module))
    assert summary['rdma_boot']['ipoib']['loaded'] is False and summary['rdma_boot']['rdma_cm'] == ['rocep1s0f0']
    # the HCA's netdev through its device link, as a reader finds it
    assert os.listdir(sysfs(root, 'class/infiniband/rocep1s0f0/device/net')) == ['enp1s0f0np0']
    assert read(root, 'class/infiniband/rocep1s0f0/device/net/enp1s0f0np0/type') == '1\n'
    with open(os.path.join(root, sim_rdma.DCB_STATE)) as handle:
        assert json.load(handle) == {'enp1s0f0np0': {'pfc_cap': 8, 'pfc_en': 0, 'delay': 7, 'mbc': False,
                                                     'app': []}}


def test_reinstall_is_unchanged_by_run_time_state_and_uninstall_removes_it(tmp_path):
    root, _summary = install(tmp_path)
    sim_rdma.tick(root)
    put(root, NETDEV + '/ecn/roce_np/enable/3', '0\n')
    sim_rdma.arm(root, 'roce_retrans_high')
    again = install_node.install(profile_path(PCIE), root, python=sys.executable)
    assert again['changed'] is False and again['rdma_boot'] is None
    assert read(root, NETDEV + '/ecn/roce_np/enable/3') == '0\n'      # a reinstall is no reboot
    assert install_node.uninstall(root)['changed'] is True
    left = sorted(os.path.join(d, f)[len(root):] for d, _dirs, files in os.walk(root) for f in files)
    assert left == []


def test_boot_puts_back_what_a_reboot_resets(tmp_path):
    root, _summary = install(tmp_path)
    pristine = read(root, ROCE + '/counters/port_xmit_packets')
    for rel, value in ((NETDEV + '/ecn/roce_rp/enable/3', '0\n'), (NETDEV + '/ecn/roce_np/cnp_dscp', '26\n'),
                       (NETDEV + '/ecn/roce_np/cnp_802p_prio', '3\n'),
                       ('kernel/config/rdma_cm/rocep1s0f0/ports/1/default_roce_tos', '106\n'),
                       ('kernel/config/rdma_cm/rocep1s0f0/ports/1/default_roce_mode', 'IB/RoCE v1\n')):
        put(root, rel, value)
    os.makedirs(sysfs(root, 'kernel/config/rdma_cm/mlx5_9'))
    with open(os.path.join(root, sim_rdma.DCB_STATE), 'w') as handle:
        json.dump({'enp1s0f0np0': {'pfc_cap': 8, 'pfc_en': 8, 'delay': 7, 'mbc': False, 'app': [[5, 26, 3]]}}, handle)
    sim_rdma.tick(root)
    assert read(root, ROCE + '/counters/port_xmit_packets') != pristine
    done = sim_rdma.boot(root, query=NO_RDMA_CORE)
    assert (done['ecn'], done['rdma_cm'], done['dcb']) == (['enp1s0f0np0'], ['rocep1s0f0'], ['enp1s0f0np0'])
    assert read(root, ROCE + '/counters/port_xmit_packets') == pristine
    assert read(root, NETDEV + '/ecn/roce_rp/enable/3') == '1\n'
    assert read(root, NETDEV + '/ecn/roce_np/cnp_dscp') == '48\n'
    assert read(root, NETDEV + '/ecn/roce_np/cnp_802p_prio') == '6\n'
    assert read(root, 'kernel/config/rdma_cm/rocep1s0f0/ports/1/default_roce_tos') == '0\n'
    assert read(root, 'kernel/config/rdma_cm/rocep1s0f0/ports/1/default_roce_mode') == 'RoCE v2\n'
    assert os.listdir(sysfs(root, 'kernel/config/rdma_cm')) == ['rocep1s0f0']
    with open(os.path.join(root, sim_rdma.DCB_STATE)) as handle:
        assert json.load(handle)['enp1s0f0np0'] == dict(sim_rdma.PFC_DEFAULTS, app=[])
    with open(os.path.join(root, sim_rdma.BOOT_FILE)) as handle:
        assert json.load(handle)['ipoib']['loaded'] is False


def test_gpuops_sim_reboot_resets_the_rdma_state(tmp_path, monkeypatch):
    root, summary = install(tmp_path)
    monkeypatch.setenv('GPUOPS_SIM_ROOT', root)
    monkeypatch.setenv('GPUOPS_SIM_ALLOW_NONROOT', '1')
    put(root, NETDEV + '/ecn/roce_np/enable/5', '0\n')
    assert admin.run(['reboot']).rc == 0
    assert read(root, NETDEV + '/ecn/roce_np/enable/5') == '1\n'


def test_boot_without_a_simulated_sysfs_changes_nothing(tmp_path, monkeypatch):
    """A profile pointed at from elsewhere (GPUOPS_SIM_PROFILE) never makes boot write outside a node's tree."""
    monkeypatch.setenv('GPUOPS_SIM_PROFILE', profile_path(PCIE))
    assert 'skipped' in sim_rdma.boot(str(tmp_path / 'empty'))
    assert not os.path.exists(str(tmp_path / 'empty'))


# ---------------------------------------------------------------- ib_ipoib

@pytest.mark.parametrize('query,files,loaded_by', [
    (NO_RDMA_CORE, {}, None),
    (NO_RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF}, None),
    (RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF}, 'rdma-load-modules@infiniband.service'),
    (RDMA_CORE, {}, None),                     # the conffile deleted
    (RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF.replace('\nib_ipoib', '\n# ib_ipoib')}, None),
    # systemd-modules-load applies the blacklist
    (RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF,
                 'etc/modprobe.d/no-ipoib.conf': 'blacklist ib_ipoib\n'}, None),
    (RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF,
                 'etc/modprobe.d/no-ipoib.conf': 'install ib_ipoib /bin/false\n'}, None),
    (RDMA_CORE, {'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF,
                 'etc/systemd/system/rdma-load-modules@infiniband.service': ''}, None),     # masked
    # OFED's openibd runs modprobe ib_ipoib: a blacklist does not stop it, an install command does
    (RDMA_CORE, {'etc/infiniband/openib.conf': '# Load IPoIB\nIPOIB_LOAD=yes\n',
                 'etc/modprobe.d/no-ipoib.conf': 'blacklist ib_ipoib\n'}, 'openibd'),
    (RDMA_CORE, {'etc/infiniband/openib.conf': 'IPOIB_LOAD=yes\n',
                 'etc/modprobe.d/no-ipoib.conf': 'install ib_ipoib /bin/true\n'}, None),
    (RDMA_CORE, {'etc/infiniband/openib.conf': 'IPOIB_LOAD=no\n'}, None),
    (NO_RDMA_CORE, {'etc/infiniband/openib.conf': 'IPOIB_LOAD=yes\n'}, None),
    # IPOIB_LOAD=no does not stop rdma-core's own loading
    (RDMA_CORE, {'etc/infiniband/openib.conf': 'IPOIB_LOAD=no\n',
                 'etc/rdma/modules/infiniband.conf': INFINIBAND_CONF}, 'rdma-load-modules@infiniband.service'),
    # modules-load.d, with or without rdma-core
    (NO_RDMA_CORE, {'etc/modules-load.d/ipoib.conf': 'ib_ipoib\n'}, 'systemd-modules-load.service'),
    (NO_RDMA_CORE, {'etc/modules-load.d/ipoib.conf': 'ib_ipoib\n',
                    'etc/modprobe.d/b.conf': 'blacklist ib_ipoib\n'}, None),
    # an /etc file masks the /usr/lib one of the same name
    (NO_RDMA_CORE, {'usr/lib/modprobe.d/b.conf': 'blacklist ib_ipoib\n', 'etc/modprobe.d/b.conf': '# none\n',
                    'etc/modules-load.d/ipoib.conf': 'ib_ipoib\n'}, 'systemd-modules-load.service'),
])
def test_ib_ipoib_load_rule(tmp_path, query, files, loaded_by):
    root, _summary = install(tmp_path, H100)
    for rel, text in files.items():
        write(root, rel, text)
    rdma = rdma_of(H100)
    decision = sim_rdma.ipoib_decision(root, query, rdma)
    assert (decision['loaded'], decision['loaded_by']) == (loaded_by is not None, loaded_by), decision
    done = sim_rdma.boot(root, query)
    ipoib = [h for h in rdma['hcas'] if h['ipoib']]
    assert os.path.isdir(sysfs(root, 'module/ib_ipoib')) is (loaded_by is not None)
    assert sorted(done['ipoib_netdevs']) == (sorted(h['ipoib']['name'] for h in ipoib) if loaded_by else [])
    for hca in ipoib:
        netdev = 'class/infiniband/%s/device/net/%s' % (hca['name'], hca['ipoib']['name'])
        assert os.path.isdir(sysfs(root, netdev)) is (loaded_by is not None)
        assert os.path.lexists(sysfs(root, 'class/net/' + hca['ipoib']['name'])) is (loaded_by is not None)
        if loaded_by:
            assert read(root, 'class/net/%s/type' % hca['ipoib']['name']) == '32\n'
            assert read(root, netdev + '/address') == hca['ipoib']['address'] + '\n'


def test_ipoib_netdevs_follow_the_port_and_leave_roce_alone(tmp_path):
    root, _summary = install(tmp_path, H100, faults=['ib_port_down:nic=mlx5_2'])
    write(root, 'etc/rdma/modules/infiniband.conf', INFINIBAND_CONF)
    done = sim_rdma.boot(root, RDMA_CORE)
    assert len(done['ipoib_netdevs']) == 8 and 'enp42s0f0np0' not in done['ipoib_netdevs']
    assert read(root, 'class/net/ibp24s0/operstate') == 'up\n'
    assert read(root, 'class/net/ibp75s0/operstate') == 'down\n'          # mlx5_2 at 0000:4b:00.0 is DOWN
    assert read(root, 'class/net/ibp75s0/flags') == read(root, 'class/net/ibp24s0/flags') == '0x1003\n'   # set up
    assert os.listdir(sysfs(root, 'class/infiniband/mlx5_3/device/net')) == ['enp42s0f0np0']
    # the next boot without rdma-core: gone again
    assert sim_rdma.boot(root, NO_RDMA_CORE)['ipoib_netdevs'] == []
    assert not os.path.lexists(sysfs(root, 'class/net/ibp24s0')) and not os.path.isdir(sysfs(root, 'module/ib_ipoib'))
    roce, _summary = install(tmp_path, PCIE, label='roce')
    write(roce, 'etc/rdma/modules/infiniband.conf', INFINIBAND_CONF)
    done = sim_rdma.boot(roce, RDMA_CORE)       # mlx5_core marks every HCA InfiniBand-capable: the module loads
    assert done['ipoib']['loaded'] is True and done['ipoib_netdevs'] == []


# ---------------------------------------------------------------- traffic and roce_retrans_high

def counters(root, base=ROCE):
    names = ['counters/port_xmit_packets', 'counters/port_rcv_packets', 'counters/port_xmit_data',
             'hw_counters/rx_write_requests'] + ['hw_counters/' + n for n in sim_rdma.RETRANS_COUNTERS]
    return dict((n.split('/')[1], int(read(root, '%s/%s' % (base, n)))) for n in names)


def test_traffic_grows_packets_and_never_retransmissions_without_the_fault(tmp_path):
    root, _summary = install(tmp_path)
    before = counters(root)
    assert sim_rdma.tick(root) == {'rocep1s0f0': 200 * sim_rdma.PACKETS_PER_GBPS}
    sim_rdma.tick(root)
    after = counters(root)
    sent = 2 * 200 * sim_rdma.PACKETS_PER_GBPS
    assert after['port_xmit_packets'] - before['port_xmit_packets'] == sent
    assert after['port_rcv_packets'] - before['port_rcv_packets'] == sent
    assert after['port_xmit_data'] - before['port_xmit_data'] == sent * sim_rdma.WORDS_PER_PACKET
    assert after['rx_write_requests'] - before['rx_write_requests'] == sent // sim_rdma.PACKETS_PER_WRITE
    assert all(after[n] == before[n] for n in sim_rdma.RETRANS_COUNTERS)
    assert os.listdir(os.path.join(root, sim_rdma.TMP)) == []


def test_no_traffic_on_a_port_that_is_down(tmp_path):
    root, _summary = install(tmp_path, faults=['ib_port_down'])
    before = counters(root)
    assert sim_rdma.tick(root) == {} and counters(root) == before
    assert read(root, NETDEV + '/operstate') == 'down\n'


def test_runtime_fault_grows_retransmissions_at_one_percent(tmp_path, monkeypatch):
    root, _summary = install(tmp_path)
    monkeypatch.setenv('GPUOPS_SIM_ROOT', root)
    result = admin.run(['fault', 'roce_retrans_high'])
    assert (result.rc, result.out) == (0, 'gpuops-sim: fault roce_retrans_high armed on rocep1s0f0\n')
    before = counters(root)
    sent = sim_rdma.tick(root)['rocep1s0f0']
    after = counters(root)
    for name in sim_rdma.RETRANS_COUNTERS:
        assert after[name] - before[name] == sent // 100
    listed = json.loads(admin.run(['fault']).out)
    assert listed == {'profile': {}, 'runtime': {'roce_retrans_high': ['rocep1s0f0']}}
    # a reboot resets the counters but the fault (a hardware problem) stays armed
    sim_rdma.boot(root, NO_RDMA_CORE)
    assert sim_rdma.armed(root, rdma_of(PCIE)) == {'roce_retrans_high': ['rocep1s0f0']}
    assert admin.run(['fault', 'clear']).rc == 0
    before = counters(root)
    sim_rdma.tick(root)
    assert all(counters(root)[n] == before[n] for n in sim_rdma.RETRANS_COUNTERS)


def test_runtime_fault_errors(tmp_path, monkeypatch):
    root, _summary = install(tmp_path, H100)
    monkeypatch.setenv('GPUOPS_SIM_ROOT', root)
    result = admin.run(['fault', 'roce_retrans_high'])
    assert result.rc == 1 and 'no Ethernet (RoCE) compute NIC' in result.err
    assert admin.run(['fault', 'roce_retrans_high', 'nic=mlx5_0']).err == (
        'gpuops-sim: fault: mlx5_0 is not an Ethernet (RoCE) HCA (link layer InfiniBand)\n')
    assert admin.run(['fault', 'roce_retrans_high', 'nic=mlx5_3']).rc == 0
    assert admin.run(['fault', 'nvlink_down']).rc == 1
    assert admin.run(['fault', 'roce_retrans_high', 'gpu=1']).rc == 2
    assert 'roce_retrans_high' in admin.run(['fault', '-h']).out


def test_install_time_fault_raises_the_ratio_and_grows(tmp_path):
    base, tree = bundle.read_profile(profile_path(PCIE)), bundle.read_profile(profile_path(PCIE))
    changed = faults.FAULTS['roce_retrans_high'].apply(tree)
    hw = 'sys/%s/hw_counters/' % ROCE
    assert changed == sorted([hw + n for n in sim_rdma.RETRANS_COUNTERS] + [sim_rdma.RDMA_FILE])
    sent = int(bundle.text(tree, 'sys/%s/counters/port_xmit_packets' % ROCE))
    for name in sim_rdma.RETRANS_COUNTERS:
        assert int(bundle.text(tree, hw + name)) == int(bundle.text(base, hw + name)) + sent // 100
    ratio = sum(int(bundle.text(tree, hw + n)) for n in sim_rdma.RETRANS_COUNTERS[:3]) * 100.0 / sent
    assert ratio > 0.1
    with pytest.raises(faults.FaultError):
        faults.FAULTS['roce_retrans_high'].apply(bundle.read_profile(profile_path(H100)))
    faults.FAULTS['roce_retrans_high'].apply(bundle.read_profile(profile_path(A100)), nic='mlx5_4')
    root, summary = install(tmp_path, faults=['roce_retrans_high'])
    assert summary['faults'] == ['roce_retrans_high']
    before = counters(root)
    grown = sim_rdma.tick(root)['rocep1s0f0'] // 100
    assert all(counters(root)[n] - before[n] == grown for n in sim_rdma.RETRANS_COUNTERS)


def test_traffic_service_runs_as_a_script(tmp_path):
    root, _summary = install(tmp_path)
    before = counters(root)
    env = dict(os.environ, GPUOPS_SIM_ROOT=root)
    done = subprocess.run([sys.executable, os.path.join(root, 'usr/share/gpuops-sim/lib/sim_rdma.py'), 'traffic',
                           '--ticks', '2'], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert done.returncode == 0, done.stderr
    assert counters(root)['port_xmit_packets'] == before['port_xmit_packets'] + 2 * 200 * sim_rdma.PACKETS_PER_GBPS


@pytest.mark.parametrize('rel,runtime', [
    ('class/infiniband/mlx5_0/ports/1/counters/port_xmit_packets', True),
    ('class/infiniband/mlx5_0/ports/1/hw_counters/roce_adp_retrans', True),
    ('class/infiniband/mlx5_0/ports/1/state', False),
    ('bus/pci/devices/0000:2a:00.0/net/enp42s0f0np0/ecn/roce_np/cnp_dscp', True),
    ('bus/pci/devices/0000:2a:00.0/net/enp42s0f0np0/operstate', False),
    ('bus/pci/devices/0000:18:00.0/net/ibp24s0/type', True),
    ('class/net/ibp24s0', True), ('class/net/enp42s0f0np0', False),
    ('kernel/config/rdma_cm/mlx5_3/ports/1/default_roce_tos', True), ('module/ib_ipoib/initstate', True),
])
def test_runtime_paths(rel, runtime):
    assert sim_rdma.runtime_path(rel, rdma_of(H100)) is runtime
