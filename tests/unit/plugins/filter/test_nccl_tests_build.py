# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl_tests_gencode and nccl_tests_make_args."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter import nccl_tests


@pytest.mark.parametrize('capabilities, expected', [
    # nvidia-smi / topology_facts spelling, one H200.
    (['9.0'], '-gencode=arch=compute_90,code=sm_90'),
    # Eight H100 and eight A100 in one group: each architecture once, sorted.
    (['9.0'] * 8 + ['8.0'] * 8, '-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90'),
    # Inventory spellings; Blackwell sorts after Hopper (100 > 90, not as text).
    (['sm_100', '90', 'compute_80'], '-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 '
                                     '-gencode=arch=compute_100,code=sm_100'),
    (['12.0', 'sm_90a'], '-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_120,code=sm_120'),
])
def test_gencode_has_each_architecture_once(capabilities, expected):
    assert nccl_tests.nccl_tests_gencode(capabilities) == expected


@pytest.mark.parametrize('capabilities, message', [
    ([], 'nccl_tests_gencode: no GPU compute capability to build for'),
    ([''], 'nccl_tests_gencode: no GPU compute capability to build for'),
    ('9.0', 'must be a list'),
    (['9'], '^nccl_tests_gencode: .*write 8.0 or sm_80'),
    (['hopper'], "^nccl_tests_gencode: not a compute capability or sm_XY architecture: 'hopper'"),
    (['sm_90; rm -rf /'], 'not a compute capability'),
])
def test_gencode_refusals(capabilities, message):
    with pytest.raises(AnsibleFilterError, match=message):
        nccl_tests.nccl_tests_gencode(capabilities)


BASE = {'cuda_home': '/usr/local/cuda', 'nccl_home': '/usr/lib/python3/dist-packages/nvidia/nccl', 'mpi_home': '',
        'gencode': '-gencode=arch=compute_90,code=sm_90', 'extra': []}


def test_make_args_mpi0():
    assert nccl_tests.nccl_tests_make_args(BASE) == [
        'CUDA_HOME=/usr/local/cuda', 'NCCL_HOME=/usr/lib/python3/dist-packages/nvidia/nccl',
        'NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90', 'MPI=0']


def test_make_args_mpi1_and_extra():
    args = nccl_tests.nccl_tests_make_args(dict(BASE, mpi_home='/opt/trainstack/openmpi/4.1.4-0123456789ab',
                                                extra=['CXX=g++-11']))
    assert args[3:] == ['MPI=1', 'MPI_HOME=/opt/trainstack/openmpi/4.1.4-0123456789ab', 'CXX=g++-11']


@pytest.mark.parametrize('change, message', [
    ({'extra': ['MPI=1']}, 'nccl_tests_make_extra may not set MPI: the role derives it'),
    ({'extra': ['NVCC_GENCODE=x']}, 'may not set NVCC_GENCODE'),
    ({'extra': ['-j8']}, 'must be NAME=value'),
    ({'extra': ['lower=1']}, 'must be NAME=value'),
    ({'extra': 'CXX=g++'}, 'must be a list'),
    ({'cuda_home': ''}, 'needs cuda_home as an absolute path'),
    ({'nccl_home': 'nvidia/nccl'}, 'needs nccl_home as an absolute path'),
    ({'mpi_home': 'openmpi'}, 'mpi_home must be an absolute path or empty'),
    ({'gencode': ''}, 'needs gencode'),
])
def test_make_args_refusals(change, message):
    with pytest.raises(AnsibleFilterError, match=message):
        nccl_tests.nccl_tests_make_args(dict(BASE, **change))
