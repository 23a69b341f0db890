# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kernel parameters in a sysctl.d file of our own, and on the running kernel, as the node's boot would set them.

Keys follow sysctl.d(5): ``a.b.c`` or ``a/b/c``; when the first separator is a slash, dots are literal (a VLAN
``net/ipv4/conf/eth0.100/rp_filter``), when it is a dot, dots and slashes are interchanged. Keys are reported in the
dot form (``net.ipv4.conf.eth0/100.rp_filter``). The files are those ``sysctl --system`` (procps) reads, in its
order (:func:`config_files`). :func:`converge` is the whole decision of ``plugins/modules/sysctl_conf.py``; every
message starts with the option (or, through ``name_prefix``, the role variable) it is about.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import os
import re

from ansible.module_utils.six import integer_types, string_types

DEFAULT_PATH = '/etc/sysctl.d/90-gpuops.conf'
# the directories sysctl --system and systemd-sysctl read, in procps' order: a file name found in an earlier one masks
# the same name in the later ones (/lib/sysctl.d is /usr/lib/sysctl.d where /lib links to /usr/lib: same names)
CONF_DIRS = ('/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d', '/lib/sysctl.d')
# procps applies it after every sysctl.d file, also when /etc/sysctl.d/99-sysctl.conf links to it (Debian, RHEL)
SYSCTL_CONF = '/etc/sysctl.conf'
GLOB_CHARS = re.compile(r'[*?\[]')
BAD_KEY_CHARS = re.compile(r'[\s=\x00]')


class SysctlError(ValueError):
    pass


def is_glob(key):
    return bool(GLOB_CHARS.search(key))


def normalize_key(key):
    """The dot form of a key in either form, or SysctlError."""
    if not isinstance(key, string_types):
        raise SysctlError('%r is not a key name' % (key,))
    name = key.strip()
    if not name or BAD_KEY_CHARS.search(name):
        raise SysctlError('%r is not a key name (no spaces, "=" or empty names)' % (key,))
    first = re.search(r'[./]', name)
    if first and first.group(0) == '/':
        name = name.translate({ord('.'): '/', ord('/'): '.'})
    parts = name.split('.')
    if len(parts) < 2 or any(part in ('', '.', '..') for part in [p.replace('/', '.') for p in parts]):
        raise SysctlError('%r is not a key name: it must name a file under /proc/sys (like net.core.rmem_max)' % (key,))
    return name


def relative_path(key):
    """``net/ipv4/conf/eth0.100/rp_filter`` for the dot-form key ``net.ipv4.conf.eth0/100.rp_filter``."""
    return key.translate({ord('.'): '/', ord('/'): '.'})


def proc_path(proc_root, key):
    """<proc_root>/sys/<the key as a path>."""
    return os.path.join(proc_root, 'sys', relative_path(key))


def glob_matches(pattern, key):
    """Whether a glob key of a file matches a dot-form key; a ``*`` stays within one level, as the glob systemd-sysctl
    expands over /proc/sys does."""
    pattern_parts, key_parts = pattern.split('.'), key.split('.')
    return len(pattern_parts) == len(key_parts) and all(
        fnmatch.fnmatchcase(k, p) for p, k in zip(pattern_parts, key_parts))


def render_value(value):
    """The text of a value: an integer, a string (whitespace collapsed) or a list of them (space-joined); SysctlError
    for anything else."""
    if isinstance(value, bool) or value is None or isinstance(value, (float, dict)):
        raise SysctlError('%r is not a value: give an integer, a string or a list of them' % (value,))
    if isinstance(value, integer_types):
        return str(value)
    if isinstance(value, string_types):
        text = ' '.join(value.split())
    elif isinstance(value, (list, tuple)):
        if any(isinstance(v, bool) or not isinstance(v, integer_types + string_types) for v in value):
            raise SysctlError('%r is not a value: a list holds integers and strings only' % (value,))
        text = ' '.join(' '.join(str(v).split()) for v in value).strip()
    else:
        raise SysctlError('%r is not a value: give an integer, a string or a list of them' % (value,))
    if not text:
        raise SysctlError('an empty value (null removes a key of the base settings)')
    return text


