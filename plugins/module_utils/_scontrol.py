# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one place that runs Slurm's ``scontrol``, and the parser of what it prints.

Parsing is plain Python (no Ansible import) and unit-tested against outputs
recorded from Slurm 22.05 (tests/unit/fixtures/slurm/).
"""

from __future__ import annotations

import re

__all__ = ['Scontrol', 'ScontrolError', 'parse_show_node', 'parse_node_line', 'summarize_node', 'DRAIN_FLAGS']

# State words that mean "drain requested" (scontrol prints IDLE+DRAIN / MIXED+DRAIN;
# sinfo-style strings DRAINED / DRAINING are accepted too).
DRAIN_FLAGS = frozenset(('DRAIN', 'DRAINED', 'DRAINING'))
# Base states in which a drained node still runs jobs (sinfo calls that DRAINING).
_BUSY_STATES = frozenset(('ALLOCATED', 'MIXED', 'COMPLETING'))
# sinfo-style one-character state suffixes (*, ~, #, ...), never in scontrol's own output.
_STATE_SUFFIXES = '*~#!%$@^-'

_NOT_FOUND_RE = re.compile(r'^Node (?P<name>\S+) not found\s*$')
_KEY_RE = re.compile(r'^(?P<key>[A-Za-z][A-Za-z0-9_]*)=(?P<value>.*)$')
_REASON_START_RE = re.compile(r'(?:^|\s)Reason=')
# "Reason=<text> [<user>@<time>]" followed by the next Key= field or the end of the line.
_REASON_RE = re.compile(r'^(?P<reason>.*?) \[(?P<user>[^\[\]@\s]+)@(?P<time>[^\[\]\s]+)\](?=\s+[A-Za-z][A-Za-z0-9_]*=|\s*$)')
# Fields that may follow Reason in newer releases, for reasons printed without [user@time].
_AFTER_REASON_RE = re.compile(r'\s+(?=(?:Comment|Extra|InstanceId|InstanceType|Topology|ResumeAfterTime|NextState)=)')


class ScontrolError(Exception):
    """scontrol failed; carries the command, its exit status and output."""

    def __init__(self, msg, cmd=None, rc=None, stdout='', stderr=''):
        super().__init__(msg)
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


def _split_fields(text):
    """'A=1 B=x y C=' -> {'A': '1', 'B': 'x y', 'C': ''}; words without Key= continue the previous value."""
    fields = {}
    key = None
    for word in text.split():
        match = _KEY_RE.match(word)
        if match:
            key = match.group('key')
            fields[key] = match.group('value')
        elif key is not None:
            fields[key] = (fields[key] + ' ' + word) if fields[key] else word
    return fields


def parse_node_line(line):
    """Fields of one ``scontrol -o show node`` line as strings, in the order printed.

    ``Reason`` holds the free text only; ``ReasonUser``/``ReasonTime`` hold the
    ``[user@time]`` trailer when Slurm printed one.
    """
    line = line.strip()
    start = _REASON_START_RE.search(line)
    if not start:
        return _split_fields(line)
    before, after = line[:start.start()], line[start.end():]
    reason_fields = {}
    match = _REASON_RE.match(after)
    if match:
        reason_fields = {'Reason': match.group('reason').strip(), 'ReasonUser': match.group('user'), 'ReasonTime': match.group('time')}
        after = after[match.end():]
    else:
        parts = _AFTER_REASON_RE.split(after, maxsplit=1)
        reason_fields = {'Reason': parts[0].strip()}
        after = parts[1] if len(parts) > 1 else ''
    fields = _split_fields(before)
    fields.update(reason_fields)
    fields.update(_split_fields(after))
    return fields


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _text(value):
    return '' if value in (None, '(null)', 'N/A', 'None') else value


def _list(value):
    value = _text(value)
    return [item for item in value.split(',') if item] if value else []


def summarize_node(fields):
    """Normalised view of one node's fields (what the slurm_node module returns)."""
    state = fields.get('State', '')
    words = [word.rstrip(_STATE_SUFFIXES) for word in state.split('+') if word]
    base = words[0] if words else ''
    flags = words[1:]
    drain = any(word in DRAIN_FLAGS for word in words)
    if not drain:
        drain_state = None
    elif base in _BUSY_STATES or 'COMPLETING' in flags or base == 'DRAINING':
        drain_state = 'draining'
    else:
        drain_state = 'drained'
    return {
        'name': fields.get('NodeName', ''),
        'state': state,
        'state_base': base,
        'state_flags': flags,
        'drain': drain,
        'drain_state': drain_state,
        'down': base == 'DOWN',
        'reason': fields.get('Reason', ''),
        'reason_user': fields.get('ReasonUser', ''),
        'reason_time': fields.get('ReasonTime', ''),
        'gres': _text(fields.get('Gres')),
        'gres_used': _text(fields.get('GresUsed')),
        'features': _list(fields.get('AvailableFeatures')),
        'active_features': _list(fields.get('ActiveFeatures')),
        'partitions': _list(fields.get('Partitions')),
        'cpus': _int(fields.get('CPUTot')),
        'cpus_alloc': _int(fields.get('CPUAlloc')),
        'cpus_effective': _int(fields.get('CPUEfctv')),
        'cpu_load': _float(fields.get('CPULoad')),
        'sockets': _int(fields.get('Sockets')),
        'cores_per_socket': _int(fields.get('CoresPerSocket')),
        'threads_per_core': _int(fields.get('ThreadsPerCore')),
        'real_memory_mb': _int(fields.get('RealMemory')),
        'alloc_memory_mb': _int(fields.get('AllocMem')),
        'free_memory_mb': _int(fields.get('FreeMem')),
        'arch': _text(fields.get('Arch')),
        'os': _text(fields.get('OS')),
        'version': _text(fields.get('Version')),
        'node_addr': _text(fields.get('NodeAddr')),
        'node_hostname': _text(fields.get('NodeHostName')),
        'boot_time': _text(fields.get('BootTime')),
        'slurmd_start_time': _text(fields.get('SlurmdStartTime')),
        'cfg_tres': _text(fields.get('CfgTRES')),
        'alloc_tres': _text(fields.get('AllocTRES')),
        'fields': dict(fields),
    }


