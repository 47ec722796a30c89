# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_partition_problems: what is wrong with slurm_partitions, one message per failed rule; slurm_partition_lines (pure).

The slurm role's validate.yml asserts that the list is empty and prints it (documented in the sidecar YAML file).
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, compress, compress_sorted, expand
from ansible_collections.trainstack.cluster.plugins.module_utils._yaml_kind import a_yaml_kind as _kind

# Slurm's time formats (parse_time.c time_str2mins): minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
_TIME_RE = re.compile(r'(?:[0-9]+-[0-9]+(?::[0-9]{1,2}){0,2}|[0-9]+(?::[0-9]{1,2}){0,2})\Z')
_UNLIMITED = ('UNLIMITED', 'INFINITE')
_NAME_RE = re.compile(r'[A-Za-z0-9_.-]+\Z')
TIME_FORMATS = 'minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S, or UNLIMITED (INFINITE)'


def slurm_time_problem(value):
    """Why ``value`` is not a Slurm time (MaxTime and the like); None when it is one."""
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int)):
        return 'must be a Slurm time (%s), got %s' % (TIME_FORMATS, _kind(value))
    if isinstance(value, int):
        if value >= 3600 and value % 60 == 0:
            # YAML 1.1 reads an unquoted H:MM:SS in base 60 (1:00:00 is 3600), which Slurm would take as minutes.
            return ("is the number %d: quote it (YAML reads an unquoted 1:00:00 as 3600, which Slurm would take as minutes); "
                    "write '1:00:00' for hours, or '%d' quoted if minutes are meant" % (value, value))
        return None if value >= 0 else 'must be a Slurm time (%s), got %d' % (TIME_FORMATS, value)
    if value.upper() in _UNLIMITED or _TIME_RE.match(value):
        return None
    return 'is %r, not a Slurm time (%s)' % (str(value), TIME_FORMATS)


def _is_default(partition):
    value = partition.get('default', False)
    try:
        return boolean(value, strict=False)
    except TypeError:
        return False


def _label(index, partition):
    name = partition.get('name')
    if isinstance(name, str) and name:
        return "slurm_partitions[%d]: partition '%s'" % (index, name)
    return 'slurm_partitions[%d]' % index


def _default_label(index, partition):
    name = partition.get('name')
    return "'%s'" % name if isinstance(name, str) else 'slurm_partitions[%d]' % index


def _list(names):
    try:
        return compress(sorted(set(names)))
    except HostlistError:
        return ', '.join(sorted(set(names)))


