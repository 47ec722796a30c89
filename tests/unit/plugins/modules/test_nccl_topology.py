# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import copy
import os
import stat

import pytest

import nccl_xml_checker
from ansible_collections.trainstack.cluster.plugins.modules import nccl_topology
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree, collect_topology
from topology_support import GPU_CASES, NCCL_XML_GOLDEN, probe_recorded_cases, recorded_root, run_module


@pytest.fixture(scope='module')
def facts(tmp_path_factory):
    """trainstack_topology of every recorded case."""
    return probe_recorded_cases(tmp_path_factory)


def write(args, capsys):
    return run_module(nccl_topology.main, args, capsys)


@pytest.mark.parametrize('case', GPU_CASES)
def test_writes_reviewed_xml_that_nccl_reads(case, facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    result = write({'topology': facts[case], 'dest': str(dest)}, capsys)
    with open(os.path.join(NCCL_XML_GOLDEN, case + '.xml'), encoding='utf-8') as handle:
        expected = handle.read()
    nccl_xml_checker.assert_valid(expected)
    assert (result['changed'], result['xml'], dest.read_text(), result['gpus']) == (True, expected, expected, len(facts[case]['gpus']))


@pytest.mark.parametrize('case', GPU_CASES)
def test_second_run_is_idempotent(case, facts, tmp_path, capsys):
    args = {'topology': facts[case], 'dest': str(tmp_path / 'topo.xml')}
    write(args, capsys)
    mtime = os.stat(args['dest']).st_mtime_ns
    second = write(args, capsys)
    assert (second['changed'], second['msg'], os.stat(args['dest']).st_mtime_ns) == (False, 'topology file is up to date', mtime)


def test_check_mode_predicts_without_writing(facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    result = write({'topology': facts['h200_vm'], 'dest': str(dest), '_ansible_check_mode': True, '_ansible_diff': True}, capsys)
    assert (result['changed'], dest.exists(), result['diff']['before'], result['diff']['after']) == (True, False, '', result['xml'])


def test_check_mode_on_current_file_reports_no_change(facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    write({'topology': facts['hgx_h100'], 'dest': str(dest)}, capsys)
    result = write({'topology': facts['hgx_h100'], 'dest': str(dest), '_ansible_check_mode': True}, capsys)
    assert result['changed'] is False


def test_diff_and_backup_when_content_changes(facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    dest.write_text('<system version="1">\n</system>\n')
    result = write({'topology': facts['a100_pcie'], 'dest': str(dest), 'backup': True, '_ansible_diff': True}, capsys)
    assert result['changed'] is True
    assert result['diff']['before'] == '<system version="1">\n</system>\n'
    assert result['diff']['after'] == dest.read_text()
    with open(result['backup_file'], encoding='utf-8') as handle:
        assert handle.read() == '<system version="1">\n</system>\n'


def test_mode_is_applied_and_then_stable(facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    args = {'topology': facts['h200_vm'], 'dest': str(dest), 'mode': '0640'}
    assert write(args, capsys)['changed'] is True
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o640
    assert write(dict(args, mode='0644'), capsys)['changed'] is True
    assert write(dict(args, mode='0644'), capsys)['changed'] is False


def test_no_gpu_writes_nothing(facts, tmp_path, capsys):
    dest = tmp_path / 'topo.xml'
    result = write({'topology': facts['cpu_only'], 'dest': str(dest)}, capsys)
    assert (result['changed'], result['xml'], dest.exists()) == (False, '', False)
    assert 'no GPU' in result['msg']


def test_missing_compute_capability_fails_clearly(facts, tmp_path, capsys):
    topology = copy.deepcopy(facts['h200_vm'])
    topology['gpus'][1]['sm'] = None
    result = write({'topology': topology, 'dest': str(tmp_path / 'topo.xml')}, capsys)
    assert result['failed'] is True
    assert 'GPU 1 (0000:00:07.0) has no compute capability' in result['msg']


def test_missing_directory_fails(facts, tmp_path, capsys):
    result = write({'topology': facts['h200_vm'], 'dest': str(tmp_path / 'absent' / 'topo.xml')}, capsys)
    assert result['failed'] is True


def _probe_edited(case, tmp_path, key, edit):
    """Facts of a recorded case after one recorded command output was edited."""
    root = recorded_root(case, tmp_path)
    path = os.path.join(root, '.commands', key + '.txt')
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(edit(text))
    return collect_topology(SysfsTree(root), CommandRunner(root))


def _drop_lines_starting(prefix):
    return lambda text: ''.join(line for line in text.splitlines(True) if not line.startswith(prefix))


@pytest.mark.parametrize(('key', 'edit', 'rows', 'listed'), [
    # topo -m cut before GPU7's row: the matrix lacks a GPU the query lists.
    ('nvidia-smi_topo-m', _drop_lines_starting('GPU7\t'), list(range(7)), list(range(8))),
    # A --query-gpu row that does not parse: the matrix has a GPU the list lacks.
    ('nvidia-smi_query-gpu', lambda text: text.replace('00000000:BF:00.0', 'garbled', 1), list(range(8)), list(range(7))),
])
def test_matrix_contradicting_the_gpu_list_is_refused(key, edit, rows, listed, tmp_path, capsys):
    topology = _probe_edited('hgx_h100', tmp_path, key, edit)
    assert any('rows for GPUs %s but --query-gpu lists GPUs %s' % (rows, listed) in warning for warning in topology['warnings'])
    dest = tmp_path / 'topo.xml'
    result = write({'topology': topology, 'dest': str(dest)}, capsys)
    assert result['failed'] is True and not dest.exists()
    assert 'contradicts the GPU list' in result['msg'] and str(rows) in result['msg'] and str(listed) in result['msg']


def test_check_mode_predicts_a_file_in_a_directory_not_yet_created(facts, tmp_path, capsys):
    # A fresh host in check mode: the role's directory task only said it would create /etc/nccl.
    dest = tmp_path / 'absent' / 'topo.xml'
    result = write({'topology': facts['h200_vm'], 'dest': str(dest), '_ansible_check_mode': True, '_ansible_diff': True}, capsys)
    assert (result.get('failed', False), result['changed'], dest.parent.exists()) == (False, True, False)
    assert (result['diff']['before'], result['diff']['after']) == ('', result['xml'])
