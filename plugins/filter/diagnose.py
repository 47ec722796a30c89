# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Diagnose a training node: node lost, low GPU use, NCCL errors (controller side, pure).

Evidence in (the ``trainstack_diagnose`` fact of ``diagnose_facts``), findings out. A finding is
``{check, severity, evidence, fix}``; severity ``error`` or ``warning`` is something found, ``skipped`` says what could
not be checked and why (its fix is empty).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.acceptance_nccl_net import acceptance_nccl_network
from ansible_collections.trainstack.cluster.plugins.filter.nccl import _named, _nccl_list, nccl_host_problems
from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_log import parse as parse_nccl_log
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import expand_cpulist, pcie_speed_gts

FOUND = ('error', 'warning')
DEFAULTS = {
    'clock_offset_warn_s': 1.0,
    # MUNGE rejects a credential older than its TTL (300 s by default): slurmd and slurmctld stop talking.
    'clock_offset_error_s': 300.0,
    'low_gpu_util_pct': 30,
    'busy_gpu_memory_pct': 10,
    'busy_gpu_util_pct': 50,
    'iowait_warn_pct': 10,
    'sm_clock_low_ratio': 0.7,
}
# nvmlClocksThrottleReasons bits (NVML API reference, group nvmlClocksThrottleReasons).
THROTTLE_REASONS = (
    (0x1, 'GpuIdle'), (0x2, 'ApplicationsClocksSetting'), (0x4, 'SwPowerCap'), (0x8, 'HwSlowdown'),
    (0x10, 'SyncBoost'), (0x20, 'SwThermalSlowdown'), (0x40, 'HwThermalSlowdown'), (0x80, 'HwPowerBrakeSlowdown'),
    (0x100, 'DisplayClockSetting'),
)
THROTTLE_FIXES = {
    'HwSlowdown': 'hardware slowdown (temperature or power): check nvidia-smi -q -d PERFORMANCE,TEMPERATURE and the PSUs',
    'SwThermalSlowdown': 'the driver cools the GPU down: check inlet temperature, fans and airflow of the chassis',
    'HwThermalSlowdown': 'the GPU is too hot: check cooling (fans, heat sink, inlet air); drain the node if it persists',
    'HwPowerBrakeSlowdown': 'the power brake is asserted (an external signal: PSU or chassis power fault): check the BMC log',
    'SwPowerCap': 'the board power limit holds the clocks down: compare power.limit with power.default_limit (nvidia-smi -q -d POWER)',
}
# IB port counters that count errors (InfiniBand Architecture Specification PortCounters; sysfs names).
IB_ERROR_COUNTERS = {
    'symbol_error': 'cable or transceiver',
    'link_error_recovery': 'cable or transceiver',
    'link_downed': 'the link went down',
    'port_rcv_errors': 'cable or transceiver',
    'port_rcv_remote_physical_errors': 'cable or transceiver upstream',
    'local_link_integrity_errors': 'cable or transceiver',
    'excessive_buffer_overrun_errors': 'flow control',
    'port_xmit_discards': 'congestion or a peer that stopped receiving',
    'port_rcv_switch_relay_errors': 'routing (switch relay)',
    'port_rcv_constraint_errors': 'partition or filter mismatch',
    'port_xmit_constraint_errors': 'partition or filter mismatch',
    'VL15_dropped': 'subnet management packets dropped',
}
SATURATED = (255, 65535, 4294967295)
IB_PHYS_FIXES = {
    'Disabled': 'the port is administratively disabled: enable it (ibportstate <lid> <port> enable, or on the switch)',
    'Polling': 'no link partner: check the cable, the transceiver and the switch port',
    'LinkUp': 'the link is up but no subnet manager configured the port: check opensm / UFM on the fabric',
}
XID_FIXES = (
    ((79,), 'the GPU fell off the bus: drain the node, power-cycle it; if it recurs reseat the GPU or RMA it'),
    ((48, 63, 64, 92, 94, 95), 'GPU memory (ECC) error: drain, reset the GPU (nvidia-smi -r) or reboot, check retired '
                               'pages and remapped rows (nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT); RMA if it recurs'),
    ((74, 144, 145, 146, 147, 148, 149, 150), 'NVLink / NVSwitch error: check Fabric Manager (systemctl status '
                                              'nvidia-fabricmanager), reset the GPUs or reboot; reseat if it recurs'),
    ((119, 120), 'GSP firmware error: reboot; update the driver if it recurs'),
    ((13, 31, 43, 45), 'usually the application (illegal address, killed context): check the job that ran there; '
                       'the same Xid in different jobs points at the GPU'),
)
_VERSION = re.compile(r'^NCCL version (?P<version>\S+)')
_PREFIX = re.compile(r'^(?P<host>[^\s:\[\]]+):[0-9]+:[0-9]+ \[[0-9]+\] ')
_P2P_OFF = re.compile(r'NCCL INFO (?P<setting>NCCL_P2P_DISABLE set by environment to 1|NCCL_P2P_LEVEL set by environment to (?:LOC|0))')
_INTRA_NODE_SHM = re.compile(r'NCCL INFO Channel [0-9]+/[0-9]+ : .* via SHM')


