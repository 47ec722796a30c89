# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the result lines of the collection's PyTorch all-reduce (roles/pytorch/files/allreduce_bench.py).

Rank 0 prints ``size_MiB=1024 time_us=3291.8 algbw_GBs=326.2 busbw_GBs=326.2`` per size (the device
probe's earlier script wrote ``size_MB=``, also MiB: it allocated mb * 1024 * 1024 bytes) and, first,
``torch <version> backend <nccl|gloo> world_size <n> nccl <version|none> hosts <h1,h2>`` (earlier
runs: ``torch <version> nccl <version> gpus <n>``). NCCL log lines around them are skipped; a Python
traceback, an NCCL WARN or the tool's own ``ERROR`` line is an error. A result line with a key twice,
a missing key or a value that is not a number raises TorchAllreduceParseError.
"""

from __future__ import annotations

import re

MIB = 1024 * 1024
KEYS = ('time_us', 'algbw_GBs', 'busbw_GBs')
_HEADER = re.compile(r'^torch (?P<torch>\S+) nccl (?P<nccl>\S+) gpus (?P<gpus>\d+)\s*$')
_HEADER_BACKEND = re.compile(r'^torch (?P<torch>\S+) backend (?P<backend>\S+) world_size (?P<world>\d+) '
                             r'nccl (?P<nccl>\S+)(?: hosts (?P<hosts>\S+))?\s*$')
_RESULT = re.compile(r'^size_MB=|^size_MiB=')
_FLOAT = re.compile(r'^[0-9]+(?:\.[0-9]+)?$')


def recognises(text):
    """Whether text is this tool's output (a result line or its header), not nccl-tests'."""
    return any(_RESULT.match(line.strip()) or _HEADER.match(line.strip()) or _HEADER_BACKEND.match(line.strip())
               for line in (text or '').splitlines())


class TorchAllreduceParseError(ValueError):
    """The text holds no well-formed all-reduce result line."""


def _fields(line):
    fields = {}
    for item in line.split():
        key, sep, value = item.partition('=')
        if not sep or key in fields:
            raise TorchAllreduceParseError('all-reduce result line is not key=value once each: %r' % line)
        if not _FLOAT.match(value):
            raise TorchAllreduceParseError('all-reduce result %s=%r is not a number: %r' % (key, value, line))
        fields[key] = float(value)
    return fields


def parse(text):
    """{'torch', 'nccl', 'backend', 'world_size', 'hosts', 'rows': [{'bytes', 'time_us', 'algbw', 'busbw'}], 'complete', 'errors'}."""
    result = {'torch': None, 'nccl': None, 'backend': None, 'world_size': None, 'hosts': None, 'rows': [], 'errors': []}
    for raw in (text or '').splitlines():
        line = raw.strip()
        header = _HEADER.match(line)
        if header:
            result.update(torch=header.group('torch'), nccl=header.group('nccl'), backend='nccl', world_size=int(header.group('gpus')))
            continue
        header = _HEADER_BACKEND.match(line)
        if header:
            result.update(torch=header.group('torch'), backend=header.group('backend'), world_size=int(header.group('world')),
                          nccl=None if header.group('nccl') == 'none' else header.group('nccl'),
                          hosts=header.group('hosts').split(',') if header.group('hosts') else None)
            continue
        if not _RESULT.match(line):
            if ('Traceback (most recent call last)' in line or ' NCCL WARN ' in line or line.startswith('RuntimeError')
                    or line.startswith('ERROR ')):
                result['errors'].append(line)
            continue
        fields = _fields(line)
        size = fields.pop('size_MiB', fields.pop('size_MB', None))
        missing = [key for key in KEYS if key not in fields]
        if missing or size is None or size != int(size):
            raise TorchAllreduceParseError('all-reduce result line lacks %s: %r' % (', '.join(missing) or 'a whole size', line))
        result['rows'].append({'bytes': int(size) * MIB, 'time_us': fields['time_us'], 'algbw': fields['algbw_GBs'],
                               'busbw': fields['busbw_GBs']})
    if not result['rows'] and not result['errors']:
        raise TorchAllreduceParseError('no all-reduce result line (size_MiB=... busbw_GBs=...) in this text')
    result['complete'] = bool(result['rows']) and not result['errors']
    return result
