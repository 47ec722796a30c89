# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DDP smoke training: a small MLP learns a fixed random teacher network on synthetic data.

Started by torchrun (RANK, WORLD_SIZE, LOCAL_RANK in the environment). Backend nccl where CUDA is
available, gloo otherwise. At the end rank 0 prints one line `TRAINSTACK_DDP_RESULT {json}` with the
loss at the start and end, whether the parameters are bit-identical on every rank and samples/s per
rank and in total; the job exits 1 when the loss did not decrease or parameters differ.
`--deepspeed` trains the same model with DeepSpeed ZeRO stage 1 (where DeepSpeed is installed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

MARKER = 'TRAINSTACK_DDP_RESULT '
WINDOW = 20
HOST_BYTES = 64


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=300)
    parser.add_argument('--batch', type=int, default=128, help='samples per rank and step')
    parser.add_argument('--width', type=int, default=256)
    parser.add_argument('--features', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.02)
    parser.add_argument('--warmup', type=int, default=10, help='steps not timed')
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--deepspeed', action='store_true', help='DeepSpeed ZeRO-1 instead of DDP')
    parser.add_argument('--seed', type=int, default=1234)
    return parser.parse_args(argv)


def mlp(features, width):
    return nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 1))


def finite(value):
    """A loss for JSON: rounded, or None where training diverged (NaN, inf are not JSON)."""
    value = float(value)
    return round(value, 6) if math.isfinite(value) else None


def gather_ranks(rank, local_rank, rate, device, world):
    """Every rank's host and samples/s, as tensors (all_gather_object needs NumPy, which torch does not)."""
    name = socket.gethostname().encode()[:HOST_BYTES]
    mine = torch.zeros(HOST_BYTES + 2, dtype=torch.float64, device=device)
    mine[:len(name)] = torch.tensor(list(name), dtype=torch.float64)
    mine[HOST_BYTES], mine[HOST_BYTES + 1] = rate, local_rank
    every = [torch.zeros_like(mine) for _rank in range(world)]
    dist.all_gather(every, mine)
    ranks = []
    for number, row in enumerate(every):
        values = row.cpu().tolist()
        host = bytes(int(value) for value in values[:HOST_BYTES] if value).decode(errors='replace')
        ranks.append({'rank': number, 'host': host, 'local_rank': int(values[HOST_BYTES + 1]),
                      'samples_per_s': round(values[HOST_BYTES], 1)})
    return ranks


def main(argv=None):
    args = arguments(argv)
    backend = args.backend
    if backend == 'auto':
        backend = 'nccl' if torch.cuda.is_available() else 'gloo'
    local_rank = int(os.environ.get('LOCAL_RANK', 0))
    if backend == 'nccl':
        torch.cuda.set_device(local_rank)
        device = torch.device('cuda', local_rank)
    else:
        device = torch.device('cpu')
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    # The teacher and the initial weights are the same on every rank; the data differs per rank.
    torch.manual_seed(args.seed)
    teacher = mlp(args.features, 32).to(device)
    model = mlp(args.features, args.width).to(device)
    data = torch.Generator(device=device)
    data.manual_seed(args.seed + 1 + rank)

    if args.deepspeed:
        import deepspeed  # pylint: disable=import-outside-toplevel
        config = {'train_micro_batch_size_per_gpu': args.batch, 'gradient_accumulation_steps': 1,
                  'optimizer': {'type': 'SGD', 'params': {'lr': args.lr, 'momentum': 0.9}},
                  'zero_optimization': {'stage': 1},
                  # DeepSpeed refuses a client optimizer it has not tested with ZeRO (SGD here) unless told.
                  'zero_allow_untested_optimizer': True}
        engine = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config,
                                      dist_init_required=False)[0]
        step_model = engine

        def step(loss):
            engine.backward(loss)
            engine.step()
    else:
        step_model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if backend == 'nccl' else None)
        optimizer = torch.optim.SGD(step_model.parameters(), lr=args.lr, momentum=0.9)

        def step(loss):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    losses = []
    started = None
    for number in range(args.steps):
        if number == args.warmup:
            if device.type == 'cuda':
                torch.cuda.synchronize()
            started = time.perf_counter()
        inputs = torch.randn(args.batch, args.features, device=device, generator=data)
        with torch.no_grad():
            targets = teacher(inputs)
        loss = nn.functional.mse_loss(step_model(inputs), targets)
        step(loss)
        losses.append(loss.detach())
    if device.type == 'cuda':
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - (started or time.perf_counter())
    timed_steps = max(0, args.steps - args.warmup)
    rate = args.batch * timed_steps / elapsed if elapsed > 0 else 0.0

    # Loss over every rank's data, first and last WINDOW steps.
    window = min(WINDOW, max(1, len(losses) // 4))
    summary = torch.stack([torch.stack(losses[:window]).mean(), torch.stack(losses[-window:]).mean()]).float()
    dist.all_reduce(summary)
    summary /= world
    # Bit-identical parameters: every rank compares its bytes with rank 0's.
    flat = torch.cat([param.detach().reshape(-1) for param in model.parameters()]).contiguous()
    reference = flat.clone()
    dist.broadcast(reference, 0)
    same = torch.tensor([1 if torch.equal(flat.view(torch.int32), reference.view(torch.int32)) else 0],
                        device=device)
    dist.all_reduce(same, op=dist.ReduceOp.MIN)
    ranks = gather_ranks(rank, local_rank, rate, device, world)
    nccl = None
    if backend == 'nccl':
        nccl = '.'.join(str(part) for part in torch.cuda.nccl.version())
    result = {
        'schema': 1,
        'backend': backend,
        'engine': 'deepspeed-zero1' if args.deepspeed else 'ddp',
        'world_size': world,
        'hosts': sorted({item['host'] for item in ranks}),
        'torch': torch.__version__,
        'nccl': nccl,
        'steps': args.steps,
        'batch_per_rank': args.batch,
        'loss_first': finite(summary[0]),
        'loss_last': finite(summary[1]),
        'loss_decreased': bool(summary[1] < summary[0]),
        'params_identical': bool(same.item() == 1),
        'parameters': flat.numel(),
        'elapsed_s': round(elapsed, 3),
        'ranks': ranks,
        'samples_per_s_total': round(sum(item['samples_per_s'] for item in ranks), 1),
    }
    if rank == 0:
        print(MARKER + json.dumps(result, sort_keys=True, allow_nan=False), flush=True)
    dist.destroy_process_group()
    return 0 if result['loss_decreased'] and result['params_identical'] else 1


if __name__ == '__main__':
    sys.exit(main())
