# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The diagnose filters: evidence in, findings out. Expectations written by hand from the evidence."""

from __future__ import annotations

import copy
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter import diagnose

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures')


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


GPU0 = {'index': 0, 'busid': '0000:31:00.0', 'numa_node': 0, 'local_cpulist': '0-31',
        'pcie': {'current_link_width': 16, 'max_link_width': 16, 'current_link_speed': '16.0 GT/s PCIe',
                 'max_link_speed': '16.0 GT/s PCIe'}, 'ancestry': [], 'nvlink': {'peers': []}}
PORT = {'port': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '400 Gb/sec (4X NDR)', 'link_layer': 'InfiniBand',
        'counters': {'symbol_error': 0, 'port_xmit_wait': 4294967295}}
CLEAN = {
    'node_name': 'gpu01',
    'slurm': {'name': 'gpu01', 'state': 'IDLE', 'state_flags': [], 'down': False, 'drain': False, 'reason': ''},
    'services': {'slurmd.service': {'load_state': 'loaded', 'active_state': 'active', 'sub_state': 'running', 'result': 'success'},
                 'munge.service': {'load_state': 'loaded', 'active_state': 'active', 'sub_state': 'running', 'result': 'success'}},
    'clock': {'source': 'chronyc tracking', 'offset_s': -0.000052616, 'synchronized': True, 'leap_status': 'Normal',
              'reference': '55C7D664 (85.199.214.100)'},
    'kernel_log': {'source': 'dmesg', 'xid': {'events': [], 'xids': []}, 'link_events': [], 'other_events': []},
    'gpu_samples': [[{'index': 0, 'busid': '0000:31:00.0', 'utilization_gpu': 95, 'memory_used_mib': 40000,
                      'memory_total_mib': 46068, 'throttle_reasons': 0, 'clocks_sm_mhz': 2520, 'clocks_max_sm_mhz': 2520}]],
    'cpu': {'source': 'vmstat', 'iowait_pct': 1, 'idle_pct': 90},
    'job': None,
    'nccl_conf': {'path': '/etc/nccl.conf', 'settings': {'NCCL_SOCKET_IFNAME': '=eno1', 'NCCL_IB_HCA': '=mlx5_0:1'},
                  'topo_file_exists': None},
    'topology': {'gpus': [GPU0], 'hcas': [{'name': 'mlx5_0', 'netdevs': ['ibp25s0'], 'ports': [PORT]}],
                 'ethernet': [{'name': 'eno1', 'virtual': False, 'operstate': 'up'}]},
    'errors': {},
}


def with_(changes):
    """CLEAN with dotted-path changes ({'slurm.state': 'DOWN', ...}, a tuple where a key holds a dot); list indexes
    are numbers."""
    evidence = copy.deepcopy(CLEAN)
    for path, value in changes.items():
        keys = list(path) if isinstance(path, tuple) else path.split('.')
        target = evidence
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return evidence


def found(findings):
    return sorted((item['check'], item['severity']) for item in findings if item['severity'] != 'skipped')


def skipped(findings):
    return sorted(item['check'] for item in findings if item['severity'] == 'skipped')


