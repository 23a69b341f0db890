# -*- coding: utf-8 -*-
"""sysctl_conf: key forms, values, the sysctl.d file format, the files sysctl --system reads and their order
(masking, /dev/null, /lib linked to /usr/lib, /etc/sysctl.conf last), glob keys, and converge on synthetic proc and
root trees built here (no real capture: /proc/sys files are one value each)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.config import sysctl as config_sysctl


def make_tree(base, files):
    """Files (path relative to base: text), links (path: '->target') and directories (path ending in '/')."""
    for rel, content in files.items():
        where = os.path.join(str(base), rel)
        if rel.endswith('/'):
            os.makedirs(where)
            continue
        if not os.path.isdir(os.path.dirname(where)):
            os.makedirs(os.path.dirname(where))
        if content.startswith('->'):
            os.symlink(content[2:], where)
        else:
            with open(where, 'w') as handle:
                handle.write(content)
    return str(base)


@pytest.mark.parametrize('key, dotted, path', [
    ('net.core.rmem_max', 'net.core.rmem_max', 'net/core/rmem_max'),
    ('net/core/rmem_max', 'net.core.rmem_max', 'net/core/rmem_max'),
    (' kernel.numa_balancing ', 'kernel.numa_balancing', 'kernel/numa_balancing'),
    ('net/ipv4/conf/eth0.100/rp_filter', 'net.ipv4.conf.eth0/100.rp_filter', 'net/ipv4/conf/eth0.100/rp_filter'),
    ('net.ipv4.conf.enp3s0/200.forwarding', 'net.ipv4.conf.enp3s0/200.forwarding', 'net/ipv4/conf/enp3s0.200/forwarding'),
    ('net.ipv4.conf.*.rp_filter', 'net.ipv4.conf.*.rp_filter', 'net/ipv4/conf/*/rp_filter'),
])
def test_key_forms(key, dotted, path):
    assert config_sysctl.normalize_key(key) == dotted
    assert config_sysctl.relative_path(dotted) == path
    assert config_sysctl.proc_path('/proc', dotted) == '/proc/sys/' + path


@pytest.mark.parametrize('key', ['', 'kernel', 'net..core', 'net.core.', 'a b.c', 'a=b.c', 'net/../x', '.net.core',
                                 'net.//.x', None, 3])
def test_bad_keys(key):
    with pytest.raises(config_sysctl.SysctlError):
        config_sysctl.normalize_key(key)


@pytest.mark.parametrize('value, text', [
    (0, '0'),
    (268435456, '268435456'),
    ('4096  87380\t134217728\n', '4096 87380 134217728'),
    ([4096, 87380, 134217728], '4096 87380 134217728'),
    (['1024', 65535], '1024 65535'),
    ('bbr', 'bbr'),
])
def test_values(value, text):
    assert config_sysctl.render_value(value) == text


@pytest.mark.parametrize('value', [True, False, None, 1.5, {'a': 1}, '', '   ', [], [True], [[1]], [1.5]])
def test_bad_values(value):
    with pytest.raises(config_sysctl.SysctlError):
        config_sysctl.render_value(value)


@pytest.mark.parametrize('live, wanted, same', [
    ('4096\t87380\t134217728', '4096 87380 134217728', True),
    ('0', '0', True),
    ('1', '0', False),
    (None, '0', False),
])
def test_values_compare_by_words(live, wanted, same):
    assert config_sysctl.same_value(live, wanted) is same


PARSE_CASES = [
    ('net.core.rmem_max = 1\n', [('net.core.rmem_max', '1', 1, False, False)], 0),
    ('# comment\n; other\n\n  net.core.rmem_max=2  \n', [('net.core.rmem_max', '2', 4, False, False)], 0),
    ('-net.core.rmem_max = 3\n', [('net.core.rmem_max', '3', 1, True, False)], 0),
    ('net/ipv4/conf/eth0.100/rp_filter = 2\n', [('net.ipv4.conf.eth0/100.rp_filter', '2', 1, False, False)], 0),
    ('net.ipv4.tcp_rmem = 4096\t87380   6291456\n', [('net.ipv4.tcp_rmem', '4096\t87380   6291456', 1, False, False)], 0),
    ('net.ipv4.conf.*.rp_filter = 2\n', [('net.ipv4.conf.*.rp_filter', '2', 1, False, True)], 0),
    ('kernel.domainname = a = b\n', [('kernel.domainname', 'a = b', 1, False, False)], 0),
    ('kernel.numa_balancing\n', [], 1),
    ('= 3\nbad key.x = 1\n', [], 2),
]


@pytest.mark.parametrize('text, entries, warnings', PARSE_CASES)
def test_parse_conf(text, entries, warnings):
    found, warned = config_sysctl.parse_conf(text)
    assert [(e['key'], e['value'], e['line'], e['ignore_failure'], e['glob']) for e in found] == entries
    assert len(warned) == warnings


def test_a_dash_line_without_value_excludes_a_key_from_the_patterns():
    found, warned = config_sysctl.parse_conf('net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.all.rp_filter\n')
    assert warned == []
    assert found[1]['exclude'] and found[1]['key'] == 'net.ipv4.conf.all.rp_filter' and found[1]['value'] is None


CONF = 'x.y = 1\n'


@pytest.mark.parametrize('files, order', [
    # sorted by name whatever the directory; /etc/sysctl.conf last
    ({'etc/sysctl.d/50-a.conf': CONF, 'usr/lib/sysctl.d/10-b.conf': CONF, 'run/sysctl.d/70-c.conf': CONF,
      'usr/local/lib/sysctl.d/60-d.conf': CONF, 'etc/sysctl.conf': CONF},
     ['/usr/lib/sysctl.d/10-b.conf', '/etc/sysctl.d/50-a.conf', '/usr/local/lib/sysctl.d/60-d.conf',
      '/run/sysctl.d/70-c.conf', '/etc/sysctl.conf']),
    # /etc masks the same name in /run and /usr/lib; only *.conf
    ({'etc/sysctl.d/50-a.conf': CONF, 'usr/lib/sysctl.d/50-a.conf': CONF, 'run/sysctl.d/50-a.conf': CONF,
      'etc/sysctl.d/README': CONF, 'etc/sysctl.d/60-x.conf.dpkg-old': CONF},
     ['/etc/sysctl.d/50-a.conf']),
    # linked to /dev/null: masked, and the vendor file of that name too
    ({'etc/sysctl.d/50-default.conf': '->/dev/null', 'usr/lib/sysctl.d/50-default.conf': CONF,
      'usr/lib/sysctl.d/10-x.conf': CONF},
     ['/usr/lib/sysctl.d/10-x.conf']),
    # /lib linked to /usr/lib: one directory
    ({'usr/lib/sysctl.d/10-x.conf': CONF, 'lib': '->usr/lib'}, ['/usr/lib/sysctl.d/10-x.conf']),
    # a merged-/usr-less system: /lib/sysctl.d has its own files
    ({'lib/sysctl.d/10-x.conf': CONF, 'usr/lib/sysctl.d/20-y.conf': CONF},
     ['/lib/sysctl.d/10-x.conf', '/usr/lib/sysctl.d/20-y.conf']),
    # Debian: 99-sysctl.conf links to ../sysctl.conf; counted once, last (procps applies it again last)
    ({'etc/sysctl.d/99-sysctl.conf': '->../sysctl.conf', 'etc/sysctl.conf': CONF, 'etc/sysctl.d/99-zz.conf': CONF},
     ['/etc/sysctl.d/99-zz.conf', '/etc/sysctl.conf']),
    # no /etc/sysctl.conf (Debian 13): the link is dangling, nothing of it counts
    ({'etc/sysctl.d/99-sysctl.conf': '->../sysctl.conf', 'etc/sysctl.d/10-a.conf': CONF},
     ['/etc/sysctl.d/10-a.conf']),
    ({}, []),
])
def test_config_files_in_the_order_sysctl_system_applies_them(tmp_path, files, order):
    root = make_tree(tmp_path, files)
    assert config_sysctl.config_files(root) == order


def test_the_file_about_to_be_written_counts_and_masks_a_vendor_one(tmp_path):
    root = make_tree(tmp_path, {'usr/lib/sysctl.d/90-gpuops.conf': CONF, 'usr/lib/sysctl.d/10-x.conf': CONF})
    assert config_sysctl.config_files(root, present='/etc/sysctl.d/90-gpuops.conf') == [
        '/usr/lib/sysctl.d/10-x.conf', '/etc/sysctl.d/90-gpuops.conf']


def _files(*texts):
    return [('/f%d.conf' % number, config_sysctl.parse_conf(text)[0]) for number, text in enumerate(texts)]


@pytest.mark.parametrize('texts, key, value, file', [
    (['a.b = 1\n', 'a.b = 2\n'], 'a.b', '2', '/f1.conf'),
    (['a.b = 1\na.b = 3\n', 'c.d = 2\n'], 'a.b', '3', '/f0.conf'),
    # an explicit assignment wins over a pattern, whatever the order
    (['net.ipv4.conf.eth0.rp_filter = 1\n', 'net.ipv4.conf.*.rp_filter = 2\n'], 'net.ipv4.conf.eth0.rp_filter', '1',
     '/f0.conf'),
    (['net.ipv4.conf.*.rp_filter = 2\n'], 'net.ipv4.conf.eth0.rp_filter', '2', '/f0.conf'),
    # a * stays within one level
    (['net.*.rp_filter = 2\n'], 'net.ipv4.conf.eth0.rp_filter', None, None),
    (['net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.all.rp_filter\n'], 'net.ipv4.conf.all.rp_filter', None, None),
    (['net.ipv4.conf.*.rp_filter = 2\n', 'net.ipv4.conf.e*.rp_filter = 0\n'], 'net.ipv4.conf.eth0.rp_filter', '0',
     '/f1.conf'),
    (['a.b = 1\n'], 'c.d', None, None),
])
def test_effective(texts, key, value, file):
    found = config_sysctl.effective(_files(*texts), [key])
    if value is None:
        assert key not in found
    else:
        assert (found[key]['value'], found[key]['file']) == (value, file)


def test_render_sorts_the_keys_under_the_header():
    text = config_sysctl.render({'vm.zone_reclaim_mode': '0', 'kernel.numa_balancing': '0'}, 'Managed by Ansible\n\nmore')
    assert text == ('# Managed by Ansible\n#\n# more\nkernel.numa_balancing = 0\nvm.zone_reclaim_mode = 0\n')


def test_render_prefixes_the_keys_whose_failure_is_ignored():
    text = config_sysctl.render({'net.bridge.bridge-nf-call-iptables': '0', 'vm.zone_reclaim_mode': '0'}, 'x',
                                ['net.bridge.bridge-nf-call-iptables'])
    assert text == '# x\n-net.bridge.bridge-nf-call-iptables = 0\nvm.zone_reclaim_mode = 0\n'
    entries = config_sysctl.parse_conf(text)[0]
    assert [(e['key'], e['value'], e['ignore_failure']) for e in entries] == [
        ('net.bridge.bridge-nf-call-iptables', '0', True), ('vm.zone_reclaim_mode', '0', False)]


@pytest.mark.parametrize('base, settings, wanted, errors', [
    ({'net.core.rmem_max': 1, 'vm.zone_reclaim_mode': 0}, {'vm.zone_reclaim_mode': None, 'net/core/rmem_max': 2},
     {'net.core.rmem_max': '2'}, []),
    ({}, {'kernel.unknown_missing': None}, {}, []),
    ({'a.b': True}, {}, {}, ['sysctl_base_settings: a.b: True is not a value']),
    ({}, {'a.b': 1.5, 'c.d': {'x': 1}}, {}, ['sysctl_settings: a.b: 1.5', 'sysctl_settings: c.d: {']),
    ({'a.b': None}, {}, {}, ['sysctl_base_settings: a.b: None is not a value']),
    ({}, {'a.b': 1, 'a/b': 2}, {'a.b': '1'}, ['sysctl_settings: a.b and a/b are the same key']),
    ({}, {'net.ipv4.conf.*.rp_filter': 2}, {}, ['sysctl_settings: net.ipv4.conf.*.rp_filter is a pattern']),
])
def test_merged(base, settings, wanted, errors):
    found, _origin, found_errors = config_sysctl.merged(base, settings, 'sysctl_')
    assert found == wanted
    assert len(found_errors) == len(errors)
    assert all(e.startswith(prefix) for e, prefix in zip(found_errors, errors))


PROC = {'proc/sys/net/core/rmem_max': '212992\n', 'proc/sys/kernel/numa_balancing': '1\n',
        'proc/sys/net/ipv4/tcp_rmem': '4096\t131072\t6291456\n', 'proc/sys/net/ipv4/conf/eth0.100/rp_filter': '0\n'}


class Node(object):
    """A synthetic node: /proc/sys files and sysctl.d files under one tmp directory; writes go through
    converge's write_file."""

    def __init__(self, tmp_path, files=None):
        self.base = make_tree(tmp_path, dict(PROC, **(files or {})))
        self.proc = os.path.join(self.base, 'proc')

    def read(self, rel):
        with open(os.path.join(self.base, rel)) as handle:
            return handle.read()

    def write_file(self, path, text):
        rooted = os.path.join(self.base, path.lstrip('/'))
        if not os.path.isdir(os.path.dirname(rooted)):
            os.makedirs(os.path.dirname(rooted))
        with open(rooted, 'w') as handle:
            handle.write(text)

    def converge(self, **kwargs):
        kwargs.setdefault('proc_root', self.proc)
        return config_sysctl.converge(root=self.base, write_file=self.write_file, name_prefix='sysctl_', **kwargs)


