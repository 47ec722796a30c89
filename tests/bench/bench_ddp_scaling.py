# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Weak scaling of the DDP smoke job from 1 to 2 lab nodes through Slurm (goal >= 0.9; printed, never asserted).

Needs a lab with the pytorch role applied (scripts/lab up 2; site.yml with the pytorch group, see
docs/benchmarks/README.md). Run from the repository root:

    python tests/bench/bench_ddp_scaling.py [--prefix ts] [--steps 300] [--batch 128] [--repeats 3] [--threads 1]

Each repeat submits the shipped sbatch template with --nodes=1 and --nodes=2 (one gloo rank per node,
same batch per rank, --batch samples) and reads samples/s from the job's JSON. Weak-scaling efficiency =
total samples/s on 2 nodes / (2 x samples/s on 1 node), median over the repeats. --threads sets
OMP_NUM_THREADS per rank: lab containers share the host's cores, so 1 keeps the two nodes from
competing for the same cores. Without a lab it prints `skipped` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'collections'))

from ansible_collections.trainstack.cluster.plugins.filter.pytorch import pytorch_ddp_result  # noqa: E402

TEMPLATE = '/usr/local/share/trainstack/pytorch/ddp_smoke.sbatch'


def docker(*argv, stdin=None):
    return subprocess.run(['docker', *argv], input=stdin, capture_output=True, text=True, check=False)


def run_job(prefix, nodes, steps, threads, script, batch):
    submitted = docker('exec', '-i', prefix + '-ctl', 'sbatch', '--parsable', '--wait', '--nodes=%d' % nodes,
                       '--output=/var/tmp/bench-ddp-%j.out', '--export=ALL,OMP_NUM_THREADS=%d' % threads,
                       '/dev/stdin', '--steps', str(steps), '--batch', str(batch), stdin=script)
    job = submitted.stdout.strip().splitlines()[0] if submitted.stdout.strip() else '?'
    output = docker('exec', prefix + '-node1', 'cat', '/var/tmp/bench-ddp-%s.out' % job).stdout
    checked = pytorch_ddp_result(output, world_size=nodes)
    if not checked['ok']:
        raise SystemExit('job %s on %d node(s) failed: %s\n%s' % (job, nodes, checked['problems'], output[-2000:]))
    return checked['result']


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--prefix', default=os.environ.get('LAB_PREFIX', 'ts'))
    parser.add_argument('--steps', type=int, default=300)
    # The smoke job's default batch (128) makes a step mostly gradient exchange: weak scaling wants the
    # compute per rank to dominate, as a real training step does.
    parser.add_argument('--batch', type=int, default=128, help='samples per rank and step')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    script = docker('exec', args.prefix + '-node1', 'cat', TEMPLATE)
    if script.returncode != 0:
        print('bench_ddp_scaling: skipped (no lab %s-* with the pytorch role: %s)' % (args.prefix, script.stderr.strip()[:200]))
        return 0
    rows = []
    for _repeat in range(args.repeats):
        one = run_job(args.prefix, 1, args.steps, args.threads, script.stdout, args.batch)
        two = run_job(args.prefix, 2, args.steps, args.threads, script.stdout, args.batch)
        rows.append({'one_node': one['samples_per_s_total'], 'two_nodes': two['samples_per_s_total'],
                     'two_nodes_per_rank': [rank['samples_per_s'] for rank in two['ranks']],
                     'efficiency': round(two['samples_per_s_total'] / (2 * one['samples_per_s_total']), 3)})
        print(json.dumps(rows[-1]), flush=True)
    summary = {'benchmark': 'ddp_weak_scaling_1_to_2_nodes', 'backend': 'gloo', 'steps': args.steps, 'batch_per_rank': args.batch,
               'omp_threads': args.threads, 'repeats': args.repeats,
               'efficiency_median': statistics.median(row['efficiency'] for row in rows), 'goal': 0.9, 'runs': rows}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
