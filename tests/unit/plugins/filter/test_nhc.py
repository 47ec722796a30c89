# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nhc_checks: the NHC check lines of a node from its recorded topology (tests/unit/fixtures/topology) and the nhc
role's settings; arguments that NHC's bash eval would run are refused."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from topology_support import expected_facts

from ansible_collections.trainstack.cluster.plugins.filter.nhc import nhc_checks

_XIDS = [48, 79]
_NODE = [['check_ps_service', '-u', 'munge', 'munged'], ['check_trainstack_clock_sync']]


def test_h200_vm():
    # The recorded 2 x H200 KVM guest: NVSwitch, 18 NVLinks per GPU, x16 links, no HCA.
    assert nhc_checks(expected_facts('h200_vm'), {'fatal_xids': _XIDS}) == [
        ['check_trainstack_gpu_count', '2', "'NVIDIA H200'"],
        ['check_trainstack_gpu_driver', '580.159.04'],
        ['check_trainstack_gpu_persistence'],
        ['check_trainstack_gpu_xid', '7200', '48,79'],
        ['check_trainstack_gpu_memory'],
        ['check_trainstack_pcie_link', '0000:00:06.0', '16', '0'],
        ['check_trainstack_pcie_link', '0000:00:07.0', '16', '0'],
        ['check_trainstack_gpu_nvlink', '18'],
        ['check_trainstack_fabricmanager'],
    ] + _NODE


def test_hgx_h100_hcas():
    lines = nhc_checks(expected_facts('hgx_h100'), {'fatal_xids': _XIDS})
    assert lines[0] == ['check_trainstack_gpu_count', '8', "'NVIDIA H100 80GB HBM3'"]
    # GPUs idle at 2.5 GT/s in the recording: their speed is never checked, their width is.
    assert ['check_trainstack_pcie_link', '0000:18:00.0', '16', '0'] in lines
    # HCAs keep their speed: width and speed both.
    assert ['check_trainstack_pcie_link', '0000:19:00.0', '16', '32.0'] in lines
    ports = [line for line in lines if line[0] == 'check_trainstack_ib_port']
    assert ports[0] == ['check_trainstack_ib_port', 'mlx5_0', '1', '400']
    assert len(ports) == 8
    assert ['check_trainstack_ib_flaps', '86400', '5'] in lines


def test_whole_numbers_written_with_a_point():
    # 86400.0 passes argument validation for type int (held-out round 8): nhc.conf gets the whole number.
    lines = nhc_checks(expected_facts('hgx_h100'), {'fatal_xids': _XIDS, 'ib_flap_window': 86400.0, 'xid_window': 3600.0})
    assert ['check_trainstack_ib_flaps', '86400', '5'] in lines
    assert ['check_trainstack_gpu_xid', '3600', '48,79'] in lines
    with pytest.raises(AnsibleFilterError, match='nhc_ib_flap_window must be a whole number >= 1, got 1.5'):
        nhc_checks(expected_facts('hgx_h100'), {'fatal_xids': _XIDS, 'ib_flap_window': 1.5})


def test_down_port_is_not_checked():
    # ib_down_roce: port 1 of mlx5_0 DOWN when probed (uncabled), mlx5_1 RoCE ACTIVE at 100 Gb/s; L40S without NVLink.
    lines = nhc_checks(expected_facts('ib_down_roce'), {})
    assert [line for line in lines if line[0] == 'check_trainstack_ib_port'] == [['check_trainstack_ib_port', 'mlx5_1', '1', '100']]
    assert not [line for line in lines if line[0] in ('check_trainstack_gpu_nvlink', 'check_trainstack_fabricmanager')]


def test_cpu_only_node():
    assert nhc_checks(expected_facts('cpu_only'), {}) == _NODE


def test_driverless_node_counts_pci_gpus():
    # hgx_h100_bare: before the driver nvidia-smi lists nothing; the 8 GPUs are on the PCI bus. No model, no driver.
    lines = nhc_checks(expected_facts('hgx_h100_bare'), {'fatal_xids': []})
    assert lines[:4] == [['check_trainstack_gpu_count', '8'], ['check_trainstack_gpu_persistence'],
                         ['check_trainstack_gpu_xid', '7200'], ['check_trainstack_gpu_memory']]


