# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A ``dcb`` (iproute2 6.1) stand-in for the simulated netdevs, installed as ``/usr/local/sbin/dcb``.

For a netdev of the simulated node (``class/net/<dev>`` under ``/usr/share/gpuops-sim/sys``) it answers
``dcb [-j] [-p] [-N] [-s] pfc {show|set}`` and ``app {show|flush|add|del|replace}`` as iproute2 6.1's
dcb does against the mlx5 driver: the same parsing (keyword prefixes, ``all:``, DSCP names from
/etc/iproute2/rt_dsfield, hex and octal numbers), messages, output format (trailing spaces included),
JSON and exit statuses (dcb/dcb.c, dcb_pfc.c, dcb_app.c, lib/utils.c, lib/json_writer.c at v6.1.0), and
the mlx5 driver's answers (en_dcbnl.c: one priority per DSCP, DSCP entries only, PFC delay = cable length
below 1000 m, MACsec bypass not kept). An IPoIB netdev has no DCB (``Operation not supported``). The state
lives in ``/run/gpuops-sim/dcb.json`` (sim_rdma.py resets it at boot). Anything else (other devices, help,
options, batch mode) runs the real ``/usr/sbin/dcb`` with the same arguments.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import fcntl
import getopt
import json
import os
import sys

try:
    from .sim_iproute2 import (RT_DSFIELD, U32_ALL, DsNames, Out, check_ifname, key_num, key_num_all, matches,
                               parse_mapping, parse_on_off, strtoul)
except ImportError:  # the installed stand-in: the simulator's lib directory
    for _lib in (os.path.dirname(os.path.realpath(__file__)),
                 os.path.join(os.environ.get('GPUOPS_SIM_ROOT') or '/', 'usr/share/gpuops-sim/lib')):
        if os.path.isfile(os.path.join(_lib, 'sim_iproute2.py')):
            sys.path.insert(0, _lib)
            break
    from sim_iproute2 import (RT_DSFIELD, U32_ALL, DsNames, Out, check_ifname, key_num, key_num_all,  # noqa: E402
                              matches, parse_mapping, parse_on_off, strtoul)

REAL_DCB = '/usr/sbin/dcb'
SYSFS = 'usr/share/gpuops-sim/sys'
STATE = 'run/gpuops-sim/dcb.json'
SEL_ETHERTYPE, SEL_STREAM, SEL_DGRAM, SEL_ANY, SEL_DSCP = 1, 2, 3, 4, 5
PFC_DEFAULTS = {'pfc_cap': 8, 'pfc_en': 0, 'delay': 7, 'mbc': False}   # sim_rdma.PFC_DEFAULTS
MLX5E_MAX_CABLE_LENGTH = 1000
LONG_OPTIONS = ['Version', 'force', 'batch=', 'iec', 'json', 'Numeric', 'pretty', 'statistics', 'netns=', 'help']

HELP_PFC_SET = ('Usage: dcb pfc set dev STRING\n           [ prio-pfc PFC-MAP ]\n'
                '           [ macsec-bypass { on | off } ]\n           [ delay INTEGER ]\n\n'
                ' where PFC-MAP := [ PFC-MAP ] PFC-MAPPING\n       PFC-MAPPING := { all | TC }:PFC\n'
                '       TC := { 0 .. 7 }\n       PFC := { on | off }\n\n')
HELP_PFC_SHOW = ('Usage: dcb [ -s ] pfc show dev STRING\n           [ pfc-cap ] [ prio-pfc ] [ macsec-bypass ]\n'
                 '           [ delay ] [ requests ] [ indications ]\n\n')
HELP_APP_SHOW = ('Usage: dcb app { show | flush } dev STRING\n           [ default-prio ]\n'
                 '           [ ethtype-prio ]\n           [ stream-port-prio ]\n           [ dgram-port-prio ]\n'
                 '           [ port-prio ]\n           [ dscp-prio ]\n\n')
