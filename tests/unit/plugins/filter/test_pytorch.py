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
        {'index': 1, 'numa_node': 1, 'local_cpulist': '48-95,144-191\n', 'name': 'H100'},
        {'index': 0, 'numa_node': 0, 'local_cpulist': '0-47,96-143', 'name': 'H100'},
    ]}
    config = pytorch.pytorch_launch_config(topology, {'rdzv_timeout': 30})
    assert config == {'gpus': [{'index': 0, 'numa_node': 0, 'cpulist': '0-47,96-143'},
                               {'index': 1, 'numa_node': 1, 'cpulist': '48-95,144-191'}],
                      'rdzv_timeout': 30}
    assert pytorch.pytorch_launch_config({}, None) == {'gpus': []}


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
