# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A human-readable summary of topology facts (controller side, pure)."""

from __future__ import annotations


def _table(headers, rows):
    """Left-aligned columns separated by two spaces."""
    cells = [[str(cell) for cell in row] for row in [headers] + rows]
    widths = [max(len(row[col]) for row in cells) for col in range(len(headers))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]


def _dash(value):
    return "-" if value is None or value == "" else value


def _link(pcie):
    pcie = pcie or {}
    speed = pcie.get("max_link_speed")
    width = pcie.get("max_link_width")
    if not speed and not width:
        return "-"
    return "%s x%s" % (str(speed or "?").replace(" PCIe", ""), _dash(width))


def _cpu_lines(topology):
    cpu = topology.get("cpu") or {}
    memory = topology.get("memory") or {}
    lines = []
    if cpu:
        lines.append("CPU: %s, %s socket(s) x %s cores x %s threads (%s, family %s model %s)" % (
            _dash(cpu.get("model_name")), _dash(cpu.get("sockets")), _dash(cpu.get("cores_per_socket")),
            _dash(cpu.get("threads_per_core")), _dash(cpu.get("arch")), _dash(cpu.get("family_id")),
            _dash(cpu.get("model_id"))))
    if memory:
        lines.append("Memory: %s MiB" % _dash(memory.get("total_mib")))
    for node in topology.get("numa_nodes") or []:
        lines.append("NUMA node %s: cpus %s" % (node.get("id"), _dash(node.get("cpulist"))))
    return lines


def _gpu_lines(gpus, nvswitch):
    if not gpus:
        return ["GPUs: none"]
    rows = []
    for gpu in gpus:
        nvlink = gpu.get("nvlink") or {}
        rows.append([gpu.get("index"), _dash(gpu.get("name")), _dash(gpu.get("busid")), _dash(gpu.get("sm")),
                     _dash(gpu.get("memory_mib")), _dash(gpu.get("numa_node")), _link(gpu.get("pcie")),
                     _dash(nvlink.get("active_links")), _dash(gpu.get("mig_mode"))])
    header = "GPUs: %d%s" % (len(gpus), ", NVSwitch" if nvswitch else "")
    return [header] + _table(["GPU", "NAME", "BUS ID", "SM", "MEM MiB", "NUMA", "PCIE MAX", "NVLINKS", "MIG"], rows)


def _hca_lines(hcas):
    if not hcas:
        return ["HCAs: none"]
    rows = []
    for hca in hcas:
        for port in hca.get("ports") or []:
            rows.append(["%s:%s" % (hca.get("name"), port.get("port")), _dash(port.get("state")),
                         _dash(port.get("rate")), _dash(port.get("link_layer")), _dash(hca.get("busid")),
                         _dash(hca.get("numa_node")), ",".join(hca.get("netdevs") or []) or "-"])
    return ["HCAs: %d" % len(hcas)] + _table(["PORT", "STATE", "RATE", "LINK", "BUS ID", "NUMA", "NETDEV"], rows)


def _nic_lines(nics):
    physical = [nic for nic in nics or [] if not nic.get("virtual")]
    if not physical:
        return ["Ethernet: none (physical)"]
    rows = [[nic.get("name"), _dash(nic.get("operstate")), _dash(nic.get("speed_mbps")), _dash(nic.get("busid")),
             _dash(nic.get("rdma_device"))] for nic in physical]
    return ["Ethernet: %d physical" % len(physical)] + _table(["NIC", "STATE", "MB/S", "BUS ID", "RDMA"], rows)


def _matrix_lines(distances):
    matrix = (distances or {}).get("matrix") or {}
    if not matrix:
        return []
    rows_keys = list(matrix)
    columns = list(matrix[rows_keys[0]])
    rows = [[key] + [matrix[key].get(column, "-") for column in columns] for key in rows_keys]
    return ["Distances (%s):" % distances.get("source", "-")] + _table([""] + columns, rows)


def topology_summary(topology, hostname=""):
    """Text table of one host's topology facts: CPU/NUMA, GPUs, HCA ports, NICs, distance matrix."""
    topology = topology or {}
    lines = ["== %s" % hostname] if hostname else []
    lines += _cpu_lines(topology)
    lines += _gpu_lines(topology.get("gpus") or [], topology.get("nvswitch"))
    lines += _hca_lines(topology.get("hcas") or [])
    lines += _nic_lines(topology.get("ethernet") or [])
    lines += _matrix_lines(topology.get("distances"))
    return "\n".join(lines) + "\n"


class FilterModule:
    """Topology summary filter."""

    def filters(self):
        return {"topology_summary": topology_summary}
