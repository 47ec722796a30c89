# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A two-node acceptance report built from recorded real outputs, for the renderer and module tests."""

from __future__ import annotations

import json
import os

import yaml

from corpus_support import FIXTURES

from ansible_collections.trainstack.cluster.plugins.filter.acceptance import (
    acceptance_busbw_verdict, acceptance_node_checks, acceptance_parse_allreduce, acceptance_report)
from ansible_collections.trainstack.cluster.plugins.module_utils import _nvsmi_query, _xid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def text(tool, case):
    with open(os.path.join(FIXTURES, tool, case + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def topology(case):
    with open(os.path.join(FIXTURES, 'topology', case, 'expected_facts.json'), encoding='utf-8') as handle:
        facts = json.load(handle)
    return facts.get('trainstack_topology', facts)


def thresholds():
    with open(os.path.join(REPO, 'data', 'acceptance_thresholds.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def recorded_report():
    """gpu-a: the 2 x H200 guest, its real all-reduce runs (pass); gpu-b: HGX H100 facts with a real Xid log and IB
    port down on a RoCE host's facts folded in (fail)."""
    runs = [acceptance_parse_allreduce(text('torch_allreduce', case)) for case in ('h200x2_probe_default',)]
    node_a = {'name': 'gpu-a', 'gpu_name': 'NVIDIA H200', 'gpu_count': 2,
              'checks': acceptance_node_checks(
                  topology('h200_vm'), {'driver': {'version': '580.159.04'}},
                  {'nvidia_smi_q': _nvsmi_query.parse(text('nvsmi_query', 'h800_hgx_persistence_fabric_completed')),
                   'kernel_log': dict(_xid.parse(''), source='dmesg')},
                  {'gpu_count': 2, 'gpu_model': 'NVIDIA H200', 'driver_version': '580.159.04', 'nvlinks_per_gpu': 18}),
              'allreduce': acceptance_busbw_verdict(runs, 'NVIDIA H200', 2, thresholds(), {'16MiB': None, '2GiB': None})}
    hgx = topology('hgx_h100')
    hgx['hcas'] = hgx['hcas'][:2] + [dict(topology('ib_down_roce')['hcas'][0], name='mlx5_8')]
    node_b = {'name': 'gpu-b', 'gpu_name': 'NVIDIA H100 80GB HBM3', 'gpu_count': 8,
              'checks': acceptance_node_checks(
                  hgx, {'driver': {'version': '525.105.17'}},
                  {'nvidia_smi_q': _nvsmi_query.parse(text('nvsmi_query', 'h800_hgx_persistence_fabric_completed')),
                   'kernel_log': dict(_xid.parse(text('xid', 'journal_xid45_after_nvlink_xid149')), source='dmesg')},
                  {'gpu_count': 8, 'ib_rate_gbps': 400}),
              'allreduce': None, 'hooks': [{'check': 'mpi_allreduce', 'status': 'skip', 'reason': 'hook not configured'}]}
    return acceptance_report([node_b, node_a], '2026-12-01T06:00:00+00:00', {'playbook': 'playbooks/validate.yml'})
