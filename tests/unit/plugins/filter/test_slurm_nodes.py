# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_node_definition / slurm_gpu_cores, checked by hand and against Slurm's own slurmd.

Slurm's view comes from slurmd 22.05 reading a synthetic hwloc topology (tests/unit/slurmd_support.py):
recorded for the interleaved 2-socket case (fixtures/topology/interleaved_2s/slurmd/), and re-run live
for every recorded case where slurmd and hwloc are installed.
"""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.slurm_nodes import (
    compress_ranges, expand_cpulist, gpu_type_of, slurm_core_map, slurm_gpu_cores, slurm_node_definition)
from slurmd_support import core_index_of_cpu, require_slurmd, slurmd_C, slurmd_cpu_map_log, synthetic_xml
from topology_support import CASES, TOPOLOGY_FIXTURES, expected_facts

SLURMD_RECORDED = os.path.join(TOPOLOGY_FIXTURES, 'interleaved_2s', 'slurmd')


def test_ranges_round_trip():
    assert expand_cpulist('0-3,8,10-11') == [0, 1, 2, 3, 8, 10, 11]
    assert expand_cpulist('') == []
    assert compress_ranges([8, 0, 1, 2, 5, 7, 2]) == '0-2,5,7-8'
    assert compress_ranges([]) == ''


@pytest.mark.parametrize(('name', 'expected'), [
    ('NVIDIA H100 80GB HBM3', 'h100'), ('Tesla V100-SXM2-32GB', 'v100'), ('NVIDIA GeForce RTX 4090', '4090'),
    ('NVIDIA L40S', 'l40s'), ('', '')])
def test_gpu_type_from_name(name, expected):
    assert gpu_type_of(name) == expected


def test_interleaved_sockets_give_contiguous_core_indexes():
    """Socket 0 holds the even CPUs: Slurm numbers its 8 cores 0-7, socket 1's 8-15 (written by hand)."""
    cpu = expected_facts('interleaved_2s')['cpu']
    assert slurm_gpu_cores('0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30', cpu) == '0-7'
    assert slurm_gpu_cores('1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31', cpu) == '8-15'
    # CPU 17 is the SMT sibling of CPU 1: socket 1's first core.
    assert slurm_gpu_cores('17', cpu) == '8'


def test_interleaved_core_map_equals_slurmds_recorded_map():
    with open(os.path.join(SLURMD_RECORDED, 'slurmd-cpu-map.log'), encoding='utf-8') as handle:
        slurm = core_index_of_cpu(handle.read())
    assert len(slurm) == 32
    assert slurm_core_map(expected_facts('interleaved_2s')['cpu']) == slurm


def test_interleaved_node_line_matches_slurmd_C():
    definition = slurm_node_definition(expected_facts('interleaved_2s'), 'node1', {'real_memory': 1000})
    with open(os.path.join(SLURMD_RECORDED, 'slurmd-C.txt'), encoding='utf-8') as handle:
        slurm = dict(word.split('=', 1) for word in handle.readline().split())
    line = dict(word.split('=', 1) for word in definition['line'].split())
    assert (line['CPUs'], line['Sockets'], line['CoresPerSocket'], line['ThreadsPerCore']) == (
        slurm['CPUs'], slurm['SocketsPerBoard'], slurm['CoresPerSocket'], slurm['ThreadsPerCore'])
    assert definition['gres'] == ['NodeName=node1 Name=gpu Type=l40s File=/dev/nvidia0 Cores=0-7',
                                  'NodeName=node1 Name=gpu Type=l40s File=/dev/nvidia1 Cores=8-15']


def test_without_per_core_facts_cpu_n_is_core_n_mod_cores():
    cpu = {'sockets': 2, 'cores_per_socket': 4, 'threads_per_core': 2, 'logical_cpus': 16}
    assert slurm_gpu_cores('4-7,12-15', cpu) == '4-7'
    assert slurm_gpu_cores('0-3', {}) == ''


