# -*- coding: utf-8 -*-
"""parse_nccl_tests on every real nccl-tests capture, and on faults derived from them by the documented
transforms below (never by editing a capture)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest

from real_captures import REAL, real_text
from transforms import truncate_after_line, with_bom

from ansible_collections.gpuops.node.plugins.module_utils.parsers.nccl_tests import (
    NcclParseError, busbw_failures, library_version, parse_nccl_tests, strip_prefix)

# fixture -> (nccl_version, devices, rows, avg busbw, busbw at the largest size, errors)
CASES = {
    'all_gather-gb10-dgxspark-2node-qsfp-socket-v2.18.3': ('2.28.9', 2, 3, 21.4033, 22.46, 0),
    'all_gather-h100mega-a3mega-2node-16gpu-srun-label-prefix-ELIDED-HEAD': (None, 0, 11, 128.817, 188.99, 0),
    'all_gather-h200-a3ultra-2node-16gpu-gpudirect-rdma-gke': ('2.26.6+cuda12.8', 16, 24, 121.902, 332.16, 0),
    'all_reduce-a100-sxm4-40gb-2node-16gpu-oci-roce-8B-8G': (None, 16, 31, 66.4834, 237.94, 0),
    'all_reduce-a40-4gpu-SYS-p2p-disabled-lowbw-table-only': (None, 0, 4, 1.40216, 1.35, 0),
    'all_reduce-dgx-a100-4gpu-nvswitch-table-only': (None, 0, 4, 222.066, 234.74, 0),
    'all_reduce-h100-2node-16gpu-mpioperator-k8s': (None, 16, 5, 194.675, 196.52, 0),
    'all_reduce-h100-8gpu-ERROR-cuda-system-not-yet-initialized': (None, 0, 0, None, None, 1),
    'all_reduce-h100-8gpu-single-node-indented': (None, 8, 4, 448.212, 470.73, 0),
    'all_reduce-rtx5090-2gpu-ERROR-nccl-debug-info-warn': ('2.25.1+cuda12.8', 2, 0, None, None, 1),
    'all_reduce-rtx5090-2gpu-ERROR-test-nccl-failure': (None, 2, 0, None, None, 1),
    'all_reduce-rtx5090-socket-2rank-lowbw-v2.18-tagoutput': ('2.29.7', 2, 8, 1.57614, 2.31, 0),
    'alltoall-rtx5090-1gpu-default-32M-wrong-NA': (None, 1, 1, 0.0, 0.0, 0),
}


def _capture(name):
    return real_text(os.path.join('nccl', name + '.txt'))


def test_every_capture_has_a_case():
    names = sorted(n[:-4] for n in os.listdir(os.path.join(REAL, 'nccl')) if n.endswith('.txt'))
    assert names == sorted(CASES)


@pytest.mark.parametrize('name', sorted(CASES))
def test_real_capture(name):
    version, devices, rows, avg, largest, errors = CASES[name]
    parsed = parse_nccl_tests(_capture(name))
    assert parsed['nccl_version'] == version
    assert len(parsed['devices']) == devices
    assert len(parsed['rows']) == rows
    assert parsed['avg_busbw_gbps'] == avg
    assert parsed['largest_size_busbw_gbps'] == largest
    assert len(parsed['errors']) == errors
    assert parsed['wrong_total'] == 0
    if rows:
        # the printed average is the mean of both columns over the whole sweep (checks the columns are read right)
        busbw = [half['busbw_gbps'] for row in parsed['rows'] for half in (row['out_of_place'], row['in_place'])]
        assert abs(sum(busbw) / len(busbw) - avg) < 0.01
        assert parsed['max_busbw_gbps'] == max(busbw)
        for row in parsed['rows']:
            assert row['type'] == 'float'
            assert row['root'] is None


def test_average_is_not_the_peak():
    parsed = parse_nccl_tests(_capture('all_reduce-a100-sxm4-40gb-2node-16gpu-oci-roce-8B-8G'))
    assert parsed['avg_busbw_gbps'] < 70 < 230 < parsed['largest_size_busbw_gbps']
    assert parsed['largest_size'] == 8589934592
    assert parsed['rows'][0] == {'size': 8, 'count': 2, 'type': 'float', 'redop': 'sum', 'root': None,
                                 'out_of_place': {'time_us': 36.47, 'algbw_gbps': 0.0, 'busbw_gbps': 0.0, 'wrong': 0},
                                 'in_place': {'time_us': 34.74, 'algbw_gbps': 0.0, 'busbw_gbps': 0.0, 'wrong': 0}}


def test_devices_old_and_new_bus_forms():
    old = parse_nccl_tests(_capture('all_reduce-h100-8gpu-single-node-indented'))['devices']
    assert old[0] == {'rank': 0, 'group': 0, 'pid': 1623025, 'host': 'host', 'device': 0, 'bus_id': '0x1b',
                      'name': 'NVIDIA H100 80GB HBM3'}
    new = parse_nccl_tests(_capture('all_gather-h200-a3ultra-2node-16gpu-gpudirect-rdma-gke'))['devices']
    assert new[15]['host'] == 'nccl-test-host-2' and new[15]['bus_id'] == '0000:cc:00' and new[15]['device'] == 7


def test_new_header_lines():
    parsed = parse_nccl_tests(_capture('all_reduce-rtx5090-socket-2rank-lowbw-v2.18-tagoutput'))
    assert parsed['test'] == 'all_reduce_perf_mpi'
    assert parsed['nccl_tests_version'] == '2.18.0'
    assert parsed['params']['min_bytes'] == 1048576 and parsed['params']['step_kind'] == 'factor'
    assert parsed['rows'][0]['out_of_place']['time_us'] == 4366.46


def test_wrong_na_and_redop_none():
    parsed = parse_nccl_tests(_capture('alltoall-rtx5090-1gpu-default-32M-wrong-NA'))
    row = parsed['rows'][0]
    assert row['out_of_place']['wrong'] == 0 and row['in_place']['wrong'] is None
    assert row['redop'] is None
    assert parsed['params']['step_kind'] == 'bytes'


def test_failures_are_errors_not_tables():
    parsed = parse_nccl_tests(_capture('all_reduce-rtx5090-2gpu-ERROR-nccl-debug-info-warn'))
    assert parsed['errors'] == ["GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error "
                                "(run with NCCL_DEBUG=INFO for details) / '"]
    assert parsed['largest_size_busbw_gbps'] is None
    cuda = parse_nccl_tests(_capture('all_reduce-h100-8gpu-ERROR-cuda-system-not-yet-initialized'))
    assert 'Test CUDA failure' in cuda['errors'][0]


@pytest.mark.parametrize('line, content', [
    ('[1,0]<stdout>:#  Rank  0 Group', '#  Rank  0 Group'),
    (' 0:      8388608        131072', '8388608        131072'),
    ('0: #    out-of-place', '#    out-of-place'),
    ('(head, rank=0, pid=3808) [1,0]<stdout>:# nThread 1', '# nThread 1'),
    ('    # Avg bus bandwidth    : 448.212', '# Avg bus bandwidth    : 448.212'),
    ('GENOA-06:4766:4766 [0] NCCL INFO x', 'GENOA-06:4766:4766 [0] NCCL INFO x'),
])
def test_strip_prefix(line, content):
    assert strip_prefix(line) == content


def test_library_version():
    assert library_version('22809') == '2.28.9'
    assert library_version(2708) == '2.7.8'


# --- derived faults (documented transforms) -------------------------------------------------------------------

def set_wrong(text, size, column, value):
    """The row of ``size``: its out-of-place (column 0) or in-place (column 1) #wrong replaced by ``value``, as a
    run with corrupted data prints it, and the ``Out of bounds`` summary saying FAILED."""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        fields = line.split()
        if fields and fields[0] == str(size):
            fields[8 if column == 0 else 12] = str(value)
            lines[i] = '  ' + '  '.join(fields)
        elif 'Out of bounds values' in line:
            lines[i] = re.sub(r': 0 OK', ': %d FAILED' % value, line)
    return '\n'.join(lines)


def with_prefix(text, prefix):
    """Every line with a launcher prefix (e.g. mpirun --tag-output's ``[1,0]<stdout>:``)."""
    return '\n'.join(prefix + line for line in text.split('\n'))


def scale_busbw(text, factor):
    """Every busbw, algbw and the average scaled by ``factor`` (a slower fabric), times divided by it."""
    out = []
    for line in text.split('\n'):
        fields = line.split()
        if len(fields) == 13 and fields[0].isdigit():
            for i in (6, 7, 10, 11):
                fields[i] = '%.2f' % (float(fields[i]) * factor)
            line = '  ' + '  '.join(fields)
        elif 'Avg bus bandwidth' in line:
            line = re.sub(r': (\S+)', lambda m: ': %g' % (float(m.group(1)) * factor), line)
        out.append(line)
    return '\n'.join(out)


H100 = 'all_reduce-h100-8gpu-single-node-indented'


def test_wrong_elements_are_errors():
    parsed = parse_nccl_tests(set_wrong(_capture(H100), 1073741824, 1, 7))
    assert parsed['wrong_total'] == 7
    assert parsed['errors'] == ['Out of bounds values : 7 FAILED', '7 wrong element(s) at size(s) 1073741824']
    failures = busbw_failures(parsed, 400)
    assert [f['check'] for f in failures] == ['nccl_errors', 'nccl_errors']


def test_truncated_output_is_an_error():
    text = _capture(H100)
    cut = truncate_after_line(text, 17)  # header + 2 rows, no summary
    parsed = parse_nccl_tests(cut)
    assert len(parsed['rows']) == 2
    assert parsed['errors'] == ["the output ends before the '# Avg bus bandwidth' line (cut short?)"]
    mid_row = truncate_after_line(text, 17, keep_chars=60)
    parsed = parse_nccl_tests(mid_row)
    assert len(parsed['rows']) == 2
    assert any('unreadable table row' in e for e in parsed['errors'])


@pytest.mark.parametrize('text, reason', [
    ('', 'empty output'),
    ('   \n\n', 'empty output'),
    ('bash: ./build/all_reduce_perf: No such file or directory\n', 'no nccl-tests result table'),
    (truncate_after_line(real_text('nccl/all_reduce-h100-8gpu-single-node-indented.txt'), 14),
     'a table header but no result row'),
    (truncate_after_line(real_text('nccl/all_reduce-h100-8gpu-single-node-indented.txt'), 3),
     'no nccl-tests result table'),
])
def test_unreadable_raises(text, reason):
    with pytest.raises(NcclParseError) as exc:
        parse_nccl_tests(text)
    assert reason in str(exc.value)


def test_prefixed_and_bom_copies_read_the_same():
    plain = parse_nccl_tests(_capture(H100))
    assert parse_nccl_tests(with_prefix(_capture(H100), '[1,0]<stdout>:')) == plain
    assert parse_nccl_tests(with_prefix(_capture(H100), '(head, rank=0, pid=1) [1,0]<stdout>:')) == plain
    assert parse_nccl_tests(with_bom(_capture(H100))) == plain


def test_busbw_threshold_on_largest_size():
    slow = parse_nccl_tests(scale_busbw(_capture(H100), 0.25))
    assert slow['largest_size_busbw_gbps'] == 117.68
    assert busbw_failures(slow, 400) == [{
        'check': 'nccl_busbw', 'subject': 'node', 'expected': '>= 400 GB/s', 'actual': '117.68 GB/s',
        'message': 'bus bandwidth 117.68 GB/s at 2147483648 bytes is below 400 GB/s'}]
    assert busbw_failures(parse_nccl_tests(_capture(H100)), 400) == []
    # the average (66 GB/s) is below 200 but the largest size is not
    assert busbw_failures(parse_nccl_tests(_capture('all_reduce-a100-sxm4-40gb-2node-16gpu-oci-roce-8B-8G')),
                          200) == []


def test_no_rows_with_threshold_is_not_measured():
    parsed = parse_nccl_tests(_capture('all_reduce-rtx5090-2gpu-ERROR-test-nccl-failure'))
    failures = busbw_failures(parsed, 10.5)
    assert failures[-1]['actual'] == 'not measured' and failures[-1]['expected'] == '>= 10.5 GB/s'
    assert failures[0]['check'] == 'nccl_errors'


def test_old_error_column_layout():
    """Very old nccl-tests name the last column ``error`` (the maximum error): derived by renaming the header
    columns and writing the error as a float."""
    text = _capture('all_reduce-dgx-a100-4gpu-nvswitch-table-only').replace('#wrong', ' error')
    lines = text.split('\n')
    lines[4] = re.sub(r'(\s)0$', r'\g<1>1e+00', lines[4])
    parsed = parse_nccl_tests('\n'.join(lines))
    assert parsed['rows'][1]['in_place']['wrong'] == 1 and parsed['rows'][0]['in_place']['wrong'] == 0
