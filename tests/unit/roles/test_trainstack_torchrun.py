# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launcher's argument logic (roles/pytorch/files/trainstack_torchrun.py), without Slurm or torch."""

from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPEC = importlib.util.spec_from_file_location('trainstack_torchrun', os.path.join(ROOT, 'roles', 'pytorch', 'files',
                                                                                  'trainstack_torchrun.py'))
launcher = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(launcher)

# Two H100 on two NUMA nodes, as topology_facts reports them (local_cpulist from sysfs).
CONFIG = {'gpus': [{'index': 0, 'numa_node': 0, 'cpulist': '0-3,8-11'}, {'index': 1, 'numa_node': 1, 'cpulist': '4-7,12-15'}]}


def test_parse_nccl_conf_and_environment_wins():
    text = '# written by trainstack\nNCCL_SOCKET_IFNAME=eth0\n\nNCCL_IB_HCA==mlx5_0:1\nNCCL_TOPO_FILE = /etc/nccl/topo.xml\n'
    conf = launcher.parse_nccl_conf(text)
    assert conf == {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_IB_HCA': '=mlx5_0:1', 'NCCL_TOPO_FILE': '/etc/nccl/topo.xml'}
    assert launcher.nccl_environment(conf, {'NCCL_SOCKET_IFNAME': 'ib0'}) == {
        'NCCL_IB_HCA': '=mlx5_0:1', 'NCCL_TOPO_FILE': '/etc/nccl/topo.xml'}


@pytest.mark.parametrize('environ, affinity, expected', [
    ({'SLURM_CPUS_PER_TASK': '16', 'SLURM_CPUS_ON_NODE': '64'}, 2, 16),
    ({'SLURM_CPUS_ON_NODE': '64'}, 2, 64),
    ({'SLURM_CPUS_ON_NODE': '2(x2)'}, 8, 2),
    ({}, 12, 12),
    ({'SLURM_CPUS_PER_TASK': 'junk'}, 0, 1),
])
def test_task_cpus(environ, affinity, expected):
    assert launcher.task_cpus(environ, affinity) == expected


@pytest.mark.parametrize('environ, config, expected', [
    ({'TRAINSTACK_NPROC_PER_NODE': '3', 'SLURM_GPUS_ON_NODE': '8'}, CONFIG, 3),
    ({'SLURM_JOB_ID': '7', 'SLURM_GPUS_ON_NODE': '8'}, CONFIG, 8),
    ({'SLURM_JOB_ID': '7', 'CUDA_VISIBLE_DEVICES': '2,3'}, CONFIG, 2),
    # A job on a GPU node that asked for no GPU: CPU, one rank.
    ({'SLURM_JOB_ID': '7'}, CONFIG, 1),
    ({'SLURM_JOB_ID': '7', 'CUDA_VISIBLE_DEVICES': ''}, CONFIG, 1),
    # Outside Slurm the probed GPUs stand in for the allocation.
    ({}, CONFIG, 2),
    ({}, {}, 1),
])
def test_nproc_per_node(environ, config, expected):
    assert launcher.nproc_per_node(environ, config) == expected


@pytest.mark.parametrize('cpus, nproc, expected', [(64, 8, 8), (2, 1, 2), (4, 8, 1), (10, 3, 3)])
def test_omp_threads(cpus, nproc, expected):
    assert launcher.omp_threads(cpus, nproc) == expected


def test_parse_cpulist():
    assert launcher.parse_cpulist('0-3,8,10-11\n') == [0, 1, 2, 3, 8, 10, 11]
    assert launcher.parse_cpulist('') == []


# The same two GPUs with what the probe adds for the launcher: PCI bus id, UUID (from nvidia-smi) and the driver's
# minor number (/dev/nvidiaN).
HOST = {'gpus': [{'index': 0, 'busid': '00000000:1B:00.0', 'uuid': 'GPU-6e8a2c1d', 'minor': 0, 'numa_node': 0,
                  'cpulist': '0-3,8-11'},
                 {'index': 1, 'busid': '00000000:9A:00.0', 'uuid': 'GPU-b71f0e44', 'minor': 1, 'numa_node': 1,
                  'cpulist': '4-7,12-15'}]}
NUMA0, NUMA1 = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]