def _finding(check, severity, evidence, fix=''):
    return {'check': check, 'severity': severity, 'evidence': evidence, 'fix': fix}


def _skipped(check, why):
    return _finding(check, 'skipped', why)


def _evidence(evidence):
    if not isinstance(evidence, dict):
        raise AnsibleFilterError('diagnose filters expect the trainstack_diagnose fact (a dict), got %s' % type(evidence).__name__)
    return evidence


def _settings(thresholds):
    settings = dict(DEFAULTS)
    for key, value in (thresholds or {}).items():
        if key not in DEFAULTS:
            raise AnsibleFilterError('diagnose thresholds: unknown key %s (known: %s)' % (key, ', '.join(sorted(DEFAULTS))))
        settings[key] = float(value)
    return settings


def _error_of(evidence, source):
    return (evidence.get('errors') or {}).get(source) or 'not collected'


# --- (a) node lost ---------------------------------------------------------------------------------------------------

def _slurm_fix(node, name):
    reason = node.get('reason') or ''
    resume = 'then: scontrol update NodeName=%s State=RESUME' % name
    if 'Not responding' in reason or 'NOT_RESPONDING' in node.get('state_flags', []):
        return ('slurmctld cannot reach slurmd on %s: check slurmd and munge (below), the network to the controller '
                'and the clock; %s' % (name, resume))
    if reason.startswith('Low ') or 'INVALID_REG' in node.get('state_flags', []):
        return ('the node registered with less than slurm.conf declares: compare slurmd -C with its NodeName line and '
                'fix the line or the hardware; %s' % resume)
    if 'Kill task failed' in reason:
        return 'a job\'s processes did not die (unkillable, often storage or a GPU): check the kernel log, reboot; %s' % resume
    if 'reboot' in reason.lower():
        return 'the node rebooted unexpectedly: read the kernel log of the previous boot (journalctl -k -b -1); %s' % resume
    return 'act on the reason, %s' % resume


def _slurm_findings(evidence):
    node = evidence.get('slurm')
    if not node:
        return [_skipped('slurm_state', _error_of(evidence, 'slurm'))]
    name = evidence.get('node_name') or node.get('name')
    text = 'State=%s%s' % (node.get('state'), ' Reason=%s' % node['reason'] if node.get('reason') else '')
    if node.get('reason_user'):
        text += ' [%s@%s]' % (node['reason_user'], node.get('reason_time'))
    if node.get('down') or 'NOT_RESPONDING' in (node.get('state_flags') or []):
        return [_finding('slurm_state', 'error', text, _slurm_fix(node, name))]
    if node.get('drain'):
        return [_finding('slurm_state', 'warning', text, _slurm_fix(node, name))]
    return []


SERVICE_FIXES = {
    'munge.service': ('MUNGE authenticates every Slurm message: systemctl status munge; /etc/munge/munge.key must be '
                      'the same on every node (owner munge, mode 0400) and the clocks in sync'),
    'slurmd.service': 'systemctl status slurmd; journalctl -u slurmd -b (a bad slurm.conf or gres.conf stops it)',
}


def _service_findings(evidence):
    units = evidence.get('services')
    if not units:
        return [_skipped('services', _error_of(evidence, 'services'))]
    found = []
    for unit, state in sorted(units.items()):
        if state.get('load_state') == 'not-found':
            found.append(_skipped('service %s' % unit, '%s is not installed on this node' % unit))
            continue
        if state.get('active_state') != 'active':
            found.append(_finding('service %s' % unit, 'error', '%s is %s (%s, result %s)' % (
                unit, state.get('active_state'), state.get('sub_state'), state.get('result')),
                SERVICE_FIXES.get(unit, 'systemctl status %s; journalctl -u %s -b' % (unit, unit))))
    return found


def _clock_findings(evidence, settings):
    clock = evidence.get('clock')
    if not clock:
        return [_skipped('clock', _error_of(evidence, 'clock'))]
    found = []
    offset = clock.get('offset_s')
    if not clock.get('synchronized'):
        found.append(_finding('clock', 'warning', '%s: not synchronised (reference %s, leap status %s)' % (
            clock.get('source'), clock.get('reference') or 'none', clock.get('leap_status') or 'unknown'),
            'check chronyc sources -v and that the NTP servers answer; MUNGE rejects credentials once clocks drift '
            'past its TTL (300 s)'))
    if offset is not None and abs(offset) >= settings['clock_offset_warn_s']:
        severity = 'error' if abs(offset) >= settings['clock_offset_error_s'] else 'warning'
        found.append(_finding('clock', severity, '%s: system time %.3f s %s of NTP time' % (
            clock.get('source'), abs(offset), 'fast' if offset > 0 else 'slow'),
            'let chronyd step the clock (chronyc makestep) and find why it drifted (unreachable servers, a VM that '
            'was paused); logs and MUNGE credentials across nodes disagree meanwhile'))
    return found