NODE_LOST = [
    ('clean', {}, [], []),
    ('down-not-responding', {'slurm.state': 'IDLE+NOT_RESPONDING', 'slurm.state_flags': ['NOT_RESPONDING']},
     [('slurm_state', 'error')], []),
    ('drained-low-memory', {'slurm.state': 'UNKNOWN+DRAIN+INVALID_REG', 'slurm.state_flags': ['DRAIN', 'INVALID_REG'],
                            'slurm.drain': True, 'slurm.reason': 'Low RealMemory (reported:24105 < 100.00% of configured:257000)'},
     [('slurm_state', 'warning')], []),
    ('no-slurm', {'slurm': None, 'errors': {'slurm': 'scontrol show node gpu01 failed'}}, [], ['slurm_state']),
    ('munge-failed', {('services', 'munge.service'): {
        'load_state': 'loaded', 'active_state': 'failed', 'sub_state': 'failed', 'result': 'exit-code'}},
     [('service munge.service', 'error')], []),
    ('slurmd-not-installed', {('services', 'slurmd.service'): {
        'load_state': 'not-found', 'active_state': 'inactive', 'sub_state': 'dead', 'result': 'success'}},
     [], ['service slurmd.service']),
    ('clock-7s-slow', {'clock.offset_s': -7.810536861}, [('clock', 'warning')], []),
    ('clock-past-munge-ttl', {'clock.offset_s': 301.0}, [('clock', 'error')], []),
    ('clock-unsynchronised', {'clock.synchronized': False, 'clock.leap_status': 'Not synchronised'}, [('clock', 'warning')], []),
    ('ib-port-polling', {'topology.hcas.0.ports.0': dict(PORT, state='DOWN', phys_state='Polling')}, [('ib_port', 'error')], []),
    ('ib-counters', {'topology.hcas.0.ports.0.counters': {'symbol_error': 12, 'link_downed': 255, 'port_xmit_wait': 9}},
     [('ib_counters', 'warning')], []),
    ('no-ib', {'topology.hcas': []}, [], ['ib_ports']),
    ('no-counters', {'topology.hcas.0.ports.0.counters': {}}, [], ['ib_counters']),
    ('link-down', {'kernel_log.link_events': [{'kind': 'link_down', 'line': '[  190.178748] r8169 0000:06:00.0 eth0: link down'}]},
     [('link_down', 'warning')], []),
    ('oom', {'kernel_log.other_events': [{'kind': 'oom_kill', 'line': 'Out of memory: Killed process 81301 (python3)'}]},
     [('kernel oom_kill', 'warning')], []),
    ('no-kernel-log', {'kernel_log': None}, [], ['kernel_log']),
]


@pytest.mark.parametrize(('changes', 'expected', 'expected_skipped'), [case[1:] for case in NODE_LOST], ids=[case[0] for case in NODE_LOST])
def test_node_lost(changes, expected, expected_skipped):
    findings = diagnose.diagnose_node_lost(with_(changes))
    assert found(findings) == expected
    assert skipped(findings) == expected_skipped
    assert all(item['fix'] for item in findings if item['severity'] != 'skipped')


def test_saturated_counters_are_marked_and_reason_fix_names_the_node():
    findings = diagnose.diagnose_node_lost(with_({
        'topology.hcas.0.ports.0.counters': {'link_downed': 255, 'port_xmit_discards': 65535, 'excessive_buffer_overrun_errors': 15},
        'slurm.state': 'IDLE+NOT_RESPONDING', 'slurm.state_flags': ['NOT_RESPONDING']}))
    by_check = {item['check']: item for item in findings}
    assert by_check['ib_counters']['evidence'] == ('mlx5_0 port 1 (InfiniBand): excessive_buffer_overrun_errors=15, '
                                                   'link_downed=255 (saturated), port_xmit_discards=65535 (saturated)')
    assert 'scontrol update NodeName=gpu01 State=RESUME' in by_check['slurm_state']['fix']


