# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/validate.yml run for real (connection local) on three recorded hosts.

gpu-a: the synthetic HGX H100 root with a real nvidia-smi -q (an HGX H800's, one GPU printed) and an empty
kernel log; gpu-b: the real 2 x H200 guest (its recorded nvidia-smi -q is only a grep excerpt, which must
not pass), a real kernel log with Xid 45 and its real PyTorch all-reduce run; cpu-c: a host without GPU or IB.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from playbook_support import ANSIBLE_PLAYBOOK, ROOT
from topology_support import recorded_root

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def run_validate(tmp_path, *options, children=None):
    roots = {}
    for host, case in (('gpu-a', 'hgx_h100'), ('gpu-b', 'h200_vm'), ('cpu-c', 'cpu_only')):
        roots[host] = recorded_root(case, tmp_path / host)
    shutil.copy(fixture('nvsmi_query', 'h800_hgx_persistence_fabric_completed.txt'),
                os.path.join(roots['gpu-a'], '.commands', 'nvidia-smi_q.txt'))
    open(os.path.join(roots['gpu-a'], '.commands', 'dmesg.txt'), 'w', encoding='utf-8').close()
    shutil.copy(fixture('xid', 'journal_xid45_after_nvlink_xid149.txt'), os.path.join(roots['gpu-b'], '.commands', 'dmesg.txt'))
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'hosts': {
        'gpu-a': {'acceptance_probe_root': roots['gpu-a'], 'acceptance_expected_gpu_count': 8,
                  'acceptance_expected_gpu_model': 'NVIDIA H100 80GB HBM3', 'acceptance_expected_nvlinks_per_gpu': 18,
                  'acceptance_expected_ib_ports': 8, 'acceptance_expected_ib_rate_gbps': 400},
        'gpu-b': {'acceptance_probe_root': roots['gpu-b'], 'acceptance_expected_gpu_count': 2,
                  'acceptance_allreduce_logs': [fixture('torch_allreduce', 'h200x2_probe_default.txt')],
                  'acceptance_busbw_overrides': {'16MiB': None, '2GiB': None}},
        'cpu-c': {'acceptance_probe_root': roots['cpu-c']},
    }, 'children': children or {}, 'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'collections'), ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json',
               ANSIBLE_NOCOLOR='1')
    out = tmp_path / 'results'
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'validate.yml'),
                           '-e', 'acceptance_output_dir=' + str(out)] + list(options),
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.stdout.startswith('{'), 'ansible-playbook printed no JSON (rc %s): %s' % (proc.returncode, (proc.stdout + proc.stderr)[-3000:])
    return proc, json.loads(proc.stdout), out


def task_results(report, name):
    for play in report['plays']:
        for task in play['tasks']:
            if task['task']['name'].split(' : ')[-1] == name:
                return task['hosts']
    raise AssertionError('no task %r' % name)


def test_validate_writes_the_report_and_fails_on_the_failing_node(tmp_path):
    proc, report, out = run_validate(tmp_path)
    assert proc.returncode == 2, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    by_name = {node['name']: node for node in document['nodes']}
    assert {name: node['status'] for name, node in by_name.items()} == {'gpu-a': 'pass', 'gpu-b': 'fail', 'cpu-c': 'skip'}
    assert [node['name'] for node in document['failing_nodes']] == ['gpu-b']
    reasons = ' '.join(document['failing_nodes'][0]['reasons'])
    assert 'xid_since_boot: 8 NVIDIA driver error(s) since boot: Xid 45 on 0000:dc:00' in reasons
    assert 'persistence_mode: nvidia-smi -q gave nothing: nvidia-smi -q output not understood' in reasons
    checks_b = {check['check']: check for check in by_name['gpu-b']['checks']}
    assert checks_b['allreduce_busbw']['status'] == 'pass' and checks_b['gpu_count']['status'] == 'pass'
    # The built-in job hooks say why they did not run; a hook nobody provides is "not configured".
    assert checks_b['mpi']['status'] == 'skip' and checks_b['mpi']['reason'] == 'no host of the mpi group in this play'
    assert checks_b['ddp']['reason'] == 'no host of the pytorch group in this play'
    assert checks_b['ib_send_bw_pairs']['reason'] == 'no ACTIVE InfiniBand port on this node'
    checks_a = {check['check']: check for check in by_name['gpu-a']['checks']}
    assert checks_a['ib_send_bw_pairs']['reason'] == 'only gpu-a has an ACTIVE RDMA port in this play: no pair to test'
    assert all(check['status'] == 'skip' and check['reason'] for check in by_name['cpu-c']['checks'])
    markdown = (out / 'latest' / 'acceptance.md').read_text(encoding='utf-8')
    assert '- **gpu-b** (FAIL)' in markdown and '| 4GiB | 343.3 | 343.3 | 343.3 | 291.0 | PASS |' in markdown
    shown = next(iter(task_results(report, 'Show the result per node').values()))['msg']
    assert [line.split()[:2] for line in shown[1:4]] == [['cpu-c', 'skip'], ['gpu-a', 'PASS'], ['gpu-b', 'FAIL']]
    try:
        import matplotlib  # noqa: F401  pylint: disable=unused-import
        assert (out / 'latest' / 'acceptance-busbw-gpu-b.png').exists() and (out / 'latest' / 'acceptance-ib-ports.png').exists()
    except ImportError:
        assert shown[-1].startswith('PNG skipped: matplotlib is not installed')
    failed = next(iter(task_results(report, 'Fail when a node failed acceptance').values()))
    assert 'acceptance fail: gpu-b' in failed['msg']