HELP_APP_ADD = ('Usage: dcb app { add | del | replace } dev STRING\n           [ default-prio PRIO ]\n'
                '           [ ethtype-prio ET:PRIO ]\n           [ stream-port-prio PORT:PRIO ]\n'
                '           [ dgram-port-prio PORT:PRIO ]\n           [ port-prio PORT:PRIO ]\n'
                '           [ dscp-prio INTEGER:PRIO ]\n\n where PRIO := { 0 .. 7 }\n'
                '       ET := { 0x600 .. 0xffff }\n       PORT := { 1 .. 65535 }\n       DSCP := { 0 .. 63 }\n\n')
INCOMPLETE = 'Command line is not complete. Try option "help"\n'


class Passthrough(Exception):
    """Not for the simulator: run the real dcb with the same arguments."""


class Done(Exception):
    def __init__(self, rc):
        Exception.__init__(self, rc)
        self.rc = rc


class DcbError(Exception):
    """A netlink request failed: ``Attribute read|write: <strerror>``."""

    def __init__(self, code, write):
        Exception.__init__(self, code)
        self.code, self.write = code, write


def dcb_parse_mapping(out, what_key, key, max_key, what_value, value, max_value, keys_out):
    if key != U32_ALL and key > max_key:
        out.stderr('In %s:%s mapping, %s is expected to be 0..%d\n' % (what_key, what_value, what_key, max_key))
        return False
    if value > max_value:
        out.stderr('In %s:%s mapping, %s is expected to be 0..%d\n' % (what_key, what_value, what_value, max_value))
        return False
    keys_out.extend(range(max_key + 1) if key == U32_ALL else [key])
    return True


# ---------------------------------------------------------------------------
# The simulated device (the mlx5 driver's dcbnl answers)
# ---------------------------------------------------------------------------

class Device(object):
    def __init__(self, environ, dev, kind):
        root = environ.get('GPUOPS_SIM_ROOT') or '/'
        self.path = os.path.join(root, STATE)
        self.dev, self.kind = dev, kind
        self.may_write = (not hasattr(os, 'geteuid') or os.geteuid() == 0
                          or environ.get('GPUOPS_SIM_ALLOW_NONROOT') == '1')
        self._lock = None

    def __enter__(self):
        if not os.path.isdir(os.path.dirname(self.path)):
            os.makedirs(os.path.dirname(self.path))
        self._lock = open(self.path + '.lock', 'a')
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def _load(self):
        try:
            with open(self.path) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            data = {}
        return data, data.setdefault(self.dev, dict(PFC_DEFAULTS, app=[]))

    def _save(self, data):
        tmp = self.path + '.tmp'
        with open(tmp, 'w') as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write('\n')
        os.replace(tmp, self.path)

    def get(self):
        if self.kind != 'ether':
            raise DcbError(errno.EOPNOTSUPP, False)
        return self._load()[1]

    def _writable(self):
        if not self.may_write:
            raise DcbError(errno.EPERM, True)
        if self.kind != 'ether':
            raise DcbError(errno.EOPNOTSUPP, True)

    def set_pfc(self, pfc_en, delay):
        self._writable()
        data, state = self._load()
        state['pfc_en'] = pfc_en
        if 0 < delay < MLX5E_MAX_CABLE_LENGTH:
            state['delay'] = delay
        self._save(data)

    def set_app(self, apps, delete):
        """mlx5e_dcbnl_ieee_setapp/delapp, entry by entry; the first failure stops (earlier ones stay)."""
        self._writable()
        data, state = self._load()
        table = state['app']
        try:
            for selector, protocol, priority in apps:
                if selector != SEL_DSCP or protocol >= 64:
                    raise DcbError(errno.EINVAL, True)
                current = [a for a in table if a[1] == protocol]
                if delete:
                    if not table or not current or current[0][2] != priority:
                        raise DcbError(errno.ENOENT, True)
                    table.remove(current[0])
                else:
                    for entry in current:
                        table.remove(entry)
                    table.append([SEL_DSCP, protocol, priority])
        finally:
            self._save(data)