WANTED = {'net.core.rmem_max': 268435456, 'kernel.numa_balancing': 0, 'net.ipv4.tcp_rmem': '4096 87380 134217728'}


def test_converge_writes_the_file_and_the_running_values(tmp_path):
    node = Node(tmp_path)
    result = node.converge(base_settings=WANTED, header='Managed')
    assert result['errors'] == [] and result['failures'] == []
    assert result['changed'] and result['file_changed']
    assert node.read('etc/sysctl.d/90-gpuops.conf') == (
        '# Managed\nkernel.numa_balancing = 0\nnet.core.rmem_max = 268435456\nnet.ipv4.tcp_rmem = 4096 87380 134217728\n')
    assert node.read('proc/sys/net/core/rmem_max') == '268435456\n'
    assert [a['key'] for a in result['applied']] == ['kernel.numa_balancing', 'net.core.rmem_max', 'net.ipv4.tcp_rmem']
    assert result['applied'][0] == {'key': 'kernel.numa_balancing', 'before': '1', 'after': '0'}
    assert result['live']['net.ipv4.tcp_rmem'] == '4096 87380 134217728'
    again = node.converge(base_settings=WANTED, header='Managed')
    assert not again['changed'] and again['applied'] == []


def test_a_value_printed_with_tabs_is_not_written_again(tmp_path):
    node = Node(tmp_path, {'proc/sys/net/ipv4/tcp_rmem': '4096\t87380\t134217728\n'})
    result = node.converge(settings={'net.ipv4.tcp_rmem': [4096, 87380, 134217728]})
    assert result['applied'] == [] and result['file_changed']