def _ib_findings(evidence):
    topology = evidence.get('topology') or {}
    hcas = topology.get('hcas') or []
    if not hcas:
        return [_skipped('ib_ports', 'no RDMA device (/sys/class/infiniband is empty or absent)')]
    found = []
    counted = False
    for hca in hcas:
        for port in hca.get('ports') or []:
            label = '%s port %s (%s)' % (hca.get('name'), port.get('port'), port.get('link_layer') or 'unknown link layer')
            if port.get('state') != 'ACTIVE':
                found.append(_finding('ib_port', 'error', '%s: state %s, physical state %s, rate %s' % (
                    label, port.get('state'), port.get('phys_state'), port.get('rate')),
                    IB_PHYS_FIXES.get(port.get('phys_state'), 'check the cable, the switch port and ibstat %s' % hca.get('name'))))
            counters = port.get('counters') or {}
            counted = counted or bool(counters)
            errors = ['%s=%d%s' % (name, value, ' (saturated)' if value in SATURATED else '')
                      for name, value in sorted(counters.items()) if name in IB_ERROR_COUNTERS and value > 0]
            if errors:
                causes = sorted({IB_ERROR_COUNTERS[item.split('=')[0]] for item in errors})
                found.append(_finding('ib_counters', 'warning', '%s: %s' % (label, ', '.join(errors)),
                                      'points at: %s. Check the link with mlxlink -d %s and the peer switch port; '
                                      'reseat or replace the cable; clear the counters (perfquery -x -R) and watch '
                                      'whether they grow' % ('; '.join(causes), hca.get('name'))))
    if not counted:
        found.append(_skipped('ib_counters', 'no port counters readable under /sys/class/infiniband/*/ports/*/counters'))
    return found


def _kernel_findings(evidence):
    log = evidence.get('kernel_log')
    if not log:
        return [_skipped('kernel_log', _error_of(evidence, 'kernel_log'))]
    found = []
    links = log.get('link_events') or []
    if links:
        found.append(_finding('link_down', 'warning', '%d link-down message(s) since boot, the last: %s' % (
            len(links), links[-1]['line']), 'a flapping link: check the cable and the switch port of that interface; '
                                            'ip -s link and the port counters show whether it recurs'))
    by_kind = {}
    for event in log.get('other_events') or []:
        by_kind.setdefault(event['kind'], []).append(event['line'])
    fixes = {
        'oom_kill': 'a process ran the node out of memory: check the job\'s memory request (--mem) and cgroup limits',
        'hung_task': 'a task hung in the kernel (often storage or a GPU): check the filesystem and the GPU Xid findings',
        'soft_lockup': 'a CPU hung in the kernel: update the kernel and firmware; drain the node if it recurs',
        'hardware_error': 'a machine check or memory error: read the BMC SEL and rasdaemon; drain and service the node',
        'pcie_aer': 'PCIe errors: find the device (bus id in the line); reseat it; drain if uncorrected errors recur',
    }
    for kind, lines in sorted(by_kind.items()):
        found.append(_finding('kernel %s' % kind, 'warning', '%d message(s), the last: %s' % (len(lines), lines[-1]), fixes[kind]))
    return found


def diagnose_node_lost(evidence, thresholds=None):
    """Why a node drops out of Slurm: its state and reason, slurmd / munge, the clock, IB ports and counters,
    link-down and other kernel messages."""
    evidence = _evidence(evidence)
    settings = _settings(thresholds)
    return (_slurm_findings(evidence) + _service_findings(evidence) + _clock_findings(evidence, settings)
            + _ib_findings(evidence) + _kernel_findings(evidence))


