# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``nvidia-smi -q`` (the human-readable query) into the health facts acceptance checks need.

Per GPU: bus id, name, UUID, persistence mode, MIG mode, fabric state and status (NVSwitch systems:
Completed/Success once the fabric manager trained the GPU), retired pages and remapped rows.
``N/A`` becomes None; a section a driver does not print (Fabric before R525, Remapped Rows on
pre-Ampere boards) is None. Text without any ``GPU <bus id>`` section, or with a value outside
what nvidia-smi prints for a field checked here, raises NvsmiQueryParseError.
"""

from __future__ import annotations

import re

_GPU_LINE = re.compile(r'^(?P<indent>\s*)GPU (?P<busid>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$')
_KEY_VALUE = re.compile(r'^(?P<key>[^:]+?)\s*:\s?(?P<value>.*)$')
STATES = {'Enabled', 'Disabled', None}


class NvsmiQueryParseError(ValueError):
    """The text is not nvidia-smi -q output this parser can read."""


def _value(text):
    text = text.strip()
    return None if text in ('N/A', '') else text


def _tree(lines, base_indent):
    """Nested dicts from indented 'Key : value' and section lines; repeated keys keep the first."""
    root = {}
    stack = [(-1, root)]
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(' '))
        if indent < base_indent:
            break
        while stack[-1][0] >= indent:
            stack.pop()
        content = line.strip()
        match = _KEY_VALUE.match(content)
        parent = stack[-1][1]
        if match:
            parent.setdefault(match.group('key').strip(), _value(match.group('value')))
        else:
            section = {}
            parent.setdefault(content, section)
            stack.append((indent, section))
    return root


def _int(value, field):
    if value is None:
        return None
    if not re.match(r'^\d+$', value):
        raise NvsmiQueryParseError('nvidia-smi -q: %s is %r, not a count' % (field, value))
    return int(value)


def _yes_no(value, field):
    if value is None:
        return None
    if value not in ('Yes', 'No'):
        raise NvsmiQueryParseError('nvidia-smi -q: %s is %r, not Yes/No' % (field, value))
    return value == 'Yes'


def _state(value, field):
    if value not in STATES:
        raise NvsmiQueryParseError('nvidia-smi -q: %s is %r, not Enabled/Disabled' % (field, value))
    return value


def _section(tree, name):
    value = tree.get(name)
    return value if isinstance(value, dict) else None


def _gpu(busid, tree):
    domain, bus, rest = busid.split(':')
    retired = _section(tree, 'Retired Pages')
    remapped = _section(tree, 'Remapped Rows')
    fabric = _section(tree, 'Fabric')
    mig = _section(tree, 'MIG Mode') or {}
    return {
        'busid': '%04x:%s:%s' % (int(domain, 16), bus.lower(), rest.lower()),
        'name': tree.get('Product Name'),
        'uuid': tree.get('GPU UUID'),
        'minor_number': _int(tree.get('Minor Number'), 'Minor Number'),
        'persistence_mode': _state(tree.get('Persistence Mode'), 'Persistence Mode'),
        'mig_mode': _state(mig.get('Current'), 'MIG Mode/Current'),
        'fabric': {'state': fabric.get('State'), 'status': fabric.get('Status')} if fabric else None,
        'retired_pages': {
            'single_bit_ecc': _int(retired.get('Single Bit ECC'), 'Retired Pages/Single Bit ECC'),
            'double_bit_ecc': _int(retired.get('Double Bit ECC'), 'Retired Pages/Double Bit ECC'),
            'pending': _yes_no(retired.get('Pending Page Blacklist', retired.get('Pending Page Retirement')),
                               'Retired Pages/Pending'),
        } if retired else None,
        'remapped_rows': {
            'correctable': _int(remapped.get('Correctable Error'), 'Remapped Rows/Correctable Error'),
            'uncorrectable': _int(remapped.get('Uncorrectable Error'), 'Remapped Rows/Uncorrectable Error'),
            'pending': _yes_no(remapped.get('Pending'), 'Remapped Rows/Pending'),
            'failure': _yes_no(remapped.get('Remapping Failure Occurred'), 'Remapped Rows/Remapping Failure Occurred'),
        } if remapped else None,
    }


def parse(text):
    """{'driver_version', 'cuda_version', 'attached_gpus', 'gpus': [...]} from nvidia-smi -q output."""
    lines = (text or '').splitlines()
    starts = [(index, match) for index, match in ((i, _GPU_LINE.match(line)) for i, line in enumerate(lines)) if match]
    if not starts:
        raise NvsmiQueryParseError('no "GPU <bus id>" section: not (complete) nvidia-smi -q output')
    base = len(starts[0][1].group('indent'))
    top = _tree([line for line in lines[:starts[0][0]] if _KEY_VALUE.match(line.strip() or '-')], base)
    gpus = []
    for position, (index, match) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(lines)
        tree = _tree(lines[index + 1:end], base + 1)
        if not tree.get('Product Name'):
            raise NvsmiQueryParseError('GPU %s section has no Product Name: cut or garbled output' % match.group('busid'))
        gpus.append(_gpu(match.group('busid'), tree))
    return {
        'driver_version': top.get('Driver Version'),
        'cuda_version': top.get('CUDA Version'),
        'attached_gpus': _int(top.get('Attached GPUs'), 'Attached GPUs'),
        'gpus': gpus,
    }
