#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_facts
short_description: Gather CPU, NUMA, GPU, PCI, NVLink and RDMA topology facts
description:
  - Reads C(/proc), C(/sys) and C(nvidia-smi) on the target and returns the C(trainstack_topology) fact.
  - Every source is optional. A host without GPUs, without C(nvidia-smi) or without InfiniBand gets empty
    lists (or V(null) values) for what is missing; the module never fails because a source is absent.
  - With O(root) pointing at a recorded tree the module reads that tree instead of the live host and replays
    recorded command outputs from C(<root>/.commands/<key>.txt) instead of running commands. Keys are
    C(nvidia-smi_query-gpu), C(nvidia-smi_topo-m), C(nvidia-smi_nvlink-s), C(nvidia-smi_q) and C(uname-m);
    a missing file stands for a missing command.
extends_documentation_fragment:
  - trainstack.cluster.attributes
  - trainstack.cluster.attributes.facts
  - trainstack.cluster.probe
options:
  record:
    description:
      - Path on the target of a tarball (C(.tar.gz)) to write with everything the probe read there, the sysfs and
        procfs files, directory listings and symlinks, and the command outputs (as C(.commands/<key>.txt)).
      - O(root) set to such a tarball reads it back with identical facts. C(trainstack.cluster.record) (playbooks/record.yml)
        fetches it to the controller; attach it to a bug report about a misdetected machine.
      - Not written in check mode. Writing it makes the task report a change.
    type: path
attributes:
  check_mode:
    support: full
    details: In check mode O(record) is not written.
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Gather topology facts
  trainstack.cluster.topology_facts:

- name: Show the GPU to GPU and GPU to NIC matrix
  ansible.builtin.debug:
    var: ansible_facts['trainstack_topology']['distances']['matrix']

- name: Read a recorded host
  trainstack.cluster.topology_facts:
    root: /srv/captures/node042

- name: Record what the probe reads, for a bug report
  trainstack.cluster.topology_facts:
    record: /tmp/trainstack-record.tar.gz

- name: Read the recording back (on the controller, for example)
  trainstack.cluster.topology_facts:
    root: ./probe-results/node042/trainstack-record.tar.gz
  delegate_to: localhost
"""

RETURN = r"""
record:
  description: Path of the tarball written on the target, with O(record).
  returned: when O(record) is set and not in check mode
  type: str
  sample: /tmp/trainstack-record.tar.gz
