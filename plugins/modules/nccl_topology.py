#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_topology
short_description: Write an NCCL topology file (NCCL_TOPO_FILE) from topology facts
description:
  - Renders the C(trainstack_topology) fact of M(trainstack.cluster.topology_facts) as the XML that NCCL reads
    through E(NCCL_TOPO_FILE), and writes it atomically when its content differs.
  - The file obeys NCCL's hand-written parser, which is stricter than XML. No declaration, no tabs, one element
    per line, double-quoted values of at most 254 characters, at most 32 children per element.
  - PCI switches are nested the way NCCL walks sysfs (a switch's upstream and downstream ports are one C(pci) node).
    Devices whose C(numa_node) is C(-1) (virtual machines) are placed under the lowest NUMA node with that node's
    cpumap, and link width comes from C(max_link_width), where NCCL's own detection writes C(numaid=-1) and
    C(link_width=0).
  - GPUs get C(dev) (NVML index) and C(sm). On NVSwitch systems each GPU gets one C(nvlink) to NCCL's virtual
    NVSwitch address C(fffffff:ff:ff.0) with C(tclass=0x068000) and its active link count; otherwise one C(nvlink)
    per NVLink peer GPU. HCAs with an ACTIVE port get C(nic)/C(net) with C(name) and C(speed) (Mb/s); other
    C(net) attributes are left for NCCL to fill. Ethernet interfaces are left to NCCL's own detection.
  - Facts without GPUs write nothing and report RV(msg).
  - Facts whose C(nvidia-smi topo -m) matrix has GPU rows other than the GPUs of C(--query-gpu) make the module fail
    with both lists, rather than write a file from either.
extends_documentation_fragment:
  - trainstack.cluster.attributes
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  topology:
    description:
      - The C(trainstack_topology) fact, for example V({{ ansible_facts['trainstack_topology'] }}).
    type: dict
    required: true
  dest:
    description:
      - Path of the XML file to write.
    type: path
    required: true
  backup:
    description:
      - Keep a timestamped copy of the previous file when the content changes.
    type: bool
    default: false
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Gather topology facts
  trainstack.cluster.topology_facts:

- name: Write the NCCL topology file
  trainstack.cluster.nccl_topology:
    topology: "{{ ansible_facts['trainstack_topology'] }}"
    dest: /etc/nccl/topology.xml
    owner: root
    group: root
    mode: "0644"
    backup: true
"""

RETURN = r"""
dest:
  description: Path of the topology file.
  returned: always
  type: str
  sample: /etc/nccl/topology.xml
xml:
  description: The XML text (empty when the facts list no GPU).
  returned: always
  type: str
  sample: |-
    <system version="1">
      <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">
    ...
gpus:
  description: Number of GPUs described by the file.
  returned: always
  type: int
  sample: 8
msg:
  description: What the module did.
  returned: always
  type: str
  sample: topology file is up to date
backup_file:
  description: Name of the backup file when O(backup=true) and the content changed.
  returned: changed and backup was made
  type: str
  sample: /etc/nccl/topology.xml.12345.2026-11-29@19:20:01~
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_xml import TopologyError, build_topology_xml
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import matrix_contradiction


def read_text(path):
    try:
        with open(path, 'rb') as handle:
            return to_text(handle.read(), errors='surrogate_or_strict')
    except FileNotFoundError:
        return None


def write_atomically(module, dest, text):
    directory = os.path.dirname(dest) or '.'
    descriptor, temporary = tempfile.mkstemp(prefix='.nccl-topology-', dir=directory)
    with os.fdopen(descriptor, 'wb') as handle:
        handle.write(to_bytes(text))
    module.atomic_move(temporary, dest, unsafe_writes=module.params['unsafe_writes'])


def main():
    module = AnsibleModule(
        argument_spec={
            'topology': {'type': 'dict', 'required': True},
            'dest': {'type': 'path', 'required': True},
            'backup': {'type': 'bool', 'default': False},
        },
        add_file_common_args=True,
        supports_check_mode=True,
    )
    dest = module.params['dest']
    contradiction = matrix_contradiction(module.params['topology'])
    if contradiction:
        # NVLink peers and NIC distances come from that matrix: a file built from it would misroute NCCL.
        module.fail_json(msg='refusing to write an NCCL topology file from a matrix that contradicts the GPU list: %s' % contradiction,
                         dest=dest)
    try:
        xml = build_topology_xml(module.params['topology'])
    except (TopologyError, KeyError, TypeError) as error:
        module.fail_json(msg='cannot describe this host to NCCL: %s' % error, dest=dest)
    if xml is None:
        module.exit_json(changed=False, dest=dest, xml='', gpus=0, msg='the topology lists no GPU: no NCCL topology file written')

    result = {'dest': dest, 'xml': xml, 'gpus': len(module.params['topology']['gpus'])}
    if os.path.isdir(dest):
        module.fail_json(msg='dest %s is a directory' % dest, **result)
    if not os.path.isdir(os.path.dirname(dest) or '.'):
        # In check mode the task that creates the directory only said it would: predict the new file.
        if not module.check_mode:
            module.fail_json(msg='directory of dest %s does not exist' % dest, **result)
    before = read_text(dest)
    changed = before != xml
    if changed and not module.check_mode:
        if before is not None and module.params['backup']:
            result['backup_file'] = module.backup_local(dest)
        write_atomically(module, dest, xml)
    if os.path.exists(dest):
        file_args = module.load_file_common_arguments(module.params, path=dest)
        changed = module.set_fs_attributes_if_different(file_args, changed)
    result['changed'] = changed
    result['msg'] = 'topology file changed' if changed else 'topology file is up to date'
    if module._diff:
        result['diff'] = {'before': before or '', 'after': xml, 'before_header': dest, 'after_header': dest}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