def test_check_mode_writes_no_file(tmp_path):
    proc, report, out = run_validate(tmp_path, '--check', '-e', '{"acceptance_fail_on_error": false}')
    assert proc.returncode == 0, proc.stderr
    written = next(iter(task_results(report, 'Write the report (JSON, Markdown, PNG)').values()))
    # The run's folder is named (run id), the link and the files would be written there; nothing is.
    run_dir = written['run_dir']
    assert written['changed'] and os.path.dirname(run_dir) == str(out) and written['latest'] == str(out / 'latest')
    assert os.path.join(run_dir, 'acceptance.json') in written['files']
    assert not out.exists()
    mpi = next(iter(task_results(report, 'Record the result of mpi').values()))
    assert mpi['ansible_facts']['__acceptance_hook_results'][-1]['reason'] == 'check mode: no job is submitted'


def test_job_hooks_fail_or_skip_with_the_reason_that_applies(tmp_path):
    # gpu-a is an MPI node, but no host submits Slurm jobs: asked and not run, it fails; the others are outside the
    # mpi group and skip.
    proc, _report, out = run_validate(tmp_path, '-e', '{"acceptance_fail_on_error": false}',
                                      children={'mpi': {'hosts': {'gpu-a': {}}}})
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    mpi = {node['name']: next(check for check in node['checks'] if check['check'] == 'mpi') for node in document['nodes']}
    assert {name: (check['status'], check['reason'], check.get('not_run')) for name, check in mpi.items()} == {
        'gpu-a': ('fail', 'expected but not run: no host submits Slurm jobs (no slurm_controller group; set acceptance_slurm_host)', True),
        'gpu-b': ('skip', 'not in the mpi group', None),
        'cpu-c': ('skip', 'not in the mpi group', None),
    }
    nodes = {node['name']: node for node in document['nodes']}
    assert nodes['gpu-a']['not_run'] == ['mpi'] and 'mpi' in nodes['cpu-c']['skipped']


def test_job_hooks_fail_where_their_stack_is_missing(tmp_path):
    # A Slurm controller exists (cpu-c), but gpu-a has neither the shipped Open MPI nor PyTorch: no vacuous pass.
    proc, _report, out = run_validate(tmp_path, '-e', '{"acceptance_fail_on_error": false}',
                                      children={'mpi': {'hosts': {'gpu-a': {}}}, 'pytorch': {'hosts': {'gpu-a': {}}},
                                                'slurm_controller': {'hosts': {'cpu-c': {}}}})
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    assert checks['gpu-a']['mpi']['reason'] == ('expected but not run: Open MPI with a C compiler not found on any MPI node '
                                                '(/opt/trainstack/openmpi/current/bin/mpicc, cc)')
    assert checks['gpu-a']['ddp']['reason'].startswith('expected but not run: the PyTorch launcher configuration is not installed (')
    assert checks['gpu-a']['nccl_allreduce_single_node']['reason'].startswith(
        'expected but not run: the PyTorch launcher configuration is not installed (')
    assert {checks['gpu-a'][name]['status'] for name in ('mpi', 'ddp', 'nccl_allreduce_single_node')} == {'fail'}
    assert checks['cpu-c']['ddp']['reason'] == 'not in the pytorch group'


