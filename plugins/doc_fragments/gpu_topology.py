# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    # Options shared by the modules that gather GPU topology
    DOCUMENTATION = r'''
options:
  nvidia_smi:
    description:
      - Path or name of the C(nvidia-smi) binary. A bare name is looked up on the node's E(PATH).
      - When a GPU's MIG mode is Enabled, it also runs C(nvidia-smi mig -lgi) (the GPU instances, C(mig) in the
        facts).
      - Ignored when O(bundle_dir) is set.
    type: str
    default: nvidia-smi
  sysfs_root:
    description:
      - Where sysfs is mounted, like node_exporter's C(--path.sysfs).
      - InfiniBand ports are read from C(<sysfs_root>/class/infiniband) and PCIe links and NUMA nodes
        from C(<sysfs_root>/bus/pci/devices).
      - When O(bundle_dir) is set and this option is not, C(<bundle_dir>/sys) is used.
      - A path that is not a directory fails the module before anything is read.
    type: path
  proc_root:
    description:
      - Where procfs is mounted; the loaded NVIDIA kernel module's version and flavour are read from
        C(<proc_root>/driver/nvidia/version).
      - With O(bundle_dir), C(<bundle_dir>/proc) is used.
    type: path
    default: /proc
  bundle_dir:
    description:
      - Read everything from a capture bundle on the node instead of running commands.
      - The bundle holds C(nvidia-smi-q-x.xml), C(nvidia-smi-topo-m.txt), C(nvidia-smi-nvlink-s.txt) and
        C(sys/) (a copy of the sysfs files above), as written by the C(gpuops.node.capture) playbook.
        A C(<file>.rc) beside an output holds the exit status nvidia-smi had when it was captured.
      - Every file is optional; a missing one leaves its part of the facts out and is listed in C(missing).
      - A C(<file>.rc) of 124 or 137 means the capture's time limit stopped that command.
      - The C(dcb) outputs of a RoCE netdev are C(dcb-pfc-<netdev>.txt) and C(dcb-app-dscp-prio-<netdev>.txt)
        (with a C(.rc) when dcb failed); without them PFC and DSCP are not read.
      - C(dcgmi-health-c.json) (and its C(.rc)) is what C(dcgmi health -c -j) printed, when DCGM was on the node.
      - C(nvidia-smi-mig-lgi.txt) (and its C(.rc)) is what C(nvidia-smi mig -lgi) printed, captured when a GPU
        was in MIG mode; read only when the bundle's XML has a GPU whose MIG mode is Enabled.
    type: path
  command_timeout:
    description:
      - Seconds each C(nvidia-smi) call may take. A call that takes longer is killed (with its process group), named
        in C(outputs) with status C(timeout), and the other calls still run.
      - A hung C(nvidia-smi) (a GPU off the bus, a wedged driver) then fails the check instead of blocking the play.
      - Ignored when O(bundle_dir) is set.
    type: int
    default: 60
  dcb:
    description:
      - Path or name of iproute2's C(dcb) binary, run as C(dcb pfc show dev <netdev>) and
        C(dcb -N app show dev <netdev> dscp-prio) for the netdev of every NIC whose link layer is Ethernet (RoCE),
        under the same O(command_timeout). A bare name is looked up on the node's E(PATH) and the sbin directories.
      - When it is not found, cannot run or fails (it prints C(Attribute read - Operation not supported) for a
        netdev without DCB), PFC and DSCP are null with the reason in C(roce.unreadable) and a warning; the checks
        that need them say C(not checked).
      - Ignored when O(bundle_dir) is set.
    type: str
    default: dcb
  dcgmi:
    description:
      - Path or name of DCGM's C(dcgmi), run as C(dcgmi health -c -j) (the health watches of the local host engine)
        under the same O(command_timeout); its report is C(dcgm.health) in the facts.
      - When it is not found (DCGM not installed), cannot reach the host engine or prints what the parser cannot
        read, C(dcgm.health) is null and C(dcgm.unreadable) says why; the C(dcgm_health) check then fails as
        C(not checked).
      - With O(bundle_dir), the bundle's C(dcgmi-health-c.json) (and C(.rc)) is read instead.
    type: str
    default: dcgmi
attributes:
  check_mode:
    support: full
    description: Reads only, so check mode runs it unchanged.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with NVIDIA GPUs, or any host reading a capture bundle.
'''
