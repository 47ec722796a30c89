# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_stack_conflicts and friends against the real compatibility matrix (data/gpu_compatibility.yml)."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter import gpu_stack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(ROOT, 'data', 'gpu_compatibility.yml'), encoding='utf-8') as handle:
    MATRIX = yaml.safe_load(handle)

H100 = {'name': 'NVIDIA H100 80GB HBM3', 'sm': 90}
B200 = {'name': 'NVIDIA B200', 'sm': 100}
V100 = {'name': 'Tesla V100-SXM2-32GB', 'sm': 70}
A100 = {'name': 'NVIDIA A100-SXM4-80GB', 'sm': 80}

# (id, stack, expected messages (exact))
CONFLICTS = [
    ('cuda-12.8-driver-535', {'nvidia_driver_branch': '535', 'cuda_version': '12.8'},
     ['cuda_version 12.8 needs a driver branch >= 570 (570.26 or newer), nvidia_driver_branch is 535']),
    ('cuda-13.0-driver-575', {'nvidia_driver_branch': 575, 'cuda_version': '13.0'},
     ['cuda_version 13.0 needs a driver branch >= 580 (580.65.06 or newer), nvidia_driver_branch is 575']),
    ('exact-version-below-ga', {'nvidia_driver_branch': '520', 'nvidia_driver_version': '520.56.06', 'cuda_version': '11.8'},
     ['cuda_version 11.8 needs a driver branch >= 520 (520.61.05 or newer), nvidia_driver_branch is 520.56.06']),
    ('version-off-branch', {'nvidia_driver_branch': '570', 'nvidia_driver_version': '580.95.05'},
     ['nvidia_driver_version 580.95.05 is not on nvidia_driver_branch 570']),
    ('cuda-unknown', {'nvidia_driver_branch': '580', 'cuda_version': '12.7'},
     ['cuda_version 12.7 is not in the compatibility matrix (known: 11.8, 12.0, 12.1, 12.2, 12.3, 12.4, 12.5, 12.6, '
      '12.8, 12.9, 13.0, 13.1, 13.2)']),
    ('cuda-malformed', {'cuda_version': '12'}, ["cuda_version must be CUDA major.minor such as 12.8, got '12'"]),
    ('nccl-other-major', {'nvidia_driver_branch': '580', 'cuda_version': '13.0', 'nccl_version': '2.26.2-1+cuda12.8'},
     ['nccl_version is built for CUDA 12.8, cuda_version is 13.0 (CUDA majors differ)']),
    ('nccl-newer-build', {'nvidia_driver_branch': '580', 'cuda_version': '12.4', 'nccl_version': '2.26.2-1+cuda12.8'},
     ['nccl_version is built for CUDA 12.8, newer than cuda_version 12.4: pick the +cuda12.4 build']),
    ('nccl-malformed', {'nccl_version': 'latest'}, ["nccl_version must look like 2.26.2-1+cuda12.8, got 'latest'"]),
    ('nccl-too-old-for-blackwell', {'nvidia_driver_branch': '570', 'cuda_version': '12.8', 'nccl_version': '2.21.5-1+cuda12.4',
                                    'nvidia_driver_kernel_module_type': 'open', 'gpus': [B200]},
     ['nccl_version 2.21.5 is older than 2.25.1, the first NCCL for Blackwell (B200/GB200) GPUs (NVIDIA B200)']),
    ('cudnn-cuda-major', {'cuda_version': '13.0', 'nvidia_driver_branch': '580', 'cuda_cudnn_version': '9.8.0.87-1'},
     ['cuda_cudnn_version 9.8 is built for CUDA 11/12.x, cuda_version is 13.0']),
    ('cudnn-unknown', {'cuda_cudnn_version': '7.6.5.32-1'}, ['cuda_cudnn_version 7.6 is not in the compatibility matrix']),
    ('torch-index-major', {'nvidia_driver_branch': '580', 'cuda_version': '12.8', 'pytorch_cuda_index': 'cu130'},
     ['pytorch_cuda_index cu130 bundles CUDA 13.0, cuda_version is 12.8 (CUDA majors differ)']),
    ('torch-index-driver', {'nvidia_driver_branch': '520', 'pytorch_cuda_index': 'cu121'},
     ['pytorch_cuda_index cu121 (CUDA 12.1) needs a driver branch >= 525, nvidia_driver_branch is 520']),
    ('torch-index-unknown', {'pytorch_cuda_index': 'cu122'},
     ["pytorch_cuda_index 'cu122' is not a known PyTorch wheel index (cu118, cu121, cu124, cu126, cu128, cu129, cu130, cu132)"]),
    ('blackwell-proprietary', {'nvidia_driver_branch': '570', 'cuda_version': '12.8', 'gpus': [B200],
                               'nvidia_driver_kernel_module_type': 'proprietary'},
     ['Blackwell (B200/GB200) GPUs (NVIDIA B200, sm 100) require the open kernel modules, '
      'nvidia_driver_kernel_module_type is proprietary']),
    ('blackwell-old-driver-and-cuda', {'nvidia_driver_branch': '550', 'cuda_version': '12.4', 'gpus': [B200, B200]},
     ['Blackwell (B200/GB200) GPUs (NVIDIA B200, sm 100) need a driver branch >= 570, nvidia_driver_branch is 550',
      'Blackwell (B200/GB200) GPUs (NVIDIA B200, sm 100) need cuda_version >= 12.8, got 12.4']),
    ('volta-open', {'nvidia_driver_branch': '570', 'gpus': [V100], 'nvidia_driver_kernel_module_type': 'open'},
     ['Volta GPUs (Tesla V100-SXM2-32GB, sm 70) are not supported by the open kernel modules, '
      'nvidia_driver_kernel_module_type is open']),
    ('volta-after-580', {'nvidia_driver_branch': '590', 'gpus': [V100]},
     ['Volta GPUs (Tesla V100-SXM2-32GB, sm 70) are not supported after driver branch 580, nvidia_driver_branch is 590']),
    ('volta-cuda-13', {'nvidia_driver_branch': '580', 'cuda_version': '13.0', 'gpus': [V100]},
     ['Volta GPUs (Tesla V100-SXM2-32GB, sm 70) cannot be targeted by CUDA 13.0 (last: 12.9), cuda_version is 13.0']),
    ('branch-malformed', {'nvidia_driver_branch': 'latest'}, ["nvidia_driver_branch must be a driver branch such as 570, got 'latest'"]),
    ('module-type-bad', {'nvidia_driver_kernel_module_type': 'closed'},
     ["nvidia_driver_kernel_module_type must be one of auto, open, proprietary, got 'closed'"]),
]

