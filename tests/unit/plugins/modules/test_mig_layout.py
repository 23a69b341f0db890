# -*- coding: utf-8 -*-
"""mig_layout end to end against the simulator's nvidia-smi (simulator/nvidia_smi/, a replaying nvidia-smi with
its state file): the simulated H100 node taken to the mixed layout and back, check mode, a busy GPU whose mode
stays pending, the boot script run after the reboot, nvidia-smi's failures (real texts) and refused layouts."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat
import subprocess
import sys

import pytest

from ansible.module_utils.common.warnings import get_warning_messages

from ansible_collections.gpuops.node.plugins.module_utils.command import label
from ansible_collections.gpuops.node.plugins.modules import mig_layout
# patch_module: an autouse fixture
from module_harness import answer_commands, patch_module, run  # noqa: F401 pylint: disable=unused-import
from real_captures import real_text
from repo_paths import REPO

ROOT = REPO

from simulator import admin  # noqa: E402
from simulator import bundle  # noqa: E402
from simulator import nvidia_smi  # noqa: E402

H100_BUS = ['00000000:19:00.0', '00000000:3B:00.0', '00000000:4C:00.0', '00000000:5D:00.0',
            '00000000:9B:00.0', '00000000:BB:00.0', '00000000:CB:00.0', '00000000:DB:00.0']
CONFIG = {
    'version': 'v1',
    'mig-configs': {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
        'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
        'half-1g.10gb': [
            {'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}},
            {'devices': ['0000:9b:00.0', '0000:BB:00.0', 6, 7], 'mig-enabled': False},
        ],
        'mixed': [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'1g.10gb': 3, '4g.40gb': 1}}],
    },
}
SEVEN = ','.join(['1g.10gb'] * 7)


class Sim(object):
    """A simulated node: its profile copied under tmp_path, its own state file; nvidia-smi runs in-process
    (``inprocess``, recording each argv) or as a program (``smi``, a wrapper of simulator/nvidia_smi/)."""

    def __init__(self, tmp_path, monkeypatch, name):
        self.dir = str(tmp_path / 'profile')
        bundle.write_tree(bundle.read_profile(os.path.join(ROOT, 'simulator', 'profiles', name)), self.dir)
        self.env = {'GPUOPS_SIM_PROFILE': self.dir, 'GPUOPS_SIM_STATE': str(tmp_path / 'state.json'),
                    'GPUOPS_SIM_ALLOW_NONROOT': '1'}
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        self.smi = str(tmp_path / 'nvidia-smi')
        with open(self.smi, 'w') as handle:
            handle.write('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, os.path.join(ROOT, 'simulator',
                                                                                        'nvidia_smi')))
        os.chmod(self.smi, 0o755)
        self.calls = []
        self.monkeypatch = monkeypatch
        self.replace = {}

    def nvsmi(self, *argv):
        return nvidia_smi.run(list(argv), dict(self.env))

    def admin(self, *argv):
        return admin.run(list(argv), dict(self.env))

    def inprocess(self):
        """The commands the module runs answered by the simulator in-process; ``replace[option]`` = (rc, text) overrides the
        answer of the first command with that option (a real capture of a failure); ``option`` may be a tuple,
        the arguments that command has all of (``('-dgi', bus)``)."""
        sim = self

        def answer(args):
            sim.calls.append(list(args))
            for option, answer in list(sim.replace.items()):
                if all(o in args for o in (option if isinstance(option, tuple) else (option,))):
                    del sim.replace[option]
                    return answer[0], answer[1], ''
            result = sim.nvsmi(*args[1:])
            return result.rc, result.out, result.err
        self.answer = answer
        answer_commands(self.monkeypatch, answer)
        return self

    def changes(self):
        return [c for c in self.calls if any(o in c for o in ('-cgi', '-dci', '-dgi', '-mig'))]

    def modes(self):
        out = self.nvsmi('--query-gpu=mig.mode.current,mig.mode.pending', '--format=csv,noheader').out
        return [tuple(x.strip() for x in line.split(',')) for line in out.strip().splitlines()]


@pytest.fixture
def h100(tmp_path, monkeypatch):
    return Sim(tmp_path, monkeypatch, 'h100-sxm-8gpu-ib')


def _args(sim, selected, **extra):
    args = {'config': CONFIG, 'selected': selected, 'nvidia_smi': sim.smi}
    args.update(extra)
    return args


def _layout(result):
    return [(g['index'], g['mig_mode'], g['mig_mode_pending'], g['instances']) for g in result['gpus']]


def test_h100_node_to_the_mixed_layout_and_back(h100, tmp_path):
    """nvidia-smi as a program, as on a node."""
    script = str(tmp_path / 'libexec' / 'gpuops-mig-layout')
    planned = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script), check_mode=True, diff=True)
    assert planned['changed'] and h100.modes() == [('Disabled', 'Disabled')] * 8
    assert not os.path.exists(script)
    assert [(g['index'], g['mode_change'], g['create']) for g in planned['plan']] == \
        [(i, 'enable', ['1g.10gb'] * 7) for i in range(4)] + [(i, None, []) for i in range(4, 8)]
    # GPU by GPU, as they run
    assert planned['commands'] == [argv for bus in H100_BUS[:4] for argv in (
        [h100.smi, '-i', bus, '-mig', '1'], [h100.smi, 'mig', '-i', bus, '-cgi', SEVEN, '-C'])]
    assert planned['diff'][0]['before'].startswith(
        'GPU 0 00000000:19:00.0 (NVIDIA H100 80GB HBM3):\n  mig_mode: Disabled\n  mig_mode_pending: Disabled\n'
        '  instances: none\n')
    assert '  mig_mode: Enabled\n  mig_mode_pending: Enabled\n  instances: 7x 1g.10gb\n' in planned['diff'][0]['after']
    assert planned['diff'][1]['before'] == '' and 'create_instances' in planned['diff'][1]['after']

    done = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script), diff=True)
    assert done['changed'] and not done['reboot_required'] and done['pending'] == []
    assert done['commands'] == planned['commands']
    assert _layout(done) == [(i, 'Enabled', 'Enabled', {'1g.10gb': 7}) for i in range(4)] + \
        [(i, 'Disabled', 'Disabled', {}) for i in range(4, 8)]
    assert 'instances: 7x 1g.10gb' in done['diff'][0]['after']
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o755
    with open(script) as handle:
        text = handle.read()
    assert text.startswith('#!/bin/sh\n# Written by gpuops.node.mig (mig_layout)')
    assert "NVIDIA_SMI='%s'" % h100.smi in text
    assert text.endswith(''.join('create_instances %s %s || status=1\n' % (bus, SEVEN) for bus in H100_BUS[:4])
                         + 'exit $status\n')

    again = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script))
    assert not again['changed'] and again['commands'] == []
    assert all(not g['mode_change'] and not g['create'] and not g['destroy'] for g in again['plan'])

    back = run(mig_layout, _args(h100, 'all-disabled', boot_script=script))
    assert back['changed'] and not os.path.exists(script)
    assert back['commands'][:3] == [[h100.smi, 'mig', '-i', H100_BUS[0], '-gi', '7,8,9,10,11,12,13', '-dci'],
                                    [h100.smi, 'mig', '-i', H100_BUS[0], '-gi', '7,8,9,10,11,12,13', '-dgi'],
                                    [h100.smi, '-i', H100_BUS[0], '-mig', '0']]
    assert _layout(back) == [(i, 'Disabled', 'Disabled', {}) for i in range(8)]
    assert not run(mig_layout, _args(h100, 'all-disabled', boot_script=script))['changed']


def test_check_mode_on_a_gpu_with_other_instances_runs_nothing(h100):
    h100.nvsmi('-i', H100_BUS[0], '-mig', '1')
    h100.nvsmi('mig', '-i', H100_BUS[0], '-cgi', '1g.10gb,1g.10gb,1g.10gb', '-C')
    h100.inprocess()
    planned = run(mig_layout, _args(h100, 'mixed'), check_mode=True)
    assert h100.changes() == []
    gpu = planned['plan'][0]
    # a 4g.40gb after three 1g.10gb would find no placement: the GPU is rebuilt, largest first
    assert [d['gi'] for d in gpu['destroy']] == [7, 8, 9] and gpu['mode_change'] is None
    assert gpu['create'] == ['4g.40gb', '1g.10gb', '1g.10gb', '1g.10gb']
    assert planned['gpus'][0]['instances'] == {'1g.10gb': 3}
    done = run(mig_layout, _args(h100, 'mixed'))
    assert done['changed'] and done['gpus'][0]['instances'] == {'1g.10gb': 3, '4g.40gb': 1}
    assert [c[3:] for c in h100.changes()] == [
        [H100_BUS[0], '-gi', '7,8,9', '-dci'], [H100_BUS[0], '-gi', '7,8,9', '-dgi'],
        [H100_BUS[0], '-cgi', '4g.40gb,1g.10gb,1g.10gb,1g.10gb', '-C']]


def test_missing_instances_are_added(h100):
    h100.nvsmi('-i', H100_BUS[1], '-mig', '1')
    h100.nvsmi('mig', '-i', H100_BUS[1], '-cgi', '1g.10gb,1g.10gb', '-C')
    h100.inprocess()
    done = run(mig_layout, _args(h100, 'half-1g.10gb'))
    assert [c for c in h100.changes() if H100_BUS[1] in c] == [
        [h100.smi, 'mig', '-i', H100_BUS[1], '-cgi', ','.join(['1g.10gb'] * 5), '-C']]
    assert done['gpus'][1]['instances'] == {'1g.10gb': 7}


def test_busy_gpu_stays_pending_and_the_boot_script_creates_its_instances_after_the_reboot(h100, tmp_path):
    script = str(tmp_path / 'gpuops-mig-layout')
    h100.admin('busy', '0', '4242', 'python3')
    h100.inprocess()
    done = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script))
    assert done['changed'] and done['reboot_required'] and done['pending'] == [H100_BUS[0]]
    assert _layout(done)[:2] == [(0, 'Disabled', 'Enabled', {}), (1, 'Enabled', 'Enabled', {'1g.10gb': 7})]
    # nothing is created on the pending GPU
    assert not [c for c in h100.changes() if '-cgi' in c and H100_BUS[0] in c]
    warnings = get_warning_messages()
    assert any(w.startswith('GPU 0 (00000000:19:00.0): MIG mode stays pending enable') and
               'Warning: MIG mode is in pending enable state for GPU 00000000:19:00.0:In use by another client' in w
               for w in warnings), warnings

    # still busy: asked again, still pending, nothing changed
    again = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script))
    assert not again['changed'] and again['pending'] == [H100_BUS[0]] and again['reboot_required']

    h100.admin('reboot')   # applies the pending mode; GPU instances do not survive it
    assert h100.modes()[:2] == [('Enabled', 'Enabled')] * 2
    boot = subprocess.run(['/bin/sh', script], env=dict(os.environ, **h100.env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False)
    assert boot.returncode == 0, boot.stderr
    assert boot.stdout.decode().splitlines()[0] == 'GPU %s: created %s' % (H100_BUS[0], SEVEN)
    after = run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script))
    assert not after['changed'] and not after['reboot_required']
    assert _layout(after)[:4] == [(i, 'Enabled', 'Enabled', {'1g.10gb': 7}) for i in range(4)]
    # run again at a later boot, with the instances there: nothing to do, success
    boot = subprocess.run(['/bin/sh', script], env=dict(os.environ, **h100.env), stdout=subprocess.PIPE,
                          check=False)
    assert boot.returncode == 0 and b'exist already' in boot.stdout


def test_boot_script_fails_naming_the_gpu(h100, tmp_path):
    script = str(tmp_path / 'gpuops-mig-layout')
    h100.inprocess()
    run(mig_layout, _args(h100, 'half-1g.10gb', boot_script=script))
    h100.admin('reboot')
    h100.nvsmi('-i', H100_BUS[2], '-mig', '0')    # someone turned MIG off on GPU 2
    boot = subprocess.run(['/bin/sh', script], env=dict(os.environ, **h100.env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False)
    assert boot.returncode == 1
    assert boot.stderr.decode().startswith('GPU %s: ' % H100_BUS[2])
    assert h100.nvsmi('mig', '-i', H100_BUS[3], '-lgi').rc == 0   # the other GPUs got theirs


@pytest.mark.parametrize('capture', ['gh200-cgi-C-ERROR-insufficient-resources.txt',
                                     'gh200-cgi-C-ERROR-in-use-by-another-client.txt'])
def test_nvidia_smi_failures_are_reported_verbatim(h100, capture):
    text = real_text('mig/' + capture)
    h100.inprocess().replace['-cgi'] = (255, text)
    failed = run(mig_layout, _args(h100, 'all-1g.10gb'), expect_fail=True)
    argv = 'nvidia-smi mig -i %s -cgi %s -C' % (H100_BUS[0], SEVEN)
    assert failed['msg'].startswith('%s exited 255: %s' % (argv, ' | '.join(text.strip().splitlines())))
    assert failed['msg'].endswith('; run before it: nvidia-smi -i %s -mig 1' % H100_BUS[0])
    assert failed['nvidia_smi'] == text.strip().splitlines()
    # the first GPU failed: the others are untouched
    assert failed['changed'] and len(failed['commands']) == 2
    assert h100.modes() == [('Enabled', 'Enabled')] + [('Disabled', 'Disabled')] * 7


def test_a_hung_change_is_stopped_and_named_with_what_ran_before_it(h100):
    h100.inprocess()

    def hang_on_create(argv):
        if '-cgi' in argv:
            h100.calls.append(list(argv))
            return None, '', '', True
        return h100.answer(argv)
    answer_commands(h100.monkeypatch, hang_on_create)
    failed = run(mig_layout, _args(h100, 'all-1g.10gb'), expect_fail=True)
    assert failed['msg'] == ('nvidia-smi mig -i %s -cgi %s -C did not finish within 300 s and was killed; run before '
                             'it: nvidia-smi -i %s -mig 1' % (H100_BUS[0], SEVEN, H100_BUS[0]))
    assert failed['changed'] and [c[1:] for c in failed['commands']] == [
        ['-i', H100_BUS[0], '-mig', '1'], ['mig', '-i', H100_BUS[0], '-cgi', SEVEN, '-C']]


def test_a_failed_destroy_stops_before_the_mode_change(h100):
    h100.nvsmi('-i', H100_BUS[0], '-mig', '1')
    h100.nvsmi('mig', '-i', H100_BUS[0], '-cgi', '3g.40gb', '-C')
    h100.inprocess().replace['-dci'] = (255, 'Unable to destroy compute instance ID  0 from GPU  0 GPU instance '
                                             'ID  2: In use by another client\n'
                                             'Failed to destroy compute instances: In use by another client\n')
    failed = run(mig_layout, _args(h100, 'all-disabled'), expect_fail=True)
    assert failed['msg'] == ('nvidia-smi mig -i %s -gi 2 -dci exited 255: Unable to destroy compute instance ID  0 from '
                             'GPU  0 GPU instance ID  2: In use by another client | Failed to destroy compute '
                             'instances: In use by another client' % H100_BUS[0])
    assert [c[1:] for c in h100.changes()] == [['mig', '-i', H100_BUS[0], '-gi', '2', '-dci']]


def _instances(sim, bus):
    """GPU-instance profile names of one GPU, as nvidia-smi mig -lgi lists them."""
    from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_mig import parse_lgi
    result = sim.nvsmi('mig', '-i', bus, '-lgi')
    return sorted(r['name'] for r in parse_lgi(result.out)) if result.rc == 0 else []


def test_a_failed_destroy_on_the_second_gpu_leaves_the_first_complete_and_the_others_untouched(h100, tmp_path):
    """GPU by GPU, as mig-parted: GPU 0 got its new instances before GPU 1 failed, GPUs 2-7 keep theirs."""
    for bus in H100_BUS:
        h100.nvsmi('-i', bus, '-mig', '1')
        h100.nvsmi('mig', '-i', bus, '-cgi', '3g.40gb,3g.40gb', '-C')
    script = str(tmp_path / 'gpuops-mig-layout')
    h100.inprocess().replace[('-dgi', H100_BUS[1])] = (
        255, 'Unable to destroy GPU instance ID  1 from GPU  1: In use by another client\n'
             'Failed to destroy GPU instances: In use by another client\n')
    failed = run(mig_layout, _args(h100, 'all-1g.10gb', boot_script=script), expect_fail=True)
    changes = h100.changes()
    assert [(c[3], c[-1]) for c in changes] == [(H100_BUS[0], '-dci'), (H100_BUS[0], '-dgi'), (H100_BUS[0], '-C'),
                                                (H100_BUS[1], '-dci'), (H100_BUS[1], '-dgi')]
    assert failed['msg'] == ('%s exited 255: Unable to destroy GPU instance ID  1 from GPU  1: In use by '
                             'another client | Failed to destroy GPU instances: In use by another client; run before '
                             'it: %s' % (label(changes[-1]), '; '.join(label(c) for c in changes[:-1])))
    assert failed['nvidia_smi'] == ['Unable to destroy GPU instance ID  1 from GPU  1: In use by another client',
                                    'Failed to destroy GPU instances: In use by another client']
    assert failed['changed'] and failed['commands'] == changes
    assert _instances(h100, H100_BUS[0]) == ['1g.10gb'] * 7
    assert _instances(h100, H100_BUS[1]) == ['3g.40gb'] * 2
    assert all(_instances(h100, bus) == ['3g.40gb'] * 2 for bus in H100_BUS[2:])
    assert h100.nvsmi('mig', '-i', H100_BUS[2], '-lci').rc == 0     # their compute instances too
    # the boot script of the wanted layout is there, for every GPU
    with open(script) as handle:
        text = handle.read()
    assert text.endswith(''.join('create_instances %s %s || status=1\n' % (bus, SEVEN) for bus in H100_BUS)
                         + 'exit $status\n')


def test_a_failed_creation_on_the_second_gpu_stops_there_and_the_boot_script_is_written(h100, tmp_path):
    script = str(tmp_path / 'libexec' / 'gpuops-mig-layout')
    text = real_text('mig/gh200-cgi-C-ERROR-insufficient-resources.txt')
    h100.inprocess().replace[('-cgi', H100_BUS[1])] = (255, text)
    failed = run(mig_layout, _args(h100, 'all-1g.10gb', boot_script=script), expect_fail=True)
    smi = h100.smi
    assert failed['msg'] == 'nvidia-smi mig -i %s -cgi %s -C exited 255: %s; run before it: %s' % (
        H100_BUS[1], SEVEN, ' | '.join(text.strip().splitlines()), '; '.join([
            'nvidia-smi -i %s -mig 1' % H100_BUS[0], 'nvidia-smi mig -i %s -cgi %s -C' % (H100_BUS[0], SEVEN),
            'nvidia-smi -i %s -mig 1' % H100_BUS[1]]))
    assert failed['commands'][0][0] == smi
    assert h100.modes() == [('Enabled', 'Enabled')] * 2 + [('Disabled', 'Disabled')] * 6
    assert _instances(h100, H100_BUS[0]) == ['1g.10gb'] * 7 and _instances(h100, H100_BUS[1]) == []
    # each mode change read back on its own GPU
    assert [c[-1] for c in h100.calls if c[1].startswith('--query-gpu')] == H100_BUS[:2]
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o755
    with open(script) as handle:
        assert 'create_instances %s %s || status=1\n' % (H100_BUS[7], SEVEN) in handle.read()


def test_a_mode_change_that_does_not_take_leaves_its_gpu_pending_and_the_next_gpus_are_done(h100):
    """nvidia-smi says enabled, the GPU reads back Disabled: nothing is created on it; the others go on."""
    h100.inprocess().replace[('-mig', H100_BUS[1])] = (0, 'Enabled MIG Mode for GPU %s\nAll done.\n' % H100_BUS[1])
    done = run(mig_layout, _args(h100, 'half-1g.10gb'))
    assert done['pending'] == [H100_BUS[1]] and done['reboot_required']
    assert _layout(done)[:4] == [(0, 'Enabled', 'Enabled', {'1g.10gb': 7}), (1, 'Disabled', 'Disabled', {})] + [
        (i, 'Enabled', 'Enabled', {'1g.10gb': 7}) for i in (2, 3)]
    assert not [c for c in h100.changes() if '-cgi' in c and H100_BUS[1] in c]
    assert any(w.startswith('GPU 1 (%s): MIG mode is Disabled (pending Disabled) after nvidia-smi -mig' % H100_BUS[1])
               for w in get_warning_messages())


BAD = [
    ({'1g.99gb': 1}, 'mig-configs.bad[0].mig-devices.1g.99gb: GPU 0, 1, 2, 3, 4, 5, 6, 7 (NVIDIA H100 80GB HBM3) '
                     'has no GPU-instance profile 1g.99gb; its profiles: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, '
                     '3g.40gb, 4g.40gb, 7g.80gb'),
    ({'1g.10gb': 8}, 'mig-configs.bad[0].mig-devices: GPU 0, 1, 2, 3, 4, 5, 6, 7 (NVIDIA H100 80GB HBM3) cannot hold '
                     'them: 8x 1g.10gb: at most 7 fit on one GPU'),
    ({'1c.3g.40gb': 1}, 'mig-configs.bad[0].mig-devices.1c.3g.40gb: compute-instance profiles are not supported'),
]


@pytest.mark.parametrize('devices, says', BAD)
def test_bad_layouts_are_refused_with_nothing_changed(h100, devices, says):
    h100.nvsmi('-i', H100_BUS[5], '-mig', '1')     # -lgip answers for GPU 5; the others use the known profiles
    h100.inprocess()
    config = {'version': 'v1', 'mig-configs': {'bad': [{'devices': 'all', 'mig-enabled': True,
                                                        'mig-devices': devices}]}}
    failed = run(mig_layout, {'config': config, 'selected': 'bad', 'nvidia_smi': h100.smi}, check_mode=False,
                 expect_fail=True)
    assert failed['msg'].startswith(says), failed['msg']
    assert h100.changes() == []


@pytest.mark.parametrize('args, says', [
    ({'selected': 'all-2g.20gb'},
     "selected: no configuration 'all-2g.20gb' in mig-configs; known: all-1g.10gb, all-disabled, half-1g.10gb, mixed"),
    ({'config': {'version': 'v1', 'mig-configs': {'x': [{'devices': [8], 'mig-enabled': False}]}}, 'selected': 'x'},
     'mig-configs.x[0].devices[0]: no GPU 8 on this node'),
    ({'config': {'version': 'v1', 'mig-configs': {'x': [
        {'devices': 'all', 'mig-enabled': False}, {'devices': ['0000:19:00.0'], 'mig-enabled': True}]}},
      'selected': 'x'}, 'mig-configs.x[1].devices[0]: GPU 0 (0000:19:00.0) is also matched by mig-configs.x[0]'),
    ({'config': {'mig-configs': {}}}, 'version: must be v1'),
])
def test_bad_configs_are_refused_before_any_change(h100, args, says):
    h100.inprocess()
    full = _args(h100, 'half-1g.10gb')
    full.update(args)
    failed = run(mig_layout, full, expect_fail=True)
    assert failed['msg'].startswith(says), failed['msg']
    assert h100.changes() == []
    if 'selected' in args and 'config' not in args or 'version' in says:
        assert h100.calls == []    # refused before nvidia-smi runs at all


def test_config_file_on_the_node(h100, tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text(u'version: v1\nmig-configs:\n  one:\n    - devices: ["0000:3b:00.0"]\n      mig-enabled: true\n'
                    u'      mig-devices:\n        "MIG 3g.40gb": 2\n')
    h100.inprocess()
    done = run(mig_layout, {'config_file': str(path), 'selected': 'one', 'nvidia_smi': h100.smi})
    assert [g['index'] for g in done['plan']] == [1]
    assert done['gpus'][1]['instances'] == {'3g.40gb': 2}
    failed = run(mig_layout, {'config_file': str(tmp_path / 'none.yaml'), 'selected': 'one',
                              'nvidia_smi': h100.smi}, expect_fail=True)
    assert failed['msg'].startswith('config_file %s: cannot read it' % (tmp_path / 'none.yaml'))
    path.write_text(u'version: v1\nmig-configs:\n  one:\n    - devices: all\n')
    failed = run(mig_layout, {'config_file': str(path), 'selected': 'one', 'nvidia_smi': h100.smi},
                 expect_fail=True)
    assert failed['msg'] == 'config_file %s: mig-configs.one[0]: mig-enabled is required' % path


def test_config_and_config_file_exclude_each_other(h100):
    failed = run(mig_layout, {'config': CONFIG, 'config_file': '/x', 'selected': 'a'}, expect_fail=True)
    assert 'mutually exclusive' in failed['msg']
    failed = run(mig_layout, {'selected': 'a'}, expect_fail=True)
    assert 'one of the following is required' in failed['msg']


def test_mig_on_a_gpu_without_mig_is_refused(tmp_path, monkeypatch):
    p100 = Sim(tmp_path, monkeypatch, 'pcie-4gpu-roce').inprocess()
    failed = run(mig_layout, _args(p100, 'all-1g.10gb'), expect_fail=True)
    assert failed['msg'] == ('mig-configs.all-1g.10gb[0].mig-enabled: GPU 0, 1, 2, 3 (Tesla P100-PCIE-16GB) '
                             'does not support MIG')
    assert p100.changes() == []
    done = run(mig_layout, _args(p100, 'all-disabled'))
    assert not done['changed'] and p100.changes() == []


DRIVER_NOT_LOADED = os.path.join(ROOT, 'tests', 'fixtures', 'real', 'nvsmi-errors',
                                 'couldnt-communicate-debian12-535-no-kernel-module-container.txt')


def test_a_driver_that_does_not_answer_makes_the_layout_wait(h100):
    """A bare node whose driver the rollout installs: the real rc-9 answer; the configuration is still checked."""
    with open(DRIVER_NOT_LOADED) as handle:
        h100.inprocess().replace['-L'] = (9, handle.read())
    done = run(mig_layout, _args(h100, 'half-1g.10gb', wait_for_driver=True))
    assert done['waits_for_driver'] is True and not done['changed']
    assert (done['plan'], done['gpus'], h100.changes()) == ([], [], [])
    assert "couldn't communicate with the NVIDIA driver" in done['msg']


def test_without_wait_for_driver_a_silent_driver_fails(h100):
    with open(DRIVER_NOT_LOADED) as handle:
        h100.inprocess().replace['-q'] = (9, handle.read())
    failed = run(mig_layout, _args(h100, 'half-1g.10gb'), expect_fail=True)
    assert "couldn't communicate with the NVIDIA driver" in failed['msg']


def test_waiting_still_refuses_a_bad_selection(h100):
    failed = run(mig_layout, _args(h100.inprocess(), 'nope', wait_for_driver=True), expect_fail=True)
    assert failed['msg'].startswith("selected: no configuration 'nope'")


def test_nvidia_smi_not_installed_waits_only_when_asked(h100):
    h100.inprocess()
    done = run(mig_layout, _args(h100, 'half-1g.10gb', nvidia_smi='nvidia-smi-not-here', wait_for_driver=True))
    assert done['waits_for_driver'] is True and 'not on the PATH' in done['msg']
    failed = run(mig_layout, _args(h100, 'half-1g.10gb', nvidia_smi='nvidia-smi-not-here'), expect_fail=True)
    assert failed['msg'] == 'nvidia_smi: nvidia-smi-not-here is not on the PATH'


def test_a_loaded_driver_does_not_wait(h100):
    done = run(mig_layout, _args(h100.inprocess(), 'half-1g.10gb', wait_for_driver=True))
    assert done['waits_for_driver'] is False and done['changed']


@pytest.mark.parametrize('capture, rc', [
    ('nvml-driver-library-mismatch-580-with-library-version-line.txt', 18),
    ('nvml-driver-library-mismatch-470-single-line.txt', 18),
])
def test_a_driver_upgrade_waiting_for_its_reboot_makes_the_layout_wait(h100, capture, rc):
    """The new library, the old module still loaded (real captures): the layout waits for the rollout's reboot."""
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'real', 'nvsmi-errors', capture)) as handle:
        h100.inprocess().replace['-L'] = (rc, handle.read())
    done = run(mig_layout, _args(h100, 'half-1g.10gb', wait_for_driver=True))
    assert done['waits_for_driver'] is True and 'Driver/library version mismatch' in done['msg']
    assert h100.changes() == []