def netdev_kind(environ, dev):
    root = environ.get('GPUOPS_SIM_ROOT') or '/'
    base = os.path.join(root, SYSFS, 'class', 'net', dev)
    if not os.path.lexists(base):
        return None
    try:
        with open(os.path.join(base, 'type')) as handle:
            kind = handle.read().strip()
    except (IOError, OSError):
        return 'other'
    return {'1': 'ether', '32': 'ipoib'}.get(kind, 'other')


# ---------------------------------------------------------------------------
# dcb pfc
# ---------------------------------------------------------------------------

def pfc_print(out, state, stats, what=None):
    if what is None or what == 'pfc-cap':
        out.uint('pfc_cap', 'pfc-cap %d ', state['pfc_cap'])
    if what is None or what == 'macsec-bypass':
        out.on_off('macsec_bypass', 'macsec-bypass %s ', state['mbc'])
    if what is None or what == 'delay':
        out.uint('delay', 'delay %d ', state['delay'])
    if what is None:
        out.nl()
    if what is None or what == 'prio-pfc':
        out.open_array('prio_pfc')
        out.fp('prio-pfc ')
        for prio in range(8):
            if not out.json:
                out.out.append('%d:' % prio)
            out.on_off(None, '%s ', bool(state['pfc_en'] & (1 << prio)))
        out.close_array()
        out.nl()
    for name in ('requests', 'indications'):
        if (what is None and stats) or what == name:
            out.open_array(name)
            out.fp(name + ' ')
            for prio in range(8):
                if not out.json:
                    out.out.append('%d:' % prio)
                out.uint(None, '%d ', 0)
            out.close_array()
            out.nl()
    if what is not None and what not in ('prio-pfc', 'requests', 'indications'):
        out.nl()


def pfc_show_text(state=None, stats=False):
    """What ``dcb pfc show dev X`` prints for a PFC state (default: the state after a boot)."""
    out = Out()
    pfc_print(out, dict(PFC_DEFAULTS, **(state or {})), stats)
    return out.finish()[0]


def cmd_pfc_show(out, device, argv, opts):
    state = device.get()
    out.open_object()
    if not argv:
        pfc_print(out, state, opts['stats'])
    for arg in argv:
        if matches(arg, 'help') == 0:
            out.stderr(HELP_PFC_SHOW)
            return 0
        for word in ('prio-pfc', 'pfc-cap', 'macsec-bypass', 'delay', 'requests', 'indications'):
            if matches(arg, word) == 0:
                pfc_print(out, state, opts['stats'], word)
                break
        else:
            out.stderr('What is "%s"?\n' % arg + HELP_PFC_SHOW)
            return 1
    out.close_object()
    return 0


def cmd_pfc_set(out, device, argv, opts):
    if not argv:
        out.stderr(HELP_PFC_SET)
        return 0
    state = device.get()
    pfc_en, delay = state['pfc_en'], state['delay']
    while argv:
        arg = argv[0]
        if matches(arg, 'help') == 0:
            out.stderr(HELP_PFC_SET)
            return 0
        if matches(arg, 'prio-pfc') == 0 or matches(arg, 'macsec-bypass') == 0 or matches(arg, 'delay') == 0:
            if len(argv) < 2:
                out.stderr(INCOMPLETE)
                raise Done(255)
        if matches(arg, 'prio-pfc') == 0:
            bits = [pfc_en]

            def mapping(out_, key, value):
                enabled = parse_on_off(out_, 'PFC', value)
                keys = []
                if enabled is None or not dcb_parse_mapping(out_, 'PRIO', key, 7, 'PFC', 0, 2 ** 64 - 1, keys):
                    return False
                for prio in keys:
                    bits[0] = (bits[0] | (1 << prio)) if enabled else (bits[0] & ~(1 << prio))
                return True
            failed, argv, token = parse_mapping(out, argv[1:], key_num_all, mapping)
            if failed:
                out.stderr('Invalid pfc mapping %s\n' % token)
                return 1
            pfc_en = bits[0]
            continue
        if matches(arg, 'macsec-bypass') == 0:
            if parse_on_off(out, 'macsec-bypass', argv[1]) is None:
                return 1
        elif matches(arg, 'delay') == 0:
            value = strtoul(argv[1], 0xFFFF)
            if value is None:
                out.stderr("Invalid delay `%s', expected an integer 0..65535\n" % argv[1])
                return 1
            delay = value
        else:
            out.stderr('What is "%s"?\n' % arg + HELP_PFC_SET)
            return 1
        argv = argv[2:]
    device.set_pfc(pfc_en, delay)
    return 0


