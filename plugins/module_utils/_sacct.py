# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``sacct`` job usage (``TRESUsageInAve`` / ``TRESUsageInMax``): the GPU figures Slurm accounts.

Slurm records ``gres/gpuutil`` (percent) and ``gres/gpumem`` per step where gres.conf has ``AutoDetect=nvml`` and
accounting tracks the GPUs (Slurm's gres.shtml); without them the TRES lists lack those keys. Plain Python, no
Ansible import; unit-tested on real outputs (tests/unit/fixtures/sacct/README.md).
"""

from __future__ import annotations

import re

__all__ = ['SACCT_FORMAT', 'SacctError', 'parse_sacct_usage', 'parse_tres', 'tres_bytes']

# What diagnose_facts asks for (``sacct -j <job> --parsable2 --noconvert --format=...``).
SACCT_FORMAT = ('JobID', 'TRESUsageInAve', 'TRESUsageInMax')
# sacct's unit suffixes are powers of 1024 (K, M, G, T, P); --noconvert prints bytes without one.
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4, 'P': 1024 ** 5}
_SIZE = re.compile(r'([0-9]+(?:[.][0-9]+)?)([KMGTP]?)\Z')
_STEP_ID = re.compile(r'[0-9]+(?:_[0-9]+|_\[[0-9,\-%]+\])?(?:\+[0-9]+)?(?:[.](?P<step>[A-Za-z0-9_\-]+))?\Z')
_COLUMNS = {'TRESUsageInAve': 'ave', 'TRESUsageInMax': 'max'}


class SacctError(ValueError):
    """Output that is not sacct's parsable job listing."""


def parse_tres(text):
    """``cpu=00:56:24,gres/gpuutil=100,...`` -> {key: raw value}; {} for an empty field."""
    found = {}
    for item in (text or '').split(','):
        key, sep, value = item.partition('=')
        if sep and key.strip():
            found[key.strip()] = value.strip()
    return found


def tres_bytes(value):
    """``38888M`` -> bytes; ``40777023488`` (--noconvert) -> bytes; None when unreadable."""
    match = _SIZE.match(str(value or '').strip())
    if not match:
        return None
    return int(round(float(match.group(1)) * _UNITS[match.group(2)]))


def _percent(value):
    match = re.match(r'([0-9]+(?:[.][0-9]+)?)\Z', str(value or '').strip())
    return float(match.group(1)) if match else None


def parse_sacct_usage(text, columns=SACCT_FORMAT):
    """sacct ``--parsable2`` (or ``--parsable``, its trailing ``|``) rows -> ``{'steps': [...], 'gpu_tres': bool}``.

    A first line that names ``JobID`` is the header and gives the columns; without one (``--noheader``) ``columns``
    does. Each step: ``id``, ``step`` (``batch``, ``extern``, ``0``, ...; None for the job's own line), and for each of
    ``ave`` / ``max`` the ``gpuutil_pct`` and ``gpumem_bytes`` (None where the field lacks them). ``gpu_tres`` says
    whether any row carries ``gres/gpuutil``.
    """
    lines = [line for line in (text or '').splitlines() if line.strip()]
    if lines and lines[0].split('|')[0].strip() == 'JobID':
        columns = tuple(name.strip() for name in lines[0].rstrip('|').split('|'))
        lines = lines[1:]
    columns = tuple(columns)
    if 'JobID' not in columns or not any(name in _COLUMNS for name in columns):
        raise SacctError('sacct: the columns %s name no JobID and TRESUsageInAve/Max' % ', '.join(columns))
    steps = []
    gpu_tres = False
    for line in lines:
        cells = line.split('|')
        if len(cells) == len(columns) + 1 and cells[-1] == '':
            cells = cells[:-1]  # --parsable ends each line with a '|'
        if len(cells) != len(columns):
            raise SacctError('sacct: %d fields where the columns are %s: %r' % (len(cells), ', '.join(columns), line))
        row = dict(zip(columns, cells))
        match = _STEP_ID.match(row['JobID'].strip())
        if not match:
            raise SacctError('sacct: %r is not a job or step id' % row['JobID'])
        step = {'id': row['JobID'].strip(), 'step': match.group('step')}
        for column, name in _COLUMNS.items():
            tres = parse_tres(row.get(column, ''))
            gpu_tres = gpu_tres or 'gres/gpuutil' in tres
            step[name] = {'gpuutil_pct': _percent(tres.get('gres/gpuutil')),
                          'gpumem_bytes': tres_bytes(tres.get('gres/gpumem')) if 'gres/gpumem' in tres else None}
        steps.append(step)
    return {'steps': steps, 'gpu_tres': gpu_tres}
