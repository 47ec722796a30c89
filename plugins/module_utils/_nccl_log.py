# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read which network NCCL chose on each host from its NCCL_DEBUG=INFO lines.

NCCL prefixes every line with ``<host>:<pid>:<tid> [<device>] NCCL INFO`` (WARN lines name the source file first:
``... [4] ib_plugin.c:1615 NCCL WARN ...``); other programs' lines in the same output (Open MPI, the job's own) are
skipped. Per host the evidence, strongest first:

- ``Channel 00/0 : 2[2] -> 34[2] [receive] via NET/<name>/<device>``: a connection NCCL made over that network;
- ``Using network <name>`` (NCCL 2.6 and later): IB, Socket, or a net plugin's name such as IBext;
- ``NET/IB : Using [0]mlx5_0:1/IB ...; OOB ...`` (every release): the internal IB transport found HCAs, so it is IB;
- ``NET/IB : No device found.``: no HCA NCCL can use, so it falls back to Socket.

``NET/Socket : Using ...`` alone proves nothing: NCCL opens its bootstrap sockets on every host, with or without IB.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r'^(?P<host>[^\s:\[\]]+):(?P<pid>[0-9]+):(?P<tid>[0-9]+) \[[0-9]+\] (?:\S+:[0-9]+ )?'
                     r'NCCL (?P<level>INFO|WARN) (?P<message>.*)$')
_CHANNEL = re.compile(r'^Channel [0-9]+/[0-9]+ : .* via NET/(?P<network>[^/\s]+)/')
_USING_NETWORK = re.compile(r'^Using network (?P<network>\S+)')
_NET_IB_USING = re.compile(r'^NET/IB ?: Using (?P<devices>.*?);\s*OOB ')
_IB_DEVICE = re.compile(r'\[[0-9]+\](?P<name>[^:\s\[\]]+):(?P<port>[0-9]+)/(?P<link>[A-Za-z]+)')
_NET_IB_NONE = re.compile(r'^NET/IB ?: No device found')


def parse(text):
    """{host: {'network': 'IB' | 'Socket' | <plugin> | None, 'evidence': the line that decided it or None,
    'ib_devices': [{'name', 'port', 'link'}], 'warnings': [NCCL WARN messages]}} for every host with NCCL lines."""
    hosts = {}
    for line in (text or '').splitlines():
        match = _PREFIX.match(line.strip())
        if not match:
            continue
        host = hosts.setdefault(match.group('host'), {'network': None, 'evidence': None, 'ib_devices': [],
                                                      'warnings': [], '_rank': 0})
        message = match.group('message').strip()
        if match.group('level') == 'WARN':
            host['warnings'].append(message)
            continue
        channel = _CHANNEL.match(message)
        using = _USING_NETWORK.match(message)
        ib_using = _NET_IB_USING.match(message)
        if channel:
            _decide(host, 4, channel.group('network'), message)
        elif using:
            _decide(host, 3, using.group('network'), message)
        elif ib_using:
            devices = [{'name': device.group('name'), 'port': int(device.group('port')), 'link': device.group('link')}
                       for device in _IB_DEVICE.finditer(ib_using.group('devices'))]
            for device in devices:
                if device not in host['ib_devices']:
                    host['ib_devices'].append(device)
            _decide(host, 2, 'IB', message)
        elif _NET_IB_NONE.match(message):
            _decide(host, 1, 'Socket', message)
    for host in hosts.values():
        del host['_rank']
    return hosts


def _decide(host, rank, network, line):
    # Stronger evidence wins; of equal evidence the last line (the latest communicator) wins.
    if rank >= host['_rank']:
        host['_rank'] = rank
        host['network'] = network
        host['evidence'] = line