CONSISTENT = [
    ('example-h100', {'nvidia_driver_branch': '580', 'cuda_version': '12.8', 'nccl_version': '2.26.2-1+cuda12.8',
                      'cuda_cudnn_version': '9.8.0.87-1', 'pytorch_cuda_index': 'cu128', 'gpus': [H100] * 8,
                      'nvidia_driver_kernel_module_type': 'auto'}),
    ('debian-12', {'nvidia_driver_branch': '535', 'cuda_version': '11.8', 'gpus': [A100]}),
    ('debian-13', {'nvidia_driver_branch': '550', 'cuda_version': '12.4', 'nccl_version': '2.22.3-1'}),
    ('h200-host', {'nvidia_driver_version': '580.159.04', 'cuda_version': '13.0', 'pytorch_cuda_index': 'cu130',
                   'gpus': [{'name': 'NVIDIA H200', 'sm': 90}]}),
    ('older-nccl-build', {'nvidia_driver_branch': '570', 'cuda_version': '12.8', 'nccl_version': '2.23.4-1+cuda12.2'}),
    ('torch-wheel-minor-compat', {'nvidia_driver_branch': '535', 'pytorch_cuda_index': 'cu128'}),
    # The CPU wheels (documented for the pytorch role): no CUDA, no driver asked of them.
    ('torch-cpu-wheels', {'nvidia_driver_branch': '535', 'cuda_version': '12.2', 'pytorch_cuda_index': 'cpu'}),
    ('exact-version-at-ga', {'nvidia_driver_version': '570.26', 'cuda_version': '12.8'}),
    ('blackwell-open', {'nvidia_driver_branch': '575', 'cuda_version': '12.9', 'gpus': [B200, {'sm': 120, 'name': 'RTX PRO 6000'}]}),
    ('nothing-pinned', {}),
]