record_members:
  description: Number of files, directories and symlinks in the tarball.
  returned: when O(record) is set and not in check mode
  type: int
  sample: 412
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: complex
  contains:
    trainstack_topology:
      description: Topology of the host. Values that a source could not provide are V(null).
      returned: always
      type: complex
      contains:
        cpu:
          description:
            - CPU identity from C(/proc/cpuinfo) and C(uname -m). Keys C(arch), C(vendor), C(model_name),
              C(family_id), C(model_id) (decimal CPUID), C(sockets), C(cores_per_socket), C(threads_per_core),
              C(logical_cpus), C(online) (cpu list). V(null) when C(/proc/cpuinfo) is unreadable.
          type: dict
          returned: always
          sample: {arch: x86_64, vendor: GenuineIntel, family_id: 6, model_id: 207, sockets: 1, cores_per_socket: 32}
        numa_nodes:
          description: NUMA nodes with C(id), C(cpulist) and C(cpumap) (32-bit hex groups, highest first, as NCCL wants).
          type: list
          elements: dict
          returned: always
          sample: [{id: 0, cpulist: 0-31, cpumap: ffffffff}]
        memory:
          description: C(total_bytes) and C(total_mib) from C(MemTotal); V(null) when unreadable.
          type: dict
          returned: always
        gpus:
          description:
            - One entry per GPU that C(nvidia-smi) lists, sorted by C(index) (the NVML index NCCL calls C(dev)).
            - Keys C(index), C(name), C(uuid), C(busid) (lowercase C(dddd:bb:dd.f)), C(compute_capability) (C(9.0)),
              C(sm) (C(90)), C(memory_mib), C(driver_version), C(mig_mode), C(numa_node) (sysfs value, C(-1) kept),
              C(local_cpulist), C(minor_number), C(pci_class), C(vendor_id), C(device_id), C(subsystem_vendor_id),
              C(subsystem_device_id), C(host_bridge), C(pcie) (C(current_link_speed), C(current_link_width),
              C(max_link_speed), C(max_link_width) from sysfs), C(pcie_gen_max), C(pcie_width_max) (from
              C(nvidia-smi)), C(ancestry), C(affinity) (C(cpu_affinity), C(numa_affinity), C(gpu_numa_id) from
              C(topo -m)) and C(nvlink) (C(active_links), C(link_speed_gbs), C(peers) list of C(index), C(busid), C(count)).
            - C(minor_number) is N of the GPU's C(/dev/nvidiaN) from C(/proc/driver/nvidia/gpus/<busid>/information)
              (C(null) without the driver). It is the driver's numbering, which need not follow C(index).
            - C(ancestry) lists the PCI bridges from the root port down to the device's parent, each with C(busid),
              C(class), C(vendor_id), C(device_id), C(numa_node) and C(pcie).
          type: list
          elements: dict
          returned: always
        nvswitch:
          description: Whether the GPUs' NVLinks go through NVSwitches (from C(nvidia-smi); C(nvswitches) has the PCI view).
          type: bool
          returned: always
        pci_gpus:
          description:
            - NVIDIA GPUs from PCI sysfs alone (vendor C(0x10de), class C(0x0300xx) or C(0x0302xx)), present before any
              driver is installed. Keys C(busid), C(vendor_id), C(device_id), C(class), C(numa_node) and C(nvlink5)
              (an NVLink-5 HGX part such as B200 C(0x2901), whose NVSwitches are not host PCI functions).
          type: list
          elements: dict
          returned: always
          sample: [{busid: "0000:18:00.0", vendor_id: "0x10de", device_id: "0x2330", class: "0x030200", numa_node: 0, nvlink5: false}]
        nvswitches:
          description:
            - NVSwitch PCI functions from sysfs (vendor C(0x10de), class C(0x0680xx), device C(0x1af1) A100 NVSwitch or
              C(0x22a3) H100 NVSwitch), present before any driver. Keys C(busid), C(vendor_id), C(device_id), C(class),
              C(numa_node), C(name) and C(nvlink) (NVLink generation).
          type: list
          elements: dict
          returned: always
        hcas:
          description:
            - RDMA devices from C(/sys/class/infiniband) with C(name), C(busid), C(numa_node), C(pci_class),
              C(vendor_id), C(device_id), C(host_bridge), C(pcie), C(ancestry), C(node_guid), C(sys_image_guid),
              C(fw_ver), C(board_id), C(netdevs) and C(ports).
            - Each port has C(port), C(state) (C(ACTIVE), C(DOWN)), C(state_id), C(phys_state) (C(LinkUp)), C(rate),
              C(speed_mbps), C(link_layer) (C(InfiniBand) or C(Ethernet) for RoCE), C(lid), C(port_guid) and C(gids)
              (non-zero entries with C(index), C(gid), C(type) such as C(RoCE v2), C(netdev) and C(ipv4) for
              IPv4-mapped GIDs).
          type: list
          elements: dict
          returned: always
        ethernet:
          description:
            - Network interfaces other than IPoIB with C(name), C(virtual), C(busid), C(speed_mbps), C(operstate),
              C(mtu), C(mac), C(numa_node) and C(rdma_device) (the HCA on the same PCI function, for RoCE).
            - C(virtual) is true without C(/sys/class/net/<name>/device) and for bridges, veth, docker and C(lo).
          type: list
          elements: dict
          returned: always
        distances:
          description:
            - C(matrix) maps C(GPU<index>) and HCA names to each other with nvidia-smi's terms (C(X), C(NV#), C(PIX),
              C(PXB), C(PHB), C(NODE), C(SYS)).
            - C(source) is C(nvidia-smi) (parsed C(topo -m)), C(derived) (from PCI ancestry and NUMA) or C(none).
          type: dict
          returned: always
          sample: {source: nvidia-smi, matrix: {GPU0: {GPU0: X, GPU1: NV18}, GPU1: {GPU0: NV18, GPU1: X}}}
        sources:
          description:
            - Where each fact came from, per key (C(cpu), C(memory), C(numa_nodes), C(gpus), C(gpu_pci), C(gpu_affinity),
              C(nvlink), C(pci_gpus), C(nvswitches), C(hcas), C(ethernet), C(distances)). Values are C(nvidia-smi), C(sysfs), C(procfs), C(derived)
              (computed from PCI ancestry and NUMA) or V(null) when no source provided the fact.
          type: dict
          returned: always
          sample: {gpus: nvidia-smi, gpu_pci: sysfs, distances: derived, hcas: sysfs, cpu: procfs}
        warnings:
          description:
            - Every reason to doubt a fact, one sentence each (also returned as module warnings). For example an
              C(nvidia-smi topo -m) output that could not be read, a matrix whose GPU rows disagree with
              C(--query-gpu), or a C(--query-gpu) row that did not parse. Empty when every source read cleanly.
          type: list
          elements: str
          returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import PROBE_ARGUMENT_SPEC, CommandRunner
from ansible_collections.trainstack.cluster.plugins.module_utils._probe_record import RecordError, RecordingTree, probe_root, write_record
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree, collect_topology


def main():
    module = AnsibleModule(
        argument_spec=dict(PROBE_ARGUMENT_SPEC, record={'type': 'path'}),
        supports_check_mode=True,
    )
    record = module.params['record']
    result = {'changed': False}
    try:
        # root may be a record tarball: it is unpacked into a temporary root for the probe.
        with probe_root(module.params['root']) as root:
            tree = RecordingTree(root) if record else SysfsTree(root)
            commands = CommandRunner(root, module.params['command_timeout'])
            topology = collect_topology(tree, commands, module.params['nvidia_smi_path'])
            if record and not module.check_mode:
                result['record_members'] = write_record(tree, commands.outputs(), record)
                result.update(changed=True, record=record)
    except (RecordError, OSError) as error:
        module.fail_json(msg='cannot read or record the probe: %s' % error)
    for warning in topology['warnings']:
        module.warn(warning)
    module.exit_json(ansible_facts={'trainstack_topology': topology}, **result)


if __name__ == '__main__':
    main()