def _node_records(text):
    """One line per node from either form: ``scontrol -o`` (a line each) or the default multi-line form
    (``NodeName=...`` then indented continuation lines, a blank line between nodes)."""
    records = []
    current = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if stripped.startswith('NodeName=') or _NOT_FOUND_RE.match(stripped):
            current = [stripped]
            records.append(current)
        elif current is not None and line[:1].isspace():
            current.append(stripped)
    return [' '.join(parts) for parts in records]


def parse_show_node(text):
    """``scontrol [-o] show node ...`` output -> ({name: summary}, [names Slurm reported as not found])."""
    nodes = {}
    missing = []
    for record in _node_records(text):
        not_found = _NOT_FOUND_RE.match(record)
        if not_found:
            missing.append(not_found.group('name'))
            continue
        node = summarize_node(parse_node_line(record))
        nodes[node['name']] = node
    return nodes, missing


class Scontrol:
    """Runs scontrol through an AnsibleModule (``module.run_command``), nothing else does."""

    def __init__(self, module, path=None):
        self.module = module
        self.path = path or module.get_bin_path('scontrol', required=True)

    def _run(self, args):
        cmd = [self.path] + list(args)
        rc, stdout, stderr = self.module.run_command(cmd, environ_update={'LC_ALL': 'C'})
        return cmd, rc, stdout, stderr

    def show_nodes(self, expression):
        """({name: summary}, [missing names]) for a hostlist expression."""
        cmd, rc, stdout, stderr = self._run(['--oneliner', 'show', 'node', expression])
        nodes, missing = parse_show_node(stdout)
        if rc != 0 and not missing:
            raise ScontrolError('scontrol show node failed (rc=%d): %s' % (rc, (stderr or stdout).strip()), cmd, rc, stdout, stderr)
        return nodes, missing

    def update_nodes(self, expression, state, reason=None):
        """``scontrol update NodeName=<expression> State=<state> [Reason=<reason>]``."""
        args = ['update', 'NodeName=%s' % expression, 'State=%s' % state]
        if reason is not None:
            args.append('Reason=%s' % reason)
        cmd, rc, stdout, stderr = self._run(args)
        if rc != 0:
            raise ScontrolError('scontrol update failed (rc=%d): %s' % (rc, (stderr or stdout).strip()), cmd, rc, stdout, stderr)
        return cmd
