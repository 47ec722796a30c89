# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_fabric_plan, gpu_reboot_drain and gpu_health_gate on recorded facts and outputs."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.trainstack.cluster.plugins.filter import gpu_node

UNIT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEALTH = os.path.join(UNIT, 'fixtures', 'gpu_health')
TOPOLOGY = os.path.join(UNIT, 'fixtures', 'topology')


def recorded(name):
    with open(os.path.join(HEALTH, name), encoding='utf-8') as handle:
        return handle.read()


def topology(case):
    with open(os.path.join(TOPOLOGY, case, 'expected_facts.json'), encoding='utf-8') as handle:
        data = json.load(handle)
    return data.get('trainstack_topology', data)


# ---------------------------------------------------------------- Fabric Manager
@pytest.mark.parametrize(('case', 'mode', 'fabricmanager', 'nvlsm'), [
    ('hgx_h100_bare', 'auto', True, False),     # driverless: 4 NVSwitch functions 10de:22a3
    ('hgx_h100', 'auto', True, False),
    ('hgx_b200_bare', 'auto', True, True),      # B200 10de:2901: NVLink 5, switches not on PCI
    ('h200_vm', 'auto', False, False),          # guest of a shared-NVSwitch host: FM runs outside
    ('a100_pcie', 'auto', False, False),
    ('cpu_only', 'auto', False, False),
    ('hgx_h100_bare', 'skip', False, False),
    ('cpu_only', 'install', True, False),
    ('hgx_b200_bare', 'install', True, True),
])
def test_fabric_plan_from_pci_facts(case, mode, fabricmanager, nvlsm):
    plan = gpu_node.gpu_fabric_plan(topology(case), mode)
    assert (plan['fabricmanager'], plan['nvlsm']) == (fabricmanager, nvlsm)


def test_fabric_plan_reason_names_the_evidence():
    assert gpu_node.gpu_fabric_plan(topology('hgx_h100_bare'))['reason'] == \
        '4 NVSwitch PCI function(s) (0x22a3) and 8 NVIDIA GPU(s) on the PCI bus'