SAMPLE = CLEAN['gpu_samples'][0][0]
GPU_USE = [
    ('clean', {}, [], ['cpu_binding']),
    ('low-use-with-memory', {'gpu_samples': [[dict(SAMPLE, utilization_gpu=4)], [dict(SAMPLE, utilization_gpu=6)]]},
     [('gpu_utilization', 'warning')], ['cpu_binding']),
    ('idle-without-memory', {'gpu_samples': [[dict(SAMPLE, utilization_gpu=0, memory_used_mib=1)]]}, [], ['cpu_binding']),
    ('hw-thermal', {'gpu_samples': [[dict(SAMPLE, throttle_reasons=0x40)]]}, [('gpu_throttle', 'warning')], ['cpu_binding']),
    ('power-brake', {'gpu_samples': [[dict(SAMPLE, throttle_reasons=0x80)]]}, [('gpu_throttle', 'warning')], ['cpu_binding']),
    ('idle-bit-only', {'gpu_samples': [[dict(SAMPLE, throttle_reasons=0x1)]]}, [], ['cpu_binding']),
    ('power-cap-full-clock', {'gpu_samples': [[dict(SAMPLE, throttle_reasons=0x4)]]}, [], ['cpu_binding']),
    ('power-cap-low-clock', {'gpu_samples': [[dict(SAMPLE, throttle_reasons=0x4, clocks_sm_mhz=1200)]]},
     [('gpu_throttle', 'warning')], ['cpu_binding']),
    ('narrow-link', {'topology.gpus.0.pcie.current_link_width': 8}, [('pcie_width', 'warning')], ['cpu_binding']),
    ('slow-link-busy', {'topology.gpus.0.pcie.current_link_speed': '2.5 GT/s PCIe'}, [('pcie_speed', 'warning')], ['cpu_binding']),
    ('slow-link-idle', {'topology.gpus.0.pcie.current_link_speed': '2.5 GT/s PCIe',
                        'gpu_samples': [[dict(SAMPLE, utilization_gpu=0, memory_used_mib=1)]]}, [], ['cpu_binding']),
    ('gen5-gpu-in-gen4-slot', {'topology.gpus.0.pcie.max_link_speed': '32.0 GT/s PCIe',
                               'topology.gpus.0.ancestry': [{'pcie': {'max_link_speed': '16.0 GT/s PCIe', 'max_link_width': 16}}]},
     [], ['cpu_binding']),
    ('iowait', {'cpu.iowait_pct': 35}, [('iowait', 'warning')], ['cpu_binding']),
    ('no-vmstat', {'cpu': None}, [], ['cpu_binding', 'iowait']),
    ('no-gpu', {'topology.gpus': [], 'gpu_samples': None}, [], ['gpus']),
    ('cross-numa-rank', {'job': {'id': '4242', 'processes': [{'pid': 81302, 'name': 'python3', 'step': '0', 'cpus_allowed': '32-47',
                                                              'gpus': ['0000:31:00.0']}]}}, [('cpu_binding', 'warning')], []),
    ('rank-next-to-gpu', {'job': {'id': '4242', 'processes': [{'pid': 81301, 'name': 'python3', 'step': '0', 'cpus_allowed': '0-15',
                                                               'gpus': ['0000:31:00.0']}]}}, [], []),
    ('gpu-without-numa', {'topology.gpus.0.numa_node': -1,
                          'job': {'id': '4242', 'processes': [{'pid': 1, 'cpus_allowed': '32-47', 'gpus': ['0000:31:00.0']}]}},
     [], ['cpu_binding']),
]


@pytest.mark.parametrize(('changes', 'expected', 'expected_skipped'), [case[1:] for case in GPU_USE], ids=[case[0] for case in GPU_USE])
def test_gpu_use(changes, expected, expected_skipped):
    findings = diagnose.diagnose_gpu_use(with_(changes))
    assert found(findings) == expected
    assert skipped(findings) == expected_skipped


@pytest.mark.parametrize(('mask', 'names'), [
    (0x0, []), (0x1, ['GpuIdle']), (0x4, ['SwPowerCap']), (0x44, ['SwPowerCap', 'HwThermalSlowdown']),
    (0x1ff, ['GpuIdle', 'ApplicationsClocksSetting', 'SwPowerCap', 'HwSlowdown', 'SyncBoost', 'SwThermalSlowdown',
             'HwThermalSlowdown', 'HwPowerBrakeSlowdown', 'DisplayClockSetting']),
])
def test_throttle_bits(mask, names):
    assert diagnose.throttle_names(mask) == names


