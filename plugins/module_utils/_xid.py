# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Find NVIDIA driver errors in a kernel log (dmesg, ``journalctl -k`` or /dev/kmsg text).

``NVRM: Xid (PCI:<bus id>): <xid>, <detail>`` lines become events with the Xid number, the GPU's bus
id and, where the driver names them, the process (pid, name). Newer drivers report a GPU that fell
off the bus without an Xid line (``NVRM: The NVIDIA GPU <bus id>`` ... ``fallen off the bus``); that
is an event with kind ``fallen_off_bus`` and Xid 79, the number NVIDIA gives that condition. A line
that mentions ``NVRM: Xid`` but does not parse is kept as an ``unparsed`` event, so a check that
counts events fails on it rather than passing over it.
"""

from __future__ import annotations

import re

XID_FALLEN_OFF_BUS = 79
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<busid>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                  r"(?P<xid>\d+)(?:, (?P<detail>.*?))?\s*$")
_PID = re.compile(r"\bpid='?(?P<pid><unknown>|\d+)'?, name=(?P<name>[^,]*),")
_UPTIME = re.compile(r'^\s*\[\s*(?P<seconds>\d+\.\d+)\]')
_GONE = re.compile(r'NVRM: (?:The NVIDIA GPU|GPU) (?P<busid>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b')
FALLEN_OFF_WINDOW = 3


def _busid(text):
    """'0000:01:00' or '00000000:01:00.0' -> '0000:01:00' (the form Xid lines use: no function)."""
    domain, bus, rest = text.split(':')
    return '%04x:%s:%s' % (int(domain, 16), bus.lower(), rest.split('.')[0].lower())


def _uptime(line):
    match = _UPTIME.match(line)
    return float(match.group('seconds')) if match else None


def parse(text):
    """Events in log order: {'kind', 'xid', 'busid', 'pid', 'process', 'detail', 'uptime_s', 'line'}."""
    lines = (text or '').splitlines()
    events = []
    reported_gone = set()
    for index, line in enumerate(lines):
        if 'NVRM: Xid' in line:
            match = _XID.search(line)
            if not match:
                events.append({'kind': 'unparsed', 'xid': None, 'busid': None, 'pid': None, 'process': None,
                               'detail': None, 'uptime_s': _uptime(line), 'line': line.strip()})
                continue
            detail = match.group('detail')
            owner = _PID.search(detail or '')
            pid = owner.group('pid') if owner else None
            events.append({
                'kind': 'xid',
                'xid': int(match.group('xid')),
                'busid': _busid(match.group('busid')),
                'pid': int(pid) if pid and pid.isdigit() else None,
                'process': owner.group('name') if owner and owner.group('name') != '<unknown>' else None,
                'detail': detail,
                'uptime_s': _uptime(line),
                'line': line.strip(),
            })
            if int(match.group('xid')) == XID_FALLEN_OFF_BUS:
                reported_gone.add(_busid(match.group('busid')))
            continue
        gone = _GONE.search(line)
        if gone:
            window = ' '.join(lines[index:index + FALLEN_OFF_WINDOW])
            busid = _busid(gone.group('busid'))
            if 'fallen off the bus' in window and busid not in reported_gone:
                reported_gone.add(busid)
                events.append({'kind': 'fallen_off_bus', 'xid': XID_FALLEN_OFF_BUS, 'busid': busid, 'pid': None,
                               'process': None, 'detail': 'GPU has fallen off the bus', 'uptime_s': _uptime(line),
                               'line': line.strip()})
    return {'events': events, 'xids': sorted({event['xid'] for event in events if event['xid'] is not None})}
