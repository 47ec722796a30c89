# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""diagnose_facts: its parsers on recorded outputs, and the module on the recorded healthy and broken roots.

Expected values are written by hand from the recordings (tests/unit/fixtures/diagnose/README.md names their sources).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.trainstack.cluster.plugins.modules import diagnose_facts
from topology_support import UNIT_DIR, load_script, run_module

FIXTURES = os.path.join(UNIT_DIR, 'fixtures')
DIAGNOSE = os.path.join(FIXTURES, 'diagnose')


make_roots = load_script(os.path.join(DIAGNOSE, 'make_roots.py'))


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize(('case', 'expected'), [
    ('healthy', {'offset_s': -0.000052616, 'leap_status': 'Normal', 'stratum': 2, 'synchronized': True}),
    ('broken', {'offset_s': -7.810536861, 'leap_status': 'Normal', 'stratum': 3, 'synchronized': True}),
])
def test_chronyc_tracking(case, expected):
    clock = diagnose_facts.parse_chronyc_tracking(read('diagnose', case, 'chronyc_tracking.txt'))
    assert {key: clock[key] for key in expected} == expected


@pytest.mark.parametrize(('text', 'expected'), [
    # chronyd on its own local clock (Reference ID 7F7F0101), no leap status line.
    ('Reference ID    : 7F7F0101 ()\nStratum         : 10\nSystem time     : 0.120790944 seconds fast of NTP time\n',
     {'offset_s': 0.120790944, 'synchronized': False}),
    ('506 Cannot talk to daemon\n', None),
])
def test_chronyc_tracking_unsynchronised_or_absent(text, expected):
    clock = diagnose_facts.parse_chronyc_tracking(text)
    assert (clock if clock is None else {key: clock[key] for key in expected}) == expected


@pytest.mark.parametrize(('case', 'expected'), [
    ('healthy', {'source': 'vmstat', 'iowait_pct': 0, 'idle_pct': 100}),
    ('broken', {'source': 'vmstat', 'iowait_pct': 35, 'idle_pct': 55}),
])
def test_vmstat_last_row(case, expected):
    assert diagnose_facts.parse_vmstat(read('diagnose', case, 'vmstat.txt')) == expected


def test_systemctl_show():
    assert diagnose_facts.parse_systemctl_show(read('diagnose', 'broken', 'systemctl_show.txt')) == {
        'slurmd.service': {'load_state': 'loaded', 'active_state': 'active', 'sub_state': 'running', 'result': 'success'},
        'munge.service': {'load_state': 'loaded', 'active_state': 'failed', 'sub_state': 'failed', 'result': 'exit-code'},
    }


def test_listpids_skips_the_extern_placeholder():
    assert diagnose_facts.parse_listpids(read('diagnose', 'broken', 'scontrol_listpids.txt')) == [
        {'pid': 81234, 'step': 'extern', 'local_id': None}, {'pid': 81301, 'step': '0', 'local_id': 0},
        {'pid': 81302, 'step': '0', 'local_id': 1}]


def test_gpu_sample_row():
    sample = diagnose_facts.parse_gpu_sample(read('diagnose', 'broken', 'nvidia-smi_query-gpu-sample-0.txt'))
    assert sample[1] == {'index': 1, 'busid': '0000:4b:00.0', 'utilization_gpu': 97, 'utilization_memory': 61,
                         'memory_used_mib': 40210, 'memory_total_mib': 46068, 'throttle_reasons': 0x40, 'temperature_c': 91,
                         'power_w': 298, 'clocks_sm_mhz': 1110, 'clocks_max_sm_mhz': 2520}


@pytest.mark.parametrize(('text', 'expected'), [
    ('# a comment\nNCCL_SOCKET_IFNAME==eth0\n NCCL_IB_HCA = =mlx5_0:1 # rail 0\nnot a setting\n',
     {'NCCL_SOCKET_IFNAME': '=eth0', 'NCCL_IB_HCA': '=mlx5_0:1'}),
    ('', {}),
])
def test_nccl_conf(text, expected):
    assert diagnose_facts.parse_nccl_conf(text) == expected


def test_kernel_events_keep_link_lines_and_leave_xid_lines_to_the_xid_parser():
    link, other = diagnose_facts.kernel_events(read('diagnose', 'broken', 'journalctl_k_b.txt'))
    assert [event['line'] for event in link] == ['[  190.178748] r8169 0000:06:00.0 eth0: link down',
                                                 '[  190.178780] r8169 0000:06:00.0 eth0: link down']
    assert other == []


def gather(case, tmp_path, capsys, **options):
    root = make_roots.materialize(case, str(tmp_path / case))
    result = run_module(diagnose_facts.main, dict({'root': root}, **options), capsys)
    assert result['changed'] is False
    return result['ansible_facts']['trainstack_diagnose']