@pytest.mark.parametrize(('stack', 'expected'), [case[1:] for case in CONFLICTS], ids=[case[0] for case in CONFLICTS])
def test_conflicts(stack, expected):
    assert gpu_stack.gpu_stack_conflicts(stack, MATRIX) == expected


@pytest.mark.parametrize('stack', [case[1] for case in CONSISTENT], ids=[case[0] for case in CONSISTENT])
def test_consistent(stack):
    assert gpu_stack.gpu_stack_conflicts(stack, MATRIX) == []


def test_labels_rename_variables():
    stack = {'nvidia_driver_version': '535.261.03', 'cuda_version': '12.8'}
    labels = {'nvidia_driver_version': 'the installed driver', 'cuda_version': 'the installed CUDA'}
    assert gpu_stack.gpu_stack_conflicts(stack, MATRIX, labels) == [
        'the installed CUDA 12.8 needs a driver branch >= 570 (570.26 or newer), the installed driver is 535.261.03']


@pytest.mark.parametrize(('requested', 'gpus', 'branch', 'expected'), [
    ('auto', [H100], '535', 'open'),            # Hopper recommends open whatever the branch
    ('auto', [B200], '570', 'open'),            # Blackwell requires it
    ('auto', [A100], '550', 'proprietary'),     # before R560 the default was proprietary
    ('auto', [A100], '570', 'open'),            # from R560 open is NVIDIA's default
    ('auto', [V100, H100], '580', 'proprietary'),  # one pre-Turing GPU rules open out
    ('auto', [], '580', 'open'),                # no GPU known yet: the branch decides
    ('auto', [], '535.261.03', 'proprietary'),
    ('proprietary', [H100], '580', 'proprietary'),
    ('', [], '580', 'open'),
])
def test_kernel_module_type(requested, gpus, branch, expected):
    assert gpu_stack.kernel_module_type(requested, gpus, branch, MATRIX) == expected


def test_unknown_sm_of_a_known_major_takes_the_older_architecture():
    assert gpu_stack.architecture(MATRIX, 87)['sm'] == 86
    assert gpu_stack.architecture(MATRIX, 61) is None


def test_min_driver():
    assert gpu_stack.gpu_cuda_min_driver('12.8.1', MATRIX) == {'branch': 570, 'version': '570.26'}
    assert gpu_stack.gpu_cuda_min_driver('10.2', MATRIX) is None


@pytest.mark.parametrize('matrix', [None, {}, {'architectures': []}])
def test_bad_matrix(matrix):
    with pytest.raises(AnsibleFilterError, match='compatibility matrix'):
        gpu_stack.gpu_stack_conflicts({}, matrix)


def test_bad_stack():
    with pytest.raises(AnsibleFilterError, match='must be a dict'):
        gpu_stack.gpu_stack_conflicts(['535'], MATRIX)


def test_matrix_is_complete():
    """Every CUDA the matrix knows has its minimum driver's branch equal to the version's first number."""
    for cuda, need in MATRIX['cuda_min_driver'].items():
        assert str(need['version']).partition('.')[0] == str(need['branch']), cuda
    for arch in MATRIX['architectures']:
        assert arch['open_kernel_modules'] in ('unsupported', 'supported', 'recommended', 'required')
        assert arch['min_cuda'] in MATRIX['cuda_min_driver'] or float(arch['min_cuda']) < 11.8
    assert set(MATRIX['pytorch_indexes'].values()) <= set(MATRIX['cuda_min_driver'])


def test_filters_are_registered():
    assert set(gpu_stack.FilterModule().filters()) == {'gpu_stack_conflicts', 'gpu_kernel_module_type', 'gpu_cuda_min_driver'}
