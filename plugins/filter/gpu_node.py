# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decisions of the nvidia_driver role about one GPU node (controller side, pure).

- gpu_fabric_plan: does the node need Fabric Manager (and NVIDIA's NVLink subnet manager)?
  Decided from the PCI facts of topology_facts, which exist before any driver is installed.
- gpu_reboot_drain: may the node be drained in Slurm before its reboot, or does Slurm not
  manage it yet (first run: site.yml installs the GPU stack before Slurm)?
- gpu_health_gate: after the reboot, may the node go back to Slurm?
"""

from __future__ import annotations

import re

FABRIC_MODES = ("auto", "install", "skip")
_DRIVER_VERSION = re.compile(r"Driver Version:\s*([0-9][0-9.]*)")
# A GPU's first row in nvidia-smi's table: "|   0  NVIDIA H200    On  |   00000000:00:06.0 Off |".
_GPU_ROW = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s")


def gpu_fabric_plan(topology, mode="auto"):
    """{'fabricmanager': bool, 'nvlsm': bool, 'reason': str} for a host's trainstack_topology.

    auto: Fabric Manager where NVSwitches are PCI functions of the host (HGX A100/H100/H200,
    whatever the GPU count), Fabric Manager and nvlsm where the GPUs are NVLink-5 HGX parts
    (B200/B100: their NVSwitches are reached through the NVLink management NIC, not PCI).
    """
    if mode not in FABRIC_MODES:
        raise ValueError("nvidia_driver_fabricmanager must be one of %s, got %r" % (", ".join(FABRIC_MODES), mode))
    topology = topology or {}
    gpus = topology.get("pci_gpus") or []
    switches = topology.get("nvswitches") or []
    nvlink5 = [gpu for gpu in gpus if gpu.get("nvlink5")]
    if mode == "skip":
        return {"fabricmanager": False, "nvlsm": False, "reason": "nvidia_driver_fabricmanager is skip"}
    if mode == "install":
        return {"fabricmanager": True, "nvlsm": bool(nvlink5), "reason": "nvidia_driver_fabricmanager is install"
                + (" (NVLink-5 GPUs: with nvlsm)" if nvlink5 else "")}
    if switches:
        ids = sorted({switch["device_id"] for switch in switches})
        return {"fabricmanager": True, "nvlsm": False,
                "reason": "%d NVSwitch PCI function(s) (%s) and %d NVIDIA GPU(s) on the PCI bus"
                          % (len(switches), ", ".join(ids), len(gpus))}
    if nvlink5:
        ids = sorted({gpu["device_id"] for gpu in nvlink5})
        return {"fabricmanager": True, "nvlsm": True,
                "reason": "%d NVLink-5 HGX GPU(s) (%s): Fabric Manager and the NVLink subnet manager" % (len(nvlink5), ", ".join(ids))}
    return {"fabricmanager": False, "nvlsm": False,
            "reason": "no NVSwitch on the PCI bus (%d NVIDIA GPU(s))" % len(gpus)}


def gpu_reboot_drain(probe, controller, in_compute, node):
    """{'drain': bool, 'why': str}: drain `node` through `controller` before its reboot?

    probe is the registered result of `scontrol show node <node>` run on the controller (rc, stdout,
    stderr; rc 127 or a 'failed' without rc when scontrol is missing), or None when it did not run.
    Only a node that slurmctld answers for can be drained; any other node runs no Slurm jobs yet.
    """
    if not controller:
        return {"drain": False, "why": "no Slurm controller in the inventory (nvidia_driver_reboot_slurm_controller is empty)"}
    if not in_compute:
        return {"drain": False, "why": "%s is not in the slurm_compute group" % node}
    probe = probe or {}
    if probe.get("skipped") or not probe:
        return {"drain": False, "why": "Slurm was not asked about %s" % node}
    rc = probe.get("rc")
    out = "%s\n%s" % (probe.get("stdout") or "", probe.get("stderr") or "")
    if rc == 0 and re.search(r"^NodeName=%s\s" % re.escape(node), probe.get("stdout") or "", re.M):
        return {"drain": True, "why": "Slurm on %s manages %s" % (controller, node)}
    # ansible.builtin.command reports a missing executable as rc 2 with "No such file or directory".
    if rc in (None, 127) or "No such file or directory" in (probe.get("msg") or ""):
        return {"drain": False, "why": "scontrol is not installed on %s" % controller}
    if re.search(r"Node %s not found" % re.escape(node), out) or "Invalid node name" in out:
        return {"drain": False, "why": "Slurm does not know %s (not in slurm.conf)" % node}
    first = next((line.strip() for line in out.splitlines() if line.strip()), "no output")
    return {"drain": False, "why": "slurmctld does not answer on %s (%s)" % (controller, first)}


def parse_nvidia_smi(text):
    """{'driver_version': str or None, 'gpus': [{'index', 'name', 'persistence', 'busid'}]} of nvidia-smi's table."""
    text = text or ""
    match = _DRIVER_VERSION.search(text)
    gpus = []
    for line in text.splitlines():
        row = _GPU_ROW.match(line)
        if row:
            gpus.append({"index": int(row.group(1)), "name": row.group(2).strip(),
                         "persistence": row.group(3) == "On", "busid": row.group(4).lower()})
    return {"driver_version": match.group(1) if match else None, "gpus": gpus}


def gpu_health_gate(nvidia_smi, kernel_module_version, installed_version, expected_gpus,
                    fabricmanager_required=False, fabricmanager_active=False):
    """{'healthy': bool, 'failed': [check, ...], 'reason': str} of a node after its reboot.

    Checks: the kernel module runs the installed package's version; nvidia-smi lists the
    expected number of GPUs; persistence mode is on for every GPU; Fabric Manager is active
    where it is required. The reason names each failed check (it becomes Slurm's drain reason).
    """
    smi = parse_nvidia_smi(nvidia_smi)
    failed = []
    module = (kernel_module_version or "").strip()
    installed = (installed_version or "").strip()
    if not module or module != installed:
        failed.append("kernel module %s != package %s" % (module or "none", installed or "none"))
    count = len(smi["gpus"])
    expected = int(expected_gpus or 0)
    if count == 0 or (expected and count != expected):
        failed.append("nvidia-smi sees %d GPU(s), %s expected" % (count, expected or "some"))
    off = [str(gpu["index"]) for gpu in smi["gpus"] if not gpu["persistence"]]
    if off:
        failed.append("persistence mode off on GPU %s" % ",".join(off))
    if fabricmanager_required and not fabricmanager_active:
        failed.append("nvidia-fabricmanager not active")
    reason = "trainstack nvidia_driver health: " + ("ok" if not failed else "; ".join(failed))
    return {"healthy": not failed, "failed": failed, "reason": reason}


class FilterModule:
    def filters(self):
        return {
            "gpu_fabric_plan": gpu_fabric_plan,
            "gpu_reboot_drain": gpu_reboot_drain,
            "gpu_health_gate": gpu_health_gate,
        }
