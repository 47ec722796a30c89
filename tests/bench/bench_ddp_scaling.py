# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Weak scaling of the DDP smoke job from 1 to 2 lab nodes through Slurm (goal >= 0.9; printed, never asserted).

Needs a lab with the pytorch role applied (scripts/lab up 2; site.yml with the pytorch group, see
docs/benchmarks/README.md). Run from the repository root:

    python tests/bench/bench_ddp_scaling.py [--prefix ts] [--steps 300] [--batch 128] [--repeats 3]
                                            [--threads N] [--no-pin]

Each repeat submits the shipped sbatch template with --nodes=1 (on <prefix>-node1) and --nodes=2 (one
gloo rank per node, the same --batch samples per rank) and reads samples/s from the job's JSON.
Weak-scaling efficiency = total samples/s on 2 nodes / (2 x samples/s on 1 node), median over the repeats.

Like with like: every job asks Slurm for one CPU per node. The lab's Slurm puts a job's CPUs in a cpuset
at the HOST's cgroup root (cgroup v1, containers with --cgroupns host), so CPU 0 of ts-node1 and CPU 0
of ts-node2 are the same host core: unpinned, the 2-node job runs both ranks on one core while the
1-node job has that core alone. With pinning (the default) the benchmark first holds CPU 0 of
<prefix>-node2 with an idle job (sleep, 16 MB), so Slurm gives the 2-node job's rank there host core 1:
each rank then has one core of its own in both runs. It prints the cores the ranks got, and cancels the
idle job at the end. --no-pin measures the unpinned case. Jobs ask for --mem so the idle job leaves
the node's memory to them. OMP_NUM_THREADS is the launcher's (the CPUs Slurm gave: 1) unless --threads
sets it. Step time = batch / samples/s per rank; the 2-node step minus the 1-node step is the cost of
the gradient exchange (and waiting for the other rank) per step. Without a lab it prints `skipped`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'collections'))

from ansible_collections.trainstack.cluster.plugins.filter.pytorch import pytorch_ddp_result  # noqa: E402

TEMPLATE = '/usr/local/share/trainstack/pytorch/ddp_smoke.sbatch'
JOB_MEMORY = '--mem=2G'
HOLD_NAME = 'bench-ddp-hold-cpu0'


def docker(*argv, stdin=None):
    return subprocess.run(['docker', *argv], input=stdin, capture_output=True, text=True, check=False)


def slurm(prefix, *argv):
    return docker('exec', prefix + '-ctl', *argv)


def load():
    return '%.2f %.2f %.2f' % os.getloadavg()


def rank_cores(prefix):
    """Host cores a 1-CPU-per-node step gets on each node, as Slurm places it now ({host: cpulist})."""
    probe = slurm(prefix, 'srun', '--nodes=2', '--ntasks-per-node=1', JOB_MEMORY, 'sh', '-c',
                  'echo "$(hostname) $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"')
    return dict(line.split() for line in probe.stdout.splitlines() if len(line.split()) == 2)


def hold_cpu0(prefix):
    """An idle job on CPU 0 of <prefix>-node2, so Slurm gives the next job there the next core; its id."""
    held = slurm(prefix, 'sbatch', '--parsable', '--nodelist=%s-node2' % prefix, '--ntasks=1', '--mem=16M',
                 '--job-name=' + HOLD_NAME, '--output=/dev/null', '--wrap', 'exec sleep 3600')
    job = held.stdout.strip()
    if held.returncode != 0 or not job:
        raise SystemExit('cannot submit the idle job: %s' % held.stderr.strip())
    for _second in range(60):
        if slurm(prefix, 'squeue', '--noheader', '--format=%T', '--job', job).stdout.strip() == 'RUNNING':
            return job
        time.sleep(1)
    slurm(prefix, 'scancel', job)
    raise SystemExit('the idle job %s did not start within 60 s' % job)


