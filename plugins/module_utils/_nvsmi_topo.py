# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``nvidia-smi topo -m`` as every driver from 418 to 580 printed it, and as people paste it.

The header is found by its device tokens (GPU0, GPU1 ..., NIC0 ... or RDMA names such
as mlx5_0 in the old format), never by tab positions: copies from terminals, docs and
issues turn tabs into runs of spaces, indent every line, or start with a BOM.

Anything that cannot be read the way nvidia-smi meant it is reported in ``problems``
(one sentence each); the caller turns those into warnings.  Nothing is guessed silently.
"""

from __future__ import annotations

import re

AFFINITY_LABELS = (('CPU Affinity', 'cpu_affinity'), ('NUMA Affinity', 'numa_affinity'), ('GPU NUMA ID', 'gpu_numa_id'))
_LABEL_KEYS = dict(AFFINITY_LABELS)
_ANSI_ESCAPE_RE = re.compile(r'\x1b\[[0-9;]*m')
_GPU_RE = re.compile(r'^GPU(\d+)$')
_NIC_RE = re.compile(r'^NIC(\d+)$')
# Old drivers name NIC columns after the RDMA device (mlx5_0, mlx4_0, mlx5_bond_0, bnxt_re0, irdma0 ...).
_RDMA_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*\d$')
# Values a matrix cell can hold (SOC is the pre-NODE name of SYS; C2C is Grace's chip-to-chip link).
_CELL = r'(?:X|NV\d+|SYS|SOC|NODE|PHB|PXB|PIX|C2C|N/A)'
_CELL_RE = re.compile('^' + _CELL + '$')
_GLUED_CELLS_RE = re.compile('^(?:' + _CELL + '){2,}$')
_GLUED_DEVICES_RE = re.compile(r'^(?:(?:GPU|NIC)\d+){2,}$')
_LEGEND_RE = re.compile(r'^\s*(NIC\d+)\s*:\s*(\S+)\s*$')


def _is_device(token):
    return bool(_GPU_RE.match(token) or _NIC_RE.match(token) or (_RDMA_NAME_RE.match(token) and not _CELL_RE.match(token)))


class _Line:
    """One line cut into cells: by tabs when it has any, else by runs of blanks (with each cell's column)."""

    def __init__(self, text):
        self.text = text
        self.tabbed = '\t' in text
        if self.tabbed:
            self.cells = [cell.strip() for cell in text.split('\t')]
            if self.cells and not self.cells[0]:
                self.cells = self.cells[1:]
            self.columns = None
        else:
            found = list(re.finditer(r'\S+', text))
            self.cells = [match.group(0) for match in found]
            self.columns = [match.start() for match in found]
        while self.tabbed and self.cells and not self.cells[-1]:
            self.cells.pop()


def _header_devices(line):
    """(devices, labels, label_columns) when the line is a topo -m header, else None."""
    tokens, columns = [], []
    cells = line.cells
    positions = line.columns or [None] * len(cells)
    index = 0
    while index < len(cells):
        cell, column = cells[index], positions[index]
        # Space-aligned headers split "CPU Affinity" into two words: join the known labels back.
        for size in (3, 2):
            joined = ' '.join(cells[index:index + size])
            if joined in _LABEL_KEYS:
                cell = joined
                index += size - 1
                break
        tokens.append(cell)
        columns.append(column)
        index += 1
    devices, glued = [], False
    for token in tokens:
        if token in _LABEL_KEYS:
            break
        if _GLUED_DEVICES_RE.match(token):
            devices.extend(re.findall(r'(?:GPU|NIC)\d+', token))
            glued = True
        elif _is_device(token):
            devices.append(token)
        else:
            return None
    if not devices or devices[0] != 'GPU0':
        return None
    labels = [(token, column) for token, column in zip(tokens, columns) if token in _LABEL_KEYS]
    return devices, labels, glued


def _split_glued(cells):
    """['NODENODE', 'PIX'] -> ['NODE', 'NODE', 'PIX'] (pasted tables sometimes lose a separator)."""
    out, glued = [], False
    for cell in cells:
        if _GLUED_CELLS_RE.match(cell):
            out.extend(re.findall(_CELL, cell))
            glued = True
        else:
            out.append(cell)
    return out, glued


def _clean_lines(text):
    text = (text or '').lstrip('\ufeff')
    return [_ANSI_ESCAPE_RE.sub('', line).replace('\ufeff', '').rstrip('\r') for line in text.splitlines()]


def parse_nic_legend(lines):
    """{'NIC0': 'mlx5_0', ...} from the 'NIC Legend:' block (absent before driver 470 or so)."""
    legend = {}
    for line in lines:
        match = _LEGEND_RE.match(line)
        if match:
            legend[match.group(1)] = match.group(2)
    return legend


def parse_topo(text):
    """``nvidia-smi topo -m`` output -> dict.

    Keys: ``matrix`` {row: {column: cell}} with NICs named through the legend, ``affinity``
    {GPU<i>: {cpu_affinity, numa_affinity, gpu_numa_id}} (``N/A`` and empty cells are None),
    ``gpus`` (indexes of the GPU rows), ``nics`` (RDMA names, in column order), ``problems``
    (sentences; empty when the table read cleanly).  An output without any table gives an
    empty matrix and, when it had text, one problem.
    """
    lines = _clean_lines(text)
    result = {'matrix': {}, 'affinity': {}, 'gpus': [], 'nics': [], 'problems': []}
    headers = []
    for number, raw in enumerate(lines):
        parsed = _header_devices(_Line(raw))
        if parsed:
            headers.append((number, parsed))
    if not headers:
        if any(line.strip() for line in lines):
            first = next(line.strip() for line in lines if line.strip())
            result['problems'].append('nvidia-smi topo -m printed no matrix header (a line naming GPU0 ...); '
                                      'first line: %r' % first[:120])
        return result
    tables = []
    for position, (number, parsed) in enumerate(headers):
        end = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
        tables.append(_parse_table(lines[number:end], parsed))
    if len(tables) > 1:
        if any(table['matrix'] != tables[0]['matrix'] for table in tables[1:]):
            result['problems'].append('nvidia-smi topo -m output holds %d different tables; only the first was read' % len(tables))
        else:
            result['problems'].append('nvidia-smi topo -m output holds the same table %d times; read once' % len(tables))
    first = tables[0]
    result.update((key, first[key]) for key in ('matrix', 'affinity', 'gpus', 'nics'))
    result['problems'].extend(first['problems'])
    return result


def _parse_table(lines, parsed):
    devices, labels, glued_header = parsed
    body = lines[1:]
    legend = parse_nic_legend(body)
    problems = []
    nic_columns = [device for device in devices if not _GPU_RE.match(device)]
    names = {}
    for device in nic_columns:
        if _NIC_RE.match(device):
            if device not in legend and legend:
                problems.append('%s has no entry in the NIC Legend' % device)
            names[device] = legend.get(device, device)
        else:
            names[device] = device
    if any(_NIC_RE.match(device) for device in nic_columns) and not legend:
        problems.append('NIC columns without a NIC Legend: NICs keep their NIC<n> names')
    if len(set(devices)) != len(devices):
        problems.append('the header names a device twice: %s' % ' '.join(devices))
    if glued_header:
        problems.append('the header has device names run together (a lost separator): read them apart')
    matrix, affinity, glued_rows, short_rows = {}, {}, [], []
    for raw in body:
        if raw.strip().startswith('Legend'):
            break
        line = _Line(raw)
        if not line.cells or line.cells[0] not in devices:
            continue
        row = line.cells[0]
        cells, glued = _split_glued(line.cells[1:])
        if glued:
            glued_rows.append(row)
        values = cells[:len(devices)]
        if len(values) < len(devices) or not all(_CELL_RE.match(value) for value in values):
            short_rows.append(row)
        matrix[names.get(row, row)] = {names.get(column, column): value for column, value in zip(devices, values) if _CELL_RE.match(value)}
        if _GPU_RE.match(row) and labels:
            affinity[row] = _affinity(line, cells[len(devices):], labels, len(devices))
    if glued_rows:
        problems.append('rows %s have cells run together (a lost separator): read them apart' % ', '.join(glued_rows))
    if short_rows:
        problems.append('rows %s are cut short or hold unknown values (truncated table?)' % ', '.join(short_rows))
    gpu_columns = sorted(int(_GPU_RE.match(device).group(1)) for device in devices if _GPU_RE.match(device))
    gpu_rows = sorted(int(row[3:]) for row in matrix if _GPU_RE.match(row))
    missing = [name for name in devices if names.get(name, name) not in matrix]
    if missing:
        problems.append('the table has no row for %s (truncated table?)' % ', '.join(missing))
    if gpu_columns != list(range(len(gpu_columns))):
        problems.append('GPU columns are not numbered 0..%d: %s' % (len(gpu_columns) - 1, gpu_columns))
    return {
        'matrix': matrix,
        'affinity': affinity,
        'gpus': gpu_rows,
        'nics': [names[device] for device in nic_columns],
        'problems': problems,
    }


def _affinity(line, trailing, labels, device_count):
    """Map the cells after the matrix to their header labels, keeping empty cells empty."""
    keys = [_LABEL_KEYS[label] for label, _column in labels]
    found = dict.fromkeys((key for _label, key in AFFINITY_LABELS), None)
    if line.tabbed:
        # nvidia-smi pads NUMA Affinity with an extra tab; CPU Affinity is always the first cell after the matrix.
        if trailing and keys and keys[0] == 'cpu_affinity':
            found['cpu_affinity'] = trailing[0] or None
            rest = [cell for cell in trailing[1:] if cell]
            pairs = zip(keys[1:], rest)
        else:
            pairs = zip(keys, [cell for cell in trailing if cell])
    elif len(trailing) == len(keys):
        pairs = zip(keys, trailing)
    else:
        # Blank-aligned copy with a missing cell: each value belongs to the label it stands under.
        starts = line.columns[1 + device_count:]
        pairs = []
        for value, start in zip(trailing, starts):
            nearest = min(labels, key=lambda label: abs((label[1] or 0) - start))
            pairs.append((_LABEL_KEYS[nearest[0]], value))
    for key, value in pairs:
        found[key] = None if value in ('', 'N/A') else value
    return found