def diagnose_clock_skew(reading, thresholds=None):
    """The node's wall clock against the controller's, read in the same run (node lost: MUNGE and the logs need clocks
    that agree across nodes, whatever each node's NTP offset says).

    ``reading``: ``before_s`` and ``after_s`` (the controller's clock just before and just after the node's reading,
    Unix seconds) and ``node`` (what ``date +%s.%N`` printed there, or None). The node read its clock somewhere between
    the two: the skew is measured from their midpoint, give or take half the round trip.
    """
    settings = _settings(thresholds)
    if not isinstance(reading, dict):
        raise AnsibleFilterError('diagnose_clock_skew expects {before_s, after_s, node}, got %s' % type(reading).__name__)
    text = str(reading.get('node') or '').strip()
    if not re.match(r'[0-9]+(?:[.][0-9]+)?\Z', text):
        return [_skipped('clock_skew', 'the node\'s clock could not be read (date +%%s.%%N printed %r)' % text[:40])]
    try:
        before, after = float(reading['before_s']), float(reading['after_s'])
    except (KeyError, TypeError, ValueError):
        raise AnsibleFilterError('diagnose_clock_skew: before_s and after_s must be the controller\'s clock in seconds, got %r'
                                 % (reading,)) from None
    if after < before:
        raise AnsibleFilterError('diagnose_clock_skew: after_s %s is before before_s %s' % (after, before))
    bound = (after - before) / 2.0
    skew = float(text) - (before + after) / 2.0
    # The least the skew can be, whatever moment of the round trip the node read its clock.
    least = abs(skew) - bound
    if least < settings['clock_offset_warn_s']:
        if bound >= settings['clock_offset_warn_s']:
            return [_skipped('clock_skew', 'the reading took %.2f s there and back: a skew under %g s cannot be told '
                                           '(measured %+.2f s)' % (after - before, settings['clock_offset_warn_s'], skew))]
        return []
    severity = 'error' if least >= settings['clock_offset_error_s'] else 'warning'
    return [_finding('clock_skew', severity, 'wall clock %.2f s %s the controller\'s (+/- %.2f s, half the round trip of '
                                             'the reading)' % (abs(skew), 'ahead of' if skew > 0 else 'behind', bound),
                     'bring the clocks together: chronyc tracking and chronyc sources -v on this node and on the '
                     'controller (all nodes off by the same amount point at the controller), chronyc makestep once the '
                     'sources answer; MUNGE rejects credentials from a clock off by more than its TTL (300 s)')]


# --- (b) low GPU use -------------------------------------------------------------------------------------------------

def throttle_names(mask):
    return [name for bit, name in THROTTLE_REASONS if mask & bit]


def _per_gpu(samples):
    gpus = {}
    for sample in samples or []:
        for row in sample:
            gpus.setdefault(row.get('busid') or row.get('index'), []).append(row)
    return gpus


def _average(rows, key):
    values = [row[key] for row in rows if isinstance(row.get(key), (int, float))]
    return (sum(values) / len(values)) if values else None


def _pcie_findings(gpu, busy):
    found = []
    pcie = gpu.get('pcie') or {}
    label = 'GPU%s %s' % (gpu.get('index'), gpu.get('busid'))
    width, max_width = pcie.get('current_link_width'), pcie.get('max_link_width')
    # A Gen5 GPU in a Gen4 slot never reaches its own maximum: the port above it caps the link.
    upstream = (gpu.get('ancestry') or [{}])[-1].get('pcie') or {}
    caps = [value for value in (max_width, upstream.get('max_link_width')) if value]
    if width and caps and width < min(caps):
        found.append(_finding('pcie_width', 'warning', '%s: PCIe link x%d of x%d' % (label, width, min(caps)),
                              'the link trained narrower than the slot: reseat the GPU (or its riser), check the slot and '
                              'BIOS bifurcation; lspci -vv -s %s shows LnkSta against LnkCap' % gpu.get('busid')))
    speed = pcie_speed_gts(pcie.get('current_link_speed'))
    max_speeds = [value for value in (pcie_speed_gts(pcie.get('max_link_speed')), pcie_speed_gts(upstream.get('max_link_speed'))) if value]
    # Idle GPUs drop the link to 2.5 GT/s to save power: a slow link only counts while the GPU is busy.
    if busy and speed and max_speeds and speed < min(max_speeds):
        found.append(_finding('pcie_speed', 'warning', '%s: PCIe link at %s under load, the slot allows %.1f GT/s' % (
            label, pcie.get('current_link_speed'), min(max_speeds)),
            'downtrained link: reseat the GPU, check the riser / retimer and the BIOS PCIe speed setting'))
    return found


def _gpu_sample_findings(gpu, rows, settings):
    found = []
    label = 'GPU%s %s' % (gpu.get('index'), gpu.get('busid'))
    util = _average(rows, 'utilization_gpu')
    used, total = _average(rows, 'memory_used_mib'), _average(rows, 'memory_total_mib')
    holds_memory = bool(used and total and 100.0 * used / total >= settings['busy_gpu_memory_pct'])
    if util is not None and holds_memory and util < settings['low_gpu_util_pct']:
        found.append(_finding('gpu_utilization', 'warning', '%s: %.0f%% busy on average over %d sample(s) (%s) with '
                              '%d of %d MiB in use' % (label, util, len(rows), ', '.join(
                                  str(row.get('utilization_gpu')) for row in rows), used, total),
                              'the GPU waits: check the other findings (throttling, PCIe, CPU binding, iowait), then '
                              'the input pipeline (DataLoader workers, storage) and the time spent in NCCL'))
    reasons = {}
    for row in rows:
        mask = row.get('throttle_reasons')
        if mask is None:
            continue
        for name in throttle_names(mask):
            if name == 'SwPowerCap' and not _clock_low(row, settings):
                continue
            if name in THROTTLE_FIXES:
                reasons.setdefault(name, []).append(row)
    for name, hits in sorted(reasons.items()):
        found.append(_finding('gpu_throttle', 'warning', '%s: %s active in %d of %d sample(s) (mask 0x%x, SM %s of %s MHz, %s C)' % (
            label, name, len(hits), len(rows), hits[-1]['throttle_reasons'], hits[-1].get('clocks_sm_mhz'),
            hits[-1].get('clocks_max_sm_mhz'), hits[-1].get('temperature_c')), THROTTLE_FIXES[name]))
    return found, (util or 0) >= settings['busy_gpu_util_pct']


