# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm node definitions (NodeName line, gres.conf lines) from topology facts (controller side, pure).

The slurm role's templates only print what these filters return.
"""

from __future__ import annotations

import math
import re

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import compress, compress_sorted, expand, numbered_key
from ansible_collections.trainstack.cluster.plugins.module_utils._slurmd import compare_node, parse_slurmd_C
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import expand_cpulist

# "NVIDIA H100 80GB HBM3" -> h100, "Tesla V100-SXM2-32GB" -> v100, "NVIDIA GeForce RTX 4090" -> 4090
_GPU_NAME_PREFIX_RE = re.compile(r'(?i)^(nvidia\s+)?((tesla|geforce|quadro|rtx)\s+)*')
_GPU_TYPE_RE = re.compile(r'^[a-z0-9]+')
# Slurm reads slurm.conf and gres.conf a line at a time into a fixed buffer: long NodeAddr lists are split
# over several lines well below it.
_MAX_LINE = 1024
_REQUIRED = ('cpus', 'sockets', 'cores_per_socket', 'threads_per_core', 'real_memory')


def compress_ranges(numbers):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8' (sorted, duplicates dropped)."""
    parts = []
    for number in sorted(set(numbers)):
        if parts and parts[-1][1] == number - 1:
            parts[-1][1] = number
        else:
            parts.append([number, number])
    return ','.join(str(first) if first == last else '%d-%d' % (first, last) for first, last in parts)


def slurm_core_map(cpu):
    """{OS CPU id: Slurm core index} for a host's cpu facts; {} when the facts cannot tell.

    Slurm numbers cores the way hwloc orders them: sockets by their first CPU id, and within a socket
    the cores by their first CPU id (slurmd's CPU map, `debug4: CPU map[abs]=>os S:C:T`). Where Linux
    interleaves the sockets (CPU 0 on socket 0, CPU 1 on socket 1, ...), core index and CPU id differ.
    Without per-core facts (arm64 cpuinfo), CPU n is core n mod (sockets x cores per socket), which
    holds where Linux numbers the sockets one after the other and the SMT siblings last.
    """
    cpu = cpu or {}
    cores = cpu.get('cores')
    if cores:
        sockets = {}
        for core in cores:
            sockets.setdefault(core['socket'], []).append(sorted(core['cpus']))
        mapping = {}
        index = 0
        for socket_cores in sorted(sockets.values(), key=lambda cores_of: min(c[0] for c in cores_of)):
            for core_cpus in sorted(socket_cores):
                for os_cpu in core_cpus:
                    mapping[os_cpu] = index
                index += 1
        return mapping
    total = int(cpu.get('sockets') or 0) * int(cpu.get('cores_per_socket') or 0)
    logical = int(cpu.get('logical_cpus') or 0)
    if total <= 0 or logical <= 0:
        return {}
    return {os_cpu: os_cpu % total for os_cpu in range(logical)}


def slurm_gpu_cores(cpulist, cpu):
    """gres.conf Cores= value (Slurm core indexes) for a GPU's local CPU list; '' when unknown."""
    mapping = slurm_core_map(cpu)
    if not mapping:
        return ''
    return compress_ranges(mapping[os_cpu] for os_cpu in expand_cpulist(cpulist) if os_cpu in mapping)


def gpu_type_of(name):
    """Slurm GRES type derived from a GPU name: 'NVIDIA H100 80GB HBM3' -> 'h100'."""
    match = _GPU_TYPE_RE.search(_GPU_NAME_PREFIX_RE.sub('', name or '', count=1).lower())
    return match.group(0) if match else ''


def _device_file(prefix, probed, fallback):
    # /dev/nvidiaN: N is the driver's minor number, which need not follow nvidia-smi's index.
    minor = probed.get('minor_number')
    return '%s%s' % (prefix, minor if minor is not None else fallback)


def _gpus(probed, overrides, device_prefix):
    """The node's GPUs: the override declares count/type/files; otherwise every probed GPU counts."""
    declared_type = overrides.get('gpu_type') or ''
    if 'gpu_count' in overrides:
        files = overrides.get('gpu_files') or []
        gpus = []
        for i in range(int(overrides['gpu_count'])):
            probe = probed[i] if i < len(probed) else {}
            gpus.append({'name': probe.get('name') or '', 'type': declared_type,
                         'file': files[i] if i < len(files) else _device_file(device_prefix, probe, i),
                         'cpulist': probe.get('local_cpulist') or ''})
        return gpus
    return [{'name': probe.get('name') or '', 'type': declared_type,
             'file': _device_file(device_prefix, probe, probe.get('index')), 'cpulist': probe.get('local_cpulist') or ''}
            for probe in sorted(probed, key=lambda probe: probe.get('index', 0))]


