# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._topology import (
    cpumap_from_cpus, derived_distance, expand_cpulist, normalize_busid, parse_fabric_states, parse_nvlink_status,
    parse_query_csv, parse_topo_matrix, read_query_csv,
)


@pytest.mark.parametrize('text, busid', [
    ('00000000:00:06.0', '0000:00:06.0'), ('00000000:1A:00.0', '0000:1a:00.0'), ('0000:bf:00.1', '0000:bf:00.1'),
    ('1a:00.0', '0000:1a:00.0'), ('00010000:05:00.0', '10000:05:00.0'), (' 0002:3:4.5 ', '0002:03:04.5'),
    ('virtio2', None), ('pci0000:00', None), ('', None), (None, None), ('0000:00:06.8', None),
])
def test_normalize_busid(text, busid):
    assert normalize_busid(text) == busid


@pytest.mark.parametrize('cpulist, cpus, cpumap', [
    ('0-31', list(range(32)), 'ffffffff'),
    ('0-3,8', [0, 1, 2, 3, 8], '0000010f'),
    ('32-39', list(range(32, 40)), '000000ff,00000000'),
    ('', [], '00000000'),
])
def test_cpulist_and_cpumap(cpulist, cpus, cpumap):
    assert (expand_cpulist(cpulist), cpumap_from_cpus(cpus)) == (cpus, cpumap)


def test_query_csv_matches_columns_by_header_with_or_without_units():
    with_units = ('index, name, pci.bus_id, memory.total [MiB], driver_version, compute_cap, serial, uuid\n'
                  '0, NVIDIA H200, 00000000:00:06.0, 143771 MiB, 580.159.04, 9.0, 1653724050825, GPU-5748\n')
    assert parse_query_csv(with_units) == [{'index': '0', 'name': 'NVIDIA H200', 'pci.bus_id': '00000000:00:06.0', 'memory.total': '143771',
                                            'driver_version': '580.159.04', 'compute_cap': '9.0', 'serial': '1653724050825',
                                            'uuid': 'GPU-5748'}]
    no_units = 'index, mig.mode.current, memory.total [MiB]\n3, [N/A], 81559\n4, Enabled\n'
    assert parse_query_csv(no_units) == [{'index': '3', 'mig.mode.current': None, 'memory.total': '81559'}]
    assert parse_query_csv(None) == [] and parse_query_csv('') == []


TOPO_WITH_NICS = (
    '\t\x1b[4mGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n'
    'GPU0\t X \tNV12\tPXB\tSYS\t0-15\t0\t\tN/A\n'
    'GPU1\tNV12\t X \tPXB\tSYS\t0-15\t0\t\tN/A\n'
    'NIC0\tPXB\tPXB\t X \tSYS\n'
    'NIC1\tSYS\tSYS\tSYS\t X \n'
    '\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_bond_0\n'
)


def test_topo_matrix_names_nics_through_the_legend():
    matrix, affinity = parse_topo_matrix(TOPO_WITH_NICS)
    assert matrix == {
        'GPU0': {'GPU0': 'X', 'GPU1': 'NV12', 'mlx5_0': 'PXB', 'mlx5_bond_0': 'SYS'},
        'GPU1': {'GPU0': 'NV12', 'GPU1': 'X', 'mlx5_0': 'PXB', 'mlx5_bond_0': 'SYS'},
        'mlx5_0': {'GPU0': 'PXB', 'GPU1': 'PXB', 'mlx5_0': 'X', 'mlx5_bond_0': 'SYS'},
        'mlx5_bond_0': {'GPU0': 'SYS', 'GPU1': 'SYS', 'mlx5_0': 'SYS', 'mlx5_bond_0': 'X'},
    }
    assert affinity['GPU1'] == {'cpu_affinity': '0-15', 'numa_affinity': '0', 'gpu_numa_id': None}


@pytest.mark.parametrize('text', [None, '', 'No devices were found\n', 'Failed to initialize NVML: Driver/library version mismatch\n'])
def test_topo_matrix_of_no_output(text):
    assert parse_topo_matrix(text) == ({}, {})


def test_nvlink_status_counts_active_links_only():
    text = ('GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n\t Link 0: 25 GB/s\n\t Link 1: <inactive>\n\t Link 2: 25 GB/s\n'
            'GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-2)\n\t Link 0: <inactive>\n'
            'GPU 2: NVIDIA A100 80GB PCIe (UUID: GPU-3)\n')
    assert parse_nvlink_status(text) == {
        0: {'active_links': 2, 'link_speed_gbs': 25.0},
        1: {'active_links': 0, 'link_speed_gbs': None},
        2: {'active_links': 0, 'link_speed_gbs': None},
    }


