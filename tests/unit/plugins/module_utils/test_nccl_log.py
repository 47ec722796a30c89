# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_nccl_log.parse on real NCCL_DEBUG=INFO logs (tests/unit/fixtures/nccl_log, sources in its README).
Every expectation below is read off the fixture's lines by hand."""

from __future__ import annotations

import os

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_log import parse

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'nccl_log')


def read(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def networks(name):
    return {host: facts['network'] for host, facts in parse(read(name)).items()}


@pytest.mark.parametrize('name, expected', [
    ('nccl-2.19.3-dgxh100-roce.txt', {'dgxh100-4': 'IB', 'dgxh100-3': 'IB'}),
    # 2.4.7 prints no "Using network"; NET/IB found mlx5_0 on master_node. The excerpt ends before
    # secondary_node's NET/IB line: its NET/Socket lines (bootstrap) decide nothing.
    ('nccl-2.4.7-ib-two-nodes.txt', {'master_node': 'IB', 'secondary_node': None}),
    ('nccl-2.11.4-net-socket.txt', {'gpu01': 'Socket'}),
    ('nccl-ib-disabled-socket.txt', {'user': 'Socket'}),
    ('nccl-ibext-sharp.txt', {'qh100-gpu19': 'IBext', 'qh100-gpu20': None}),
    ('nccl-ibext-v8-channels.txt', {'hostname-test': 'IBext_v8'}),
    # Only WARN lines and error returns: which network was never said.
    ('nccl-ib-completion-error.txt', {'kp-ddp-worker-0': None}),
    ('nccl-aws-no-ib-device.txt', {'ip-172-31-12-21': 'Socket', 'ip-172-31-12-210': None, 'ip-172-31-5-233': 'Socket',
                                   'ip-172-31-5-237': None, 'ip-172-31-8-153': None}),
])
def test_the_network_nccl_chose_per_host(name, expected):
    assert networks(name) == expected


def test_the_hcas_nccl_uses_and_the_line_that_decided():
    host = parse(read('nccl-2.19.3-dgxh100-roce.txt'))['dgxh100-3']
    assert host['ib_devices'] == [{'name': 'mlx5_10', 'port': 1, 'link': 'RoCE'}, {'name': 'mlx5_11', 'port': 1, 'link': 'RoCE'}]
    assert host['evidence'] == 'Using network IB'
    sharp = parse(read('nccl-ibext-sharp.txt'))['qh100-gpu19']
    assert [device['name'] for device in sharp['ib_devices']] == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5']
    assert {device['link'] for device in sharp['ib_devices']} == {'IB'}
    old = parse(read('nccl-2.4.7-ib-two-nodes.txt'))['master_node']
    assert old['evidence'] == 'NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>'


def test_a_later_using_network_line_beats_an_earlier_ib_device_list():
    # The plugin's line ("Using network IBext") outranks NET/IB's list on the same host, whatever the order.
    assert parse(read('nccl-ibext-sharp.txt'))['qh100-gpu19']['evidence'] == 'Using network IBext'


def test_warnings_are_kept_and_other_programs_lines_skipped():
    host = parse(read('nccl-ib-completion-error.txt'))['kp-ddp-worker-0']
    assert len(host['warnings']) == 2
    assert host['warnings'][0].startswith('NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0')
    # Open MPI's help lines between NCCL's ("[user:852715] 15 more processes ...") belong to no host.
    assert set(parse(read('nccl-ib-disabled-socket.txt'))) == {'user'}
    assert parse('') == {} and parse(None) == {}


def test_a_channel_line_names_the_network_a_connection_took():
    host = parse(read('nccl-ibext-v8-channels.txt'))['hostname-test']
    assert host['evidence'] == 'Channel 10/0 : 35[3] -> 19[3] [send] via NET/IBext_v8/5'