# ---------------------------------------------------------------------------
# dcb app
# ---------------------------------------------------------------------------

APP_SHOW = (('ethtype-prio', 'ethtype_prio', lambda a: a[0] == SEL_ETHERTYPE and a[1] != 0, 'hex'),
            ('dscp-prio', 'dscp_prio', lambda a: a[0] == SEL_DSCP, 'dscp'),
            ('stream-port-prio', 'stream_port_prio', lambda a: a[0] == SEL_STREAM, 'dec'),
            ('dgram-port-prio', 'dgram_port_prio', lambda a: a[0] == SEL_DGRAM, 'dec'),
            ('port-prio', 'port_prio', lambda a: a[0] == SEL_ANY, 'dec'))
PRINT_ORDER = ('ethtype-prio', 'default-prio', 'dscp-prio', 'stream-port-prio', 'dgram-port-prio', 'port-prio')


def app_print(out, apps, what, numeric, names):
    if what == 'default-prio':
        chosen = [a for a in apps if a[0] == SEL_ETHERTYPE and a[1] == 0]
        if chosen:
            out.open_array('default_prio')
            out.fp('default-prio ')
            for app in chosen:
                out.uint(None, '%d ', app[2])
            out.close_array()
            out.nl()
        return
    fp_name, json_name, keep, key_kind = [entry for entry in APP_SHOW if entry[0] == what][0]
    chosen = [a for a in apps if keep(a)]
    for index, app in enumerate(chosen):
        if index == 0:
            out.open_array(json_name)
            out.fp(fp_name + ' ')
        out.open_array(None)
        name = names.name(app[1] << 2) if key_kind == 'dscp' and not numeric else None
        if name is not None and not out.json:
            out.out.append('%s:' % name)
        else:
            out.uint(None, '%x:' if key_kind == 'hex' else '%d:', app[1])
        out.uint(None, '%d ', app[2])
        out.close_array()
    if chosen:
        out.close_array()
        out.nl()


def cmd_app_show(out, device, argv, opts, names):
    apps = sorted(device.get()['app'], key=lambda a: (a[1], a[2]))
    out.open_object()
    rc = 0
    for what in (PRINT_ORDER if not argv else ()):
        app_print(out, apps, what, opts['numeric'], names)
    for arg in argv:
        if matches(arg, 'help') == 0:
            out.stderr(HELP_APP_SHOW)
            break
        words = [w for w in ('ethtype-prio', 'dscp-prio', 'stream-port-prio', 'dgram-port-prio', 'port-prio',
                             'default-prio') if matches(arg, w) == 0]
        if not words:
            out.stderr('What is "%s"?\n' % arg + HELP_APP_SHOW)
            rc = 1
            break
        app_print(out, apps, words[0], opts['numeric'], names)
    out.close_object()
    return rc