def slurm_node_definition(topology, host, overrides=None, memory_factor=1.0, memory_reserve_mib=0, gpu_type='',
                          device_prefix='/dev/nvidia', node_name=None):
    """One compute node's definition: NodeName line, gres.conf lines and what was missing.

    Values: overrides (slurm_node_overrides) over the probed topology (topology_facts). ``host`` is the
    inventory name; ``node_name`` (slurm_node_name) is Slurm's name where it differs, and then the
    inventory name stays the address (NodeAddr=).
    """
    node_name = node_name or host
    topology = topology or {}
    overrides = overrides or {}
    cpu = topology.get('cpu') or {}
    memory = topology.get('memory') or {}
    probed = topology.get('gpus') or []

    def pick(override_key, fact_key):
        return overrides[override_key] if override_key in overrides else cpu.get(fact_key)

    sockets = pick('sockets', 'sockets')
    cores = pick('cores_per_socket', 'cores_per_socket')
    threads = pick('threads_per_core', 'threads_per_core')
    cpus = pick('cpus', 'logical_cpus')
    if cpus is None and None not in (sockets, cores, threads):
        cpus = int(sockets) * int(cores) * int(threads)
    total_mib = memory.get('total_mib')
    if 'real_memory' in overrides:
        real_memory = overrides['real_memory']
    elif total_mib is not None:
        real_memory = int(total_mib * float(memory_factor)) - int(memory_reserve_mib)
    else:
        real_memory = None
    values = dict(zip(_REQUIRED, (cpus, sockets, cores, threads, real_memory)))
    missing = [key for key in _REQUIRED if values[key] is None]

    gpus = _gpus(probed, overrides, device_prefix)
    gres_lines, types = [], []
    for gpu in gpus:
        gtype = gpu['type'] or gpu_type or gpu_type_of(gpu['name']) or ''
        types.append(gtype)
        core_spec = slurm_gpu_cores(gpu['cpulist'], cpu) if gpu['cpulist'] else ''
        gres_lines.append('NodeName=%s Name=gpu%s File=%s%s' % (
            node_name, (' Type=' + gtype) if gtype else '', gpu['file'], (' Cores=' + core_spec) if core_spec else ''))
    gres = []
    for gtype in dict.fromkeys(types):
        gres.append('gpu:%s%d' % ((gtype + ':') if gtype else '', types.count(gtype)))

    words = ['NodeName=%s' % node_name] + ([] if node_name == host else ['NodeAddr=%s' % host])
    words += ['CPUs=%s' % cpus, 'Sockets=%s' % sockets, 'CoresPerSocket=%s' % cores,
              'ThreadsPerCore=%s' % threads, 'RealMemory=%s' % real_memory]
    if gres:
        words.append('Gres=' + ','.join(gres))
    if overrides.get('features'):
        words.append('Feature=' + ','.join(overrides['features']))
    if 'weight' in overrides:
        words.append('Weight=%s' % overrides['weight'])
    for key, value in (overrides.get('options') or {}).items():
        words.append('%s=%s' % (key, value))
    words.append('State=UNKNOWN')
    return {'name': node_name, 'complete': not missing, 'missing': missing, 'line': ' '.join(words), 'gres': gres_lines,
            'gpus': len(gpus), 'probed_gpus': len(probed), 'memory_mib': total_mib, 'real_memory': real_memory,
            'gpu_types_missing': bool(gpus) and '' in types}


def slurm_node_definitions(hosts, topologies, overrides, names, cached=None, **options):
    """{inventory name: definition} for every compute host, in one pass (a loop of set_fact copies the dict per host).

    ``hosts``: the compute hosts; ``topologies``, ``overrides``, ``names``: lists in the same order (None where a host
    has none: no probed topology, no slurm_node_overrides, no slurm_node_name). ``cached``: {host: definition} the
    controller kept from an earlier run, used for a host whose definition is incomplete now (unreachable).
    ``options``: as slurm_node_definition.
    """
    hosts = list(hosts or [])
    cached = cached or {}
    columns = [list(column or []) for column in (topologies, overrides, names)]
    for column in columns:
        column.extend([None] * (len(hosts) - len(column)))
    definitions = {}
    for host, topology, override, name in zip(hosts, *columns):
        rendered = slurm_node_definition(topology or {}, host, override or {}, node_name=name or host, **options)
        definitions[host] = rendered if rendered['complete'] or host not in cached else cached[host]
    return definitions


def _slurm_order(names):
    """Names sorted, in the order Slurm expands their compressed hostlist."""
    return expand(compress_sorted(names))


def _chunks(names, width_of):
    """Consecutive runs of ``names`` whose lines stay under _MAX_LINE (width_of(run) gives a run's line length)."""
    runs, run = [], []
    for name in names:
        if run and width_of(run + [name]) > _MAX_LINE:
            runs.append(run)
            run = []
        run.append(name)
    return runs + ([run] if run else [])