NCCL = [
    ('clean', {}, [], []),
    ('no-conf', {'nccl_conf': None, 'errors': {'nccl_conf': '/etc/nccl.conf does not exist or cannot be read'}}, [], ['nccl_conf']),
    ('unknown-interface', {'nccl_conf.settings.NCCL_SOCKET_IFNAME': '=eth0'}, [('nccl_conf', 'error')], []),
    ('interface-down', {'topology.ethernet.0.operstate': 'down'}, [('nccl_conf', 'error')], []),
    ('unknown-hca', {'nccl_conf.settings.NCCL_IB_HCA': '=mlx5_9:1'}, [('nccl_conf', 'error')], []),
    ('hca-port-down', {'topology.hcas.0.ports.0': dict(PORT, state='DOWN', phys_state='Disabled')}, [('nccl_conf', 'error')], []),
    ('excluded-hca-down', {'nccl_conf.settings.NCCL_IB_HCA': '^mlx5_0', 'topology.hcas.0.ports.0': dict(PORT, state='DOWN')}, [], []),
    ('topo-file-missing', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': False},
     [('nccl_conf', 'error')], []),
    ('topo-file-present', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True}, [], []),
    # A topology file written on this node before a hardware change (another GPU slot), one from another node (an extra
    # HCA), one that is not XML, and one that matches.
    ('topo-file-stale-gpu', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True,
                             'nccl_conf.topo_file': {'gpus': ['0000:18:00.0'], 'nets': ['mlx5_0']}}, [('nccl_topo_file', 'error')], []),
    ('topo-file-extra-hca', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True,
                             'nccl_conf.topo_file': {'gpus': ['0000:31:00.0'], 'nets': ['mlx5_0', 'mlx5_1']}}, [('nccl_topo_file', 'error')], []),
    ('topo-file-not-xml', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True,
                           'nccl_conf.topo_file': {'error': 'not XML NCCL can read: syntax error: line 1, column 0'}},
     [('nccl_topo_file', 'error')], []),
    ('topo-file-current', {'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True,
                           'nccl_conf.topo_file': {'gpus': ['0000:31:00.0'], 'nets': ['mlx5_0']}}, [], []),
    ('p2p-disabled', {'nccl_conf.settings.NCCL_P2P_DISABLE': '1'}, [('nccl_p2p', 'warning')], []),
    ('ib-disabled', {'nccl_conf.settings.NCCL_IB_DISABLE': '1'}, [('nccl_conf', 'warning')], []),
    ('bad-switch-value', {'nccl_conf.settings.NCCL_P2P_DISABLE': 'yes'}, [('nccl_conf', 'error')], []),
    ('xid-79', {'kernel_log.xid': {'xids': [79], 'events': [
        {'kind': 'xid', 'xid': 79, 'busid': '0000:01:00', 'line': 'NVRM: Xid (PCI:0000:01:00): 79, pid=1122, GPU has fallen off the bus.'}]}},
     [('xid', 'error')], []),
    ('unparsed-xid', {'kernel_log.xid': {'xids': [], 'events': [{'kind': 'unparsed', 'xid': None, 'busid': None, 'line': 'NVRM: Xid garbled'}]}},
     [('xid', 'warning')], []),
    ('no-kernel-log', {'kernel_log': None}, [], ['xid']),
]


@pytest.mark.parametrize(('changes', 'expected', 'expected_skipped'), [case[1:] for case in NCCL], ids=[case[0] for case in NCCL])
def test_nccl(changes, expected, expected_skipped):
    findings = diagnose.diagnose_nccl(with_(changes))
    assert found(findings) == expected
    assert skipped(findings) == expected_skipped


def test_xid_fix_fits_the_xid():
    findings = diagnose.diagnose_nccl(with_({'kernel_log.xid': {'xids': [48, 79], 'events': [
        {'kind': 'xid', 'xid': 48, 'busid': '0000:18:00', 'line': 'a'}, {'kind': 'xid', 'xid': 79, 'busid': '0000:1a:00', 'line': 'b'},
        {'kind': 'xid', 'xid': 48, 'busid': '0000:18:00', 'line': 'c'}]}}))
    assert [(item['evidence'].split(',')[0], 'ECC' in item['fix'], 'fell off' in item['fix']) for item in findings] == [
        ('Xid 48 on GPU 0000:18:00', True, False), ('Xid 79 on GPU 0000:1a:00', False, True)]
    assert '2 time(s) since boot, the last: c' in findings[0]['evidence']


