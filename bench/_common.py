"""What the benchmarks share: the repository root, the collection made importable as
ansible_collections.gpuops.node (through the .build/collections symlink the Makefile also uses), and the
environment of a timed ansible command."""

from __future__ import print_function

import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
ANSIBLE_CFG = os.path.join(ROOT, 'ansible.cfg')


def _importable():
    """Make ``ansible_collections.gpuops.node`` (this checkout) and the simulator importable."""
    link = os.path.join(COLLECTIONS, 'ansible_collections', 'gpuops', 'node')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link))
        os.symlink(ROOT, link)
    for path in (ROOT, COLLECTIONS):
        if path not in sys.path:
            sys.path.insert(0, path)


def site_packages():
    """The site-packages of this Python (the collections of the ``ansible`` package live there)."""
    return [p for p in sys.path if p.endswith('site-packages')][:1]


def ansible_env(config=ANSIBLE_CFG, **extra):
    """The environment of a timed ansible command: this checkout's collections, the given ansible.cfg (the same
    for every command a benchmark compares), no colour, this Python's bin directory first."""
    env = dict(os.environ)
    for name in [n for n in env if n.startswith('ANSIBLE_')]:
        del env[name]
    if config:
        env['ANSIBLE_CONFIG'] = config
    env.update({
        'ANSIBLE_COLLECTIONS_PATH': os.pathsep.join([COLLECTIONS] + site_packages()),
        'ANSIBLE_NOCOLOR': '1',
        'PATH': os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', ''),
    })
    env.update(extra)
    return env


def bin_path(name):
    """An ansible command next to this Python (the venv's), else on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(argv, env, cwd=ROOT, log=None):
    """Run ``argv``; return (wall seconds, CPU seconds of it and its processes, exit status, output)."""
    start, cpu = time.time(), _children_cpu()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _err = proc.communicate()
    elapsed = time.time() - start
    cpu = _children_cpu() - cpu
    out = out.decode('utf-8', 'replace')
    if log:
        with open(log, 'w') as handle:
            handle.write(out)
    return elapsed, cpu, proc.returncode, out