def _clock_low(row, settings):
    clock, top = row.get('clocks_sm_mhz'), row.get('clocks_max_sm_mhz')
    return bool(clock and top and clock < settings['sm_clock_low_ratio'] * top)


def _binding_findings(evidence, gpus_by_busid):
    job = evidence.get('job')
    if job is None:
        if 'job' in (evidence.get('errors') or {}):
            return [_skipped('cpu_binding', evidence['errors']['job'])]
        return [_skipped('cpu_binding', 'no job given (-e job=<id>): ranks\' CPU binding not checked')]
    found = []
    checked = 0
    for process in job.get('processes') or []:
        allowed = set(expand_cpulist(process.get('cpus_allowed')))
        for busid in process.get('gpus') or []:
            gpu = gpus_by_busid.get(busid)
            if not gpu or not allowed:
                continue
            local = set(expand_cpulist(gpu.get('local_cpulist')))
            if not local or gpu.get('numa_node') in (None, -1):
                continue
            checked += 1
            if not allowed & local:
                found.append(_finding('cpu_binding', 'warning', 'job %s pid %s (%s, step %s) may run on CPUs %s only, but '
                                      'its GPU%s %s sits on NUMA node %s (CPUs %s)' % (
                                          job.get('id'), process.get('pid'), process.get('name'), process.get('step'),
                                          process.get('cpus_allowed'), gpu.get('index'), busid, gpu.get('numa_node'),
                                          gpu.get('local_cpulist')),
                                      'bind each rank next to its GPU: srun --cpu-bind=cores with --gpus-per-task / '
                                      '--gpu-bind=closest, or torchrun with numactl --cpunodebind; check gres.conf Cores='))
    if not checked:
        found.append(_skipped('cpu_binding', 'job %s: no process of it holds a GPU with a known NUMA node on this node'
                              % job.get('id')))
    return found


def _gib(value):
    return '%.1f GiB' % (value / 1024.0 ** 3) if value is not None else 'unknown'


def _accounting_findings(evidence, settings):
    """Slurm's own figures for the job (sacct gres/gpuutil, gres/gpumem), where accounting records them."""
    job = (evidence.get('job') or {}).get('id')
    usage = evidence.get('job_accounting')
    if not usage:
        error = (evidence.get('errors') or {}).get('job_accounting')
        return [_skipped('job_gpuutil', error)] if error else []
    job = usage.get('id') or job
    if not usage.get('gpu_tres'):
        return [_skipped('job_gpuutil', 'job %s: accounting records no gres/gpuutil (Slurm records GPU utilisation and '
                                        'memory with AutoDetect=nvml in gres.conf and the GPUs in the accounted TRES)' % job)]
    # The extern step holds no GPU work; the job's own line carries no usage.
    steps = [step for step in usage.get('steps') or [] if step.get('step') not in (None, 'extern')]
    used = [step for step in steps if ((step.get('max') or {}).get('gpumem_bytes') or (step.get('ave') or {}).get('gpumem_bytes'))]
    if steps and not used:
        return [_finding('job_gpuutil', 'warning', 'job %s: no step held GPU memory (sacct gres/gpumem 0 in %s)' % (
            job, ', '.join(step['id'] for step in steps)),
            'the job did not use its GPUs: check that the program sees them (CUDA_VISIBLE_DEVICES, torch.cuda.is_available()) '
            'and that the steps were launched with srun inside the allocation')]
    found = []
    for step in used:
        ave = step.get('ave') or {}
        peak = step.get('max') or {}
        value = ave.get('gpuutil_pct')
        if value is None or value >= settings['low_gpu_util_pct']:
            continue
        found.append(_finding('job_gpuutil', 'warning', 'job %s step %s: GPU utilisation averaged %g %% (peak %s %%), GPU '
                              'memory %s on average (peak %s) (sacct TRESUsageInAve/TRESUsageInMax)' % (
                                  job, step.get('step'), value,
                                  '%g' % peak['gpuutil_pct'] if peak.get('gpuutil_pct') is not None else 'unknown',
                                  _gib(ave.get('gpumem_bytes')), _gib(peak.get('gpumem_bytes'))),
                              'the GPUs waited for most of the job: look at data loading first (DataLoader num_workers, '
                              'pin_memory, prefetch; stage the data set to local NVMe), then at the batch size and at CPU '
                              'binding (the cpu_binding findings)'))
    return found


