# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Renderings of a report built from recorded real outputs (tests/unit/acceptance_support.py)."""

from __future__ import annotations

import json

import pytest

from acceptance_support import recorded_report, text, thresholds

from ansible_collections.trainstack.cluster.plugins.filter.acceptance import (
    acceptance_busbw_verdict, acceptance_parse_allreduce, acceptance_report)
from ansible_collections.trainstack.cluster.plugins.filter.acceptance_allreduce import acceptance_allreduce_result

from ansible_collections.trainstack.cluster.plugins.module_utils import _acceptance_render as render


@pytest.fixture(scope='module')
def report():
    return recorded_report()


def test_the_table_has_one_row_per_node_and_a_summary(report):
    lines = render.table(report)
    assert lines[0].split() == ['NODE', 'STATUS', 'FAILED', 'OR', 'TO', 'REPEAT']
    assert lines[1].split() == ['gpu-a', 'PASS', '-']
    assert lines[2].split()[:2] == ['gpu-b', 'FAIL'] and 'xid_since_boot' in lines[2] and 'ib_ports' in lines[2]
    assert lines[3] == 'FAIL: 1 pass, 1 fail, 0 repeat, 0 skip, 0 info'


def test_json_is_the_report_itself(report):
    assert json.loads(render.to_json(report)) == json.loads(json.dumps(report))


def test_markdown_lists_failing_nodes_with_reasons_and_the_measured_sizes(report):
    text = render.markdown(report, {'gpu-a': 'acceptance-busbw-gpu-a.png'})
    assert '| gpu-b | FAIL | 8 x NVIDIA H100 80GB HBM3 | - | xid_since_boot, ib_ports |' in text
    assert '- **gpu-b** (FAIL)' in text
    assert '  - xid_since_boot: 8 NVIDIA driver error(s) since boot: Xid 45 on 0000:dc:00;' in text
    assert '| 4GiB | 343.3 | 343.3 | 343.3 | 291.0 | PASS |' in text
    assert '| 1MiB | 22.5 | 22.5 | 22.5 | - | info |' in text
    assert '| mlx5_8/1 | DOWN | 10 Gb/sec (4X SDR) |' in text
    assert '![busbw of gpu-a](acceptance-busbw-gpu-a.png)' in text
    assert '| mpi_allreduce | skip | hook not configured |' in text


def test_plot_series_come_from_the_report(report):
    node_a = next(node for node in report['nodes'] if node['name'] == 'gpu-a')
    labels, best, limits, algbw = render.busbw_series(node_a)
    assert labels == ['1MiB', '8MiB', '64MiB', '256MiB', '1GiB', '4GiB']
    assert best == [22.5, 172.7, 264.7, 291.5, 327.2, 343.3]
    assert limits == [None, None, 211.0, 252.0, 278.0, 291.0]
    assert algbw == best  # 2 GPUs: busbw = algbw
    node_b = next(node for node in report['nodes'] if node['name'] == 'gpu-b')
    assert render.busbw_series(node_b) == ([], [], [], [])
    labels, rates = render.ib_series(report)
    assert labels == ['gpu-b mlx5_0/1', 'gpu-b mlx5_1/1', 'gpu-b mlx5_8/1'] and rates == [400.0, 400.0, 0.0]


