#!/bin/sh
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Capture a gpuops.node bundle: what gpuops.node.gpu_topology_facts reads, as files.
#
#   gpuops-capture.sh WORK_DIR [NVIDIA_SMI] [SYSFS_ROOT] [NAME] [TIMEOUT]
#
# Writes WORK_DIR/bundle/ (layout below) and WORK_DIR/bundle.tar.gz. Read-only
# everywhere else: it only runs nvidia-smi queries and reads sysfs. POSIX sh.
#
# TIMEOUT (a positive integer, default 60) is how many seconds each nvidia-smi
# call may run: it runs under `timeout -k 5 TIMEOUT` when coreutils timeout is
# there (without it the call runs unbounded, and capture.source says so). A
# call that runs longer is stopped and the next step runs.
#
#   nvidia-smi-q-x.xml, nvidia-smi-topo-m.txt, nvidia-smi-nvlink-s.txt
#       stdout then stderr of the command, as the modules read it live;
#       <file>.rc holds the exit status when it is not 0: 124 when the
#       command timed out (137 when it had to be killed), keeping what it
#       printed until then
#   nvidia-smi-mig-lgi.txt   `nvidia-smi mig -lgi` (the MIG GPU instances), when the XML has a GPU whose
#       MIG mode is Enabled; <file>.rc as above (6 with "No GPU instances found")
#   sys/class/infiniband/<hca>/ports/<n>/{state,phys_state,rate,link_layer,counters/<error counters>,
#       counters/port_xmit_packets,hw_counters/*}
#   sys/class/infiniband/<hca>/device -> ../../../bus/pci/devices/<address>
#       (or device/numa_node when the HCA has no PCI address)
#   sys/bus/pci/devices/<address>/{current_link_speed,current_link_width,max_link_speed,
#       max_link_width,numa_node,vendor,device,class}   for every GPU, NVSwitch and HCA
#   sys/bus/pci/devices/<address>/net/<netdev>/{type,operstate,flags}, sys/class/net/<netdev> -> that directory,
#       and its DCQCN files ecn/roce_{rp,np}/enable/<0-7>, ecn/roce_np/cnp_{dscp,802p_prio}
#   sys/kernel/config/rdma_cm/<hca>/ports/<n>/default_roce_{tos,mode}   when the HCA's configfs directory exists
#   sys/module/ (empty) and sys/module/ib_ipoib/ (empty, when ib_ipoib is loaded)
#   dcb-pfc-<netdev>.txt, dcb-app-dscp-prio-<netdev>.txt   `dcb pfc show dev <netdev>` and
#       `dcb -N app show dev <netdev> dscp-prio` of each Ethernet netdev of an HCA with an Ethernet port,
#       when dcb (iproute2) is on the node, under the same time limit; <file>.rc as for nvidia-smi
#   dcgmi-health-c.json   `dcgmi health -c -j` (the DCGM host engine's health watches), when dcgmi is on the
#       node, under the same time limit; <file>.rc as for nvidia-smi
#   proc/driver/nvidia/version   the loaded kernel module's version line, when a module is loaded
#   capture.source    host, date, kernel, driver, command lines
set -u

usage='usage: gpuops-capture.sh WORK_DIR [NVIDIA_SMI] [SYSFS_ROOT] [NAME] [TIMEOUT]'
work=${1:?$usage}
smi=${2:-nvidia-smi}
sysfs=${3:-/sys}
name=${4:-$(hostname 2>/dev/null || uname -n)}
limit=${5:-60}
bundle=$work/bundle
commands=
pci_addrs=
nvswitches=

# TIMEOUT: digits, not all zeros
case $limit in
    *[!0-9]*) limit_ok= ;;
    *[1-9]*) limit_ok=1 ;;
    *) limit_ok= ;;
esac
if [ -z "$limit_ok" ]; then
    echo "gpuops-capture.sh: TIMEOUT must be a positive whole number of seconds, got '$limit'" >&2
    echo "$usage" >&2
    exit 2
fi
limit=$(printf '%s\n' "$limit" | sed 's/^0*//')

mkdir -p "$bundle" || exit 1
LC_ALL=C
export LC_ALL

# smi_call OUT ERR ARGS...: nvidia-smi ARGS, stdout into OUT and stderr into ERR, under timeout when the
# node has it: TERM after $limit s, KILL 5 s later. Without --foreground, timeout signals its whole process
# group, itself included, so even a process that KILL cannot end yet (stuck in the driver) does not hold up
# the capture. The command runs in a subshell that redirects and execs it: what this shell says about a
# command killed by a signal ("Killed") goes to /dev/null, not into ERR (dash redirects in the parent).
if command -v timeout >/dev/null 2>&1 && timeout -k 5 10 true </dev/null >/dev/null 2>&1; then
    timed=1
    limits="each nvidia-smi call under timeout -k 5 $limit"