def test_socket_fallback_on_a_node_with_active_ib_ports():
    # nccl-2.11.4-net-socket: gpu01 says "Using network Socket" (NCCL_NET=Socket on a DGX A100).
    result = diagnose.diagnose_nccl_log(read('nccl_log', 'nccl-2.11.4-net-socket.txt'), {'gpu01.cluster': CLEAN})
    assert found(result['gpu01.cluster']) == [('nccl_network', 'error')]
    assert 'NCCL used sockets on gpu01 although it has ACTIVE RDMA ports (mlx5_0:1)' in result['gpu01.cluster'][0]['evidence']


def test_socket_on_a_node_without_rdma_is_no_finding():
    result = diagnose.diagnose_nccl_log(read('nccl_log', 'nccl-2.11.4-net-socket.txt'), {'gpu01': with_({'topology.hcas': []})})
    assert result == {'gpu01': []}


def test_ib_log_is_clean_and_unmatched_hosts_are_left_alone():
    # nccl-2.19.3-dgxh100-roce: two DGX H100 on RoCE (Using network IB).
    text = read('nccl_log', 'nccl-2.19.3-dgxh100-roce.txt')
    assert diagnose.diagnose_nccl_log(text, {'dgxh100-4': CLEAN, 'gpu09': CLEAN}) == {'dgxh100-4': [], 'gpu09': []}


def test_version_mismatch_across_nodes():
    # Two real logs of different nodes, concatenated: gpu01 runs NCCL 2.11.4, dgxh100-4 NCCL 2.19.3.
    text = read('nccl_log', 'nccl-2.11.4-net-socket.txt') + read('nccl_log', 'nccl-2.19.3-dgxh100-roce.txt')
    assert diagnose.nccl_log_versions(text) == {'gpu01': ['2.11.4+cuda11.4'], 'dgxh100-4': ['2.19.3+cuda12.3']}
    result = diagnose.diagnose_nccl_log(text, {'gpu01': with_({'topology.hcas': []}), 'dgxh100-4': with_({'node_name': 'dgxh100-4'})})
    assert found(result['dgxh100-4']) == [('nccl_version', 'error')]
    assert result['dgxh100-4'][0]['evidence'] == 'NCCL 2.19.3+cuda12.3 on dgxh100-4, while the log shows 2.11.4+cuda11.4, 2.19.3+cuda12.3'


def test_warn_lines_and_p2p_disabled():
    text = read('nccl_log', 'nccl-ib-completion-error.txt')
    hosts = sorted(diagnose.nccl_log_versions(text) or {line.split(':')[0] for line in text.splitlines() if ' NCCL ' in line})
    host = hosts[0]
    text += '%s:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n' % host
    result = diagnose.diagnose_nccl_log(text, {host: with_({'node_name': host})})
    checks = [item['check'] for item in result[host]]
    assert 'nccl_warn' in checks and checks.count('nccl_p2p') == 1


def test_report_table_and_status():
    report = diagnose.diagnose_report({
        'gpu02': [diagnose._finding('clock', 'warning', 'off | by 7 s', 'fix it'), diagnose._finding('slurm_state', 'error', 'State=DOWN', 'resume'),
                  diagnose._skipped('xid', 'no kernel log')],
        'gpu01': [],
    })
    assert report['status'] == 'findings' and report['failing_hosts'] == ['gpu02'] and report['counts'] == {'error': 1, 'warning': 1}
    assert report['table'] == [
        '== gpu01: nothing found',
        '== gpu02: 2 finding(s)',
        '| severity | finding | evidence | fix |',
        '|---|---|---|---|',
        '| error | slurm_state | State=DOWN | resume |',
        '| warning | clock | off \\| by 7 s | fix it |',
        'skipped xid: no kernel log',
    ]
    assert diagnose.diagnose_report({'gpu01': [diagnose._skipped('xid', 'no kernel log')]})['status'] == 'clean'


