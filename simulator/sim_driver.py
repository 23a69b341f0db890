# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Driver emulation for bare simulated nodes (``install_node.py --bare``).

The NVIDIA packages, DKMS and their configuration are real on a bare node; loading a kernel module is
what a container can never do, so it is emulated: ``boot()`` decides which module loads (the newest
installed Debian kernel's DKMS-built ``nvidia*.ko`` and its ``.modinfo``, or the installed user space
without DKMS) and writes ``/run/gpuops-sim/driver.json`` and ``/run/gpuops-sim/proc/driver/nvidia/version``;
``sync()`` places the stand-ins under the files packages ship (diverted to ``<path>.distrib``);
``nvsmi_gate()`` is what nvidia-smi checks first (exit 9, 12 or 18 as the real one). Also the GPU
processes of ``gpuops-sim busy N PID NAME``. Paths are under ``GPUOPS_SIM_ROOT`` (default ``/``);
dpkg queries go through one injectable function (simulator/sim_dpkg.py). See simulator/README.md.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import functools
import glob
import gzip
import json
import lzma
import os
import re
import socket
import stat
import struct
import tempfile
import time
from xml.sax.saxutils import escape as xml_escape

try:  # Debian's version ordering and the dpkg database (simulator/sim_dpkg.py), re-exported
    from .sim_dpkg import dpkg_owner, dpkg_query, installed_packages, package_version, upstream, version_compare
except ImportError:  # imported from the simulator's lib directory (a stand-in, a unit's script)
    from sim_dpkg import dpkg_owner, dpkg_query, installed_packages, package_version, upstream, version_compare  # noqa: E402

LIB_DIR = 'usr/share/gpuops-sim/lib'
RUN_DIR = 'run/gpuops-sim'
DRIVER_JSON = RUN_DIR + '/driver.json'
BOOT_JSON = RUN_DIR + '/boot.json'
PROC_ROOT = RUN_DIR + '/proc'
PROC_VERSION = PROC_ROOT + '/driver/nvidia/version'
BOOT_KERNEL_FILE = 'etc/gpuops-sim/boot-kernel'
# The driver's device nodes, as nvidia-modprobe makes them in /dev, under the simulator's own directory (a node's
# /dev is the container engine's): nvidiaN 195:N and nvidiactl 195:255 (the driver's fixed major), nvidia-uvm and
# nvidia-uvm-tools on a dynamic major (509, as a real node's nvidia-ctk log shows in Azure/aks-gpu#106)
DEV_DIR = RUN_DIR + '/dev'
SYSFS = 'usr/share/gpuops-sim/sys'
NVIDIA_MAJOR = 195
UVM_MAJOR = 509
DISTRIB = '.distrib'

# Files NVIDIA packages ship that the simulator stands in for, and the stand-in each gets
# (a file under LIB_DIR). Debian: nvidia-smi ships /usr/lib/nvidia/current/nvidia-smi and
# nvidia-alternative links /usr/bin/nvidia-smi to it; NVIDIA's CUDA repository packages ship
# /usr/bin/nvidia-smi, nvidia-persistenced and nv-fabricmanager.
STANDINS = (
    ('usr/lib/nvidia/current/nvidia-smi', 'standin-nvidia-smi'),
    ('usr/bin/nvidia-smi', 'standin-nvidia-smi'),
    ('usr/bin/nvidia-persistenced', 'standin-daemon'),
    ('usr/bin/nv-fabricmanager', 'standin-daemon'),
)
STANDIN_MARK = b'gpuops-sim'

NVML = 'libnvidia-ml.so.1'
MODULE_NAMES = ('nvidia', 'nvidia-current')
MODULE_SUFFIXES = ('.ko', '.ko.xz', '.ko.gz', '.ko.zst')
LICENSE_OPEN = 'Dual MIT/GPL'
LICENSE_PROPRIETARY = 'NVIDIA'

