# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The all-reduce benchmark's arithmetic and output format (roles/pytorch/files/allreduce_bench.py), without torch.

The benchmark itself runs in molecule slurm_cluster (gloo across two containers, verify_acceptance.yml) and on a
GPU host through the device layer (tests/device/run validate); here: its sizes, busbw and that the parser reads what it prints.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._torch_allreduce import parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPEC = importlib.util.spec_from_file_location('allreduce_bench', os.path.join(ROOT, 'roles', 'pytorch', 'files', 'allreduce_bench.py'))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


@pytest.mark.parametrize('low, high, sizes', [
    (1, 64, [1, 4, 16, 64]),  # the CPU default
    (1, 4096, [1, 4, 16, 64, 256, 1024, 4096]),  # the GPU default
    (1, 16384, [1, 4, 16, 64, 256, 1024, 4096, 16384]),  # the 16GiB thresholds of 8-GPU nodes
    (16, 100, [16, 64]),
    (1, 2, [1]),
    (3, 3, [3]),  # no listed size in range: the one asked for
])
def test_sizes(low, high, sizes):
    assert bench.sizes_mib(low, high) == sizes


@pytest.mark.parametrize('world, factor', [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_is_nccl_tests_definition(world, factor):
    assert bench.bus_bandwidth(100.0, world) == pytest.approx(100.0 * factor)


def test_a_result_line_reads_back_through_the_parser():
    # 1 GiB in 3291.8 us: algbw 2^30 / 3291.8e-6 / 1e9 = 326.19 GB/s; 8 ranks: busbw * 1.75 = 570.83
    header = 'torch 2.13.0 backend nccl world_size 8 nccl 2.27.5 hosts gpu-01'
    line = bench.result_line(1024, 3291.8e-6, 8)
    assert line == 'size_MiB=1024 time_us=3291.8 algbw_GBs=326.19 busbw_GBs=570.83'
    parsed = parse(header + '\n' + line + '\n')
    assert parsed['rows'] == [{'bytes': 1024 * 1024 * 1024, 'time_us': 3291.8, 'algbw': 326.19, 'busbw': 570.83}]
    assert (parsed['backend'], parsed['world_size'], parsed['hosts']) == ('nccl', 8, ['gpu-01'])


def test_arguments_leave_the_defaults_to_the_backend():
    args = bench.arguments([])
    assert (args.max_mib, args.iterations, args.local_ranks, args.allow_one_rank, args.backend) == (None, None, None, False, 'auto')
    assert bench.DEFAULT_MAX_MIB == {'nccl': 4096, 'gloo': 64}
    args = bench.arguments(['--max-mib', '16384', '--allow-one-rank', '--backend', 'gloo'])
    assert (args.max_mib, args.allow_one_rank, args.backend) == (16384, True, 'gloo')
