# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Simulated clusters for tests/bench/bench_scale.py: an inventory of 1 controller and N compute hosts.

Every host is this machine (ansible_connection local). Its trainstack_topology is what the real topology_facts
module returned for a recorded root (tests/unit/fixtures/topology/), once per hardware kind; scale.yml's first play
makes it each host's fact (set_fact cacheable: the fact cache of the run, as topology_facts would fill it). What a
real cluster varies is varied: the hardware kind (in contiguous blocks, as racks are bought), a node here and there
with less memory (a failed DIMM: another NodeName line) and the OS of a block.
"""

from __future__ import annotations

import copy
import json
import os

# (kind, recorded case, share of the compute hosts, OS (distribution, major version, full version)).
HARDWARE = (
    ('hgx_h100', 'hgx_h100', 0.75, ('Ubuntu', '24', '24.04')),
    ('a100_pcie', 'a100_pcie', 0.125, ('Ubuntu', '22', '22.04')),
    ('l40s_roce', 'ib_down_roce', 0.125, ('Debian', '12', '12.11')),
)
CONTROLLER_CASE = 'cpu_only'
# Every DEGRADED_EVERY-th node of the first block reports DEGRADED_MIB less memory.
DEGRADED_EVERY = 250
DEGRADED_MIB = 65536
CONTROLLER = 'ctl01'


def cases():
    """The recorded cases the simulated hosts need (probed once each)."""
    return sorted({case for _kind, case, _share, _os in HARDWARE} | {CONTROLLER_CASE})


def host_name(index, size):
    return 'gpu%0*d' % (max(4, len(str(size))), index)


def kinds_of(size):
    """The hardware kind of compute hosts 1..size, in contiguous blocks."""
    counts = [int(round(share * size)) for _kind, _case, share, _os in HARDWARE[:-1]]
    counts.append(max(0, size - sum(counts)))
    kinds = []
    for (kind, _case, _share, _os), count in zip(HARDWARE, counts):
        kinds += [kind] * count
    return kinds[:size]


def _address(index):
    return '10.%d.%d.%d' % (index // 65536, index // 256 % 256, index % 256)


def write_cluster(directory, size, topologies):
    """Write <directory>/inventory.json and one topology file per hardware kind for `size` compute hosts.

    topologies: {recorded case: trainstack_topology as topology_facts returned it}. Returns
    (inventory path, [compute host names], {kind: host count}).
    """
    by_kind = {kind: (case, os_release) for kind, case, _share, os_release in HARDWARE}
    files = {}

    def topology_file(label, topology):
        if label not in files:
            files[label] = os.path.join(directory, 'topology-%s.json' % label)
            with open(files[label], 'w', encoding='utf-8') as handle:
                json.dump(topology, handle)
        return files[label]

    computes, names, counts = {}, [], {}
    for index, kind in enumerate(kinds_of(size), start=1):
        name = host_name(index, size)
        case, os_release = by_kind[kind]
        topology, label = topologies[case], kind
        if kind == HARDWARE[0][0] and index % DEGRADED_EVERY == 0:
            topology = copy.deepcopy(topology)
            topology['memory']['total_mib'] -= DEGRADED_MIB
            label = kind + '-less-memory'
        computes[name] = {'ansible_host': _address(index), 'bench_topology_file': topology_file(label, topology),
                          'bench_os': list(os_release)}
        names.append(name)
        counts[label] = counts.get(label, 0) + 1
    controller = {'ansible_host': _address(0), 'bench_os': list(HARDWARE[0][3]),
                  'bench_topology_file': topology_file('controller', topologies[CONTROLLER_CASE])}
    inventory = {'all': {
        'vars': {'ansible_connection': 'local'},
        'children': {
            'slurm_controller': {'hosts': {CONTROLLER: controller}},
            'slurm_compute': {'hosts': computes},
        }}}
    path = os.path.join(directory, 'inventory.json')
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(inventory, handle)
    return path, names, counts


def sample(names, count):
    """`count` compute hosts spread evenly over `names` (all of them when count >= len(names))."""
    if count >= len(names):
        return list(names)
    step = len(names) / float(count)
    return [names[int(i * step + step / 2)] for i in range(count)]