def run_job(prefix, nodes, steps, threads, script, batch):
    environment = 'ALL' if threads is None else 'ALL,OMP_NUM_THREADS=%d' % threads
    submitted = docker('exec', '-i', prefix + '-ctl', 'sbatch', '--parsable', '--wait', '--nodes=%d' % nodes, JOB_MEMORY,
                       '--nodelist=%s' % ','.join('%s-node%d' % (prefix, number) for number in range(1, nodes + 1)),
                       '--output=/var/tmp/bench-ddp-%j.out', '--export=' + environment,
                       '/dev/stdin', '--steps', str(steps), '--batch', str(batch), stdin=script)
    job = submitted.stdout.strip().splitlines()[0] if submitted.stdout.strip() else '?'
    output = docker('exec', prefix + '-node1', 'cat', '/var/tmp/bench-ddp-%s.out' % job).stdout
    checked = pytorch_ddp_result(output, world_size=nodes)
    if not checked['ok']:
        raise SystemExit('job %s on %d node(s) failed: %s\n%s' % (job, nodes, checked['problems'], output[-2000:]))
    result = checked['result']
    result['omp_threads'] = sorted(set(re.findall(r'OMP_NUM_THREADS=(\S+),', output)))
    return result


def step_ms(batch, samples_per_s):
    return round(1000.0 * batch / samples_per_s, 3) if samples_per_s else None


def measure(args, script):
    rows = []
    for _repeat in range(args.repeats):
        one = run_job(args.prefix, 1, args.steps, args.threads, script, args.batch)
        two = run_job(args.prefix, 2, args.steps, args.threads, script, args.batch)
        per_rank = [rank['samples_per_s'] for rank in two['ranks']]
        one_step, two_step = step_ms(args.batch, one['samples_per_s_total']), step_ms(args.batch, min(per_rank))
        rows.append({'one_node': one['samples_per_s_total'], 'two_nodes': two['samples_per_s_total'],
                     'two_nodes_per_rank': per_rank, 'step_ms_one_node': one_step, 'step_ms_two_nodes': two_step,
                     'exchange_ms_per_step': round(two_step - one_step, 3),
                     'omp_threads': sorted(set(one['omp_threads'] + two['omp_threads'])),
                     'loss_two_nodes': [two['loss_first'], two['loss_last']],
                     'efficiency': round(two['samples_per_s_total'] / (2 * one['samples_per_s_total']), 3)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--prefix', default=os.environ.get('LAB_PREFIX', 'ts'))
    parser.add_argument('--steps', type=int, default=300)
    # Weak scaling keeps the work per rank fixed; a larger batch per rank is more compute per gradient
    # exchange (the exchange is the same 82 689 parameters whatever the batch).
    parser.add_argument('--batch', type=int, default=128, help='samples per rank and step')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=None, help='OMP_NUM_THREADS per rank (default: the launcher\'s)')
    parser.add_argument('--pin', action=argparse.BooleanOptionalAction, default=True,
                        help='give each node\'s rank its own host core (default; see the docstring)')
    args = parser.parse_args()
    script = docker('exec', args.prefix + '-node1', 'cat', TEMPLATE)
    if script.returncode != 0:
        print('bench_ddp_scaling: skipped (no lab %s-* with the pytorch role: %s)' % (args.prefix, script.stderr.strip()[:200]))
        return 0
    load_before = load()
    held = hold_cpu0(args.prefix) if args.pin else None
    try:
        cores = rank_cores(args.prefix)
        print('host cores of the ranks (2-node job; the 1-node job gets %s-node1\'s): %s%s'
              % (args.prefix, json.dumps(cores), '' if len(set(cores.values())) == len(cores) else
                 '  NOT like with like: the ranks share a core'), flush=True)
        rows = measure(args, script.stdout)
    finally:
        if held:
            slurm(args.prefix, 'scancel', held)
    summary = {'benchmark': 'ddp_weak_scaling_1_to_2_nodes', 'backend': 'gloo', 'steps': args.steps,
               'batch_per_rank': args.batch, 'pinned': args.pin, 'rank_cores': cores,
               'omp_threads': sorted({value for row in rows for value in row['omp_threads']}),
               'repeats': args.repeats, 'load_before': load_before, 'load_after': load(),
               'efficiency_median': statistics.median(row['efficiency'] for row in rows),
               'exchange_ms_per_step_median': statistics.median(row['exchange_ms_per_step'] for row in rows),
               'goal': 0.9, 'runs': rows}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
