#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: diagnose_facts
short_description: Gather the evidence to diagnose a lost node, low GPU use or NCCL errors
description:
  - Reads, without changing anything, what a training node says about the three classic failures of a GPU
    cluster and returns it as the C(trainstack_diagnose) fact. The C(trainstack.cluster.diagnose_*) filters judge it.
  - Node lost - C(scontrol -o show node) (state and reason), C(systemctl show) of the Slurm and MUNGE services,
    C(chronyc tracking) (else C(timedatectl show)), the InfiniBand ports and their error counters
    (C(/sys/class/infiniband/*/ports/*/counters/*)), link-down and other alarming kernel messages.
  - Low GPU use - O(samples) samples of C(nvidia-smi --query-gpu) (utilisation, memory, clock throttle reasons,
    SM clock), the GPUs' PCIe link (current and maximum width and speed from sysfs), C(vmstat) (iowait) and, with
    O(job), the CPUs each process of the job may run on (C(scontrol listpids), C(/proc/<pid>/status)) and the
    GPUs it holds (C(nvidia-smi --query-compute-apps)), and the job's GPU utilisation and memory in Slurm's accounting
    (C(sacct) C(TRESUsageInAve)/C(TRESUsageInMax) C(gres/gpuutil), C(gres/gpumem)) where it records them.
  - NCCL errors - C(/etc/nccl.conf) (O(nccl_conf)) and whether its C(NCCL_TOPO_FILE) exists; Xid errors from the
    kernel log since boot. The host topology (C(trainstack_topology)'s content) comes along in C(topology).
  - A missing source (no Slurm, no GPU, no InfiniBand, no permission) is V(null) with the reason in C(errors);
    the module never fails because of it.
  - With O(root) pointing at a recorded tree, files are read below it and commands are replayed from
    C(<root>/.commands/<key>.txt) - keys C(scontrol_show_node), C(systemctl_show), C(chronyc_tracking),
    C(timedatectl_show), C(journalctl_k_b), C(dmesg), C(vmstat), C(nvidia-smi_query-gpu-sample-<n>) (n from 0),
    C(scontrol_listpids), C(nvidia-smi_query-compute-apps), C(sacct_usage) and those of M(trainstack.cluster.topology_facts).
extends_documentation_fragment:
  - trainstack.cluster.attributes
  - trainstack.cluster.attributes.facts
  - trainstack.cluster.probe
options:
  node_name:
    description: The node's name in Slurm; the short host name when empty.
    type: str
    default: ""
  job:
    description: A Slurm job id whose processes on this node are examined (CPU binding against their GPUs).
    type: str
    default: ""
  samples:
    description: How many times C(nvidia-smi --query-gpu) is sampled (one recording per sample in replay mode), 1 to 60.
    type: int
    default: 3
  sample_interval:
    description: Seconds between two GPU samples (0 to 10), and the interval of C(vmstat). Not waited in replay mode.
    type: float
    default: 1.0
  nccl_conf:
    description: NCCL's configuration file on the node.
    type: path
    default: /etc/nccl.conf
  services:
    description: systemd units whose state is read (C(systemctl show)).
    type: list
    elements: str
    default: [slurmd.service, munge.service]
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Gather the evidence
  trainstack.cluster.diagnose_facts:

- name: Gather it for job 4242, with 5 GPU samples
  trainstack.cluster.diagnose_facts:
    job: "4242"
    samples: 5

- name: Judge the node
  ansible.builtin.debug:
    msg: "{{ ansible_facts['trainstack_diagnose'] | trainstack.cluster.diagnose_node_lost }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: complex
  contains:
    trainstack_diagnose:
      description: The node's evidence. Each source that could not be read is V(null), its reason in C(errors).
      returned: always
      type: complex
      contains:
        node_name:
          description: The Slurm node name the evidence is about.
          type: str
          returned: always
        job:
          description:
            - With O(job), C(id) and C(processes) (C(pid), C(step), C(local_id), C(name), C(cpus_allowed), C(gpus)
              bus ids from C(--query-compute-apps), C(cuda_visible_devices)). V(null) without O(job) or when
              C(scontrol listpids) failed.
          type: dict
          returned: always
        job_accounting:
          description:
            - With O(job), what C(sacct -j <job> --parsable2 --noconvert --format=JobID,TRESUsageInAve,TRESUsageInMax)
              records - C(id), C(gpu_tres) (whether accounting has C(gres/gpuutil)) and C(steps) (C(id), C(step), C(ave)
              and C(max), each C(gpuutil_pct) and C(gpumem_bytes), V(null) where absent). V(null) without O(job) or
              when sacct failed.
          type: dict
          returned: always
        slurm:
          description: The node as M(trainstack.cluster.slurm_node) returns it (C(state), C(reason), C(down), C(drain), ...).
          type: dict
          returned: always
        services:
          description: Unit name to C(load_state), C(active_state), C(sub_state), C(result).
          type: dict
          returned: always
        clock:
          description: C(source), C(synchronized), C(offset_s) (positive is fast), C(leap_status), C(reference), C(stratum).
          type: dict
          returned: always
        kernel_log:
          description:
            - C(source), C(xid) (C(events), C(xids) as M(trainstack.cluster.node_health_facts) returns them),
              C(link_events) and C(other_events) (lists of C(kind), C(line), at most 20 each, the latest).
          type: dict
          returned: always
        gpu_samples:
          description:
            - One list of rows per sample, each row C(index), C(busid), C(utilization_gpu), C(utilization_memory),
              C(memory_used_mib), C(memory_total_mib), C(throttle_reasons) (bitmask, int), C(temperature_c),
              C(power_w), C(clocks_sm_mhz), C(clocks_max_sm_mhz).
          type: list
          elements: list
          returned: always
        cpu:
          description: C(iowait_pct), C(idle_pct), C(source) (C(vmstat)).
          type: dict
          returned: always
        nccl_conf:
          description:
            - C(path), C(settings) (key to value), C(topo_file_exists) (V(null) without C(NCCL_TOPO_FILE)) and C(topo_file)
              (C(gpus) the GPU bus ids and C(nets) the network device names the file describes, or C(error); V(null)
              without the file).
          type: dict
          returned: always
        topology:
          description: >-
            What M(trainstack.cluster.topology_facts) returns, each HCA port with C(counters) (counter name to
            value) added.
          type: dict
          returned: always
        errors:
          description: Source name to the reason it is V(null).
          type: dict
          returned: always
"""

import os
import re
import socket
import time
from xml.etree import ElementTree

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import PROBE_ARGUMENT_SPEC, CommandRunner
from ansible_collections.trainstack.cluster.plugins.module_utils._sacct import SACCT_FORMAT, SacctError, parse_sacct_usage
from ansible_collections.trainstack.cluster.plugins.module_utils._scontrol import parse_show_node
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import (
    SysfsTree, collect_topology, normalize_busid, parse_int, read_query_csv)
from ansible_collections.trainstack.cluster.plugins.module_utils import _xid

KERNEL_LOG_COMMANDS = (
    ('journalctl_k_b', ['journalctl', '-k', '-b', '--no-pager', '-o', 'short-monotonic']),
    ('dmesg', ['dmesg']),
)
GPU_SAMPLE_FIELDS = ('index', 'pci.bus_id', 'utilization.gpu', 'utilization.memory', 'memory.used', 'memory.total',
                     'clocks_throttle_reasons.active', 'temperature.gpu', 'power.draw', 'clocks.sm', 'clocks.max.sm')
SAMPLE_COLUMNS = {
    'utilization.gpu': 'utilization_gpu', 'utilization.memory': 'utilization_memory', 'memory.used': 'memory_used_mib',
    'memory.total': 'memory_total_mib', 'temperature.gpu': 'temperature_c', 'clocks.sm': 'clocks_sm_mhz',
    'clocks.max.sm': 'clocks_max_sm_mhz',
}
MAX_EVENTS = 20
# Kernel lines that tell of a link going away (NIC drivers, IPoIB, bonding) and of other reasons a node drops out.
LINK_DOWN = re.compile(r'\b(?:NIC Link is Down|[Ll]ink (?:is )?[Dd]own|carrier lost|lost carrier|link is not ready)\b')
OTHER_EVENTS = (
    ('oom_kill', re.compile(r'Out of memory: Kill|oom-kill:|invoked oom-killer')),
    ('hung_task', re.compile(r'blocked for more than \d+ seconds')),
    ('soft_lockup', re.compile(r'soft lockup|hard LOCKUP')),
    ('hardware_error', re.compile(r'\[Hardware Error\]|Machine check events logged|EDAC .*(?:CE|UE) ')),
    ('pcie_aer', re.compile(r'AER: (?:Uncorrected|Corrected) error|PCIe Bus Error')),
)
_VMSTAT_HEADER = re.compile(r'^\s*r\s+b\s')
_LISTPIDS_ROW = re.compile(r'^\s*(?P<pid>-?\d+)\s+(?P<job>\S+)\s+(?P<step>\S+)\s+(?P<local>\S+)\s+(?P<global>\S+)\s*$')
_NCCL_CONF_LINE = re.compile(r'^\s*(?P<key>[A-Z][A-Z0-9_]*)\s*=\s*(?P<value>.*?)\s*$')


def parse_systemctl_show(text):
    """``systemctl show --property=Id,LoadState,ActiveState,SubState,Result <units>`` -> {unit: {...}}."""
    units = {}
    for block in re.split(r'\n\s*\n', (text or '').strip()):
        fields = dict(line.split('=', 1) for line in block.splitlines() if '=' in line)
        if fields.get('Id'):
            units[fields['Id']] = {'load_state': fields.get('LoadState'), 'active_state': fields.get('ActiveState'),
                                   'sub_state': fields.get('SubState'), 'result': fields.get('Result')}
    return units


def parse_chronyc_tracking(text):
    """``chronyc tracking`` -> clock facts; None when it prints no "System time" line."""
    fields = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition(':')
        if sep:
            fields[key.strip()] = value.strip()
    match = re.match(r'^([0-9.]+) seconds (fast|slow) of NTP time', fields.get('System time', ''))
    if not match:
        return None
    offset = float(match.group(1)) * (1 if match.group(2) == 'fast' else -1)
    reference = fields.get('Reference ID', '')
    leap = fields.get('Leap status')
    stratum = parse_int(fields.get('Stratum'))
    # 7F7F0101 is chronyd's own local clock (the "local" directive); 00000000 is no source at all.
    local = reference.startswith(('7F7F0101', '00000000'))
    return {'source': 'chronyc tracking', 'offset_s': offset, 'leap_status': leap, 'reference': reference,
            'stratum': stratum, 'synchronized': bool(leap) and leap != 'Not synchronised' and not local}


def parse_timedatectl_show(text):
    fields = dict(line.split('=', 1) for line in (text or '').splitlines() if '=' in line)
    if 'NTPSynchronized' not in fields:
        return None
    return {'source': 'timedatectl show', 'offset_s': None, 'leap_status': None, 'reference': None, 'stratum': None,
            'synchronized': fields['NTPSynchronized'] == 'yes'}


def parse_vmstat(text):
    """The last row of ``vmstat <interval> <count>``: the CPU split over the last interval, by column name."""
    header = None
    last = None
    for line in (text or '').splitlines():
        if _VMSTAT_HEADER.match(line):
            header = line.split()
        elif header and line.split() and all(word.lstrip('-').isdigit() for word in line.split()):
            last = line.split()
    if not header or not last or len(last) != len(header) or 'wa' not in header:
        return None
    row = dict(zip(header, last))
    return {'source': 'vmstat', 'iowait_pct': int(row['wa']), 'idle_pct': parse_int(row.get('id'))}


def kernel_events(text):
    """Link-down and other alarming lines of a kernel log, the latest MAX_EVENTS of each."""
    link, other = [], []
    for line in (text or '').splitlines():
        if 'NVRM:' in line:
            continue
        if LINK_DOWN.search(line):
            link.append({'kind': 'link_down', 'line': line.strip()})
            continue
        for kind, pattern in OTHER_EVENTS:
            if pattern.search(line):
                other.append({'kind': kind, 'line': line.strip()})
                break
    return link[-MAX_EVENTS:], other[-MAX_EVENTS:]


def parse_gpu_sample(text):
    rows, _problems = read_query_csv(text)
    sample = []
    for row in rows:
        entry = {'index': parse_int(row.get('index')), 'busid': normalize_busid(row.get('pci.bus_id'))}
        for field, name in SAMPLE_COLUMNS.items():
            entry[name] = _number(row.get(field))
        entry['power_w'] = _number(row.get('power.draw'))
        reasons = row.get('clocks_throttle_reasons.active', row.get('clocks_event_reasons.active'))
        entry['throttle_reasons'] = parse_int(reasons, 16) if reasons else None
        sample.append(entry)
    return sample


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return int(value) if value.is_integer() else value


def parse_listpids(text):
    processes = []
    for line in (text or '').splitlines():
        match = _LISTPIDS_ROW.match(line)
        if not match or match.group('pid') == '-1' or not match.group('pid').isdigit():
            continue
        processes.append({'pid': int(match.group('pid')), 'step': match.group('step'),
                          'local_id': parse_int(match.group('local'))})
    return processes


def parse_compute_apps(text):
    """``nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory`` -> {pid: [bus ids]}."""
    gpus = {}
    for line in (text or '').splitlines():
        fields = [field.strip() for field in line.split(',')]
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        busid = normalize_busid(fields[1])
        if busid:
            gpus.setdefault(int(fields[0]), []).append(busid)
    return gpus


def parse_nccl_conf(text):
    settings = {}
    for line in (text or '').splitlines():
        match = _NCCL_CONF_LINE.match(line.split('#', 1)[0])
        if match:
            settings[match.group('key')] = match.group('value')
    return settings


def parse_nccl_topo_xml(text):
    """The devices an NCCL topology file describes: {gpus: [bus ids of the <pci> holding a <gpu>], nets: [<net> names]},
    or {error: why it does not parse}. A file written before a hardware change lists other devices than the probe."""
    try:
        root = ElementTree.fromstring(text or '')
    except ElementTree.ParseError as error:
        return {'error': 'not XML NCCL can read: %s' % error}
    gpus = sorted(normalize_busid(pci.get('busid')) or pci.get('busid', '') for pci in root.iter('pci') if pci.find('gpu') is not None)
    nets = sorted(net.get('name', '') for net in root.iter('net'))
    return {'gpus': gpus, 'nets': nets}


def read_process(tree, pid):
    status = tree.read('/proc/%d/status' % pid) or ''
    fields = dict((key.strip(), value.strip()) for key, sep, value in (line.partition(':') for line in status.splitlines()) if sep)
    environ = tree.read('/proc/%d/environ' % pid) or ''
    variables = dict(item.split('=', 1) for item in environ.split('\0') if '=' in item)
    return {'name': fields.get('Name'), 'cpus_allowed': fields.get('Cpus_allowed_list'),
            'cuda_visible_devices': variables.get('CUDA_VISIBLE_DEVICES')}


def read_job(tree, runner, job, nvidia_smi):
    text = runner.output('scontrol_listpids', ['scontrol', 'listpids', job])
    if text is None:
        return None, 'scontrol listpids %s failed (no Slurm here, or the job has no step on this node)' % job
    gpus = parse_compute_apps(runner.output('nvidia-smi_query-compute-apps', [
        nvidia_smi, '--query-compute-apps=pid,gpu_bus_id,used_memory', '--format=csv,noheader,nounits']))
    processes = []
    for process in parse_listpids(text):
        process.update(read_process(tree, process['pid']))
        process['gpus'] = gpus.get(process['pid'], [])
        processes.append(process)
    return {'id': job, 'processes': processes}, None


def read_job_accounting(runner, job):
    """The job's GPU figures in Slurm's accounting (sacct TRESUsageInAve/Max: gres/gpuutil, gres/gpumem)."""
    text = runner.output('sacct_usage', ['sacct', '-j', job, '--parsable2', '--noconvert',
                                         '--format=' + ','.join(SACCT_FORMAT)])
    if text is None:
        return None, 'sacct -j %s failed (no accounting database, or no sacct here)' % job
    try:
        usage = parse_sacct_usage(text)
    except SacctError as exc:
        return None, str(exc)
    if not usage['steps']:
        return None, 'sacct has no record of job %s' % job
    usage['id'] = job
    return usage, None


def read_gpu_samples(runner, nvidia_smi, samples, interval, sleep):
    taken = []
    argv = [nvidia_smi, '--query-gpu=' + ','.join(GPU_SAMPLE_FIELDS), '--format=csv,nounits']
    for number in range(max(1, samples)):
        if number and not runner.replay_dir:
            sleep(interval)
        text = runner.output('nvidia-smi_query-gpu-sample-%d' % number, argv)
        sample = parse_gpu_sample(text) if text is not None else []
        if not sample:
            if runner.replay_dir and number:
                break
            continue
        taken.append(sample)
    if not taken:
        return None, 'nvidia-smi --query-gpu unavailable (%s missing, no GPU driver, or it failed)' % nvidia_smi
    return taken, None


def add_ib_counters(tree, topology):
    for hca in topology.get('hcas') or []:
        for port in hca.get('ports') or []:
            base = '/sys/class/infiniband/%s/ports/%s/counters' % (hca['name'], port['port'])
            counters = {}
            for name in tree.listdir(base):
                value = parse_int(tree.read('%s/%s' % (base, name)))
                if value is not None:
                    counters[name] = value
            port['counters'] = counters


def read_kernel_log(runner):
    for key, argv in KERNEL_LOG_COMMANDS:
        text = runner.output(key, argv)
        if text is not None:
            link, other = kernel_events(text)
            return {'source': ' '.join(argv), 'xid': _xid.parse(text), 'link_events': link, 'other_events': other}, None
    return None, 'neither journalctl -k -b nor dmesg could be read (no permission, or not present)'


def read_clock(runner):
    clock = parse_chronyc_tracking(runner.output('chronyc_tracking', ['chronyc', 'tracking']))
    if clock is None:
        clock = parse_timedatectl_show(runner.output('timedatectl_show', ['timedatectl', 'show']))
    return clock, None if clock else 'neither chronyc tracking nor timedatectl show answered (no chronyd, no systemd-timesyncd)'


def read_slurm(runner, node_name):
    text = runner.output('scontrol_show_node', ['scontrol', '-o', 'show', 'node', node_name])
    if text is None:
        return None, 'scontrol show node %s failed (no Slurm client here, slurmctld unreachable, or unknown node)' % node_name
    nodes, _missing = parse_show_node(text)
    if node_name not in nodes:
        return None, 'scontrol show node printed no node %s' % node_name
    node = dict(nodes[node_name])
    node.pop('fields', None)
    return node, None


# Where slurmd keeps the configuration it fetched from slurmctld on a configless node.
CONFIGLESS_COPIES = ('/var/lib/slurm/slurmd/conf-cache/slurm.conf', '/var/spool/slurmd/conf-cache/slurm.conf', '/run/slurm/conf/slurm.conf')


def collect(tree, runner, params, sleep=time.sleep):
    """The ``trainstack_diagnose`` fact."""
    nvidia_smi = params['nvidia_smi_path']
    node_name = params['node_name'] or socket.gethostname().split('.')[0]
    errors = {}
    facts = {'node_name': node_name}

    def keep(name, value_error):
        value, error = value_error
        facts[name] = value
        if error:
            errors[name] = error

    topology = collect_topology(tree, runner, nvidia_smi)
    add_ib_counters(tree, topology)
    facts['topology'] = topology
    keep('slurm', read_slurm(runner, node_name))
    units = parse_systemctl_show(runner.output('systemctl_show', [
        'systemctl', 'show', '--property=Id,LoadState,ActiveState,SubState,Result'] + list(params['services'])))
    keep('services', (units or None, None if units else 'systemctl show answered nothing (no systemd?)'))
    keep('clock', read_clock(runner))
    keep('kernel_log', read_kernel_log(runner))
    keep('gpu_samples', read_gpu_samples(runner, nvidia_smi, params['samples'], params['sample_interval'], sleep))
    interval = max(1, int(round(params['sample_interval'])))
    cpu = parse_vmstat(runner.output('vmstat', ['vmstat', str(interval), '2']))
    keep('cpu', (cpu, None if cpu else 'vmstat unavailable or unreadable'))
    keep('job', read_job(tree, runner, params['job'], nvidia_smi) if params['job'] else (None, None))
    keep('job_accounting', read_job_accounting(runner, params['job']) if params['job'] else (None, None))
    conf = tree.read(params['nccl_conf'])
    if conf is None:
        keep('nccl_conf', (None, '%s does not exist or cannot be read' % params['nccl_conf']))
    else:
        settings = parse_nccl_conf(conf)
        topo_file = settings.get('NCCL_TOPO_FILE')
        facts['nccl_conf'] = {'path': params['nccl_conf'], 'settings': settings,
                              'topo_file_exists': tree.exists(topo_file) if topo_file else None,
                              'topo_file': parse_nccl_topo_xml(tree.read(topo_file)) if topo_file and tree.exists(topo_file) else None}
    facts['errors'] = errors
    return facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            PROBE_ARGUMENT_SPEC,
            node_name={'type': 'str', 'default': ''},
            job={'type': 'str', 'default': ''},
            samples={'type': 'int', 'default': 3},
            sample_interval={'type': 'float', 'default': 1.0},
            nccl_conf={'type': 'path', 'default': '/etc/nccl.conf'},
            services={'type': 'list', 'elements': 'str', 'default': ['slurmd.service', 'munge.service']},
        ),
        supports_check_mode=True,
    )
    if module.params['job'] and not re.match(r'[0-9]+(?:_[0-9]+)?\Z', module.params['job']):
        module.fail_json(msg='job must be a Slurm job id (digits, or <array job>_<task>), got %r' % module.params['job'])
    # The samples are taken one after the other on a node being diagnosed: bounded, whatever a survey allowed.
    if not 1 <= module.params['samples'] <= 60:
        module.fail_json(msg='samples must be 1 to 60, got %d' % module.params['samples'])
    if not 0 <= module.params['sample_interval'] <= 10:
        module.fail_json(msg='sample_interval must be 0 to 10 seconds, got %s' % module.params['sample_interval'])
    if module.params['root'] == '/' and 'SLURM_CONF' not in os.environ and not os.path.exists('/etc/slurm/slurm.conf'):
        # A configless node has no slurm.conf: scontrol reads the copy slurmd fetched (Debian's spool, upstream's).
        for path in CONFIGLESS_COPIES:
            if os.path.exists(path):
                os.environ['SLURM_CONF'] = path
                break
    runner = CommandRunner(module.params['root'], module.params['command_timeout'])
    facts = collect(SysfsTree(module.params['root']), runner, module.params)
    module.exit_json(changed=False, ansible_facts={'trainstack_diagnose': facts})


if __name__ == '__main__':
    main()
