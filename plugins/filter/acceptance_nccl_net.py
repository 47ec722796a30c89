# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Did NCCL use the fabric? The acceptance verdict on the network NCCL chose per node (controller side, pure)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.nccl import active_ib_ports
from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_log import parse

_HINT = ('check the RDMA user space (rdma-core and the HCA provider: playbooks/rdma.yml), NCCL_IB_DISABLE, '
         'NCCL_IB_HCA and NCCL_NET')


def acceptance_nccl_network(text, topologies):
    """Per job node: pass where NCCL used an RDMA network on a node with ACTIVE RDMA ports, fail where it fell back to
    sockets there, info where NCCL did not say (no NCCL_DEBUG=INFO lines) or the node has no RDMA port.

    text: the job's output with NCCL_DEBUG=INFO lines; topologies: {host: trainstack_topology facts} of the job's
    nodes, keyed by their Slurm node names (which NCCL prints as host names).
    """
    if not isinstance(topologies, dict):
        raise AnsibleFilterError('acceptance_nccl_network expects a dict {host: topology facts}')
    rdma_ports = {host: ['%s:%s' % (hca.get('name'), port.get('port')) for hca, port in active_ib_ports(topology)]
                  for host, topology in topologies.items()}
    seen = parse(text)
    verdicts = {}
    for host in topologies:
        facts = seen.get(host) or {}
        network = facts.get('network')
        ports = list(rdma_ports.get(host) or [])
        devices = ['%s:%s/%s' % (device['name'], device['port'], device['link']) for device in facts.get('ib_devices', [])]
        if not ports:
            status, reason = 'info', 'no ACTIVE RDMA port on %s: NCCL uses %s' % (host, network or 'a network it did not name')
        elif network is None:
            status, reason = 'info', ('NCCL did not say which network it used on %s (no NCCL_DEBUG=INFO line naming it)'
                                      % host)
        elif network == 'Socket':
            status, reason = 'fail', ('NCCL used sockets on %s although it has ACTIVE RDMA ports (%s); NCCL said "%s": %s'
                                      % (host, ', '.join(ports), facts['evidence'], _HINT))
        else:
            status, reason = 'pass', 'NCCL used %s on %s%s' % (network, host, (' (%s)' % ', '.join(devices)) if devices else '')
        verdicts[host] = {'status': status, 'reason': reason, 'network': network, 'devices': devices,
                          'warnings': facts.get('warnings', [])}
    return verdicts


def acceptance_with_nccl_network(result, verdict):
    """A hook's result with the NCCL network verdict of its node folded in: a fall-back to sockets fails the check
    (reason appended), a pass or an info adds its reason. No verdict, or a result whose run did not use NCCL
    (tool nccl-tests or backend nccl), is left as it is."""
    if not verdict:
        return result
    # gloo (the lab's CPU runs) and a job that never ran say nothing of NCCL's network.
    if not ((result or {}).get('tool') == 'nccl-tests' or (result or {}).get('backend') == 'nccl'):
        return result
    result = dict(result or {})
    result['nccl_network'] = verdict
    reason = result.get('reason') or ''
    result['reason'] = (reason + '; ' if reason else '') + verdict['reason']
    if verdict['status'] == 'fail' and result.get('status') in ('pass', 'repeat', 'info', None):
        result['status'] = 'fail'
    return result


class FilterModule:
    """The NCCL network verdict."""

    def filters(self):
        return {'acceptance_nccl_network': acceptance_nccl_network,
                'acceptance_with_nccl_network': acceptance_with_nccl_network}
