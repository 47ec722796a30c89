# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a host's CPU, NUMA, GPU, PCI and network topology.

Sources are sysfs and procfs under ``root`` plus nvidia-smi (through
``_commands.CommandRunner``).  Every source is optional: a missing file or
command yields None / empty lists, never an exception.
"""

from __future__ import annotations

import os
import re

from ansible_collections.trainstack.cluster.plugins.module_utils._nvsmi_topo import parse_topo
from ansible_collections.trainstack.cluster.plugins.module_utils._pci import read_nvidia_pci

NVIDIA_SMI_QUERY_FIELDS = (
    'index', 'name', 'uuid', 'pci.bus_id', 'compute_cap', 'memory.total', 'driver_version',
    'mig.mode.current', 'pcie.link.gen.max', 'pcie.link.width.max',
)

# Keys of the recorded outputs (<root>/.commands/<key>.txt) and the argv each stands for.
NVIDIA_SMI_COMMANDS = {
    # A header line is requested on purpose: columns are matched by name, so a
    # recording made with other or reordered fields still parses.
    'nvidia-smi_query-gpu': ['--query-gpu=' + ','.join(NVIDIA_SMI_QUERY_FIELDS), '--format=csv,nounits'],
    'nvidia-smi_topo-m': ['topo', '-m'],
    'nvidia-smi_nvlink-s': ['nvlink', '-s'],
    'nvidia-smi_q': ['-q'],
}
UNAME_COMMAND = ('uname-m', ['uname', '-m'])

PCI_CLASS_NVSWITCH = '0x068000'
IB_GID_ZERO = '0000:0000:0000:0000:0000:0000:0000:0000'
IPV4_MAPPED_GID_PREFIX = '0000:0000:0000:0000:0000:ffff:'
ARPHRD_INFINIBAND = 32
VIRTUAL_NETDEV_PREFIXES = ('lo', 'veth', 'docker', 'br-', 'virbr', 'cni', 'flannel', 'cali', 'vxlan', 'tun', 'tap')

_BUSID_RE = re.compile(r'^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$')
_ANSI_ESCAPE_RE = re.compile(r'\x1b\[[0-9;]*m')
_NVLINK_GPU_RE = re.compile(r'^GPU (\d+): ')
_NVLINK_LINK_RE = re.compile(r'^\s*Link (\d+): (.*)$')
_NVLINK_SPEED_RE = re.compile(r'([0-9.]+) GB/s')
_IB_RATE_RE = re.compile(r'^([0-9.]+) Gb/sec')
_NV_RE = re.compile(r'^NV(\d+)$')


class SysfsTree:
    """Reads files of a live or recorded root; unreadable means None."""

    def __init__(self, root='/'):
        self.root = os.path.realpath(root)

    def path(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def read(self, path):
        try:
            with open(self.path(path), encoding='utf-8', errors='replace') as handle:
                return handle.read().strip()
        except (OSError, ValueError):
            return None

    def read_int(self, path, base=10):
        return parse_int(self.read(path), base)

    def listdir(self, path):
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def exists(self, path):
        return os.path.lexists(self.path(path))

    def realpath(self, path):
        """Resolved path inside the root (symlinks followed), or None when absent."""
        resolved = os.path.realpath(self.path(path))
        if not os.path.exists(resolved):
            return None
        relative = os.path.relpath(resolved, self.root)
        return None if relative.startswith('..') else '/' + relative


def parse_int(text, base=10):
    try:
        return int(text, base)
    except (TypeError, ValueError):
        return None


_PCIE_SPEED_RE = re.compile(r'\s*([0-9]+(?:[.][0-9]+)?)\s*GT/s')


def pcie_speed_gts(text):
    """GT/s of a sysfs link speed (``32.0 GT/s PCIe``; older kernels ``8 GT/s``), or None."""
    match = _PCIE_SPEED_RE.match(str(text or ''))
    return float(match.group(1)) if match else None


def normalize_busid(text):
    """PCI bus id as NCCL compares it: lowercase ``dddd:bb:dd.f``; None if not a bus id."""
    match = _BUSID_RE.match((text or '').strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return '%04x:%02x:%02x.%x' % (int(domain or '0', 16), int(bus, 16), int(device, 16), int(function))


def expand_cpulist(cpulist):
    """'0-3,8' -> [0, 1, 2, 3, 8]."""
    cpus = []
    for part in (cpulist or '').split(','):
        part = part.strip()
        if not part:
            continue
        first, _sep, last = part.partition('-')
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def cpumap_from_cpus(cpus):
    """NCCL/sysfs cpumap form: 32-bit hex groups, highest first, comma-separated."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    groups = []
    while True:
        groups.append('%08x' % (mask & 0xffffffff))
        mask >>= 32
        if not mask:
            break
    return ','.join(reversed(groups))


