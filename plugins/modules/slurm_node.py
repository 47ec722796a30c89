#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node
short_description: Drain, resume or query Slurm nodes with scontrol
version_added: 0.1.0
description:
  - Drains Slurm nodes with a reason, resumes drained nodes, or reports the state of nodes,
    through C(scontrol show node) and C(scontrol update) on a host where C(scontrol) can reach slurmctld.
  - Idempotent. A node that is already drained (C(DRAIN) flag, whether still running jobs or not) with the
    same reason is left alone; a different reason is updated. Resuming touches only nodes that carry the
    C(DRAIN) flag.
  - All nodes that need a change are updated with one C(scontrol update) call.
author:
  - trainstack.cluster developers (@trainstack)
extends_documentation_fragment:
  - trainstack.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Nodes to act on. A list of node names, a Slurm hostlist expression such as V(gpu[01-16,20]),
        or a list of expressions. Expressions are expanded exactly as C(scontrol show hostnames) does.
      - Every node must be known to Slurm, otherwise the module fails without changing anything.
    type: raw
    required: true
    aliases: [nodes]
  state:
    description:
      - V(drained) sets the C(DRAIN) flag with O(reason) (running jobs finish; no new jobs start).
      - V(resumed) clears the C(DRAIN) flag (C(State=RESUME)). Nodes that are not drained are not touched;
        a node that is C(DOWN) without C(DRAIN) is left to Slurm.
      - V(query) changes nothing and returns the parsed state of the nodes.
    type: str
    choices: [drained, resumed, query]
    default: query
  reason:
    description:
      - Reason recorded with the drain. Required when O(state=drained); compared with the current reason
        to decide whether a drained node needs an update.
    type: str
  scontrol_path:
    description:
      - Path of the C(scontrol) program. By default it is searched in E(PATH) and the usual system directories.
    type: path
notes:
  - Runs C(scontrol) on the target host, which needs the Slurm client and a working C(slurm.conf)
    (usually the Slurm controller or a login node). Draining and resuming need Slurm operator rights.
requirements:
  - Slurm C(scontrol) (tested with Slurm 22.05 and the 24.11 output format).
seealso:
  - name: scontrol manual
    description: Slurm's scontrol command.
    link: https://slurm.schedmd.com/scontrol.html
"""

EXAMPLES = r"""
- name: Drain two GPU nodes for maintenance
  trainstack.cluster.slurm_node:
    name: gpu[03-04]
    state: drained
    reason: "NVLink errors, baseboard replacement (INC-1234)"

- name: Drain a list of nodes
  trainstack.cluster.slurm_node:
    name:
      - gpu01
      - gpu07
    state: drained
    reason: kernel upgrade

- name: Put the nodes back into service
  trainstack.cluster.slurm_node:
    name: gpu[01,03-04,07]
    state: resumed

- name: Read the state of every GPU node
  trainstack.cluster.slurm_node:
    name: gpu[01-16]
  register: gpu_nodes

- name: Show the drained ones with their reason
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value.reason }}"
  loop: "{{ gpu_nodes.nodes | dict2items | selectattr('value.drain') }}"
"""

RETURN = r"""
nodes:
  description:
    - State of each requested node as read before any change, keyed by node name.
  returned: always
  type: dict
  sample:
    gpu02:
      name: gpu02
      state: IDLE+DRAIN
      state_base: IDLE
      state_flags: [DRAIN]
      drain: true
      drain_state: drained
      down: false
      reason: nvlink errors
      reason_user: root
      reason_time: "2026-11-29T19:20:26"
      gres: gpu:a100:8
      gres_used: ""
      features: [a100, ib]
      active_features: [a100, ib]
      partitions: [gpu]
      cpus: 128
      cpus_alloc: 0
      cpus_effective: 128
      cpu_load: 0.97
      sockets: 2
      cores_per_socket: 32
      threads_per_core: 2
      real_memory_mb: 1000000
      alloc_memory_mb: 0
      free_memory_mb: 21852
      arch: x86_64
      os: Linux 5.15.0-91-generic
      version: "22.05.8"
      node_addr: gpu02
      node_hostname: gpu02
      boot_time: "2026-11-29T19:11:42"
      slurmd_start_time: "2026-11-29T19:20:16"
      cfg_tres: cpu=128,mem=1000000M,billing=128
      alloc_tres: ""
      fields: {NodeName: gpu02, State: IDLE+DRAIN}
  contains:
    name:
      description: Node name.
      type: str
    state:
      description: Node state exactly as scontrol prints it, for example V(IDLE+DRAIN) or V(MIXED+DRAIN).
      type: str
    state_base:
      description: Base state (V(IDLE), V(MIXED), V(ALLOCATED), V(DOWN), ...).
      type: str
    state_flags:
      description: State flags after the base state (V(DRAIN), V(NOT_RESPONDING), V(POWERED_DOWN), ...).
      type: list
      elements: str
    drain:
      description: Whether the node carries the C(DRAIN) flag.
      type: bool
    drain_state:
      description: V(drained) (no jobs left), V(draining) (jobs still running) or V(null) when not drained.
      type: str
    down:
      description: Whether the base state is C(DOWN).
      type: bool
    reason:
      description: Reason text, empty when none is set.
      type: str
    reason_user:
      description: User who set the reason, when Slurm reports it.
      type: str
    reason_time:
      description: Time the reason was set, when Slurm reports it.
      type: str
    gres:
      description: Configured generic resources, for example V(gpu:a100:8).
      type: str
    gres_used:
      description: Generic resources in use, when Slurm reports them.
      type: str
    features:
      description: Available features.
      type: list
      elements: str
    active_features:
      description: Active features.
      type: list
      elements: str
    partitions:
      description: Partitions the node belongs to.
      type: list
      elements: str
    cpus:
      description: Total CPUs (C(CPUTot)).
      type: int
    cpus_alloc:
      description: Allocated CPUs.
      type: int
    cpus_effective:
      description: CPUs usable by jobs (C(CPUEfctv)), when reported.
      type: int
    cpu_load:
      description: CPU load, null when unknown.
      type: float
    sockets:
      description: Sockets.
      type: int
    cores_per_socket:
      description: Cores per socket.
      type: int
    threads_per_core:
      description: Threads per core.
      type: int
    real_memory_mb:
      description: Configured memory in MiB (C(RealMemory)).
      type: int
    alloc_memory_mb:
      description: Allocated memory in MiB.
      type: int
    free_memory_mb:
      description: Free memory in MiB, null when unknown.
      type: int
    arch:
      description: Architecture reported by slurmd.
      type: str
    os:
      description: Operating system reported by slurmd.
      type: str
    version:
      description: slurmd version.
      type: str
    node_addr:
      description: Address slurmctld uses.
      type: str
    node_hostname:
      description: Host name of the node.
      type: str
    boot_time:
      description: Boot time.
      type: str
    slurmd_start_time:
      description: Start time of slurmd.
      type: str
    cfg_tres:
      description: Configured trackable resources.
      type: str
    alloc_tres:
      description: Allocated trackable resources.
      type: str
    fields:
      description: Every C(Key=Value) field of the scontrol line, unparsed.
      type: dict