def same_value(live, wanted):
    """The kernel prints some values with tabs (tcp_rmem): compare the words."""
    return live is not None and wanted is not None and live.split() == wanted.split()


def parse_conf(text):
    """``(entries, warnings)`` of one sysctl.d file. An entry is ``{key, value, line, ignore_failure, glob}``; a line
    ``-key`` without ``=`` keeps a key out of the glob patterns (value None, ``exclude`` true)."""
    entries, warnings = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in '#;':
            continue
        ignore = line.startswith('-')
        body = line[1:].strip() if ignore else line
        if '=' not in body:
            if ignore:
                try:
                    key = normalize_key(body)
                except SysctlError as exc:
                    warnings.append('line %d: %s: skipped' % (number, exc))
                    continue
                entries.append({'key': key, 'value': None, 'line': number, 'ignore_failure': True,
                                'glob': False, 'exclude': True})
                continue
            warnings.append('line %d: %r has no "=": skipped' % (number, line))
            continue
        key, value = body.split('=', 1)
        try:
            key = normalize_key(key)
        except SysctlError as exc:
            warnings.append('line %d: %s: skipped' % (number, exc))
            continue
        entries.append({'key': key, 'value': value.strip(), 'line': number, 'ignore_failure': ignore,
                        'glob': is_glob(key), 'exclude': False})
    return entries, warnings


def _rooted(root, path):
    return os.path.join(root, path.lstrip('/'))


def _masked(rooted):
    """A file linked to /dev/null masks the same name in the later directories and is read as nothing."""
    if not os.path.islink(rooted):
        return False
    return os.readlink(rooted) == '/dev/null' or os.path.realpath(rooted) == '/dev/null'


def config_files(root='/', present=None):
    """The files procps' ``sysctl --system`` applies, in order, as paths on the node (``root`` prefixes them here).

    Every ``*.conf`` of :data:`CONF_DIRS`, a name counted once (in the first directory that has it: /etc masks
    /usr/lib, and /lib/sysctl.d, the same directory as /usr/lib/sysctl.d where /lib links to /usr/lib, adds no name
    of its own), sorted by file name whatever its directory; a name linked to /dev/null is masked. Then
    /etc/sysctl.conf, which procps applies after them all. Where /etc/sysctl.d/99-sysctl.conf links to it (Debian,
    RHEL), it is counted once, last: procps applies it at both places, so the last decides. systemd-sysctl, at
    boot, reads it at 99-sysctl.conf's place only (and not at all where no such link exists): the two differ for a
    key that a file sorted after 99-sysctl.conf also sets. ``present`` is a path counted as if it existed (the
    file the caller is about to write)."""
    names, seen_dirs = {}, set()
    for directory in CONF_DIRS:
        rooted_dir = _rooted(root, directory)
        found = set()
        if os.path.isdir(rooted_dir) and os.path.realpath(rooted_dir) not in seen_dirs:
            seen_dirs.add(os.path.realpath(rooted_dir))
            found = set(name for name in os.listdir(rooted_dir) if name.endswith('.conf'))
        if present and os.path.dirname(present) == directory:
            found.add(os.path.basename(present))
        for name in sorted(found):
            if name in names:
                continue
            path = os.path.join(directory, name)
            rooted = _rooted(root, path)
            if path == present:
                names[name] = path
            elif _masked(rooted):
                names[name] = None
            elif os.path.isfile(rooted):
                names[name] = path
    files = [names[name] for name in sorted(names) if names[name]]
    conf = _rooted(root, SYSCTL_CONF)
    if os.path.isfile(conf):
        real = os.path.realpath(conf)
        files = [path for path in files if os.path.realpath(_rooted(root, path)) != real]
        files.append(SYSCTL_CONF)
    return files


