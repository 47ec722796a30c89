# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch environment decisions (controller side, pure).

pytorch_wheel_index picks the wheel index for a CUDA version from the compatibility matrix's
pytorch_indexes (data/gpu_compatibility.yml); pytorch_launch_config turns the probed topology into the
launcher's configuration; pytorch_nccl_report says which NCCL torch jobs load; pytorch_ddp_result reads
and checks the DDP smoke job's JSON result.
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.gpu_stack import nccl_parts, version_tuple

DDP_MARKER = 'TRAINSTACK_DDP_RESULT '


def pytorch_wheel_index(cuda_version, matrix, requested=''):
    """The PyTorch wheel index for a CUDA toolkit: requested when given, 'cpu' without CUDA, else the
    newest index of the same CUDA major whose CUDA is not newer than cuda_version."""
    requested = '' if requested is None else str(requested).strip()
    indexes = (matrix or {}).get('pytorch_indexes') or {}
    if requested:
        if requested != 'cpu' and requested not in indexes:
            raise AnsibleFilterError("pytorch_wheel_index: '%s' is not a known PyTorch wheel index (cpu, %s)"
                                     % (requested, ', '.join(sorted(indexes))))
        return requested
    cuda = version_tuple(cuda_version)
    if not cuda:
        return 'cpu'
    fitting = [(version_tuple(value), name) for name, value in indexes.items()
               if version_tuple(value) and version_tuple(value)[0] == cuda[0] and version_tuple(value) <= cuda]
    if not fitting:
        raise AnsibleFilterError('pytorch_wheel_index: no PyTorch wheel index bundles CUDA %s.x up to %s (known: %s)'
                                 % (cuda[0], cuda_version, ', '.join('%s=%s' % item for item in sorted(indexes.items()))))
    return max(fitting)[1]


def _pin(name, version, local):
    return '%s==%s%s' % (name, version, ('+' + local) if local else '')


def pytorch_pip_install(settings):
    """pip's requirements and arguments for the pytorch role's virtual environment.

    settings: source (index | wheelhouse), version, index (the wheel index: cu128, cpu, ...), arch (the node's
    ansible_facts architecture), torchvision_version, deepspeed_version, extra_packages, index_url, extra_index_urls,
    wheelhouse_dir.

    Source index: torch (and torchvision) pinned with the index's local version (torch==2.7.1+cu128), since a pin
    without it matches any CUDA build and a changed CUDA would never reinstall; the PyTorch index is an extra
    index, so packages only PyPI has (DeepSpeed) still install. Source wheelhouse: plain pins, offline, from the
    wheelhouse (its wheels are whatever build it was filled with).
    """
    settings = settings or {}
    source = settings.get('source')
    if source not in ('index', 'wheelhouse'):
        raise AnsibleFilterError("pytorch_pip_install: source must be index or wheelhouse, got %r" % (source,))
    local = str(settings.get('index') or '') if source == 'index' else ''
    # The CPU index's Arm wheels carry no +cpu (pytorch/pytorch#110791); its x86_64 wheels and the CUDA ones do.
    if local == 'cpu' and settings.get('arch', 'x86_64') != 'x86_64':
        local = ''
    requirements = [_pin('torch', settings['version'], local)]
    if settings.get('torchvision_version'):
        requirements.append(_pin('torchvision', settings['torchvision_version'], local))
    if settings.get('deepspeed_version'):
        requirements.append(_pin('deepspeed', settings['deepspeed_version'], ''))
    requirements.extend(settings.get('extra_packages') or [])
    if source == 'wheelhouse':
        args = ['--no-index', '--find-links', settings['wheelhouse_dir']]
    else:
        args = ['--extra-index-url', str(settings['index_url']).rstrip('/') + '/' + str(settings.get('index') or '')]
        for url in settings.get('extra_index_urls') or []:
            args.extend(['--extra-index-url', url])
    return {'requirements': requirements, 'args': args}


def pytorch_launch_config(topology, extra=None):
    """The launcher configuration (/etc/trainstack/pytorch-launch.json) from topology facts: each GPU's
    index, PCI bus id, UUID, driver minor number (/dev/nvidiaN), NUMA node and local CPU list, plus the
    extra keys (python, torchrun, rdzv_timeout, nccl_conf). The launcher finds a rank's host GPU by bus id
    order, minor number or UUID: inside a job Slurm may renumber CUDA_VISIBLE_DEVICES from 0."""
    gpus = []
    for gpu in (topology or {}).get('gpus') or []:
        gpus.append({'index': gpu.get('index'), 'busid': gpu.get('busid'), 'uuid': gpu.get('uuid'),
                     'minor': gpu.get('minor_number'), 'numa_node': gpu.get('numa_node'),
                     'cpulist': (gpu.get('local_cpulist') or '').strip() or None})
    config = {'gpus': sorted(gpus, key=lambda gpu: gpu['index'] if gpu['index'] is not None else -1)}
    config.update(extra or {})
    return config