def test_pngs_are_written_or_skipped_with_a_reason(report, tmp_path):
    written, skipped = render.write_pngs(report, str(tmp_path), 'acceptance')
    try:
        import matplotlib  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        assert written == {} and skipped.startswith('PNG skipped: matplotlib is not installed')
        pytest.skip('matplotlib not installed here: PNG drawing not exercised (skip reason checked above)')
    assert skipped is None and set(written) == {'gpu-a', 'ib'}
    for name in written.values():
        assert (tmp_path / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_perftest_pairs_show_per_port_pair_and_per_port_next_to_the_threshold():
    from acceptance_support import text, topology
    from ansible_collections.trainstack.cluster.plugins.filter.acceptance import acceptance_node_checks, acceptance_report
    from ansible_collections.trainstack.cluster.plugins.filter.acceptance_ib import (
        acceptance_ib_links, acceptance_ib_node_check, acceptance_ib_pairs, acceptance_ib_records, acceptance_ib_runs)
    facts = {'a': topology('a100_pcie'), 'b': topology('a100_pcie')}   # one HDR port each, 200 Gb/sec
    settings = {'bw_size': 65536, 'lat_size': 2, 'tcp_port': 18515, 'timeout_s': 60}
    plan = acceptance_ib_pairs(facts)
    # Real client reports: ib_send_bw at 65536 bytes 3653.23 MB/sec = 30.6 Gb/s; ib_send_lat t_typical 0.81 us.
    reports = {'bw': text('perftest', 'ib_send_bw_ib_rc_mbytes_sweep_client'), 'lat': text('perftest', 'ib_send_lat_ib_ud_sweep_client')}
    records = [record for runs in acceptance_ib_runs(plan, settings) for run in runs
               for record in acceptance_ib_records([run], {'a': {'rc': 0, 'stdout': reports[run['test']]}}, 1, settings)]
    links = acceptance_ib_links(records, plan, 0.9, None, 3)
    report = acceptance_report([{'name': name, 'checks': acceptance_node_checks(facts[name]),
                                 'hooks': [acceptance_ib_node_check(links, name)]} for name in ('a', 'b')])
    text_md = render.markdown(report)
    assert '| a mlx5_0/1 -> b mlx5_0/1 | 200 | 180.0 | 30.6 | 0.81 | REPEAT |' in text_md
    labels, rates = render.ib_series(report)
    measured, limits = render.ib_measured_series(report)
    assert labels == ['a mlx5_0/1', 'b mlx5_0/1'] and rates == [200.0, 200.0]
    assert [round(value, 2) for value in measured] == [30.65, 30.65] and limits == [180.0, 180.0]


def tuned_report():
    """One node with both all-reduce hooks' results: the probe's real default run, and its topology-file run as a
    tuned NCCL environment set (single node); the same default run stands in for the run across nodes."""
    default, topofile = text('torch_allreduce', 'h200x2_probe_default'), text('torch_allreduce', 'h200x2_probe_topofile')
    run = acceptance_parse_allreduce(default)
    node = {'name': 'gpu-a', 'gpu_name': 'NVIDIA H200', 'gpu_count': 2, 'checks': [],
            'allreduce': acceptance_busbw_verdict([run], 'NVIDIA H200', 2, thresholds()),
            'allreduce_multi_node': dict(acceptance_busbw_verdict([run], 'NVIDIA H200', 4, thresholds()),
                                         check='allreduce_busbw_multi_node'),
            'hooks': [acceptance_allreduce_result({'default': [default], 'topofile': [topofile]}, 'nccl_allreduce_single_node',
                                                  None, ['topofile'])]}
    return acceptance_report([node], '2026-12-02T04:00:00Z')


def test_markdown_shows_the_run_across_nodes_and_the_environment_sets():
    document = tuned_report()
    assert [check['check'] for check in document['nodes'][0]['checks']] == [
        'allreduce_busbw', 'allreduce_busbw_multi_node', 'nccl_allreduce_single_node']
    markdown = render.markdown(document, {'multi-node-gpu-a': 'acceptance-busbw-multi-node-gpu-a.png'})
    assert 'All-reduce bus bandwidth across nodes (GB/s), 1 attempt(s), thresholds: none' in markdown
    assert ('NCCL environment sets (nccl_allreduce_single_node): the default environment is best: '
            'no set gains on average over 6 sizes') in markdown
    assert '| size | default | topofile | best |' in markdown
    # 291.5 -> 296.5 GB/s: +1.7 %
    assert '| 256MiB | 291.50 | 296.50 (+1.7 %) | topofile |' in markdown
    assert '| 1MiB | 22.50 | 21.80 (-3.1 %) | default |' in markdown
    assert '![busbw across nodes, seen from gpu-a](acceptance-busbw-multi-node-gpu-a.png)' in markdown


def test_pngs_of_the_run_across_nodes_and_the_sets(tmp_path):
    pytest.importorskip('matplotlib')
    written, skipped = render.write_pngs(tuned_report(), str(tmp_path), 'acceptance')
    assert skipped is None and written == {'gpu-a': 'acceptance-busbw-gpu-a.png',
                                           'multi-node-gpu-a': 'acceptance-busbw-multi-node-gpu-a.png'}
    assert (tmp_path / 'acceptance-busbw-multi-node-gpu-a.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
