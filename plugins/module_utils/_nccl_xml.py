# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render an NCCL topology file (NCCL_TOPO_FILE) from ``trainstack_topology`` facts.

NCCL's XML parser is hand-written and stricter than XML: no declaration, no
tabs, one element per line with all attributes on it, double-quoted values,
at most 254 characters per value and few elements.  The PCI nesting mirrors
how NCCL itself walks sysfs so that its busid matching finds every node.
"""

from __future__ import annotations

import re

from ansible_collections.trainstack.cluster.plugins.module_utils._topology import cpumap_from_cpus, expand_cpulist

# NCCL's own target for links into NVSwitches whose PCI address NVML cannot
# give (it is what NCCL wrote in its dump of the probed H200 host).
NVSWITCH_TARGET = 'fffffff:ff:ff.0'
TCLASS_GPU = '0x030200'
TCLASS_NVSWITCH = '0x068000'
DEFAULT_GPU_CLASS = '0x030200'
MAX_VALUE_LENGTH = 254
MAX_CHILDREN = 32

# The "X.Y GT/s PCIe" spellings NCCL maps to a PCIe generation.
_NCCL_LINK_SPEEDS = {2.5: '2.5 GT/s PCIe', 5.0: '5.0 GT/s PCIe', 8.0: '8.0 GT/s PCIe', 16.0: '16.0 GT/s PCIe',
                     32.0: '32.0 GT/s PCIe', 64.0: '64.0 GT/s PCIe'}
_GT_PER_PCIE_GEN = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_ARCH_NAMES = {'x86_64': 'x86_64', 'amd64': 'x86_64', 'aarch64': 'arm64', 'arm64': 'arm64', 'ppc64le': 'ppc64', 'ppc64': 'ppc64'}


class TopologyError(ValueError):
    """The facts lack something NCCL needs to place a device."""


def nccl_link_speed(text):
    """sysfs link speed ('32.0 GT/s PCIe', '8 GT/s') in NCCL's spelling, or None when unknown."""
    match = re.match(r'^\s*([0-9.]+)\s*GT/s', text or '')
    return _NCCL_LINK_SPEEDS.get(float(match.group(1))) if match else None


def _slower_link(device, parent):
    """NCCL takes the slower of a device's and its upstream port's max link (idle links downtrain, max does not)."""
    own = (nccl_link_speed(device['pcie']['max_link_speed']), device['pcie']['max_link_width'])
    if parent is None:
        return own
    upstream = (nccl_link_speed(parent['pcie']['max_link_speed']), parent['pcie']['max_link_width'])
    speeds = [speed for speed in (own[0], upstream[0]) if speed]
    widths = [width for width in (own[1], upstream[1]) if width]
    speed = min(speeds, key=lambda value: float(value.split()[0])) if speeds else None
    return speed, (min(widths) if widths else None)


def _nccl_parents(ancestry):
    """Bridges NCCL turns into <pci> nodes, top-down.

    NCCL climbs sysfs two levels at a time (a switch's downstream port and its
    upstream port are one hop), stopping at the host bridge.
    """
    parents = []
    position = len(ancestry) - 2  # the device itself would sit at len(ancestry)
    while position >= 0:
        parents.append(position)
        position -= 2
    return [(ancestry[index], ancestry[index - 1] if index > 0 else None) for index in reversed(parents)]


def _device_link(device, ancestry, fallback_gen=None, fallback_width=None):
    speed, width = _slower_link(device, ancestry[-1] if ancestry else None)
    if speed is None and fallback_gen in _GT_PER_PCIE_GEN:
        speed = _NCCL_LINK_SPEEDS[_GT_PER_PCIE_GEN[fallback_gen]]
    return speed, width or fallback_width


class _Element:
    def __init__(self, tag, attributes):
        self.tag = tag
        self.attributes = [(name, str(value)) for name, value in attributes if value is not None]
        self.children = []
        self.by_key = {}

    def child(self, key, tag, attributes):
        """The child registered under key, created on first use (shared switches)."""
        if key not in self.by_key:
            self.by_key[key] = _Element(tag, attributes)
            self.children.append(self.by_key[key])
        return self.by_key[key]

    def render(self, depth, lines):
        for name, value in self.attributes:
            if len(value) > MAX_VALUE_LENGTH or '"' in value or '\t' in value or '\n' in value:
                raise TopologyError('%s attribute %s=%r is not representable for NCCL' % (self.tag, name, value))
        if len(self.children) > MAX_CHILDREN:
            raise TopologyError('%s has %d children; NCCL 2.18 reads at most %d' % (self.tag, len(self.children), MAX_CHILDREN))
        opening = '  ' * depth + '<' + ' '.join([self.tag] + ['%s="%s"' % pair for pair in self.attributes])
        if not self.children:
            lines.append(opening + '/>')
            return
        lines.append(opening + '>')
        for child in self.children:
            child.render(depth + 1, lines)
        lines.append('  ' * depth + '</%s>' % self.tag)


def _cpu_attributes(topology, numa_id, cpumap):
    cpu = topology.get('cpu') or {}
    arch = _ARCH_NAMES.get(cpu.get('arch') or '')
    x86 = arch == 'x86_64'
    # NCCL wants familyid/modelid on x86 (it tunes for Intel/AMD generations).
    return [
        ('numaid', numa_id),
        ('affinity', cpumap if cpumap and len(cpumap) <= MAX_VALUE_LENGTH else None),
        ('arch', arch),
        ('vendor', cpu.get('vendor') if x86 else None),
        ('familyid', cpu.get('family_id') if x86 else None),
        ('modelid', cpu.get('model_id') if x86 else None),
    ]


