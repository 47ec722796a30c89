# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU time of a play whose tasks use the collection's filters, with and without preload_filters in its play name
(printed, never asserted).

ansible-core forks a worker per task and host; a worker whose parent never looked up a collection filter imports every
filter file of the collection for its first one. The play has TASKS assert tasks over HOSTS local hosts, each using
trainstack.cluster.unknown_entries; run from the repository root:

    python tests/bench/bench_filter_preload.py [--tasks 40] [--hosts 2] [--repeats 2]

Prints wall and CPU seconds (ansible-playbook and its workers) per variant, the median over the repeats, and the CPU
per task and host.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def playbook(tasks, preload):
    name = "Filters{{ '' | trainstack.cluster.preload_filters }}" if preload else 'Filters'
    lines = ['- name: "%s"' % name, '  hosts: all', '  gather_facts: false', '  tasks:']
    for index in range(tasks):
        lines += ['    - name: Check %d' % index, '      ansible.builtin.assert:',
                  "        that: \"[] | trainstack.cluster.unknown_entries([], 'x', 'y') | length == 0\"",
                  '        quiet: true']
    return '\n'.join(lines) + '\n'


def run(path, inventory):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'collections'))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run([PLAYBOOK, '-i', inventory, '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable, path],
                   env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - started, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--tasks', type=int, default=40)
    parser.add_argument('--hosts', type=int, default=2)
    parser.add_argument('--repeats', type=int, default=2)
    args = parser.parse_args()
    if not os.path.exists(PLAYBOOK):
        print('skipped: ansible-playbook is not beside this Python')
        return
    with tempfile.TemporaryDirectory() as directory:
        inventory = os.path.join(directory, 'hosts')
        with open(inventory, 'w', encoding='utf-8') as handle:
            handle.write('\n'.join('bench%d' % index for index in range(args.hosts)) + '\n')
        results = {}
        for preload in (False, True):
            path = os.path.join(directory, 'preload.yml' if preload else 'plain.yml')
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(playbook(args.tasks, preload))
            runs = [run(path, inventory) for dummy in range(args.repeats)]
            results[preload] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    units = args.tasks * args.hosts
    print('%d tasks x %d hosts, median of %d runs' % (args.tasks, args.hosts, args.repeats))
    for preload, label in ((False, 'plain play name'), (True, 'preload_filters in the play name')):
        wall, cpu = results[preload]
        print('%-34s wall %6.1f s  cpu %6.1f s  cpu per task and host %5.0f ms' % (label, wall, cpu, 1000 * cpu / units))


if __name__ == '__main__':
    main()