else
    timed=
    limits="no timeout command on the node: nvidia-smi calls ran without a time limit"
fi
smi_call() {
    out=$1
    err=$2
    shift 2
    tool_call "$out" "$err" "$smi" "$@"
}

# tool_call OUT ERR BINARY ARGS...: the same for any binary
tool_call() {
    out=$1
    err=$2
    shift 2
    if [ -n "$timed" ]; then
        (exec timeout -k 5 "$limit" "$@" </dev/null >"$out" 2>"$err") 2>/dev/null
    else
        (exec "$@" </dev/null >"$out" 2>"$err") 2>/dev/null
    fi
}

# status_note RC: how a call that timed out ended, for capture.source
status_note() {
    if [ -n "$timed" ] && [ "$1" -eq 124 ]; then
        echo ": timed out after $limit s"
    elif [ -n "$timed" ] && [ "$1" -eq 137 ]; then
        echo ": timed out after $limit s, killed 5 s later"
    fi
}

# run_smi FILE ARGS...: stdout, then stderr, into FILE; FILE.rc when the status is not 0
run_smi() {
    file=$1
    shift
    run_tool "$file" "$smi" "$@"
}

# run_tool FILE BINARY ARGS...: the same for any binary
run_tool() {
    file=$1
    shift
    tool_call "$bundle/$file" "$bundle/$file.stderr" "$@"
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
  $* > $file   (exit status $rc$(status_note "$rc"))"
}

