# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""srun + torchrun glue: one torchrun agent per node, rendezvous from the Slurm allocation.

    eval "$(trainstack-torchrun prepare)"            # in the batch script: MASTER_ADDR, MASTER_PORT
    srun --ntasks-per-node=1 --kill-on-bad-exit=1 trainstack-torchrun run -- python3 train.py ...

`run` (once per node) exports /etc/nccl.conf's settings (the environment wins, as in NCCL),
OMP_NUM_THREADS from the CPUs Slurm gave the task, CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA numbers the job's
GPUs in PCI order, the order `bind` maps them in), waits at most TRAINSTACK_RDZV_TIMEOUT seconds for
the rendezvous to answer (nodes other than the first) and then execs torchrun with a static
rendezvous: --nnodes from SLURM_NNODES, --node-rank from SLURM_NODEID, --nproc-per-node from the GPUs
Slurm gave the node (1 on CPU-only nodes). Every rank starts through `bind`, which finds the host GPU
behind its CUDA device, pins the rank to the CPUs of that GPU's NUMA node (from the probed topology in
the launcher configuration) and execs the program. Standard library only: it runs before any virtual
environment is chosen.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import time

CONFIG_PATH = '/etc/trainstack/pytorch-launch.json'
DEFAULT_PORT = 29500
EXIT_RENDEZVOUS = 3
EXIT_USAGE = 2


class LaunchError(Exception):
    """A condition the user must fix; the message says which."""


def parse_nccl_conf(text):
    """KEY=VALUE lines of an nccl.conf (comments and blank lines skipped) as an ordered dict."""
    settings = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#') or '=' not in line:
            continue
        key, value = line.split('=', 1)
        settings[key.strip()] = value.strip()
    return settings


def nccl_environment(conf, environ):
    """The nccl.conf settings to export: those the environment does not set already."""
    return {key: value for key, value in conf.items() if key not in environ}


def _positive_int(value):
    try:
        number = int(str(value).strip().split('(', maxsplit=1)[0].split(',', maxsplit=1)[0])
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def task_cpus(environ, affinity_count):
    """CPUs Slurm gave this task: SLURM_CPUS_PER_TASK, else SLURM_CPUS_ON_NODE, else the affinity mask."""
    for key in ('SLURM_CPUS_PER_TASK', 'SLURM_CPUS_ON_NODE'):
        number = _positive_int(environ.get(key))
        if number:
            return number
    return max(1, affinity_count)


def visible_devices(environ):
    """Entries of CUDA_VISIBLE_DEVICES, or None when it is unset."""
    value = environ.get('CUDA_VISIBLE_DEVICES')
    if value is None:
        return None
    return [item.strip() for item in value.split(',') if item.strip() and item.strip() != 'NoDevFiles']


def nproc_per_node(environ, config):
    """Workers per node: TRAINSTACK_NPROC_PER_NODE, else the GPUs Slurm gave the node, else 1 (CPU).

    Outside Slurm the probed GPU count of the node stands in for the allocation.
    """
    explicit = _positive_int(environ.get('TRAINSTACK_NPROC_PER_NODE'))
    if explicit:
        return explicit
    gpus = _positive_int(environ.get('SLURM_GPUS_ON_NODE'))
    if gpus:
        return gpus
    visible = visible_devices(environ)
    if visible:
        return len(visible)
    if visible is None and not environ.get('SLURM_JOB_ID'):
        return max(1, len(config.get('gpus') or []))
    return 1


