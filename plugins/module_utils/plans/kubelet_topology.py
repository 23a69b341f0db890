# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``gpuops.node.kubelet_topology`` role will change on a node, decided before it changes anything.

Pure functions over the role's variables, the kubelet configuration the node runs with (its main file and, with
``--config-dir``, the drop-ins), the kubelet's CPU and memory manager state files, and the ``gpu_topology`` facts
(``numa_nodes``, ``gpus``, ``nics``, ``gpu_nic_affinity``). ``plugins/modules/kubelet_topology_plan.py`` calls
:func:`plan`. Every refusal starts with the variable to change.

The kubelet refuses to start when a state file was written under another policy ("configured policy "static"
differs from state checkpoint policy "none", please drain this node and delete the CPU manager checkpoint file";
kubespray issue 8535), and its static CPU policy and Static memory manager check their state against the
reservations, so a state file is removed whenever what its manager depends on changes, or when it names another
policy than the one configured.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible.module_utils.six import integer_types, string_types

from ansible_collections.gpuops.node.plugins.module_utils.config.kubelet import (
    KubeletConfigError, check, effective, format_cpuset, format_quantity, parse_cpuset, parse_quantity)

P = 'kubelet_topology_'

# the kubelet's defaults for keys a configuration file may leave out (KubeletConfiguration v1beta1)
DEFAULTS = {'cpuManagerPolicy': 'none', 'topologyManagerPolicy': 'none', 'topologyManagerScope': 'container',
            'memoryManagerPolicy': 'None'}
# evictionHard when the file has none at all (the kubelet's DefaultEvictionHard; a file that sets evictionHard without
# memory.available has no memory threshold)
DEFAULT_EVICTION_HARD = {'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%',
                         'imagefs.available': '15%'}
# CPU manager policy options of the static policy (kubelet 1.22-1.33, pkg/kubelet/cm/cpumanager/policy_options.go)
CPU_POLICY_OPTIONS = ('full-pcpus-only', 'distribute-cpus-across-numa', 'align-by-socket',
                      'distribute-cpus-across-cores', 'strict-cpu-reservation', 'prefer-align-cpus-by-uncorecache')
