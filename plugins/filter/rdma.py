# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decisions of the rdma role about one node (controller side, pure).

- rdma_peermem_plan: may nvidia-peermem (GPUDirect RDMA) be loaded on this node?
- rdma_host_plan: does this node get the RDMA user space (it has an HCA, or it is an MPI node)?
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The symbol nvidia-peermem binds to. Only NVIDIA's RDMA stack (DOCA-OFED, MLNX_OFED) builds ib_core with the
# peer-memory API; the kernel's own ib_core lacks it, and loading the module there fails with "Unknown symbol
# ib_register_peer_memory_client" (Mellanox/nv_peer_memory#79, NVIDIA/gpu-operator#2868).
PEER_MEMORY_SYMBOL = 'ib_register_peer_memory_client'


def rdma_peermem_plan(state):
    """{'load': bool, 'reason': str} from what the node showed.

    state: in_container (bool), virtualization (str, for the message), gpus and hcas (counts), module (modinfo
    found nvidia-peermem), peer_api (the running kernel exports PEER_MEMORY_SYMBOL).
    """
    if not isinstance(state, dict):
        raise AnsibleFilterError('rdma_peermem_plan needs a dict, got %s' % type(state).__name__)
    try:
        gpus, hcas = int(state.get('gpus') or 0), int(state.get('hcas') or 0)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('rdma_peermem_plan: gpus and hcas must be counts (%s)' % exc)
    if state.get('in_container'):
        return {'load': False,
                'reason': 'running in a container (%s): no kernel module work' % (state.get('virtualization') or 'unknown')}
    if gpus == 0 or hcas == 0:
        return {'load': False, 'reason': '%d GPUs and %d RDMA devices: it needs both' % (gpus, hcas)}
    if not state.get('module'):
        return {'load': False, 'reason': 'the installed NVIDIA driver ships no nvidia-peermem module (modinfo found none)'}
    if not state.get('peer_api'):
        return {'load': False,
                'reason': ('the running ib_core has no peer-memory API (%s): the distribution\'s RDMA stack lacks it, '
                           'DOCA-OFED has it (rdma_source doca_repo; reboot into its modules, then run again)'
                           % PEER_MEMORY_SYMBOL)}
    return {'load': True, 'reason': '%d GPUs, %d RDMA devices, ib_core with the peer-memory API' % (gpus, hcas)}


def rdma_host_plan(topology, mpi_node=False):
    """{'wanted': bool, 'reason': str}: the RDMA user space goes to every node the probe found an HCA on (NCCL needs
    verbs there, or it falls back to sockets), and to MPI nodes without one (UCX builds against verbs).

    topology: the node's trainstack_topology; mpi_node: the host is in the mpi group and trainstack_mpi is true.
    """
    if topology is not None and not isinstance(topology, dict):
        raise AnsibleFilterError('rdma_host_plan needs the trainstack_topology dict, got %s' % type(topology).__name__)
    hcas = sorted(str(hca.get('name')) for hca in (topology or {}).get('hcas') or [] if isinstance(hca, dict))
    if hcas:
        return {'wanted': True, 'reason': 'the probe found %s' % ', '.join(hcas)}
    if mpi_node:
        return {'wanted': True, 'reason': 'an MPI node: UCX builds against verbs (no HCA found)'}
    return {'wanted': False, 'reason': 'the probe found no HCA and the host is not an MPI node (group mpi, trainstack_mpi true)'}


class FilterModule:
    """RDMA filters."""

    def filters(self):
        return {'rdma_peermem_plan': rdma_peermem_plan, 'rdma_host_plan': rdma_host_plan}
