# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/validate.yml's built-in hook ib_send_bw_pairs run for real (connection local) on recorded hosts.

ib-a and ib-b are the recorded a100_pcie root (one ConnectX HCA, mlx5_0 port 1) with the port's rate rewritten to
40 Gb/sec (4X QDR): the recorded perftest runs come from a ConnectX-3 of that era. There is no HCA here, so
stand-in `ib_send_bw` / `ib_send_lat` executables, first on PATH, replay RECORDED OUTPUTS OF THE REAL TOOL from
tests/unit/fixtures/perftest/: the server side's report for the server invocation, the client side's report for
the client invocation (the one that ends with the server's address). Each stand-in writes its argument vector
to a log, so the tests check the command lines the hook passed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from playbook_support import ANSIBLE_PLAYBOOK, ROOT, failures_and_changes
from topology_support import recorded_root

PERFTEST = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'perftest')
SERVER_ADDRESS = '127.0.0.1'
REPLAYS = {
    'ib_send_bw': ('ib_send_bw_ib_ud_mbytes_sweep.txt', 'ib_send_bw_ib_rc_mbytes_sweep_client.txt'),
    'ib_send_lat': ('ib_send_lat_ib_rc_server.txt', 'ib_send_lat_ib_ud_sweep_client.txt'),
}


def stand_ins(directory, log):
    """ib_send_bw and ib_send_lat that log their arguments and print a recorded report of the real tool."""
    os.makedirs(directory)
    for tool, (server, client) in REPLAYS.items():
        path = os.path.join(directory, tool)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write('#!/bin/sh\n'
                         'echo "%s $*" >> "%s"\n'
                         'for last in "$@"; do :; done\n'
                         'if [ "$last" = "%s" ]; then cat "%s"; else cat "%s"; fi\n'
                         % (tool, log, SERVER_ADDRESS, os.path.join(PERFTEST, client), os.path.join(PERFTEST, server)))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return directory


def run_validate(tmp_path, cases=('a100_pcie', 'a100_pcie'), perftest=True, extra=None, options=(), rc=0):
    hosts = {}
    for name, case in zip(('ib-a', 'ib-b'), cases):
        root = recorded_root(case, tmp_path / name)
        rate = os.path.join(root, 'sys', 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'rate')
        if os.path.exists(rate):
            with open(os.path.realpath(rate), 'w', encoding='utf-8') as handle:
                handle.write('40 Gb/sec (4X QDR)\n')
        hosts[name] = {'acceptance_probe_root': root, 'base_host_address': SERVER_ADDRESS}
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'acceptance_builtin_hooks': ['ib_send_bw_pairs'], 'acceptance_fail_on_error': False}}}))
    log = tmp_path / 'argv.log'
    path = os.environ['PATH']
    if perftest:
        path = stand_ins(str(tmp_path / 'bin'), str(log)) + os.pathsep + path
    env = dict(os.environ, PATH=path, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'collections'), ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json',
               ANSIBLE_NOCOLOR='1')
    out = tmp_path / 'results'
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'validate.yml'),
                           '-e', 'acceptance_output_dir=' + str(out), '-e', json.dumps(extra or {})] + list(options),
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == rc, proc.stdout[-3000:] + proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8')) if (out / 'latest' / 'acceptance.json').exists() else None
    calls = log.read_text(encoding='utf-8').splitlines() if log.exists() else []
    return document, calls, out, json.loads(proc.stdout)


def ib_checks(document):
    return {node['name']: next(check for check in node['checks'] if check['check'] == 'ib_send_bw_pairs') for node in document['nodes']}


BW_SERVER = 'ib_send_bw -d mlx5_0 -i 1 -F -s 65536 -p 18515 --report_gbits'
LAT_SERVER = 'ib_send_lat -d mlx5_0 -i 1 -F -s 2 -p 18515'
ONE_ATTEMPT = [(BW_SERVER, BW_SERVER + ' ' + SERVER_ADDRESS), (LAT_SERVER, LAT_SERVER + ' ' + SERVER_ADDRESS)]


def runs(calls):
    """The invocations two by two (server, client): the server starts in the background, so either may log first."""
    return [tuple(sorted(calls[index:index + 2], key=len)) for index in range(0, len(calls), 2)]


