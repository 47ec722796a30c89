# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPUs and NVSwitches from PCI sysfs, without the driver (fixtures/topology/*_bare)."""

from __future__ import annotations

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._pci import read_nvidia_pci
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree
from topology_support import recorded_root

# Written from the fixture's construction (README): bus ids of make_fixtures.make_hgx_h100's
# endpoints, device ids of the PCI ID Repository.
HGX_GPU_BUSIDS = ['0000:18:00.0', '0000:1a:00.0', '0000:3a:00.0', '0000:3c:00.0',
                  '0000:9d:00.0', '0000:9f:00.0', '0000:bd:00.0', '0000:bf:00.0']
EXPECTED = {
    'hgx_h100_bare': {'gpus': ['0x2330'] * 8, 'busids': HGX_GPU_BUSIDS, 'nvlink5': [False] * 8,
                      'nvswitches': [('0000:0%d:00.0' % bus, '0x22a3', 4) for bus in (3, 4, 5, 6)]},
    'hgx_b200_bare': {'gpus': ['0x2901'] * 8, 'busids': HGX_GPU_BUSIDS, 'nvlink5': [True] * 8, 'nvswitches': []},
    'h200_vm': {'gpus': ['0x2335'] * 2, 'busids': ['0000:00:06.0', '0000:00:07.0'], 'nvlink5': [False] * 2, 'nvswitches': []},
    'a100_pcie': {'gpus': ['0x20b5'] * 8, 'nvswitches': []},
    'cpu_only': {'gpus': [], 'busids': [], 'nvlink5': [], 'nvswitches': []},
}


@pytest.mark.parametrize('case', sorted(EXPECTED))
def test_nvidia_functions_from_sysfs(case, tmp_path):
    found = read_nvidia_pci(SysfsTree(recorded_root(case, tmp_path)))
    expected = EXPECTED[case]
    assert [gpu['device_id'] for gpu in found['pci_gpus']] == expected['gpus']
    if 'busids' in expected:
        assert [gpu['busid'] for gpu in found['pci_gpus']] == expected['busids']
        assert [gpu['nvlink5'] for gpu in found['pci_gpus']] == expected['nvlink5']
    assert [(switch['busid'], switch['device_id'], switch['nvlink']) for switch in found['nvswitches']] == expected['nvswitches']


def test_bare_root_has_no_nvidia_smi_gpus(tmp_path):
    """The point of the PCI facts: the driverless root has them while nvidia-smi's list is empty."""
    from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner
    from ansible_collections.trainstack.cluster.plugins.module_utils._topology import collect_topology
    root = recorded_root('hgx_h100_bare', tmp_path)
    facts = collect_topology(SysfsTree(root), CommandRunner(root))
    assert (len(facts['gpus']), facts['nvswitch'], len(facts['pci_gpus']), len(facts['nvswitches'])) == (0, False, 8, 4)
    assert (facts['sources']['gpus'], facts['sources']['pci_gpus'], facts['sources']['nvswitches']) == (None, 'sysfs', 'sysfs')


def test_other_vendors_and_other_nvidia_bridges_are_not_switches(tmp_path):
    """An ASPEED VGA controller is no NVIDIA GPU; an NVIDIA 0x0680 function with an unknown id is no NVSwitch."""
    devices = tmp_path / 'sys' / 'bus' / 'pci' / 'devices'
    for busid, vendor, device, pci_class in (('0000:02:00.0', '0x1a03', '0x2000', '0x030000'),
                                             ('0000:03:00.0', '0x10de', '0x0bad', '0x068000'),
                                             ('0000:04:00.0', '0x10de', '0x2335', '0x030200')):
        (devices / busid).mkdir(parents=True)
        for name, value in (('vendor', vendor), ('device', device), ('class', pci_class)):
            (devices / busid / name).write_text(value + '\n', encoding='utf-8')
    found = read_nvidia_pci(SysfsTree(str(tmp_path)))
    assert [gpu['busid'] for gpu in found['pci_gpus']] == ['0000:04:00.0']
    assert found['nvswitches'] == []