def diagnose_gpu_use(evidence, thresholds=None):
    """Why GPUs are underused: sampled utilisation and memory, clock throttle reasons, PCIe downtraining, CPU binding
    of the job's ranks against their GPUs' NUMA nodes, iowait."""
    evidence = _evidence(evidence)
    settings = _settings(thresholds)
    gpus = (evidence.get('topology') or {}).get('gpus') or []
    found = []
    if not gpus:
        found.append(_skipped('gpus', 'no GPU: nvidia-smi is missing or lists none (%s)' % _error_of(evidence, 'gpu_samples')))
    else:
        samples = _per_gpu(evidence.get('gpu_samples'))
        if not samples:
            found.append(_skipped('gpu_samples', _error_of(evidence, 'gpu_samples')))
        for gpu in gpus:
            sampled, busy = _gpu_sample_findings(gpu, samples.get(gpu.get('busid'), []), settings)
            found.extend(sampled + _pcie_findings(gpu, busy))
        found.extend(_binding_findings(evidence, {gpu.get('busid'): gpu for gpu in gpus}))
    found.extend(_accounting_findings(evidence, settings))
    cpu = evidence.get('cpu')
    if not cpu:
        found.append(_skipped('iowait', _error_of(evidence, 'cpu')))
    elif cpu.get('iowait_pct') is not None and cpu['iowait_pct'] >= settings['iowait_warn_pct']:
        found.append(_finding('iowait', 'warning', 'CPUs waited on I/O %d%% of the time (%s)' % (cpu['iowait_pct'], cpu.get('source')),
                              'the node waits on storage: check the dataset\'s filesystem (Lustre / NFS / GPFS load), '
                              'stage data to local NVMe, raise DataLoader num_workers / prefetch'))
    return found


# --- (c) NCCL errors -------------------------------------------------------------------------------------------------

def _nccl_conf_findings(evidence):
    conf = evidence.get('nccl_conf')
    if not conf:
        return [_skipped('nccl_conf', '%s: NCCL uses its defaults' % _error_of(evidence, 'nccl_conf'))]
    settings = conf.get('settings') or {}
    topology = evidence.get('topology') or {}
    path = conf.get('path')
    found = []
    try:
        problems = nccl_host_problems(topology, settings, topology_file_exists=True)
    except AnsibleFilterError as error:
        return [_finding('nccl_conf', 'error', '%s: %s' % (path, str(error).replace('nccl_settings: ', '')),
                         'fix the value in %s (playbooks/nccl.yml writes it from the probed topology)' % path)]
    for problem in problems:
        found.append(_finding('nccl_conf', 'error', '%s: %s' % (path, problem.replace('nccl_settings: ', '')),
                              'name interfaces and HCAs this node has (playbooks/nccl.yml derives them from its probe)'))
    found.extend(_interfaces_down(settings, topology, path))
    if settings.get('NCCL_TOPO_FILE') and conf.get('topo_file_exists') is False:
        found.append(_finding('nccl_conf', 'error', '%s: NCCL_TOPO_FILE=%s does not exist' % (path, settings['NCCL_TOPO_FILE']),
                              'write it (playbooks/nccl.yml, trainstack.cluster.nccl_topology) or drop the setting: '
                              'every rank warns and NCCL detects the topology itself'))
    found.extend(_stale_topo_file(conf.get('topo_file'), topology, path, settings.get('NCCL_TOPO_FILE')))
    if settings.get('NCCL_P2P_DISABLE') == '1':
        found.append(_finding('nccl_p2p', 'warning', '%s: NCCL_P2P_DISABLE=1' % path,
                              'P2P over NVLink / PCIe is off for every job: remove it unless a known bug needs it'))
    if settings.get('NCCL_IB_DISABLE') == '1' and topology.get('hcas'):
        found.append(_finding('nccl_conf', 'warning', '%s: NCCL_IB_DISABLE=1 on a node with RDMA devices' % path,
                              'NCCL falls back to sockets between nodes: remove it'))
    return found


def _stale_topo_file(described, topology, path, topo_file):
    """A topology file written before a hardware change: the GPUs or NICs it names are not the node's today."""
    if not described:
        return []
    fix = 're-run playbooks/nccl.yml: it writes the file from today\'s probe (trainstack.cluster.nccl_topology)'
    if described.get('error'):
        return [_finding('nccl_topo_file', 'error', '%s: NCCL_TOPO_FILE=%s is %s' % (path, topo_file, described['error']), fix)]
    gpus = sorted(str(gpu.get('busid', '')).lower() for gpu in topology.get('gpus') or [])
    nets = sorted(str(hca.get('name', '')) for hca in topology.get('hcas') or [])
    found = []
    for kind, listed, present in (('GPUs', described.get('gpus') or [], gpus), ('network devices', described.get('nets') or [], nets)):
        if sorted(listed) != present:
            found.append(_finding('nccl_topo_file', 'error', '%s: NCCL_TOPO_FILE=%s describes %s %s, the node has %s' % (
                path, topo_file, kind, ', '.join(listed) or 'none', ', '.join(present) or 'none'), fix))
    return found