def test_check_mode_writes_nothing(tmp_path):
    node = Node(tmp_path)
    result = node.converge(base_settings=WANTED, check_mode=True)
    assert result['changed'] and len(result['applied']) == 3
    assert result['live']['kernel.numa_balancing'] == '0'
    assert not os.path.exists(os.path.join(node.base, 'etc/sysctl.d/90-gpuops.conf'))
    assert node.read('proc/sys/kernel/numa_balancing') == '1\n'
    assert result['diff'][1]['before'].splitlines()[0] == 'kernel.numa_balancing = 1'
    assert result['diff'][1]['after'].splitlines()[0] == 'kernel.numa_balancing = 0'


def test_a_later_file_wins_and_is_reported(tmp_path):
    node = Node(tmp_path, {'etc/sysctl.d/99-sysctl.conf': '->../sysctl.conf',
                           'etc/sysctl.conf': 'net.core.rmem_max = 16777216\n',
                           'usr/lib/sysctl.d/10-vendor.conf': 'kernel.numa_balancing = 1\n'})
    result = node.converge(base_settings=WANTED)
    assert result['failures'] == []
    assert result['overrides'] == [{'key': 'net.core.rmem_max', 'wanted': '268435456', 'value': '16777216',
                                    'file': '/etc/sysctl.conf', 'ours': '/etc/sysctl.d/90-gpuops.conf'}]
    # the node runs with what its boot sets: the later file's value
    assert node.read('proc/sys/net/core/rmem_max') == '16777216\n'
    assert node.read('proc/sys/kernel/numa_balancing') == '0\n'
    assert '/etc/sysctl.conf wins over' in result['warnings'][0]
    node.write_file('/etc/sysctl.d/99-zz.conf', 'kernel.numa_balancing = 1\n')
    failed = node.converge(base_settings=WANTED, fail_on_override=True)
    assert failed['errors'] == [
        'sysctl_fail_on_override: kernel.numa_balancing = 1 in /etc/sysctl.d/99-zz.conf wins over '
        'kernel.numa_balancing = 0 in /etc/sysctl.d/90-gpuops.conf; net.core.rmem_max = 16777216 in /etc/sysctl.conf '
        'wins over net.core.rmem_max = 268435456 in /etc/sysctl.d/90-gpuops.conf']
    # refused before any change
    assert node.read('proc/sys/kernel/numa_balancing') == '0\n' and not failed['changed']