NUMA_POLICIES = ('restricted', 'single-numa-node')
# the topology manager refuses more NUMA nodes than this (policy option max-allowable-numa-nodes, kubelet 1.31+)
MAX_NUMA_NODES = 8
HEALTHZ_FLAGS = (('--healthz-port', 'healthzPort'), ('--healthz-bind-address', 'healthzBindAddress'))
MAP_VARIABLES = (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved'), ('eviction_hard', 'evictionHard'))
# kubelet flags that override what the configuration file says, with the role variable the file's key is
FLAG_VARIABLES = (('--cpu-manager-policy', 'cpu_manager_policy'), ('--cpu-manager-policy-options', 'cpu_manager_policy_options'),
                  ('--topology-manager-policy', 'topology_manager_policy'),
                  ('--topology-manager-scope', 'topology_manager_scope'), ('--reserved-cpus', 'reserved_system_cpus'),
                  ('--memory-manager-policy', 'memory_manager_policy'), ('--reserved-memory', 'reserved_memory'),
                  ('--kube-reserved', 'kube_reserved'), ('--system-reserved', 'system_reserved'),
                  ('--eviction-hard', 'eviction_hard'))
CPU_STATE = 'cpu_manager_state'
MEMORY_STATE = 'memory_manager_state'
# what each manager's state depends on: (key, sub-key or None)
CPU_KEYS = (('cpuManagerPolicy', None), ('cpuManagerPolicyOptions', None), ('reservedSystemCPUs', None),
            ('kubeReserved', 'cpu'), ('systemReserved', 'cpu'))
MEMORY_KEYS = (('memoryManagerPolicy', None), ('reservedMemory', None), ('kubeReserved', 'memory'),
               ('systemReserved', 'memory'), ('evictionHard', 'memory.available'))
DROP_IN_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*[.]conf$')


def _cpus_of_node(facts):
    """Every CPU of the node's NUMA nodes (``numa_nodes`` of the facts), or None when the facts do not say."""
    nodes = (facts or {}).get('numa_nodes') or {}
    cpus = set()
    for cpulist in nodes.values():
        try:
            cpus.update(parse_cpuset(cpulist or ''))
        except ValueError:
            return None
    return cpus or None


def numa_nodes_with_cpus(facts):
    """The NUMA nodes that have CPUs, as ints, in order (a GH200's GPU memory nodes have none); [] when unknown."""
    nodes = (facts or {}).get('numa_nodes') or {}
    found = []
    for name, cpulist in nodes.items():
        try:
            if str(name).isdigit() and parse_cpuset(cpulist or ''):
                found.append(int(name))
        except ValueError:
            continue
    return sorted(found)


def _quantity(value, name, errors, what='a quantity'):
    if value is None:
        return 0
    try:
        return parse_quantity(str(value))
    except ValueError as exc:
        errors.append('%s: %r is not %s (%s)' % (name, value, what, exc))
        return 0


def _sub(config, key, sub):
    value = config.get(key)
    return value.get(sub) if isinstance(value, dict) else None


def _eviction_memory(config, errors, name):
    """Bytes of the hard eviction threshold for memory, as the kubelet counts it for the Static memory manager."""
    hard = config.get('evictionHard')
    if hard is None:
        hard = DEFAULT_EVICTION_HARD
    value = hard.get('memory.available') if isinstance(hard, dict) else None
    if value is None:
        return 0
    if str(value).endswith('%'):
        errors.append('%s: evictionHard memory.available is %s; the Static memory manager needs an absolute quantity '
                      '(e.g. 100Mi) to sum the reserved memory' % (name, value))
        return 0
    return _quantity(value, name, errors)


def compute_reserved_memory(total, numa_nodes):
    """``reservedMemory`` spreading ``total`` bytes over ``numa_nodes`` in whole MiB, the rest on the first node."""
    nodes = numa_nodes or [0]
    mib = 1024 * 1024
    share = (total // len(nodes)) // mib * mib
    entries = []
    for position, node in enumerate(nodes):
        amount = share + (total - share * len(nodes) if position == 0 else 0)
        entries.append({'numaNode': node, 'limits': {'memory': format_quantity(amount)}})
    return entries


def check_values(v):
    """Errors of the variables that do not depend on the node or its configuration."""
    errors = []
    options = v.get(P + 'cpu_manager_policy_options') or {}
    for key, value in sorted(options.items()):
        if key not in CPU_POLICY_OPTIONS:
            errors.append('%scpu_manager_policy_options: %s is not a CPU manager policy option (known: %s)'
                          % (P, key, ', '.join(CPU_POLICY_OPTIONS)))
        elif not (isinstance(value, string_types) and value in ('true', 'false')) and not isinstance(value, bool):
            errors.append('%scpu_manager_policy_options: %s is %r; the kubelet takes "true" or "false"' % (P, key, value))
    if options and v.get(P + 'cpu_manager_policy') != 'static':
        errors.append('%scpu_manager_policy_options: options are for the static policy only, and the policy is %s'
                      % (P, v.get(P + 'cpu_manager_policy')))
    reserved = v.get(P + 'reserved_system_cpus') or ''
    if reserved:
        try:
            parse_cpuset(reserved)
        except ValueError as exc:
            errors.append('%sreserved_system_cpus: %r is not a CPU list such as "0-1,64-65" (%s)' % (P, reserved, exc))
    for entry in v.get(P + 'reserved_memory') or []:
        if not isinstance(entry, dict) or not isinstance(entry.get('numaNode'), integer_types) \
                or not isinstance(entry.get('limits'), dict) or 'memory' not in entry['limits']:
            errors.append('%sreserved_memory: %r must be {numaNode: <int>, limits: {memory: <quantity>}}' % (P, entry))
    if v.get(P + 'reserved_memory') and v.get(P + 'memory_manager_policy') != 'Static':
        errors.append('%sreserved_memory: reserved memory per NUMA node is for the Static memory manager, and the policy '
                      'is %s' % (P, v.get(P + 'memory_manager_policy')))
    if v.get(P + 'mode') == 'drop_in' and not DROP_IN_RE.match(v.get(P + 'drop_in_name') or ''):
        errors.append('%sdrop_in_name: %r must be a file name ending in .conf (the kubelet reads only *.conf in its '
                      'config directory)' % (P, v.get(P + 'drop_in_name')))
    if v.get(P + 'drain') and not v.get(P + 'kubectl_host'):
        errors.append('%skubectl_host: draining (%sdrain) needs the host that reaches the API server' % (P, P))
    if v.get(P + 'drain') and not (v.get(P + 'drain_options') or {}).get('wait_timeout'):
        errors.append('%sdrain_options: give wait_timeout (seconds): without it the drain returns as soon as the pods '
                      'are asked to leave, and the kubelet would be stopped under pods still ending' % P)
    return errors


def wanted_settings(v):
    """The keys the role writes (None removes a key): the policies, and the reservations the variables give."""
    options = v.get(P + 'cpu_manager_policy_options') or {}
    settings = {
        'cpuManagerPolicy': v.get(P + 'cpu_manager_policy'),
        'cpuManagerPolicyOptions': dict((k, str(val).lower()) for k, val in options.items()) or None,
        'topologyManagerPolicy': v.get(P + 'topology_manager_policy'),
        'topologyManagerScope': v.get(P + 'topology_manager_scope'),
        'reservedSystemCPUs': v.get(P + 'reserved_system_cpus') or None,
        'memoryManagerPolicy': v.get(P + 'memory_manager_policy'),
    }
    for name, key in MAP_VARIABLES:
        if v.get(P + name):
            # null removes a key the file has
            settings[key] = dict((k, None if val is None else str(val)) for k, val in v[P + name].items())
    return settings


def _over_current(settings, before):
    """``settings`` as written over the current configuration ``before``: the reservation and eviction maps merged key
    by key into the current ones (the kubelet's own defaults when the file has no evictionHard, which it would lose),
    and the kubelet's default policies left out where the configuration does not set the key (nothing to change)."""
    settings = dict(settings)
    for _name, key in MAP_VARIABLES:
        if key in settings:
            current = before.get(key)
            if current is None and key == 'evictionHard':
                current = DEFAULT_EVICTION_HARD
            merged = dict(current or {}, **settings[key])
            settings[key] = dict((k, val) for k, val in merged.items() if val is not None)
    for key, default in DEFAULTS.items():
        if settings.get(key) == default and key not in before:
            del settings[key]
    return settings


def _check_cpu(config, cpus, errors):
    if config.get('cpuManagerPolicy', DEFAULTS['cpuManagerPolicy']) != 'static':
        return
    reserved = config.get('reservedSystemCPUs') or ''
    if reserved:
        try:
            listed = set(parse_cpuset(reserved))
        except ValueError:
            return
        if cpus is not None and not listed <= cpus:
            errors.append('%sreserved_system_cpus: %s names CPUs the node does not have (it has %s)'
                          % (P, reserved, format_cpuset(sorted(cpus))))
        elif cpus is not None and listed == cpus:
            errors.append('%sreserved_system_cpus: %s is every CPU of the node; the static policy would have none to give '
                          'pods' % (P, reserved))
        return
    millis = sum(_quantity(_sub(config, key, 'cpu'), P + name, errors) for key, name in
                 (('kubeReserved', 'kube_reserved'), ('systemReserved', 'system_reserved')))
    if millis == 0:
        errors.append('%scpu_manager_policy: static needs CPUs reserved for the system, and none are: set %sreserved_system_cpus '
                      '(e.g. "0-1") or a cpu reservation in %skube_reserved or %ssystem_reserved (the kubelet refuses to '
                      'start: "unable to determine reserved CPU resources for static policy")' % (P, P, P, P))


def _check_memory(config, given, numa, errors, warnings):
    """The Static memory manager's reservedMemory: given (checked) or computed; None when the policy is not Static."""
    if config.get('memoryManagerPolicy', DEFAULTS['memoryManagerPolicy']) != 'Static':
        return None
    total = sum(_quantity(_sub(config, key, 'memory'), P + name, errors) for key, name in
                (('kubeReserved', 'kube_reserved'), ('systemReserved', 'system_reserved')))
    total += _eviction_memory(config, errors, P + 'eviction_hard')
    if errors:
        return None
    if given:
        known = set(numa)
        summed = 0
        for entry in given:
            if known and entry['numaNode'] not in known:
                errors.append('%sreserved_memory: NUMA node %s has no CPUs on this node (nodes with CPUs: %s)'
                              % (P, entry['numaNode'], ', '.join(str(n) for n in numa)))
            summed += _quantity(entry['limits'].get('memory'), P + 'reserved_memory', errors)
        if summed != total and not errors:
            errors.append('%sreserved_memory: it reserves %s in all, and the Static memory manager needs exactly '
                          'kubeReserved + systemReserved + evictionHard memory.available = %s'
                          % (P, format_quantity(summed), format_quantity(total)))
        return [dict(entry, limits=dict((k, str(val)) for k, val in entry['limits'].items())) for entry in given]
    if total == 0:
        errors.append('%smemory_manager_policy: Static needs memory reserved, and kubeReserved, systemReserved and the '
                      'hard eviction threshold reserve none: set a memory reservation in %skube_reserved or '
                      '%ssystem_reserved' % (P, P, P))
        return None
    if not numa:
        warnings.append('the facts name no NUMA node with CPUs: all %s of reserved memory goes on NUMA node 0'
                        % format_quantity(total))
    return compute_reserved_memory(total, numa)


def numa_findings(facts):
    """GPUs whose closest NICs sit on another NUMA node, and what the facts could not tell, with the facts that show it."""
    facts = facts or {}
    gpus = dict(('GPU%s' % g.get('index'), g) for g in facts.get('gpus') or [])
    nics = dict((n.get('name'), n) for n in facts.get('nics') or [])
    affinity = facts.get('gpu_nic_affinity') or {}
    # a node with one NUMA node (numa=off, or one socket) has every device on it, whatever sysfs says (-1)
    nodes = list(facts.get('numa_nodes') or {})
    only = int(nodes[0]) if len(nodes) == 1 and str(nodes[0]).isdigit() else None
    apart, unread = [], []
    if not gpus:
        unread.append('the facts list no GPU (the driver does not answer?)')
    elif not affinity:
        unread.append('the topology matrix names no NIC, so no GPU has a closest NIC to compare')
    for name in sorted(affinity, key=lambda n: int(re.sub(r'\D', '', n) or 0)):
        gpu = gpus.get(name, {})
        for nic in affinity[name].get('nics') or []:
            gpu_numa, nic_numa = [only if (n is None or n < 0) else n
                                  for n in (gpu.get('numa_node'), nics.get(nic, {}).get('numa_node'))]
            finding = {'gpu': name, 'gpu_pci_bus_id': gpu.get('pci_bus_id'), 'gpu_numa_node': gpu_numa, 'nic': nic,
                       'nic_numa_node': nic_numa, 'relation': affinity[name].get('relation')}
            if gpu_numa is None or nic_numa is None or gpu_numa < 0 or nic_numa < 0:
                unread.append('%s or its closest NIC %s has no NUMA node in the facts (GPU: %s, NIC: %s)'
                              % (name, nic, gpu_numa, nic_numa))
            elif gpu_numa != nic_numa:
                apart.append(finding)
    return apart, unread


def _check_numa(config, facts, strict, errors, warnings):
    policy = config.get('topologyManagerPolicy', DEFAULTS['topologyManagerPolicy'])
    nodes = len((facts or {}).get('numa_nodes') or {})
    most = int((config.get('topologyManagerPolicyOptions') or {}).get('max-allowable-numa-nodes', MAX_NUMA_NODES))
    if policy != 'none' and nodes > most:
        errors.append('%stopology_manager_policy: the node has %d NUMA nodes (GPU memory nodes count), more than the %d '
                      'the topology manager takes: the kubelet refuses to start ("unsupported on machines with more than '
                      '%d NUMA Nodes"); use the policy none, or set topologyManagerPolicyOptions max-allowable-numa-nodes '
                      'in the configuration file' % (P, nodes, most, most))
    if policy not in NUMA_POLICIES:
        return []
    apart, unread = numa_findings(facts)
    messages = ['%s (%s) is on NUMA node %s and its closest NIC %s (%s) on NUMA node %s: a pod asking for both is '
                'refused by the %s topology manager policy (TopologyAffinityError)'
                % (f['gpu'], f['gpu_pci_bus_id'], f['gpu_numa_node'], f['nic'], f['relation'], f['nic_numa_node'], policy)
                for f in apart]
    messages += ['cannot check the GPU and NIC NUMA nodes for the %s policy: %s' % (policy, u) for u in unread]
    if strict:
        errors.extend('%stopology_manager_policy: %s (%sstrict_numa)' % (P, m, P) for m in messages)
    else:
        warnings.extend(messages)
    return apart


def _changed(before, after, keys):
    return [key if sub is None else '%s.%s' % (key, sub) for key, sub in keys
            if (before.get(key, DEFAULTS.get(key)) if sub is None else _sub(before, key, sub))
            != (after.get(key, DEFAULTS.get(key)) if sub is None else _sub(after, key, sub))]


def _merge(doc, settings):
    merged = dict(doc)
    for key, value in settings.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def drop_in_content(settings):
    """Our drop-in's keys: the settings that are not None (kubelet_config writes them with apiVersion and kind)."""
    return dict((k, val) for k, val in settings.items() if val is not None)


def _after(main_config, drop_ins, mode, ours, settings):
    """The configuration the kubelet runs with once ``settings`` are written."""
    if mode != 'drop_in':
        return _merge(main_config, settings)
    files = [d for d in drop_ins if d[0] != ours] + [(ours, drop_in_content(settings))]
    return effective(main_config, [doc for _name, doc in sorted(files, key=lambda d: d[0])])


def healthz_endpoint(config):
    """``address``, ``port`` and the ``url`` to poll on the node (the loopback for a wildcard bind); None when disabled."""
    port = int(config.get('healthzPort', 10248))
    if port == 0:
        return None
    address = config.get('healthzBindAddress') or '127.0.0.1'
    host = {'0.0.0.0': '127.0.0.1', '::': '::1'}.get(address, address)
    host = '[%s]' % host if ':' in host else host
    return {'address': address, 'port': port, 'url': 'http://%s:%s/healthz' % (host, port)}


def _refused(errors):
    return {'errors': errors, 'warnings': [], 'settings': {}, 'changed_keys': [], 'remove_state_files': [],
            'restart': False, 'config': {}, 'numa_apart': [], 'healthz': None, 'node_name': None}


def cmdline_args(cmdline):
    """The arguments of a command line given as a list, or as the text of ``/proc/<pid>/cmdline``."""
    if isinstance(cmdline, string_types):
        return cmdline.split('\x00')[:-1] if cmdline.endswith('\x00') else cmdline.split('\x00')
    return list(cmdline or [])


def parse_flags(cmdline):
    """``{flag: value}`` of a kubelet command line (``--flag=value`` or ``--flag value``; a flag alone is "true"), given
    as its arguments or as ``/proc/<pid>/cmdline`` (each argument ended by a NUL)."""
    flags = {}
    args = list(cmdline_args(cmdline))[1:]
    for position, arg in enumerate(args):
        if not arg.startswith('--'):
            continue
        name, sep, value = arg.partition('=')
        if not sep:
            following = args[position + 1] if position + 1 < len(args) else None
            value = following if following is not None and not following.startswith('--') else 'true'
        flags[name] = value
    return flags


def _check_flags(v, cmdline, errors, warnings):
    """The running kubelet's flags: the files the role writes must be the ones it reads, and no flag may override them."""
    if cmdline is None:
        warnings.append('the kubelet (%s) is not running: its command line could not be checked for flags that '
                        'override its configuration file' % v.get(P + 'service'))
        return {}
    flags = parse_flags(cmdline)
    checks = [('--config', v.get(P + 'config_file'), 'config_file'), ('--root-dir', v.get(P + 'root_dir'), 'root_dir')]
    if v.get(P + 'mode') == 'drop_in':
        checks.append(('--config-dir', v.get(P + 'config_dir'), 'config_dir'))
    for flag, wanted, name in checks:
        found = flags.get(flag)
        if flag == '--root-dir' and found is None:
            found = '/var/lib/kubelet'
        if found is None or found.rstrip('/') != str(wanted).rstrip('/'):
            errors.append('%s%s: the kubelet runs with %s, not %s=%s, so it would not read what the role writes (%s)'
                          % (P, name, '%s=%s' % (flag, found) if found is not None else 'no %s' % flag, flag, wanted,
                             ' '.join(cmdline_args(cmdline))))
    for flag, name in FLAG_VARIABLES:
        if flag in flags:
            errors.append('%s%s: the kubelet runs with %s=%s, which overrides its configuration file; remove the flag '
                          '(KUBELET_EXTRA_ARGS, /var/lib/kubelet/kubeadm-flags.env)' % (P, name, flag, flags[flag]))
    return flags


def _check_removals(settings, after, mode, errors):
    """drop_in mode cannot remove a key another file sets; the kubelet refuses options without the static policy."""
    if mode == 'drop_in':
        for key in sorted(k for k, val in settings.items() if val is None and k in after):
            errors.append('%smode: drop_in cannot remove %s, which the configuration file or an earlier drop-in sets; '
                          'remove it there, or use the mode merge' % (P, key))
    if after.get('cpuManagerPolicyOptions') and after.get('cpuManagerPolicy', DEFAULTS['cpuManagerPolicy']) != 'static':
        errors.append('%scpu_manager_policy_options: the kubelet would run with the CPU manager policy %s and the options '
                      '%s, which it refuses ("None policy: received unsupported options")'
                      % (P, after.get('cpuManagerPolicy', 'none'), after.get('cpuManagerPolicyOptions')))


def _held(recorded):
    """Assignments of running pods in a state file (its ``entries``), or 0."""
    entries = recorded.get('entries') if isinstance(recorded, dict) else None
    return len(entries) if isinstance(entries, dict) else 0


def plan(variables, main_config, drop_ins=None, state=None, facts=None, cmdline=False, hostname=None):
    """Everything the role decides, before any change.

    ``main_config``: the kubelet configuration file as a dict; ``drop_ins``: ``[(file name, dict)]`` of the config
    directory (drop_in mode); ``state``: ``{'cpu_manager_state': dict or None, 'memory_manager_state': ...}``.
    Returns ``errors`` (each starting with the variable), ``warnings``, ``settings`` (what ``kubelet_config`` writes;
    None removes a key), ``changed_keys``, ``remove_state_files``, ``restart``, ``config`` (what the kubelet will run
    with), ``numa_apart`` and ``healthz`` (address and port, or None when disabled).
    """
    v = variables
    errors = check_values(v)
    warnings = []
    drop_ins = list(drop_ins or [])
    state = state or {}
    mode = v.get(P + 'mode')
    ours = v.get(P + 'drop_in_name')
    drop_ins = sorted(drop_ins, key=lambda d: d[0])
    path = v.get(P + 'config_file')
    if main_config is None:
        return _refused(['%sconfig_file: there is no kubelet configuration at %s (kubeadm writes it when the node '
                         'joins; the role changes a kubelet that is set up)' % (P, path)])
    try:
        check(main_config, path)
        for name, doc in drop_ins:
            check(doc, '%s/%s' % (v.get(P + 'config_dir'), name))
    except KubeletConfigError as exc:
        return _refused(['%s%s: %s' % (P, 'config_file' if str(exc).startswith(str(path)) else 'config_dir', exc)])
    before = effective(main_config, [doc for _name, doc in drop_ins]) if mode == 'drop_in' else dict(main_config)
    settings = _over_current(wanted_settings(v), before)
    flags = _check_flags(v, cmdline, errors, warnings) if cmdline is not False else {}
    if mode == 'drop_in':
        for name, doc in drop_ins:
            keys = sorted(set(doc) & set(k for k, val in settings.items() if val is not None))
            if name > ours and keys:
                errors.append('%sdrop_in_name: %s comes after %s in the kubelet config directory and sets %s, so the '
                              'kubelet would not run with the values the role writes' % (P, name, ours, ', '.join(keys)))
    after = _after(main_config, drop_ins, mode, ours, settings)
    cpus = _cpus_of_node(facts)
    numa = numa_nodes_with_cpus(facts)
    if not errors:
        if cpus is None and after.get('reservedSystemCPUs'):
            warnings.append('the facts name no CPU of the node: %sreserved_system_cpus %s could not be checked against '
                            'it' % (P, after['reservedSystemCPUs']))
        _check_cpu(after, cpus, errors)
        reserved = _check_memory(after, v.get(P + 'reserved_memory') or [], numa, errors, warnings)
        if reserved is not None or 'reservedMemory' in before:
            settings['reservedMemory'] = reserved
        after = _after(main_config, drop_ins, mode, ours, settings)
        _check_removals(settings, after, mode, errors)
    apart = _check_numa(after, facts, v.get(P + 'strict_numa'), errors, warnings)
    changed_keys = sorted(set(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
    remove = []
    for name, keys, key in ((CPU_STATE, CPU_KEYS, 'cpuManagerPolicy'), (MEMORY_STATE, MEMORY_KEYS, 'memoryManagerPolicy')):
        recorded = state.get(name)
        wanted = after.get(key, DEFAULTS[key])
        stale = isinstance(recorded, dict) and recorded.get('policyName') not in (None, wanted)
        if recorded is not None and (stale or _changed(before, after, keys)):
            remove.append(name)
            if _held(recorded) and not v.get(P + 'drain'):
                errors.append('%sdrain: %s holds the %s of %d running pod(s); removing it under them hands those to '
                              'other pods: drain the node first (%sdrain: true, or drain it yourself)'
                              % (P, name, 'CPUs' if name == CPU_STATE else 'memory', _held(recorded), P))
    overridden = dict((key, flags[flag]) for flag, key in HEALTHZ_FLAGS if flag in flags)
    healthz = healthz_endpoint(dict(after, **overridden))
    if healthz is None:
        warnings.append('healthzPort is 0: the kubelet serves no /healthz, and the role can only check that its unit '
                        'stays active')
    node_name = (flags.get('--hostname-override') or hostname or '').strip().lower() or None
    return {'errors': errors, 'warnings': warnings, 'settings': settings, 'changed_keys': changed_keys,
            'remove_state_files': remove, 'restart': bool(changed_keys or remove), 'config': after,
            'numa_apart': apart, 'healthz': healthz, 'node_name': node_name}
