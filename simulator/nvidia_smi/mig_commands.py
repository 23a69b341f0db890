# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``nvidia-smi mig ...``: listing, creating and destroying GPU and compute instances in the state.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from .common import (INVALID_COMBINATION, RC_NO_PERMISSION, RC_NOT_FOUND, RC_OTHER, Exit, Result, bad_argument,
                     not_simulated, parse_options, require_root, select_gpus)
from .mig import (CCI_OK, find_gi_profile, free_count, gi_id_for, gi_sort_key, place_gi, profile_by_id, render_lci,
                  render_lgi, render_lgip)


class MigCommands(object):
    """``mig -lgip | -lgi | -lci | -cgi | -cci | -dci | -dgi`` of Nvsmi (simulator/nvidia_smi/cli.py)."""

    MIG_OPTIONS = {
        '-i': ('id', True), '--id': ('id', True),
        '-lgip': ('lgip', False), '--list-gpu-instance-profiles': ('lgip', False),
        '-lgi': ('lgi', False), '--list-gpu-instances': ('lgi', False),
        '-lci': ('lci', False), '--list-compute-instances': ('lci', False),
        '-cgi': ('cgi', True), '--create-gpu-instance': ('cgi', True),
        '-C': ('default_ci', False), '--default-compute-instance': ('default_ci', False),
        '-cci': ('cci', False), '--create-compute-instance': ('cci', False),
        '-gi': ('gi', True), '--gpu-instance-id': ('gi', True),
        '-ci': ('ci', True), '--compute-instance-id': ('ci', True),
        '-dci': ('dci', False), '--destroy-compute-instance': ('dci', False),
        '-dgi': ('dgi', False), '--destroy-gpu-instance': ('dgi', False),
    }
    MIG_NOT_SIMULATED = set(['-lgipp', '--list-gpu-instance-possible-placements', '-lcip',
                             '--list-compute-instance-profiles', '-lcipp'])

    def cmd_mig(self, argv):
        for arg in argv:
            if arg.split('=')[0] in self.MIG_NOT_SIMULATED:
                raise not_simulated('mig ' + arg)
        # -cci takes an optional profile list
        cci_value = None
        if '-cci' in argv or '--create-compute-instance' in argv:
            idx = argv.index('-cci') if '-cci' in argv else argv.index('--create-compute-instance')
            if idx + 1 < len(argv) and not argv[idx + 1].startswith('-'):
                cci_value = argv[idx + 1]
                argv = argv[:idx + 1] + argv[idx + 2:]
        opts, _pos = parse_options(argv, self.MIG_OPTIONS)
        actions = [k for k in ('lgip', 'lgi', 'lci', 'cgi', 'cci', 'dci', 'dgi') if k in opts]
        if len(actions) != 1 or ('default_ci' in opts and actions != ['cgi']):
            raise bad_argument(INVALID_COMBINATION)
        action = actions[0]
        gpus = self.profile.gpus()
        selected = select_gpus(gpus, opts.get('id'))
        capable = [g for g in selected if self.profile.mig_table(g.name)]
        if not capable:
            raise Exit(RC_NOT_FOUND, 'No MIG-supported devices found.\n')
        if action in ('cgi', 'cci', 'dci', 'dgi'):
            require_root(Exit(RC_NO_PERMISSION, 'Insufficient Permissions\n'))
        state = self._state(lock=action in ('cgi', 'cci', 'dci', 'dgi'))
        try:
            enabled = [g for g in capable if state.gpu(g.bus_id).get('mig_current') == 'Enabled']
            if not enabled:
                raise Exit(RC_NOT_FOUND, 'No MIG-enabled devices found.\n')
            result = getattr(self, 'mig_' + action)(opts, enabled, state, cci_value)
            if action in ('cgi', 'cci', 'dci', 'dgi'):
                state.save()
            return result
        finally:
            state.release()

    def mig_lgip(self, opts, gpus, state, _cci):
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for prof in table['profiles']:
                rows.append((gpu.index, prof, free_count(table, gis, prof)))
        return Result(0, render_lgip(rows))

    def _gi_filter(self, opts):
        if opts.get('gi') is None:
            return None
        try:
            return set(int(x) for x in opts['gi'].split(','))
        except ValueError:
            raise bad_argument(INVALID_COMBINATION)

    def mig_lgi(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=gi_sort_key):
                if wanted is None or gi['id'] in wanted:
                    rows.append((gpu.index, gi, profile_by_id(table, gi['profile_id'])))
        if not rows:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, render_lgi(rows))

    def mig_lci(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        rows = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=gi_sort_key):
                if wanted is not None and gi['id'] not in wanted:
                    continue
                for ci in sorted(gi['compute_instances'], key=lambda c: c['id']):
                    rows.append((gpu.index, gi, ci, profile_by_id(table, gi['profile_id'])))
        if not rows:
            raise Exit(RC_NOT_FOUND, 'No compute instances found: Not Found\n')
        return Result(0, render_lci(rows))

    @staticmethod
    def _new_ci(gi, prof):
        ci_id = 0
        used = set(c['id'] for c in gi['compute_instances'])
        while ci_id in used:
            ci_id += 1
        if gi['compute_instances']:
            return None
        ci = {'id': ci_id, 'profile_id': prof['ci_profile_id'], 'start': 0, 'size': prof['ci_placement_size']}
        gi['compute_instances'].append(ci)
        return ci

    def mig_cgi(self, opts, gpus, state, _cci):
        tokens = [t for t in opts['cgi'].split(',') if t.strip()]
        if not tokens:
            raise bad_argument(INVALID_COMBINATION)
        out = []
        err = []
        rc = 0
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for token in tokens:
                prof = find_gi_profile(table, token)
                if prof is None:
                    err.append('Unable to create a GPU instance on GPU %2d using profile %s: Not Found'
                               % (gpu.index, token.strip()))
                    err.append('Failed to create GPU instances: Not Found')
                    return Result(RC_NOT_FOUND, '\n'.join(out + err) + '\n')
                start = place_gi(table, gis, prof)
                if start is None:
                    err.append('Unable to create a GPU instance on GPU %2d using profile %s: Insufficient Resources'
                               % (gpu.index, token.strip()))
                    err.append('Failed to create GPU instances: Insufficient Resources')
                    rc = RC_OTHER
                    return Result(rc, '\n'.join(out + err) + '\n')
                gi = {'id': gi_id_for(start, prof['mem_slots']), 'profile_id': prof['id'], 'start': start,
                      'size': prof['mem_slots'], 'compute_instances': []}
                gis.append(gi)
                out.append('Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)'
                           % (gi['id'], gpu.index, prof['name'], prof['id']))
                if opts.get('default_ci'):
                    ci = self._new_ci(gi, prof)
                    out.append(CCI_OK % (ci['id'], gpu.index, gi['id'], prof['name'], ci['profile_id']))
        return Result(rc, '\n'.join(out) + '\n')

    def mig_cci(self, opts, gpus, state, cci_value):
        wanted = self._gi_filter(opts)
        out = []
        for gpu in gpus:
            table = self.profile.mig_table(gpu.name)
            gis = sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=lambda g: g['id'])
            targets = [gi for gi in gis if wanted is None or gi['id'] in wanted]
            if wanted is not None and len(targets) != len(wanted):
                return Result(RC_NOT_FOUND, '\n'.join(out + ['Unable to find GPU instance: Not Found',
                                                             'Failed to create compute instances: Not Found']) + '\n')
            for gi in targets:
                prof = profile_by_id(table, gi['profile_id'])
                if cci_value is not None:
                    names = [t.strip() for t in cci_value.split(',') if t.strip()]
                    full = (str(prof['ci_profile_id']), prof['name'], 'MIG ' + prof['name'])
                    if len(names) != 1 or names[0] not in full:
                        raise not_simulated('mig -cci %s (only the full-GPU-instance compute profile is simulated)'
                                            % cci_value)
                ci = self._new_ci(gi, prof)
                if ci is None:
                    return Result(RC_OTHER, '\n'.join(out + [
                        'Unable to create a compute instance on GPU %2d GPU instance ID %2d using profile %s: '
                        'Insufficient Resources' % (gpu.index, gi['id'], prof['ci_profile_id']),
                        'Failed to create compute instances: Insufficient Resources']) + '\n')
                out.append(CCI_OK % (ci['id'], gpu.index, gi['id'], prof['name'], ci['profile_id']))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')

    def mig_dci(self, opts, gpus, state, _cci):
        wanted_gi = self._gi_filter(opts)
        wanted_ci = None
        if opts.get('ci') is not None:
            try:
                wanted_ci = set(int(x) for x in opts['ci'].split(','))
            except ValueError:
                raise bad_argument(INVALID_COMBINATION)
        out = []
        for gpu in gpus:
            for gi in sorted(state.gpu(gpu.bus_id)['gpu_instances'], key=lambda g: g['id']):
                if wanted_gi is not None and gi['id'] not in wanted_gi:
                    continue
                for ci in list(sorted(gi['compute_instances'], key=lambda c: c['id'])):
                    if wanted_ci is not None and ci['id'] not in wanted_ci:
                        continue
                    gi['compute_instances'].remove(ci)
                    out.append('Successfully destroyed compute instance ID %2d from GPU %2d GPU instance ID %2d'
                               % (ci['id'], gpu.index, gi['id']))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No compute instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')

    def mig_dgi(self, opts, gpus, state, _cci):
        wanted = self._gi_filter(opts)
        out = []
        for gpu in gpus:
            gis = state.gpu(gpu.bus_id)['gpu_instances']
            for gi in sorted(list(gis), key=lambda g: g['id']):
                if wanted is not None and gi['id'] not in wanted:
                    continue
                if gi['compute_instances']:
                    out.append('Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client'
                               % (gi['id'], gpu.index))
                    out.append('Failed to destroy GPU instances: In use by another client')
                    return Result(RC_OTHER, '\n'.join(out) + '\n')
                gis.remove(gi)
                out.append('Successfully destroyed GPU instance ID %2d from GPU %2d' % (gi['id'], gpu.index))
        if not out:
            raise Exit(RC_NOT_FOUND, 'No GPU instances found: Not Found\n')
        return Result(0, '\n'.join(out) + '\n')