def _interfaces_down(settings, topology, path):
    found = []
    value = settings.get('NCCL_SOCKET_IFNAME')
    if value:
        exclude, exact, entries = _nccl_list(value)
        states = {nic.get('name'): nic.get('operstate') for nic in topology.get('ethernet') or []}
        chosen = [name for name in states if any(_named(name, entry, exact) for entry in entries) != exclude]
        if chosen and not any(states[name] in ('up', 'unknown') for name in chosen if not name.startswith('lo')):
            found.append(_finding('nccl_conf', 'error', '%s: NCCL_SOCKET_IFNAME=%s selects %s, none of them up' % (
                path, value, ', '.join('%s (%s)' % (name, states[name]) for name in chosen)),
                'bring the interface up or point NCCL_SOCKET_IFNAME at one that is'))
    value = settings.get('NCCL_IB_HCA')
    if value and settings.get('NCCL_IB_DISABLE') != '1':
        exclude, exact, entries = _nccl_list(value)
        if not exclude:
            for entry in entries:
                name, _sep, port = entry.partition(':')
                for hca in topology.get('hcas') or []:
                    if not _named(hca.get('name') or '', name, exact):
                        continue
                    ports = [item for item in hca.get('ports') or [] if not port or str(item.get('port')) == port]
                    if ports and not any(item.get('state') == 'ACTIVE' for item in ports):
                        found.append(_finding('nccl_conf', 'error', '%s: NCCL_IB_HCA entry %s names %s, whose port %s is %s' % (
                            path, entry, hca.get('name'), ports[0].get('port'), ports[0].get('state')),
                            'NCCL skips it and loses that rail: fix the port (see ib_port) or drop it from NCCL_IB_HCA'))
    return found


def _xid_fix(xid):
    for numbers, fix in XID_FIXES:
        if xid in numbers:
            return fix
    return 'look the Xid up in NVIDIA\'s Xid catalogue (docs.nvidia.com/deploy/xid-errors); drain if it recurs'


