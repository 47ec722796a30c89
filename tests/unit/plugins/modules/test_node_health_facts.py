# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_health_facts on recorded roots with real nvidia-smi -q and kernel log outputs."""

from __future__ import annotations

import os
import shutil

from ansible_collections.trainstack.cluster.plugins.modules import node_health_facts
from topology_support import UNIT_DIR, run_module

FIXTURES = os.path.join(UNIT_DIR, 'fixtures')


def root_with(tmp_path, **commands):
    (tmp_path / '.commands').mkdir()
    for key, (tool, case) in commands.items():
        shutil.copy(os.path.join(FIXTURES, tool, case + '.txt'), str(tmp_path / '.commands' / (key + '.txt')))
    return str(tmp_path)


def gather(root, capsys):
    result = run_module(node_health_facts.main, {'root': root}, capsys)
    assert result['changed'] is False
    return result['ansible_facts']['trainstack_node_health']


def test_hgx_query_and_journal_xids(tmp_path, capsys):
    health = gather(root_with(tmp_path, **{'nvidia-smi_q': ('nvsmi_query', 'h800_hgx_persistence_fabric_completed'),
                                           'journalctl_k_b': ('xid', 'journal_xid45_after_nvlink_xid149'),
                                           'dmesg': ('xid', 'dmesg_xid32_xid31_laptop')}), capsys)
    gpu = health['nvidia_smi_q']['gpus'][0]
    assert (gpu['busid'], gpu['persistence_mode'], gpu['fabric']['state']) == ('0000:18:00.0', 'Enabled', 'Completed')
    # journalctl wins over dmesg when both answer.
    assert health['kernel_log']['source'].startswith('journalctl -k -b') and health['kernel_log']['xids'] == [45]
    assert health['nvidia_smi_q_error'] is None and health['kernel_log_error'] is None


def test_dmesg_is_the_fallback_and_missing_sources_say_why(tmp_path, capsys):
    health = gather(root_with(tmp_path, dmesg=('xid', 'dmesg_fallen_off_bus_without_xid')), capsys)
    assert health['kernel_log']['source'] == 'dmesg' and health['kernel_log']['events'][0]['kind'] == 'fallen_off_bus'
    assert health['nvidia_smi_q'] is None and 'nvidia-smi -q unavailable' in health['nvidia_smi_q_error']


def test_unreadable_output_is_null_with_the_parser_reason(tmp_path, capsys):
    health = gather(root_with(tmp_path, **{'nvidia-smi_q': ('nvsmi_query', 'h200_vm_grep_fabric_excerpt')}), capsys)
    assert health['nvidia_smi_q'] is None and 'no "GPU <bus id>" section' in health['nvidia_smi_q_error']
    assert health['kernel_log'] is None and 'neither journalctl' in health['kernel_log_error']
