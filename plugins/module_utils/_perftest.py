# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the report of perftest's ib_{send,write,read}_{bw,lat} (client or server side).

Bandwidth tests print ``BW peak``/``BW average`` in MB/sec (perftest's MB is 2^20 bytes; later
releases call the same unit MiB/sec) or, with ``--report_gbits``, in Gb/sec; every row also gets
``bw_average_gbps`` so that callers compare one unit. A report quoted in an e-mail (``> ``) or pasted
behind comment marks (``#  #bytes ...``) is read without them. A table header without rows, a row that does not have the header's columns or a negative
figure raises PerftestParseError: a garbled report never turns into a number.
"""

from __future__ import annotations

import re

# perftest divides by 0x100000 for MB/sec and by 125000000 (10^9 / 8) for Gb/sec.
MBYTES_TO_GBITS = 1048576 * 8 / 1e9

_BW_HEADER = re.compile(r'^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>MB/sec|MiB/sec|Gb/sec)\]\s+BW average\[(?P=unit)\]'
                        r'(?P<msgrate>\s+MsgRate\[Mpps\])?(?P<rest>.*)$')
_LAT_HEADER = re.compile(r'^\s*#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]'
                         r'(?P<rest>.*)$')
_ANY_HEADER = re.compile(r'^\s*#bytes\b')
_TITLE = re.compile(r'^\s*(?P<title>\S.*\b(?:BW|Latency) Test)\s*$')
_SETTING = re.compile(r'(?P<key>[A-Za-z][A-Za-z0-9_ .*-]*?)\s*:\s*(?P<value>\S+)')
_NUMBER = r'-?[0-9]+(?:\.[0-9]+)?'
_RULE = re.compile(r'^\s*-{20,}\s*$')
_SERVER_BANNER = 'Waiting for client to connect'
# Quote marks of an e-mail ('> ') or comment marks of a paste ('#  #bytes', '#  65536 ...') before the report.
_QUOTE = re.compile(r'^\s*(?:>[ \t]?)+')
_COMMENT = re.compile(r'^\s*#\s+(?=#bytes\b|\d)')
LAT_COLUMNS = ('t_min', 't_max', 't_typical', 't_avg', 't_stdev', 'p99', 'p99_9')


class PerftestParseError(ValueError):
    """The text is not a complete perftest report."""


def _settings(lines):
    """'Key : value' pairs of the parameter block (two per line where perftest prints two)."""
    found = {}
    for line in lines:
        for match in _SETTING.finditer(line):
            found.setdefault(match.group('key').strip(), match.group('value'))
    return found


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _row_values(line, expected, header_line):
    cells = line.split()
    if len(cells) != expected or not all(re.match('^' + _NUMBER + '$', cell) for cell in cells):
        raise PerftestParseError('perftest result row does not match its header (%d numeric columns expected): %r'
                                 % (expected, line.strip()))
    values = [float(cell) for cell in cells]
    if any(value < 0 for value in values):
        raise PerftestParseError('perftest result row holds a negative figure (see perftest issue #82): %r' % line.strip())
    if values[0] != int(values[0]) or values[1] != int(values[1]):
        raise PerftestParseError('perftest result row has a fractional size or iteration count: %r' % line.strip())
    return values


def parse(text):
    """The report as a dict: test, kind (bw or lat), unit, device, link_type, connection_type, qps, side, rows."""
    lines = (text or '').splitlines()
    if any(_QUOTE.match(line) and _ANY_HEADER.match(_QUOTE.sub('', line)) for line in lines):
        lines = [_QUOTE.sub('', line) for line in lines]
    if any(_COMMENT.match(line) and _ANY_HEADER.match(_COMMENT.sub('', line)) for line in lines):
        lines = [_COMMENT.sub('', line) for line in lines]
    header_index = None
    for index, line in enumerate(lines):
        if _ANY_HEADER.match(line):
            header_index = index
    if header_index is None:
        raise PerftestParseError('no result table: perftest printed no "#bytes #iterations ..." header')
    header = lines[header_index]
    bw = _BW_HEADER.match(header)
    lat = _LAT_HEADER.match(header)
    if not bw and not lat:
        raise PerftestParseError('no result table: unknown perftest header %r' % header.strip())
    if bw:
        extra = re.findall(r'(?:BW )?\S+\[[^\]]+\]', bw.group('rest'))
        if any(column not in ('BW min[Gb/sec]', 'BW min[MB/sec]', 'BW min[MiB/sec]', 'CPU_Util[%]') for column in extra):
            raise PerftestParseError('unknown perftest bandwidth columns %s' % extra)
        # perftest 1.x printed no MsgRate column.
        columns = ['bw_peak', 'bw_average'] + (['msg_rate_mpps'] if bw.group('msgrate') else []) + [
            {'CPU_Util[%]': 'cpu_util_percent'}.get(column, 'bw_min') for column in extra]
        unit = bw.group('unit')
    else:
        columns = list(LAT_COLUMNS[:3])
        rest = lat.group('rest')
        for name, label in zip(LAT_COLUMNS[3:], ('t_avg[usec]', 't_stdev[usec]', '99% percentile[usec]', '99.9% percentile[usec]')):
            if label in rest:
                columns.append(name)
        unit = 'usec'
    rows = []
    for line in lines[header_index + 1:]:
        if _RULE.match(line):
            break
        if not line.strip() or line.startswith('Conflicting CPU frequency'):
            continue
        values = _row_values(line, 2 + len(columns), header)
        row = {'bytes': int(values[0]), 'iterations': int(values[1])}
        row.update(zip(columns, values[2:]))
        if bw:
            row['bw_average_gbps'] = row['bw_average'] if unit == 'Gb/sec' else round(row['bw_average'] * MBYTES_TO_GBITS, 6)
        rows.append(row)
    if not rows:
        raise PerftestParseError('no result row under the perftest header: the test did not finish or this side '
                                 'prints no figures')
    title = next((m.group('title') for m in map(_TITLE.match, lines[:header_index]) if m), None)
    settings = _settings(line for line in lines[:header_index] if ' : ' in line or ':' in line)
    return {
        'test': title,
        'kind': 'bw' if bw else 'lat',
        'unit': unit,
        'device': settings.get('Device'),
        'link_type': settings.get('Link type'),
        'connection_type': settings.get('Connection type'),
        'qps': _int_or_none(settings.get('Number of qps')),
        'side': 'server' if any(_SERVER_BANNER in line for line in lines[:header_index]) else None,
        'rows': rows,
    }
