# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_stack_facts against recorded hosts (tests/unit/fixtures/gpu_stack/<case>)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils import _gpu_stack
from ansible_collections.trainstack.cluster.plugins.modules import gpu_stack_facts
from topology_support import UNIT_DIR, expectation_params, run_module, value_at

FIXTURES = os.path.join(UNIT_DIR, 'fixtures', 'gpu_stack')


def gather(case, capsys, **options):
    root = os.path.join(FIXTURES, case)
    if 'python_site_dirs' not in options:
        site = os.path.join(root, 'site-packages')
        options['python_site_dirs'] = [site] if os.path.isdir(site) else []
    result = run_module(gpu_stack_facts.main, dict(options, root=root), capsys)
    assert result['changed'] is False
    return result['ansible_facts']['trainstack_gpu_stack']


EXPECTATIONS = {
    'h200_preinstalled': {
        'driver.version': '580.159.04', 'driver.branch': '580', 'driver.kernel_module': 'open',
        'driver.kernel_module_version': '580.159.04', 'driver.cuda': '13.0', 'driver.source': 'nvidia-smi',
        'gpus': [{'index': 0, 'name': 'NVIDIA H200', 'compute_capability': '9.0', 'sm': 90},
                 {'index': 1, 'name': 'NVIDIA H200', 'compute_capability': '9.0', 'sm': 90}],
        'device_nodes': True,
        'cuda': {'version': None, 'release': None, 'nvcc': None, 'source': None},
        'nccl': {'version': '2.28.9', 'source': 'nvidia_nccl_cu13'},
        'cudnn.version': None,
        'pytorch': {'version': '2.11.0+cu130', 'cuda_index': 'cu130'},
        'python_packages': {'nvidia_cuda_runtime_cu13': '13.0.96', 'nvidia_nccl_cu13': '2.28.9', 'torch': '2.11.0+cu130'},
    },
    'debian12_container': {
        'driver': {'version': None, 'branch': None, 'kernel_module': None, 'kernel_module_version': None,
                   'cuda': None, 'source': None},
        'gpus': [], 'device_nodes': False,
        'cuda.version': '11.8', 'cuda.release': '11.8.89', 'cuda.source': 'nvcc',
        'nccl': {'version': None, 'source': None},
        'pytorch': {'version': None, 'cuda_index': None},
    },
    'hgx_cuda_repo': {
        'driver.version': '570.133.20', 'driver.branch': '570', 'driver.kernel_module': 'proprietary',
        'driver.cuda': '12.8', 'gpus.7.sm': 90, 'device_nodes': True,
        'cuda.version': '12.8', 'cuda.release': '12.8.93',
        'nccl': {'version': '2.26.2', 'source': '/usr/include/nccl.h'},
        'cudnn': {'version': '9.8.0', 'source': '/usr/include/cudnn_version.h'},
    },
    'empty': {
        'driver.version': None, 'gpus': [], 'device_nodes': False, 'cuda.version': None,
        'nccl.version': None, 'cudnn.version': None, 'python_packages': {},
    },
}


@pytest.mark.parametrize(('case', 'path', 'expected'), expectation_params(EXPECTATIONS))
def test_recorded_hosts(case, path, expected, capsys):
    assert value_at(gather(case, capsys), path) == expected


def test_gpu_count_of_hgx(capsys):
    assert len(gather('hgx_cuda_repo', capsys)['gpus']) == 8


def test_library_version_from_ldconfig(tmp_path):
    """Without a header, libnccl's version comes from the file ldconfig points at."""
    commands = tmp_path / '.commands'
    commands.mkdir()
    (commands / 'ldconfig_p.txt').write_text(
        "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n")
    lib = tmp_path / 'usr' / 'lib' / 'x86_64-linux-gnu'
    lib.mkdir(parents=True)
    (lib / 'libnccl.so.2.22.3').write_text('')
    os.symlink('libnccl.so.2.22.3', str(lib / 'libnccl.so.2'))
    probe = _gpu_stack.GpuStackProbe(str(tmp_path), _Replay(str(tmp_path)))
    assert probe.nccl() == {'version': '2.22.3', 'source': '/usr/lib/x86_64-linux-gnu/libnccl.so.2'}


class _Replay:
    def __init__(self, root):
        self.root = root

    def output(self, key, argv):
        try:
            with open(os.path.join(self.root, '.commands', key + '.txt'), encoding='utf-8') as handle:
                return handle.read()
        except OSError:
            return None


@pytest.mark.parametrize(('text', 'expected'), [
    ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 9\n',
     ('580.159.04', 'open')),
    ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n', ('535.183.01', 'proprietary')),
    ('NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build  (dvs-builder@U16)  Thu Jan 2\n',
     ('570.86.15', 'open')),
    ('', (None, None)),
    ('garbage\n', (None, None)),
])
def test_proc_version(text, expected):
    assert _gpu_stack.parse_proc_version(text) == expected


@pytest.mark.parametrize(('text', 'expected'), [
    ('Cuda compilation tools, release 13.0, V13.0.48\n', ('13.0', '13.0.48')),
    ('Cuda compilation tools, release 11.8, V11.8.89\nBuild cuda_11.8.r11.8/compiler.31833905_0\n', ('11.8', '11.8.89')),
    ('bash: nvcc: command not found', (None, None)),
    (None, (None, None)),
])
def test_nvcc(text, expected):
    assert _gpu_stack.parse_nvcc(text) == expected


def test_smi_query_ignores_errors_and_sorts():
    text = "1, NVIDIA B200, 580.95.05, 10.0\nNo devices were found\n0, NVIDIA B200, 580.95.05, 10.0\n"
    gpus, driver = _gpu_stack.parse_nvidia_smi_query(text)
    assert driver == '580.95.05'
    assert [(gpu['index'], gpu['sm']) for gpu in gpus] == [(0, 100), (1, 100)]


def test_smi_query_of_the_recorded_h200_probe():
    """The recorded probe's query (another column order) parses once put in the module's order."""
    # The device probe's output, copied verbatim into the repository (topology fixture h200_vm): the test
    # always runs, from any checkout.
    probe = os.path.join(UNIT_DIR, 'fixtures', 'topology', 'h200_vm', 'probe.txt')
    with open(probe, encoding='utf-8') as handle:
        lines = handle.read().split('## nvidia-smi query\n', 1)[1].split('##', 1)[0].splitlines()[1:]
    rows = [[field.strip() for field in line.split(',')] for line in lines if line.strip()]
    text = ''.join('%s, %s, %s, %s\n' % (row[0], row[1], row[4], row[5]) for row in rows)
    gpus, driver = _gpu_stack.parse_nvidia_smi_query(text)
    assert driver == '580.159.04' and [gpu['sm'] for gpu in gpus] == [90, 90]