def test_a_later_file_with_the_same_value_is_no_override(tmp_path):
    node = Node(tmp_path, {'etc/sysctl.d/99-zz.conf': 'kernel.numa_balancing = 0\n'})
    result = node.converge(settings={'kernel.numa_balancing': 0}, fail_on_override=True)
    assert result['overrides'] == [] and result['failures'] == []


def test_an_unknown_key_is_refused_and_nothing_written(tmp_path):
    node = Node(tmp_path)
    result = node.converge(base_settings=WANTED, settings={'net.foo.bar': 1})
    assert result['errors'] == ['sysctl_settings: net.foo.bar has no %s/sys/net/foo/bar on this node (a typo, or a '
                                'kernel module not loaded yet: list it in sysctl_allow_missing)' % node.proc]
    assert not result['changed']
    assert not os.path.exists(os.path.join(node.base, 'etc/sysctl.d'))
    assert node.read('proc/sys/kernel/numa_balancing') == '1\n'


def test_allow_missing_writes_the_key_into_the_file_only(tmp_path):
    node = Node(tmp_path)
    result = node.converge(settings={'net.bridge.bridge-nf-call-iptables': 0, 'kernel.numa_balancing': 0},
                           allow_missing=['net.bridge.*'])
    assert result['errors'] == [] and result['missing'] == ['net.bridge.bridge-nf-call-iptables']
    assert node.read('etc/sysctl.d/90-gpuops.conf') == (
        'kernel.numa_balancing = 0\n-net.bridge.bridge-nf-call-iptables = 0\n')
    assert list(result['live']) == ['kernel.numa_balancing']
    # once the module is loaded, the key is set as any other, and stays "-" in the file
    node.write_file('/proc/sys/net/bridge/bridge-nf-call-iptables', '1\n')
    again = node.converge(settings={'net.bridge.bridge-nf-call-iptables': 0, 'kernel.numa_balancing': 0},
                          allow_missing=['net.bridge.*'])
    assert again['missing'] == [] and not again['file_changed']
    assert again['applied'] == [{'key': 'net.bridge.bridge-nf-call-iptables', 'before': '1', 'after': '0'}]