def test_job_hooks_can_be_turned_off_or_replaced(tmp_path):
    hook = tmp_path / 'my_ddp.yml'
    hook.write_text('- ansible.builtin.set_fact:\n    acceptance_hook_result: {status: info, reason: mine, samples: 7}\n')
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps({'acceptance_fail_on_error': False, 'acceptance_builtin_hooks': [],
                                                                  'acceptance_hooks': {'ddp': str(hook)}}))
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {check['check']: check for check in document['nodes'][0]['checks']}
    assert checks['mpi']['reason'] == 'hook not configured (acceptance_hooks.mpi)'
    # The hook's measurements stay in the report beside its status and reason.
    assert checks['ddp'] == {'check': 'ddp', 'status': 'info', 'reason': 'mine', 'samples': 7}


def test_a_hook_says_by_the_variable_it_sets_whether_its_all_reduce_ran_on_the_node_or_across_nodes(tmp_path):
    # The hook's name does not route: a file replacing nccl_allreduce_multi_node gives a run on the node, one
    # under another name gives a run across nodes.
    def hook(name, variable, case):
        path = tmp_path / name
        path.write_text(json.dumps([{'ansible.builtin.set_fact': {
            'acceptance_hook_result': {'status': 'info', 'reason': name},
            variable: ["{{ lookup('ansible.builtin.file', %r) }}" % fixture('torch_allreduce', case + '.txt')]}}]))
        return str(path)
    hooks = {'nccl_allreduce_multi_node': hook('on_node.yml', 'acceptance_allreduce_outputs', 'h200x2_probe_default'),
             'ddp': hook('across.yml', 'acceptance_allreduce_multi_node_outputs', 'gloo_2nodes_slurm')}
    options = {'acceptance_fail_on_error': False, 'acceptance_builtin_hooks': [], 'acceptance_allreduce_logs': [],
               'acceptance_hooks': hooks}
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options))
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {check['check']: check for check in document['nodes'][0]['checks']}
    on_node = {entry['label']: entry['values'] for entry in checks['allreduce_busbw']['sizes']}
    across = {entry['label']: entry['values'] for entry in checks['allreduce_busbw_multi_node']['sizes']}
    assert on_node['4GiB'] == [343.3] and '4GiB' not in across
    assert across['1MiB'] == [0.21] and across['64MiB'] == [0.88]


def test_a_scratch_directory_that_would_remove_a_system_tree_is_refused_before_any_check(tmp_path):
    for case, (variable, bad, words) in enumerate((
            ('acceptance_scratch_dir', '/', 'is a system directory'), ('acceptance_scratch_dir', '/usr/../etc', "must not contain '..'"),
            ('acceptance_scratch_dir', 'var/tmp/x', 'must be an absolute path'),
            # validate.yml runs without site.yml's preflight: its own check refuses a loader variable for the MPI job
            ('acceptance_mpi_environment', {'UCX_TLS': 'tcp', 'LD_PRELOAD': '/tmp/x.so'}, "key 'LD_PRELOAD' must be a variable of the MPI stack"))):
        (tmp_path / str(case)).mkdir()
        proc, report, out = run_validate(tmp_path / str(case), '-e', json.dumps({variable: bad}))
        assert proc.returncode == 2, proc.stderr
        failed = next(iter(task_results(report, 'Check the paths, names, hosts, environment and time limits against meta/value_formats.yml').values()))
        assert failed['failed'] and variable in failed['msg'] and words in failed['msg'], failed['msg']
        assert not out.exists()


def fake_torch_python(tmp_path, outputs):
    """A stand-in for the torch interpreter of the launcher configuration: `-c` (the import check) succeeds; a run of
    the benchmark prints the next recorded real output (tests/unit/fixtures/torch_allreduce) and logs its NCCL_* environment.
    No torch here: this replays the real tool's recorded runs."""
    queue = tmp_path / 'queue'
    queue.write_text(''.join(fixture('torch_allreduce', name + '.txt') + '\n' for name in outputs))
    calls = tmp_path / 'calls.log'
    python = tmp_path / 'python'
    python.write_text('#!/bin/sh\n[ "$1" = -c ] && exit 0\n'
                      'echo "$* $(env | grep ^NCCL_ | sort | tr \'\\n\' \' \')" >> %s\n'
                      'cat "$(head -n 1 %s)"; sed -i 1d %s\n' % (calls, queue, queue))
    python.chmod(0o755)
    config = tmp_path / 'pytorch-launch.json'
    config.write_text(json.dumps({'python': str(python)}))
    return {'pytorch_launch_config_path': str(config), 'pytorch_share_dir': os.path.join(ROOT, 'roles', 'pytorch', 'files')}, calls