def omp_threads(cpus, nproc):
    """Threads per rank: the task's CPUs shared among its ranks, at least 1."""
    return max(1, cpus // max(1, nproc))


def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in (text or '').strip().split(','):
        part = part.strip()
        if not part:
            continue
        if '-' in part:
            first, last = part.split('-', 1)
            cpus.extend(range(int(first), int(last) + 1))
        else:
            cpus.append(int(part))
    return cpus


def device_state(path):
    """'denied' where the job's device cgroup refuses the device file (EPERM/EACCES: Slurm's ConstrainDevices),
    'absent' without the file, else 'ok' (an open that fails otherwise, such as ENXIO without a driver behind
    the file, passed the cgroup)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES):
            return 'denied'
        if exc.errno == errno.ENOENT:
            return 'absent'
        return 'ok'
    os.close(handle)
    return 'ok'


def _busid_key(gpu):
    """PCI order of a GPU ('00000000:1B:00.0' and '0000:1b:00.0' alike); GPUs without a bus id keep their index order."""
    busid = str(gpu.get('busid') or '').lower()
    try:
        domain, bus, rest = busid.split(':')
        device, function = rest.split('.')
        return (0, int(domain, 16), int(bus, 16), int(device, 16), int(function, 16))
    except ValueError:
        return (1, int(gpu.get('index') or 0), 0, 0, 0)


def cuda_gpus(config, state=device_state):
    """The host GPUs CUDA numbers 0, 1, ... in this job: those whose /dev/nvidiaN the job may open, in PCI order.

    Under Slurm's ConstrainDevices a job sees only its GPUs and CUDA numbers them from 0: Slurm 22.05 sets
    CUDA_VISIBLE_DEVICES=0 for a job holding host GPU 1 (SLURM_JOB_GPUS=1), and with --gpus-per-task even
    SLURM_STEP_GPUS reads 0 for each task. Without it every GPU is open to the job and CUDA_VISIBLE_DEVICES holds
    their indices in the same PCI order. GPUs the configuration gives no minor number for are taken as open.
    """
    gpus = sorted(config.get('gpus') or [], key=_busid_key)
    return [gpu for gpu in gpus if gpu.get('minor') is None or state('/dev/nvidia%s' % gpu['minor']) == 'ok']


def rank_gpu(local_rank, environ, config, state=device_state):
    """The host GPU (configuration entry) of a local rank, or None: rank i uses CUDA device i of the visible list,
    whose entry is a CUDA ordinal among the job's GPUs, or a GPU UUID (newer Slurm and containers set those)."""
    gpus = config.get('gpus') or []
    if not gpus:
        return None
    ordered = cuda_gpus(config, state)
    visible = visible_devices(environ)
    if visible is None:
        visible = [str(number) for number in range(len(ordered))]
    if local_rank >= len(visible):
        return None
    entry = visible[local_rank]
    if entry.isdigit():
        number = int(entry)
        return ordered[number] if number < len(ordered) else None
    return next((gpu for gpu in gpus if gpu.get('uuid') and gpu['uuid'] == entry), None)


def rank_cpus(gpu, allowed):
    """CPUs a rank is pinned to: its GPU's NUMA-local CPUs within the allowed set, or None (no binding)."""
    if gpu is None:
        return None
    local = set(parse_cpulist(gpu.get('cpulist')))
    chosen = sorted(local & set(allowed))
    return chosen or None


def first_host(hostnames_text):
    """First host of `scontrol show hostnames` output."""
    for line in (hostnames_text or '').splitlines():
        if line.strip():
            return line.strip()
    raise LaunchError('scontrol show hostnames gave no host for SLURM_JOB_NODELIST')


def job_port(job_id):
    """A port derived from the job id, where the first host cannot be asked for a free one."""
    number = _positive_int(job_id) or 0
    return 29500 + number % 2000


def rendezvous(environ, master=None):
    """(host, port, nnodes, node_rank) of the static rendezvous from the environment and Slurm."""
    host = environ.get('TRAINSTACK_RDZV_HOST') or environ.get('MASTER_ADDR') or master
    if not host:
        raise LaunchError('no rendezvous host: MASTER_ADDR is unset and no Slurm node list was given '
                          '(run `eval "$(trainstack-torchrun prepare)"` in the batch script first)')
    port = _positive_int(environ.get('TRAINSTACK_RDZV_PORT') or environ.get('MASTER_PORT')) or DEFAULT_PORT
    nnodes = _positive_int(environ.get('SLURM_NNODES') or environ.get('SLURM_JOB_NUM_NODES')) or 1
    node_rank = int(environ.get('SLURM_NODEID') or 0)
    return host, port, nnodes, node_rank


def torchrun_argv(torchrun, host, port, nnodes, node_rank, nproc, timeout, program, python=None, launcher=None):
    """torchrun's command line: static rendezvous, no restarts, every rank through `bind`."""
    argv = [torchrun, '--nnodes=%d' % nnodes, '--nproc-per-node=%d' % nproc, '--node-rank=%d' % node_rank,
            '--master-addr=%s' % host, '--master-port=%d' % port, '--rdzv-conf=timeout=%d' % timeout,
            '--max-restarts=0', '--no-python']
    argv += [python or sys.executable, launcher or os.path.abspath(__file__), 'bind', '--']
    return argv + list(program)


def wait_reachable(host, port, timeout, connect=None, clock=time.monotonic, sleep=time.sleep):
    """Poll a TCP connect to host:port until it answers or timeout seconds pass; the last error, or None."""
    connect = connect or (lambda: socket.create_connection((host, port), timeout=min(5, timeout)).close())
    deadline = clock() + timeout
    error = None
    while True:
        try:
            connect()
            return None
        except OSError as exc:
            error = exc
        if clock() >= deadline:
            return error
        sleep(1)


def load_config(path=CONFIG_PATH):
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def log(message):
    sys.stderr.write('[trainstack-torchrun %s] %s\n' % (socket.gethostname(), message))
    sys.stderr.flush()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('', 0))
        return sock.getsockname()[1]


