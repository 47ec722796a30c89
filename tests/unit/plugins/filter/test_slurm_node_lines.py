# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_node_definitions / slurm_node_lines / slurm_gres_lines / slurm_scale_settings.

Expectations written by hand; the grouped hostlists are also expanded by Slurm's own scontrol, which must give
back every node once, in the order the NodeAddr list follows.
"""

from __future__ import annotations

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.slurm_nodes import (
    slurm_gres_lines, slurm_node_definitions, slurm_node_lines, slurm_scale_settings)
from slurmd_support import scontrol_runner

HW = 'CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=500000'
GPU = 'Gres=gpu:h100:8 State=UNKNOWN'


def _topology(cpus=64, memory_mib=1048576, gpus=0):
    return {'cpu': {'logical_cpus': cpus, 'sockets': 2, 'cores_per_socket': cpus // 4, 'threads_per_core': 2},
            'memory': {'total_mib': memory_mib},
            'gpus': [{'index': i, 'name': 'NVIDIA H100 80GB HBM3', 'minor_number': i} for i in range(gpus)]}


def _definition(name, line, gres=()):
    return {'name': name, 'complete': True, 'line': line, 'gres': list(gres), 'gpus': len(gres)}


def test_identical_nodes_share_one_line_in_natural_order():
    defs = {name: _definition(name, 'NodeName=%s %s %s' % (name, HW, GPU)) for name in ['gpu10', 'gpu2', 'gpu1', 'gpu3']}
    assert slurm_node_lines(defs) == ['NodeName=gpu[1-3,10] %s %s' % (HW, GPU)]


def test_different_hardware_gives_one_line_per_group_ordered_by_first_node():
    defs = {
        'cpu1': _definition('cpu1', 'NodeName=cpu1 CPUs=32 State=UNKNOWN'),
        'gpu2': _definition('gpu2', 'NodeName=gpu2 %s %s' % (HW, GPU)),
        'gpu1': _definition('gpu1', 'NodeName=gpu1 %s %s' % (HW, GPU)),
        'gpu3': _definition('gpu3', 'NodeName=gpu3 %s Gres=gpu:h100:7 State=UNKNOWN' % HW),
        'cpu2': _definition('cpu2', 'NodeName=cpu2 CPUs=32 State=UNKNOWN'),
    }
    assert slurm_node_lines(defs) == [
        'NodeName=cpu[1-2] CPUs=32 State=UNKNOWN',
        'NodeName=gpu[1-2] %s %s' % (HW, GPU),
        'NodeName=gpu3 %s Gres=gpu:h100:7 State=UNKNOWN' % HW,
    ]


def test_features_and_weight_split_groups():
    defs = {
        'n1': _definition('n1', 'NodeName=n1 CPUs=8 Feature=ib State=UNKNOWN'),
        'n2': _definition('n2', 'NodeName=n2 CPUs=8 State=UNKNOWN'),
        'n3': _definition('n3', 'NodeName=n3 CPUs=8 Feature=ib State=UNKNOWN'),
    }
    assert slurm_node_lines(defs) == ['NodeName=n[1,3] CPUs=8 Feature=ib State=UNKNOWN', 'NodeName=n2 CPUs=8 State=UNKNOWN']


def test_addresses_follow_the_expanded_order():
    defs = {
        'a.example': _definition('n2', 'NodeName=n2 NodeAddr=10.0.0.2 CPUs=8 State=UNKNOWN'),
        'b.example': _definition('n1', 'NodeName=n1 NodeAddr=10.0.0.1 CPUs=8 State=UNKNOWN'),
        # Same hardware, no address of its own: its name is its address.
        'n3': _definition('n3', 'NodeName=n3 CPUs=8 State=UNKNOWN'),
    }
    assert slurm_node_lines(defs) == ['NodeName=n[1-3] NodeAddr=10.0.0.1,10.0.0.2,n3 CPUs=8 State=UNKNOWN']


def test_long_address_lists_are_split_below_the_line_limit():
    defs = {}
    for i in range(1, 301):
        name = 'node%04d' % i
        defs[name + '.site'] = _definition(name, 'NodeName=%s NodeAddr=10.1.%d.%d %s State=UNKNOWN' % (name, i // 256, i % 256, HW))
    lines = slurm_node_lines(defs)
    assert len(lines) > 1
    assert all(len(line) <= 1024 for line in lines)
    # Consecutive runs, every node once, each line's addresses its own nodes'.
    assert lines[0].startswith('NodeName=node[0001-')
    seen = []
    for line in lines:
        words = dict(word.split('=', 1) for word in line.split())
        seen.extend(words['NodeAddr'].split(','))
    assert seen == ['10.1.%d.%d' % (i // 256, i % 256) for i in range(1, 301)]


def test_gres_lines_group_per_gpu_and_keep_the_gpu_order():
    def gres(name, cores=('0-15', '16-31')):
        return ['NodeName=%s Name=gpu Type=h100 File=/dev/nvidia%d Cores=%s' % (name, i, c) for i, c in enumerate(cores)]
    defs = {
        'g2': _definition('g2', 'NodeName=g2 CPUs=8 State=UNKNOWN', gres('g2')),
        'g1': _definition('g1', 'NodeName=g1 CPUs=8 State=UNKNOWN', gres('g1')),
        'g3': _definition('g3', 'NodeName=g3 CPUs=8 State=UNKNOWN', gres('g3', ('0-15', '0-15'))),
        'c1': _definition('c1', 'NodeName=c1 CPUs=8 State=UNKNOWN'),
    }
    assert slurm_gres_lines(defs) == [
        # g3's first GPU line equals the others': one line for the three.
        'NodeName=g[1-3] Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-15',
        'NodeName=g[1-2] Name=gpu Type=h100 File=/dev/nvidia1 Cores=16-31',
        'NodeName=g3 Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-15',
    ]


def test_gres_lines_keep_each_nodes_gpu_order_when_groups_cross():
    defs = {
        'n1': _definition('n1', 'NodeName=n1 CPUs=8', ['NodeName=n1 Name=gpu File=/dev/nvidia0', 'NodeName=n1 Name=gpu File=/dev/nvidia1']),
        # n2's second GPU line equals n1's; its first is its own: n2's nvidia2 line must still come first.
        'n2': _definition('n2', 'NodeName=n2 CPUs=8', ['NodeName=n2 Name=gpu File=/dev/nvidia2', 'NodeName=n2 Name=gpu File=/dev/nvidia1']),
    }
    assert slurm_gres_lines(defs) == [
        'NodeName=n1 Name=gpu File=/dev/nvidia0',
        'NodeName=n2 Name=gpu File=/dev/nvidia2',
        'NodeName=n[1-2] Name=gpu File=/dev/nvidia1',
    ]


def test_definitions_in_one_pass_use_the_cache_only_for_incomplete_nodes():
    cached = {'n2': _definition('n2', 'NodeName=n2 CPUs=4 State=UNKNOWN'),
              'n1': _definition('n1', 'NodeName=n1 CPUs=2 State=UNKNOWN')}
    defs = slurm_node_definitions(['n1', 'n2', 'n3'], [_topology(gpus=2), None, None],
                                  [None, None, {'cpus': 1, 'sockets': 1, 'cores_per_socket': 1, 'threads_per_core': 1,
                                                'real_memory': 100}],
                                  ['n1', None, 'slurm-n3'], cached=cached, memory_factor=0.5)
    # n1 probed: its fresh line wins over the cache; n2 unreachable: the cache; n3 from its overrides and name.
    assert defs['n1']['line'] == ('NodeName=n1 CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=524288 '
                                  'Gres=gpu:h100:2 State=UNKNOWN')
    assert defs['n2'] is cached['n2']
    assert defs['n3']['line'] == ('NodeName=slurm-n3 NodeAddr=n3 CPUs=1 Sockets=1 CoresPerSocket=1 ThreadsPerCore=1 '
                                  'RealMemory=100 State=UNKNOWN')
    assert slurm_node_definitions(['n4'], [], [], [])['n4']['complete'] is False


@pytest.mark.parametrize(('count', 'tree_width', 'timeout', 'extra', 'expected'), [
    (3, 0, 300, {}, {'SlurmdTimeout': 300}),
    (63, 0, 300, {}, {'SlurmdTimeout': 300}),
    (64, 0, 300, {}, {'SlurmdTimeout': 300, 'TreeWidth': 4}),
    (1000, 0, 300, {}, {'SlurmdTimeout': 300, 'TreeWidth': 10}),
    (1001, 0, 120, {}, {'SlurmdTimeout': 120, 'TreeWidth': 11}),
    (4000, 0, 300, {}, {'SlurmdTimeout': 300, 'TreeWidth': 16}),
    (5, 20, 300, {}, {'SlurmdTimeout': 300, 'TreeWidth': 20}),
    (1000, 0, 300, {'treewidth': 50, 'SlurmdTimeout': 600}, {}),
])
def test_scale_settings_follow_the_node_count(count, tree_width, timeout, extra, expected):
    assert slurm_scale_settings(count, tree_width, timeout, extra) == expected


def _thousand_nodes():
    """1,000 nodes in three hardware groups, named as a real site numbers them."""
    defs = {}
    for i in range(1, 1001):
        name = 'gpu%04d' % i
        gpus = 4 if i % 100 == 0 else 8
        memory = 1000000 if i > 900 else 2000000
        defs[name] = _definition(name, 'NodeName=%s %s RealMemory=%d Gres=gpu:h100:%d State=UNKNOWN' % (
            name, HW.rsplit(' ', 1)[0], memory, gpus),
            ['NodeName=%s Name=gpu Type=h100 File=/dev/nvidia%d' % (name, g) for g in range(gpus)])
    return defs


def test_a_thousand_nodes_render_one_line_per_hardware_group():
    lines = slurm_node_lines(_thousand_nodes())
    assert [line.split()[0] for line in lines] == [
        'NodeName=gpu[0001-0099,0101-0199,0201-0299,0301-0399,0401-0499,0501-0599,0601-0699,0701-0799,0801-0899]',
        'NodeName=gpu[0100,0200,0300,0400,0500,0600,0700,0800,0900]',
        'NodeName=gpu[0901-0999]',
        'NodeName=gpu1000',
    ]


@pytest.fixture(scope='module')
def scontrol(tmp_path_factory):
    """The names scontrol expands a hostlist to."""
    run = scontrol_runner(tmp_path_factory.mktemp('slurm'), 'the grouped-lines check')

    def hostnames(expr):
        result = run('show', 'hostnames', expr)
        assert result.returncode == 0, (expr, result.stderr)
        return result.stdout.split()
    return hostnames


def test_scontrol_expands_the_grouped_lines_to_every_node_once(scontrol):
    defs = _thousand_nodes()
    # Addresses on a group: scontrol's order of NodeName must be the order of the NodeAddr list.
    for name in list(defs)[:250]:
        defs[name]['line'] = defs[name]['line'].replace('NodeName=%s ' % name, 'NodeName=%s NodeAddr=10.2.%s ' % (
            name, '%d.%d' % divmod(int(name[3:]), 256)))
    expanded = []
    for line in slurm_node_lines(defs):
        words = dict(word.split('=', 1) for word in line.split())
        names = scontrol(words['NodeName'])
        if 'NodeAddr' in words:
            # A node of the group without an address of its own is reached by its name.
            assert words['NodeAddr'].split(',') == [
                '10.2.%d.%d' % divmod(int(n[3:]), 256) if int(n[3:]) <= 250 else n for n in names]
        expanded.extend(names)
    assert sorted(expanded) == sorted(defs) and len(expanded) == 1000
    gres = []
    for line in slurm_gres_lines(defs):
        gres.extend((n, line.split()[-1]) for n in scontrol(line.split()[0][len('NodeName='):]))
    assert sorted(gres) == sorted((name, 'File=/dev/nvidia%d' % g) for name in defs for g in range(len(defs[name]['gres'])))


def test_a_thousand_probed_nodes_of_one_kind_give_one_node_line_and_one_gres_line_per_gpu():
    hosts = ['gpu%04d' % i for i in range(1, 1001)]
    defs = slurm_node_definitions(hosts, [_topology(gpus=8)] * 1000, [None] * 1000, hosts, memory_factor=0.95)
    assert slurm_node_lines(defs) == ['NodeName=gpu[0001-1000] CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 '
                                      'RealMemory=996147 Gres=gpu:h100:8 State=UNKNOWN']
    assert slurm_gres_lines(defs) == ['NodeName=gpu[0001-1000] Name=gpu Type=h100 File=/dev/nvidia%d' % g for g in range(8)]