changed_nodes:
  description: Nodes that were (or in check mode would be) updated, in request order.
  returned: always
  type: list
  elements: str
  sample: [gpu03, gpu04]
command:
  description: The scontrol update command that was run; empty when nothing changed or in check mode.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/scontrol, update, "NodeName=gpu[03-04]", State=DRAIN, "Reason=kernel upgrade"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, compress, parse
from ansible_collections.trainstack.cluster.plugins.module_utils._scontrol import DRAIN_FLAGS, Scontrol, ScontrolError


def requested_names(value):
    """Unique node names, in order, from a name, an expression or a list of them."""
    names = parse(value).names()
    return list(dict.fromkeys(names))


def nodes_to_change(state, names, nodes, reason=None):
    """Names whose Slurm state differs from the wanted one."""
    if state == 'drained':
        wanted = (reason or '').strip()
        return [name for name in names if not (nodes[name]['drain'] and nodes[name]['reason'].strip() == wanted)]
    if state == 'resumed':
        return [name for name in names if nodes[name]['drain']]
    return []


def predicted_state(state, node, reason=None):
    """{'state', 'reason'} of a node after the change (for --diff)."""
    words = [word for word in node['state'].split('+') if word]
    if state == 'drained':
        if not any(word in DRAIN_FLAGS for word in words):
            words.append('DRAIN')
        return {'state': '+'.join(words), 'reason': reason}
    words = [word for word in words if word not in DRAIN_FLAGS]
    return {'state': '+'.join(words), 'reason': ''}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='raw', required=True, aliases=['nodes']),
            state=dict(type='str', default='query', choices=['drained', 'resumed', 'query']),
            reason=dict(type='str'),
            scontrol_path=dict(type='path'),
        ),
        required_if=[('state', 'drained', ['reason'])],
        supports_check_mode=True,
    )
    state = module.params['state']
    reason = module.params['reason']
    if state == 'drained' and not reason.strip():
        module.fail_json(msg='reason must not be empty when state=drained')

    try:
        names = requested_names(module.params['name'])
    except HostlistError as exc:
        module.fail_json(msg='invalid node name or hostlist expression: %s' % exc)

    scontrol = Scontrol(module, module.params['scontrol_path'])
    try:
        found, missing = scontrol.show_nodes(compress(names))
    except ScontrolError as exc:
        module.fail_json(msg=str(exc), cmd=exc.cmd, rc=exc.rc, stdout=exc.stdout, stderr=exc.stderr)
    missing = [name for name in names if name not in found or name in missing]
    if missing:
        module.fail_json(msg='Slurm does not know node(s): %s' % compress(missing), missing=missing)
    nodes = {name: found[name] for name in names}

    change = nodes_to_change(state, names, nodes, reason)
    result = dict(changed=bool(change), nodes=nodes, changed_nodes=change, command=[])
    if module._diff:
        result['diff'] = dict(
            before={name: {'state': nodes[name]['state'], 'reason': nodes[name]['reason']} for name in change},
            after={name: predicted_state(state, nodes[name], reason) for name in change},
        )
    if change and not module.check_mode:
        try:
            if state == 'drained':
                result['command'] = scontrol.update_nodes(compress(change), 'DRAIN', reason)
            else:
                result['command'] = scontrol.update_nodes(compress(change), 'RESUME')
        except ScontrolError as exc:
            module.fail_json(msg=str(exc), cmd=exc.cmd, rc=exc.rc, stdout=exc.stdout, stderr=exc.stderr, changed_nodes=change)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