@pytest.mark.parametrize(('call', 'message'), [
    (lambda: diagnose.diagnose_node_lost('text'), 'expect the trainstack_diagnose fact'),
    (lambda: diagnose.diagnose_gpu_use(CLEAN, {'iowait': 5}), 'unknown key iowait'),
    (lambda: diagnose.diagnose_nccl_log('', ['gpu01']), 'expects a dict'),
    (lambda: diagnose.diagnose_report({'gpu01': [{'check': 'x', 'severity': 'fatal'}]}), 'not {check, severity, evidence, fix}'),
])
def test_bad_input(call, message):
    with pytest.raises(AnsibleFilterError, match=message.replace('{', r'\{').replace('}', r'\}')):
        call()


def test_stale_topology_file_names_both_sides():
    findings = diagnose.diagnose_nccl(with_({'nccl_conf.settings.NCCL_TOPO_FILE': '/etc/nccl-topo.xml', 'nccl_conf.topo_file_exists': True,
                                             'nccl_conf.topo_file': {'gpus': ['0000:18:00.0', '0000:1a:00.0'], 'nets': ['mlx5_0']}}))
    assert [item['evidence'] for item in findings] == [
        '/etc/nccl.conf: NCCL_TOPO_FILE=/etc/nccl-topo.xml describes GPUs 0000:18:00.0, 0000:1a:00.0, the node has 0000:31:00.0']


# --- sacct gres/gpuutil (fixtures/sacct, parsed as diagnose_facts does) ------------------------------------------------

def accounting(name, columns=('JobID', 'TRESUsageInAve', 'TRESUsageInMax'), job='18194943'):
    from ansible_collections.trainstack.cluster.plugins.module_utils._sacct import parse_sacct_usage
    usage = parse_sacct_usage(read('sacct', name + '.txt'), columns)
    usage['id'] = job
    return usage


def test_sacct_low_utilisation_is_reported_with_the_figures():
    findings = diagnose.diagnose_gpu_use(with_({'job_accounting': accounting('edited_low_util')}))
    job = [item for item in findings if item['check'] == 'job_gpuutil']
    assert [(item['severity'], item['evidence']) for item in job] == [(
        'warning', 'job 18194943 step batch: GPU utilisation averaged 12 % (peak 41 %), GPU memory 4.0 GiB on average '
                   '(peak 5.0 GiB) (sacct TRESUsageInAve/TRESUsageInMax)')]
    assert 'DataLoader num_workers' in job[0]['fix']


@pytest.mark.parametrize(('name', 'columns'), [('curc_busy_max', ('JobID', 'TRESUsageInMax')),
                                               ('curc_busy_ave_noconvert', ('JobID', 'TRESUsageInAve'))])
def test_sacct_busy_job_is_no_finding(name, columns):
    findings = diagnose.diagnose_gpu_use(with_({'job_accounting': accounting(name, columns)}))
    assert [item for item in findings if item['check'] == 'job_gpuutil'] == []


def test_sacct_without_gpuutil_says_what_accounting_lacks():
    findings = diagnose.diagnose_gpu_use(with_({'job_accounting': accounting('handmade_no_gpuutil', job='4242')}))
    job = [item for item in findings if item['check'] == 'job_gpuutil']
    assert [item['severity'] for item in job] == ['skipped']
    assert job[0]['evidence'].startswith('job 4242: accounting records no gres/gpuutil')
    assert 'AutoDetect=nvml' in job[0]['evidence']


def test_sacct_steps_without_gpu_memory_are_flagged():
    usage = accounting('edited_low_util')
    for step in usage['steps']:
        for figures in (step['ave'], step['max']):
            figures['gpumem_bytes'] = 0 if figures['gpumem_bytes'] is not None else None
    findings = diagnose.diagnose_gpu_use(with_({'job_accounting': usage}))
    job = [item for item in findings if item['check'] == 'job_gpuutil']
    assert [(item['severity'], item['evidence']) for item in job] == [
        ('warning', 'job 18194943: no step held GPU memory (sacct gres/gpumem 0 in 18194943.batch)')]


