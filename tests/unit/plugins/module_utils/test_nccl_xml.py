# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import copy
import os

import pytest

import nccl_xml_checker
from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_xml import (
    TopologyError, build_topology_xml, nccl_link_speed, _nccl_parents,
)
from topology_support import GPU_CASES, NCCL_XML_GOLDEN, TOPOLOGY_FIXTURES, golden, probe_recorded_cases


@pytest.fixture(scope='module')
def facts(tmp_path_factory):
    return probe_recorded_cases(tmp_path_factory)


@pytest.mark.parametrize('case', GPU_CASES)
def test_golden_xml(case, facts):
    actual = build_topology_xml(facts[case])
    assert actual == golden(os.path.join(NCCL_XML_GOLDEN, case + '.xml'), actual)
    nccl_xml_checker.assert_valid(actual)


def test_no_gpu_gives_none(facts):
    assert build_topology_xml(facts['cpu_only']) is None


def _elements(text, tag):
    return [line.strip() for line in text.splitlines() if line.strip().startswith('<%s ' % tag) or line.strip() == '<%s>' % tag]


def test_vm_file_describes_the_host_better_than_nccls_own_dump(facts):
    """Same GPUs and NVLinks as NCCL's dump of the real H200 VM, with a real NUMA node and link width."""
    ours = build_topology_xml(facts['h200_vm'])
    with open(os.path.join(TOPOLOGY_FIXTURES, 'h200_vm', 'nccl-topo-dump.xml'), encoding='utf-8') as handle:
        dump = handle.read()
    assert _elements(ours, 'nvlink') == _elements(dump, 'nvlink')
    assert [line.split(' link_speed=')[0] for line in _elements(ours, 'pci')] == [line.split(' link_speed=')[0] for line in _elements(dump, 'pci')]
    assert 'numaid="0" affinity="ffffffff"' in ours and 'link_width="16"' in ours
    # What the generated file fixes: NCCL's own dump has numaid -1, no affinity, link_width 0.
    assert nccl_xml_checker.check(dump) == [
        ('value', 'line 2: numaid -1: NCCL then reads node-1/cpumap and fails'),
        ('required', 'line 2: <cpu> needs affinity'),
        ('value', 'line 3: link_width 0'),
        ('value', 'line 11: link_width 0'),
    ]


def test_nvswitch_uses_nccls_virtual_target_and_peers_use_busids(facts):
    hgx = build_topology_xml(facts['hgx_h100'])
    assert hgx.count('<nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>') == 8
    direct = copy.deepcopy(facts['h200_vm'])
    direct['nvswitch'] = False
    text = build_topology_xml(direct)
    nccl_xml_checker.assert_valid(text)
    assert '<nvlink target="0000:00:07.0" count="18" tclass="0x030200"/>' in text


def test_pcie_gpus_have_no_nvlink_and_down_ports_no_net(facts):
    assert '<nvlink' not in build_topology_xml(facts['a100_pcie'])
    roce = build_topology_xml(facts['ib_down_roce'])
    assert 'mlx5_0' not in roce and '<net name="mlx5_1" speed="100000"/>' in roce


def test_switches_nest_like_nccls_sysfs_walk(facts):
    lines = build_topology_xml(facts['hgx_h100']).splitlines()
    switch = lines.index('    <pci busid="0000:16:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">')
    assert lines[switch + 1].startswith('      <pci busid="0000:18:00.0" class="0x030200"')
    assert '0000:15:01.0' not in '\n'.join(lines) and '0000:17:00.0' not in '\n'.join(lines)


@pytest.mark.parametrize('depth, expected', [
    (0, []), (1, []), (2, ['b0']), (3, ['b1']), (4, ['b0', 'b2']), (5, ['b1', 'b3']),
])
def test_nccl_parents_climb_two_levels(depth, expected):
    ancestry = [{'busid': 'b%d' % index} for index in range(depth)]
    assert [bridge['busid'] for bridge, _upstream in _nccl_parents(ancestry)] == expected


@pytest.mark.parametrize('sysfs, nccl', [
    ('32.0 GT/s PCIe', '32.0 GT/s PCIe'), ('16 GT/s', '16.0 GT/s PCIe'), ('8.0 GT/s PCIe', '8.0 GT/s PCIe'),
    ('2.5 GT/s', '2.5 GT/s PCIe'), ('5 GT/s', '5.0 GT/s PCIe'), ('64.0 GT/s PCIe', '64.0 GT/s PCIe'),
    ('Unknown', None), ('', None), (None, None), ('20 GT/s', None),
])
def test_link_speed_spelling(sysfs, nccl):
    assert nccl_link_speed(sysfs) == nccl


def test_slowest_link_on_the_path_wins(facts):
    topology = copy.deepcopy(facts['hgx_h100'])
    for bridge in topology['gpus'][0]['ancestry']:
        if bridge['busid'] == '0000:17:00.0':
            bridge['pcie']['max_link_speed'], bridge['pcie']['max_link_width'] = '16.0 GT/s PCIe', 8
    text = build_topology_xml(topology)
    assert 'busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" subsystem_vendor="0x10de" ' \
           'subsystem_device="0x16c1" link_speed="16.0 GT/s PCIe" link_width="8"' in text


def test_gpu_without_sysfs_uses_nvidia_smi_link_facts(facts):
    topology = copy.deepcopy(facts['hgx_h100'])
    gpu = topology['gpus'][0]
    gpu['pcie'] = {'current_link_speed': None, 'current_link_width': None, 'max_link_speed': None, 'max_link_width': None}
    gpu['ancestry'] = []
    text = build_topology_xml(topology)
    nccl_xml_checker.assert_valid(text)
    assert 'busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" subsystem_vendor="0x10de" ' \
           'subsystem_device="0x16c1" link_speed="32.0 GT/s PCIe" link_width="16"' in text


def test_gpu_without_any_link_data_is_refused(facts):
    topology = copy.deepcopy(facts['h200_vm'])
    topology['gpus'][0]['pcie']['max_link_speed'] = None
    with pytest.raises(TopologyError, match='no readable PCIe link'):
        build_topology_xml(topology)


def test_too_many_children_is_refused(facts):
    topology = copy.deepcopy(facts['h200_vm'])
    template = topology['gpus'][0]
    topology['gpus'] = []
    for index in range(33):
        gpu = copy.deepcopy(template)
        gpu['index'], gpu['busid'] = index, '0000:%02x:00.0' % (index + 1)
        topology['gpus'].append(gpu)
    with pytest.raises(TopologyError, match='33 children'):
        build_topology_xml(topology)


def test_numa_minus_one_without_numa_sysfs_uses_online_cpus(facts):
    topology = copy.deepcopy(facts['h200_vm'])
    topology['numa_nodes'] = []
    topology['cpu']['online'] = '0-39'
    assert '<cpu numaid="0" affinity="000000ff,ffffffff" arch="x86_64"' in build_topology_xml(topology)


def test_huge_affinity_is_left_to_nccl(facts):
    topology = copy.deepcopy(facts['h200_vm'])
    topology['numa_nodes'][0]['cpumap'] = ','.join(['ffffffff'] * 32)
    text = build_topology_xml(topology)
    assert 'affinity=' not in text


def test_arm_cpu_has_no_x86_identity(facts):
    topology = copy.deepcopy(facts['h200_vm'])
    topology['cpu'].update(arch='aarch64', vendor=None, family_id=None, model_id=None)
    text = build_topology_xml(topology)
    nccl_xml_checker.assert_valid(text)
    assert '<cpu numaid="0" affinity="ffffffff" arch="arm64">' in text
