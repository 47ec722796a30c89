# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verdicts of the jobs across nodes: the MPI check and the DDP smoke job.

The MPI outputs are what roles/acceptance/files/mpi_check.c prints (its printf formats), written out
by hand for each case; the recorded run of the lab is tests/unit/fixtures/mpi_check/. The DDP outputs are
the recorded runs of tests/unit/fixtures/ddp_smoke/.
"""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.acceptance import acceptance_ddp_verdict, acceptance_mpi_verdict

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures')

GOOD_2_NODES = """\
hello rank=1 size=2 host=ts-node2
hello rank=0 size=2 host=ts-node1
allreduce sum=3 expected=3 vector_mismatches_rank0=0 all_ok=1
pingpong from=ts-node1 to=ts-node2 latency_us=125.31 bandwidth_MBps=1834.6
"""


def fixture(tool, name):
    with open(os.path.join(FIXTURES, tool, name), encoding='utf-8') as handle:
        return handle.read()


def test_mpi_two_nodes_pass_with_the_measurements():
    check = acceptance_mpi_verdict(GOOD_2_NODES, ['ts-node2', 'ts-node1'])
    assert check['check'] == 'mpi' and check['status'] == 'pass'
    assert check['ranks'] == 2 and check['hosts'] == ['ts-node1', 'ts-node2']
    assert check['latency_us'] == 125.31 and check['bandwidth_mbps'] == 1834.6
    assert check['reason'] == ('2 ranks on ts-node1, ts-node2: allreduce exact; '
                               'ping-pong ts-node1 -> ts-node2 125.3 us, 1835 MB/s')


@pytest.mark.parametrize('text, rc, words', [
    (GOOD_2_NODES.replace('all_ok=1', 'all_ok=0'), 1, ['the job exited with 1', 'allreduce wrong']),
    (GOOD_2_NODES.replace('sum=3 expected=3', 'sum=2 expected=3'), 0, ['allreduce wrong: sum 2, expected 3']),
    (GOOD_2_NODES.replace('vector_mismatches_rank0=0', 'vector_mismatches_rank0=17'), 0, ['17 vector mismatches']),
    ('\n'.join(GOOD_2_NODES.splitlines()[:2]), 0, ['no allreduce result', 'no ping-pong result']),
    (GOOD_2_NODES.replace('to=ts-node2', 'to=ts-node1'), 0, ['the ping-pong stayed on ts-node1']),
    (GOOD_2_NODES.replace('host=ts-node2', 'host=ts-node1'), 0, ['no rank ran on ts-node2']),
    (GOOD_2_NODES.replace('hello rank=1 size=2 host=ts-node2\n', ''), 0, ['ranks 0 did not all report', 'no rank ran on ts-node2']),
    ('srun: error: Unable to create step for job 12: Invalid generic resource (gres) specification\n', 1,
     ['the job exited with 1', 'no rank said hello']),
    ('', 0, ['no rank said hello', 'no allreduce result']),
])
def test_mpi_failures_name_what_went_wrong(text, rc, words):
    check = acceptance_mpi_verdict(text, ['ts-node1', 'ts-node2'], rc)
    assert check['status'] == 'fail'
    for word in words:
        assert word in check['reason']


def test_mpi_bounds_judge_the_ping_pong():
    slow = acceptance_mpi_verdict(GOOD_2_NODES, ['ts-node1', 'ts-node2'], 0, 20000, 2)
    assert slow['status'] == 'fail'
    assert slow['reason'] == 'ping-pong bandwidth 1834.6 MB/s < 20000; ping-pong latency 125.31 us > 2'
    assert acceptance_mpi_verdict(GOOD_2_NODES, ['ts-node1', 'ts-node2'], 0, '1000', '200')['status'] == 'pass'
    with pytest.raises(AnsibleFilterError, match='min_bandwidth_mbps'):
        acceptance_mpi_verdict(GOOD_2_NODES, ['ts-node1', 'ts-node2'], 0, 'fast')


def test_mpi_one_node_needs_no_ping_pong():
    text = 'hello rank=0 size=1 host=solo\nallreduce sum=1 expected=1 vector_mismatches_rank0=0 all_ok=1\n' \
           'pingpong from=solo to=solo latency_us=0.00 bandwidth_MBps=0.0\n'
    check = acceptance_mpi_verdict(text, ['solo'])
    assert check['status'] == 'pass' and check['latency_us'] is None


def test_mpi_recorded_lab_run_passes():
    check = acceptance_mpi_verdict(fixture('mpi_check', 'srun-pmix-2nodes-lab.txt'), ['ts-node1', 'ts-node2'])
    assert check['status'] == 'pass', check['reason']
    assert check['ranks'] == 2 and check['hosts'] == ['ts-node1', 'ts-node2']
    assert check['bandwidth_mbps'] > 0 and check['latency_us'] > 0


def test_mpi_recorded_run_with_a_ucx_log_line_in_stdout_passes():
    # UCX wrote an ERROR line into stdout between the hellos and the results (Endpoint timeout while flushing
    # at disconnect); the results are complete and exact, so the check passes.
    check = acceptance_mpi_verdict(fixture('mpi_check', 'srun-pmix-2nodes-2ranks-ucx-error-line.txt'), ['tsm-node1', 'tsm-node2'])
    assert check['status'] == 'pass', check['reason']
    assert check['ranks'] == 4 and check['latency_us'] == 307.2 and check['bandwidth_mbps'] == 1100.2


def test_ddp_recorded_run_passes_on_its_host():
    check = acceptance_ddp_verdict(fixture('ddp_smoke', 'gloo-2ranks-1node.txt'), ['vm'], 'gloo')
    assert check['check'] == 'ddp' and check['status'] == 'pass'
    assert check['world_size'] == 2 and check['hosts'] == ['vm'] and check['samples_per_s_total'] == 4384.9
    assert check['reason'] == ('DDP gloo, 2 ranks on vm: loss 0.007367 -> 0.002339, parameters identical, '
                               '4384.9 samples/s in total')


def test_ddp_wrong_hosts_backend_rc_and_floor_fail():
    check = acceptance_ddp_verdict(fixture('ddp_smoke', 'gloo-2ranks-1node.txt'), ['n1', 'n2'], 'nccl', 1, 5000)
    assert check['status'] == 'fail'
    assert check['reason'].startswith('the job exited with 1; ran on vm, expected n1, n2; backend gloo, expected nccl')
    assert check['reason'].endswith('4385 samples/s in total < 5000')


def test_ddp_diverged_and_missing_results_fail():
    diverged = acceptance_ddp_verdict(fixture('ddp_smoke', 'gloo-2ranks-diverged.txt'), ['vm'], 'gloo', 1)
    assert diverged['status'] == 'fail' and 'loss did not decrease' in diverged['reason']
    nothing = acceptance_ddp_verdict('slurmstepd: error: *** JOB 7 CANCELLED ***', ['n1'], 'gloo', 1)
    assert nothing['status'] == 'fail' and 'no TRAINSTACK_DDP_RESULT line' in nothing['reason']
    assert nothing['world_size'] is None


def test_ddp_recorded_two_node_lab_run_passes():
    check = acceptance_ddp_verdict(fixture('ddp_smoke', 'gloo-2nodes-slurm.txt'), ['ts-node1', 'ts-node2'], 'gloo')
    assert check['status'] == 'pass', check['reason']
    assert check['world_size'] == 2 and check['hosts'] == ['ts-node1', 'ts-node2']