def read_cpu(tree, uname_machine):
    """CPU identity and counts from /proc/cpuinfo (x86 and arm64 layouts)."""
    text = tree.read('/proc/cpuinfo')
    if text is None:
        return None
    processors = [dict(_cpuinfo_fields(block)) for block in re.split(r'\n\s*\n', text) if 'processor' in block]
    if not processors:
        return None
    first = processors[0]
    sockets = {cpu.get('physical id', '0') for cpu in processors}
    cores = {(cpu.get('physical id', '0'), cpu.get('core id', cpu.get('processor'))) for cpu in processors}
    threads_per_core = max(1, len(processors) // max(1, len(cores)))
    return {
        'arch': _arch(uname_machine, first),
        'vendor': first.get('vendor_id'),
        'model_name': first.get('model name'),
        'family_id': parse_int(first.get('cpu family')),
        'model_id': parse_int(first.get('model')),
        'sockets': len(sockets),
        'cores_per_socket': len(cores) // len(sockets),
        'threads_per_core': threads_per_core,
        'logical_cpus': len(processors),
        'online': tree.read('/sys/devices/system/cpu/online'),
        'cores': _cores(processors),
    }


def _cores(processors):
    """Every core as {socket, core, cpus}, ordered by its first CPU id; None where cpuinfo names no core.

    Consumers need which CPU ids share a core and a socket (Slurm's core indexes are not CPU ids
    where Linux interleaves the sockets); arm64 cpuinfo carries no physical id / core id.
    """
    if not all('physical id' in cpu and 'core id' in cpu for cpu in processors):
        return None
    cores = {}
    for cpu in processors:
        key = (parse_int(cpu['physical id']), parse_int(cpu['core id']))
        cores.setdefault(key, []).append(parse_int(cpu['processor']))
    ordered = sorted(cores.items(), key=lambda item: min(item[1]))
    return [{'socket': socket, 'core': core, 'cpus': sorted(cpus)} for (socket, core), cpus in ordered]


def _cpuinfo_fields(block):
    for line in block.splitlines():
        key, sep, value = line.partition(':')
        if sep:
            yield key.strip(), value.strip()


def _arch(uname_machine, cpuinfo):
    machine = (uname_machine or '').strip()
    if not machine:
        # Recorded roots without uname: the cpuinfo layout tells the architecture.
        if 'vendor_id' in cpuinfo:
            machine = 'x86_64'
        elif 'CPU implementer' in cpuinfo:
            machine = 'aarch64'
        elif 'cpu' in cpuinfo and 'POWER' in cpuinfo.get('cpu', ''):
            machine = 'ppc64le'
        else:
            return None
    return machine


def read_numa_nodes(tree):
    nodes = []
    for name in tree.listdir('/sys/devices/system/node'):
        if not re.match(r'^node\d+$', name):
            continue
        base = '/sys/devices/system/node/' + name
        cpulist = tree.read(base + '/cpulist') or ''
        nodes.append({
            'id': int(name[4:]),
            'cpulist': cpulist,
            'cpumap': tree.read(base + '/cpumap') or cpumap_from_cpus(expand_cpulist(cpulist)),
        })
    return sorted(nodes, key=lambda node: node['id'])


def read_memory(tree):
    text = tree.read('/proc/meminfo')
    match = re.search(r'^MemTotal:\s+(\d+) kB', text or '', re.MULTILINE)
    if not match:
        return None
    total_bytes = int(match.group(1)) * 1024
    return {'total_bytes': total_bytes, 'total_mib': total_bytes // (1024 * 1024)}


def read_pci_device(tree, busid):
    """A PCI function with its ancestry (bridges from the root port down), or None."""
    device_path = tree.realpath('/sys/bus/pci/devices/' + busid)
    if device_path is None:
        return None
    return _pci_device_at(tree, device_path)


def _pci_device_at(tree, device_path):
    components = device_path.strip('/').split('/')
    host_bridge = next((part for part in components if part.startswith('pci')), None)
    functions = []
    for index, part in enumerate(components):
        if normalize_busid(part) == part:
            functions.append('/' + '/'.join(components[:index + 1]))
    if not functions:
        return None
    device = _pci_attributes(tree, functions[-1])
    device['host_bridge'] = host_bridge
    device['ancestry'] = [_pci_attributes(tree, path) for path in functions[:-1]]
    return device


def _pci_attributes(tree, path):
    numa_node = tree.read_int(path + '/numa_node')
    return {
        'busid': os.path.basename(path),
        'class': tree.read(path + '/class'),
        'vendor_id': tree.read(path + '/vendor'),
        'device_id': tree.read(path + '/device'),
        'subsystem_vendor_id': tree.read(path + '/subsystem_vendor'),
        'subsystem_device_id': tree.read(path + '/subsystem_device'),
        'numa_node': numa_node,
        'pcie': {
            'current_link_speed': tree.read(path + '/current_link_speed'),
            'current_link_width': tree.read_int(path + '/current_link_width'),
            'max_link_speed': tree.read(path + '/max_link_speed'),
            'max_link_width': tree.read_int(path + '/max_link_width'),
        },
    }


def parse_query_csv(text):
    """Rows of ``nvidia-smi --query-gpu`` CSV (with header), keyed by field name."""
    return read_query_csv(text)[0]


def read_query_csv(text):
    """(rows, problems) of ``nvidia-smi --query-gpu`` CSV.

    Columns are matched by the header's names.  A BOM is dropped; a name holding commas
    is joined back (it is the only free-text field); a missing header falls back to the
    requested field order when the field count fits; any row that still does not parse
    is left out and named in ``problems``.
    """
    lines = [line for line in (text or '').lstrip('\ufeff').splitlines() if line.strip()]
    problems = []
    if not lines:
        return [], problems
    header = [re.sub(r'\s*\[.*\]$', '', field.strip()) for field in lines[0].split(',')]
    if 'index' not in header:
        if len(lines[0].split(',')) >= len(NVIDIA_SMI_QUERY_FIELDS) and parse_int(lines[0].split(',')[0].strip()) is not None:
            problems.append('nvidia-smi --query-gpu printed no header line; columns taken in the requested order')
            header = list(NVIDIA_SMI_QUERY_FIELDS)
            lines = [''] + lines
        else:
            problems.append('nvidia-smi --query-gpu output has no header naming its columns; first line: %r' % lines[0][:120])
            return [], problems
    rows = []
    for line in lines[1:]:
        values = [_query_value(value) for value in line.split(',')]
        extra = len(values) - len(header)
        if extra > 0 and 'name' in header:
            # Only the product name is free text ("NVIDIA A100-SXM4-80GB, MIG" style names exist): join it back.
            at = header.index('name')
            values[at:at + extra + 1] = [', '.join(value or '' for value in values[at:at + extra + 1])]
        row = dict(zip(header, values)) if len(values) == len(header) else None
        if row is None or parse_int(row.get('index')) is None or ('pci.bus_id' in row and normalize_busid(row['pci.bus_id']) is None):
            problems.append('nvidia-smi --query-gpu row does not parse: %r' % line[:160])
            continue
        rows.append(row)
    return rows, problems


def _query_value(value):
    value = value.strip()
    if value.startswith('[') or value in ('N/A', ''):
        return None
    # Recordings made without "nounits" carry units ("143771 MiB"); the header names them.
    return re.sub(r' (MiB|W|MHz|%)$', '', value)


def parse_topo_matrix(text):
    """``nvidia-smi topo -m`` -> (matrix {row: {column: cell}}, affinity {row: {...}}); see _nvsmi_topo.parse_topo."""
    parsed = parse_topo(text)
    return parsed['matrix'], parsed['affinity']


def parse_nvlink_status(text):
    """``nvidia-smi nvlink -s`` -> {gpu index: {'active_links': n, 'link_speed_gbs': x}}."""
    status = {}
    current = None
    for line in (text or '').splitlines():
        gpu = _NVLINK_GPU_RE.match(line)
        if gpu:
            current = status.setdefault(int(gpu.group(1)), {'active_links': 0, 'link_speed_gbs': None})
            continue
        link = _NVLINK_LINK_RE.match(line)
        if link and current is not None:
            speed = _NVLINK_SPEED_RE.search(link.group(2))
            if speed:
                current['active_links'] += 1
                current['link_speed_gbs'] = float(speed.group(1))
    return status


def parse_fabric_states(text):
    """States of the per-GPU "Fabric" sections of ``nvidia-smi -q`` (Completed on NVSwitch systems)."""
    states = []
    in_fabric = False
    for line in (text or '').splitlines():
        key, _sep, value = line.partition(':')
        key = key.strip()
        if key == 'Fabric' and not value.strip():
            in_fabric = True
        elif in_fabric and key == 'State':
            states.append(value.strip())
            in_fabric = False
    return states


def read_gpus(tree, commands, nvidia_smi, warnings=None):
    rows, problems = read_query_csv(commands.output('nvidia-smi_query-gpu', [nvidia_smi] + NVIDIA_SMI_COMMANDS['nvidia-smi_query-gpu']))
    if warnings is not None:
        warnings.extend(problems)
    gpus = []
    for row in rows:
        busid = normalize_busid(row.get('pci.bus_id'))
        index = parse_int(row.get('index'))
        if busid is None or index is None:
            continue
        gpus.append(_gpu(tree, row, index, busid))
    return sorted(gpus, key=lambda gpu: gpu['index'])


def _gpu(tree, row, index, busid):
    compute_capability = row.get('compute_cap')
    major, _sep, minor = (compute_capability or '').partition('.')
    pci = read_pci_device(tree, busid) or {}
    pcie = dict(pci.get('pcie') or {'current_link_speed': None, 'current_link_width': None, 'max_link_speed': None, 'max_link_width': None})
    return {
        'index': index,
        'name': row.get('name'),
        'uuid': row.get('uuid'),
        'busid': busid,
        'compute_capability': compute_capability,
        'sm': int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() else None,
        'memory_mib': parse_int(row.get('memory.total')),
        'driver_version': row.get('driver_version'),
        'mig_mode': row.get('mig.mode.current'),
        'numa_node': pci.get('numa_node'),
        'local_cpulist': tree.read('/sys/bus/pci/devices/%s/local_cpulist' % busid),
        'minor_number': read_device_minor(tree, busid),
        'pci_class': pci.get('class'),
        'vendor_id': pci.get('vendor_id'),
        'device_id': pci.get('device_id'),
        'subsystem_vendor_id': pci.get('subsystem_vendor_id'),
        'subsystem_device_id': pci.get('subsystem_device_id'),
        'host_bridge': pci.get('host_bridge'),
        'pcie': pcie,
        'pcie_gen_max': parse_int(row.get('pcie.link.gen.max')),
        'pcie_width_max': parse_int(row.get('pcie.link.width.max')),
        'ancestry': pci.get('ancestry', []),
        'nvlink': {'active_links': 0, 'link_speed_gbs': None, 'peers': []},
    }


def read_device_minor(tree, busid):
    """N of the GPU's /dev/nvidiaN, as the driver numbered it; None without the driver's procfs entry.

    It is not always nvidia-smi's index (which follows PCI bus order): gres.conf File= must use it.
    """
    text = tree.read('/proc/driver/nvidia/gpus/%s/information' % busid) or ''
    match = re.search(r'^Device Minor:\s*(\d+)\s*$', text, re.MULTILINE)
    return int(match.group(1)) if match else None


def attach_nvlinks(gpus, matrix, nvlink_status):
    """Fill each GPU's NVLink links and peers (NV# cells of topo -m)."""
    by_index = {gpu['index']: gpu for gpu in gpus}
    for gpu in gpus:
        status = nvlink_status.get(gpu['index'], {})
        peers = []
        for column, cell in sorted(matrix.get('GPU%d' % gpu['index'], {}).items()):
            links = _NV_RE.match(cell)
            peer = by_index.get(parse_int(column[3:])) if column.startswith('GPU') else None
            if links and peer is not None:
                peers.append({'index': peer['index'], 'busid': peer['busid'], 'count': int(links.group(1))})
        gpu['nvlink'] = {
            'active_links': status.get('active_links', 0),
            'link_speed_gbs': status.get('link_speed_gbs'),
            'peers': sorted(peers, key=lambda peer: peer['index']),
        }


def detect_nvswitch(tree, gpus, commands, nvidia_smi):
    """True when the GPUs' NVLinks go through NVSwitches rather than to each other.

    Evidence, cheapest first: an NVSwitch PCI function (bare-metal HGX); a GPU
    whose NV# peers add up to more links than it has (only a switch fans links
    out); the fabric state of ``nvidia-smi -q`` (VMs see neither of the others).
    """
    if not any(gpu['nvlink']['active_links'] or gpu['nvlink']['peers'] for gpu in gpus):
        return False
    for busid in tree.listdir('/sys/bus/pci/devices'):
        if tree.read('/sys/bus/pci/devices/%s/class' % busid) == PCI_CLASS_NVSWITCH and \
                tree.read('/sys/bus/pci/devices/%s/vendor' % busid) == '0x10de':
            return True
    for gpu in gpus:
        if sum(peer['count'] for peer in gpu['nvlink']['peers']) > gpu['nvlink']['active_links'] > 0:
            return True
    states = parse_fabric_states(commands.output('nvidia-smi_q', [nvidia_smi] + NVIDIA_SMI_COMMANDS['nvidia-smi_q']))
    return any(state in ('Completed', 'In Progress') for state in states)


def read_hcas(tree):
    """RDMA devices (InfiniBand and RoCE) from /sys/class/infiniband."""
    hcas = []
    for name in tree.listdir('/sys/class/infiniband'):
        base = '/sys/class/infiniband/' + name
        device_path = tree.realpath(base + '/device')
        pci = _pci_device_at(tree, device_path) if device_path else None
        pci = pci or {}
        hcas.append({
            'name': name,
            'busid': pci.get('busid'),
            'numa_node': pci.get('numa_node'),
            'pci_class': pci.get('class'),
            'vendor_id': pci.get('vendor_id'),
            'device_id': pci.get('device_id'),
            'host_bridge': pci.get('host_bridge'),
            'pcie': pci.get('pcie'),
            'ancestry': pci.get('ancestry', []),
            'node_guid': tree.read(base + '/node_guid'),
            'sys_image_guid': tree.read(base + '/sys_image_guid'),
            'fw_ver': tree.read(base + '/fw_ver'),
            'board_id': tree.read(base + '/board_id'),
            'netdevs': tree.listdir(base + '/device/net'),
            'ports': [_ib_port(tree, base + '/ports/' + port, port) for port in tree.listdir(base + '/ports') if port.isdigit()],
        })
    return hcas


def _ib_port(tree, base, port):
    state = _numbered_state(tree.read(base + '/state'))
    phys_state = _numbered_state(tree.read(base + '/phys_state'))
    rate = tree.read(base + '/rate')
    rate_match = _IB_RATE_RE.match(rate or '')
    gids = []
    for index in sorted((entry for entry in tree.listdir(base + '/gids') if entry.isdigit()), key=int):
        gid = tree.read('%s/gids/%s' % (base, index))
        if not gid or gid == IB_GID_ZERO:
            continue
        gids.append({
            'index': int(index),
            'gid': gid,
            'type': tree.read('%s/gid_attrs/types/%s' % (base, index)),
            'netdev': tree.read('%s/gid_attrs/ndevs/%s' % (base, index)),
            'ipv4': _ipv4_of_gid(gid),
        })
    link_layer = tree.read(base + '/link_layer')
    return {
        'port': int(port),
        'state': state[1],
        'state_id': state[0],
        'phys_state': phys_state[1],
        'rate': rate,
        'speed_mbps': int(float(rate_match.group(1)) * 1000) if rate_match else None,
        'link_layer': link_layer,
        'lid': tree.read(base + '/lid'),
        'port_guid': _port_guid(gids) if link_layer == 'InfiniBand' else None,
        'gids': gids,
    }


def _numbered_state(text):
    """'4: ACTIVE' -> (4, 'ACTIVE')."""
    number, sep, name = (text or '').partition(':')
    if not sep:
        return None, (text or None)
    return parse_int(number.strip()), name.strip()


def _port_guid(gids):
    # An IB port's GUID is the interface id (low 64 bits) of its GID 0.
    for gid in gids:
        if gid['index'] == 0:
            return gid['gid'][20:]
    return None


def _ipv4_of_gid(gid):
    if not gid.startswith(IPV4_MAPPED_GID_PREFIX):
        return None
    value = int(gid[len(IPV4_MAPPED_GID_PREFIX):].replace(':', ''), 16)
    return '.'.join(str((value >> shift) & 0xff) for shift in (24, 16, 8, 0))


def read_ethernet(tree, hcas):
    """Network interfaces other than IPoIB, each flagged virtual or physical."""
    rdma_by_busid = {hca['busid']: hca['name'] for hca in hcas if hca['busid']}
    interfaces = []
    for name in tree.listdir('/sys/class/net'):
        base = '/sys/class/net/' + name
        if tree.read_int(base + '/type') == ARPHRD_INFINIBAND:
            continue
        device_path = tree.realpath(base + '/device')
        busid = _last_busid(device_path)
        interface_path = tree.realpath(base) or ''
        virtual = (device_path is None or '/devices/virtual/' in interface_path or tree.exists(base + '/bridge')
                   or name.startswith(VIRTUAL_NETDEV_PREFIXES))
        speed = tree.read_int(base + '/speed')
        interfaces.append({
            'name': name,
            'virtual': virtual,
            'busid': busid,
            'speed_mbps': speed if speed is not None and speed > 0 else None,
            'operstate': tree.read(base + '/operstate'),
            'mtu': tree.read_int(base + '/mtu'),
            'mac': tree.read(base + '/address'),
            'numa_node': tree.read_int('/sys/bus/pci/devices/%s/numa_node' % busid) if busid else None,
            'rdma_device': rdma_by_busid.get(busid),
        })
    return interfaces


def _last_busid(path):
    """Bus id of the PCI function a device path lies under (virtio sits below one)."""
    for part in reversed((path or '').split('/')):
        if normalize_busid(part) == part:
            return part
    return None


def derived_distance(first, second, numa_nodes_known):
    """nvidia-smi's PCI path class between two PCI endpoints from their sysfs ancestry."""
    if first['busid'] == second['busid']:
        return 'X'
    first_chain = [bridge['busid'] for bridge in first['ancestry']]
    second_chain = [bridge['busid'] for bridge in second['ancestry']]
    shared = 0
    while shared < min(len(first_chain), len(second_chain)) and first_chain[shared] == second_chain[shared]:
        shared += 1
    if shared:
        # Below the deepest shared bridge each side crosses at most one more: same switch.
        below = max(len(first_chain), len(second_chain)) - shared
        return 'PIX' if below <= 1 else 'PXB'
    if first['host_bridge'] and first['host_bridge'] == second['host_bridge']:
        return 'PHB'
    first_node, second_node = first['numa_node'], second['numa_node']
    if not numa_nodes_known or first_node is None or second_node is None or first_node < 0 or second_node < 0:
        return 'NODE'
    return 'NODE' if first_node == second_node else 'SYS'


def distances(gpus, hcas, matrix, nvswitch, numa_nodes):
    """GPU and HCA pairwise matrix in nvidia-smi topo -m terms; its source says how it was made."""
    endpoints = [('GPU%d' % gpu['index'], gpu) for gpu in gpus] + [(hca['name'], hca) for hca in hcas if hca['busid']]
    if not endpoints or not gpus:
        return {'source': 'none', 'matrix': {}}
    if matrix:
        return {'source': 'nvidia-smi', 'matrix': matrix}
    derived = {}
    for name, first in endpoints:
        derived[name] = {}
        for other, second in endpoints:
            cell = derived_distance(first, second, len(numa_nodes) > 1)
            if cell != 'X' and name.startswith('GPU') and other.startswith('GPU'):
                cell = _nvlink_cell(first, second, nvswitch) or cell
            derived[name][other] = cell
    return {'source': 'derived', 'matrix': derived}


def _nvlink_cell(first, second, nvswitch):
    for peer in first['nvlink']['peers']:
        if peer['busid'] == second['busid']:
            return 'NV%d' % peer['count']
    if nvswitch and first['nvlink']['active_links'] and second['nvlink']['active_links']:
        return 'NV%d' % min(first['nvlink']['active_links'], second['nvlink']['active_links'])
    return None


def read_topo(commands, nvidia_smi, gpus, warnings):
    """Matrix and affinities of ``topo -m``; every reason to doubt them goes to warnings."""
    text = commands.output('nvidia-smi_topo-m', [nvidia_smi] + NVIDIA_SMI_COMMANDS['nvidia-smi_topo-m'])
    parsed = parse_topo(text)
    warnings.extend('nvidia-smi topo -m: ' + problem for problem in parsed['problems'])
    if text and text.strip() and not parsed['matrix']:
        warnings.append('nvidia-smi topo -m could not be read: distances are derived from sysfs instead')
    listed = sorted(gpu['index'] for gpu in gpus)
    if parsed['matrix'] and parsed['gpus'] != listed:
        warnings.append('nvidia-smi topo -m has rows for GPUs %s but --query-gpu lists GPUs %s: the matrix contradicts '
                        'the GPU list (nccl_topology refuses it)' % (parsed['gpus'], listed))
    return parsed['matrix'], parsed['affinity']


def matrix_contradiction(topology):
    """Why the facts' nvidia-smi matrix cannot describe their GPU list, or None when it can."""
    distances = topology.get('distances') or {}
    if distances.get('source') != 'nvidia-smi':
        return None
    rows = sorted(int(name[3:]) for name in distances.get('matrix', {}) if re.match(r'^GPU\d+$', name))
    listed = sorted(gpu['index'] for gpu in topology.get('gpus', []))
    if rows != listed:
        return 'nvidia-smi topo -m has rows for GPUs %s but the GPU list (--query-gpu) has GPUs %s' % (rows, listed)
    return None


def collect_topology(tree, commands, nvidia_smi='nvidia-smi'):
    """The ``trainstack_topology`` fact."""
    warnings = []
    uname = commands.output(UNAME_COMMAND[0], UNAME_COMMAND[1])
    gpus = read_gpus(tree, commands, nvidia_smi, warnings)
    matrix, affinity = ({}, {})
    if gpus:
        matrix, affinity = read_topo(commands, nvidia_smi, gpus, warnings)
        attach_nvlinks(gpus, matrix, parse_nvlink_status(
            commands.output('nvidia-smi_nvlink-s', [nvidia_smi] + NVIDIA_SMI_COMMANDS['nvidia-smi_nvlink-s'])))
        for gpu in gpus:
            gpu['affinity'] = affinity.get('GPU%d' % gpu['index'])
    nvswitch = detect_nvswitch(tree, gpus, commands, nvidia_smi) if gpus else False
    hcas = read_hcas(tree)
    numa_nodes = read_numa_nodes(tree)
    pci = read_nvidia_pci(tree)
    facts = {
        'pci_gpus': pci['pci_gpus'],
        'nvswitches': pci['nvswitches'],
        'cpu': read_cpu(tree, uname),
        'numa_nodes': numa_nodes,
        'memory': read_memory(tree),
        'gpus': gpus,
        'nvswitch': nvswitch,
        'hcas': hcas,
        'ethernet': read_ethernet(tree, hcas),
        'distances': distances(gpus, hcas, matrix, nvswitch, numa_nodes),
    }
    facts['sources'] = _sources(facts, affinity)
    facts['warnings'] = warnings
    return facts


def _sources(facts, affinity):
    """Where each fact came from: nvidia-smi, sysfs, procfs, derived, or None when nothing provided it."""
    gpus = facts['gpus']
    return {
        'cpu': 'procfs' if facts['cpu'] else None,
        'memory': 'procfs' if facts['memory'] else None,
        'numa_nodes': 'sysfs' if facts['numa_nodes'] else None,
        'gpus': 'nvidia-smi' if gpus else None,
        'gpu_pci': 'sysfs' if any(gpu['pci_class'] for gpu in gpus) else None,
        # Read from PCI sysfs whether a driver is loaded or not (a bare host's Fabric Manager decision).
        'pci_gpus': 'sysfs' if facts['pci_gpus'] else None,
        'nvswitches': 'sysfs' if facts['nvswitches'] else None,
        'gpu_affinity': 'nvidia-smi' if affinity else None,
        'nvlink': 'nvidia-smi' if any(gpu['nvlink']['active_links'] or gpu['nvlink']['peers'] for gpu in gpus) else None,
        'hcas': 'sysfs' if facts['hcas'] else None,
        'ethernet': 'sysfs' if facts['ethernet'] else None,
        'distances': None if facts['distances']['source'] == 'none' else facts['distances']['source'],
    }
