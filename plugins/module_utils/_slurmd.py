# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ``slurmd -C`` prints, and whether a configured NodeName line would drain the node.

Plain Python (standard library and the collection's own module_utils), unit-tested on published ``slurmd -C`` outputs
(tests/unit/fixtures/slurmd_C/).

slurmctld (``validate_node_specs``) drains a registering node whose hardware is *below* its
configuration: "Low CPUs" (CPUs), "Low socket*core*thread count" (Sockets x CoresPerSocket x
ThreadsPerCore) and "Low RealMemory". Hardware above the configuration, or the same count in
another shape, only makes slurmd log "Node configuration differs from hardware".
"""

from __future__ import annotations

import re

from ansible_collections.trainstack.cluster.plugins.module_utils._scontrol import _int

__all__ = ['parse_slurmd_C', 'node_resources', 'compare_node']

_WORD_RE = re.compile(r'^(?P<key>[A-Za-z][A-Za-z0-9_]*)=(?P<value>\S*)$')
_COMPARED = ('cpus', 'boards', 'sockets', 'cores_per_socket', 'threads_per_core', 'real_memory')


def _fields(text):
    fields = {}
    for word in text.split():
        match = _WORD_RE.match(word)
        if match:
            # slurm.conf keys are case-insensitive; slurmd prints them CamelCase.
            fields[match.group('key').lower()] = match.group('value')
    return fields


def node_resources(text_or_fields):
    """CPUs, Boards, Sockets (all boards), CoresPerSocket, ThreadsPerCore, RealMemory of a node line.

    Accepts a ``slurmd -C`` line or a slurm.conf NodeName line (``Sockets=`` or ``SocketsPerBoard=``);
    Slurm's defaults fill what the line omits (Boards 1; CPUs = Sockets x CoresPerSocket x ThreadsPerCore).
    """
    fields = _fields(text_or_fields) if isinstance(text_or_fields, str) else {k.lower(): v for k, v in text_or_fields.items()}
    boards = _int(fields.get('boards')) or 1
    if 'socketsperboard' in fields:
        sockets = (_int(fields['socketsperboard']) or 0) * boards
    else:
        sockets = _int(fields.get('sockets'))
    cores = _int(fields.get('corespersocket'))
    threads = _int(fields.get('threadspercore'))
    cpus = _int(fields.get('cpus', fields.get('procs')))
    if cpus is None and None not in (sockets, cores, threads):
        cpus = sockets * cores * threads
    return {
        'name': fields.get('nodename'),
        'cpus': cpus,
        'boards': boards,
        'sockets': sockets,
        'cores_per_socket': cores,
        'threads_per_core': threads,
        'real_memory': _int(fields.get('realmemory')),
    }


def parse_slurmd_C(text):
    """``slurmd -C`` output -> node_resources() plus ``uptime`` and ``line`` (the NodeName line as printed).

    Slurm prints ``UpTime=`` on its own line (20.02 and later) or on the NodeName line (older), and
    some builds prefix ``ClusterName=``. Raises ValueError when no NodeName line with CPUs= is found.
    """
    text = (text or '').lstrip('\ufeff')
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    node_lines = [line for line in lines if re.search(r'(^|\s)NodeName=\S', line) and re.search(r'(^|\s)CPUs=\d', line)]
    if not node_lines:
        raise ValueError('no "NodeName=... CPUs=..." line in slurmd -C output: %r' % text[:200])
    line = node_lines[0]
    resources = node_resources(line)
    uptime = None
    for other in lines:
        fields = _fields(other)
        if 'uptime' in fields:
            uptime = fields['uptime']
    line = re.sub(r'\s+UpTime=\S+', '', line[line.index('NodeName='):])
    resources.update(uptime=uptime, line=line)
    return resources


def compare_node(configured, actual):
    """({problem: text} that would drain the node, [other differences]) of a configured line vs slurmd -C.

    configured / actual: node_resources() dicts (or lines). A value the configuration leaves out is not compared.
    """
    if isinstance(configured, str):
        configured = node_resources(configured)
    if isinstance(actual, str):
        actual = parse_slurmd_C(actual)
    fatal = {}
    notes = []

    def low(key):
        want, have = configured.get(key), actual.get(key)
        return want is not None and have is not None and have < want

    if low('cpus'):
        fatal['Low CPUs'] = 'CPUs=%s configured, slurmd -C finds %s' % (configured['cpus'], actual['cpus'])
    shape = ('sockets', 'cores_per_socket', 'threads_per_core')
    if all(configured.get(key) is not None and actual.get(key) is not None for key in shape):
        want = configured['sockets'] * configured['cores_per_socket'] * configured['threads_per_core']
        have = actual['sockets'] * actual['cores_per_socket'] * actual['threads_per_core']
        if have < want:
            fatal['Low socket*core*thread count'] = 'Sockets x CoresPerSocket x ThreadsPerCore = %d configured, %d found' % (want, have)
    if low('real_memory'):
        fatal['Low RealMemory'] = 'RealMemory=%s MiB configured, slurmd -C finds %s MiB' % (configured['real_memory'], actual['real_memory'])
    # RealMemory below the hardware is the intended margin (slurm_node_memory_factor), not a difference.
    for key in _COMPARED[:-1]:
        want, have = configured.get(key), actual.get(key)
        if want is not None and have is not None and want != have and not (key == 'cpus' and have < want):
            notes.append('%s: %s configured, %s found' % (key, want, have))
    return fatal, notes