def test_the_single_node_all_reduce_repeats_a_miss_then_compares_the_tuned_set(tmp_path):
    # 4GiB at 344 GB/s (16MiB and 2GiB are not in these runs): the default run (343.3) misses and is repeated;
    # the second (the topology-file run, 344.7) passes; then the tuned set runs once.
    paths, calls = fake_torch_python(tmp_path, ['h200x2_probe_default', 'h200x2_probe_topofile', 'h200x2_probe_topofile'])
    options = dict(paths, acceptance_fail_on_error=False, acceptance_allreduce_logs=[],
                   acceptance_builtin_hooks=['nccl_allreduce_single_node'],
                   acceptance_busbw_overrides={'16MiB': None, '2GiB': None, '4GiB': 344.0},
                   acceptance_nccl_tuned_environments={'topofile': {'NCCL_TOPO_FILE': '/etc/nccl/topology.xml'}})
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options),
                                      children={'pytorch': {'hosts': {'gpu-b': {}}}})
    assert proc.returncode == 0, proc.stderr
    runs = calls.read_text(encoding='utf-8').splitlines()
    # On GPUs the largest size is the node's table's (2 x H200: 4 GiB), passed on.
    tool = os.path.join(ROOT, 'roles', 'pytorch', 'files', 'allreduce_bench.py') + ' --allow-one-rank --max-mib 4096'
    assert [line.strip() for line in runs] == [tool, tool, tool + ' NCCL_TOPO_FILE=/etc/nccl/topology.xml']
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    verdict = next(entry for entry in checks['gpu-b']['allreduce_busbw']['sizes'] if entry['label'] == '4GiB')
    assert verdict['values'] == [343.3, 344.7] and verdict['status'] == 'pass' and 'passed on attempt 2' in verdict['reason']
    hook = checks['gpu-b']['nccl_allreduce_single_node']
    assert hook['status'] == 'pass' and hook['attempts'] == 2
    # The tuned set's run is the topology-file run again; the baseline is the best of both default attempts:
    # 1MiB 22.5 (attempt 1) against 21.8 = -3.1 %, 4GiB 344.7 (attempt 2) against 344.7 = 0.
    assert hook['comparison']['sets'] == ['topofile'] and hook['comparison']['failed'] == {}
    gains = {entry['label']: entry['gain_pct']['topofile'] for entry in hook['comparison']['sizes']}
    assert (gains['1MiB'], gains['4GiB']) == (-3.1, 0.0)
    assert checks['gpu-a']['nccl_allreduce_single_node']['reason'] == 'not in the pytorch group'
    assert 'allreduce_busbw_multi_node' not in checks['gpu-b']
    assert '| size | default | topofile | best |' in (out / 'latest' / 'acceptance.md').read_text(encoding='utf-8')


def test_the_single_node_all_reduce_runs_nccl_tests_where_it_is_installed(tmp_path):
    """A stand-in all_reduce_perf replays a real nccl-tests run (2 x A100, tests/unit/fixtures/nccl_tests; no GPU here)
    and logs its arguments and NCCL_* environment: where nccl-tests is installed it runs instead of the PyTorch
    benchmark, on every GPU of the node, and torch is not needed (no launcher configuration here)."""
    calls = tmp_path / 'calls.log'
    tool = tmp_path / 'all_reduce_perf'
    tool.write_text('#!/bin/sh\necho "$* $(env | grep ^NCCL_ | sort | tr \'\\n\' \' \')" >> %s\ncat %s\n'
                    % (calls, fixture('nccl_tests', 'all_reduce_a100_2gpu_info_interleaved.txt')))
    tool.chmod(0o755)
    no_thresholds = {size: None for size in ('16MiB', '64MiB', '256MiB', '1GiB', '4GiB')}
    options = {'acceptance_fail_on_error': False, 'acceptance_allreduce_logs': [], 'acceptance_nccl_tests_path': str(tool),
               'acceptance_builtin_hooks': ['nccl_allreduce_single_node'], 'acceptance_busbw_overrides': no_thresholds,
               'pytorch_launch_config_path': str(tmp_path / 'missing.json'),
               'acceptance_nccl_tuned_environments': {'buffsize': {'NCCL_BUFFSIZE': 8388608}}}
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options),
                                      children={'pytorch': {'hosts': {'gpu-b': {}, 'cpu-c': {}}}})
    assert proc.returncode == 0, proc.stderr
    # gpu-b has 2 GPUs (h200_vm); cpu-c has none, so it looks for the PyTorch benchmark instead and says why it cannot.
    assert [line.strip() for line in calls.read_text(encoding='utf-8').splitlines()] == [
        '-b 1M -e 4096M -f 4 -g 2 -c 1', '-b 1M -e 4096M -f 4 -g 2 -c 1 NCCL_BUFFSIZE=8388608']
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    hook = checks['gpu-b']['nccl_allreduce_single_node']
    assert hook['status'] == 'pass' and hook['tool'] == 'nccl-tests'
    assert hook['reason'].startswith('nccl-tests all_reduce_perf: 3 sizes, busbw 192.43 GB/s at 512MiB; ')
    assert [entry['label'] for entry in checks['gpu-b']['allreduce_busbw']['sizes']] == ['128MiB', '256MiB', '512MiB']
    assert checks['cpu-c']['nccl_allreduce_single_node']['reason'].startswith('expected but not run: the PyTorch launcher configuration is not installed (')


