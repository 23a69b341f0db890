#!/bin/sh
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Capture a gpuops.node bundle: what gpuops.node.gpu_topology_facts reads, as files.
#
#   gpuops-capture.sh WORK_DIR [NVIDIA_SMI] [SYSFS_ROOT] [NAME]
#
# Writes WORK_DIR/bundle/ (layout below) and WORK_DIR/bundle.tar.gz. Read-only
# everywhere else: it only runs nvidia-smi queries and reads sysfs. POSIX sh.
#
#   nvidia-smi-q-x.xml, nvidia-smi-topo-m.txt, nvidia-smi-nvlink-s.txt
#       stdout then stderr of the command, as the modules read it live;
#       <file>.rc holds the exit status when it is not 0
#   sys/class/infiniband/<hca>/ports/<n>/{state,phys_state,rate,link_layer,counters/<error counters>}
#   sys/class/infiniband/<hca>/device -> ../../../bus/pci/devices/<address>
#       (or device/numa_node when the HCA has no PCI address)
#   sys/bus/pci/devices/<address>/{current_link_speed,current_link_width,max_link_speed,
#       max_link_width,numa_node,vendor,device,class}   for every GPU and HCA
#   capture.source    host, date, kernel, driver, command lines
set -u

work=${1:?usage: gpuops-capture.sh WORK_DIR [NVIDIA_SMI] [SYSFS_ROOT] [NAME]}
smi=${2:-nvidia-smi}
sysfs=${3:-/sys}
name=${4:-$(hostname 2>/dev/null || uname -n)}
bundle=$work/bundle
commands=
pci_addrs=

mkdir -p "$bundle" || exit 1
LC_ALL=C
export LC_ALL

# run_smi FILE ARGS...: stdout, then stderr, into FILE; FILE.rc when the status is not 0
run_smi() {
    file=$1
    shift
    "$smi" "$@" >"$bundle/$file" 2>"$bundle/$file.stderr"
    rc=$?
    if [ -s "$bundle/$file.stderr" ]; then
        if [ -s "$bundle/$file" ] && [ -n "$(tail -c 1 "$bundle/$file")" ]; then
            echo >>"$bundle/$file"
        fi
        cat "$bundle/$file.stderr" >>"$bundle/$file"
    fi
    rm -f "$bundle/$file.stderr"
    if [ "$rc" -ne 0 ]; then
        echo "$rc" >"$bundle/$file.rc"
    fi
    commands="$commands
  $smi $* > $file   (exit status $rc)"
}

# copy REL: $sysfs/REL -> $bundle/sys/REL, when readable
copy_sys() {
    [ -f "$sysfs/$1" ] || return 0
    mkdir -p "$(dirname "$bundle/sys/$1")"
    if ! cat "$sysfs/$1" >"$bundle/sys/$1" 2>/dev/null; then
        rm -f "$bundle/sys/$1"
    fi
}

is_pci_addr() {
    printf '%s\n' "$1" | grep -Eq '^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$'
}

add_pci() {
    case " $pci_addrs " in
        *" $1 "*) ;;
        *) pci_addrs="$pci_addrs $1" ;;
    esac
}

run_smi nvidia-smi-q-x.xml -q -x
run_smi nvidia-smi-topo-m.txt topo -m
run_smi nvidia-smi-nvlink-s.txt nvlink -s

# GPUs: what nvidia-smi reports, plus every NVIDIA display/3D controller in sysfs
# (finds the GPUs even when the driver is not loaded or a GPU fell off the bus)
gpus=$("$smi" --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null |
    tr 'A-F' 'a-f' | sed -n 's/^ *[0-9a-f]*\([0-9a-f]\{4\}:[0-9a-f]\{2\}:[0-9a-f]\{2\}\.[0-7]\) *$/\1/p')
