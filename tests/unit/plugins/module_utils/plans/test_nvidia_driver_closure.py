# -*- coding: utf-8 -*-
"""The exact-version closure of the driver packages (plans/nvidia_driver.py, dependency_closure), walked over real
apt output: the walk of Debian 12's own open-module set at 535.261.03-1 as apt printed each of its commands
(tests/fixtures/real/apt, the command of each in its .source). What this cannot prove: the graph of NVIDIA's own
Ubuntu packages, which tests/unit/repos/test_ubuntu_repo.py walks with real apt over stand-ins."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.node.packages import parse_madison
from ansible_collections.gpuops.node.plugins.module_utils.parsers.apt_show import parse_show
from ansible_collections.gpuops.node.plugins.module_utils.plans.nvidia_driver import (
    PlanError, add_closure, choose_pinning, dependency_closure)
from real_captures import real_text

WALK = 'apt/debian12-535-open-%d-apt-cache-%s'
V = '535.261.03-1'
LEADS = ['nvidia-open-kernel-dkms', 'nvidia-open-kernel-support', 'firmware-nvidia-gsp', 'nvidia-smi', 'libnvidia-ml1',
         'libcuda1']


class RealWalk(object):
    """apt-cache show and madison answered by the real captures, in order, each asked exactly as captured."""

    def __init__(self):
        self.step = 0

    def _next(self, kind, args):
        self.step += 1
        name = WALK % (self.step, kind)
        command = real_text(name + '.source').splitlines()[0]
        assert command == 'Command: apt-cache %s %s' % (kind, ' '.join(args)), (self.step, command)
        return real_text(name + '.txt')

    def show(self, specs):
        return parse_show(self._next('show', specs))

    def offered(self, names):
        out = self._next('madison', names)
        return dict((n, parse_madison(out, n)) for n in names)


def test_the_real_walk_finds_what_debian_couples_at_the_exact_version():
    walk = RealWalk()
    found = dependency_closure(LEADS, V, walk.show, walk.offered)
    # nvidia-alternative (= V) everywhere, libcuda1's exact libraries, and libcuda1's Pre-Depends
    # nvidia-legacy-check (>= 495), which Debian also builds at V; not dkms, libc6, nvidia-modprobe (another
    # version) nor the virtual packages (madison prints nothing for them)
    assert found == ['nvidia-alternative', 'libnvidia-ptxjitcompiler1', 'libnvidia-pkcs11-openssl3',
                     'nvidia-legacy-check']
    assert walk.step == 4


def test_the_walk_stops_when_nothing_new_is_offered_at_the_version():
    calls = []

    def show(specs):
        calls.append(specs)
        return [{'package': 'a', 'version': '1-1', 'depends': [[{'name': 'b', 'op': '=', 'version': '1-1'}]],
                 'pre_depends': []},
                {'package': 'b', 'version': '1-1', 'depends': [[{'name': 'a', 'op': None, 'version': None}]],
                 'pre_depends': []}]

    assert dependency_closure(['a'], '1-1', show, lambda names: {'b': ['1-1', '2-1']}) == ['b']
    assert calls == [['a=1-1'], ['b=1-1']]
    # a stanza of another version than asked (apt printing one it was not asked for) adds nothing
    assert dependency_closure(['x'], '2-1', show, lambda names: {}) == []


def test_the_closure_is_installed_at_the_target_and_held():
    result = {'action': 'upgrade', 'target_package_version': V, 'install': ['nvidia-smi=' + V], 'hold': ['nvidia-smi'],
              'unhold': [], 'remove': []}
    add_closure(result, ['nvidia-alternative', 'nvidia-smi'], {'nvidia-alternative': '535.216.01-1'},
                ['nvidia-alternative'])
    assert result['install'] == ['nvidia-smi=' + V, 'nvidia-alternative=' + V]
    assert result['hold'] == ['nvidia-smi', 'nvidia-alternative'] and result['closure'] == ['nvidia-alternative']
    assert result['unhold'] == ['nvidia-alternative']
    # nothing else to change: a closure package at another version (moved alone) is put back
    again = {'action': 'none', 'target_package_version': V, 'install': [], 'hold': ['nvidia-smi'], 'unhold': [],
             'remove': []}
    add_closure(again, ['nvidia-alternative', 'libcuda1'], {'nvidia-alternative': V, 'libcuda1': '550.163.01-2'}, [])
    assert again['install'] == ['libcuda1=' + V] and again['hold'] == ['nvidia-smi', 'nvidia-alternative', 'libcuda1']
    assert again['action'] == 'switch' and again['drift'] == ['libcuda1']


def test_the_most_exact_pinning_package_offered_and_the_others_removed():
    node = {'pinning_available': [('nvidia-driver-pinning-595.71.05', []),
                                  ('nvidia-driver-pinning-595', ['595-1ubuntu1', '595-2ubuntu1'])],
            'pinning_installed': {'nvidia-driver-pinning-580.126.20': '580.126.20-1ubuntu1'}}
    chosen, remove = choose_pinning(node, '595.71.05')
    assert chosen == {'package': 'nvidia-driver-pinning-595', 'package_version': '595-2ubuntu1', 'install': True,
                      'target_version': '595.71.05'}
    assert remove == ['nvidia-driver-pinning-580.126.20']
    # none offered: the installed one, which pins another version, still goes
    assert choose_pinning({'pinning_available': [('nvidia-driver-pinning-595.71.05', [])],
                           'pinning_installed': {'nvidia-driver-pinning-595.45.04': '1'}}, '595.71.05') == (
        None, ['nvidia-driver-pinning-595.45.04'])


def _stanza(name, version, *groups):
    return {'package': name, 'version': version, 'pre_depends': [],
            'depends': [[{'name': alt, 'op': '=', 'version': version} for alt in group.split('|')] for group in groups]}


def test_one_alternative_a_group_and_none_for_a_group_the_set_satisfies():
    stanzas = {'smi=1-1': _stanza('smi', '1-1', 'dkms-open|dkms-prop', 'lib'),
               'lib=1-1': _stanza('lib', '1-1', 'smi|other'),
               'dkms-open=1-1': _stanza('dkms-open', '1-1')}

    def show(specs):
        return [stanzas[s] for s in specs if s in stanzas]

    offered = {'dkms-open': ['1-1'], 'dkms-prop': ['1-1'], 'lib': ['1-1'], 'other': ['1-1']}
    # both flavours offered: the first alternative only; "smi | other" is met by the set itself
    assert dependency_closure(['smi'], '1-1', show, lambda names: offered) == ['dkms-open', 'lib']
    # a lead that is an alternative satisfies its group
    assert dependency_closure(['smi', 'dkms-prop'], '1-1', show, lambda names: offered) == ['lib']


def test_a_walk_that_does_not_end_or_grows_without_bound_is_refused():
    def show(specs):
        name, version = specs[0].split('=')
        return [_stanza(name, version, name + 'x')]

    with pytest.raises(PlanError) as info:
        dependency_closure(['a'], '1-1', show, lambda names: dict((n, ['1-1']) for n in names), depth=5)
    assert info.value.variable == 'nvidia_driver_source' and 'deeper than 5 levels' in str(info.value)

    def wide(specs):
        return [_stanza('a', '1-1', *['p%d' % i for i in range(300)])] if specs == ['a=1-1'] else []

    with pytest.raises(PlanError) as info:
        dependency_closure(['a'], '1-1', wide, lambda names: dict((n, ['1-1']) for n in names))
    assert 'more than 200 packages' in str(info.value)


def test_a_moved_closure_package_turns_nothing_into_a_switch_that_may_downgrade():
    result = {'action': 'none', 'target_package_version': V, 'install': [], 'hold': ['nvidia-smi'], 'unhold': [],
              'remove': []}
    add_closure(result, ['nvidia-legacy-check'], {'nvidia-legacy-check': '550.163.01-2'}, ['nvidia-legacy-check'])
    assert result['action'] == 'switch' and result['drift'] == ['nvidia-legacy-check']
    assert result['install'] == ['nvidia-legacy-check=' + V] and result['downgrades'] is True
    assert result['unhold'] == ['nvidia-legacy-check']
    # a package the plan would remove but the closure needs stays
    kept = {'action': 'upgrade', 'target_package_version': V, 'install': ['nvidia-smi=' + V], 'hold': ['nvidia-smi'],
            'unhold': [], 'remove': ['nvidia-alternative', 'nvidia-kernel-dkms']}
    add_closure(kept, ['nvidia-alternative'], {}, [])
    assert kept['remove'] == ['nvidia-kernel-dkms'] and kept['downgrades'] is False
