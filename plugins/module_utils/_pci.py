# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA GPUs and NVSwitches from PCI sysfs alone, driver or not.

A freshly imaged HGX node has no nvidia-smi yet, but the kernel lists every PCI
function under /sys/bus/pci/devices with its vendor, device and class. That is
enough to tell whether Fabric Manager (and, on NVLink-5 baseboards, NVIDIA's
NVLink subnet manager) must be installed before the driver can use the GPUs.

Device ids are those of the PCI ID Repository (pci-ids.ucw.cz, Debian's pci.ids
0.0~2025.06.09-1, vendor 10de).
"""

from __future__ import annotations

NVIDIA_VENDOR = '0x10de'
# PCI classes (base class, subclass): 0x0300 VGA controller, 0x0302 3D controller (SXM and
# most data-centre GPUs), 0x0680 "other bridge" (NVSwitch).
GPU_CLASSES = ('0x0300', '0x0302')
BRIDGE_OTHER_CLASS = '0x0680'

# NVSwitches of HGX baseboards that show up as PCI functions of the host (NVLink 3 and 4).
NVSWITCH_DEVICES = {
    '0x1af1': {'name': 'GA100 [A100 NVSwitch]', 'nvlink': 3},
    '0x22a3': {'name': 'GH100 [H100 NVSwitch]', 'nvlink': 4},
}

# Blackwell HGX GPUs (NVLink 5). Their baseboard NVSwitches are not host PCI functions: they are
# reached through the NVLink management NIC, which NVIDIA's NVLink subnet manager (nvlsm) drives
# next to Fabric Manager (Fabric Manager user guide, "Systems Using Fourth Generation NVSwitches").
NVLINK5_GPU_DEVICES = {
    '0x2901': 'GB100 [B200]',
    '0x2920': 'GB100 [TS4 / B100]',
    '0x29bc': 'GB102 [B100]',
}


def _function(tree, busid):
    base = '/sys/bus/pci/devices/' + busid
    return {
        'busid': busid,
        'vendor_id': (tree.read(base + '/vendor') or '').lower(),
        'device_id': (tree.read(base + '/device') or '').lower(),
        'class': (tree.read(base + '/class') or '').lower(),
        'numa_node': tree.read_int(base + '/numa_node'),
    }


def read_nvidia_pci(tree):
    """{'pci_gpus': [...], 'nvswitches': [...]} of the host, each sorted by bus id.

    ``tree`` is a ``_topology.SysfsTree`` (live host or recorded root).  A GPU entry
    has busid, device_id, class, numa_node and nvlink5 (an NVLink-5 HGX part); an
    NVSwitch entry has busid, device_id, name and nvlink (generation).
    """
    gpus, nvswitches = [], []
    for busid in tree.listdir('/sys/bus/pci/devices'):
        function = _function(tree, busid)
        if function['vendor_id'] != NVIDIA_VENDOR:
            continue
        if function['class'][:6] in GPU_CLASSES:
            function['nvlink5'] = function['device_id'] in NVLINK5_GPU_DEVICES
            gpus.append(function)
        elif function['class'][:6] == BRIDGE_OTHER_CLASS and function['device_id'] in NVSWITCH_DEVICES:
            known = NVSWITCH_DEVICES[function['device_id']]
            function.update(name=known['name'], nvlink=known['nvlink'])
            nvswitches.append(function)
    return {'pci_gpus': gpus, 'nvswitches': nvswitches}
