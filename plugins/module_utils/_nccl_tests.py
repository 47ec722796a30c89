# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the output of nccl-tests (all_reduce_perf and its siblings), single- or multi-node, every release.

Each result row has an out-of-place and an in-place half (time in us, algbw, busbw in GB/s, #wrong;
#wrong is None where nccl-tests prints N/A). The layouts and number forms read here are those of
src/common.cu / src/util.cu of every tag from v1.0.0 to v2.19.6:

- v1.x header ``bytes N type op time algbw busbw res``: time in ms (converted to us), ``res`` and the
  2.0-2.12 ``error`` column are the largest deviation (``%le``: ``0e+00``, ``2e-07``), kept as ``max_error``
  with ``wrong`` None; closing lines without the leading ``#``.
- 2.13+: ``#wrong`` printed with ``%g`` (``1e+06`` for a million wrong elements).
- 2.18+: time/algbw/busbw through getFloatStr: ``%.2f``, then ``%.1f``, ``%.0f`` and, when even that is
  too wide, ``%.1e``/``%.0e``: a fast in-place run prints algbw ``1e+06``. ``inf``/``nan`` (a zero time)
  are kept as None and listed in ``nonfinite``: a measurement, never a number to judge.
- 2.19: ``-I 1`` per-iteration columns (i_min, i_max, i_p99, i_cv%), ``-C`` ``cputime`` for ``time``,
  ``-T`` a timestamp (date and time) after the in-place half; ``# nccl-tests version`` line, ``Group``
  in the rank lines.

``Test NCCL failure`` / ``Test failure`` / ``Test timeout`` lines become ``errors``; a run is
``complete`` only when the closing ``Avg bus bandwidth`` line came, at least one row did and no error
did. NCCL INFO lines and Open MPI ``--tag-output`` prefixes (``[1,0]<stdout>:``) at the start of a line
are skipped. A line after the table header that starts like a row but does not have the header's
columns, or a cell that is not a number where one belongs, raises NcclTestsParseError: a cut or
interleaved row never becomes a number. A table without a single row and without an error raises too.
"""

from __future__ import annotations

import math
import re

# Columns of the current layout, used when only the units line of the header survived.
DEFAULT_COLUMNS = ('size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong',
                   'time', 'algbw', 'busbw', '#wrong')
# Names older (and newer) nccl-tests used for the same columns; 'error'/'res' are a deviation, not a count.
ALIASES = {'bytes': 'size', 'N': 'count', 'op': 'redop', 'res': 'error', 'cputime': 'time'}
PREFIX_KEYS = {'size': 'bytes', 'count': 'count', 'type': 'type', 'redop': 'redop', 'root': 'root'}
PER_ITERATION = {'i_min': 'i_min_us', 'i_max': 'i_max_us', 'i_p99': 'i_p99_us', 'i_cv%': 'i_cv_pct'}

_TAG = re.compile(r'^\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?\s?')
_RANK = re.compile(r'^#?\s*Rank\s+(?P<rank>\d+)\b.*?\bon\s+(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+'
                   r'\[(?P<busid>[^\]]+)\]\s+(?P<name>.+?)\s*$')
_VERSION = re.compile(r'^#\s*nccl-tests version (?P<version>\S+)')
_COLLECTIVE = re.compile(r'^#\s*Collective test (?:starting|concluded): (?P<name>\S+)')
_AVG = re.compile(r'^#?\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)')
_OOB = re.compile(r'^#?\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+(?P<verdict>OK|FAILED)')
_FAILURE = re.compile(r'\b(?:NCCL|CUDA) failure\b|\bTest failure\b|\bTest timeout\b')
# C printf forms of a finite non-negative double: %f, %e, %g (no sign: nccl-tests figures are never negative).
_FLOAT = re.compile(r'^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')
_NONFINITE = re.compile(r'^[+-]?(?:inf|infinity|nan)(?:\([^)]*\))?$', re.IGNORECASE)
_DATE = re.compile(r'^\d{4}-\d{2}-\d{2}$')
_CLOCK = re.compile(r'^\d{2}:\d{2}:\d{2}$')


class NcclTestsParseError(ValueError):
    """The text is not (complete enough) nccl-tests output to read figures from."""


def _header_columns(line):
    """Column names of a '#  size count type ...' header line, or None."""
    tokens = line.lstrip('#').split()
    tokens = [ALIASES.get(token, token) for token in tokens]
    if len(tokens) >= 8 and tokens[:3] == ['size', 'count', 'type'] and 'time' in tokens:
        return tokens
    return None


def _number(cell, line, integer=False):
    """A cell as a float (int with integer=True); raises when it is not a number in one of printf's forms."""
    if not _FLOAT.match(cell):
        raise NcclTestsParseError('nccl-tests result row has %r where a number belongs: %r' % (cell, line.strip()))
    value = float(cell)
    if integer:
        if value != int(value):
            raise NcclTestsParseError('nccl-tests result row has %r where a whole number belongs: %r' % (cell, line.strip()))
        return int(value)
    return value


def _measure(cell, line, nonfinite, where):
    """time/algbw/busbw: a number, or None for printf's inf/nan (noted in nonfinite)."""
    if _NONFINITE.match(cell):
        nonfinite.append('%s %s' % (where, cell))
        return None
    value = _number(cell, line)
    return value if math.isfinite(value) else None


def _half(cells, names, line, nonfinite, label, time_scale):
    half = {}
    for name, cell in zip(names, cells):
        where = '%s %s' % (label, name)
        if name == 'time':
            value = _measure(cell, line, nonfinite, where)
            half['time_us'] = None if value is None else value * time_scale
        elif name in ('algbw', 'busbw'):
            half[name] = _measure(cell, line, nonfinite, where)
        elif name == '#wrong':
            # rccl-tests marks a figure over its threshold with '*' ("Errors with asterisks ..."): still a count.
            half['wrong'] = None if cell == 'N/A' else _number(cell[:-1] if cell.endswith('*') else cell, line, integer=True)
        elif name == 'error':
            half['wrong'] = None
            half['max_error'] = None if cell == 'N/A' else _measure(cell[:-1] if cell.endswith('*') else cell, line, nonfinite,
                                                                    where)
            if cell.endswith('*'):
                half['error_over_threshold'] = True
        elif name in PER_ITERATION:
            half[PER_ITERATION[name]] = _measure(cell, line, nonfinite, where)
    return half


def _row(line, columns, nonfinite, time_scale):
    cells = line.split()
    timestamp = None
    if columns[-1] == 'timestamp':
        # -T: a local date and time ('%Y-%m-%d %H:%M:%S') after the in-place half, two cells.
        if len(cells) >= 2 and _DATE.match(cells[-2]) and _CLOCK.match(cells[-1]):
            timestamp = ' '.join(cells[-2:])
            cells = cells[:-2]
        columns = columns[:-1]
    if len(cells) != len(columns):
        raise NcclTestsParseError('nccl-tests result row has %d columns, the header %d: %r'
                                  % (len(cells), len(columns), line.strip()))
    first_time = columns.index('time')
    second_time = columns.index('time', first_time + 1) if columns.count('time') > 1 else len(columns)
    row = {}
    for name, cell in zip(columns[:first_time], cells[:first_time]):
        key = PREFIX_KEYS.get(name, name)
        if key in ('bytes', 'count'):
            row[key] = _number(cell, line, integer=True)
        elif key == 'root':
            if not re.match(r'^-?\d+$', cell):
                raise NcclTestsParseError('nccl-tests result row has root %r: %r' % (cell, line.strip()))
            row[key] = int(cell)
        else:
            row[key] = cell
    where = 'size %s' % row.get('bytes')
    row['out_of_place'] = _half(cells[first_time:second_time], columns[first_time:second_time], line, nonfinite,
                                where + ' out-of-place', time_scale)
    row['in_place'] = _half(cells[second_time:], columns[second_time:], line, nonfinite, where + ' in-place', time_scale)
    if timestamp:
        row['timestamp'] = timestamp
    return row


def _looks_like_row(line):
    """Size then count (or a size alone: a row cut short), as every layout starts; '8 more processes have
    sent help message ...' from mpirun is not a row."""
    cells = line.split()
    return cells[0].isdigit() and (len(cells) == 1 or cells[1].isdigit())


def parse(text):
    """nccl-tests output as a dict (see the module doc); raises NcclTestsParseError on garbled text."""
    result = {'collective': None, 'version': None, 'ranks': [], 'rows': [], 'avg_busbw': None,
              'out_of_bounds': None, 'out_of_bounds_ok': None, 'errors': [], 'nonfinite': []}
    columns, time_scale, closed = None, 1.0, False
    for raw in (text or '').splitlines():
        line = _TAG.sub('', raw.strip()).strip()
        if not line:
            continue
        if _FAILURE.search(line):
            result['errors'].append(line)
            continue
        for pattern, key in ((_VERSION, 'version'), (_COLLECTIVE, 'collective')):
            match = pattern.match(line)
            if match:
                result[key] = result[key] or match.group(1)
        rank = _RANK.match(line)
        if rank and columns is None:
            result['ranks'].append({'rank': int(rank.group('rank')), 'host': rank.group('host'),
                                    'device': int(rank.group('device')), 'busid': rank.group('busid'),
                                    'name': rank.group('name')})
            continue
        # Pasted into Markdown, the header often lost its '#': the column names alone are recognised.
        header = _header_columns(line)
        if header:
            columns = header
            # v1.x printed the time in ms under a 'bytes N ...' header; 2.0 on print us under 'size count ...'.
            time_scale = 1000.0 if line.lstrip('#').split()[0] == 'bytes' else 1.0
            continue
        if line.lstrip('#').split()[:2] == ['(B)', '(elements)'] and columns is None:
            columns = list(DEFAULT_COLUMNS)
            continue
        avg = _AVG.match(line)
        if avg:
            closed = True
            result['avg_busbw'] = _measure(avg.group('value'), line, result['nonfinite'], 'Avg bus bandwidth')
            continue
        oob = _OOB.match(line)
        if oob:
            result['out_of_bounds'] = int(oob.group('count'))
            result['out_of_bounds_ok'] = oob.group('verdict') == 'OK'
            continue
        if columns is not None and _looks_like_row(line):
            result['rows'].append(_row(line, columns, result['nonfinite'], time_scale))
    if columns is None and not result['errors']:
        raise NcclTestsParseError('no nccl-tests result table and no nccl-tests error in this text')
    if not result['rows'] and not result['errors']:
        raise NcclTestsParseError('nccl-tests printed its table header but no result row (size count type ... busbw) '
                                  'and no error: the run measured nothing')
    result['nranks'] = len(result['ranks'])
    result['hosts'] = sorted({rank['host'] for rank in result['ranks']})
    result['gpu_names'] = sorted({rank['name'] for rank in result['ranks']})
    result['complete'] = closed and bool(result['rows']) and not result['errors']
    return result