def test_sacct_failure_is_a_skip_with_the_reason():
    findings = diagnose.diagnose_gpu_use(with_({'job_accounting': None, 'errors': {
        'job_accounting': 'sacct -j 4242 failed (no accounting database, or no sacct here)'}}))
    assert [(item['check'], item['severity']) for item in findings if item['check'] == 'job_gpuutil'] == [('job_gpuutil', 'skipped')]


# --- clock skew across nodes (the node's clock against the controller's, read in the same run) -----------------------

BEFORE = 1796407200.0  # 2026-12-04T18:00:00Z


@pytest.mark.parametrize(('node', 'after', 'expected'), [
    # in step with the controller, a 0.2 s round trip
    ('%.6f' % (BEFORE + 0.1), BEFORE + 0.2, []),
    # 7.8 s behind (the broken case's chrony offset), a 0.4 s round trip: 7.8 - 0.2 > 1 s
    ('%.6f' % (BEFORE + 0.2 - 7.8), BEFORE + 0.4, [('clock_skew', 'warning')]),
    # 301 s ahead, past MUNGE's TTL even at the far end of the round trip
    ('%.6f' % (BEFORE + 0.5 + 301.0), BEFORE + 1.0, [('clock_skew', 'error')]),
    # 0.9 s ahead with a 0.2 s round trip: under the 1 s threshold
    ('%.6f' % (BEFORE + 0.1 + 0.9), BEFORE + 0.2, []),
])
def test_clock_skew(node, after, expected):
    findings = diagnose.diagnose_clock_skew({'before_s': BEFORE, 'after_s': after, 'node': node + '\n'})
    assert found(findings) == expected
    assert skipped(findings) == []


def test_clock_skew_evidence_gives_the_bound():
    findings = diagnose.diagnose_clock_skew({'before_s': BEFORE, 'after_s': BEFORE + 0.4, 'node': '%.3f' % (BEFORE + 0.2 - 7.8)})
    assert findings[0]['evidence'] == "wall clock 7.80 s behind the controller's (+/- 0.20 s, half the round trip of the reading)"
    assert 'chronyc makestep' in findings[0]['fix']


def test_clock_skew_too_slow_a_round_trip_cannot_tell():
    # 1.5 s measured, but a 4 s round trip: the node may have read its clock anywhere in it
    findings = diagnose.diagnose_clock_skew({'before_s': BEFORE, 'after_s': BEFORE + 4.0, 'node': str(BEFORE + 3.5)})
    assert skipped(findings) == ['clock_skew'] and found(findings) == []
    assert 'took 4.00 s there and back' in findings[0]['evidence']
    # 10 s off is still certain through the same round trip
    assert found(diagnose.diagnose_clock_skew({'before_s': BEFORE, 'after_s': BEFORE + 4.0, 'node': str(BEFORE + 12.0)})) == [
        ('clock_skew', 'warning')]


def test_clock_skew_thresholds_and_unreadable_clock():
    reading = {'before_s': BEFORE, 'after_s': BEFORE + 0.2, 'node': str(BEFORE + 0.6)}
    assert found(diagnose.diagnose_clock_skew(reading, {'clock_offset_warn_s': 0.25})) == [('clock_skew', 'warning')]
    assert skipped(diagnose.diagnose_clock_skew(dict(reading, node=None))) == ['clock_skew']
    assert skipped(diagnose.diagnose_clock_skew(dict(reading, node='date: invalid option'))) == ['clock_skew']
    with pytest.raises(AnsibleFilterError, match='is before before_s'):
        diagnose.diagnose_clock_skew(dict(reading, after_s=BEFORE - 1))
    with pytest.raises(AnsibleFilterError, match='unknown key'):
        diagnose.diagnose_clock_skew(reading, {'skew': 1})