def nccl_tests_stand_in(tmp_path, case, rc=0):
    """A stand-in all_reduce_perf: logs its arguments, prints a recorded real nccl-tests output, exits with rc."""
    calls = tmp_path / 'calls.log'
    tool = tmp_path / 'all_reduce_perf'
    tool.write_text('#!/bin/sh\necho "$*" >> %s\ncat %s\nexit %d\n' % (calls, fixture('nccl_tests', case + '.txt'), rc))
    tool.chmod(0o755)
    return tool, calls


def test_a_crash_after_a_complete_nccl_tests_table_fails_with_the_status_and_the_last_lines(tmp_path):
    tool, calls = nccl_tests_stand_in(tmp_path, 'all_reduce_a100_2gpu_info_interleaved', rc=139)
    no_thresholds = {size: None for size in ('16MiB', '64MiB', '256MiB', '1GiB', '4GiB')}
    options = {'acceptance_fail_on_error': False, 'acceptance_allreduce_logs': [], 'acceptance_nccl_tests_path': str(tool),
               'acceptance_builtin_hooks': ['nccl_allreduce_single_node'], 'acceptance_busbw_overrides': no_thresholds}
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options), children={'pytorch': {'hosts': {'gpu-b': {}}}})
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    hook, verdict = checks['gpu-b']['nccl_allreduce_single_node'], checks['gpu-b']['allreduce_busbw']
    assert hook['status'] == 'fail' and hook['reason'] == ('exit status 139 (non-zero return code) after a complete result table; last '
                                                           'lines: # Out of bounds values : 0 OK | # Avg bus bandwidth : 179.465 | #')
    assert verdict['status'] == 'fail' and 'exit status 139' in verdict['reason']
    # A broken run fails at once: one run, no repeat.
    assert len(calls.read_text(encoding='utf-8').splitlines()) == 1


@pytest.mark.parametrize('overrides, largest', [({}, '4096M'), ({'16GiB': 460}, '16384M')])
def test_an_8_gpu_node_runs_up_to_the_largest_size_of_its_thresholds(tmp_path, overrides, largest):
    # gpu-a: 8 x H100 80GB HBM3 (hgx_h100, 81559 MiB each: a 16 GiB run fits a quarter of it).
    tool, calls = nccl_tests_stand_in(tmp_path, 'all_reduce_a100x8_single_node_default_sizes')
    options = {'acceptance_fail_on_error': False, 'acceptance_allreduce_logs': [], 'acceptance_nccl_tests_path': str(tool),
               'acceptance_builtin_hooks': ['nccl_allreduce_single_node'], 'acceptance_busbw_overrides': overrides}
    proc, _report, _out = run_validate(tmp_path, '-e', json.dumps(options), children={'pytorch': {'hosts': {'gpu-a': {}}}})
    assert proc.returncode == 0, proc.stderr
    assert calls.read_text(encoding='utf-8').splitlines()[0].strip() == '-b 1M -e %s -f 4 -g 8 -c 1' % largest