def test_the_slash_form_sets_a_vlan_interface(tmp_path):
    node = Node(tmp_path)
    result = node.converge(settings={'net/ipv4/conf/eth0.100/rp_filter': 2})
    assert result['applied'][0]['key'] == 'net.ipv4.conf.eth0/100.rp_filter'
    assert node.read('proc/sys/net/ipv4/conf/eth0.100/rp_filter') == '2\n'
    assert 'net.ipv4.conf.eth0/100.rp_filter = 2' in node.read('etc/sysctl.d/90-gpuops.conf')


def _proc_values(node):
    return dict((rel, node.read(rel)) for rel in PROC)


def test_a_refused_value_fails_naming_the_key_and_the_file_is_not_written(tmp_path, monkeypatch):
    node = Node(tmp_path)

    def refuse(path, value):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
    monkeypatch.setattr(config_sysctl, 'write_value', refuse)
    result = node.converge(settings={'kernel.numa_balancing': 7})
    assert result['failures'] == ['sysctl_settings: the kernel refused kernel.numa_balancing = 7 (Invalid argument)']
    assert not os.path.exists(os.path.join(node.base, 'etc/sysctl.d/90-gpuops.conf'))


def test_a_refused_value_puts_back_the_values_set_before_it(tmp_path, monkeypatch):
    node = Node(tmp_path)
    untouched = _proc_values(node)
    write_value = config_sysctl.write_value

    def refuse_tcp_rmem(path, value):
        if path.endswith('tcp_rmem'):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        write_value(path, value)
    monkeypatch.setattr(config_sysctl, 'write_value', refuse_tcp_rmem)
    result = node.converge(base_settings=WANTED, settings={'net.ipv4.tcp_rmem': '4096 87380 1'})
    assert result['failures'] == [
        'sysctl_settings: the kernel refused net.ipv4.tcp_rmem = 4096 87380 1 (Invalid argument)']
    # kernel.numa_balancing and net.core.rmem_max were set, then put back: the node is as it was, file unwritten
    assert _proc_values(node) == untouched
    assert not result['changed'] and result['applied'] == []
    assert result['live']['net.core.rmem_max'] == '212992'
    assert result['warnings'] == ['the running values set in this run were put back: kernel.numa_balancing = 1, '
                                  'net.core.rmem_max = 212992']
    assert not os.path.exists(os.path.join(node.base, 'etc/sysctl.d/90-gpuops.conf'))