def _numa_placement(topology):
    """Function giving (numaid, cpumap) for a device's sysfs numa_node.

    A numa_node of -1 (VMs, single-socket firmware) maps to the lowest real
    node; NCCL itself would write numaid -1 and fail to read node-1/cpumap.
    """
    nodes = {node['id']: node['cpumap'] for node in topology.get('numa_nodes') or []}
    if not nodes:
        online = expand_cpulist((topology.get('cpu') or {}).get('online'))
        nodes = {0: cpumap_from_cpus(online) if online else None}
    lowest = min(nodes)

    def placement(numa_node):
        node = numa_node if numa_node in nodes else lowest
        return node, nodes[node]
    return placement


def _gpu_element(gpu, nvswitch):
    element = _Element('gpu', [('dev', gpu['index']), ('sm', gpu['sm'])])
    nvlink = gpu.get('nvlink') or {}
    if nvswitch and (nvlink.get('active_links') or nvlink.get('peers')):
        count = nvlink.get('active_links') or max(peer['count'] for peer in nvlink['peers'])
        element.children.append(_Element('nvlink', [('target', NVSWITCH_TARGET), ('count', count), ('tclass', TCLASS_NVSWITCH)]))
    elif not nvswitch:
        for peer in nvlink.get('peers') or []:
            element.children.append(_Element('nvlink', [('target', peer['busid']), ('count', peer['count']), ('tclass', TCLASS_GPU)]))
    return element


def _pci_attributes(device, speed, width, default_class=None):
    return [
        ('busid', device['busid']),
        ('class', device.get('pci_class') or device.get('class') or default_class),
        ('vendor', device.get('vendor_id')),
        ('device', device.get('device_id')),
        ('subsystem_vendor', device.get('subsystem_vendor_id')),
        ('subsystem_device', device.get('subsystem_device_id')),
        ('link_speed', speed),
        ('link_width', width),
    ]


def _attach(system, placement, cpu_attributes, device, element_attributes, content):
    """Hang device (and the switches above it) under the CPU of its NUMA node."""
    numa_id, cpumap = placement(device.get('numa_node'))
    parent = system.child(('cpu', numa_id), 'cpu', cpu_attributes(numa_id, cpumap))
    for bridge, upstream in _nccl_parents(device.get('ancestry') or []):
        speed, width = _slower_link(bridge, upstream)
        if speed is None or not width:
            raise TopologyError('PCI bridge %s has no readable link speed/width' % bridge['busid'])
        parent = parent.child(('pci', bridge['busid']), 'pci', _pci_attributes(bridge, speed, width))
    pci = parent.child(('pci', device['busid']), 'pci', element_attributes)
    pci.children.append(content)


def _numeric_numaid(element):
    return int(dict(element.attributes).get('numaid', '0'))


def build_topology_xml(topology):
    """NCCL topology XML text for the facts, or None when they list no GPU."""
    gpus = topology.get('gpus') or []
    if not gpus:
        return None
    placement = _numa_placement(topology)
    system = _Element('system', [('version', 1)])
    nvswitch = bool(topology.get('nvswitch'))

    def cpu_attributes(numa_id, cpumap):
        return _cpu_attributes(topology, numa_id, cpumap)

    for gpu in gpus:
        if gpu.get('sm') is None:
            raise TopologyError('GPU %s (%s) has no compute capability' % (gpu['index'], gpu['busid']))
        speed, width = _device_link(gpu, gpu.get('ancestry') or [], gpu.get('pcie_gen_max'), gpu.get('pcie_width_max'))
        if speed is None or not width:
            raise TopologyError('GPU %s (%s) has no readable PCIe link speed/width' % (gpu['index'], gpu['busid']))
        _attach(system, placement, cpu_attributes, gpu, _pci_attributes(gpu, speed, width, DEFAULT_GPU_CLASS), _gpu_element(gpu, nvswitch))
    for hca in topology.get('hcas') or []:
        active = [port for port in hca.get('ports') or [] if port.get('state') == 'ACTIVE']
        if not active or not hca.get('busid') or not hca.get('pcie'):
            continue  # NCCL ignores ports that are not ACTIVE; a down HCA is left out.
        speed, width = _device_link(hca, hca.get('ancestry') or [])
        if speed is None or not width:
            continue  # Without link data NCCL places the NIC from sysfs itself.
        net = _Element('net', [('name', hca['name']), ('speed', active[0].get('speed_mbps'))])
        nic = _Element('nic', [])
        nic.children.append(net)
        _attach(system, placement, cpu_attributes, hca, _pci_attributes(hca, speed, width), nic)
    system.children.sort(key=_numeric_numaid)
    for cpu in system.children:
        _sort_pci(cpu)
    lines = []
    system.render(0, lines)
    return '\n'.join(lines) + '\n'


def _sort_pci(element):
    element.children.sort(key=lambda child: (child.tag, dict(child.attributes).get('busid', '')))
    for child in element.children:
        if child.tag == 'pci':
            _sort_pci(child)
