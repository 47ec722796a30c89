# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""No vacuous pass (issue 24, item 4) and bounded jobs (item 5): what a node is asked to run and cannot FAILs and is
counted; the GPUs Slurm declares; the jobs' nodes and transport; Slurm's job state and time limits.

The scontrol lines are Slurm 22.05's `-o` form (Debian 12's slurm-wlm), shortened by hand to the fields read.
"""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.acceptance import (
    acceptance_job_plan, acceptance_mpi_plan, acceptance_node_checks, acceptance_not_run, acceptance_report,
    acceptance_slurm_gres_gpus, acceptance_slurm_job, acceptance_slurm_time_s)

TWO_GPUS = {'gpus': [{'index': 0, 'name': 'NVIDIA H200'}, {'index': 1, 'name': 'NVIDIA H200'}], 'hcas': []}


def _gpu_count(topology, expected):
    return next(check for check in acceptance_node_checks(topology, {}, {}, expected) if check['check'] == 'gpu_count')


@pytest.mark.parametrize('topology, expected, status, reason', [
    (TWO_GPUS, {}, 'info', '2 GPUs; the inventory sets no acceptance_expected_gpu_count and Slurm declares no GPU Gres'),
    (TWO_GPUS, {'slurm_gres_gpus': 2}, 'pass', "2 GPUs (Slurm's Gres declares 2)"),
    (TWO_GPUS, {'slurm_gres_gpus': 3}, 'fail', "2 GPUs, fewer than Slurm's Gres=gpu:3"),
    (TWO_GPUS, {'gpu_count': 2, 'slurm_gres_gpus': 2}, 'pass', "2 GPUs (inventory expects 2, Slurm's Gres declares 2)"),
    (TWO_GPUS, {'gpu_count': 8, 'slurm_gres_gpus': 8}, 'fail', "2 GPUs, inventory expects 8; 2 GPUs, fewer than Slurm's Gres=gpu:8"),
    # More GPUs than Slurm hands out is a choice of the site (a GPU kept out of Slurm), not a loss.
    (TWO_GPUS, {'slurm_gres_gpus': 1}, 'pass', "2 GPUs (Slurm's Gres declares 1)"),
    # The lab's tsm-node2: two GPU device files in gres.conf, no GPU behind them.
    ({'gpus': [], 'hcas': []}, {'slurm_gres_gpus': 2}, 'fail', "0 GPUs, fewer than Slurm's Gres=gpu:2"),
    ({'gpus': [], 'hcas': []}, {'slurm_gres_gpus': 0}, 'skip', 'no GPU on this host (nvidia-smi lists none) and the inventory expects none'),
])
def test_gpu_count_against_the_inventory_and_slurm(topology, expected, status, reason):
    check = _gpu_count(topology, expected)
    assert (check['status'], check['reason']) == (status, reason)


def test_a_non_numeric_gres_count_is_refused():
    with pytest.raises(AnsibleFilterError, match='slurm_gres_gpus must be a whole number'):
        acceptance_node_checks(TWO_GPUS, {}, {}, {'slurm_gres_gpus': 'two'})


@pytest.mark.parametrize('text, gpus', [
    ('NodeName=tsm-node2 Arch=x86_64 CoresPerSocket=1 Gres=gpu:testgpu:2 NodeAddr=tsm-node2 State=IDLE', 2),
    ('NodeName=gpu01 Arch=x86_64 Gres=gpu:h100:8(S:0-1) State=MIXED', 8),
    ('NodeName=gpu02 Gres=gpu:8 State=IDLE', 8),
    ('NodeName=gpu03 Gres=gpu:a100:4(S:0),gpu:h100:2(S:1),shard:16 State=IDLE', 6),
    ('NodeName=tsm-node1 Arch=x86_64 Gres=(null) State=IDLE', 0),
    ('Node tsm-node9 not found', None),
    ('', None),
    (None, None),
])
def test_slurm_gres_gpus(text, gpus):
    assert acceptance_slurm_gres_gpus(text) == gpus


@pytest.mark.parametrize('reason, in_group, check_mode, result', [
    ('torch is not importable', True, False,
     {'status': 'fail', 'reason': 'expected but not run: torch is not importable', 'not_run': True}),
    ('torch is not importable', True, True, {'status': 'skip', 'reason': 'check mode: nothing is run'}),
    ('check mode: no job is submitted', True, True, {'status': 'skip', 'reason': 'check mode: no job is submitted'}),
    ('not in the pytorch group', False, False, {'status': 'skip', 'reason': 'not in the pytorch group'}),
])
def test_not_run(reason, in_group, check_mode, result):
    assert acceptance_not_run(reason, in_group, check_mode) == result


def test_report_counts_checks_not_run_and_skipped_and_fails_them():
    report = acceptance_report([
        {'name': 'n1', 'checks': [{'check': 'gpu_count', 'status': 'pass', 'reason': '8 GPUs'}],
         'hooks': [{'check': 'ddp', 'status': 'fail', 'reason': 'expected but not run: torch is not importable', 'not_run': True},
                   {'check': 'ib_send_bw_pairs', 'status': 'skip', 'reason': 'no ACTIVE InfiniBand port on this node'}]},
        # A producer that said skip for a check it was asked to run still fails the node.
        {'name': 'n2', 'checks': [], 'hooks': [{'check': 'mpi', 'status': 'skip', 'reason': 'left out', 'not_run': True}]},
        {'name': 'n3', 'checks': [], 'hooks': [{'check': 'mpi', 'status': 'pass', 'reason': 'ok'}]},
    ])
    assert report['status'] == 'fail'
    assert report['check_counts'] == {'not_run': 2, 'skipped': 1}
    nodes = {node['name']: node for node in report['nodes']}
    assert (nodes['n1']['status'], nodes['n1']['not_run'], nodes['n1']['skipped']) == ('fail', ['ddp'], ['ib_send_bw_pairs'])
    assert (nodes['n2']['status'], nodes['n2']['not_run'], nodes['n2']['reasons']) == ('fail', ['mpi'], ['mpi: left out'])
    assert (nodes['n3']['status'], nodes['n3']['not_run'], nodes['n3']['skipped']) == ('pass', [], [])
    assert report['counts']['fail'] == 2 and report['counts']['pass'] == 1


@pytest.mark.parametrize('hcas, nodes, plan', [
    # The container lab: no HCA anywhere, UCX over TCP for all.
    ({'n1': 0, 'n2': 0}, ['n1', 'n2'], {'nodes': ['n1', 'n2'], 'tcp': True, 'left_out': {}}),
    ({'n1': 4, 'n2': 4}, ['n1', 'n2'], {'nodes': ['n1', 'n2'], 'tcp': False, 'left_out': {}}),
    ({'n1': 4, 'n2': 0, 'n3': 4}, ['n1', 'n2', 'n3'],
     {'nodes': ['n1', 'n3'], 'tcp': False,
      'left_out': {'n2': 'no HCA on this node while 2 of the 3 MPI nodes have one: left out of the MPI job '
                         '(UCX over TCP is not turned on for the others)'}}),
    ({}, [], {'nodes': [], 'tcp': True, 'left_out': {}}),
])
def test_mpi_plan_judges_a_node_without_hca_alone(hcas, nodes, plan):
    assert acceptance_mpi_plan(hcas, nodes) == plan


@pytest.mark.parametrize('gpus, problems, plan', [
    ({'n1': 8, 'n2': 8}, {'n1': '', 'n2': ''}, {'nodes': ['n1', 'n2'], 'gpus': 8, 'left_out': {}}),
    # A node that lost a GPU is left out and fails; the job keeps 8 per node.
    ({'n1': 8, 'n2': 7}, {}, {'nodes': ['n1'], 'gpus': 8,
                              'left_out': {'n2': '7 GPUs, fewer than the 8 of another node: left out of the DDP job'}}),
    ({'n1': 0, 'n2': 0}, {'n1': 'torch is not importable: ModuleNotFoundError', 'n2': ''},
     {'nodes': ['n2'], 'gpus': 0, 'left_out': {'n1': 'torch is not importable: ModuleNotFoundError'}}),
    ({'n1': 2, 'n2': 2}, {'n1': 'x', 'n2': 'y'}, {'nodes': [], 'gpus': 2, 'left_out': {'n1': 'x', 'n2': 'y'}}),
    ({}, {}, {'nodes': [], 'gpus': 0, 'left_out': {}}),
])
def test_job_plan_leaves_out_nodes_that_cannot_run_it(gpus, problems, plan):
    assert acceptance_job_plan(gpus, problems, 'the DDP job') == plan


@pytest.mark.parametrize('text, job', [
    ('JobId=41 JobName=trainstack-acceptance-ddp UserId=root(0) JobState=PENDING Reason=ReqNodeNotAvail,_UnavailableNodes:tsm-node2 '
     'Dependency=(null) ExitCode=0:0 BatchHost=(null) NumNodes=2',
     {'job_id': '41', 'state': 'PENDING', 'reason': 'ReqNodeNotAvail,_UnavailableNodes:tsm-node2', 'exit_code': '0:0',
      'batch_host': None, 'rc': 'PENDING 0:0'}),
    ('JobId=42 JobState=COMPLETED Reason=None ExitCode=0:0 BatchHost=tsm-node1',
     {'job_id': '42', 'state': 'COMPLETED', 'reason': 'None', 'exit_code': '0:0', 'batch_host': 'tsm-node1', 'rc': 0}),
    ('JobId=43 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 BatchHost=tsm-node1',
     {'job_id': '43', 'state': 'FAILED', 'reason': 'NonZeroExitCode', 'exit_code': '3:0', 'batch_host': 'tsm-node1', 'rc': 3}),
    # Killed at its time limit: no exit status of its own, the state says why.
    ('JobId=44 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 BatchHost=tsm-node2',
     {'job_id': '44', 'state': 'TIMEOUT', 'reason': 'TimeLimit', 'exit_code': '0:15', 'batch_host': 'tsm-node2', 'rc': 'TIMEOUT 0:15'}),
    ('slurm_load_jobs error: Invalid job id specified', None),
    ('', None),
])
def test_slurm_job(text, job):
    assert acceptance_slurm_job(text) == job


@pytest.mark.parametrize('text, seconds', [
    ('00:10:00', 600), ('10', 600), ('5:30', 330), ('1-0', 86400), ('1-2:30', 95400), ('2-00:00:05', 172805),
    ('UNLIMITED', None), ('infinite', None), ('0', None), ('00:00:00', None), ('10m', None), ('', None), (None, None),
    # Slurm's int of seconds: 2**31 - 1 is the last limit it holds; a survey answer of 100,000 digits is refused, not raised.
    ('24855-03:14:07', 2147483647), ('24855-03:14:08', None), ('35791394', 2147483640), ('35791395', None),
    ('9' * 100000, None), ('1:' + '0' * 11, None),
])
def test_slurm_time_s(text, seconds):
    assert acceptance_slurm_time_s(text) == seconds
