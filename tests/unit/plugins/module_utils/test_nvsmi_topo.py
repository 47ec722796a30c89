# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvidia-smi topo -m parser against real published outputs (tests/unit/fixtures/nvidia_smi_topo).

Each case's expected.json was written by reading its topo-m.txt, never by running the parser.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._nvsmi_topo import parse_topo

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures', 'nvidia_smi_topo')
CASES = sorted(name for name in os.listdir(CORPUS) if os.path.isfile(os.path.join(CORPUS, name, 'topo-m.txt')))
AFFINITY_KEYS = ('cpu_affinity', 'numa_affinity', 'gpu_numa_id')


def load(case):
    with open(os.path.join(CORPUS, case, 'topo-m.txt'), encoding='utf-8', newline='') as handle:
        text = handle.read()
    with open(os.path.join(CORPUS, case, 'expected.json'), encoding='utf-8') as handle:
        return text, json.load(handle)


def test_corpus_is_large_enough():
    assert len(CASES) >= 20


@pytest.mark.parametrize('case', CASES)
def test_matrix_matches_the_reading_by_hand(case):
    text, expected = load(case)
    parsed = parse_topo(text)
    columns = expected['columns']
    assert sorted(parsed['matrix']) == sorted(expected['rows'])
    for row, cells in expected['rows'].items():
        assert parsed['matrix'][row] == dict(zip(columns, cells.split())), row


@pytest.mark.parametrize('case', CASES)
def test_gpus_and_nics(case):
    text, expected = load(case)
    parsed = parse_topo(text)
    assert (parsed['gpus'], parsed['nics']) == (expected['gpu_rows'], expected['nics'])


@pytest.mark.parametrize('case', CASES)
def test_affinities(case):
    text, expected = load(case)
    parsed = parse_topo(text)
    assert parsed['affinity'] == {gpu: dict(zip(AFFINITY_KEYS, values)) for gpu, values in expected['affinity'].items()}


@pytest.mark.parametrize('case', CASES)
def test_problems_are_named(case):
    """A clean table reports nothing; a damaged one names each damage (never a silent partial matrix)."""
    text, expected = load(case)
    problems = parse_topo(text)['problems']
    if not expected['problems']:
        assert problems == []
    for part in expected['problems']:
        assert any(part in problem for problem in problems), (part, problems)


@pytest.mark.parametrize('case', CASES)
def test_same_reading_with_bom_and_crlf(case):
    """A BOM and Windows line ends (files passed through editors) change nothing."""
    text, _expected = load(case)
    assert parse_topo('\ufeff' + text.replace('\n', '\r\n')) == parse_topo(text)


TAB_CASES = [case for case in CASES if '\t' in load(case)[0]]


@pytest.mark.parametrize('case', TAB_CASES)
def test_tabs_turned_into_blanks_and_indented_read_the_same(case):
    """What terminals, docs and issue trackers do to the table: tabs expanded, every line indented."""
    text, _expected = load(case)
    parsed = parse_topo(text)
    for variant in (text.expandtabs(8), '\n'.join('    ' + line for line in text.expandtabs(8).splitlines())):
        again = parse_topo(variant)
        assert (again['matrix'], again['affinity'], again['gpus'], again['nics']) == \
            (parsed['matrix'], parsed['affinity'], parsed['gpus'], parsed['nics'])


def test_empty_cpu_affinity_cell_keeps_the_other_columns_in_place():
    text, _expected = load('a800_nv8_roce_bonds')
    edited = text.replace('GPU0\t X \tNV8\tNV8\tNV8\tNV8\tNV8\tNV8\tNV8\tPIX\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0-61\t0\t\tN/A',
                          'GPU0\t X \tNV8\tNV8\tNV8\tNV8\tNV8\tNV8\tNV8\tPIX\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t\t0\t\t1')
    assert edited != text
    affinity = parse_topo(edited)['affinity']
    assert affinity['GPU0'] == {'cpu_affinity': None, 'numa_affinity': '0', 'gpu_numa_id': '1'}
    assert affinity['GPU1'] == {'cpu_affinity': '0-61', 'numa_affinity': '0', 'gpu_numa_id': None}


def test_two_different_tables_pasted_together_read_the_first_and_say_so():
    first, _expected = load('l40s_4gpu_2nic_legend')
    second, _expected = load('rtx5090_2gpu_phb')
    parsed = parse_topo(first + '\n' + second)
    assert parsed['matrix'] == parse_topo(first)['matrix']
    assert any('2 different tables' in problem for problem in parsed['problems'])


def test_the_same_table_twice_is_read_once():
    text, _expected = load('rtx5090_2gpu_phb')
    parsed = parse_topo(text + text)
    assert parsed['matrix'] == parse_topo(text)['matrix']
    assert parsed['problems'] == ['nvidia-smi topo -m output holds the same table 2 times; read once']


def test_nic_legend_not_from_mlx5_0_and_with_a_bond():
    text, _expected = load('l40s_4gpu_2nic_legend')
    parsed = parse_topo(text.replace('NIC0: mlx5_0', 'NIC0: mlx5_4').replace('NIC1: mlx5_1', 'NIC1: mlx5_bond_0'))
    assert parsed['nics'] == ['mlx5_4', 'mlx5_bond_0']
    assert parsed['matrix']['GPU2']['mlx5_bond_0'] == 'NODE' and parsed['matrix']['mlx5_bond_0']['mlx5_4'] == 'PIX'
    assert parsed['problems'] == []


def test_nic_missing_from_the_legend_is_named():
    text, _expected = load('l40s_4gpu_2nic_legend')
    parsed = parse_topo(text.replace('  NIC1: mlx5_1\n', ''))
    assert parsed['nics'] == ['mlx5_0', 'NIC1']
    assert 'NIC1 has no entry in the NIC Legend' in parsed['problems']


@pytest.mark.parametrize('text', [None, '', '\n\n'])
def test_no_output_is_no_problem(text):
    assert parse_topo(text) == {'matrix': {}, 'affinity': {}, 'gpus': [], 'nics': [], 'problems': []}


@pytest.mark.parametrize('text', ['No devices were found\n', 'Failed to initialize NVML: Driver/library version mismatch\n'])
def test_error_text_instead_of_a_table_is_named(text):
    parsed = parse_topo(text)
    assert parsed['matrix'] == {} and text.strip()[:20] in parsed['problems'][0]