def test_fabric_states_read_the_fabric_section_only():
    text = ('    GPU Fabric GUID                                : N/A\n'
            '    Fabric\n        State                                          : Completed\n'
            '        Status                                         : Success\n'
            '    Fabric\n        State                                          : N/A\n'
            '    Clocks Event Reasons\n        State                                          : Idle\n')
    assert parse_fabric_states(text) == ['Completed', 'N/A']


def _endpoint(busid, chain, host_bridge='pci0000:15', numa_node=0):
    return {'busid': busid, 'ancestry': [{'busid': bridge} for bridge in chain], 'host_bridge': host_bridge, 'numa_node': numa_node}


@pytest.mark.parametrize('second, numa_known, expected', [
    (_endpoint('a', ['rp', 'up', 'd0']), True, 'X'),
    (_endpoint('b', ['rp', 'up', 'd1']), True, 'PIX'),
    (_endpoint('a1', ['rp', 'up', 'd0']), True, 'PIX'),
    (_endpoint('c', ['rp', 'up', 'd2', 'up2', 'd20']), True, 'PXB'),
    (_endpoint('d', ['rp2', 'up3', 'd3']), True, 'PHB'),
    (_endpoint('e', ['rp3'], host_bridge='pci0000:37'), True, 'NODE'),
    (_endpoint('f', ['rp4'], host_bridge='pci0000:9a', numa_node=1), True, 'SYS'),
    (_endpoint('g', ['rp5'], host_bridge='pci0000:9a', numa_node=-1), True, 'NODE'),
    (_endpoint('h', ['rp6'], host_bridge='pci0000:9a', numa_node=1), False, 'NODE'),
])
def test_derived_distance(second, numa_known, expected):
    assert derived_distance(_endpoint('a', ['rp', 'up', 'd0']), second, numa_known) == expected


H200_QUERY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          'fixtures', 'topology', 'h200_vm', 'commands', 'nvidia-smi_query-gpu.txt')


def h200_query():
    with open(H200_QUERY, encoding='utf-8') as handle:
        return handle.read()


def test_query_csv_of_the_real_h200_reads_cleanly():
    rows, problems = read_query_csv(h200_query())
    assert problems == [] and [row['pci.bus_id'] for row in rows] == ['00000000:00:06.0', '00000000:00:07.0']


def test_query_csv_with_a_bom_reads_the_same():
    assert read_query_csv('\ufeff' + h200_query()) == read_query_csv(h200_query())


def test_query_csv_name_with_a_comma_is_joined_back():
    rows, problems = read_query_csv(h200_query().replace('NVIDIA H200, 00000000:00:07.0', 'NVIDIA H200 NVL, Rev A, 00000000:00:07.0'))
    assert problems == []
    assert (rows[1]['name'], rows[1]['pci.bus_id'], rows[1]['uuid']) == (
        'NVIDIA H200 NVL, Rev A', '00000000:00:07.0', 'GPU-9ee8f679-82be-17d4-4846-e15b9cd1f3c0')


def test_query_csv_row_that_does_not_parse_is_left_out_and_named():
    rows, problems = read_query_csv(h200_query().replace('1, NVIDIA H200, 00000000:00:07.0', 'x, NVIDIA H200, 00000000:00:07.0'))
    assert [row['index'] for row in rows] == ['0']
    assert len(problems) == 1 and problems[0].startswith("nvidia-smi --query-gpu row does not parse: 'x, NVIDIA H200")


def test_query_csv_cut_row_is_named():
    rows, problems = read_query_csv(h200_query().rsplit(',', 3)[0])
    assert len(rows) == 1 and 'does not parse' in problems[0]


def test_query_csv_without_header_takes_the_requested_order():
    fields = ['0', 'NVIDIA H200', 'GPU-5748', '00000000:00:06.0', '9.0', '143771', '580.159.04', '[N/A]', '5', '16']
    rows, problems = read_query_csv(', '.join(fields) + '\n')
    assert problems == ['nvidia-smi --query-gpu printed no header line; columns taken in the requested order']
    assert (rows[0]['pci.bus_id'], rows[0]['memory.total'], rows[0]['mig.mode.current']) == ('00000000:00:06.0', '143771', None)


def test_query_csv_error_text_instead_of_a_table_is_named():
    rows, problems = read_query_csv('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\n')
    assert rows == [] and 'has no header naming its columns' in problems[0]