def test_an_absent_nvidia_smi_path_is_named(h100, tmp_path):
    absent = str(tmp_path / 'bin' / 'nvidia-smi')
    failed = run(mig_layout, _args(h100, 'half-1g.10gb', nvidia_smi=absent), expect_fail=True)
    assert failed['msg'] == 'nvidia_smi: %s does not exist or is not executable' % absent
    done = run(mig_layout, _args(h100, 'half-1g.10gb', nvidia_smi=absent, wait_for_driver=True))
    assert done['waits_for_driver'] is True


@pytest.fixture
def unknown_model(h100, monkeypatch):
    """The H100 node as a model whose profiles are not known while MIG is off."""
    from ansible_collections.gpuops.node.plugins.module_utils.node import mig_profiles
    monkeypatch.setattr(mig_profiles, 'KNOWN', {})
    return h100.inprocess()


def test_an_unknown_model_is_checked_once_mig_is_on_before_anything_is_created(unknown_model, tmp_path):
    config = {'version': 'v1', 'mig-configs': {'bad': [{'devices': [0, 1], 'mig-enabled': True,
                                                       'mig-devices': {'1g.99gb': 2}}]}}
    script = tmp_path / 'gpuops-mig-layout'
    script.write_text(u'#!/bin/sh\n# the previous layout\n')
    failed = run(mig_layout, {'config': config, 'selected': 'bad', 'nvidia_smi': unknown_model.smi,
                              'boot_script': str(script)}, expect_fail=True)
    assert failed['msg'].startswith('mig-configs.bad[0].mig-devices.1g.99gb: GPU 0 (NVIDIA H100 80GB HBM3) has no '
                                    'GPU-instance profile 1g.99gb; its profiles: 1g.10gb')
    assert failed['msg'].endswith('; nothing was created on GPU 0 (00000000:19:00.0), its MIG mode set back to '
                                  'Disabled; run before: %s -i 00000000:19:00.0 -mig 1' % unknown_model.smi)
    # checked on GPU 0 before its creation; GPU 1 is never touched
    assert [c[1:] for c in unknown_model.changes()] == [['-i', H100_BUS[0], '-mig', '1'],
                                                        ['-i', H100_BUS[0], '-mig', '0']]
    assert unknown_model.modes()[:2] == [('Disabled', 'Disabled'), ('Disabled', 'Disabled')]
    # a refused layout leaves the boot script of the previous one
    assert script.read_text() == u'#!/bin/sh\n# the previous layout\n'


def test_an_unknown_model_with_a_good_layout_is_created(unknown_model):
    done = run(mig_layout, _args(unknown_model, 'half-1g.10gb'))
    assert done['changed'] and [w for w in get_warning_messages() if 'not known while MIG is disabled' in w]
    assert _layout(done)[0][1:] == ('Enabled', 'Enabled', {'1g.10gb': 7})