def cgroup(*allowed_minors):
    """device_state as Slurm's device cgroup answers inside a job that holds these GPUs."""
    return lambda path: 'ok' if int(path.rsplit('nvidia', 1)[1]) in allowed_minors else 'denied'


@pytest.mark.parametrize('local_rank, environ, state, expected', [
    # No ConstrainDevices: the job may open every GPU and CUDA_VISIBLE_DEVICES holds host ordinals.
    (0, {'CUDA_VISIBLE_DEVICES': '0,1'}, cgroup(0, 1), NUMA0),
    (1, {'CUDA_VISIBLE_DEVICES': '0,1'}, cgroup(0, 1), NUMA1),
    (0, {'CUDA_VISIBLE_DEVICES': '1'}, cgroup(0, 1), NUMA1),
    # ConstrainDevices, the job holds host GPU 1: Slurm 22.05 sets CUDA_VISIBLE_DEVICES=0 (seen in the container lab,
    # SLURM_JOB_GPUS=1); rank 0 is host GPU 1 on NUMA node 1, not GPU 0.
    (0, {'CUDA_VISIBLE_DEVICES': '0', 'SLURM_JOB_GPUS': '1'}, cgroup(1), NUMA1),
    (0, {'CUDA_VISIBLE_DEVICES': '0,1'}, cgroup(0, 1), NUMA0),
    # UUIDs in CUDA_VISIBLE_DEVICES (containers, newer Slurm): matched by UUID whatever the cgroup shows.
    (0, {'CUDA_VISIBLE_DEVICES': 'GPU-b71f0e44'}, cgroup(1), NUMA1),
    # No CUDA_VISIBLE_DEVICES (outside Slurm): CUDA's ordinals over the GPUs the process may open.
    (1, {}, cgroup(0, 1), NUMA1),
    # Unknown UUID, an ordinal past the job's GPUs, a rank without a GPU: no binding.
    (0, {'CUDA_VISIBLE_DEVICES': 'GPU-1b2c'}, cgroup(0, 1), None),
    (0, {'CUDA_VISIBLE_DEVICES': '1'}, cgroup(1), None),
    (2, {'CUDA_VISIBLE_DEVICES': '0,1'}, cgroup(0, 1), None),
])
def test_rank_gpu_and_its_cpus(local_rank, environ, state, expected):
    gpu = launcher.rank_gpu(local_rank, environ, HOST, state)
    assert launcher.rank_cpus(gpu, list(range(16))) == expected


def test_cuda_order_is_pci_order_and_the_binding_stays_in_the_job_s_cpus():
    # Listed out of order, bus ids in two spellings: CUDA (CUDA_DEVICE_ORDER=PCI_BUS_ID) numbers 1b before 9a.
    shuffled = {'gpus': [dict(HOST['gpus'][1], busid='0000:9a:00.0'), HOST['gpus'][0]]}
    assert [gpu['index'] for gpu in launcher.cuda_gpus(shuffled, cgroup(0, 1))] == [0, 1]
    gpu = launcher.rank_gpu(0, {'CUDA_VISIBLE_DEVICES': '0'}, HOST, cgroup(0, 1))
    assert launcher.rank_cpus(gpu, [2, 3, 4, 5]) == [2, 3]
    assert launcher.rank_cpus(gpu, [4, 5]) is None
    # A configuration of an older launcher (no minor numbers): every GPU counts as open, index order.
    assert launcher.rank_cpus(launcher.rank_gpu(1, {'CUDA_VISIBLE_DEVICES': '0,1'}, CONFIG), list(range(16))) == NUMA1
    assert launcher.rank_gpu(0, {}, {'gpus': []}) is None