# query ARGS...: nvidia-smi's stdout into $work/query.out, a file: a process that outlived its timeout would
# keep a pipe open, and the reader waiting. A query that timed out is noted for capture.source.
queries=
query() {
    smi_call "$work/query.out" /dev/null "$@"
    qrc=$?
    note=$(status_note "$qrc")
    if [ -n "$note" ]; then
        queries="$queries
  $smi $*   (exit status $qrc$note)"
    fi
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
# the MIG GPU instances, when the XML has a GPU in MIG mode
if grep -q '<current_mig>Enabled</current_mig>' "$bundle/nvidia-smi-q-x.xml" 2>/dev/null; then
    run_smi nvidia-smi-mig-lgi.txt mig -lgi
fi

# GPUs: what nvidia-smi reports, plus every NVIDIA display/3D controller in sysfs
# (finds the GPUs even when the driver is not loaded or a GPU fell off the bus)
query --query-gpu=pci.bus_id --format=csv,noheader
gpus=$(tr 'A-F' 'a-f' <"$work/query.out" | sed -n 's/^ *[0-9a-f]*\([0-9a-f]\{4\}:[0-9a-f]\{2\}:[0-9a-f]\{2\}\.[0-7]\) *$/\1/p')
for dev in "$sysfs"/bus/pci/devices/*; do
    [ -f "$dev/vendor" ] || continue
    [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] || continue
    case $(cat "$dev/class" 2>/dev/null) in
        0x0300*|0x0302*) gpus="$gpus $(basename "$dev")" ;;
        0x0680*) nvswitches="$nvswitches $(basename "$dev")" ;;
    esac
done
for addr in $gpus; do
    add_pci "$addr"
done
gpu_addrs=$pci_addrs
for addr in $nvswitches; do
    add_pci "$addr"
done

# the loaded kernel module's version and flavour (open or proprietary), when a module is loaded
if [ -f /proc/driver/nvidia/version ]; then
    mkdir -p "$bundle/proc/driver/nvidia"
    cat /proc/driver/nvidia/version >"$bundle/proc/driver/nvidia/version" 2>/dev/null ||
        rm -f "$bundle/proc/driver/nvidia/version"
fi

# RDMA devices (and the port error counters health checks read)
ib_error_counters="link_downed link_error_recovery symbol_error port_rcv_errors port_rcv_remote_physical_errors
 port_xmit_discards local_link_integrity_errors excessive_buffer_overrun_errors"
hcas=
roce_hcas=
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
        for f in $ib_error_counters port_xmit_packets; do
            [ -f "$port_path/counters/$f" ] && copy_sys "class/infiniband/$hca/ports/$port/counters/$f"
        done
        for counter in "$port_path"/hw_counters/*; do
            [ -f "$counter" ] && copy_sys "class/infiniband/$hca/ports/$port/hw_counters/$(basename "$counter")"
        done
        if [ "$(cat "$port_path/link_layer" 2>/dev/null)" = Ethernet ]; then
            case " $roce_hcas " in
                *" $hca "*) ;;
                *) roce_hcas="$roce_hcas $hca" ;;
            esac
        fi
        for f in default_roce_tos default_roce_mode; do
            copy_sys "kernel/config/rdma_cm/$hca/ports/$port/$f"
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
    # network interfaces of an HCA: type (32 is IPoIB), operstate, class/net link, DCQCN
    for net in "$sysfs/bus/pci/devices/$addr"/net/*; do
        [ -e "$net" ] || continue
        nd=$(basename "$net")
        mkdir -p "$bundle/sys/bus/pci/devices/$addr/net/$nd" "$bundle/sys/class/net"
        ln -sfn "../../bus/pci/devices/$addr/net/$nd" "$bundle/sys/class/net/$nd"
        for f in type operstate flags; do
            copy_sys "bus/pci/devices/$addr/net/$nd/$f"
        done
        for point in rp np; do
            for prio in 0 1 2 3 4 5 6 7; do
                copy_sys "class/net/$nd/ecn/roce_$point/enable/$prio"
            done
        done
        copy_sys "class/net/$nd/ecn/roce_np/cnp_dscp"
        copy_sys "class/net/$nd/ecn/roce_np/cnp_802p_prio"
    done
done

# ib_ipoib loaded or not: empty directories say it
if [ -d "$sysfs/module" ]; then
    mkdir -p "$bundle/sys/module"
    [ -d "$sysfs/module/ib_ipoib" ] && mkdir -p "$bundle/sys/module/ib_ipoib"
fi

# PFC and the DSCP map of each Ethernet netdev of an HCA with an Ethernet port (dcb from iproute2)
dcb=$(command -v dcb 2>/dev/null || true)
for d in /usr/sbin/dcb /sbin/dcb; do
    [ -z "$dcb" ] && [ -x "$d" ] && dcb=$d
done
for hca in $roce_hcas; do
    for net in "$sysfs/class/infiniband/$hca"/device/net/*; do
        [ "$(cat "$net/type" 2>/dev/null)" = 1 ] || continue
        nd=$(basename "$net")
        if [ -n "$dcb" ]; then
            run_tool "dcb-pfc-$nd.txt" "$dcb" pfc show dev "$nd"
            run_tool "dcb-app-dscp-prio-$nd.txt" "$dcb" -N app show dev "$nd" dscp-prio
        else
            commands="$commands
  dcb pfc show dev $nd, dcb -N app show dev $nd dscp-prio   (not run: no dcb on the node)"
        fi
    done
done

# DCGM's health report, when DCGM is installed
dcgmi=$(command -v dcgmi 2>/dev/null || true)
if [ -n "$dcgmi" ]; then
    run_tool dcgmi-health-c.json "$dcgmi" health -c -j
fi

# CPUs of each NUMA node
for node_path in "$sysfs"/devices/system/node/node*; do
    [ -d "$node_path" ] || continue
    copy_sys "devices/system/node/$(basename "$node_path")/cpulist"
done

driver=$(sed -n '1p' /proc/driver/nvidia/version 2>/dev/null)
if [ -z "$driver" ]; then
    query --query-gpu=driver_version --format=csv,noheader
    driver=$(sed -n '1p' "$work/query.out")
fi
product=$(cat "$sysfs/class/dmi/id/sys_vendor" "$sysfs/class/dmi/id/product_name" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//')

cat >"$bundle/capture.source" <<EOF
Capture bundle written by gpuops.node playbooks/capture.yml (files/gpuops-capture.sh).
Host: $name ($(hostname -f 2>/dev/null || uname -n))
Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
Kernel: $(uname -srm)
Driver: ${driver:-unknown (nvidia module not loaded?)}
Machine: ${product:-unknown}
Commands (LC_ALL=C; $limits):$commands
  $smi --query-gpu=pci.bus_id --format=csv,noheader   (GPU addresses, plus NVIDIA display/3D PCI functions in sysfs)$queries
Sysfs root: $sysfs
  class/infiniband/*/ports/*/{state,phys_state,rate,link_layer,counters/,hw_counters/}, class/infiniband/*/device -> PCI address
  bus/pci/devices/<address>/{current_link_speed,current_link_width,max_link_speed,max_link_width,numa_node,vendor,device,class,net/}
  class/net/<netdev>/{type,operstate,flags,ecn/}, kernel/config/rdma_cm/<hca>/ports/*, module/ib_ipoib
  devices/system/node/node*/cpulist
GPU PCI addresses:${gpu_addrs:- none}
NVSwitch PCI addresses:${nvswitches:- none}
RDMA devices:${hcas:- none}
Verbatim command output; may hold GPU serial numbers and UUIDs: review before publishing.
EOF

rm -f "$work/query.out"
tar -czf "$work/bundle.tar.gz" -C "$bundle" . || exit 1
echo "$work/bundle.tar.gz"
