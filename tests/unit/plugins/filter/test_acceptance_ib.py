# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest pairs of the acceptance hook ib_send_bw_pairs: ring, port pairing, command lines, verdict.

Topologies are the reviewed facts of the recorded roots (tests/unit/fixtures/topology/*/expected_facts.json);
the perftest reports are the real outputs of tests/unit/fixtures/perftest/. Expected figures are read off
those texts by hand (MB/sec x 8 x 2^20 / 10^9 for Gb/sec).
"""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.acceptance_ib import (
    acceptance_ib_links, acceptance_ib_node_check, acceptance_ib_pairs, acceptance_ib_records, acceptance_ib_runs)

from acceptance_support import text, topology

SETTINGS = {'bw_size': 65536, 'lat_size': 2, 'tcp_port': 18515, 'timeout_s': 60}
BW_CLIENT = text('perftest', 'ib_send_bw_ib_rc_mbytes_sweep_client')   # 65536 B: 3653.23 MB/sec = 30.6455 Gb/s
LAT_CLIENT = text('perftest', 'ib_send_lat_ib_ud_sweep_client')        # 2 B: t_typical 0.81 us


def hosts(**cases):
    return {host: topology(case) for host, case in cases.items()}


def ring_of(plan):
    return [(pair['client'], pair['server']) for pair in plan['pairs']]


@pytest.mark.parametrize('cases, nodes, ring', [
    ({'a': 'cpu_only', 'b': 'h200_vm'}, [], []),
    ({'a': 'hgx_h100', 'b': 'cpu_only'}, ['a'], []),
    ({'b': 'hgx_h100', 'a': 'hgx_h100'}, ['a', 'b'], [('a', 'b')]),
    ({'n3': 'hgx_h100', 'n1': 'a100_pcie', 'n2': 'hgx_b200_bare', 'x': 'cpu_only'}, ['n1', 'n2', 'n3'],
     [('n1', 'n2'), ('n2', 'n3'), ('n3', 'n1')]),
    # ib_down_roce: the IB port is DOWN and RoCE is not asked for.
    ({'a': 'hgx_h100', 'b': 'ib_down_roce'}, ['a'], []),
])
def test_the_ring_has_each_node_client_once_and_server_once(cases, nodes, ring):
    plan = acceptance_ib_pairs(hosts(**cases))
    assert plan['nodes'] == nodes and ring_of(plan) == ring


def test_ring_of_many_nodes_is_linear_in_pairs():
    plan = acceptance_ib_pairs({'n%02d' % index: topology('a100_pcie') for index in range(12)})
    assert len(plan['pairs']) == 12
    assert sorted(pair['client'] for pair in plan['pairs']) == sorted(pair['server'] for pair in plan['pairs']) == plan['nodes']


def test_excluded_nodes_leave_the_ring():
    plan = acceptance_ib_pairs(hosts(a='hgx_h100', b='hgx_h100', c='hgx_h100'), exclude=['b'])
    assert plan['nodes'] == ['a', 'b', 'c'] and plan['ring'] == ['a', 'c'] and ring_of(plan) == [('a', 'c')]


def test_ports_pair_by_hca_name_then_by_index():
    plan = acceptance_ib_pairs(hosts(a='hgx_h100', b='a100_pcie'))
    links = plan['pairs'][0]['links']
    # a100_pcie has one HDR port, mlx5_0: the same name on the 8-port HGX side; the other 7 stay unpaired.
    assert [(link['client_hca'], link['server_hca'], link['rate_gbps']) for link in links] == [('mlx5_0', 'mlx5_0', 200.0)]
    assert plan['pairs'][0]['unpaired'] == ['a mlx5_%d/1' % index for index in range(1, 8)]
    renamed = hosts(a='hgx_h100', b='a100_pcie')
    renamed['b']['hcas'][0]['name'] = 'mlx5_9'
    links = acceptance_ib_pairs(renamed)['pairs'][0]['links']
    assert [(link['client_hca'], link['server_hca']) for link in links] == [('mlx5_0', 'mlx5_9')]
    both = acceptance_ib_pairs(hosts(a='hgx_h100', b='hgx_h100'))['pairs'][0]
    assert [link['name'] for link in both['links']][:2] == ['a mlx5_0/1 -> b mlx5_0/1', 'a mlx5_1/1 -> b mlx5_1/1']
    assert len(both['links']) == 8 and both['unpaired'] == []


def test_server_address_prefers_the_cluster_address_then_the_fallback_then_the_name():
    topologies = hosts(a='hgx_h100', b='hgx_h100', c='hgx_h100')
    plan = acceptance_ib_pairs(topologies, {'a': '10.0.0.1', 'b': '', 'c': ''}, fallback_addresses={'b': 'b.mgmt', 'c': ''})
    assert {pair['server']: pair['server_address'] for pair in plan['pairs']} == {'b': 'b.mgmt', 'c': 'c', 'a': '10.0.0.1'}


def test_roce_ports_join_with_include_roce_and_use_a_roce_v2_gid_with_ipv4():
    # ib_down_roce's mlx5_1: GIDs 1 (RoCE v2, link-local) and 3 (RoCE v2, 10.10.1.21).
    plan = acceptance_ib_pairs(hosts(a='ib_down_roce', b='ib_down_roce'), include_roce=True)
    link = plan['pairs'][0]['links'][0]
    assert (link['client_hca'], link['link_layer'], link['rate_gbps'], link['client_gid_index']) == ('mlx5_1', 'Ethernet', 100.0, 3)
    runs = acceptance_ib_runs(plan, SETTINGS)[0]
    assert runs[0]['server_argv'] == ['timeout', '60', 'ib_send_bw', '-d', 'mlx5_1', '-i', '1', '-F', '-s', '65536', '-p', '18515',
                                      '--report_gbits', '-x', '3']


def test_runs_are_bandwidth_then_latency_per_port_pair_with_the_server_address_last():
    plan = acceptance_ib_pairs(hosts(a='a100_pcie', b='a100_pcie'), {'a': '10.0.0.1', 'b': '10.0.0.2'})
    rounds = acceptance_ib_runs(plan, dict(SETTINGS, lat_size=8, timeout_s=30, tcp_port=20000))
    assert [[(run['name'], run['client'], run['server']) for run in runs] for runs in rounds] == [
        [('ib_send_bw a mlx5_0/1 -> b mlx5_0/1', 'a', 'b')], [('ib_send_lat a mlx5_0/1 -> b mlx5_0/1', 'a', 'b')]]
    runs = [run for runs in rounds for run in runs]
    assert runs[0]['client_argv'] == ['timeout', '30', 'ib_send_bw', '-d', 'mlx5_0', '-i', '1', '-F', '-s', '65536', '-p', '20000',
                                      '--report_gbits', '10.0.0.2']
    assert runs[1]['server_argv'] == ['timeout', '30', 'ib_send_lat', '-d', 'mlx5_0', '-i', '1', '-F', '-s', '8', '-p', '20000']
    with pytest.raises(AnsibleFilterError, match='settings need timeout_s'):
        acceptance_ib_runs(plan, {'bw_size': 1, 'lat_size': 1, 'tcp_port': 1})


def names(rounds):
    return [[run['name'] for run in runs] for runs in rounds]


def test_rounds_run_pairs_that_share_no_node_together_and_do_not_grow_with_the_nodes():
    # Four nodes with 8 ports: pairs a->b and c->d together, then b->c and d->a; 2 groups x 8 ports x 2 tests.
    rounds = acceptance_ib_runs(acceptance_ib_pairs(hosts(a='hgx_h100', b='hgx_h100', c='hgx_h100', d='hgx_h100')), SETTINGS)
    assert len(rounds) == 32
    assert names(rounds)[:3] == [['ib_send_bw a mlx5_0/1 -> b mlx5_0/1', 'ib_send_bw c mlx5_0/1 -> d mlx5_0/1'],
                                 ['ib_send_lat a mlx5_0/1 -> b mlx5_0/1', 'ib_send_lat c mlx5_0/1 -> d mlx5_0/1'],
                                 ['ib_send_bw a mlx5_1/1 -> b mlx5_1/1', 'ib_send_bw c mlx5_1/1 -> d mlx5_1/1']]
    assert names(rounds)[16] == ['ib_send_bw b mlx5_0/1 -> c mlx5_0/1', 'ib_send_bw d mlx5_0/1 -> a mlx5_0/1']
    for runs in rounds:
        busy = [run['client'] for run in runs] + [run['server'] for run in runs]
        assert len(busy) == len(set(busy))
    # An odd ring needs a third group: the last pair shares a node with the first and with the one before it.
    plan = acceptance_ib_pairs({name: topology('a100_pcie') for name in 'abcde'})
    assert [pair['group'] for pair in plan['pairs']] == [0, 1, 0, 1, 2]
    assert names(acceptance_ib_runs(plan, SETTINGS))[::2] == [
        ['ib_send_bw a mlx5_0/1 -> b mlx5_0/1', 'ib_send_bw c mlx5_0/1 -> d mlx5_0/1'],
        ['ib_send_bw b mlx5_0/1 -> c mlx5_0/1', 'ib_send_bw d mlx5_0/1 -> e mlx5_0/1'],
        ['ib_send_bw e mlx5_0/1 -> a mlx5_0/1']]


def qdr_plan():
    """Two nodes whose one port (a100_pcie's mlx5_0) is rewritten to 40 Gb/sec, the era of the recorded ConnectX-3 run."""
    topologies = hosts(a='a100_pcie', b='a100_pcie')
    for facts in topologies.values():
        facts['hcas'][0]['ports'][0].update(rate='40 Gb/sec (4X QDR)', speed_mbps=40000)
    return acceptance_ib_pairs(topologies)


def records(attempts, settings=None, bw=None, plan=None):
    """The figures of every run's client as the hook keeps them: ib_send_bw's report per link (default BW_CLIENT)."""
    settings = settings or SETTINGS
    out = []
    for attempt in range(1, attempts + 1):
        for runs in acceptance_ib_runs(plan or qdr_plan(), settings):
            for run in runs:
                stdout = LAT_CLIENT if run['test'] == 'lat' else (bw or {}).get(run['link'], BW_CLIENT)
                out += acceptance_ib_records([run], {run['client']: {'rc': 0, 'stdout': stdout, 'stderr': ''}}, attempt, settings)
    return out


@pytest.mark.parametrize('attempts, fraction, max_lat, status, reason', [
    (1, 0.75, None, 'pass', '30.6 Gb/s, 0.81 us'),
    (1, 0.75, 0.9, 'pass', '30.6 Gb/s, 0.81 us'),
    (1, 0.9, None, 'repeat', 'ib_send_bw 30.6 Gb/s < 36.0 (0.9 of 40 Gb/s) on attempt 1 of 3: repeat to rule out noise'),
    (3, 0.9, None, 'fail', 'ib_send_bw 30.6 Gb/s < 36.0 (0.9 of 40 Gb/s) in all 3 attempts'),
    (3, 0.75, 0.5, 'fail', 'ib_send_lat 0.81 us > 0.5 us in all 3 attempts'),
])
def test_link_verdict_against_the_line_rate(attempts, fraction, max_lat, status, reason):
    links = acceptance_ib_links(records(attempts), qdr_plan(), fraction, max_lat, 3)
    assert [(link['status'], link['reason']) for link in links] == [(status, reason)]
    assert links[0]['threshold_gbps'] == pytest.approx(40 * fraction)
    assert links[0]['bw_gbps'] == pytest.approx(30.6455, rel=1e-4) and links[0]['latency_us'] == 0.81


def test_a_miss_then_a_pass_passes_and_only_repeats_are_run_again():
    plan = qdr_plan()
    missed = acceptance_ib_links(records(1), plan, 0.9)
    again = names(acceptance_ib_runs(plan, SETTINGS, missed))
    assert again == [['ib_send_bw a mlx5_0/1 -> b mlx5_0/1'], ['ib_send_lat a mlx5_0/1 -> b mlx5_0/1']]
    # Attempt 1 at 4096 bytes: 3498.37 MB/sec = 29.3465 Gb/s; attempt 2 at 65536 bytes: 30.6455 Gb/s >= 0.75 x 40.
    both = records(1, dict(SETTINGS, bw_size=4096)) + [dict(record, attempt=2) for record in records(1)]
    links = acceptance_ib_links(both, plan, 0.75)
    assert links[0]['status'] == 'pass' and links[0]['attempts'] == 2
    assert links[0]['bw_values_gbps'] == pytest.approx([29.3465, 30.6455], rel=1e-5)
    assert acceptance_ib_runs(plan, SETTINGS, links) == []


@pytest.mark.parametrize('record, words', [
    ({'rc': 124, 'stdout': '', 'stderr': ''}, 'ib_send_bw timed out (attempt 1)'),
    ({'rc': 1, 'stdout': '', 'stderr': "Couldn't connect to 10.0.0.2:18515\n"},
     "ib_send_bw exited with 1: Couldn't connect to 10.0.0.2:18515 (attempt 1)"),
    ({'rc': 0, 'stdout': text('perftest', 'ib_write_lat_roce_server_no_rows'), 'stderr': ''}, 'ib_send_bw: no result table'),
    ({'rc': 0, 'stdout': text('perftest', 'ib_send_bw_ib_ud_mbytes_sweep'), 'stderr': ''}, 'ib_send_bw printed no row for 65536 bytes'),
])
def test_a_broken_run_fails_at_once_with_its_words(record, words):
    bw_run = acceptance_ib_runs(qdr_plan(), SETTINGS)[0]
    broken = acceptance_ib_records(bw_run, {'a': record}, 1, SETTINGS) + records(1)[1:]
    links = acceptance_ib_links(broken, qdr_plan(), 0.5)
    assert links[0]['status'] == 'fail' and words in links[0]['reason']


def test_the_fraction_must_be_a_share_of_the_line_rate():
    with pytest.raises(AnsibleFilterError, match=r'min_bw_fraction must be in \(0, 1\]'):
        acceptance_ib_links([], qdr_plan(), 1.5)


def test_node_check_names_the_pair_hca_and_figure_and_keeps_the_links():
    plan = acceptance_ib_pairs(hosts(a='a100_pcie', b='a100_pcie', c='a100_pcie'))
    good = text('perftest', 'ib_write_bw_roce_gbits_bwmin_client')  # 65536 B: 368.48 Gb/s, passes 0.9 x 200
    result = records(1, plan=plan, bw={'a mlx5_0/1 -> b mlx5_0/1': good, 'c mlx5_0/1 -> a mlx5_0/1': good})
    links = acceptance_ib_links(result, plan, 0.9, None, 1)
    check_a = acceptance_ib_node_check(links, 'a')
    assert check_a['status'] == 'pass'
    assert check_a['reason'] == '2 port pairs passed: lowest ib_send_bw 368.5 Gb/s, highest ib_send_lat 0.81 us'
    check_b = acceptance_ib_node_check(links, 'b')
    assert check_b['status'] == 'fail'
    assert check_b['reason'] == 'b mlx5_0/1 -> c mlx5_0/1: ib_send_bw 30.6 Gb/s < 180.0 (0.9 of 200 Gb/s) in all 1 attempts'
    assert [(link['name'], link['status']) for link in check_b['links']] == [
        ('a mlx5_0/1 -> b mlx5_0/1', 'pass'), ('b mlx5_0/1 -> c mlx5_0/1', 'fail')]
    assert acceptance_ib_node_check(links, 'z')['status'] == 'skip'


def test_the_inputs_are_not_changed():
    topologies = hosts(a='hgx_h100', b='hgx_h100')
    before = copy.deepcopy(topologies)
    acceptance_ib_runs(acceptance_ib_pairs(topologies), SETTINGS)
    assert topologies == before


def test_ports_without_a_partner_are_named_untested():
    # hgx_h100's 8 ports against a100_pcie's one: mlx5_0 pairs, the other 7 of a are untested.
    plan = acceptance_ib_pairs(hosts(a='hgx_h100', b='a100_pcie'))
    result = records(1, plan=plan, bw={'a mlx5_0/1 -> b mlx5_0/1': text('perftest', 'ib_write_bw_roce_gbits_bwmin_client')})
    links = acceptance_ib_links(result, plan, 0.9, None, 1)
    check_a = acceptance_ib_node_check(links, 'a', plan)
    assert check_a['status'] == 'pass' and check_a['untested_ports'] == ['a mlx5_%d/1' % index for index in range(1, 8)]
    assert check_a['reason'].endswith('; untested (no partner port): a mlx5_1/1, a mlx5_2/1, a mlx5_3/1, a mlx5_4/1, '
                                      'a mlx5_5/1, a mlx5_6/1, a mlx5_7/1')
    assert acceptance_ib_node_check(links, 'b', plan)['untested_ports'] == []
