# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read the installed NVIDIA driver, CUDA, NCCL, cuDNN and PyTorch versions of a host.

Every source is optional: a missing tool or file gives None, never an error. Commands go through
CommandRunner (replayed from ``<root>/.commands/<key>.txt`` when root is not ``/``); files are read
under ``root``.
"""

from __future__ import annotations

import glob
import json
import os
import re

NVIDIA_SMI_QUERY = ['--query-gpu=index,name,driver_version,compute_cap', '--format=csv,noheader']
NVCC_DIRS = ('/usr/local/cuda/bin', '/usr/bin')
CUDA_HOMES = ('/usr/local/cuda', '/usr/lib/cuda')
HEADER_DIRS = ('/usr/include', '/usr/include/x86_64-linux-gnu', '/usr/include/aarch64-linux-gnu',
               '/usr/local/cuda/include', '/usr/local/cuda/targets/x86_64-linux/include')

_SMI_CUDA = re.compile(r"CUDA Version:\s*([0-9]+\.[0-9]+)")
_NVRM = re.compile(r"NVRM version:\s*(?P<text>.*?)\s+(?P<version>[0-9]+\.[0-9]+(\.[0-9]+)?)\s")
_NVCC = re.compile(r"release\s+(?P<version>[0-9]+\.[0-9]+),\s*V(?P<release>[0-9.]+)")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Z_]+)[ \t]+(?P<value>\S+)", re.M)
_LIBNCCL = re.compile(r"^\s*libnccl\.so\.2\b.*=>\s*(?P<path>\S+)", re.M)
_SO_VERSION = re.compile(r"libnccl\.so\.(?P<version>[0-9]+\.[0-9]+\.[0-9]+)$")
_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)\.(dist|egg)-info$")


# Run by the interpreter whose torch is asked (module option ``python``): what torch itself reports.
TORCH_REPORT = r"""
import json, site, sys
report = {'site_dirs': [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]}
try:
    import torch
except Exception as exc:
    report['import_error'] = '%s: %s' % (type(exc).__name__, exc)
    print(json.dumps(report)); sys.exit(0)
report.update(version=torch.__version__, cuda_runtime=torch.version.cuda, cuda_available=torch.cuda.is_available(),
              device_count=torch.cuda.device_count() if torch.cuda.is_available() else 0, nccl_version=None,
              distributed=torch.distributed.is_available())
try:
    report['nccl_version'] = '.'.join(str(part) for part in torch.cuda.nccl.version())
except Exception:
    pass
if report['distributed']:
    import torch.distributed as dist
    report['backends'] = [name for name in ('gloo', 'nccl', 'mpi') if getattr(dist, 'is_%s_available' % name)()]
