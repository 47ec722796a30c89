# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cost of probing this host live, split into nvidia-smi's own time and the probe's (target: <= nvidia-smi + 0.3 s).

Run from the repository root:  python tests/bench/bench_topology_live.py [nvidia-smi path] [repeats]
Each repeat first runs the nvidia-smi commands the probe needs, alone, then the whole probe.
Prints figures only; never asserts.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'collections'))

from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner, find_program  # noqa: E402
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree, collect_topology  # noqa: E402


class RecordingRunner(CommandRunner):
    """A live runner that remembers which commands the probe ran."""

    def __init__(self):
        super().__init__('/')
        self.argvs = []

    def output(self, key, argv):
        if key not in self._outputs:
            self.argvs.append(list(argv))
        return super().output(key, argv)


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(function):
    """(wall s, own CPU s, children's CPU s) of one call."""
    wall, cpu, child = time.perf_counter(), time.process_time(), children_cpu()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu, children_cpu() - child


def main():
    nvidia_smi = sys.argv[1] if len(sys.argv) > 1 else 'nvidia-smi'
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    runner = RecordingRunner()
    facts = collect_topology(SysfsTree('/'), runner, nvidia_smi)
    program = find_program(nvidia_smi)
    commands = [[program] + argv[1:] for argv in runner.argvs if argv[0] == nvidia_smi]
    if program is None:
        print('nvidia-smi (%s) not found: nothing to compare; see bench_topology.py for the probe alone' % nvidia_smi)
        return
    print('host: %d GPU(s), %d HCA(s); nvidia-smi commands per probe: %d' % (len(facts['gpus']), len(facts['hcas']), len(commands)))
    print('%-7s %14s %14s %14s %16s' % ('repeat', 'smi_wall_s', 'probe_wall_s', 'overhead_s', 'probe_own_cpu_s'))
    for repeat in range(repeats):
        smi = measure(lambda: [subprocess.run(argv, capture_output=True, check=False) for argv in commands])
        probe = measure(lambda: collect_topology(SysfsTree('/'), CommandRunner('/'), nvidia_smi))
        print('%-7d %14.3f %14.3f %14.3f %16.4f' % (repeat, smi[0], probe[0], probe[0] - smi[0], probe[1]))


if __name__ == '__main__':
    main()