# CUDA version nvidia-smi prints for a driver branch: NVIDIA's CUDA Toolkit release notes, table
# "CUDA Toolkit and Corresponding Driver Versions" (the branch of each toolkit's minimum driver),
# and the captures (545.23.08 prints 12.3, 510.47.03 prints 11.6, 565.57.01 prints 12.7).
# A branch not listed gets the CUDA version of the nearest lower branch listed.
CUDA_BY_BRANCH = (
    (470, '11.4'), (510, '11.6'), (515, '11.7'), (520, '11.8'), (525, '12.0'), (530, '12.1'),
    (535, '12.2'), (545, '12.3'), (550, '12.4'), (555, '12.5'), (560, '12.6'), (565, '12.7'),
    (570, '12.8'), (575, '12.9'), (580, '13.0'),
)

# nvidia-smi exit statuses (nvidia-smi(1) RETURN VALUE)
RC_DRIVER = 9
RC_NVML_MISSING = 12
RC_MISMATCH = 18
# What Debian's nvidia-smi 535.261.03 prints (stdout) with no kernel module loaded, in a bookworm
# container: the message and an empty line (tests/fixtures/real/nvsmi-errors/
# couldnt-communicate-debian12-535-no-kernel-module-container.txt; 550.163.01 prints the same).
DRIVER_NOT_LOADED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                     "Make sure that the latest NVIDIA driver is installed and running.\n\n")
# tests/fixtures/real/nvsmi-errors/nvml-driver-library-mismatch-580-with-library-version-line.txt
MISMATCH = 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: %s\n'
# NVML absent (approximation: the message as commonly reported; no capture in the fixtures)
NVML_MISSING = ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the "
                "NVIDIA Display Driver is properly installed and present in your system.\n"
                "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n")


class DriverError(Exception):
    """The emulation cannot do what was asked (reported, never swallowed)."""


def sim_root(environ=None):
    return (os.environ if environ is None else environ).get('GPUOPS_SIM_ROOT') or '/'


def under(root, rel):
    return os.path.join(root, rel.lstrip('/'))


# ---------------------------------------------------------------------------
# NVIDIA versions and packages (the dpkg database: simulator/sim_dpkg.py)
# ---------------------------------------------------------------------------

def cuda_version(driver_version):
    match = re.match(r'^(\d+)\.', driver_version or '')
    if not match:
        return None
    branch = int(match.group(1))
    found = None
    for first, cuda in CUDA_BY_BRANCH:
        if branch >= first:
            found = cuda
    return found


def installed_userspace(query):
    """``{package, package_version, version}`` of the package owning libnvidia-ml.so.1, or None."""
    package, path = dpkg_owner(query, NVML, with_path=True)
    if package is None:
        return None
    raw = package_version(query, package)
    return {'package': package, 'package_version': raw, 'version': upstream(raw), 'path': path}


def open_flavour_package(packages):
    """The first installed NVIDIA package naming the open kernel modules (nvidia-open,
    nvidia-kernel-open-dkms, nvidia-driver-550-open...), or None (opencl is not open)."""
    for name in packages:
        if 'nvidia' in name and re.search(r'(^|-)open(-|$)', name):
            return name
    return None


# ---------------------------------------------------------------------------
# Kernel modules
# ---------------------------------------------------------------------------

def installed_kernels(root):
    names = [os.path.basename(p)[len('vmlinuz-'):] for p in glob.glob(under(root, 'boot/vmlinuz-*'))]
    names = [n for n in names if n and not n.endswith(('.dpkg-tmp', '.dpkg-new', '.bak'))]
    return sorted(names, key=functools.cmp_to_key(version_compare))


def booted_kernel(root, uname_release=None):
    """(kernel release, how it was chosen): the override file, else the newest /boot/vmlinuz-*, else uname -r."""
    override = under(root, BOOT_KERNEL_FILE)
    if os.path.isfile(override):
        with open(override) as handle:
            value = handle.read().strip()
        if value:
            return value, BOOT_KERNEL_FILE
    kernels = installed_kernels(root)
    if kernels:
        return kernels[-1], 'newest /boot/vmlinuz-*'
    return uname_release or os.uname()[2], 'uname -r'


