# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.trainstack.cluster.plugins.modules import topology_facts
from topology_support import (CASES, TOPOLOGY_FIXTURES, UNIT_DIR, expectation_params, facts_json, golden, recorded_root,
                              run_module, value_at)


@pytest.fixture(scope='module')
def roots(tmp_path_factory):
    return {case: recorded_root(case, tmp_path_factory.mktemp(case)) for case in CASES}


def gather(root, capsys, **options):
    result = run_module(topology_facts.main, dict(options, root=root), capsys)
    assert result['changed'] is False
    return result['ansible_facts']['trainstack_topology']


@pytest.mark.parametrize('case', CASES)
def test_facts_match_reviewed_golden(case, roots, capsys):
    actual = facts_json(gather(roots[case], capsys))
    assert actual == golden(os.path.join(TOPOLOGY_FIXTURES, case, 'expected_facts.json'), actual)


EXPECTATIONS = {
    'h200_vm': {
        'cpu.arch': 'x86_64', 'cpu.vendor': 'GenuineIntel', 'cpu.family_id': 6, 'cpu.model_id': 207,
        'cpu.sockets': 1, 'cpu.cores_per_socket': 32, 'cpu.threads_per_core': 1,
        'numa_nodes': [{'id': 0, 'cpulist': '0-31', 'cpumap': 'ffffffff'}],
        'memory': None,
        'gpus.0.busid': '0000:00:06.0', 'gpus.1.busid': '0000:00:07.0', 'gpus.0.numa_node': -1,
        'gpus.0.compute_capability': '9.0', 'gpus.0.sm': 90, 'gpus.0.memory_mib': 143771,
        'gpus.0.driver_version': '580.159.04', 'gpus.0.uuid': 'GPU-57481031-c6e7-55ea-899c-c8d97c5043db',
        'gpus.0.pcie.max_link_width': 16, 'gpus.0.pcie.max_link_speed': '32.0 GT/s PCIe', 'gpus.0.ancestry': [],
        'gpus.0.nvlink.active_links': 18, 'gpus.0.nvlink.link_speed_gbs': 26.562,
        'gpus.0.nvlink.peers': [{'index': 1, 'busid': '0000:00:07.0', 'count': 18}],
        'nvswitch': True, 'hcas': [],
        'ethernet.0.name': 'eth0', 'ethernet.0.virtual': False, 'ethernet.0.busid': '0000:00:03.0',
        'ethernet.1.name': 'ifb0', 'ethernet.1.virtual': True, 'ethernet.3.name': 'lo', 'ethernet.3.virtual': True,
        'distances': {'source': 'nvidia-smi', 'matrix': {'GPU0': {'GPU0': 'X', 'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18', 'GPU1': 'X'}}},
    },
    'hgx_h100': {
        'cpu.sockets': 2, 'cpu.cores_per_socket': 56, 'cpu.threads_per_core': 2, 'cpu.model_id': 143,
        'memory.total_mib': 2063874, 'numa_nodes.1.cpulist': '56-111,168-223',
        'numa_nodes.0.cpumap': '00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff',
        'gpus.7.busid': '0000:bf:00.0', 'gpus.4.numa_node': 1, 'gpus.0.mig_mode': 'Disabled',
        'gpus.0.pcie.current_link_speed': '2.5 GT/s PCIe',
        'gpus.0.ancestry.0.busid': '0000:15:01.0', 'gpus.0.ancestry.1.busid': '0000:16:00.0', 'gpus.0.ancestry.2.busid': '0000:17:00.0',
        'gpus.3.nvlink.active_links': 18, 'nvswitch': True,
        'hcas.0.name': 'mlx5_0', 'hcas.0.busid': '0000:19:00.0', 'hcas.0.ports.0.state': 'ACTIVE',
        'hcas.0.ports.0.speed_mbps': 400000, 'hcas.0.ports.0.port_guid': 'a088:c203:0045:0010', 'hcas.0.netdevs': ['ibp25s0'],
        'distances.matrix.GPU0.mlx5_0': 'PIX', 'distances.matrix.GPU0.mlx5_2': 'NODE', 'distances.matrix.GPU0.mlx5_4': 'SYS',
        'distances.matrix.GPU0.GPU7': 'NV18',
        'ethernet.0.name': 'docker0', 'ethernet.0.virtual': True, 'ethernet.1.name': 'eno1', 'ethernet.1.virtual': False,
        'ethernet.3.name': 'veth1a2b3c4', 'ethernet.3.virtual': True,
    },
    'a100_pcie': {
        'cpu.vendor': 'AuthenticAMD', 'cpu.family_id': 25, 'gpus.0.sm': 80, 'gpus.0.nvlink.peers': [],
        'gpus.0.nvlink.active_links': 0, 'nvswitch': False,
        'distances.matrix.GPU0.GPU1': 'NODE', 'distances.matrix.GPU0.GPU4': 'SYS', 'distances.matrix.GPU1.mlx5_0': 'PHB',
        'distances.source': 'nvidia-smi', 'gpus.5.affinity.cpu_affinity': '64-127,192-255',
    },
    'cpu_only': {
        'gpus': [], 'hcas': [], 'nvswitch': False, 'distances': {'source': 'none', 'matrix': {}},
        'cpu.model_name': 'AMD EPYC 9354 32-Core Processor', 'memory.total_bytes': 270175137792,
        'ethernet.1.name': 'eno1np0', 'ethernet.1.speed_mbps': 25000,
    },
    'ib_down_roce': {
        'hcas.0.ports.0.state': 'DOWN', 'hcas.0.ports.0.phys_state': 'Disabled', 'hcas.0.ports.0.link_layer': 'InfiniBand',
        'hcas.1.ports.0.state': 'ACTIVE', 'hcas.1.ports.0.link_layer': 'Ethernet', 'hcas.1.ports.0.port_guid': None,
        'hcas.1.ports.0.gids.3': {'index': 3, 'gid': '0000:0000:0000:0000:0000:ffff:0a0a:0115', 'type': 'RoCE v2',
                                  'netdev': 'ens3f1np1', 'ipv4': '10.10.1.21'},
        'ethernet.0.rdma_device': 'mlx5_1', 'gpus.0.mig_mode': None, 'gpus.0.sm': 89,
        'distances.source': 'derived', 'distances.matrix.GPU0.mlx5_1': 'NODE', 'distances.matrix.mlx5_0.mlx5_1': 'PIX',
    },
}