def effective(files, keys):
    """Per key, the entry that decides its value: ``{key: {value, file, line}}`` (keys nothing sets are absent).

    ``files`` is ``[(path, entries)]`` in the order of :func:`config_files`. As systemd-sysctl does, an explicit
    assignment of a key wins over any glob pattern, whatever the order, and a ``-key`` line keeps the patterns off
    it; otherwise the last file (and line) that sets it wins."""
    found = {}
    for key in keys:
        explicit = pattern = None
        excluded = False
        for path, entries in files:
            for entry in entries:
                if entry['exclude']:
                    excluded = excluded or entry['key'] == key
                elif entry['glob']:
                    if glob_matches(entry['key'], key):
                        pattern = (path, entry)
                elif entry['key'] == key:
                    explicit = (path, entry)
        winner = explicit or (None if excluded else pattern)
        if winner:
            found[key] = {'value': winner[1]['value'], 'file': winner[0], 'line': winner[1]['line']}
    return found


def render(settings, header='', ignore_failure=()):
    """Our file: the header as comment lines, then ``key = value`` sorted by key; a key of ``ignore_failure`` as
    ``-key = value``, which sysctl.d(5) applies when the key exists and skips quietly when it does not."""
    lines = ['# %s' % line if line.strip() else '#' for line in header.splitlines()]
    lines.extend('%s%s = %s' % ('-' if key in ignore_failure else '', key, settings[key]) for key in sorted(settings))
    return '\n'.join(lines) + '\n'


def merged(base_settings, settings, prefix=''):
    """``(wanted, origin, errors)``: the base settings with ``settings`` over them (None removes a key), keys in the
    dot form, values as text; ``origin`` names the option each key comes from."""
    wanted, origin, errors = {}, {}, []
    for option, values in (('base_settings', base_settings), ('settings', settings)):
        seen = {}
        for raw_key in sorted(values or {}, key=str):
            value = values[raw_key]
            name = prefix + option
            try:
                key = normalize_key(raw_key)
            except SysctlError as exc:
                errors.append('%s: %s' % (name, exc))
                continue
            if is_glob(key):
                errors.append('%s: %s is a pattern: name each key (a pattern is only known at boot, not here)'
                              % (name, key))
                continue
            if key in seen:
                errors.append('%s: %s and %s are the same key' % (name, seen[key], raw_key))
                continue
            seen[key] = raw_key
            if value is None and option == 'settings':
                wanted.pop(key, None)
                origin.pop(key, None)
                continue
            try:
                wanted[key] = render_value(value)
                origin[key] = name
            except SysctlError as exc:
                errors.append('%s: %s: %s' % (name, key, exc))
    return wanted, origin, errors


def read_value(path):
    with open(path) as handle:
        return handle.read().strip()