def test_device_state_tells_a_cgroup_refusal_from_a_device_without_a_driver(tmp_path):
    # /dev/null opens; a missing file is absent. EPERM (the cgroup) vs ENXIO (no driver) was seen in the lab with
    # Slurm's ConstrainDevices on mknod'ed /dev/nvidia0 and /dev/nvidia1: the allocated one gave ENXIO, the other EPERM.
    assert launcher.device_state('/dev/null') == 'ok'
    assert launcher.device_state(str(tmp_path / 'nvidia9')) == 'absent'


def test_first_host_and_job_port():
    assert launcher.first_host('gpu07\ngpu08\n') == 'gpu07'
    with pytest.raises(launcher.LaunchError):
        launcher.first_host('\n')
    assert launcher.job_port('12345') == 29500 + 12345 % 2000
    assert launcher.job_port(None) == 29500


def test_rendezvous_from_slurm():
    environ = {'MASTER_ADDR': 'gpu07', 'MASTER_PORT': '41000', 'SLURM_NNODES': '4', 'SLURM_NODEID': '2'}
    assert launcher.rendezvous(environ) == ('gpu07', 41000, 4, 2)
    assert launcher.rendezvous({'SLURM_JOB_NUM_NODES': '2'}, master='n1') == ('n1', 29500, 2, 0)
    assert launcher.rendezvous({'MASTER_ADDR': 'a', 'TRAINSTACK_RDZV_HOST': 'b', 'TRAINSTACK_RDZV_PORT': '1'})[:2] == ('b', 1)
    with pytest.raises(launcher.LaunchError, match='no rendezvous host'):
        launcher.rendezvous({})


def test_torchrun_argv():
    argv = launcher.torchrun_argv('/venv/bin/torchrun', 'gpu07', 41000, 2, 1, 8, 60, ['python', 'train.py', '--x'],
                                  python='/venv/bin/python', launcher='/usr/local/bin/trainstack-torchrun')
    assert argv == ['/venv/bin/torchrun', '--nnodes=2', '--nproc-per-node=8', '--node-rank=1', '--master-addr=gpu07',
                    '--master-port=41000', '--rdzv-conf=timeout=60', '--max-restarts=0', '--no-python',
                    '/venv/bin/python', '/usr/local/bin/trainstack-torchrun', 'bind', '--', 'python', 'train.py', '--x']


def test_wait_reachable_times_out_with_the_last_error():
    now = [0.0]
    calls = []

    def refuse():
        calls.append(now[0])
        raise ConnectionRefusedError(111, 'Connection refused')

    def sleep(seconds):
        now[0] += seconds

    error = launcher.wait_reachable('gpu07', 41000, 5, connect=refuse, clock=lambda: now[0], sleep=sleep)
    assert isinstance(error, ConnectionRefusedError)
    assert calls == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert launcher.wait_reachable('gpu07', 41000, 5, connect=lambda: None, clock=lambda: now[0], sleep=sleep) is None


def test_run_fails_fast_when_the_rendezvous_is_unreachable(tmp_path, capsys):
    """A node other than the first gives up after TRAINSTACK_RDZV_TIMEOUT with a message and exit 3."""
    environ = {'SLURM_NODEID': '1', 'SLURM_NNODES': '2', 'MASTER_ADDR': '127.0.0.1', 'MASTER_PORT': '9',
               'TRAINSTACK_RDZV_TIMEOUT': '1', 'TRAINSTACK_LAUNCH_CONFIG': str(tmp_path / 'none.json')}
    assert launcher.main(['run', '--', 'true'], environ) == launcher.EXIT_RENDEZVOUS
    assert 'cannot reach the rendezvous 127.0.0.1:9 within 1 s' in capsys.readouterr().err


def test_usage_errors(capsys):
    assert launcher.main([], {}) == launcher.EXIT_USAGE
    assert launcher.main(['run'], {'TRAINSTACK_LAUNCH_CONFIG': '/nonexistent'}) == launcher.EXIT_USAGE
    assert 'nothing to run' in capsys.readouterr().err