def _xid_findings(evidence):
    log = evidence.get('kernel_log')
    if not log:
        return [_skipped('xid', _error_of(evidence, 'kernel_log'))]
    events = (log.get('xid') or {}).get('events') or []
    grouped = {}
    for event in events:
        grouped.setdefault((event.get('xid'), event.get('busid')), []).append(event)
    found = []
    for (xid, busid), hits in sorted(grouped.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        if xid is None:
            found.append(_finding('xid', 'warning', '%d NVRM Xid line(s) that did not parse, the last: %s' % (
                len(hits), hits[-1]['line']), 'read the line: it names the Xid and the GPU'))
            continue
        found.append(_finding('xid', 'error', 'Xid %s on GPU %s, %d time(s) since boot, the last: %s' % (
            xid, busid, len(hits), hits[-1]['line']), _xid_fix(xid)))
    return found


def diagnose_nccl(evidence):
    """What on the node breaks NCCL: /etc/nccl.conf against the node (interfaces and HCAs that exist and are up,
    NCCL_TOPO_FILE present, P2P disabled), Xid errors on a GPU."""
    evidence = _evidence(evidence)
    return _nccl_conf_findings(evidence) + _xid_findings(evidence)


def _log_names(host, evidence):
    return {host, str(host).split('.', maxsplit=1)[0], evidence.get('node_name')}


def nccl_log_versions(text):
    """{host: [NCCL versions]}: the bare "NCCL version" line belongs to the host of the NCCL line before it."""
    versions = {}
    host = None
    for line in (text or '').splitlines():
        prefix = _PREFIX.match(line.strip())
        if prefix:
            host = prefix.group('host')
            rest = line.strip()[prefix.end():]
            match = _VERSION.match(rest.replace('NCCL INFO ', '', 1))
        else:
            match = _VERSION.match(line.strip())
        if match and host:
            found = versions.setdefault(host, [])
            if match.group('version') not in found:
                found.append(match.group('version'))
    return versions


def diagnose_nccl_log(text, nodes):
    """Findings per node from an NCCL_DEBUG=INFO log: NET/Socket fall-back where the node has ACTIVE RDMA ports,
    P2P disabled, NCCL WARN lines, NCCL versions that differ across nodes.

    nodes: {inventory host: trainstack_diagnose fact}; the log's host names are matched to the inventory name, its
    short form and the fact's node_name. Returns {inventory host: [findings]} (every node, empty when clean).
    """
    if not isinstance(nodes, dict):
        raise AnsibleFilterError('diagnose_nccl_log expects a dict {host: trainstack_diagnose fact}')
    text = text or ''
    parsed = parse_nccl_log(text)
    lines = text.splitlines()
    result = {host: [] for host in nodes}
    log_host_of = {}
    for host, evidence in nodes.items():
        names = _log_names(host, _evidence(evidence))
        matched = [name for name in parsed if name in names] + [name for name in nccl_log_versions(text) if name in names]
        if matched:
            log_host_of[host] = matched[0]
    verdicts = acceptance_nccl_network(text, {log_host_of[host]: (nodes[host].get('topology') or {}) for host in log_host_of})
    versions = nccl_log_versions(text)
    distinct = sorted({version for found in versions.values() for version in found})
    for host, log_host in log_host_of.items():
        verdict = verdicts.get(log_host) or {}
        if verdict.get('status') == 'fail':
            result[host].append(_finding('nccl_network', 'error', verdict['reason'].split(': check')[0],
                                         'check rdma-core and the HCA provider (playbooks/rdma.yml), NCCL_IB_DISABLE, '
                                         'NCCL_IB_HCA and NCCL_NET in the job\'s environment and /etc/nccl.conf'))
        for warning in (parsed.get(log_host) or {}).get('warnings', [])[-3:]:
            result[host].append(_finding('nccl_warn', 'error', 'NCCL WARN on %s: %s' % (log_host, warning),
                                         'a transport error names the device: check that HCA\'s port and counters on '
                                         'both ends (ib_port, ib_counters); NCCL_IB_TIMEOUT only hides a flaky link'))
        p2p = [line.strip() for line in lines if line.startswith(log_host + ':') and _P2P_OFF.search(line)]
        if p2p:
            result[host].append(_finding('nccl_p2p', 'warning', 'P2P disabled: %s' % p2p[-1],
                                         'unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL in the job unless a known bug needs it'))
        nvlinked = any((gpu.get('nvlink') or {}).get('peers') for gpu in (nodes[host].get('topology') or {}).get('gpus') or [])
        shm = [line.strip() for line in lines if line.startswith(log_host + ':') and _INTRA_NODE_SHM.search(line)]
        if nvlinked and shm:
            result[host].append(_finding('nccl_p2p', 'warning', 'intra-node channels via SHM although the GPUs have '
                                         'NVLink: %s' % shm[-1], 'P2P is off or not possible (containers without '
                                         'IPC, ACS on a PCIe switch): check NCCL_P2P_DISABLE and the P2P lines of the log'))
        if len(distinct) > 1 and versions.get(log_host):
            result[host].append(_finding('nccl_version', 'error', 'NCCL %s on %s, while the log shows %s' % (
                ', '.join(versions[log_host]), log_host, ', '.join(distinct)),
                'every rank must load the same NCCL: pin one nccl package / wheel (or LD_LIBRARY_PATH) on all nodes'))
    return result


# --- report ----------------------------------------------------------------------------------------------------------

def diagnose_report(findings_by_host):
    """{host: [findings]} -> {status (findings or clean), hosts {host: {findings, skipped}}, counts, table (lines)}."""
    if not isinstance(findings_by_host, dict):
        raise AnsibleFilterError('diagnose_report expects a dict {host: [findings]}')
    hosts = {}
    table = []
    for host in sorted(findings_by_host):
        items = findings_by_host[host] or []
        for item in items:
            if not isinstance(item, dict) or item.get('severity') not in FOUND + ('skipped',):
                raise AnsibleFilterError('diagnose_report: %s has a finding that is not {check, severity, evidence, fix}: %r'
                                         % (host, item))
        found = sorted((item for item in items if item['severity'] in FOUND), key=lambda item: FOUND.index(item['severity']))
        skipped = [item for item in items if item['severity'] == 'skipped']
        hosts[host] = {'findings': found, 'skipped': skipped}
        table.append('== %s: %s' % (host, '%d finding(s)' % len(found) if found else 'nothing found'))
        if found:
            table.append('| severity | finding | evidence | fix |')
            table.append('|---|---|---|---|')
            table.extend('| %s | %s | %s | %s |' % (item['severity'], item['check'], _cell(item['evidence']), _cell(item['fix']))
                         for item in found)
        table.extend('skipped %s: %s' % (item['check'], item['evidence']) for item in skipped)
    counts = {severity: sum(1 for host in hosts.values() for item in host['findings'] if item['severity'] == severity)
              for severity in FOUND}
    failing = sorted(host for host, value in hosts.items() if value['findings'])
    return {'status': 'findings' if failing else 'clean', 'failing_hosts': failing, 'counts': counts,
            'hosts': hosts, 'table': table}


def _cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


class FilterModule:
    """Diagnosis filters."""

    def filters(self):
        return {
            'diagnose_node_lost': diagnose_node_lost,
            'diagnose_clock_skew': diagnose_clock_skew,
            'diagnose_gpu_use': diagnose_gpu_use,
            'diagnose_nccl': diagnose_nccl,
            'diagnose_nccl_log': diagnose_nccl_log,
            'diagnose_report': diagnose_report,
        }