def pytorch_cpus_per_gpu(topology):
    """CPUs each GPU of the node's jobs gets (sbatch --cpus-per-gpu): the node's logical CPUs shared evenly among
    its GPUs, at least 1; None on a node without GPUs. Without it a one-task-per-node job gets one CPU, and
    every rank and NCCL's proxy threads share it under ConstrainCores."""
    topology = topology or {}
    gpus = len(topology.get('gpus') or [])
    cpus = int((topology.get('cpu') or {}).get('logical_cpus') or 0)
    if not gpus:
        return None
    return max(1, cpus // gpus)


def pytorch_nccl_report(torch_nccl, system_nccl, torch_packages=None):
    """Which NCCL torch jobs use, and whether it differs from the system's (the one nccl-tests and MPI use).

    torch_nccl is what torch.cuda.nccl.version() reports: the library torch loaded. A pip wheel loads
    the nvidia-nccl-cu* wheel beside it, not the system's libnccl.
    """
    if isinstance(system_nccl, dict):
        # gpu_stack_facts falls back to an nvidia-nccl-cu* wheel: that is torch's copy, not the system's.
        source = str(system_nccl.get('source') or '')
        system_nccl = None if source.startswith('nvidia_nccl_cu') else system_nccl.get('version')
    torch_version = nccl_parts(torch_nccl)[0]
    system_version = nccl_parts(system_nccl)[0]
    wheel = next((name for name in sorted(torch_packages or {}) if name.startswith('nvidia_nccl_cu')), None)
    if not torch_version:
        return {'jobs_use': None, 'mismatch': False,
                'message': 'torch has no NCCL (CPU build or no CUDA): jobs use gloo; system NCCL %s'
                           % (system_version or 'absent')}
    origin = ('the %s %s wheel in the virtual environment' % (wheel, torch_packages[wheel])) if wheel else \
        'the library torch was built against'
    if not system_version:
        return {'jobs_use': torch_version, 'mismatch': False,
                'message': 'torch jobs use NCCL %s (%s); the system has no NCCL' % (torch_version, origin)}
    mismatch = torch_version != system_version
    message = 'torch jobs use NCCL %s (%s); system NCCL is %s' % (torch_version, origin, system_version)
    if mismatch:
        message += (' - MISMATCH: nccl-tests and MPI programs use %s, torch uses %s. To run torch on the system '
                    'NCCL, start jobs with LD_PRELOAD pointing at the system libnccl.so.2 (same major version).'
                    % (system_version, torch_version))
    return {'jobs_use': torch_version, 'mismatch': mismatch, 'message': message}


def pytorch_ddp_result(text, world_size=None, hosts=None, backend=None):
    """Find the DDP smoke job's result line in its output and check it.

    Returns {'ok', 'problems', 'result'}; problems name every failed expectation (loss did not
    decrease, parameters differ between ranks, world size, hosts or backend other than expected).
    """
    result = None
    for line in (text or '').splitlines():
        position = line.find(DDP_MARKER)
        if position >= 0:
            try:
                result = json.loads(line[position + len(DDP_MARKER):])
            except ValueError as exc:
                raise AnsibleFilterError('pytorch_ddp_result: the result line is not JSON: %s' % exc)
    if not isinstance(result, dict):
        return {'ok': False, 'problems': ['no %sline in the job output' % DDP_MARKER], 'result': None}
    problems = []
    first, last = result.get('loss_first'), result.get('loss_last')
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)) or not last < first:
        problems.append('loss did not decrease (first %s, last %s)' % (first, last))
    if result.get('params_identical') is not True:
        problems.append('parameters differ between ranks at the end')
    ranks = result.get('ranks') or []
    if len(ranks) != result.get('world_size'):
        problems.append('%d rank entries for world size %s' % (len(ranks), result.get('world_size')))
    if any(not isinstance(item.get('samples_per_s'), (int, float)) or item['samples_per_s'] <= 0 for item in ranks):
        problems.append('a rank reports no throughput')
    if world_size is not None and result.get('world_size') != int(world_size):
        problems.append('world size %s, expected %s' % (result.get('world_size'), world_size))
    if hosts is not None and sorted(result.get('hosts') or []) != sorted(hosts):
        problems.append('ran on %s, expected %s' % (', '.join(result.get('hosts') or []), ', '.join(sorted(hosts))))
    if backend is not None and result.get('backend') != backend:
        problems.append('backend %s, expected %s' % (result.get('backend'), backend))
    return {'ok': not problems, 'problems': problems, 'result': result}


# A requirement's project name and its exact pins (==x, ===x): PEP 503 folds case and runs of -_. into one '-'.
_REQUIREMENT_NAME = re.compile(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)')
_EXACT_PIN = re.compile(r'===?\s*([A-Za-z0-9.*+!_-]+)')


def pip_pin_conflicts(requirements, variable='pytorch_extra_packages'):
    """Messages for projects that `requirements` pins with == to two different versions (pip stops with
    ResolutionImpossible on the node, after the venv was made); the same pin twice is not a conflict."""
    if not isinstance(requirements, (list, tuple)):
        return []
    pins = {}
    for index, requirement in enumerate(requirements):
        if not isinstance(requirement, str):
            continue
        text = requirement.split(';', 1)[0]
        name = _REQUIREMENT_NAME.match(text)
        if not name:
            continue
        key = re.sub(r'[-_.]+', '-', name.group(1)).lower()
        for version in _EXACT_PIN.findall(text[name.end():]):
            pins.setdefault(key, []).append((index, version))
    out = []
    for key in sorted(pins):
        versions = sorted(set(version for _index, version in pins[key]))
        if len(versions) > 1:
            out.append('%s pins %s to different versions (%s): pip cannot install both; keep one pin'
                       % (variable, key, ', '.join('%s[%d] ==%s' % (variable, index, version) for index, version in pins[key])))
    return out


class FilterModule:
    """PyTorch environment filters."""

    def filters(self):
        return {
            'pytorch_wheel_index': pytorch_wheel_index,
            'pytorch_pip_install': pytorch_pip_install,
            'pytorch_launch_config': pytorch_launch_config,
            'pytorch_cpus_per_gpu': pytorch_cpus_per_gpu,
            'pytorch_nccl_report': pytorch_nccl_report,
            'pytorch_ddp_result': pytorch_ddp_result,
            'pip_pin_conflicts': pip_pin_conflicts,
        }