for dev in "$sysfs"/bus/pci/devices/*; do
    [ -f "$dev/vendor" ] || continue
    [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] || continue
    case $(cat "$dev/class" 2>/dev/null) in
        0x0300*|0x0302*) gpus="$gpus $(basename "$dev")" ;;
    esac
done
for addr in $gpus; do
    add_pci "$addr"
done
gpu_addrs=$pci_addrs

# RDMA devices (and the port error counters health checks read)
ib_error_counters="link_downed link_error_recovery symbol_error port_rcv_errors port_rcv_remote_physical_errors
 port_xmit_discards local_link_integrity_errors excessive_buffer_overrun_errors"
hcas=
for hca_path in "$sysfs"/class/infiniband/*; do
    [ -d "$hca_path" ] || continue
    hca=$(basename "$hca_path")
    hcas="$hcas $hca"
    for port_path in "$hca_path"/ports/*; do
        [ -d "$port_path" ] || continue
        port=$(basename "$port_path")
        for f in state phys_state rate link_layer; do
            copy_sys "class/infiniband/$hca/ports/$port/$f"
        done
        for f in $ib_error_counters; do
            [ -f "$port_path/counters/$f" ] && copy_sys "class/infiniband/$hca/ports/$port/counters/$f"
        done
    done
    addr=
    if [ -L "$hca_path/device" ]; then
        addr=$(basename "$(readlink "$hca_path/device")" | tr 'A-F' 'a-f')
    fi
    if [ -n "$addr" ] && is_pci_addr "$addr"; then
        add_pci "$addr"
        mkdir -p "$bundle/sys/class/infiniband/$hca" "$bundle/sys/bus/pci/devices/$addr"
        ln -sfn "../../../bus/pci/devices/$addr" "$bundle/sys/class/infiniband/$hca/device"
    else
        copy_sys "class/infiniband/$hca/device/numa_node"
    fi
done

for addr in $pci_addrs; do
    for f in current_link_speed current_link_width max_link_speed max_link_width numa_node vendor device class; do
        copy_sys "bus/pci/devices/$addr/$f"
    done
    # network interfaces of an HCA (names only)
    for net in "$sysfs/bus/pci/devices/$addr"/net/*; do
        [ -e "$net" ] && mkdir -p "$bundle/sys/bus/pci/devices/$addr/net/$(basename "$net")"
    done
done

# CPUs of each NUMA node
for node_path in "$sysfs"/devices/system/node/node*; do
    [ -d "$node_path" ] || continue
    copy_sys "devices/system/node/$(basename "$node_path")/cpulist"
done

driver=$(sed -n '1p' /proc/driver/nvidia/version 2>/dev/null)
if [ -z "$driver" ]; then
    driver=$("$smi" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | sed -n '1p')
fi
product=$(cat "$sysfs/class/dmi/id/sys_vendor" "$sysfs/class/dmi/id/product_name" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//')

cat >"$bundle/capture.source" <<EOF
Capture bundle written by gpuops.node playbooks/capture.yml (files/gpuops-capture.sh).
Host: $name ($(hostname -f 2>/dev/null || uname -n))
Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
Kernel: $(uname -srm)
Driver: ${driver:-unknown (nvidia module not loaded?)}
Machine: ${product:-unknown}
Commands (LC_ALL=C):$commands
  $smi --query-gpu=pci.bus_id --format=csv,noheader   (GPU addresses, plus NVIDIA display/3D PCI functions in sysfs)
Sysfs root: $sysfs
  class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}, class/infiniband/*/device -> PCI address
  bus/pci/devices/<address>/{current_link_speed,current_link_width,max_link_speed,max_link_width,numa_node,vendor,device,class,net/}
  devices/system/node/node*/cpulist
GPU PCI addresses:${gpu_addrs:- none}
RDMA devices:${hcas:- none}
Verbatim command output; may hold GPU serial numbers and UUIDs: review before publishing.
EOF

tar -czf "$work/bundle.tar.gz" -C "$bundle" . || exit 1
echo "$work/bundle.tar.gz"