def find_module(root, kver):
    """Path of the NVIDIA module built for ``kver`` (DKMS layout first, then anywhere in the tree)."""
    names = [n + s for n in MODULE_NAMES for s in MODULE_SUFFIXES]
    for base in ('lib/modules', 'usr/lib/modules'):
        tree = under(root, os.path.join(base, kver))
        if not os.path.isdir(tree):
            continue
        for name in names:
            path = os.path.join(tree, 'updates', 'dkms', name)
            if os.path.isfile(path):
                return path
        for dirpath, dirnames, filenames in sorted(os.walk(tree)):
            dirnames.sort()
            for name in names:
                if name in filenames:
                    return os.path.join(dirpath, name)
    return None


def _elf_sections(data):
    """{name: bytes} of an ELF file's sections, or None when ``data`` is not ELF."""
    if data[:4] != b'\x7fELF' or len(data) < 64:
        return None
    end = '<' if data[5:6] == b'\x01' else '>'
    try:
        if data[4:5] == b'\x02':
            shoff = struct.unpack_from(end + 'Q', data, 0x28)[0]
            shentsize, shnum, shstrndx = struct.unpack_from(end + 'HHH', data, 0x3A)
            fmt, off_at = end + 'QQ', 0x18
        else:
            shoff = struct.unpack_from(end + 'I', data, 0x20)[0]
            shentsize, shnum, shstrndx = struct.unpack_from(end + 'HHH', data, 0x2E)
            fmt, off_at = end + 'II', 0x10
        headers = []
        for index in range(shnum):
            base = shoff + index * shentsize
            name = struct.unpack_from(end + 'I', data, base)[0]
            offset, size = struct.unpack_from(fmt, data, base + off_at)
            headers.append((name, offset, size))
        strtab = headers[shstrndx]
        names = data[strtab[1]:strtab[1] + strtab[2]]
        sections = {}
        for name, offset, size in headers:
            label = names[name:names.index(b'\x00', name)].decode('ascii', 'replace')
            sections[label] = data[offset:offset + size]
        return sections
    except (struct.error, IndexError, ValueError):
        return None


def read_module(path):
    """``{version, license, gcc}`` from a kernel module (.ko, .ko.xz, .ko.gz): its ``.modinfo``
    strings (and the compiler from ``.comment``); raises DriverError when it cannot be read."""
    try:
        if path.endswith('.xz'):
            with lzma.open(path) as handle:
                data = handle.read()
        elif path.endswith('.gz'):
            with gzip.open(path) as handle:
                data = handle.read()
        elif path.endswith('.zst'):
            raise DriverError('%s: zstd-compressed modules cannot be read without a zstd library' % path)
        else:
            with open(path, 'rb') as handle:
                data = handle.read()
    except (IOError, OSError, lzma.LZMAError) as exc:
        raise DriverError('%s: %s' % (path, exc))
    sections = _elf_sections(data)
    modinfo = sections.get('.modinfo') if sections else None
    info = {}
    for key, value in re.findall(rb'(?:^|\x00)(version|license|vermagic)=([^\x00]*)', modinfo or data):
        info.setdefault(key.decode('ascii'), value.decode('utf-8', 'replace'))
    comment = (sections or {}).get('.comment', b'')
    gcc = re.search(rb'GCC: \(([^)]*)\) ([0-9][^\x00]*)', comment)
    info['gcc'] = 'gcc version %s (%s)' % (gcc.group(2).decode(), gcc.group(1).decode()) if gcc else None
    if not info.get('version'):
        raise DriverError('%s: no version= in its .modinfo' % path)
    return info


def dkms_managed(root):
    return bool(glob.glob(under(root, 'var/lib/dkms/nvidia*')))


def modprobe_blocked(root, names):
    """The modprobe.d line that keeps the module from loading (``blacklist nvidia``, ``install nvidia
    /bin/false``), or None."""
    pattern = re.compile(r'^\s*(blacklist\s+(\S+)|install\s+(\S+)\s+(/usr)?/bin/(false|true))\s*$')
    for directory in ('etc/modprobe.d', 'usr/lib/modprobe.d', 'lib/modprobe.d'):
        for path in sorted(glob.glob(under(root, directory + '/*.conf'))):
            with open(path, errors='replace') as handle:
                for line in handle:
                    match = pattern.match(line)
                    if match and (match.group(2) or match.group(3)) in names:
                        return '%s: %s' % (path[len(root.rstrip('/')):], line.strip())
    return None