def test_definition_values_and_overrides():
    topology = {'cpu': {'sockets': 1, 'cores_per_socket': 4, 'threads_per_core': 1, 'logical_cpus': 4},
                'memory': {'total_mib': 10000},
                'gpus': [{'index': 1, 'name': 'NVIDIA A100-SXM4-80GB', 'minor_number': 3, 'local_cpulist': '2-3'},
                         {'index': 0, 'name': 'NVIDIA A100-SXM4-80GB', 'local_cpulist': '0-1'}]}
    definition = slurm_node_definition(topology, 'n1', {'features': ['a100', 'ib'], 'weight': 5}, memory_factor=0.9,
                                       memory_reserve_mib=1000)
    assert definition['line'] == ('NodeName=n1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 '
                                  'Gres=gpu:a100:2 Feature=a100,ib Weight=5 State=UNKNOWN')
    assert definition['gres'] == ['NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-1',
                                  'NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia3 Cores=2-3']
    assert definition['complete'] and definition['missing'] == []
    declared = slurm_node_definition({}, 'n2', {'cpus': 8, 'gpu_count': 2, 'gpu_type': 'h100', 'gpu_files': ['/dev/nvidia7']})
    assert not declared['complete']
    assert declared['missing'] == ['sockets', 'cores_per_socket', 'threads_per_core', 'real_memory']
    assert declared['gres'] == ['NodeName=n2 Name=gpu Type=h100 File=/dev/nvidia7', 'NodeName=n2 Name=gpu Type=h100 File=/dev/nvidia1']
    assert 'Gres=gpu:h100:2' in declared['line'].split()
    untyped = slurm_node_definition({'gpus': [{'index': 0, 'name': ''}]}, 'n3', {'real_memory': 1})
    assert untyped['gpu_types_missing'] and 'Gres=gpu:1' in untyped['line'].split()


def _synthetic_description(cpu):
    """hwloc synthetic description of the probed cores, PUs listed in (socket, core id) order."""
    sockets = sorted({core['socket'] for core in cpu['cores']})
    ordered = sorted(cpu['cores'], key=lambda core: (core['socket'], core['core']))
    indexes = [str(os_cpu) for core in ordered for os_cpu in sorted(core['cpus'])]
    return 'pack:%d core:%d pu:%d(indexes=%s)' % (len(sockets), cpu['cores_per_socket'], cpu['threads_per_core'],
                                                  ','.join(indexes))


@pytest.mark.parametrize('case', [case for case in CASES if expected_facts(case)['cpu'].get('cores')])
def test_live_slurmd_agrees(case, tmp_path):
    """slurmd -C and slurmd's CPU map on each recorded CPU layout agree with the filters."""
    require_slurmd()
    topology = expected_facts(case)
    # slurmd -G checks that every File= exists: stand-ins under tmp_path.
    devices = tmp_path / 'dev'
    devices.mkdir()
    for gpu in topology['gpus']:
        minor = gpu.get('minor_number')
        (devices / ('nvidia%s' % (gpu['index'] if minor is None else minor))).touch()
    definition = slurm_node_definition(topology, 'node1', {'real_memory': 1000}, device_prefix=str(devices / 'nvidia'))
    xml = synthetic_xml(_synthetic_description(topology['cpu']), str(tmp_path / 'topology.xml'))
    slurm = dict(word.split('=', 1) for word in slurmd_C(xml).split())
    line = dict(word.split('=', 1) for word in definition['line'].split())
    assert (line['CPUs'], line['Sockets'], line['CoresPerSocket'], line['ThreadsPerCore']) == (
        slurm['CPUs'], slurm['SocketsPerBoard'], slurm['CoresPerSocket'], slurm['ThreadsPerCore'])
    log, printed = slurmd_cpu_map_log(xml, definition['line'], definition['gres'], str(tmp_path / 'slurmd'))
    assert slurm_core_map(topology['cpu']) == core_index_of_cpu(log)
    # slurmd -G accepted every gres.conf line the role would write, Cores= as written.
    cores = re.findall(r'Cores=(\S+)', printed)
    assert cores == [re.search(r'Cores=(\S+)', text).group(1) for text in definition['gres'] if 'Cores=' in text]