def parse_app(out, argv, names):
    """dcb_cmd_app_parse_add_del: (rc or None to go on, [(selector, protocol, priority)])."""
    apps = []
    if not argv:
        out.stderr(HELP_APP_ADD)
        return 0, apps

    def prio_mapping(what, max_key, selector, check=None):
        def mapping(out_, key, value):
            if check is not None and not check(out_, key):
                return False
            prio = strtoul(value, 0xFF)
            keys = []
            if prio is None or not dcb_parse_mapping(out_, what, key, max_key, 'PRIO', prio, 7, keys):
                return False
            apps.extend((selector, k, prio) for k in keys)
            return True
        return mapping

    def ethtype_check(out_, key):
        if key < 0x600:
            out_.stderr('Protocol IDs < 0x600 are reserved for EtherType\n')
        return key >= 0x600

    def port_check(out_, key):
        if key == 0:
            out_.stderr('Port ID of 0 is invalid\n')
        return key != 0

    def dscp_key(out_, text):
        key = key_num_all(out_, text)
        if key is not None:
            return key
        key = names.number(text)
        if key is None:
            return None
        if key & 0x03:
            out_.stderr("The values `%s' uses non-DSCP bits.\n" % text)
            return None
        return key >> 2
    ethtype = prio_mapping('ETHTYPE', 0xFFFF, SEL_ETHERTYPE, ethtype_check)
    keywords = (('help', None), ('ethtype-prio', (key_num, ethtype)), ('default-prio', 'default'),
                ('dscp-prio', (dscp_key, prio_mapping('DSCP', 63, SEL_DSCP))),
                ('stream-port-prio', (key_num, prio_mapping('PORT', 0xFFFF, SEL_STREAM, port_check))),
                ('dgram-port-prio', (key_num, prio_mapping('PORT', 0xFFFF, SEL_DGRAM, port_check))),
                ('port-prio', (key_num, prio_mapping('PORT', 0xFFFF, SEL_ANY, port_check))))
    while argv:
        found = [action for word, action in keywords if matches(argv[0], word) == 0]
        if not found:
            out.stderr('What is "%s"?\n' % argv[0] + HELP_APP_ADD)
            return 1, apps
        if found[0] is None:
            out.stderr(HELP_APP_ADD)
            return 0, apps
        if len(argv) < 2:
            out.stderr(INCOMPLETE)
            raise Done(255)
        argv = argv[1:]
        if found[0] == 'default':
            while argv and strtoul(argv[0], 0xFF) is not None:
                apps.append((SEL_ETHERTYPE, 0, strtoul(argv[0], 0xFF)))
                argv = argv[1:]
            if argv:
                out.stderr('Invalid default priority %s\n' % argv[0])
                return 1, apps
            continue
        failed, argv, token = parse_mapping(out, argv, found[0][0], found[0][1])
        if failed:
            out.stderr('Invalid mapping %s\n' % token)
            return 1, apps
    return None, apps


def cmd_app_change(out, device, argv, sub, names):
    if sub == 'replace':
        orig = [tuple(a) for a in device.get()['app']]
    rc, apps = parse_app(out, argv, names)
    if sub != 'replace':
        if rc is not None:
            return rc
        if apps:
            device.set_app(apps, delete=sub == 'del')
        return 0
    if rc is not None:
        return 0            # iproute2 6.1 dcb_cmd_app_replace() returns 0 after any failure
    new = [a for a in apps if a not in orig]
    try:
        if new:
            device.set_app(new, delete=False)
    except DcbError as exc:
        report(out, exc)
        out.stderr('Could not add new APP entries\n')
        return 0
    keys = set((a[0], a[1]) for a in apps)
    stale = [a for a in orig if (a[0], a[1]) in keys and a not in apps]
    try:
        if stale:
            device.set_app(stale, delete=True)
    except DcbError as exc:
        report(out, exc)
        out.stderr('Could not remove replaced APP entries\n')
    return 0