def distro_gcc(root):
    """Fallback GCC line by Debian release (the system compiler of bookworm / trixie)."""
    try:
        with open(under(root, 'etc/debian_version')) as handle:
            release = handle.read().strip()
    except (IOError, OSError):
        release = ''
    if release.startswith('12'):
        return 'gcc version 12.2.0 (Debian 12.2.0-14)'
    return 'gcc version 14.2.0 (Debian 14.2.0-19)'


# ---------------------------------------------------------------------------
# Boot
# ---------------------------------------------------------------------------

def decide(root='/', query=None, uname_release=None):
    """What loads on this boot: ``{loaded, kernel, kernel_source, ...}``; with ``loaded`` True also
    ``version``, ``kernel_module`` (open/proprietary), ``source`` (module/userspace), ``module`` or ``package``;
    with ``loaded`` False a ``reason``."""
    query = query or dpkg_query(root)
    kver, how = booted_kernel(root, uname_release)
    result = {'loaded': False, 'kernel': kver, 'kernel_source': how}
    module = find_module(root, kver)
    if module is not None:
        result['module'] = module[len(root.rstrip('/')):]
        try:
            info = read_module(module)
        except DriverError as exc:
            result['reason'] = str(exc)
            return result
        name = re.sub(r'\.ko(\..*)?$', '', os.path.basename(module))
        blocked = modprobe_blocked(root, ('nvidia', name))
        if blocked:
            result['reason'] = 'blocked by %s' % blocked
            return result
        stamp = os.stat(module).st_mtime
        result.update(loaded=True, source='module', version=info['version'], module_name=name,
                      kernel_module='open' if info.get('license') == LICENSE_OPEN else 'proprietary',
                      license=info.get('license'), gcc=info.get('gcc') or distro_gcc(root), built=stamp,
                      builder='root@%s' % socket.gethostname())
        return result
    if dkms_managed(root):
        result['reason'] = 'DKMS manages the NVIDIA module but none is built for kernel %s' % kver
        return result
    userspace = installed_userspace(query)
    if userspace is None or not userspace.get('version'):
        result['reason'] = 'no NVIDIA kernel module for kernel %s and no NVIDIA user space installed' % kver
        return result
    blocked = modprobe_blocked(root, ('nvidia',))
    if blocked:
        result['reason'] = 'blocked by %s' % blocked
        return result
    open_package = open_flavour_package(installed_packages(query))
    nvml = under(root, userspace['path'])
    result.update(loaded=True, source='userspace', version=userspace['version'], package=userspace['package'],
                  kernel_module='open' if open_package else 'proprietary', flavour_from=open_package,
                  gcc=distro_gcc(root), built=os.stat(nvml).st_mtime if os.path.exists(nvml) else time.time(),
                  builder='dvs-builder@gpuops-sim')
    return result


def _date(stamp):
    when = time.gmtime(stamp if stamp is not None else 0)
    return '%s %2d %s UTC %d' % (time.strftime('%a %b', when), when.tm_mday, time.strftime('%H:%M:%S', when),
                                 when.tm_year)


def proc_version_text(decision):
    """/proc/driver/nvidia/version as the loaded module prints it (tests/fixtures/real/nvidia-proc)."""
    date = _date(decision.get('built'))
    if decision['kernel_module'] == 'open':
        head = 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (%s)  %s' % (
            decision['version'], decision.get('builder') or 'dvs-builder@gpuops-sim', date)
    else:
        head = 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  %s' % (decision['version'], date)
    return '%s\nGCC version:  %s \n' % (head, decision.get('gcc') or 'gcc version unknown')