@pytest.mark.parametrize('settings, expected', [
    ({'gpu_count': 4, 'gpu_model': 'H100', 'driver_version': '550.90.07'},
     [['check_trainstack_gpu_count', '4', 'H100'], ['check_trainstack_gpu_driver', '550.90.07']]),
    ({'gpu_model': '', 'driver_version': ''}, [['check_trainstack_gpu_count', '2']]),
], ids=['pinned', 'unchecked'])
def test_gpu_settings(settings, expected):
    lines = nhc_checks(expected_facts('h200_vm'), dict(settings, persistence=False, memory=False, pcie=False, nvlink=False,
                                                       fabricmanager=False, fatal_xids=[]))
    assert lines[:len(expected)] == expected


def test_nhc_own_flags_pass():
    assert nhc_checks({}, {'munge': False, 'clock_sync': False, 'extra': [
        {'check': 'check_ps_service', 'args': ['-u', 'root', '-S', 'sshd']}, {'check': 'check_fs_free', 'args': ['/scratch', '5%']}]}) == [
        ['check_ps_service', '-u', 'root', '-S', 'sshd'], ['check_fs_free', '/scratch', '5%']]


def test_lab_node_mounts_and_extra_checks():
    # A container node of the lab: no GPU, no HCA, no time daemon.
    lines = nhc_checks({}, {'clock_sync': False, 'mounts': [{'path': '/srv/scratch', 'min_free_percent': 5}, {'path': '/home'}],
                            'extra': [{'check': 'check_hw_physmem_free', 'args': ['1GB']}]})
    assert lines == [['check_ps_service', '-u', 'munge', 'munged'],
                     ['check_fs_mount_rw', '-f', '/srv/scratch'], ['check_fs_free', '/srv/scratch', '5%'],
                     ['check_fs_mount_rw', '-f', '/home'], ['check_hw_physmem_free', '1GB']]


@pytest.mark.parametrize('topology, settings, message', [
    ({}, {'mounts': [{'path': '/srv/$(reboot)'}]}, "nhc_mounts path '/srv/$(reboot)' cannot be given to NHC"),
    ({}, {'mounts': [{'path': "/srv/a'b"}]}, 'nhc_mounts path'),
    ({}, {'mounts': [{'path': 'scratch'}]}, 'needs an absolute path'),
    ({}, {'extra': [{'check': 'reboot; check_x'}]}, 'needs check: a check_<name> function'),
    ({}, {'extra': [{'check': 'check_x', 'args': ['a;b']}]}, "nhc_extra_checks check_x argument 'a;b'"),
    ({}, {'extra': [{'check': 'check_x', 'args': 'a'}]}, 'args must be a list'),
    ({'gpus': [{'name': 'NVIDIA `id`'}]}, {}, "nhc_gpu_model 'NVIDIA `id`'"),
    ({'pci_gpus': [{}]}, {'xid_window': 0}, 'nhc_xid_window must be a whole number >= 1, got 0'),
    ({'hcas': [{'name': 'mlx5_0'}]}, {'ib_flap_max': True}, 'nhc_ib_flap_max must be a whole number'),
    ({'pci_gpus': [{}]}, {'fatal_xids': ['79; reboot']}, "nhc_fatal_xids entry must be a whole number"),
    ({}, {'gpu_count': '2.5'}, 'nhc_gpu_count must be a whole number'),
    ({}, {'colour': 1}, 'unknown settings colour'),
    # a misspelt key would drop its check silently
    ({}, {'mounts': [{'path': '/scratch', 'min_free_pct': 5}]}, 'nhc_mounts entry /scratch has unknown keys min_free_pct'),
    ({}, {'extra': [{'check': 'check_hw_physmem_free', 'arg': ['1GB']}]}, 'nhc_extra_checks entry check_hw_physmem_free has unknown keys arg'),
    ('x', {}, 'needs the trainstack_topology dict, got str'),
])
def test_refused(topology, settings, message):
    with pytest.raises(AnsibleFilterError) as raised:
        nhc_checks(topology, settings)
    assert message in str(raised.value)