def _grouped(entries, line_of):
    """[(first node, rest, line)] for ``entries`` [(node, address or None, rest of its line)]: nodes with the same
    rest on one line."""
    groups = {}
    for node, address, rest in entries:
        groups.setdefault(rest, {})[node] = address
    lines = []
    for rest, members in groups.items():
        ordered = _slurm_order(members)
        if not any(members.values()):
            lines.append((ordered[0], rest, line_of(compress(ordered), None, rest)))
            continue
        # NodeAddr lists the addresses in the order Slurm expands NodeName.
        for run in _chunks(ordered, lambda run: len(line_of(compress(run), ','.join(members[n] or n for n in run), rest))):
            lines.append((run[0], rest, line_of(compress(run), ','.join(members[n] or n for n in run), rest)))
    return lines


def _words(line):
    """(NodeName value, NodeAddr value or None, the other words) of a NodeName or gres.conf line."""
    name, address, rest = None, None, []
    for word in line.split():
        if word.startswith('NodeName=') and name is None:
            name = word[len('NodeName='):]
        elif word.startswith('NodeAddr=') and address is None:
            address = word[len('NodeAddr='):]
        else:
            rest.append(word)
    return name, address, ' '.join(rest)


def _node_line(nodes, addresses, rest):
    return ' '.join(['NodeName=' + nodes] + (['NodeAddr=' + addresses] if addresses else []) + ([rest] if rest else []))


def slurm_node_lines(definitions):
    """slurm.conf NodeName lines: nodes whose definitions differ only in name (and address) share one hostlist line.

    ``definitions``: {inventory name: definition} as slurm_node_definitions returns them (or the cached copies the
    controller keeps, which have the same ``line``). Slurm's large-cluster guide asks for as few lines as possible.
    """
    entries = [_words(definition['line']) for definition in (definitions or {}).values()]
    return [line for first, _rest, line in sorted(_grouped(entries, _node_line), key=lambda item: numbered_key(item[0]))]


def slurm_gres_lines(definitions):
    """gres.conf lines, grouped like slurm_node_lines: the same GPU line on several nodes is one NodeName= hostlist."""
    entries = []
    for definition in (definitions or {}).values():
        for position, line in enumerate(definition.get('gres') or []):
            name, _address, rest = _words(line)
            # The position keeps each node's GPUs in their order when their lines are otherwise equal.
            entries.append((name, None, '%06d %s' % (position, rest)))
    # Every node's first GPU line comes before its second: lines sorted by position, then by their first node.
    grouped = sorted(_grouped(entries, _node_line), key=lambda item: (item[1][:6], numbered_key(item[0])))
    # Strip the position marker: 'NodeName=x 000000 Name=gpu ...' -> 'NodeName=x Name=gpu ...'.
    return [line.replace(' %s' % rest[:6], '', 1) for _first, rest, line in grouped]


def slurm_scale_settings(node_count, tree_width=0, slurmd_timeout=300, extra=None):
    """slurm.conf settings that follow the node count (Slurm's big_sys.shtml): {name: value}, in writing order.

    SlurmdTimeout as given (the guide asks for 120 s or more on large clusters; Slurm's default is 300).
    TreeWidth, the fan-out of slurmd's message tree: ``tree_width`` when above 0; with 0, about the cube root of the
    node count from 64 nodes on, and Slurm's default below. A key that ``extra`` (slurm_config_extra) sets is left
    to it: slurm.conf must not name a key twice.
    """
    settings = {'SlurmdTimeout': int(slurmd_timeout)}
    count = int(node_count or 0)
    if int(tree_width) > 0:
        settings['TreeWidth'] = int(tree_width)
    elif count >= 64:
        # round(): 1000 ** (1 / 3) is 9.999999999999998 in floating point.
        settings['TreeWidth'] = int(math.ceil(round(count ** (1.0 / 3), 9)))
    taken = {str(key).lower() for key in (extra or {})}
    return {key: value for key, value in settings.items() if key.lower() not in taken}


def slurm_node_hardware_check(line, slurmd_c_output):
    """Compare a rendered NodeName line with ``slurmd -C``'s: what would drain the node, what merely differs."""
    actual = parse_slurmd_C(slurmd_c_output)
    fatal, notes = compare_node(line, actual)
    return {'drains': bool(fatal), 'reasons': sorted(fatal), 'problems': [fatal[key] for key in sorted(fatal)],
            'differences': notes, 'slurmd_line': actual['line']}


class FilterModule:
    """Slurm node definition filters."""

    def filters(self):
        return {
            'slurm_node_definition': slurm_node_definition,
            'slurm_gpu_cores': slurm_gpu_cores,
            'slurm_node_hardware_check': slurm_node_hardware_check,
            'slurm_node_definitions': slurm_node_definitions,
            'slurm_node_lines': slurm_node_lines,
            'slurm_gres_lines': slurm_gres_lines,
            'slurm_scale_settings': slurm_scale_settings,
        }