def write_file(path, content, mode=0o644):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    fd, tmp = tempfile.mkstemp(prefix='.gpuops-sim.', dir=os.path.dirname(path))
    with os.fdopen(fd, 'wb') as handle:
        handle.write(content if isinstance(content, bytes) else content.encode('utf-8'))
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def boot(root='/', query=None, uname_release=None):
    """Decide what loads and write boot.json, driver.json and the proc tree (or remove them)."""
    decision = decide(root, query, uname_release)
    decision['booted_at'] = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    decision['proc_root'] = '/' + PROC_ROOT
    write_file(under(root, BOOT_JSON), json.dumps(decision, indent=2, sort_keys=True) + '\n')
    make_device_nodes(root, decision['loaded'])
    # the proc tree exists on every boot, as /proc does; driver/nvidia only while a module is loaded
    if not os.path.isdir(under(root, PROC_ROOT)):
        os.makedirs(under(root, PROC_ROOT))
    if decision['loaded']:
        write_file(under(root, PROC_VERSION), proc_version_text(decision))
        write_file(under(root, DRIVER_JSON), json.dumps(decision, indent=2, sort_keys=True) + '\n')
    else:
        for rel in (DRIVER_JSON, PROC_VERSION):
            if os.path.lexists(under(root, rel)):
                os.remove(under(root, rel))
    return decision


def nvidia_functions(root, classes):
    """PCI addresses, sorted, of the NVIDIA functions (vendor 0x10de) of the profile's sysfs tree whose class starts
    with one of ``classes`` (``0x0300``/``0x0302``: GPUs; ``0x0680``: NVSwitches)."""
    found = []
    for dev in sorted(glob.glob(under(root, SYSFS + '/bus/pci/devices/*'))):
        values = {}
        for name in ('vendor', 'class'):
            try:
                with open(os.path.join(dev, name)) as handle:
                    values[name] = handle.read().strip().lower()
            except (IOError, OSError):
                values[name] = ''
        if values['vendor'] == '0x10de' and values['class'].startswith(tuple(classes)):
            found.append(os.path.basename(dev))
    return found


def gpu_count(root='/'):
    """The NVIDIA display and 3D controllers of the profile's sysfs tree."""
    return len(nvidia_functions(root, ('0x0300', '0x0302')))