@pytest.mark.parametrize(('case', 'path', 'expected'), expectation_params(EXPECTATIONS))
def test_fact_values(case, path, expected, roots, capsys):
    assert value_at(gather(roots[case], capsys), path) == expected


@pytest.mark.parametrize('case', ['hgx_h100', 'a100_pcie'])
def test_derived_matrix_equals_nvidia_smi(case, roots, capsys, tmp_path):
    """Without topo -m, sysfs ancestry and NUMA give the same matrix nvidia-smi printed."""
    printed = gather(roots[case], capsys)['distances']
    root = recorded_root(case, tmp_path)
    os.remove(os.path.join(root, '.commands', 'nvidia-smi_topo-m.txt'))
    derived = gather(root, capsys)['distances']
    assert (printed['source'], derived['source']) == ('nvidia-smi', 'derived')
    assert derived['matrix'] == printed['matrix']


def test_empty_root_gives_empty_facts(tmp_path, capsys):
    assert gather(str(tmp_path), capsys) == {
        'cpu': None, 'numa_nodes': [], 'memory': None, 'gpus': [], 'nvswitch': False, 'hcas': [], 'ethernet': [],
        'distances': {'source': 'none', 'matrix': {}}, 'warnings': [], 'pci_gpus': [], 'nvswitches': [],
        'sources': {'cpu': None, 'memory': None, 'numa_nodes': None, 'gpus': None, 'gpu_pci': None, 'gpu_affinity': None,
                    'pci_gpus': None, 'nvswitches': None,
                    'nvlink': None, 'hcas': None, 'ethernet': None, 'distances': None},
    }


def test_gpus_without_sysfs_keep_nvidia_smi_facts(tmp_path, capsys):
    root = recorded_root('h200_vm', tmp_path)
    os.rename(os.path.join(root, 'sys'), os.path.join(root, 'sys-gone'))
    gpu = gather(root, capsys)['gpus'][0]
    assert (gpu['busid'], gpu['sm'], gpu['numa_node'], gpu['pcie']['max_link_width'], gpu['ancestry']) == ('0000:00:06.0', 90, None, None, [])


def test_nvswitch_from_fabric_state_only(tmp_path, capsys):
    """The VM sees no NVSwitch PCI function and NV18 to one peer: only nvidia-smi -q tells."""
    root = recorded_root('h200_vm', tmp_path)
    os.remove(os.path.join(root, '.commands', 'nvidia-smi_q.txt'))
    assert gather(root, capsys)['nvswitch'] is False


def test_check_mode_reads_the_same(roots, capsys):
    facts = gather(roots['h200_vm'], capsys)
    assert gather(roots['h200_vm'], capsys, _ansible_check_mode=True) == facts


def test_runs_as_a_module_process(roots, tmp_path):
    """The way Ansible runs it: python module.py args.json, with the collection on the path."""
    args = tmp_path / 'args.json'
    args.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'root': roots['hgx_h100']}}))
    collections = os.path.join(os.path.dirname(os.path.dirname(UNIT_DIR)), 'collections')
    completed = subprocess.run([sys.executable, topology_facts.__file__, str(args)], capture_output=True, text=True, check=True,
                               env=dict(os.environ, PYTHONPATH=collections + os.pathsep + os.environ.get('PYTHONPATH', '')))
    facts = json.loads(completed.stdout)['ansible_facts']['trainstack_topology']
    assert [gpu['index'] for gpu in facts['gpus']] == list(range(8))


def test_unreadable_topo_is_a_warning_and_the_matrix_is_derived(tmp_path, capsys, monkeypatch):
    warned = []
    # Ansible keeps warnings process-wide (deduplicated): catch the module's own calls instead.
    monkeypatch.setattr(topology_facts.AnsibleModule, 'warn', lambda self, warning: warned.append(warning))
    root = recorded_root('hgx_h100', tmp_path)
    with open(os.path.join(root, '.commands', 'nvidia-smi_topo-m.txt'), 'w', encoding='utf-8') as handle:
        handle.write('Failed to initialize NVML: Driver/library version mismatch\n')
    result = run_module(topology_facts.main, {'root': root}, capsys)
    facts = result['ansible_facts']['trainstack_topology']
    assert facts['distances']['source'] == 'derived' and facts['sources']['distances'] == 'derived'
    assert any('could not be read: distances are derived from sysfs' in warning for warning in facts['warnings'])
    assert warned == facts['warnings']
