# -*- coding: utf-8 -*-
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import pytest

from ansible_collections.gpuops.node.plugins.module_utils.errors import ParseError
from ansible_collections.gpuops.node.plugins.module_utils.parsers.nvsmi_topo import (
    closest_nics, parse_topo_matrix)
from real_captures import REAL, real_text
from transforms import underline_topo_header, with_bom

ALL = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REAL, 'topo', '*.txt')))
GOOD = [n for n in ALL if 'CORRUPTED' not in n]


def parse(name):
    return parse_topo_matrix(real_text('topo/' + name))


@pytest.mark.parametrize('name', GOOD)
def test_every_real_matrix_parses_and_is_symmetric_in_shape(name):
    result = parse(name)
    assert result['gpus'], name
    for dev in result['devices']:
        assert result['matrix'][dev][dev] == 'X'
        assert set(result['matrix'][dev]) == set(result['devices'])
    assert set(result['affinity']) == set(result['gpus'])


@pytest.mark.parametrize('name,gpus,nics', [
    ('a100-2gpu-pcie-2nic-della-i14g20.txt', 2, ['mlx5_0', 'mlx5_1']),
    ('a100-8gpu-2nic-rst-indented.txt', 8, ['mlx5_0', 'mlx5_1']),
    ('a100-8gpu-4nic-jtkj003.txt', 8, ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']),
    ('dgx-a100-8gpu-12nic.txt', 8, ['mlx5_%d' % i for i in range(12)]),
    ('dgx1-v100-8gpu-4nic-topo-mp.txt', 8, ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']),
    ('h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt', 8, ['mlx5_%d' % i for i in range(12)]),
    ('h100-8gpu-6nic-princeton-della-k17g3.txt', 8, ['mlx5_%d' % i for i in range(6)]),
    ('h100-8gpu-nv18-no-nic-spaces-cluster2.txt', 8, []),
    ('pcie-8gpu-all-sys-no-nic-cluster1.txt', 8, []),
    ('rtx5060ti-4gpu-pcie-phb-aisandbox.txt', 4, []),
])
def test_counts_and_nic_names(name, gpus, nics):
    result = parse(name)
    assert len(result['gpus']) == gpus
    assert result['nics'] == nics


def test_dgx_a100_relations_and_affinity():
    result = parse('dgx-a100-8gpu-12nic.txt')
    m = result['matrix']
    assert m['GPU0']['GPU7'] == 'NV12'
    assert m['GPU0']['mlx5_0'] == 'PXB'
    assert m['GPU4']['mlx5_6'] == 'PXB'
    assert m['mlx5_4']['mlx5_5'] == 'PIX'
    assert result['affinity']['GPU0'] == {'cpu_affinity': '48-63,176-191', 'numa_affinity': '3', 'gpu_numa_id': ''}
    assert result['affinity']['GPU6']['numa_affinity'] == '5'
    assert closest_nics(m, 'GPU2', result['nics']) == ('PXB', ['mlx5_2', 'mlx5_3'])


def test_nic_legend_resolves_names_and_gpu_numa_id_extra_field():
    result = parse('a100-8gpu-4nic-jtkj003.txt')
    assert result['nic_legend'] == {'NIC0': 'mlx5_0', 'NIC1': 'mlx5_1', 'NIC2': 'mlx5_2', 'NIC3': 'mlx5_3'}
    assert result['matrix']['mlx5_2']['mlx5_3'] == 'PIX'
    assert result['matrix']['GPU2']['mlx5_2'] == 'PXB'
    # rows carry one field more than the header ("0\t\tN/A")
    assert result['affinity']['GPU4'] == {'cpu_affinity': '32-63,96-127', 'numa_affinity': '1', 'gpu_numa_id': 'N/A'}
    # GPU4-7 have no NIC closer than SYS
    assert closest_nics(result['matrix'], 'GPU5', result['nics']) == ('SYS', result['nics'])


def test_h100_numa_off_pix_pairs():
    result = parse('h100-8gpu-12nic-tpgds-aihub0007-numa-off.txt')
    m = result['matrix']
    assert m['GPU3']['mlx5_5'] == 'PIX'
    assert m['GPU7']['mlx5_11'] == 'PIX'
    assert m['GPU1']['GPU2'] == 'NV18'
    assert all(result['affinity'][g]['cpu_affinity'] == '0-191' for g in result['gpus'])


def test_empty_cpu_affinity_is_kept_empty():
    result = parse('h100-8gpu-6nic-princeton-della-k17g3.txt')
    assert result['affinity']['GPU0']['cpu_affinity'] == ''
    assert result['affinity']['GPU0']['numa_affinity'] == '0'
    assert result['affinity']['GPU4']['cpu_affinity'] == '1'
    assert closest_nics(result['matrix'], 'GPU0', result['nics']) == ('PIX', ['mlx5_0', 'mlx5_1'])
    assert closest_nics(result['matrix'], 'GPU1', result['nics'])[0] == 'NODE'


def test_space_separated_and_indented_copies():
    spaces = parse('h100-8gpu-nv18-no-nic-spaces-cluster2.txt')
    assert spaces['matrix']['GPU5']['GPU6'] == 'NV18'
    assert spaces['affinity']['GPU7'] == {'cpu_affinity': '48-95,144-191', 'numa_affinity': '1', 'gpu_numa_id': 'N/A'}
    rst = parse('a100-8gpu-2nic-rst-indented.txt')
    assert rst['matrix']['GPU6']['mlx5_1'] == 'NODE'
    assert rst['affinity']['GPU5']['cpu_affinity'] == '32-63,96-127'


def test_old_pcie_only_relations():
    result = parse('dgx1-v100-8gpu-4nic-topo-mp.txt')
    assert result['matrix']['GPU0']['GPU1'] == 'PIX'
    assert result['matrix']['GPU0']['GPU2'] == 'PHB'
    assert result['matrix']['GPU0']['GPU4'] == 'SYS'
    pcie = parse('pcie-8gpu-all-sys-no-nic-cluster1.txt')
    assert set(pcie['matrix']['GPU3'].values()) == {'X', 'SYS'}
    phb = parse('rtx5060ti-4gpu-pcie-phb-aisandbox.txt')   # legend absent in the source
    assert phb['matrix']['GPU1']['GPU3'] == 'PHB'


def test_soc_relation_accepted():
    text = '\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-11\nGPU1\tSOC\t X \t12-23\n'
    assert parse_topo_matrix(text)['matrix']['GPU0']['GPU1'] == 'SOC'


def test_corrupted_paste_is_rejected_naming_the_line():
    with pytest.raises(ParseError) as err:
        parse('h100-8gpu-12nic-tpgds-aihub0008-CORRUPTED-paste.txt')
    assert err.value.line_no == 7
    assert err.value.line.startswith('GPU5\t')
    assert 'PIXNODE' in str(err.value)
    assert str(err.value).startswith('nvidia-smi topo -m: line 7')


def test_truncated_matrix_is_rejected():
    text = real_text('topo/dgx-a100-8gpu-12nic.txt')
    cut = '\n'.join(text.splitlines()[:5])     # transform: keep header and 4 rows
    with pytest.raises(ParseError) as err:
        parse_topo_matrix(cut)
    assert 'no row for GPU4' in str(err.value)


@pytest.mark.parametrize('text', ['', 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.'])
def test_non_matrix_output_is_rejected(text):
    with pytest.raises(ParseError):
        parse_topo_matrix(text)


def test_column_aligned_copy_with_empty_cells_warns():
    # transform: the della-k17g3 capture with its tabs expanded, as documents paste it
    text = real_text('topo/h100-8gpu-6nic-princeton-della-k17g3.txt').expandtabs(8)
    result = parse_topo_matrix(text)
    assert result['matrix']['GPU0']['mlx5_1'] == 'PIX'
    assert any('GPU0 has 2 affinity cells for 3 affinity columns and no tabs' in w for w in result['warnings'])


@pytest.mark.parametrize('name', GOOD)
def test_underlined_header_of_recent_drivers_reads_like_the_web_copy(name):
    text = real_text('topo/' + name)
    if not any(l.strip().startswith('GPU0') for l in text.splitlines()):
        pytest.skip('no GPU0 header line')
    assert parse_topo_matrix(underline_topo_header(text)) == parse_topo_matrix(text)
    assert parse_topo_matrix(with_bom(text)) == parse_topo_matrix(text)
