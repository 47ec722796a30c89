# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_partition_problems: one message per broken rule; slurm_partition_lines; expectations written out by hand."""

from __future__ import annotations

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.slurm_partitions import (
    TIME_FORMATS, FilterModule, slurm_partition_lines, slurm_partition_problems, slurm_time_problem)

COMPUTE = ['gpu01', 'gpu02', 'gpu03']
CONTROLLERS = ['ctl01']
T = TIME_FORMATS

# (id, partitions, compute, controllers, the exact messages); cluster is true where controllers has hosts, as in the role
CASES = [
    ('default-value', [{'name': 'batch', 'nodes': 'ALL', 'default': True, 'max_time': 'UNLIMITED'}], COMPUTE, CONTROLLERS, []),
    ('good-several', [{'name': 'batch', 'nodes': 'gpu[01-02]', 'default': True, 'max_time': '2-00:00:00'},
                      {'name': 'long', 'nodes': 'gpu03', 'max_time': '7-0'},
                      {'name': 'all.x_y-1', 'nodes': 'ALL', 'default': False, 'max_time': 90}], COMPUTE, CONTROLLERS, []),
    ('empty-list', [], [], CONTROLLERS, []),
    ('all-without-groups', [{'name': 'batch', 'nodes': 'ALL'}], [], [], []),
    ('not-a-list', 'batch', COMPUTE, CONTROLLERS,
     ['slurm_partitions must be a list of partitions (name, nodes, default, max_time, ...), got a string.']),
    ('none', None, COMPUTE, CONTROLLERS,
     ['slurm_partitions must be a list of partitions (name, nodes, default, max_time, ...), got null.']),
    ('item-not-mapping', [{'name': 'batch', 'nodes': 'ALL'}, 'gpu'], COMPUTE, CONTROLLERS,
     ['slurm_partitions[1] must be a mapping (name, nodes, default, max_time, ...), got a string.']),
    ('two-defaults', [{'name': 'batch', 'nodes': 'ALL', 'default': True}, {'name': 'gpu', 'nodes': 'gpu01', 'default': 'yes'}],
     COMPUTE, CONTROLLERS,
     ["slurm_partitions: 2 partitions set default: true ('batch', 'gpu'); at most one partition may be the default."]),
    ('one-default-of-three', [{'name': 'a', 'nodes': 'ALL', 'default': False}, {'name': 'b', 'nodes': 'ALL', 'default': 'no'},
                              {'name': 'c', 'nodes': 'ALL', 'default': True}], COMPUTE, CONTROLLERS, []),
    ('max-time-forever', [{'name': 'batch', 'nodes': 'ALL', 'max_time': 'forever'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch': max_time is 'forever', not a Slurm time (%s)." % T]),
    ('max-time-second-partition', [{'name': 'batch', 'nodes': 'ALL'}, {'name': 'gpu', 'nodes': 'ALL', 'max_time': '1:2:3:4'}],
     COMPUTE, CONTROLLERS,
     ["slurm_partitions[1]: partition 'gpu': max_time is '1:2:3:4', not a Slurm time (%s)." % T]),
    ('max-time-bool', [{'name': 'batch', 'nodes': 'ALL', 'max_time': True}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch': max_time must be a Slurm time (%s), got a boolean." % T]),
    ('duplicate-names', [{'name': 'batch', 'nodes': 'ALL'}, {'name': 'gpu', 'nodes': 'ALL'}, {'name': 'batch', 'nodes': 'gpu01'}],
     COMPUTE, CONTROLLERS,
     ["slurm_partitions: the partition name 'batch' is used 2 times (slurm_partitions[0, 2]): partition names must be unique."]),
    ('bad-name', [{'name': 'my batch', 'nodes': 'ALL'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0].name 'my batch' must be letters, digits, '_', '.' and '-' only."]),
    ('no-name', [{'nodes': 'ALL'}], COMPUTE, CONTROLLERS,
     ['slurm_partitions[0] needs a name (PartitionName), got null.']),
    ('no-nodes', [{'name': 'batch'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' needs nodes: a Slurm hostlist of slurm_compute hosts, or ALL (got null)."]),
    ('empty-nodes', [{'name': 'batch', 'nodes': ' '}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' needs nodes: a Slurm hostlist of slurm_compute hosts, or ALL (got an empty string)."]),
    ('unknown-node', [{'name': 'batch', 'nodes': 'gpu[01-04]'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' names nodes that are not in the slurm_compute group: gpu04 "
      "(slurm_compute: gpu[01-03])."]),
    ('unknown-nodes-listed-once', [{'name': 'batch', 'nodes': 'cpu1,cpu2,cpu1,gpu01'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' names nodes that are not in the slurm_compute group: cpu1, cpu2 "
      "(slurm_compute: gpu[01-03])."]),
    ('only-the-controller', [{'name': 'batch', 'nodes': 'ctl01'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' names nodes that are not in the slurm_compute group: ctl01 "
      "(ctl01 is in slurm_controller, not a compute node; slurm_compute: gpu[01-03])."]),
    ('controller-that-computes', [{'name': 'batch', 'nodes': 'ctl01,gpu01'}], ['ctl01', 'gpu01'], CONTROLLERS, []),
    ('nodes-without-groups', [{'name': 'gpu', 'nodes': 'gpu[01-02]'}], [], [],
     ["slurm_partitions[0]: partition 'gpu' names nodes that are not in the slurm_compute group: gpu01, gpu02 "
      "(slurm_compute: the group is empty)."]),
    # cluster (slurm_controller has hosts) and no compute node: slurmctld would have a partition without nodes.
    ('compute-empty', [{'name': 'batch', 'nodes': 'ALL'}, {'name': 'gpu', 'nodes': 'gpu01'}], [], CONTROLLERS,
     ['slurm_partitions defines 2 partitions (batch, gpu) but the inventory group slurm_compute is empty: put the '
      'compute nodes in slurm_compute (a partition needs nodes, and slurmctld a NodeName line).']),
    ('compute-empty-one', [{'name': 'batch', 'nodes': 'ALL'}], [], CONTROLLERS,
     ['slurm_partitions defines a partition (batch) but the inventory group slurm_compute is empty: put the '
      'compute nodes in slurm_compute (a partition needs nodes, and slurmctld a NodeName line).']),
    ('compute-empty-no-controller', [{'name': 'batch', 'nodes': 'ALL'}], [], [], []),
    ('malformed-hostlist', [{'name': 'batch', 'nodes': 'gpu[01-'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' has a malformed nodes hostlist 'gpu[01-' "
      "(unbalanced '[' (no closing ']') in hostlist 'gpu[01-')."]),
    ('hostlist-not-host-names', [{'name': 'batch', 'nodes': 'gpu01;reboot'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'batch' has a malformed nodes hostlist 'gpu01;reboot' "
      "(invalid host name 'gpu01;reboot': ';' is not allowed in a host name (only letters, digits, '-', '.' and '_'))."]),
    # several rules broken: each message says its own rule, in the partitions' order, then the list-wide rules
    ('several', [{'name': 'a', 'nodes': 'gpu09', 'default': True, 'max_time': 'soon'},
                 {'name': 'b', 'nodes': 'ALL', 'default': True, 'max_time': '30'}], COMPUTE, CONTROLLERS,
     ["slurm_partitions[0]: partition 'a': max_time is 'soon', not a Slurm time (%s)." % T,
      "slurm_partitions: 2 partitions set default: true ('a', 'b'); at most one partition may be the default.",
      "slurm_partitions[0]: partition 'a' names nodes that are not in the slurm_compute group: gpu09 "
      "(slurm_compute: gpu[01-03])."]),
]


# Slurm reads PartitionName=DEFAULT (any case) as the defaults of the partitions after it (held-out round 8).
CASES.append(('reserved-name', [{'name': 'Default', 'nodes': 'ALL'}], COMPUTE, CONTROLLERS,
              ["slurm_partitions[0].name 'Default' is Slurm's word for the defaults of every partition "
               "(PartitionName=DEFAULT), not a partition: name it otherwise."]))


@pytest.mark.parametrize('partitions, compute, controllers, expected', [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_partition_problems(partitions, compute, controllers, expected):
    assert slurm_partition_problems(partitions, compute, controllers, bool(controllers)) == expected


@pytest.mark.parametrize('value', ['UNLIMITED', 'INFINITE', 'unlimited', 'Infinite', '60', '0', '30:00', '1:30:00',
                                   '100:00:00', '2-0', '2-12', '2-12:30', '2-12:30:00', '14-00:00:00', 60, 0])
def test_slurm_times(value):
    assert slurm_time_problem(value) is None


@pytest.mark.parametrize('value, message', [
    ('forever', "is 'forever', not a Slurm time"),
    ('', "is '', not a Slurm time"),
    ('1:2:3:4', "is '1:2:3:4', not a Slurm time"),
    ('1-2-3', "is '1-2-3', not a Slurm time"),
    ('-1', "is '-1', not a Slurm time"),
    ('1:300', "is '1:300', not a Slurm time"),
    ('2-', "is '2-', not a Slurm time"),
    ('-2', "is '-2', not a Slurm time"),
    ('1h', "is '1h', not a Slurm time"),
    (' 60', "is ' 60', not a Slurm time"),
    ('60\n', "is '60\\n', not a Slurm time"),
    ('UNLIMITED ', "is 'UNLIMITED ', not a Slurm time"),
    (-5, 'got -5'),
    (True, 'got a boolean'),
    (None, 'got null'),
    (1.5, 'got a number'),
    (['60'], 'got a list'),
])
def test_not_slurm_times(value, message):
    assert message in slurm_time_problem(value)


# (id, partitions, the exact lines)
LINE_CASES = [
    ('role-default', [{'name': 'batch', 'nodes': 'ALL', 'default': True, 'max_time': 'UNLIMITED'}],
     ['PartitionName=batch Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP']),
    ('unsorted-ranges-merged', [{'name': 'gpu', 'nodes': 'gpu[03,01-02]'}],
     ['PartitionName=gpu Nodes=gpu[01-03] Default=NO MaxTime=UNLIMITED State=UP']),
    ('two-prefixes', [{'name': 'mixed', 'nodes': 'gpu02,cpu01,gpu01', 'default': 'no', 'max_time': 90}],
     ['PartitionName=mixed Nodes=cpu01,gpu[01-02] Default=NO MaxTime=90 State=UP']),
    ('default-yes-string-and-state', [{'name': 'debug', 'nodes': 'gpu01', 'default': 'yes', 'state': 'DOWN',
                                       'max_time': '30:00'}],
     ['PartitionName=debug Nodes=gpu01 Default=YES MaxTime=30:00 State=DOWN']),
    ('options-in-order', [{'name': 'long', 'nodes': 'gpu[01-04]', 'max_time': '7-0',
                           'options': {'PriorityTier': 2, 'OverSubscribe': 'NO', 'AllowAccounts': 'ml'}}],
     ['PartitionName=long Nodes=gpu[01-04] Default=NO MaxTime=7-0 State=UP PriorityTier=2 OverSubscribe=NO AllowAccounts=ml']),
    ('list-order-kept', [{'name': 'zeta', 'nodes': 'ALL'}, {'name': 'alpha', 'nodes': 'gpu01', 'default': True}],
     ['PartitionName=zeta Nodes=ALL Default=NO MaxTime=UNLIMITED State=UP',
      'PartitionName=alpha Nodes=gpu01 Default=YES MaxTime=UNLIMITED State=UP']),
    ('numbers-not-text-order', [{'name': 'gpu', 'nodes': 'n10,n9,n8,n100,n9'}],
     ['PartitionName=gpu Nodes=n[8-10,100] Default=NO MaxTime=UNLIMITED State=UP']),
    ('none', None, []),
]


@pytest.mark.parametrize('partitions, expected', [case[1:] for case in LINE_CASES], ids=[case[0] for case in LINE_CASES])
def test_partition_lines(partitions, expected):
    assert slurm_partition_lines(partitions) == expected


def test_filters_are_exported():
    assert FilterModule().filters() == {'slurm_partition_problems': slurm_partition_problems,
                                        'slurm_partition_lines': slurm_partition_lines}


# Round 9 (issue 25): an unquoted H:00:00 reaches the filter as a base-60 number, which Slurm would read as minutes.
@pytest.mark.parametrize('value, words', [
    (3600, "is the number 3600: quote it (YAML reads an unquoted 1:00:00 as 3600"),
    (259200, "write '1:00:00' for hours, or '259200' quoted if minutes are meant"),
])
def test_base60_max_time_is_refused(value, words):
    assert words in slurm_time_problem(value)


@pytest.mark.parametrize('value', [90, 60, 1440, 3601, '3600', '1:00:00'])
def test_minutes_and_quoted_times_pass(value):
    assert slurm_time_problem(value) is None