def test_a_value_that_cannot_be_put_back_is_reported(tmp_path, monkeypatch):
    node = Node(tmp_path)
    write_value = config_sysctl.write_value

    def refuse(path, value):
        if path.endswith('tcp_rmem') or (path.endswith('numa_balancing') and value == '1'):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        write_value(path, value)
    monkeypatch.setattr(config_sysctl, 'write_value', refuse)
    result = node.converge(base_settings=WANTED)
    assert result['failures'] == [
        'sysctl_base_settings: the kernel refused net.ipv4.tcp_rmem = 4096 87380 134217728 (Operation not permitted)',
        'sysctl_base_settings: kernel.numa_balancing = 0 could not be put back to 1 (Operation not permitted): the '
        'running kernel keeps 0']
    assert result['changed'] and result['applied'] == [{'key': 'kernel.numa_balancing', 'before': '1', 'after': '0'}]
    assert node.read('proc/sys/net/core/rmem_max') == '212992\n'


def test_a_value_the_kernel_reads_back_otherwise_fails_and_is_put_back(tmp_path, monkeypatch):
    node = Node(tmp_path)
    untouched = _proc_values(node)
    write_value = config_sysctl.write_value

    def clamp(path, value):
        write_value(path, '2147483647' if value == '99999999999' else value)
    monkeypatch.setattr(config_sysctl, 'write_value', clamp)
    result = node.converge(settings={'net.core.rmem_max': 99999999999, 'kernel.numa_balancing': 0})
    assert result['differs'] == [{'key': 'net.core.rmem_max', 'wanted': '99999999999', 'value': '2147483647'}]
    assert result['failures'] == [
        'sysctl_settings: net.core.rmem_max = 99999999999 was written and the kernel reads back 2147483647']
    assert _proc_values(node) == untouched and not result['changed']
    assert not os.path.exists(os.path.join(node.base, 'etc/sysctl.d/90-gpuops.conf'))