def slurm_partition_problems(partitions, compute=None, controllers=None, cluster=False):
    """One message per rule that ``partitions`` (slurm_partitions) breaks; [] when none.

    ``compute``: the Slurm names of the slurm_compute hosts; every node a partition names must be one.
    ``controllers``: the Slurm names of the slurm_controller hosts (named in the message when a partition lists one).
    ``cluster``: slurm_controller has hosts (slurm.conf is written); partitions while slurm_compute is empty are then
    refused, once for the list.
    """
    if not isinstance(partitions, (list, tuple)):
        return ['slurm_partitions must be a list of partitions (name, nodes, default, max_time, ...), got %s.' % _kind(partitions)]
    compute = [str(name) for name in compute or []]
    compute_set = set(compute)
    controllers = [str(name) for name in controllers or [] if str(name) not in compute_set]
    problems = []
    names = {}
    defaults = []
    explicit = []   # (index, partition, expanded names)
    for index, partition in enumerate(partitions):
        if not isinstance(partition, dict):
            problems.append('slurm_partitions[%d] must be a mapping (name, nodes, default, max_time, ...), got %s.'
                            % (index, _kind(partition)))
            continue
        label = _label(index, partition)
        name = partition.get('name')
        if not isinstance(name, str) or not name:
            problems.append('slurm_partitions[%d] needs a name (PartitionName), got %s.'
                            % (index, _kind(name) if not isinstance(name, str) else 'an empty string'))
        elif not _NAME_RE.match(name):
            problems.append("slurm_partitions[%d].name '%s' must be letters, digits, '_', '.' and '-' only." % (index, name))
        elif name.upper() == 'DEFAULT':
            # Slurm reads PartitionName=DEFAULT as the defaults of every partition that follows, not as a partition.
            problems.append("slurm_partitions[%d].name '%s' is Slurm's word for the defaults of every partition "
                            "(PartitionName=DEFAULT), not a partition: name it otherwise." % (index, name))
        else:
            names.setdefault(name, []).append(index)
        if _is_default(partition):
            defaults.append((index, partition))
        if 'max_time' in partition:
            why = slurm_time_problem(partition['max_time'])
            if why:
                problems.append('%s: max_time %s.' % (label, why))
        nodes = partition.get('nodes')
        if not isinstance(nodes, str) or not nodes.strip():
            problems.append('%s needs nodes: a Slurm hostlist of slurm_compute hosts, or ALL (got %s).'
                            % (label, _kind(nodes) if not isinstance(nodes, str) else 'an empty string'))
        elif nodes != 'ALL':
            try:
                explicit.append((index, partition, expand(nodes)))
            except HostlistError as exc:
                problems.append("%s has a malformed nodes hostlist '%s' (%s)." % (label, nodes, exc))
    for name, indexes in names.items():
        if len(indexes) > 1:
            problems.append("slurm_partitions: the partition name '%s' is used %d times (slurm_partitions[%s]): "
                            "partition names must be unique." % (name, len(indexes), ', '.join(str(i) for i in indexes)))
    if len(defaults) > 1:
        problems.append('slurm_partitions: %d partitions set default: true (%s); at most one partition may be the default.'
                        % (len(defaults), ', '.join(_default_label(i, p) for i, p in defaults)))
    if cluster and not compute and partitions:
        listed = [p.get('name') for p in partitions if isinstance(p, dict) and isinstance(p.get('name'), str)]
        problems.append('slurm_partitions defines %s (%s) but the inventory group slurm_compute is empty: put the '
                        'compute nodes in slurm_compute (a partition needs nodes, and slurmctld a NodeName line).'
                        % ('a partition' if len(partitions) == 1 else '%d partitions' % len(partitions), ', '.join(listed)))
        return problems
    for index, partition, expanded in explicit:
        unknown = [node for node in dict.fromkeys(expanded) if node not in compute_set]
        if not unknown:
            continue
        notes = []
        on_controller = [node for node in unknown if node in controllers]
        if on_controller:
            verb = 'is in' if len(on_controller) == 1 else 'are in'
            notes.append('%s %s slurm_controller, not a compute node' % (', '.join(on_controller), verb))
        notes.append('slurm_compute: %s' % (_list(compute) if compute else 'the group is empty'))
        problems.append('%s names nodes that are not in the slurm_compute group: %s (%s).'
                        % (_label(index, partition), ', '.join(unknown), '; '.join(notes)))
    return problems


def slurm_partition_lines(partitions):
    """slurm.conf PartitionName lines of valid ``partitions`` (slurm_partition_problems found none).

    Node lists are written sorted, without repeats, as Slurm's compressed hostlist (one range for consecutive
    nodes, whatever order the inventory gave them in: Slurm keeps a partition's nodes in slurm.conf's order anyway);
    ALL as it is.
    """
    lines = []
    for partition in partitions or []:
        nodes = partition['nodes']
        words = ['PartitionName=%s' % partition['name'],
                 'Nodes=%s' % (nodes if nodes == 'ALL' else compress_sorted(expand(nodes))),
                 'Default=%s' % ('YES' if _is_default(partition) else 'NO'),
                 'MaxTime=%s' % partition.get('max_time', 'UNLIMITED'),
                 'State=%s' % partition.get('state', 'UP')]
        words.extend('%s=%s' % (key, value) for key, value in (partition.get('options') or {}).items())
        lines.append(' '.join(words))
    return lines


class FilterModule:
    """Slurm partition checks and lines."""

    def filters(self):
        return {
            'slurm_partition_problems': slurm_partition_problems,
            'slurm_partition_lines': slurm_partition_lines,
        }