def write_value(path, value):
    """Writes a value to a /proc/sys file; the kernel's refusal is an OSError (EINVAL, EPERM, ...). O_TRUNC, as
    procps' ``fopen(path, "w")``: the kernel ignores it, a plain file standing in for /proc/sys needs it."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, (value + '\n').encode('utf-8'))
    finally:
        os.close(fd)


def _read_file(root, path):
    try:
        with open(_rooted(root, path)) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _os_error(exc):
    return os.strerror(exc.errno) if exc.errno else str(exc)


def check_path(path, name='path'):
    if not isinstance(path, string_types) or os.path.normpath(path) != path or not path.endswith('.conf') \
            or os.path.dirname(path) not in CONF_DIRS:
        return ('%s: %r must be a file *.conf directly in %s (sysctl --system reads no other)'
                % (name, path, ', '.join(CONF_DIRS)))
    return None


def _parsed(root, paths, replace=None):
    """``([(path, entries)], warnings)`` of the files, ``replace`` giving the text of some of them."""
    files, warnings = [], []
    for conf in paths:
        content = replace[conf] if replace and conf in replace else _read_file(root, conf)
        if content is None:
            warnings.append('%s could not be read: its settings are not counted' % conf)
            continue
        entries, parse_warnings = parse_conf(content)
        warnings.extend('%s %s' % (conf, w) for w in parse_warnings)
        files.append((conf, entries))
    return files, warnings


def drift(before, files, keys):
    """Our keys whose running value is not what the node's files (as they were before this run) give them: set since
    boot by a tool such as tuned, or by hand. ``[{key, value (running), expected, file}]``; a key no file sets has no
    expected value and is no drift."""
    expected = effective(files, keys)
    return [{'key': key, 'value': before[key], 'expected': expected[key]['value'], 'file': expected[key]['file']}
            for key in keys if key in expected and not same_value(before[key], expected[key]['value'])]


def put_back(result, before, proc_root, origin):
    """After a failure: writes back the value each key of ``result['applied']`` had before this run, so the running
    kernel is left as it was. Keys that cannot be put back stay in ``applied``, with a failure each."""
    kept = []
    for item in reversed(result['applied']):
        key = item['key']
        try:
            write_value(proc_path(proc_root, key), before[key])
        except (IOError, OSError) as exc:
            kept.insert(0, item)
            result['failures'].append('%s: %s = %s could not be put back to %s (%s): the running kernel keeps %s' % (
                origin[key], key, item['after'], before[key], _os_error(exc), item['after']))
            continue
        result['live'][key] = before[key]
    undone = [item for item in result['applied'] if item not in kept]
    if undone:
        result['warnings'].append('the running values set in this run were put back: %s' % ', '.join(
            '%s = %s' % (item['key'], before[item['key']]) for item in undone))
    result['applied'] = kept


def converge(base_settings=None, settings=None, path=DEFAULT_PATH, proc_root='/proc', root='/', allow_missing=(),
             fail_on_override=False, header='', name_prefix='', check_mode=False, write_file=None, option_names=None):
    """Validates, sets our keys on the running kernel as the files in their order yield them, reads them back, and
    then writes our file (``write_file(path, text)``); check mode changes nothing.

    Returns a dict: ``errors`` (refusals before any change, overrides with ``fail_on_override`` among them: nothing
    was written), ``failures`` (values the kernel refused or did not take: the values set in this run are put back
    and the file is not written), ``warnings``, ``changed``, ``file_changed``, ``path``, ``settings``, ``live``,
    ``applied``, ``drifted``, ``overrides``, ``differs``, ``missing``, ``diff``. Messages name the options as
    ``name_prefix`` + ``option_names.get(option, option)``."""
    prefix = name_prefix or ''
    names = option_names or {}
    result = {'changed': False, 'file_changed': False, 'path': path, 'settings': {}, 'live': {}, 'applied': [],
              'drifted': [], 'overrides': [], 'differs': [], 'missing': [], 'errors': [], 'failures': [],
              'warnings': [], 'diff': []}
    errors = result['errors']
    wanted, origin, value_errors = merged(base_settings, settings, prefix)
    errors.extend(value_errors)
    path_error = check_path(path, prefix + names.get('path', 'path'))
    if path_error:
        errors.append(path_error)
    patterns = []
    for item in allow_missing or ():
        try:
            patterns.append(normalize_key(item))
        except SysctlError as exc:
            errors.append('%s%s: %s' % (prefix, names.get('allow_missing', 'allow_missing'), exc))
    proc_found = os.path.isdir(os.path.join(proc_root, 'sys'))
    if not proc_found:
        errors.append('%s%s: %s has no sys directory (the kernel parameters, /proc/sys)'
                      % (prefix, names.get('proc_root', 'proc_root'), proc_root))
    optional = [key for key in sorted(wanted) if any(fnmatch.fnmatchcase(key, p) for p in patterns)]
    missing = []
    for key in sorted(wanted) if proc_found else ():
        where = proc_path(proc_root, key)
        if os.path.isfile(where):
            continue
        if os.path.exists(where):
            errors.append('%s: %s is %s, a directory: name a parameter in it' % (origin[key], key, where))
        elif key in optional:
            missing.append(key)
        else:
            errors.append('%s: %s has no %s on this node (a typo, or a kernel module not loaded yet: list it in %s)'
                          % (origin[key], key, where, prefix + names.get('allow_missing', 'allow_missing')))
    if errors:
        return result
    result['settings'] = wanted
    result['missing'] = missing

    text = render(wanted, header, optional)
    old = _read_file(root, path)
    result['file_changed'] = old != text
    result['diff'].append({'before_header': path, 'after_header': path, 'before': old or '', 'after': text})

    # the values the files yield at boot for our keys, with our file as it will be
    files, warnings = _parsed(root, config_files(root, present=path), {path: text})
    result['warnings'].extend(warnings)
    decided = effective(files, sorted(wanted))
    present = [key for key in sorted(wanted) if key not in missing]
    target = dict((key, decided[key]['value'] if key in decided else wanted[key]) for key in present)

    for key in sorted(wanted):
        winner = decided.get(key)
        if winner and winner['file'] != path and not same_value(winner['value'], wanted[key]):
            result['overrides'].append({'key': key, 'wanted': wanted[key], 'value': winner['value'],
                                        'file': winner['file'], 'ours': path})
    if result['overrides']:
        message = '; '.join('%s = %s in %s wins over %s = %s in %s' % (
            o['key'], o['value'], o['file'], o['key'], o['wanted'], o['ours']) for o in result['overrides'])
        if fail_on_override:
            errors.append('%s%s: %s' % (prefix, names.get('fail_on_override', 'fail_on_override'), message))
            return result
        result['warnings'].append('%s (the node applies that file after ours)' % message)

    before = {}
    for key in present:
        try:
            before[key] = read_value(proc_path(proc_root, key))
        except (IOError, OSError) as exc:
            errors.append('%s: %s cannot be read (%s)' % (origin[key], proc_path(proc_root, key), _os_error(exc)))
    if errors:
        return result

    # drift: a running value that is not what the files gave it before this run (a runtime tool, or by hand)
    result['drifted'] = drift(before, _parsed(root, config_files(root))[0], present)
    for item in result['drifted']:
        result['warnings'].append('%s was %s on the running kernel, where the sysctl files give %s (%s): changed '
                                  'at run time (a tool such as tuned, or by hand); set to %s' % (
                                      item['key'], item['value'], item['expected'], item['file'],
                                      target[item['key']]))

    changes = [key for key in present if not same_value(before[key], target[key])]
    live = result['live'] = dict(before)
    for key in changes:
        if not check_mode:
            try:
                write_value(proc_path(proc_root, key), target[key])
            except (IOError, OSError) as exc:
                source = decided.get(key, {}).get('file', path)
                result['failures'].append('%s: the kernel refused %s = %s%s (%s)' % (
                    origin[key], key, target[key], '' if source == path else ', the value of ' + source,
                    _os_error(exc)))
                break
        result['applied'].append({'key': key, 'before': before[key], 'after': target[key]})
        live[key] = target[key]

    if not check_mode and not result['failures']:
        for key in present:
            try:
                live[key] = read_value(proc_path(proc_root, key))
            except (IOError, OSError) as exc:
                live[key] = None
                result['failures'].append('%s: %s cannot be read back (%s)' % (
                    origin[key], proc_path(proc_root, key), _os_error(exc)))
        for key in present:
            if live[key] is not None and not same_value(live[key], target[key]):
                result['differs'].append({'key': key, 'wanted': target[key], 'value': live[key]})
        for item in result['differs']:
            result['failures'].append('%s: %s = %s was written and the kernel reads back %s' % (
                origin[item['key']], item['key'], item['wanted'], item['value']))
    if result['failures']:
        # the running kernel back as it was, and the file, which every boot applies, left as it is
        put_back(result, before, proc_root, origin)
        result['changed'] = bool(result['applied'])
        return result
    if result['file_changed'] and not check_mode:
        try:
            write_file(path, text)
        except (IOError, OSError) as exc:
            # the boot would not apply what is running now: the running kernel goes back as it was
            option = prefix + names.get('path', 'path')
            result['failures'].append('%s: %s cannot be written (%s)' % (option, path, _os_error(exc)))
            put_back(result, before, proc_root, origin)
            result['changed'] = bool(result['applied'])
            return result

    result['diff'].append({
        'before_header': '%s/sys (running values)' % proc_root,
        'after_header': '%s/sys (running values)' % proc_root,
        'before': ''.join('%s = %s\n' % (key, before[key]) for key in present),
        'after': ''.join('%s = %s\n' % (key, live[key]) for key in present)})
    result['changed'] = result['file_changed'] or bool(result['applied'])
    return result
