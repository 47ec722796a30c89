#!/usr/bin/env python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""All-reduce bus bandwidth through PyTorch/NCCL on every GPU of this host.

Usage: gpu_allreduce.py [max_MiB]   (NCCL_* settings come from the environment;
TRAINSTACK_ALLOW_ONE_GPU=1 runs on a single GPU too, where busbw is 0 by definition)
Rank 0 prints one line per size:
  size_MiB=1024 time_us=3291.8 algbw_GBs=326.2 busbw_GBs=326.2
busbw = algbw * 2 (n - 1) / n (nccl-tests' definition), so busbw = algbw for 2 GPUs.
"""

from __future__ import annotations

import os
import socket
import sys
import time

SIZES_MIB = (1, 4, 16, 64, 256, 1024, 2048, 4096)
WARMUP = 5
ITERATIONS = 20


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def worker(rank, world_size, port, max_mib):
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group('nccl', rank=rank, world_size=world_size, device_id=torch.device('cuda', rank))
    lines = []
    for mib in (size for size in SIZES_MIB if size <= max_mib):
        tensor = torch.ones(mib * 1024 * 1024 // 4, dtype=torch.float32, device='cuda')
        for _warmup in range(WARMUP):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _iteration in range(ITERATIONS):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / ITERATIONS
        algbw = tensor.numel() * 4 / seconds / 1e9
        busbw = algbw * 2 * (world_size - 1) / world_size
        lines.append('size_MiB=%d time_us=%.1f algbw_GBs=%.1f busbw_GBs=%.1f' % (mib, seconds * 1e6, algbw, busbw))
        del tensor
        torch.cuda.empty_cache()
    if rank == 0:
        print('\n'.join(lines), flush=True)
    dist.destroy_process_group()


def main():
    import torch
    import torch.multiprocessing as mp

    max_mib = int(sys.argv[1]) if len(sys.argv) > 1 else SIZES_MIB[-1]
    world_size = torch.cuda.device_count()
    if world_size < (1 if os.environ.get('TRAINSTACK_ALLOW_ONE_GPU') == '1' else 2):
        print('need at least 2 GPUs (or TRAINSTACK_ALLOW_ONE_GPU=1), found %d' % world_size, file=sys.stderr)
        return 2
    print('torch %s nccl %s gpus %d' % (torch.__version__, '.'.join(map(str, torch.cuda.nccl.version())), world_size), flush=True)
    mp.spawn(worker, args=(world_size, free_port(), max_mib), nprocs=world_size, join=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