print(json.dumps(report))
"""


def parse_torch_report(text):
    """The JSON line TORCH_REPORT prints (torch's own view: version, CUDA, devices, NCCL), or None."""
    for line in reversed((text or '').splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                report = json.loads(line)
            except ValueError:
                return None
            return report if isinstance(report, dict) else None
    return None


def parse_nvidia_smi_query(text):
    """GPUs and the driver version from ``nvidia-smi --query-gpu=index,name,driver_version,compute_cap``."""
    gpus, driver = [], None
    for line in (text or '').splitlines():
        fields = [field.strip() for field in line.split(',')]
        if len(fields) < 4 or not fields[0].isdigit():
            continue
        capability = fields[3]
        sm = None
        if re.match(r"^[0-9]+\.[0-9]+$", capability):
            major, minor = capability.split('.')
            sm = int(major) * 10 + int(minor)
        gpus.append({'index': int(fields[0]), 'name': fields[1], 'compute_capability': capability, 'sm': sm})
        driver = driver or fields[2]
    return sorted(gpus, key=lambda gpu: gpu['index']), driver


def parse_nvidia_smi_cuda(text):
    """The newest CUDA version the driver supports, from plain ``nvidia-smi`` output."""
    match = _SMI_CUDA.search(text or '')
    return match.group(1) if match else None


def parse_proc_version(text):
    """(version, 'open' | 'proprietary') from /proc/driver/nvidia/version, or (None, None)."""
    match = _NVRM.search(text or '')
    if not match:
        return None, None
    flavour = 'open' if 'Open Kernel Module' in match.group('text') else 'proprietary'
    return match.group('version'), flavour


def parse_nvcc(text):
    """(major.minor, full release) from ``nvcc --version``, or (None, None)."""
    match = _NVCC.search(text or '')
    if not match:
        return None, None
    return match.group('version'), match.group('release')


def parse_defines(text, major, minor, patch):
    """'M.m.p' from #define lines of a version header (nccl.h, cudnn_version.h), or None."""
    values = {found.group('name'): found.group('value') for found in _DEFINE.finditer(text or '')}
    parts = [values.get(name) for name in (major, minor, patch)]
    if not all(part and part.isdigit() for part in parts):
        return None
    return '.'.join(str(int(part)) for part in parts)


def branch_of(version):
    """'580.159.04' -> '580'."""
    return version.split('.')[0] if version else None


class GpuStackProbe:
    """Reads one host (or a recorded tree) through a CommandRunner."""

    def __init__(self, root, runner, nvidia_smi='nvidia-smi', site_dirs=None, find_program=None, python=None):
        self.root = root
        self.torch_python = python
        self.runner = runner
        self.nvidia_smi = nvidia_smi
        self.site_dirs = list(site_dirs or [])
        self.find_program = find_program
        self.nvcc_output = None
        self.nvcc_path = None
        self._python = None

    def path(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def read(self, path):
        try:
            with open(self.path(path), encoding='utf-8', errors='replace') as handle:
                return handle.read()
        except OSError:
            return None

    def exists(self, path):
        return os.path.exists(self.path(path))

    def driver(self):
        gpus, version = parse_nvidia_smi_query(self.runner.output('nvidia-smi_query', [self.nvidia_smi] + NVIDIA_SMI_QUERY))
        smi_cuda = parse_nvidia_smi_cuda(self.runner.output('nvidia-smi', [self.nvidia_smi]))
        module_version, module_type = parse_proc_version(self.read('/proc/driver/nvidia/version'))
        source = 'nvidia-smi' if version else ('/proc/driver/nvidia/version' if module_version else None)
        version = version or module_version
        return gpus, {
            'version': version,
            'branch': branch_of(version),
            'kernel_module': module_type,
            'kernel_module_version': module_version,
            'cuda': smi_cuda,
            'source': source,
        }

    def nvcc(self):
        program = None
        if self.find_program is not None:
            program = self.find_program('nvcc')
            for directory in NVCC_DIRS:
                if program:
                    break
                candidate = os.path.join(directory, 'nvcc')
                program = candidate if os.access(candidate, os.X_OK) else None
        return self.runner.output('nvcc_version', [program or 'nvcc', '--version']), program

    def cuda(self):
        version, release = parse_nvcc(self.nvcc_output)
        if version:
            return {'version': version, 'release': release, 'nvcc': self.nvcc_path, 'source': 'nvcc'}
        for home in CUDA_HOMES:
            text = self.read(home + '/version.json')
            if not text:
                continue
            try:
                release = json.loads(text)['cuda']['version']
            except (ValueError, KeyError, TypeError):
                continue
            return {'version': '.'.join(release.split('.')[:2]), 'release': release, 'nvcc': None,
                    'source': home + '/version.json'}
        return {'version': None, 'release': None, 'nvcc': None, 'source': None}

    def header_version(self, names, defines):
        for directory in HEADER_DIRS:
            for name in names:
                for path in sorted(glob.glob(self.path(os.path.join(directory, name)))):
                    with open(path, encoding='utf-8', errors='replace') as handle:
                        version = parse_defines(handle.read(), *defines)
                    if version:
                        return version, '/' + os.path.relpath(path, self.root)
        return None, None

    def nccl(self):
        version, source = self.header_version(['nccl.h'], ('NCCL_MAJOR', 'NCCL_MINOR', 'NCCL_PATCH'))
        if version:
            return {'version': version, 'source': source}
        match = _LIBNCCL.search(self.runner.output('ldconfig_p', ['ldconfig', '-p']) or '')
        if match:
            library = match.group('path')
            real = os.path.realpath(self.path(library))
            found = _SO_VERSION.search(os.path.basename(real)) or _SO_VERSION.search(library)
            if found:
                return {'version': found.group('version'), 'source': library}
        for wheel in self.python()['packages']:
            if wheel['name'].startswith('nvidia_nccl_cu'):
                return {'version': wheel['version'], 'source': wheel['name']}
        return {'version': None, 'source': None}

    def cudnn(self):
        version, source = self.header_version(['cudnn_version.h', 'cudnn_version_v*.h'],
                                              ('CUDNN_MAJOR', 'CUDNN_MINOR', 'CUDNN_PATCHLEVEL'))
        return {'version': version, 'source': source}

    def python(self):
        """torch and nvidia-* wheels in the site directories (the interpreter running the module)."""
        if self._python is not None:
            return self._python
        packages = []
        for directory in self.site_dirs:
            try:
                names = sorted(os.listdir(directory))
            except OSError:
                continue
            for name in names:
                match = _DIST_INFO.match(name)
                if match and (match.group('name') == 'torch' or match.group('name').startswith('nvidia_')):
                    packages.append({'name': match.group('name'), 'version': match.group('version'), 'path': directory})
        torch = next((wheel['version'] for wheel in packages if wheel['name'] == 'torch'), None)
        index = torch.split('+', 1)[1] if torch and '+' in torch else None
        self._python = {'packages': packages, 'torch': torch, 'torch_cuda_index': index}
        return self._python

    def torch_report(self):
        """torch's own report from the interpreter ``python`` (empty dict when none was given)."""
        if not self.torch_python:
            return {}
        report = parse_torch_report(self.runner.output('torch_report', [self.torch_python, '-c', TORCH_REPORT]))
        if report is None:
            return {'python': self.torch_python, 'import_error': 'the interpreter gave no report'}
        if not self.site_dirs:
            self.site_dirs = list(report.get('site_dirs') or [])
        report['python'] = self.torch_python
        return report

    def collect(self):
        report = self.torch_report()
        self.nvcc_output, self.nvcc_path = self.nvcc()
        gpus, driver = self.driver()
        python = self.python()
        return {
            'driver': driver,
            'gpus': gpus,
            # nvidia-smi creates /dev/nvidiactl itself where it may (containers with CAP_MKNOD): a GPU
            # is usable only where the kernel module is loaded too.
            'device_nodes': self.exists('/dev/nvidiactl') and self.exists('/proc/driver/nvidia/version'),
            'cuda': self.cuda(),
            'nccl': self.nccl(),
            'cudnn': self.cudnn(),
            'pytorch': dict({'version': python['torch'] or report.get('version'), 'cuda_index': python['torch_cuda_index']},
                            **{key: value for key, value in report.items() if key not in ('version', 'site_dirs')}),
            'python_packages': {wheel['name']: wheel['version'] for wheel in python['packages']},
        }
