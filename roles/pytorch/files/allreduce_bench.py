# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""All-reduce bus bandwidth through torch.distributed: nccl on GPUs, gloo on CPU-only nodes.

    python allreduce_bench.py [--max-mib N]               # one node: one rank per local GPU (CPU: --local-ranks, 2)
    trainstack-torchrun run -- python allreduce_bench.py  # across nodes: rank and world from torchrun

NCCL_* settings come from the environment. Rank 0 prints a header and one line per message size:
  torch 2.13.0 backend nccl world_size 8 nccl 2.27.5 hosts gpu-01
  size_MiB=1024 time_us=3291.8 algbw_GBs=326.2 busbw_GBs=326.2
busbw = algbw * 2 (n - 1) / n (nccl-tests' definition), so busbw = algbw for 2 ranks. Every size is
checked once (each rank contributes rank + 1); a wrong sum prints `ERROR ...` and exits 1. The
lines are read by plugins/module_utils/_torch_allreduce.py.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

SIZES_MIB = (1, 4, 16, 64, 256, 1024, 4096, 16384)
DEFAULT_MAX_MIB = {'nccl': 4096, 'gloo': 64}
DEFAULT_ITERATIONS = {'nccl': 20, 'gloo': 5}
WARMUP = 3
HOST_BYTES = 64


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--max-mib', type=int, help='largest message in MiB (default 4096 on GPUs, 64 on CPU)')
    parser.add_argument('--min-mib', type=int, default=1, help='smallest message in MiB')
    parser.add_argument('--iterations', type=int, help='timed all-reduces per size (default 20 on GPUs, 5 on CPU)')
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--local-ranks', type=int, help='ranks on this node without torchrun (default: GPUs, or 2 on CPU)')
    parser.add_argument('--allow-one-rank', action='store_true', help='run with one rank (busbw is 0 by definition)')
    return parser.parse_args(argv)


def sizes_mib(min_mib, max_mib):
    return [size for size in SIZES_MIB if min_mib <= size <= max_mib] or [max_mib]


def bus_bandwidth(algbw, world_size):
    """nccl-tests' busbw for all-reduce: algbw * 2 (n - 1) / n."""
    return algbw * 2 * (world_size - 1) / world_size


def result_line(mib, seconds, world_size):
    algbw = mib * 1024 * 1024 / seconds / 1e9
    return 'size_MiB=%d time_us=%.1f algbw_GBs=%.2f busbw_GBs=%.2f' % (mib, seconds * 1e6, algbw, bus_bandwidth(algbw, world_size))


def hosts_of_ranks(dist, torch, device, world):
    """Every rank's host name, through a tensor all-gather (all_gather_object needs NumPy)."""
    name = socket.gethostname().encode()[:HOST_BYTES]
    mine = torch.zeros(HOST_BYTES, dtype=torch.int32, device=device)
    mine[:len(name)] = torch.tensor(list(name), dtype=torch.int32)
    every = [torch.zeros_like(mine) for _rank in range(world)]
    dist.all_gather(every, mine)
    return sorted({bytes(value for value in row.cpu().tolist() if value).decode(errors='replace') for row in every})


def measure(args, backend, device):
    """The benchmark on an initialised process group; rank 0 prints. 0, or 1 when a sum was wrong."""
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel

    rank, world = dist.get_rank(), dist.get_world_size()
    hosts = hosts_of_ranks(dist, torch, device, world)
    if rank == 0:
        nccl = '.'.join(map(str, torch.cuda.nccl.version())) if backend == 'nccl' else 'none'
        print('torch %s backend %s world_size %d nccl %s hosts %s' % (torch.__version__, backend, world, nccl, ','.join(hosts)),
              flush=True)
    iterations = args.iterations or DEFAULT_ITERATIONS[backend]
    status = 0
    for mib in sizes_mib(args.min_mib, args.max_mib or DEFAULT_MAX_MIB[backend]):
        tensor = torch.full((mib * 1024 * 1024 // 4,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(tensor)
        # Small whole numbers: the float32 sum is exact.
        expected = world * (world + 1) / 2
        wrong = torch.tensor([int((tensor != expected).sum().item())], device=device)
        dist.all_reduce(wrong)
        if wrong.item():
            if rank == 0:
                print('ERROR all-reduce sum wrong at size_MiB %d: %d values differ from %g' % (mib, wrong.item(), expected), flush=True)
            status = 1
            break
        tensor.zero_()
        for _warmup in range(WARMUP):
            dist.all_reduce(tensor)
        if backend == 'nccl':
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _iteration in range(iterations):
            dist.all_reduce(tensor)
        if backend == 'nccl':
            torch.cuda.synchronize()
        # The slowest rank's time is the collective's.
        elapsed = torch.tensor([(time.perf_counter() - start) / iterations], dtype=torch.float64, device=device)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(result_line(mib, elapsed.item(), world), flush=True)
        del tensor
        if backend == 'nccl':
            torch.cuda.empty_cache()
    return status


def choose_backend(args):
    import torch  # pylint: disable=import-outside-toplevel
    if args.backend != 'auto':
        return args.backend
    return 'nccl' if torch.cuda.is_available() else 'gloo'


def run_rank(local_rank, args, backend):
    """One rank: the process group from the environment (torchrun, or the local spawn's MASTER_*)."""
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel

    if backend == 'nccl':
        torch.cuda.set_device(local_rank)
        device = torch.device('cuda', local_rank)
        dist.init_process_group('nccl', device_id=device)
    else:
        device = torch.device('cpu')
        dist.init_process_group('gloo')
    try:
        return measure(args, backend, device)
    finally:
        dist.destroy_process_group()


def spawned_rank(local_rank, world, port, args, backend):
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port), RANK=str(local_rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(local_rank))
    if run_rank(local_rank, args, backend):
        sys.exit(1)


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def main(argv=None):
    args = arguments(argv)
    backend = choose_backend(args)
    if 'RANK' in os.environ and 'WORLD_SIZE' in os.environ:
        return run_rank(int(os.environ.get('LOCAL_RANK', 0)), args, backend)
    import torch  # pylint: disable=import-outside-toplevel
    import torch.multiprocessing as mp  # pylint: disable=import-outside-toplevel

    world = args.local_ranks or (torch.cuda.device_count() if backend == 'nccl' else 2)
    if world < (1 if args.allow_one_rank else 2):
        print('need at least 2 ranks (or --allow-one-rank), found %d %s' % (world, 'GPUs' if backend == 'nccl' else 'ranks'),
              file=sys.stderr)
        return 2
    try:
        mp.spawn(spawned_rank, args=(world, free_port(), args, backend), nprocs=world, join=True)
    except mp.ProcessExitedException:
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