def make_device_nodes(root, driver_loaded):
    """Empty DEV_DIR, as every boot empties /dev, and make the driver's nodes while a module is loaded."""
    dev = under(root, DEV_DIR)
    if os.path.isdir(dev):
        for dirpath, dirnames, filenames in os.walk(dev, topdown=False):
            for name in filenames:
                os.remove(os.path.join(dirpath, name))
            for name in dirnames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    os.remove(path)
                else:
                    os.rmdir(path)
    else:
        os.makedirs(dev)
    if not driver_loaded:
        return []
    nodes = [('nvidia%d' % index, NVIDIA_MAJOR, index) for index in range(gpu_count(root))]
    nodes += [('nvidiactl', NVIDIA_MAJOR, 255), ('nvidia-uvm', UVM_MAJOR, 0), ('nvidia-uvm-tools', UVM_MAJOR, 1)]
    for name, major, minor in nodes:
        os.mknod(os.path.join(dev, name), 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    return [name for name, _major, _minor in nodes]


def loaded(root='/'):
    """The loaded module (driver.json) or None."""
    path = under(root, DRIVER_JSON)
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as handle:
            data = json.load(handle)
    except ValueError:
        return None
    return data if data.get('loaded') else None


def status(root='/', query=None):
    """What ``gpuops-sim state`` shows under "driver"."""
    last = None
    if os.path.isfile(under(root, BOOT_JSON)):
        with open(under(root, BOOT_JSON)) as handle:
            last = json.load(handle)
    return {'mode': 'emulated', 'loaded': loaded(root), 'last_boot': last,
            'userspace': installed_userspace(query or dpkg_query(root)),
            'standins': dict((rel, os.path.isfile(under(root, rel)) and is_standin(under(root, rel)))
                             for rel, _kind in STANDINS)}


# ---------------------------------------------------------------------------
# nvidia-smi in emulated mode
# ---------------------------------------------------------------------------

def nvsmi_gate(root='/', query=None):
    """``(rc, out, err)`` when nvidia-smi must fail, else ``{driver_version, cuda_version}`` to answer with."""
    query = query or dpkg_query(root)
    userspace = installed_userspace(query)
    if userspace is None:
        return (RC_NVML_MISSING, NVML_MISSING, '')
    module = loaded(root)
    if module is None:
        return (RC_DRIVER, DRIVER_NOT_LOADED, '')
    if userspace.get('version') != module['version']:
        nvml = '.'.join((userspace.get('version') or '').split('.')[:2])
        return (RC_MISMATCH, MISMATCH % nvml, '')
    return {'driver_version': module['version'], 'cuda_version': cuda_version(module['version'])}


# ---------------------------------------------------------------------------
# Stand-ins (dpkg diversions)
# ---------------------------------------------------------------------------

def is_standin(path):
    """A regular file the simulator wrote (a script naming gpuops-sim), never a package's binary or a link."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, 'rb') as handle:
            head = handle.read(4096)
    except (IOError, OSError):
        return False
    return head.startswith(b'#!') and STANDIN_MARK in head


def sync(root='/'):
    """Place a stand-in where a package shipped the real file (``<path>.distrib``), remove it elsewhere."""
    placed, removed, kept = [], [], []
    for rel, kind in STANDINS:
        path = under(root, rel)
        template = under(root, os.path.join(LIB_DIR, kind))
        if os.path.lexists(path + DISTRIB):
            with open(template, 'rb') as handle:
                content = handle.read()
            current = None
            if is_standin(path):
                with open(path, 'rb') as handle:
                    current = handle.read()
            elif os.path.lexists(path):
                raise DriverError('%s is not a gpuops-sim stand-in; refusing to replace it' % path)
            if current != content or not os.access(path, os.X_OK):
                write_file(path, content, 0o755)
                placed.append('/' + rel)
            else:
                kept.append('/' + rel)
        elif is_standin(path):
            os.remove(path)
            removed.append('/' + rel)
    return {'placed': placed, 'removed': removed, 'kept': kept}


# ---------------------------------------------------------------------------
# GPU processes (gpuops-sim busy N PID NAME)
# ---------------------------------------------------------------------------

def processes_element(indent, unit, processes):
    """``<processes>`` with one real-format ``<process_info>`` per process (empty: the real empty form)."""
    lines = ['<processes>']
    for proc in processes:
        i1, i2 = indent + unit, indent + unit * 2
        lines += [i1 + '<process_info>',
                  i2 + '<gpu_instance_id>N/A</gpu_instance_id>',
                  i2 + '<compute_instance_id>N/A</compute_instance_id>',
                  i2 + '<pid>%d</pid>' % proc['pid'],
                  i2 + '<type>C</type>',
                  i2 + '<process_name>%s</process_name>' % xml_escape(proc['name']),
                  i2 + '<used_memory>%d MiB</used_memory>' % proc['used_memory_mib'],
                  i1 + '</process_info>']
    lines.append(indent + '</processes>')
    return '\n'.join(lines)


def process_rows(gpu_index, processes):
    """Rows of the default table's Processes box (the real 570-driver column layout)."""
    rows = []
    for proc in processes:
        left = '|' + ('%d' % gpu_index).rjust(5) + '   N/A  N/A' + ('%d' % proc['pid']).rjust(16) + '      C   '
        memory = '%dMiB' % proc['used_memory_mib']
        name = proc['name']
        room = 89 - (len(left) - 1) - len(memory) - 1
        if len(name) > room:
            name = '...' + name[-(room - 3):]
        rows.append(left + name.ljust(room) + memory + ' |')
    return rows


def new_process(argv, default_mib=1024):
    """``busy N [PID [NAME]]`` arguments -> a process record, or None without a PID."""
    if not argv:
        return None
    if not argv[0].isdigit():
        raise DriverError('busy: PID must be a number, not %r' % argv[0])
    return {'pid': int(argv[0]), 'name': argv[1] if len(argv) > 1 else 'python3', 'used_memory_mib': default_mib}
