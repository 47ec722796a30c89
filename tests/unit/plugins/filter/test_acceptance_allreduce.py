# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The all-reduce hooks' filters on real outputs: NCCL environment sets, their comparison, the hook result.

The comparison uses the device probe's two real 2 x H200 runs (tests/unit/fixtures/torch_allreduce/README.md):
NCCL's own detection ("default") and the same with the nccl role's NCCL_TOPO_FILE ("topofile"). Expected
gains are worked out by hand from the busbw lines of the two files.
"""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from corpus_support import FIXTURES

from ansible_collections.trainstack.cluster.plugins.filter.acceptance_allreduce import (
    acceptance_allreduce_multi_tool, acceptance_allreduce_result, acceptance_nccl_compare, acceptance_nccl_sets,
    acceptance_nccl_tests_argv, acceptance_nccl_tests_mpi_problem)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(FIXTURES)))
MIB = 1024 * 1024


def fixture(case):
    with open(os.path.join(FIXTURES, 'torch_allreduce', case + '.txt'), encoding='utf-8') as handle:
        return handle.read()


DEFAULT = fixture('h200x2_probe_default')
TOPOFILE = fixture('h200x2_probe_topofile')


def test_the_topology_file_against_nccl_s_own_detection_per_size():
    result = acceptance_nccl_compare({'default': [DEFAULT], 'topofile': [TOPOFILE]})
    by_label = {entry['label']: entry for entry in result['sizes']}
    # default | topofile busbw (GB/s): 1MiB 22.5 | 21.8, 8MiB 172.7 | 167.0, 64MiB 264.7 | 262.9,
    # 256MiB 291.5 | 296.5, 1GiB 327.2 | 326.2, 4GiB 343.3 | 344.7
    assert list(by_label) == ['1MiB', '8MiB', '64MiB', '256MiB', '1GiB', '4GiB']
    # (21.8 - 22.5) / 22.5 = -3.11 %; (296.5 - 291.5) / 291.5 = +1.72 %; (344.7 - 343.3) / 343.3 = +0.41 %
    assert by_label['1MiB']['gain_pct'] == {'topofile': -3.1}
    assert by_label['8MiB']['gain_pct'] == {'topofile': -3.3}
    assert by_label['256MiB']['gain_pct'] == {'topofile': 1.7}
    assert by_label['4GiB']['gain_pct'] == {'topofile': 0.4}
    assert by_label['256MiB']['busbw'] == {'default': 291.5, 'topofile': 296.5}
    assert [by_label[label]['best'] for label in by_label] == ['default', 'default', 'default', 'topofile', 'default', 'topofile']
    assert by_label['256MiB']['best_gain_pct'] == 1.7 and by_label['1MiB']['best_gain_pct'] == 0.0
    # Mean of -3.11, -3.30, -0.68, +1.72, -0.31, +0.41 = -0.88 %: the default stays best overall.
    assert result['overall'] == {'topofile': {'mean_gain_pct': -0.9, 'sizes_won': 2}}
    assert result['best'] == 'default' and result['best_mean_gain_pct'] == 0.0
    assert result['reason'] == 'the default environment is best: no set gains on average over 6 sizes'


def test_a_set_that_gains_on_average_is_best_and_the_best_attempt_counts():
    # Reversed roles: the topofile run as baseline, NCCL's own detection as the "tuned" set, two baseline attempts
    # of which the better busbw per size counts (the same run twice: the same figures).
    result = acceptance_nccl_compare({'default': [TOPOFILE, TOPOFILE], 'own': [DEFAULT]})
    assert result['best'] == 'own'
    # (22.5 - 21.8) / 21.8 = +3.21, (172.7 - 167.0) / 167.0 = +3.41, (264.7 - 262.9) / 262.9 = +0.68,
    # (291.5 - 296.5) / 296.5 = -1.69, (327.2 - 326.2) / 326.2 = +0.31, (343.3 - 344.7) / 344.7 = -0.41: mean +0.92
    assert result['best_mean_gain_pct'] == 0.9
    assert result['reason'] == 'best set own: +0.9 % busbw on average over 6 sizes'


def test_a_broken_set_is_listed_and_left_out():
    broken = ('torch 2.13.0 backend nccl world_size 2 nccl 2.27.5 hosts gpu-01\n'
              'Traceback (most recent call last):\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp\n')
    result = acceptance_nccl_compare({'default': [DEFAULT], 'bad': [broken], 'topofile': [TOPOFILE]}, ['topofile', 'bad'])
    assert result['sets'] == ['topofile', 'bad']
    assert list(result['failed']) == ['bad'] and 'Traceback' in result['failed']['bad']
    assert all('bad' not in entry['busbw'] for entry in result['sizes'])
    assert result['reason'].endswith('; failed: bad')
    nothing = acceptance_nccl_compare({'default': [broken], 'topofile': [TOPOFILE]})
    assert nothing['sizes'] == [] and nothing['reason'].startswith('the default run failed')


def test_sets_on_gloo_are_flagged_as_noise():
    gloo = fixture('gloo_2nodes_slurm')
    # The same real run as default and as a set: every gain is 0, and gloo reads no NCCL setting anyway.
    result = acceptance_nccl_compare({'default': [gloo], 'proto_simple': [gloo]})
    assert [entry['gain_pct'] for entry in result['sizes']] == [{'proto_simple': 0.0}] * 4
    assert result['best'] == 'default'
    assert result['reason'] == ('gloo ignores NCCL settings, differences are noise: '
                                'the default environment is best: no set gains on average over 4 sizes')


def test_the_hook_result_on_a_real_run():
    result = acceptance_allreduce_result({'default': [DEFAULT]}, 'nccl_allreduce_single_node')
    # The probe's run has no header: backend and ranks unknown, the largest size is 4 GiB at 343.3 GB/s.
    assert result == {'check': 'nccl_allreduce_single_node', 'status': 'pass', 'tool': 'pytorch', 'backend': None, 'world_size': None,
                      'hosts': None, 'attempts': 1, 'reason': 'nccl: 6 sizes, busbw 343.30 GB/s at 4GiB'}
    tuned = acceptance_allreduce_result({'default': [DEFAULT], 'topofile': [TOPOFILE]}, 'nccl_allreduce_single_node')
    assert tuned['comparison']['best'] == 'default'
    assert tuned['reason'].endswith('; the default environment is best: no set gains on average over 6 sizes')


def nccl_tests_output(case):
    with open(os.path.join(FIXTURES, 'nccl_tests', case + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def test_the_hook_result_on_real_nccl_tests_runs():
    # 2 x A100 on one node, 128 MiB .. 512 MiB: the last row's out-of-place busbw is 192.43 GB/s.
    a100 = nccl_tests_output('all_reduce_a100_2gpu_info_interleaved')
    result = acceptance_allreduce_result({'default': [a100]}, 'nccl_allreduce_single_node')
    assert result == {'check': 'nccl_allreduce_single_node', 'status': 'pass', 'tool': 'nccl-tests', 'backend': None,
                      'world_size': None, 'hosts': None, 'attempts': 1,
                      'reason': 'nccl-tests all_reduce_perf: 3 sizes, busbw 192.43 GB/s at 512MiB'}
    # The same run with 7 wrong results in the last row's out-of-place #wrong column (edited here): a wrong sum fails.
    row = '    536870912     134217728     float     sum      -1   2789.9  192.43  192.43      0   2793.6'
    assert row in a100
    wrong = acceptance_allreduce_result({'default': [a100.replace(row, row.replace('192.43      0', '192.43      7'))]},
                                        'nccl_allreduce_single_node')
    assert wrong['status'] == 'fail' and wrong['reason'] == "7 wrong result(s) in nccl-tests' #wrong column"
    # A run that ends in `Test NCCL failure` lines fails with the parser's words.
    broken = acceptance_allreduce_result({'default': [nccl_tests_output('all_reduce_large_cluster_then_nccl_failure')]},
                                         'nccl_allreduce_single_node')
    assert broken['status'] == 'fail' and broken['tool'] == 'nccl-tests' and 'NCCL failure' in broken['reason']


def test_the_hook_result_fails_on_a_broken_run_or_a_missing_node():
    gloo = fixture('gloo_2nodes_slurm')  # the real run across the container cluster's two nodes
    good = acceptance_allreduce_result({'default': [gloo]}, 'nccl_allreduce_multi_node', ['tsm-node1', 'tsm-node2'])
    assert good['status'] == 'pass' and good['hosts'] == ['tsm-node1', 'tsm-node2'] and good['backend'] == 'gloo'
    assert good['reason'] == 'gloo, 2 ranks on tsm-node1, tsm-node2: 4 sizes, busbw 0.88 GB/s at 64MiB'
    missing = acceptance_allreduce_result({'default': [gloo]}, 'nccl_allreduce_multi_node', ['tsm-node1', 'tsm-node3'])
    assert missing['status'] == 'fail' and missing['reason'] == 'no rank ran on tsm-node3'
    header = 'torch 2.13.0+cpu backend gloo world_size 2 nccl none hosts tsm-node1,tsm-node2\n'
    wrong = acceptance_allreduce_result({'default': [header + 'ERROR all-reduce sum wrong at size_MiB 1: 5 values differ from 3\n']},
                                        'nccl_allreduce_multi_node')
    assert wrong['status'] == 'fail' and wrong['reason'].startswith('ERROR all-reduce sum wrong')
    assert acceptance_allreduce_result({}, 'nccl_allreduce_single_node')['status'] == 'fail'


def test_the_role_s_sweep_grid_gives_eight_sets_after_the_inventory_s():
    with open(os.path.join(ROOT, 'roles', 'acceptance', 'vars', 'main.yml'), encoding='utf-8') as handle:
        grid = yaml.safe_load(handle)['__acceptance_nccl_sweep_grid']
    sets = acceptance_nccl_sets({'topofile': {'NCCL_TOPO_FILE': '/etc/nccl/topology.xml', 'NCCL_NVLS_ENABLE': 0}}, grid)
    assert [entry['name'] for entry in sets] == [
        'default', 'topofile', 'NCCL_MIN_CTAS=16', 'NCCL_MIN_CTAS=32', 'NCCL_BUFFSIZE=8388608', 'NCCL_BUFFSIZE=16777216',
        'NCCL_PROTO=Simple', 'NCCL_PROTO=LL128', 'NCCL_ALGO=Ring', 'NCCL_ALGO=Tree']
    assert sets[0]['environment'] == {}
    # Environment values are strings (numbers as the inventory wrote them).
    assert sets[1]['environment'] == {'NCCL_TOPO_FILE': '/etc/nccl/topology.xml', 'NCCL_NVLS_ENABLE': '0'}
    assert sets[6]['environment'] == {'NCCL_PROTO': 'Simple'}
    assert acceptance_nccl_sets({}, []) == [{'name': 'default', 'environment': {}}]


@pytest.mark.parametrize('tuned, words', [
    ({'pinned': {'NCCL_GRAPH_FILE': '/tmp/graph.xml'}}, 'acceptance_nccl_tuned_environments.pinned: NCCL_GRAPH_FILE must never be set'),
    ({'conf': {'NCCL_CONF_FILE': '/tmp/nccl.conf'}}, 'NCCL_CONF_FILE must never be set'),
    ({'odd': {'UCX_TLS': 'rc'}}, "acceptance_nccl_tuned_environments.odd: key 'UCX_TLS' is not an NCCL variable name"),
    ({'two': {'NCCL_ALGO': 'Ring\nNCCL_PROTO=LL'}}, 'NCCL_ALGO must be a single line'),
    ({'default': {'NCCL_ALGO': 'Ring'}}, 'reserved "default"'),
    ({'empty': {}}, 'acceptance_nccl_tuned_environments.empty must be a non-empty mapping'),
    ({'unset': {'NCCL_ALGO': None}}, 'a value must be set'),
    (['NCCL_ALGO=Ring'], 'must map set names to NCCL settings'),
])
def test_bad_sets_are_refused_naming_the_variable_and_the_set(tuned, words):
    with pytest.raises(AnsibleFilterError) as raised:
        acceptance_nccl_sets(tuned, [])
    assert words in str(raised.value)


def test_a_bad_sweep_axis_is_refused():
    with pytest.raises(AnsibleFilterError, match='one NCCL key with its list of values'):
        acceptance_nccl_sets({}, [{'NCCL_ALGO': ['Ring'], 'NCCL_PROTO': ['LL']}])
    with pytest.raises(AnsibleFilterError, match='set name .NCCL_ALGO=Ring. is used twice'):
        acceptance_nccl_sets({'NCCL_ALGO=Ring': {'NCCL_ALGO': 'Ring'}}, [{'NCCL_ALGO': ['Ring']}])


@pytest.mark.parametrize('record, words', [
    # A full real 8 x A100 table, then a crash at exit: the table must not pass.
    ({'rc': 139}, 'exit status 139 after a complete result table; last lines: '),
    ({'rc': 1, 'msg': 'non-zero return code'}, 'exit status 1 (non-zero return code) after a complete result table'),
    # No rc at all (the command timed out): the hook records 'none', which fails too.
    ({'rc': 'none', 'msg': 'The command action failed to execute in the expected time frame (3600)'}, 'exit status none'),
])
def test_a_non_zero_exit_status_fails_even_after_a_complete_table(record, words):
    text = nccl_tests_output('all_reduce_a100x8_single_node_default_sizes')
    assert acceptance_allreduce_result({'default': [{'text': text, 'rc': 0}]}, 'nccl_allreduce_single_node')['status'] == 'pass'
    result = acceptance_allreduce_result({'default': [dict(record, text=text)]}, 'nccl_allreduce_single_node')
    assert result['status'] == 'fail' and words in result['reason']
    # The last lines of the output are shown: here the closing lines of the table.
    assert result['reason'].endswith('# Out of bounds values : 0 OK | # Avg bus bandwidth : 66.2058 | #')


def test_an_infinite_busbw_fails_the_run_instead_of_passing_every_threshold():
    header = '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n'
    text = header + ' 1048576 262144 float sum -1 0.00 inf inf 0 12.10 86.66 151.65 0\n# Avg bus bandwidth    : inf\n'
    result = acceptance_allreduce_result({'default': [text]}, 'nccl_allreduce_single_node')
    assert result['status'] == 'fail' and 'no finite busbw at 1MiB' in result['reason']


def test_failed_out_of_bounds_values_fail_a_run_whose_rows_carry_no_count():
    # Before 2.13 the rows print a deviation (error column), the closing line is the only verdict on the values.
    header = ('#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n'
              '     1048576        262144   float     sum    45.10   23.25   23.25  0e+00    44.90   23.35   23.35  0e+00\n')
    good = acceptance_allreduce_result({'default': [header + '# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 23.3\n']},
                                       'nccl_allreduce_single_node')
    assert good['status'] == 'pass'
    bad = acceptance_allreduce_result({'default': [header + '# Out of bounds values : 248 FAILED\n# Avg bus bandwidth    : 23.3\n']},
                                      'nccl_allreduce_single_node')
    assert bad['status'] == 'fail' and bad['reason'] == 'nccl-tests: 248 out-of-bounds values (Out of bounds values ... FAILED)'


def ldd_output(case):
    with open(os.path.join(FIXTURES, 'ldd', case + '.txt'), encoding='utf-8') as handle:
        return handle.read()


NCCL_TESTS = '/opt/trainstack/nccl-tests/current/bin/all_reduce_perf'


def test_nccl_tests_command_lines_on_one_node_and_across_nodes():
    assert acceptance_nccl_tests_argv(NCCL_TESTS, 4096, 1) == [
        NCCL_TESTS, '-b', '1M', '-e', '4096M', '-f', '4', '-g', '1', '-c', '1']
    assert acceptance_nccl_tests_argv(NCCL_TESTS, '16384', 8)[4:] == ['16384M', '-f', '4', '-g', '8', '-c', '1']


@pytest.mark.parametrize('path, max_mib, gpus, words', [
    ('all_reduce_perf', 4096, 1, 'absolute path'),
    (None, 4096, 1, 'absolute path'),
    (NCCL_TESTS, 0, 1, 'at least 1 MiB'),
    (NCCL_TESTS, 4096, 0, 'one GPU per process'),
    (NCCL_TESTS, 'lots', 1, 'whole numbers'),
])
def test_nccl_tests_command_lines_refuse_what_cannot_run(path, max_mib, gpus, words):
    with pytest.raises(AnsibleFilterError, match=words):
        acceptance_nccl_tests_argv(path, max_mib, gpus)


@pytest.mark.parametrize('ldd, gpus, expected', [
    # nccl-tests #107: libmpi.so.40 => /usr/local/lib/libmpi.so.40 - an MPI build whose libraries all resolve.
    ({'rc': 0, 'stdout': ldd_output('all_reduce_perf_mpi1_aws'), 'stderr': ''}, 8, ''),
    # The role's MPI=0 build on the H200 host: libcudart and libnccl, no libmpi.
    ({'rc': 0, 'stdout': ldd_output('all_reduce_perf_mpi0_h200'), 'stderr': ''}, 1,
     'nccl-tests at %s is built without MPI (MPI=0): srun cannot join its ranks into one test' % NCCL_TESTS),
    # Four Open MPI libraries that do not resolve (AceCAST's guide), named in ldd's order.
    ({'rc': 0, 'stdout': ldd_output('acecast_mpi_not_found'), 'stderr': ''}, 8,
     'nccl-tests at %s cannot load libmpi_usempif08.so.40, libmpi_usempi_ignore_tkr.so.40, libmpi_mpifh.so.40, libmpi.so.40'
     % NCCL_TESTS),
    # glibc's ldd on a missing file: exit 1 and its own words on stderr.
    ({'rc': 1, 'stdout': '', 'stderr': 'ldd: %s: No such file or directory' % NCCL_TESTS}, 8,
     'nccl-tests not usable at %s (ldd: %s: No such file or directory)' % (NCCL_TESTS, NCCL_TESTS)),
    # No ldd on the node: the command module's message.
    ({'rc': 2, 'stdout': '', 'stderr': '', 'msg': "[Errno 2] No such file or directory: b'ldd'"}, 8,
     "nccl-tests not usable at %s ([Errno 2] No such file or directory: b'ldd')" % NCCL_TESTS),
    # A node without GPUs never hosts a rank, whatever its build.
    ({'rc': 0, 'stdout': ldd_output('all_reduce_perf_mpi1_aws'), 'stderr': ''}, 0,
     'no GPU on this node: nccl-tests runs one rank per GPU'),
    (None, 8, 'nccl-tests was not looked for at %s' % NCCL_TESTS),
])
def test_which_nodes_can_host_nccl_tests_ranks(ldd, gpus, expected):
    assert acceptance_nccl_tests_mpi_problem(ldd, NCCL_TESTS, gpus) == expected


MPI0 = 'nccl-tests at %s is built without MPI (MPI=0): srun cannot join its ranks into one test' % NCCL_TESTS


@pytest.mark.parametrize('problems, tool, expected', [
    ({'node1': '', 'node2': ''}, 'auto',
     {'tool': 'nccl-tests', 'reason': 'every node has an MPI build of nccl-tests and GPUs', 'problems': {}}),
    # One MPI=0 node turns the whole job to the benchmark in auto: one tool per job, the node that decided named.
    ({'node1': '', 'node2': MPI0}, 'auto',
     {'tool': 'pytorch', 'reason': 'the pytorch benchmark, as node2 cannot run nccl-tests: ' + MPI0, 'problems': {}}),
    # Forced: the node is left out with its reason (it FAILs alone), the others run nccl-tests.
    ({'node1': '', 'node2': MPI0}, 'nccl-tests',
     {'tool': 'nccl-tests', 'reason': 'acceptance_allreduce_multi_node_tool is nccl-tests', 'problems': {'node2': MPI0}}),
    ({'node1': '', 'node2': ''}, 'pytorch',
     {'tool': 'pytorch', 'reason': 'acceptance_allreduce_multi_node_tool is pytorch', 'problems': {}}),
    ({}, 'auto', {'tool': 'pytorch', 'reason': 'no node to look at', 'problems': {}}),
])
def test_the_tool_across_nodes(problems, tool, expected):
    assert acceptance_allreduce_multi_tool(problems, tool) == expected


def test_an_unknown_tool_is_refused_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match='acceptance_allreduce_multi_node_tool must be one of auto, nccl-tests, pytorch'):
        acceptance_allreduce_multi_tool({'node1': ''}, 'mpirun')


def test_nccl_tests_through_srun_across_two_nodes_is_judged_with_its_hosts():
    # CSCS Alps: srun, one GH200 on each of nid007106 and nid007109, 8 sizes; the last row's out-of-place busbw read
    # by hand from the fixture (the hook's sizes stop where the run's do).
    run = nccl_tests_output('all_reduce_gh200_2node_sweep')
    result = acceptance_allreduce_result({'default': [run]}, 'nccl_allreduce_multi_node', ['nid007106', 'nid007109'])
    assert result['status'] == 'pass' and result['tool'] == 'nccl-tests'
    assert result['hosts'] == ['nid007106', 'nid007109']
    # Two "#  Rank" lines, one per node; 8 rows from 1 MiB; the 128 MiB row's out-of-place busbw is 22.86.
    assert result['reason'] == 'nccl-tests all_reduce_perf, 2 ranks on nid007106, nid007109: 8 sizes, busbw 22.86 GB/s at 128MiB'
    missing = acceptance_allreduce_result({'default': [run]}, 'nccl_allreduce_multi_node', ['nid007106', 'nid007110'])
    assert missing['status'] == 'fail' and missing['reason'] == 'no rank ran on nid007110'