def test_a_pair_that_reaches_the_fraction_passes_with_its_figures_in_every_rendering(tmp_path):
    document, calls, out, report = run_validate(tmp_path, extra={'acceptance_ib_min_bw_fraction': 0.75, 'acceptance_ib_max_latency_us': 2})
    # Acceptance changes nothing on the nodes: the one change is the report written on the controller.
    assert failures_and_changes(report)[1] == ['trainstack.cluster.acceptance : Write the report (JSON, Markdown, PNG)']
    # Two nodes: one pair (ib-a client, ib-b server); ib_send_bw then ib_send_lat, each a server and a client run.
    assert runs(calls) == ONE_ATTEMPT
    checks = ib_checks(document)
    assert {name: check['status'] for name, check in checks.items()} == {'ib-a': 'pass', 'ib-b': 'pass'}
    # 3653.23 MB/sec at 65536 bytes = 30.6 Gb/s >= 0.75 x 40; t_typical 0.81 us <= 2.
    assert checks['ib-a']['reason'] == '1 port pairs passed: lowest ib_send_bw 30.6 Gb/s, highest ib_send_lat 0.81 us'
    link = checks['ib-b']['links'][0]
    assert (link['name'], link['threshold_gbps'], round(link['bw_gbps'], 2), link['latency_us'], link['attempts']) == (
        'ib-a mlx5_0/1 -> ib-b mlx5_0/1', 30.0, 30.65, 0.81, 1)
    markdown = (out / 'latest' / 'acceptance.md').read_text(encoding='utf-8')
    assert '| ib-a mlx5_0/1 -> ib-b mlx5_0/1 | 40 | 30.0 | 30.6 | 0.81 | PASS |' in markdown
    try:
        import matplotlib  # noqa: F401  pylint: disable=unused-import
        assert (out / 'latest' / 'acceptance-ib-ports.png').exists()
    except ImportError:
        pass


def test_bandwidth_under_the_fraction_is_repeated_then_fails_naming_pair_hca_and_figure(tmp_path):
    document, calls, _out, _report = run_validate(tmp_path)
    # policy.attempts (3) attempts of both tests: 3 x 4 invocations.
    assert runs(calls) == ONE_ATTEMPT * 3
    checks = ib_checks(document)
    assert {name: check['status'] for name, check in checks.items()} == {'ib-a': 'fail', 'ib-b': 'fail'}
    assert checks['ib-a']['reason'] == ('ib-a mlx5_0/1 -> ib-b mlx5_0/1: ib_send_bw 30.6 Gb/s < 36.0 (0.9 of 40 Gb/s) '
                                        'in all 3 attempts')
    assert [node['name'] for node in document['failing_nodes']] == ['ib-a', 'ib-b']


def test_without_perftest_a_node_with_active_ports_fails_as_not_run(tmp_path):
    if shutil.which('ib_send_bw'):
        pytest.skip('perftest is installed on this machine (%s): a missing one cannot be staged' % shutil.which('ib_send_bw'))
    document, calls, _out, _report = run_validate(tmp_path, perftest=False)
    assert calls == []
    reason = 'expected but not run: perftest (ib_send_bw, ib_send_lat) not found on this node, whose RDMA ports are ACTIVE'
    assert {name: (check['status'], check['reason'], check.get('not_run')) for name, check in ib_checks(document).items()} == {
        'ib-a': ('fail', reason, True),
        'ib-b': ('fail', reason, True),
    }


def test_nodes_without_ports_skip_and_a_single_node_has_no_pair(tmp_path):
    document, calls, _out, _report = run_validate(tmp_path, cases=('a100_pcie', 'cpu_only'))
    assert calls == []
    assert {name: (check['status'], check['reason']) for name, check in ib_checks(document).items()} == {
        'ib-a': ('skip', 'only ib-a has an ACTIVE RDMA port in this play: no pair to test'),
        'ib-b': ('skip', 'no ACTIVE InfiniBand port on this node'),
    }


def test_check_mode_runs_no_perftest(tmp_path):
    document, calls, _out, report = run_validate(tmp_path, options=('--check',))
    assert document is None and calls == []
    for play in report['plays']:
        for task in play['tasks']:
            if task['task']['name'].split(' : ')[-1] == 'Record the result of ib_send_bw_pairs':
                results = task['hosts']
    assert {host: result['ansible_facts']['__acceptance_hook_results'][-1]['reason'] for host, result in results.items()} == {
        'ib-a': 'check mode: perftest is not run', 'ib-b': 'check mode: perftest is not run'}


def test_perftest_settings_that_cannot_reach_its_command_line_are_refused_naming_the_variable(tmp_path):
    _document, calls, out, report = run_validate(tmp_path, extra={'acceptance_ib_tcp_port': 80, 'acceptance_ib_min_bw_fraction': 1.5},
                                                 rc=2)
    assert calls == [] and not out.exists()
    failed = next(result for play in report['plays'] for task in play['tasks']
                  if task['task']['name'].endswith('against meta/value_formats.yml') for result in task['hosts'].values())
    assert 'acceptance_ib_tcp_port must be at least 1024, got 80' in failed['msg']
    assert 'acceptance_ib_min_bw_fraction must be at most 1, got 1.5' in failed['msg']