def test_healthy_root(tmp_path, capsys):
    facts = gather('healthy', tmp_path, capsys, node_name='gpu01')
    assert (facts['slurm']['state'], facts['slurm']['down'], facts['slurm']['drain']) == ('IDLE', False, False)
    assert facts['services']['munge.service']['active_state'] == 'active'
    assert len(facts['gpu_samples']) == 3 and [row['busid'] for row in facts['gpu_samples'][0]][:2] == ['0000:18:00.0', '0000:1a:00.0']
    assert facts['nccl_conf']['topo_file_exists'] is True
    assert facts['job'] is None and set(facts['errors']) == {'kernel_log'}


def test_broken_root(tmp_path, capsys):
    facts = gather('broken', tmp_path, capsys, node_name='gpu02', job='4242')
    assert facts['slurm']['state'] == 'IDLE+NOT_RESPONDING'
    ports = {hca['name']: hca['ports'][0] for hca in facts['topology']['hcas']}
    assert ports['mlx5_0']['state'] == 'DOWN' and ports['mlx5_0']['counters'] == {}
    assert (ports['mlx5_1']['counters']['link_downed'], ports['mlx5_1']['counters']['port_xmit_discards']) == (255, 65535)
    gpu1 = facts['topology']['gpus'][1]
    assert (gpu1['numa_node'], gpu1['local_cpulist'], gpu1['pcie']['current_link_width']) == (1, '32-63', 8)
    assert [(p['pid'], p['cpus_allowed'], p['gpus']) for p in facts['job']['processes']] == [
        (81234, None, []), (81301, '0-15', ['0000:31:00.0']), (81302, '16-31', ['0000:4b:00.0'])]
    assert facts['job']['processes'][1]['cuda_visible_devices'] == '0,1'
    assert facts['kernel_log']['xid']['xids'] == [79] and len(facts['kernel_log']['link_events']) == 2
    assert facts['nccl_conf'] == {'path': '/etc/nccl.conf', 'topo_file_exists': False, 'topo_file': None, 'settings': {
        'NCCL_SOCKET_IFNAME': '=eth0', 'NCCL_IB_HCA': '=mlx5_0:1', 'NCCL_TOPO_FILE': '/etc/nccl-topo.xml'}}
    # sacct's recording (fixtures/sacct/edited_low_util.txt): the job asked for names the record.
    accounting = facts['job_accounting']
    assert (accounting['id'], accounting['gpu_tres'], [step['step'] for step in accounting['steps']]) == (
        '4242', True, [None, 'batch', 'extern'])
    assert accounting['steps'][1]['ave'] == {'gpuutil_pct': 12.0, 'gpumem_bytes': 4294967296}
    assert facts['errors'] == {}


def test_empty_root_says_what_is_missing(tmp_path, capsys):
    (tmp_path / 'empty').mkdir()
    result = run_module(diagnose_facts.main, {'root': str(tmp_path / 'empty'), 'node_name': 'gpu09', 'job': '77'}, capsys)
    errors = result['ansible_facts']['trainstack_diagnose']['errors']
    assert sorted(errors) == ['clock', 'cpu', 'gpu_samples', 'job', 'job_accounting', 'kernel_log', 'nccl_conf', 'services', 'slurm']
    assert 'scontrol listpids 77 failed' in errors['job']
    assert errors['job_accounting'] == 'sacct -j 77 failed (no accounting database, or no sacct here)'


def test_bad_job_id_fails(tmp_path, capsys):
    result = run_module(diagnose_facts.main, {'root': str(tmp_path), 'job': '1; reboot'}, capsys)
    assert result['failed'] and 'job must be a Slurm job id' in result['msg']


@pytest.mark.parametrize(('params', 'said'), [
    ({'samples': 0}, 'samples must be 1 to 60, got 0'),
    ({'samples': 10 ** 6}, 'samples must be 1 to 60, got 1000000'),
    ({'sample_interval': 3600.0}, 'sample_interval must be 0 to 10 seconds, got 3600.0'),
])
def test_unbounded_sampling_fails(tmp_path, capsys, params, said):
    result = run_module(diagnose_facts.main, dict(params, root=str(tmp_path)), capsys)
    assert result['failed'] and result['msg'] == said


@pytest.mark.parametrize(('name', 'gpus', 'nets'), [
    # The collection's own topology files (tests/unit/fixtures/nccl_xml); bus ids as the recorded topologies list them.
    ('hgx_h100.xml', ['0000:18:00.0', '0000:1a:00.0', '0000:3a:00.0', '0000:3c:00.0', '0000:9d:00.0', '0000:9f:00.0',
                      '0000:bd:00.0', '0000:bf:00.0'], ['mlx5_%d' % index for index in range(8)]),
    ('h200_vm.xml', ['0000:00:06.0', '0000:00:07.0'], []),
])
def test_nccl_topology_file_devices(name, gpus, nets):
    with open(os.path.join(FIXTURES, 'nccl_xml', name), encoding='utf-8') as handle:
        assert diagnose_facts.parse_nccl_topo_xml(handle.read()) == {'gpus': gpus, 'nets': nets}


def test_nccl_topology_file_that_is_not_xml():
    assert diagnose_facts.parse_nccl_topo_xml('<system version="1">')['error'].startswith('not XML NCCL can read')
