# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch filters against the real compatibility matrix and real DDP smoke job outputs."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from topology_support import expected_facts

from ansible_collections.trainstack.cluster.plugins.filter import pytorch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'ddp_smoke')
with open(os.path.join(ROOT, 'data', 'gpu_compatibility.yml'), encoding='utf-8') as handle:
    MATRIX = yaml.safe_load(handle)


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('cuda, requested, expected', [
    ('', '', 'cpu'),
    (None, '', 'cpu'),
    ('12.8', '', 'cu128'),
    ('12.9', '', 'cu129'),
    ('12.7', '', 'cu126'),        # no cu127: the newest older index of CUDA 12
    ('13.1', '', 'cu130'),
    ('13.2', '', 'cu132'),
    ('12.4.1', '', 'cu124'),
    ('12.8', 'cu126', 'cu126'),   # the inventory's choice wins
    ('', 'cpu', 'cpu'),
])
def test_wheel_index(cuda, requested, expected):
    assert pytorch.pytorch_wheel_index(cuda, MATRIX, requested) == expected


@pytest.mark.parametrize('cuda, requested, message', [
    ('11.7', '', 'no PyTorch wheel index bundles CUDA 11.x up to 11.7'),
    ('14.0', '', 'no PyTorch wheel index bundles CUDA 14.x'),
    ('12.8', 'cu999', "'cu999' is not a known PyTorch wheel index"),
])
def test_wheel_index_errors(cuda, requested, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pytorch.pytorch_wheel_index(cuda, MATRIX, requested)


def test_launch_config_from_topology():
    topology = {'gpus': [
        {'index': 1, 'numa_node': 1, 'local_cpulist': '48-95,144-191\n', 'name': 'H100', 'busid': '00000000:9A:00.0',
         'uuid': 'GPU-b71f0e44', 'minor_number': 3},
        {'index': 0, 'numa_node': 0, 'local_cpulist': '0-47,96-143', 'name': 'H100', 'busid': '00000000:1B:00.0',
         'uuid': 'GPU-6e8a2c1d', 'minor_number': 2},
    ]}
    config = pytorch.pytorch_launch_config(topology, {'rdzv_timeout': 30})
    assert config == {'gpus': [{'index': 0, 'busid': '00000000:1B:00.0', 'uuid': 'GPU-6e8a2c1d', 'minor': 2, 'numa_node': 0,
                                'cpulist': '0-47,96-143'},
                               {'index': 1, 'busid': '00000000:9A:00.0', 'uuid': 'GPU-b71f0e44', 'minor': 3, 'numa_node': 1,
                                'cpulist': '48-95,144-191'}],
                      'rdzv_timeout': 30}
    assert pytorch.pytorch_launch_config({}, None) == {'gpus': []}


def test_cpus_per_gpu_from_recorded_topologies():
    # hgx_h100: 224 logical CPUs (2 x 56 cores x 2 threads), 8 GPUs -> 28; h200_vm (the 2 x H200 probe): 32 CPUs, 2 GPUs -> 16;
    # cpu_only: no GPU.
    assert pytorch.pytorch_cpus_per_gpu(expected_facts('hgx_h100')) == 28
    assert pytorch.pytorch_cpus_per_gpu(expected_facts('h200_vm')) == 16
    assert pytorch.pytorch_cpus_per_gpu(expected_facts('cpu_only')) is None
    assert pytorch.pytorch_cpus_per_gpu({'cpu': {'logical_cpus': 4}, 'gpus': [{}] * 8}) == 1


@pytest.mark.parametrize('torch_nccl, system, packages, jobs_use, mismatch, words', [
    ('2.27.5', '2.28.9', {'nvidia_nccl_cu12': '2.27.5'}, '2.27.5', True,
     ['torch jobs use NCCL 2.27.5 (the nvidia_nccl_cu12 2.27.5 wheel', 'system NCCL is 2.28.9', 'MISMATCH', 'LD_PRELOAD']),
    ('2.28.9', '2.28.9-1+cuda13.0', {}, '2.28.9', False, ['torch jobs use NCCL 2.28.9', 'system NCCL is 2.28.9']),
    ('2.27.5', '', {'nvidia_nccl_cu12': '2.27.5'}, '2.27.5', False, ['the system has no NCCL']),
    # The probe's fallback to the wheel is torch's own copy, not a system NCCL.
    ('2.27.5', {'version': '2.27.5', 'source': 'nvidia_nccl_cu12'}, {'nvidia_nccl_cu12': '2.27.5'}, '2.27.5', False,
     ['the system has no NCCL']),
    ('', {'version': '2.26.2', 'source': '/usr/include/nccl.h'}, {}, None, False, ['jobs use gloo', 'system NCCL 2.26.2']),
])
def test_nccl_report(torch_nccl, system, packages, jobs_use, mismatch, words):
    report = pytorch.pytorch_nccl_report(torch_nccl, system, packages)
    assert report['jobs_use'] == jobs_use
    assert report['mismatch'] is mismatch
    for word in words:
        assert word in report['message']


def test_ddp_result_passing_run():
    checked = pytorch.pytorch_ddp_result(fixture('gloo-2ranks-1node.txt'), 2, ['vm'], 'gloo')
    assert checked['problems'] == []
    assert checked['ok'] is True
    assert checked['result']['loss_first'] == 0.007367
    assert checked['result']['loss_last'] == 0.002339
    assert [rank['rank'] for rank in checked['result']['ranks']] == [0, 1]


def test_ddp_result_expectations_not_met():
    checked = pytorch.pytorch_ddp_result(fixture('gloo-2ranks-1node.txt'), 4, ['node1', 'node2'], 'nccl')
    assert checked['ok'] is False
    assert checked['problems'] == ['world size 2, expected 4', 'ran on vm, expected node1, node2', 'backend gloo, expected nccl']


def test_ddp_result_diverged_run():
    checked = pytorch.pytorch_ddp_result(fixture('gloo-2ranks-diverged.txt'))
    assert checked['ok'] is False
    assert checked['problems'] == ['loss did not decrease (first None, last None)']


def test_ddp_result_parameters_differ():
    result = {'loss_first': 1.0, 'loss_last': 0.5, 'params_identical': False, 'world_size': 2,
              'ranks': [{'rank': 0, 'samples_per_s': 10.0}, {'rank': 1, 'samples_per_s': 0.0}]}
    checked = pytorch.pytorch_ddp_result('noise\n' + pytorch.DDP_MARKER + json.dumps(result) + '\n')
    assert checked['problems'] == ['parameters differ between ranks at the end', 'a rank reports no throughput']


def test_ddp_result_missing_or_broken():
    assert pytorch.pytorch_ddp_result('Traceback ...\n')['problems'] == ['no TRAINSTACK_DDP_RESULT line in the job output']
    with pytest.raises(AnsibleFilterError, match='not JSON'):
        pytorch.pytorch_ddp_result(pytorch.DDP_MARKER + '{broken')


INDEX = {'source': 'index', 'version': '2.7.1', 'index': 'cu128', 'arch': 'x86_64', 'torchvision_version': '',
         'deepspeed_version': '', 'extra_packages': [], 'index_url': 'https://download.pytorch.org/whl/',
         'extra_index_urls': [], 'wheelhouse_dir': '/var/cache/trainstack/wheelhouse'}


@pytest.mark.parametrize('changes, requirements, args', [
    # A pin with its CUDA build: torch==2.7.1 alone would also match an installed 2.7.1+cu126.
    ({}, ['torch==2.7.1+cu128'], ['--extra-index-url', 'https://download.pytorch.org/whl/cu128']),
    ({'index': 'cu126'}, ['torch==2.7.1+cu126'], ['--extra-index-url', 'https://download.pytorch.org/whl/cu126']),
    # torchvision comes from the same build; DeepSpeed only from PyPI, hence an extra index rather than --index-url.
    ({'torchvision_version': '0.22.1', 'deepspeed_version': '0.17.5', 'extra_packages': ['numpy<2'],
      'extra_index_urls': ['https://pypi.example.org/simple']},
     ['torch==2.7.1+cu128', 'torchvision==0.22.1+cu128', 'deepspeed==0.17.5', 'numpy<2'],
     ['--extra-index-url', 'https://download.pytorch.org/whl/cu128', '--extra-index-url', 'https://pypi.example.org/simple']),
    ({'index': 'cpu'}, ['torch==2.7.1+cpu'], ['--extra-index-url', 'https://download.pytorch.org/whl/cpu']),
    # The CPU index's aarch64 wheels have no +cpu (pytorch/pytorch#110791); its CUDA wheels keep theirs.
    ({'index': 'cpu', 'arch': 'aarch64'}, ['torch==2.7.1'], ['--extra-index-url', 'https://download.pytorch.org/whl/cpu']),
    ({'arch': 'aarch64'}, ['torch==2.7.1+cu128'], ['--extra-index-url', 'https://download.pytorch.org/whl/cu128']),
    # Offline: whatever build the wheelhouse holds.
    ({'source': 'wheelhouse', 'torchvision_version': '0.22.1'}, ['torch==2.7.1', 'torchvision==0.22.1'],
     ['--no-index', '--find-links', '/var/cache/trainstack/wheelhouse']),
])
def test_pip_install_pins_the_cuda_build(changes, requirements, args):
    assert pytorch.pytorch_pip_install(dict(INDEX, **changes)) == {'requirements': requirements, 'args': args}


def test_pip_install_refuses_other_sources():
    with pytest.raises(AnsibleFilterError, match='source must be index or wheelhouse'):
        pytorch.pytorch_pip_install(dict(INDEX, source='distribution'))


# Round 9 (issue 25): two different == pins of one project (PEP 503 names) cannot both be installed.
@pytest.mark.parametrize('requirements, expected', [
    (['numpy==1.26.4', 'scipy>=1.11,<2', 'einops'], []),
    (['numpy==1.26.4', 'numpy==1.26.4'], []),
    (['numpy==1.26.4', 'numpy==2.0.1'],
     ['pytorch_extra_packages pins numpy to different versions (pytorch_extra_packages[0] ==1.26.4, '
      'pytorch_extra_packages[1] ==2.0.1): pip cannot install both; keep one pin']),
    (['PyYAML==6.0.1', 'pyyaml == 6.0.2'],
     ['pytorch_extra_packages pins pyyaml to different versions (pytorch_extra_packages[0] ==6.0.1, '
      'pytorch_extra_packages[1] ==6.0.2): pip cannot install both; keep one pin']),
    (['flash_attn==2.6.3', 'flash-attn===2.7.0; python_version >= "3.10"'],
     ['pytorch_extra_packages pins flash-attn to different versions (pytorch_extra_packages[0] ==2.6.3, '
      'pytorch_extra_packages[1] ==2.7.0): pip cannot install both; keep one pin']),
    # Not a list, or not strings: the type checks report those.
    ('numpy==1 numpy==2', []), ([1, None], []),
])
def test_pip_pin_conflicts(requirements, expected):
    assert pytorch.pip_pin_conflicts(requirements) == expected