def test_drift_is_what_the_files_gave_before_this_run(tmp_path):
    node = Node(tmp_path, {'etc/sysctl.d/90-gpuops.conf': 'net.core.rmem_max = 268435456\n',
                           'etc/sysctl.conf': 'kernel.numa_balancing = 1\n'})
    # rmem_max: the running 212992 is not what 90-gpuops.conf gave it; numa_balancing: 1 as sysctl.conf gives;
    # tcp_rmem: no file gave it a value, no drift
    result = node.converge(base_settings=WANTED, settings={'kernel.numa_balancing': None}, check_mode=True)
    assert result['drifted'] == [{'key': 'net.core.rmem_max', 'value': '212992', 'expected': '268435456',
                                  'file': '/etc/sysctl.d/90-gpuops.conf'}]
    assert result['warnings'] == [
        'net.core.rmem_max was 212992 on the running kernel, where the sysctl files give 268435456 '
        '(/etc/sysctl.d/90-gpuops.conf): changed at run time (a tool such as tuned, or by hand); set to 268435456']
    assert [a['key'] for a in result['applied']] == ['net.core.rmem_max', 'net.ipv4.tcp_rmem']


@pytest.mark.parametrize('kwargs, message', [
    ({'path': '/etc/sysctl.d/gpuops'}, 'sysctl_path: '),
    ({'path': '/etc/gpuops.conf'}, 'sysctl_path: '),
    ({'path': '/etc/gpuops.conf', 'option_names': {'path': 'file'}}, 'sysctl_file: '),
    ({'proc_root': '/nonexistent'}, 'sysctl_proc_root: /nonexistent has no sys directory'),
    ({'allow_missing': ['bad key']}, 'sysctl_allow_missing: '),
    ({'settings': {'net.core': 1}}, 'sysctl_settings: net.core is '),
])
def test_refusals(tmp_path, kwargs, message):
    node = Node(tmp_path)
    result = node.converge(**kwargs)
    assert len(result['errors']) == 1 and result['errors'][0].startswith(message), result['errors']


def test_a_removed_key_leaves_the_file_and_keeps_its_running_value(tmp_path):
    node = Node(tmp_path)
    node.converge(base_settings=WANTED)
    result = node.converge(base_settings=WANTED, settings={'kernel.numa_balancing': None})
    assert result['file_changed'] and result['applied'] == []
    assert 'numa_balancing' not in node.read('etc/sysctl.d/90-gpuops.conf')
    assert node.read('proc/sys/kernel/numa_balancing') == '0\n'


def test_a_refused_value_of_another_file_names_that_file(tmp_path, monkeypatch):
    node = Node(tmp_path, {'etc/sysctl.d/99-zz.conf': 'kernel.numa_balancing = 5\n'})

    def refuse(path, value):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
    monkeypatch.setattr(config_sysctl, 'write_value', refuse)
    result = node.converge(settings={'kernel.numa_balancing': 0})
    assert result['failures'] == ['sysctl_settings: the kernel refused kernel.numa_balancing = 5, the value of '
                                  '/etc/sysctl.d/99-zz.conf (Invalid argument)']


def test_a_file_that_cannot_be_written_puts_back_the_running_values(tmp_path):
    node = Node(tmp_path)
    untouched = _proc_values(node)

    def no_room(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    result = config_sysctl.converge(root=node.base, write_file=no_room, name_prefix='sysctl_', option_names={'path': 'file'},
                                    proc_root=node.proc, base_settings=WANTED)
    assert result['failures'] == ['sysctl_file: /etc/sysctl.d/90-gpuops.conf cannot be written (No space left on device)']
    assert _proc_values(node) == untouched and not result['changed']
