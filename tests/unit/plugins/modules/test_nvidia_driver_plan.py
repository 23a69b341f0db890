# -*- coding: utf-8 -*-
"""nvidia_driver_plan's DKMS reading: the make.log errors it reports, judged against the kernel the node boots next."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.node.plugins.modules import nvidia_driver_plan as module_nvidia_driver_plan

from module_harness import answer_commands

STATUS = ('nvidia-current/535.261.03, 6.1.0-40-amd64, x86_64: installed\n'
          'nvidia-current/535.261.03, 6.1.0-41-amd64, x86_64: built\n')
LOG = "nvidia/nv-pci.c:123:13: error: implicit declaration of function 'pci_resize_resource'\n"


class FakeModule(object):
    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/sbin/' + name

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


def dkms_status(argv):
    assert argv == ['/usr/sbin/dkms', 'status']
    return 0, STATUS, ''


def test_make_log_errors_count_for_the_kernel_the_node_boots(tmp_path, monkeypatch):
    answer_commands(monkeypatch, dkms_status)
    build = tmp_path / 'nvidia-current' / '535.261.03' / 'build'
    build.mkdir(parents=True)
    (build / 'make.log').write_text(LOG)
    monkeypatch.setattr(module_nvidia_driver_plan, 'DKMS_TREE', str(tmp_path))
    entries, errors = module_nvidia_driver_plan.read_dkms(FakeModule(), ['nvidia-current'], '6.1.0-40-amd64')
    assert [(e['kernel'], e['status']) for e in entries] == [('6.1.0-40-amd64', 'installed'), ('6.1.0-41-amd64', 'built')]
    assert errors == {}
    # installed for another kernel only: the build log of the kernel the node boots next is reported
    entries, errors = module_nvidia_driver_plan.read_dkms(FakeModule(), ['nvidia-current'], '6.1.0-41-amd64')
    assert errors == {'nvidia-current/535.261.03': [LOG.strip()]}


def test_a_failing_dkms_fails_with_its_words(monkeypatch):
    answer_commands(monkeypatch, lambda argv: (3, '', 'Error! Could not locate dkms.conf file.\n'
                                                      'File: /var/lib/dkms/nvidia/535/source/dkms.conf does not exist.\n'))
    with pytest.raises(AssertionError) as failed:
        module_nvidia_driver_plan.read_dkms(FakeModule(), ['nvidia-current'], '6.1.0-40-amd64')
    assert failed.value.args[0] == {'msg': 'dkms status exited 3: Error! Could not locate dkms.conf file. | File: '
                                           '/var/lib/dkms/nvidia/535/source/dkms.conf does not exist.'}