def cmd_app_flush(out, device, argv):
    apps = [tuple(a) for a in device.get()['app']]
    filters = (('ethtype-prio', lambda a: a[0] == SEL_ETHERTYPE and a[1] != 0),
               ('default-prio', lambda a: a[0] == SEL_ETHERTYPE and a[1] == 0),
               ('dscp-prio', lambda a: a[0] == SEL_DSCP))
    if not argv:
        if apps:
            device.set_app(apps, delete=True)
        return 0
    for arg in argv:
        if matches(arg, 'help') == 0:
            out.stderr(HELP_APP_SHOW)
            return 0
        chosen = [keep for word, keep in filters if matches(arg, word) == 0]
        if not chosen:
            out.stderr('What is "%s"?\n' % arg + HELP_APP_SHOW)
            return 1
        if apps:
            device.set_app([a for a in apps if chosen[0](a)], delete=True)
    return 0


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def report(out, exc):
    out.stderr('Attribute %s: %s\n' % ('write' if exc.write else 'read', os.strerror(exc.code)))


def parse_options(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, 'b:fhijn:psvNV', LONG_OPTIONS)
    except getopt.GetoptError:
        raise Passthrough()
    flags = {'json': False, 'pretty': False, 'numeric': False, 'stats': False}
    for opt, _value in opts:
        if opt in ('-V', '--Version', '-h', '--help', '-b', '--batch', '-n', '--netns', '-v'):
            raise Passthrough()
        for short, long_name, key in (('-j', '--json', 'json'), ('-p', '--pretty', 'pretty'),
                                      ('-N', '--Numeric', 'numeric'), ('-s', '--statistics', 'stats')):
            if opt in (short, long_name):
                flags[key] = True
    return flags, args


def run(argv, environ=None):
    """(rc, stdout, stderr) of ``dcb argv`` for a simulated netdev; raises Passthrough for anything else."""
    environ = os.environ if environ is None else environ
    opts, args = parse_options(list(argv))
    objects = [o for o in ('help', 'app', 'buffer', 'dcbx', 'ets', 'maxrate', 'pfc')
               if args and matches(args[0], o) == 0]
    if not objects or objects[0] == 'help':
        raise Passthrough()
    obj = objects[0]
    subs = {'pfc': ('help', 'show', 'set'), 'app': ('help', 'show', 'flush', 'add', 'del', 'replace')}
    sub = [s for s in subs.get(obj, ('help', 'show', 'set')) if len(args) > 1 and matches(args[1], s) == 0]
    if not sub or sub[0] == 'help' or len(args) < 4 or matches(args[2], 'help') == 0 or matches(args[2], 'dev'):
        raise Passthrough()
    dev = args[3]
    kind = netdev_kind(environ, dev) if check_ifname(dev) else None
    if kind is None:
        raise Passthrough()
    if obj not in subs:
        return 2, '', 'gpuops-sim: dcb %s is not simulated by gpuops-sim (pfc and app are).\n' % obj
    out = Out(opts['json'], opts['pretty'])
    rest = args[4:]
    names = DsNames(environ.get('GPUOPS_SIM_RT_DSFIELD') or RT_DSFIELD)
    try:
        with Device(environ, dev, kind) as device:
            if obj == 'pfc':
                rc = (cmd_pfc_show if sub[0] == 'show' else cmd_pfc_set)(out, device, rest, opts)
            elif sub[0] == 'show':
                rc = cmd_app_show(out, device, rest, opts, names)
            elif sub[0] == 'flush':
                rc = cmd_app_flush(out, device, rest)
            else:
                rc = cmd_app_change(out, device, rest, sub[0], names)
    except DcbError as exc:
        report(out, exc)
        rc = 1
    except Done as exc:            # incomplete_command(): exit(-1), no JSON end
        return exc.rc, ''.join(out.out), ''.join(out.err)
    stdout, stderr = out.finish()
    return rc, stdout, stderr


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    real = os.environ.get('GPUOPS_SIM_REAL_DCB') or REAL_DCB
    try:
        rc, out, err = run(argv)
    except Passthrough:
        if not os.path.exists(real):
            sys.stderr.write('gpuops-sim: dcb: %s is not installed (iproute2)\n' % real)
            return 127
        os.execv(real, [real] + list(argv))
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return rc


if __name__ == '__main__':
    sys.exit(main())