def scontrol_hostnames(nodelist):
    result = subprocess.run(['scontrol', 'show', 'hostnames', nodelist], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if result.returncode != 0:
        raise LaunchError('scontrol show hostnames %s failed: %s' % (nodelist, result.stderr.strip()))
    return result.stdout


def cmd_prepare(environ):
    """Print shell exports for MASTER_ADDR and MASTER_PORT (run in the batch script)."""
    nodelist = environ.get('SLURM_JOB_NODELIST')
    if not nodelist:
        raise LaunchError('SLURM_JOB_NODELIST is unset: `prepare` runs inside a Slurm job')
    host = first_host(scontrol_hostnames(nodelist))
    if environ.get('MASTER_PORT'):
        port = int(environ['MASTER_PORT'])
    elif host == socket.gethostname().split('.')[0]:
        port = free_port()
    else:
        port = job_port(environ.get('SLURM_JOB_ID'))
    print('export MASTER_ADDR=%s MASTER_PORT=%d' % (host, port))
    return 0


def cmd_run(environ, program, config):
    if not program:
        raise LaunchError('nothing to run: trainstack-torchrun run -- PROGRAM [ARGS]')
    conf_path = config.get('nccl_conf') or '/etc/nccl.conf'
    try:
        with open(conf_path, encoding='utf-8') as handle:
            nccl = nccl_environment(parse_nccl_conf(handle.read()), environ)
    except OSError:
        nccl = {}
    master = None
    if not (environ.get('MASTER_ADDR') or environ.get('TRAINSTACK_RDZV_HOST')) and environ.get('SLURM_JOB_NODELIST'):
        master = first_host(scontrol_hostnames(environ['SLURM_JOB_NODELIST']))
    host, port, nnodes, node_rank = rendezvous(environ, master)
    nproc = nproc_per_node(environ, config)
    cpus = task_cpus(environ, len(os.sched_getaffinity(0)))
    timeout = _positive_int(environ.get('TRAINSTACK_RDZV_TIMEOUT')) or int(config.get('rdzv_timeout') or 60)
    env = dict(environ)
    env.update(nccl)
    env.setdefault('OMP_NUM_THREADS', str(omp_threads(cpus, nproc)))
    # CUDA's default (FASTEST_FIRST) may order unlike GPUs otherwise; `bind` maps ordinals in PCI order.
    env.setdefault('CUDA_DEVICE_ORDER', 'PCI_BUS_ID')
    log('node %d/%d, %d rank(s), OMP_NUM_THREADS=%s, rendezvous %s:%d, %s from %s'
        % (node_rank, nnodes, nproc, env['OMP_NUM_THREADS'], host, port,
           ' '.join(sorted(nccl)) or 'no NCCL settings', conf_path))
    if node_rank > 0:
        error = wait_reachable(host, port, timeout)
        if error is not None:
            log('ERROR: cannot reach the rendezvous %s:%d within %d s (%s). Check that %s resolves and '
                'accepts TCP port %d from this node (firewall, NCCL_SOCKET_IFNAME, hostname), or raise '
                'TRAINSTACK_RDZV_TIMEOUT.' % (host, port, timeout, error, host, port))
            return EXIT_RENDEZVOUS
    torchrun = config.get('torchrun') or shutil.which('torchrun') or 'torchrun'
    python = config.get('python') or sys.executable
    argv = torchrun_argv(torchrun, host, port, nnodes, node_rank, nproc, timeout, program, python=python)
    os.execve(argv[0], argv, env)
    return 0


def cmd_bind(environ, program, config):
    local_rank = int(environ.get('LOCAL_RANK') or 0)
    gpu = rank_gpu(local_rank, environ, config)
    cpus = rank_cpus(gpu, sorted(os.sched_getaffinity(0)))
    if cpus:
        os.sched_setaffinity(0, cpus)
        if local_rank == 0 or environ.get('TRAINSTACK_BIND_VERBOSE'):
            log('local rank %d bound to CPUs %s (the NUMA node of GPU %s, %s)'
                % (local_rank, ','.join(map(str, cpus)), gpu.get('index'), gpu.get('busid') or 'no bus id'))
    os.execvpe(program[0], program, dict(environ))
    return 0


def main(argv=None, environ=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = dict(os.environ if environ is None else environ)
    if not argv or argv[0] not in ('prepare', 'run', 'bind'):
        sys.stderr.write(__doc__)
        return EXIT_USAGE
    command, rest = argv[0], argv[1:]
    if rest and rest[0] == '--':
        rest = rest[1:]
    config = load_config(environ.get('TRAINSTACK_LAUNCH_CONFIG') or CONFIG_PATH)
    try:
        if command == 'prepare':
            return cmd_prepare(environ)
        if command == 'run':
            return cmd_run(environ, rest, config)
        return cmd_bind(environ, rest, config)
    except LaunchError as exc:
        log('ERROR: %s' % exc)
        return EXIT_USAGE


if __name__ == '__main__':
    sys.exit(main())