@pytest.mark.parametrize('gpus', [4, 8, 16])
def test_fabric_plan_does_not_count_gpus(gpus):
    facts = {'pci_gpus': [{'device_id': '0x2330', 'nvlink5': False}] * gpus,
             'nvswitches': [{'device_id': '0x22a3'}] * (gpus // 2)}
    assert gpu_node.gpu_fabric_plan(facts)['fabricmanager'] is True


def test_fabric_plan_refuses_unknown_mode():
    with pytest.raises(ValueError, match='nvidia_driver_fabricmanager'):
        gpu_node.gpu_fabric_plan({}, 'yes')


# ---------------------------------------------------------------- drain before reboot
SCONTROL_SHOW_NODE = ('NodeName=gpu01 Arch=x86_64 CoresPerSocket=56\n   CPUAlloc=0 CPUEfctv=224 CPUTot=224\n'
                      '   State=IDLE ThreadsPerCore=2\n')


@pytest.mark.parametrize(('probe', 'controller', 'in_compute', 'drain', 'why'), [
    ({'rc': 0, 'stdout': SCONTROL_SHOW_NODE, 'stderr': ''}, 'ctl01', True, True, 'Slurm on ctl01 manages gpu01'),
    (None, '', True, False, 'no Slurm controller in the inventory (nvidia_driver_reboot_slurm_controller is empty)'),
    (None, 'ctl01', False, False, 'gpu01 is not in the slurm_compute group'),
    # ansible.builtin.command without the executable (recorded on this machine with a missing command).
    ({'rc': 2, 'failed': True, 'msg': "Error executing command: [Errno 2] No such file or directory: b'scontrol'"},
     'ctl01', True, False, 'scontrol is not installed on ctl01'),
    # Debian 12 scontrol (slurm-client 22.05), slurm.conf naming another node, slurmctld down (recorded on this machine).
    ({'rc': 1, 'stdout': '', 'stderr': 'slurm_load_node error: Unable to contact slurm controller (connect failure)'},
     'ctl01', True, False, 'slurmctld does not answer on ctl01 (slurm_load_node error: Unable to contact slurm controller (connect failure))'),
    # scontrol without any slurm.conf (recorded on this machine).
    ({'rc': 1, 'stdout': '', 'stderr': 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n'
      'scontrol: fatal: Could not establish a configuration source'},
     'ctl01', True, False, 'slurmctld does not answer on ctl01 (scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host)'),
    ({'rc': 1, 'stdout': 'Node gpu01 not found\n', 'stderr': ''}, 'ctl01', True, False, 'Slurm does not know gpu01 (not in slurm.conf)'),
    ({'skipped': True}, 'ctl01', True, False, 'Slurm was not asked about gpu01'),
])
def test_reboot_drain(probe, controller, in_compute, drain, why):
    assert gpu_node.gpu_reboot_drain(probe, controller, in_compute, 'gpu01') == {'drain': drain, 'why': why}


# ---------------------------------------------------------------- health gate after reboot
def test_parse_recorded_tables():
    h200 = gpu_node.parse_nvidia_smi(recorded('h200_2gpu_580.txt'))
    assert h200['driver_version'] == '580.159.04'
    assert [(gpu['index'], gpu['name'], gpu['persistence'], gpu['busid']) for gpu in h200['gpus']] == [
        (0, 'NVIDIA H200', True, '00000000:00:06.0'), (1, 'NVIDIA H200', True, '00000000:00:07.0')]
    p100 = gpu_node.parse_nvidia_smi(recorded('p100_8gpu_440.txt'))
    assert p100['driver_version'] == '440.33.01'
    assert [gpu['busid'][-7:] for gpu in p100['gpus']] == ['04:00.0', '05:00.0', '09:00.0', '0a:00.0',
                                                           '85:00.0', '86:00.0', '89:00.0', '8a:00.0']
    assert all(gpu['persistence'] for gpu in p100['gpus'])


def test_healthy_node_resumes():
    gate = gpu_node.gpu_health_gate(recorded('h200_2gpu_580.txt'), '580.159.04', '580.159.04', 2)
    assert gate == {'healthy': True, 'failed': [], 'reason': 'trainstack nvidia_driver health: ok'}


def test_expected_zero_means_the_count_seen_before_is_unknown():
    assert gpu_node.gpu_health_gate(recorded('p100_8gpu_440.txt'), '440.33.01', '440.33.01', 0)['healthy'] is True


@pytest.mark.parametrize(('text', 'module', 'installed', 'expected', 'fm', 'failed'), [
    ('h200_2gpu_580.txt', '580.95.05', '580.159.04', 2, (False, False), ['kernel module 580.95.05 != package 580.159.04']),
    ('h200_2gpu_580.txt', '', '580.159.04', 2, (False, False), ['kernel module none != package 580.159.04']),
    ('p100_8gpu_440.txt', '440.33.01', '440.33.01', 16, (False, False), ['nvidia-smi sees 8 GPU(s), 16 expected']),
    ('h200_2gpu_580.txt', '580.159.04', '580.159.04', 2, (True, False), ['nvidia-fabricmanager not active']),
    ('empty', '580.159.04', '580.159.04', 8, (True, True), ['nvidia-smi sees 0 GPU(s), 8 expected']),
])
def test_failed_checks_are_named(text, module, installed, expected, fm, failed):
    output = '' if text == 'empty' else recorded(text)
    gate = gpu_node.gpu_health_gate(output, module, installed, expected, *fm)
    assert gate['healthy'] is False
    assert gate['failed'] == failed
    assert gate['reason'] == 'trainstack nvidia_driver health: ' + '; '.join(failed)


def test_persistence_off_and_a_lost_gpu():
    """The recorded 8-GPU table with GPU 3's persistence turned off and GPU 7 gone."""
    lines = recorded('p100_8gpu_440.txt').splitlines()
    lines = [line.replace('P100-SXM2...  On   |', 'P100-SXM2...  Off  |') if line.startswith('|   3 ') else line
             for line in lines]
    lines = lines[:-3]
    gate = gpu_node.gpu_health_gate('\n'.join(lines), '440.33.01', '440.33.01', 8)
    assert gate['failed'] == ['nvidia-smi sees 7 GPU(s), 8 expected', 'persistence mode off on GPU 3']
