# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the output of nccl-tests (all_reduce_perf and its siblings), single- or multi-node.

Each result row has an out-of-place and an in-place half (time in us, algbw, busbw in GB/s, #wrong;
#wrong is None where nccl-tests prints N/A). ``Test NCCL failure`` / ``Test failure`` lines become
``errors``; a run is ``complete`` only when the closing ``Avg bus bandwidth`` line came and no error
did. NCCL INFO lines between rows are skipped. A line after the table header that starts like a row
but does not have the header's columns raises NcclTestsParseError: a cut or interleaved row never
becomes a number.
"""

from __future__ import annotations

import re

# Columns of the current layout, used when only the units line of the header survived.
DEFAULT_COLUMNS = ('size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong',
                   'time', 'algbw', 'busbw', '#wrong')
# Names older nccl-tests used for the same columns.
ALIASES = {'bytes': 'size', 'N': 'count', 'op': 'redop', 'error': '#wrong', 'res': '#wrong'}
PREFIX_KEYS = {'size': 'bytes', 'count': 'count', 'type': 'type', 'redop': 'redop', 'root': 'root'}

_RANK = re.compile(r'^#?\s*Rank\s+(?P<rank>\d+)\b.*?\bon\s+(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+'
                   r'\[(?P<busid>[^\]]+)\]\s+(?P<name>.+?)\s*$')
_VERSION = re.compile(r'^#\s*nccl-tests version (?P<version>\S+)')
_COLLECTIVE = re.compile(r'^#\s*Collective test (?:starting|concluded): (?P<name>\S+)')
_AVG = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)')
_OOB = re.compile(r'^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+(?P<verdict>OK|FAILED)')
_FAILURE = re.compile(r'\b(?:NCCL|CUDA) failure\b|\bTest failure\b')
_FLOAT = re.compile(r'^[0-9]+(?:\.[0-9]+)?$')


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
    if not _FLOAT.match(cell) or (integer and '.' in cell):
        raise NcclTestsParseError('nccl-tests result row has %r where a number belongs: %r' % (cell, line.strip()))
    return int(cell) if integer else float(cell)


def _half(cells, names, line):
    half = {}
    for name, cell in zip(names, cells):
        if name == 'time':
            half['time_us'] = _number(cell, line)
        elif name in ('algbw', 'busbw'):
            half[name] = _number(cell, line)
        elif name == '#wrong':
            half['wrong'] = None if cell == 'N/A' else _number(cell, line, integer=True)
    return half


def _row(line, columns):
    cells = line.split()
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
    row['out_of_place'] = _half(cells[first_time:second_time], columns[first_time:second_time], line)
    row['in_place'] = _half(cells[second_time:], columns[second_time:], line)
    return row


def parse(text):
    """nccl-tests output as a dict (see the module doc); raises NcclTestsParseError on garbled text."""
    result = {'collective': None, 'version': None, 'ranks': [], 'rows': [], 'avg_busbw': None,
              'out_of_bounds': None, 'out_of_bounds_ok': None, 'errors': []}
    columns = None
    for raw in (text or '').splitlines():
        line = raw.strip()
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
        header = _header_columns(line) if line.startswith('#') else None
        if header:
            columns = header
            continue
        if line.startswith('#') and '(B)' in line and '(elements)' in line and columns is None:
            columns = list(DEFAULT_COLUMNS)
            continue
        avg = _AVG.match(line)
        if avg:
            result['avg_busbw'] = _number(avg.group('value'), line)
            continue
        oob = _OOB.match(line)
        if oob:
            result['out_of_bounds'] = int(oob.group('count'))
            result['out_of_bounds_ok'] = oob.group('verdict') == 'OK'
            continue
        if columns is not None and line.split()[0].isdigit():
            result['rows'].append(_row(line, columns))
    if columns is None and not result['errors']:
        raise NcclTestsParseError('no nccl-tests result table and no nccl-tests error in this text')
    result['nranks'] = len(result['ranks'])
    result['hosts'] = sorted({rank['host'] for rank in result['ranks']})
    result['gpu_names'] = sorted({rank['name'] for rank in result['ranks']})
    result['complete'] = result['avg_busbw'] is not None and not result['errors']
    return result
