# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""acceptance_nccl_network on real NCCL logs (tests/unit/fixtures/nccl_log, sources in its README)."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.acceptance_nccl_net import acceptance_nccl_network, acceptance_with_nccl_network

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'nccl_log')


def topology(*ports, state='ACTIVE'):
    """Topology facts with one HCA per 'name:port' (the probe's hcas/ports keys)."""
    hcas = {}
    for spec in ports:
        name, number = spec.split(':')
        hcas.setdefault(name, {'name': name, 'ports': []})['ports'].append(
            {'port': int(number), 'state': state, 'link_layer': 'InfiniBand'})
    return {'hcas': list(hcas.values())}


def read(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def test_sockets_on_a_node_with_active_hcas_fail_naming_ports_and_nccls_line():
    # NCCL_IB_DISABLE=1 on a node whose ibs85f0/ib0 are IPoIB over an HCA: the fall-back the check is for.
    verdict = acceptance_nccl_network(read('nccl-ib-disabled-socket.txt'), {'user': topology('mlx5_0:1')})['user']
    assert verdict['status'] == 'fail'
    assert verdict['reason'].startswith('NCCL used sockets on user although it has ACTIVE RDMA ports (mlx5_0:1); '
                                        'NCCL said "Using network Socket": check the RDMA user space')


def test_rdma_networks_pass_with_the_hcas_nccl_named():
    verdicts = acceptance_nccl_network(read('nccl-2.19.3-dgxh100-roce.txt'),
                                       {'dgxh100-3': topology('mlx5_10:1', 'mlx5_11:1'),
                                        'dgxh100-4': topology('mlx5_10:1', 'mlx5_11:1')})
    assert {host: (v['status'], v['reason']) for host, v in verdicts.items()} == {
        'dgxh100-3': ('pass', 'NCCL used IB on dgxh100-3 (mlx5_10:1/RoCE, mlx5_11:1/RoCE)'),
        'dgxh100-4': ('pass', 'NCCL used IB on dgxh100-4 (mlx5_10:1/RoCE, mlx5_11:1/RoCE)'),
    }
    plugin = acceptance_nccl_network(read('nccl-ibext-v8-channels.txt'), {'hostname-test': topology('mlx5_0:1')})
    assert plugin['hostname-test']['status'] == 'pass' and plugin['hostname-test']['network'] == 'IBext_v8'


@pytest.mark.parametrize('name, facts, host, reason', [
    # Without RDMA ports sockets are what NCCL should use; a DOWN port is none NCCL could use.
    ('nccl-2.11.4-net-socket.txt', {'hcas': []}, 'gpu01', 'no ACTIVE RDMA port on gpu01: NCCL uses Socket'),
    ('nccl-2.11.4-net-socket.txt', topology('mlx5_0:1', state='DOWN'), 'gpu01', 'no ACTIVE RDMA port on gpu01: NCCL uses Socket'),
    # An excerpt with only bootstrap lines for the node, and a node the log does not mention at all.
    ('nccl-2.4.7-ib-two-nodes.txt', topology('mlx5_0:1'), 'secondary_node',
     'NCCL did not say which network it used on secondary_node (no NCCL_DEBUG=INFO line naming it)'),
    ('nccl-2.4.7-ib-two-nodes.txt', topology('mlx5_0:1'), 'third_node',
     'NCCL did not say which network it used on third_node (no NCCL_DEBUG=INFO line naming it)'),
])
def test_what_cannot_be_judged_is_info(name, facts, host, reason):
    verdict = acceptance_nccl_network(read(name), {host: facts})[host]
    assert (verdict['status'], verdict['reason']) == ('info', reason)


def test_nccls_warnings_travel_with_the_verdict():
    verdict = acceptance_nccl_network(read('nccl-ib-completion-error.txt'),
                                      {'kp-ddp-worker-0': topology('mlx5_4:1')})['kp-ddp-worker-0']
    assert verdict['status'] == 'info' and len(verdict['warnings']) == 2


def test_bad_arguments():
    with pytest.raises(AnsibleFilterError, match='expects a dict'):
        acceptance_nccl_network('', ['user'])


@pytest.mark.parametrize('result, verdict, expected', [
    ({'status': 'pass', 'reason': '16 ranks', 'tool': 'nccl-tests'}, {'status': 'fail', 'reason': 'NCCL used sockets on n1'},
     {'status': 'fail', 'reason': '16 ranks; NCCL used sockets on n1'}),
    ({'status': 'pass', 'reason': '16 ranks', 'tool': 'pytorch', 'backend': 'nccl'}, {'status': 'pass', 'reason': 'NCCL used IB on n1'},
     {'status': 'pass', 'reason': '16 ranks; NCCL used IB on n1'}),
    ({'status': 'fail', 'reason': 'busbw low', 'tool': 'nccl-tests'}, {'status': 'info', 'reason': 'NCCL did not say'},
     {'status': 'fail', 'reason': 'busbw low; NCCL did not say'}),
])
def test_the_verdict_folds_into_the_hook_result(result, verdict, expected):
    folded = acceptance_with_nccl_network(result, verdict)
    assert {key: folded[key] for key in ('status', 'reason')} == expected and folded['nccl_network'] == verdict
    assert acceptance_with_nccl_network(result, None) == result


def test_a_run_without_nccl_keeps_its_result():
    gloo = {'status': 'pass', 'reason': 'gloo on CPU', 'tool': 'pytorch', 'backend': 'gloo'}
    assert acceptance_with_nccl_network(gloo, {'status': 'info', 'reason': 'no ACTIVE RDMA port'}) == gloo