def test_the_all_reduce_hooks_fail_or_skip_with_the_reason_that_applies(tmp_path):
    hooks = ['nccl_allreduce_single_node', 'nccl_allreduce_multi_node']
    children = {'pytorch': {'hosts': {'gpu-a': {}}}, 'slurm_controller': {'hosts': {'cpu-c': {}}}}
    options = {'acceptance_fail_on_error': False, 'acceptance_builtin_hooks': hooks,
               'pytorch_launch_config_path': str(tmp_path / 'missing.json')}
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options), children=children)
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    assert checks['gpu-a']['nccl_allreduce_single_node']['reason'].startswith('expected but not run: the PyTorch launcher configuration is not installed (')
    assert checks['gpu-a']['nccl_allreduce_multi_node']['reason'].startswith('expected but not run: the PyTorch launcher configuration is not installed (')
    assert checks['gpu-a']['nccl_allreduce_multi_node']['status'] == 'fail'
    assert checks['cpu-c']['nccl_allreduce_single_node']['reason'] == 'not in the pytorch group'
    assert checks['cpu-c']['nccl_allreduce_multi_node']['reason'] == 'not in the pytorch group'
    (tmp_path / 'check').mkdir()
    proc, report, _out = run_validate(tmp_path / 'check', '--check', '-e', json.dumps(options), children=children)
    assert proc.returncode == 0, proc.stderr
    results = task_results(report, 'Record the result of nccl_allreduce_multi_node')['gpu-a']
    assert [hook['reason'] for hook in results['ansible_facts']['__acceptance_hook_results'][-2:]] == [
        'check mode: nothing is run', 'check mode: no job is submitted']


def test_nccl_tests_across_nodes_leaves_out_each_node_that_cannot_host_its_ranks(tmp_path):
    # Forced nccl-tests: gpu-a's all_reduce_perf is a program without libmpi (ldd of /bin/true: an MPI=0 build for
    # srun's purpose), gpu-b's is missing. Each FAILs alone, counted as not run, with its own reason; no job starts.
    missing = tmp_path / 'missing' / 'all_reduce_perf'
    children = {'pytorch': {'hosts': {'gpu-a': {'acceptance_nccl_tests_path': '/bin/true'},
                                      'gpu-b': {'acceptance_nccl_tests_path': str(missing)}}},
                'slurm_controller': {'hosts': {'cpu-c': {}}}}
    options = {'acceptance_fail_on_error': False, 'acceptance_builtin_hooks': ['nccl_allreduce_multi_node'],
               'acceptance_allreduce_multi_node_tool': 'nccl-tests'}
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps(options), children=children)
    assert proc.returncode == 0, proc.stderr
    document = json.loads((out / 'latest' / 'acceptance.json').read_text(encoding='utf-8'))
    checks = {node['name']: {check['check']: check for check in node['checks']} for node in document['nodes']}
    assert checks['gpu-a']['nccl_allreduce_multi_node']['status'] == 'fail'
    assert checks['gpu-a']['nccl_allreduce_multi_node']['reason'] == (
        'expected but not run: nccl-tests at /bin/true is built without MPI (MPI=0): srun cannot join its ranks into one test')
    assert checks['gpu-b']['nccl_allreduce_multi_node']['status'] == 'fail'
    assert checks['gpu-b']['nccl_allreduce_multi_node']['reason'].startswith(
        'expected but not run: nccl-tests not usable at %s (' % missing)
    assert checks['cpu-c']['nccl_allreduce_multi_node']['reason'] == 'not in the pytorch group'


@pytest.mark.parametrize('path, words', [
    ('all_reduce_perf', "acceptance_nccl_tests_path must be an absolute path"),
    ('/opt/nccl-tests/../../usr/bin/sh', "acceptance_nccl_tests_path must not contain '..'"),
    ('/opt/nccl-tests/bin/all_reduce_perf\n-c 0', 'acceptance_nccl_tests_path contains a newline'),
])
def test_an_nccl_tests_path_that_is_not_a_clean_absolute_path_is_refused_before_any_check(tmp_path, path, words):
    proc, _report, out = run_validate(tmp_path, '-e', json.dumps({'acceptance_nccl_tests_path': path}))
    assert proc.returncode == 2 and words in proc.stdout, proc.stdout[-2000:]
    assert not out.exists()


def test_a_forbidden_or_malformed_nccl_set_is_refused_before_any_check(tmp_path):
    for case, (tuned, words) in enumerate((({'pin': {'NCCL_GRAPH_FILE': '/tmp/g.xml'}}, 'NCCL_GRAPH_FILE must never be set'),
                                           ({'x': {'NCCL_ALGO': 'Ring Tree'}}, 'acceptance_nccl_tuned_environments.x.NCCL_ALGO contains'))):
        (tmp_path / str(case)).mkdir()
        proc, _report, out = run_validate(tmp_path / str(case), '-e', json.dumps({'acceptance_nccl_tuned_environments': tuned}))
        assert proc.returncode == 2 and words in proc.stdout, proc.stdout[-2000:]
        assert not out.exists()
