# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rdma_peermem_plan: when nvidia-peermem may be loaded, and the reason shown when it is not; rdma_host_plan: which
nodes get the RDMA user space (recorded topologies)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from topology_support import expected_facts

from ansible_collections.trainstack.cluster.plugins.filter import rdma

# An HGX node with NVIDIA's RDMA stack running: every condition holds.
_HGX = {'in_container': False, 'virtualization': 'kvm', 'gpus': 8, 'hcas': 8, 'module': True, 'peer_api': True}


@pytest.mark.parametrize('change, load, reason', [
    ({}, True, '8 GPUs, 8 RDMA devices, ib_core with the peer-memory API'),
    # The lab and molecule: containers never touch kernel modules, whatever else holds.
    ({'in_container': True, 'virtualization': 'docker'}, False, 'running in a container (docker): no kernel module work'),
    ({'gpus': 0}, False, '0 GPUs and 8 RDMA devices: it needs both'),
    # The H200 device machine: one GPU, no HCA (counts may arrive as strings from Jinja).
    ({'gpus': '1', 'hcas': '0'}, False, '1 GPUs and 0 RDMA devices: it needs both'),
    ({'module': False}, False, 'the installed NVIDIA driver ships no nvidia-peermem module (modinfo found none)'),
    # The kernel's own ib_core (rdma_source distribution): modprobe would fail on the missing symbol.
    ({'peer_api': False}, False,
     "the running ib_core has no peer-memory API (ib_register_peer_memory_client): the distribution's RDMA stack "
     "lacks it, DOCA-OFED has it (rdma_source doca_repo; reboot into its modules, then run again)"),
])
def test_plan(change, load, reason):
    plan = rdma.rdma_peermem_plan(dict(_HGX, **change))
    assert plan == {'load': load, 'reason': reason}


def test_the_container_reason_comes_first():
    # A container of a GPU host sees the host's modules and symbols; it still must not load anything.
    assert rdma.rdma_peermem_plan(dict(_HGX, in_container=True))['load'] is False


@pytest.mark.parametrize('state, message', [
    ('gpus=8', 'needs a dict'),
    (dict(_HGX, gpus='eight'), 'gpus and hcas must be counts'),
])
def test_bad_input(state, message):
    with pytest.raises(AnsibleFilterError, match=message):
        rdma.rdma_peermem_plan(state)


@pytest.mark.parametrize('case, mpi_node, wanted, reason', [
    # 8 x H100 with eight ACTIVE mlx5 ports: the RDMA user space, MPI node or not (an NCCL-only node too).
    ('hgx_h100', False, True, 'the probe found mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7'),
    # One port DOWN, one ACTIVE RoCE: an HCA is an HCA; the port's state is the acceptance suite's business.
    ('ib_down_roce', False, True, 'the probe found mlx5_0, mlx5_1'),
    # The H200 KVM guest has no HCA: nothing unless it is an MPI node.
    ('h200_vm', False, False, 'the probe found no HCA and the host is not an MPI node (group mpi, trainstack_mpi true)'),
    ('cpu_only', True, True, 'an MPI node: UCX builds against verbs (no HCA found)'),
])
def test_which_nodes_get_the_rdma_user_space(case, mpi_node, wanted, reason):
    assert rdma.rdma_host_plan(expected_facts(case), mpi_node) == {'wanted': wanted, 'reason': reason}


def test_a_host_without_topology_facts_gets_it_only_as_an_mpi_node():
    assert rdma.rdma_host_plan(None, True)['wanted'] is True
    assert rdma.rdma_host_plan({}, False)['wanted'] is False
    with pytest.raises(AnsibleFilterError, match='trainstack_topology dict'):
        rdma.rdma_host_plan(['mlx5_0'], False)
