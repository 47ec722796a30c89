# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bad inventory value stops site.yml in preflight, before any host changes, naming the variable.

Runs the real site.yml in check mode against this machine (connection local) with one bad
extra variable each, and reads the JSON callback's account of what ran.
"""

from __future__ import annotations

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, failures_and_changes, run_site

CASES = [
    ("base_hosts_manage", '{"base_hosts_manage": "maybe"}', "base_hosts_manage"),
    ("no-time-source", '{"base_chrony_pools": [], "base_chrony_servers": []}', "base_chrony_pools"),
    ("bad-address", '{"base_host_address": "gpu-01"}', "base_host_address"),
    ("unknown-type", '{"base_packages_extra": {"a": 1}}', "base_packages_extra"),
    ("unsupported-os", '{"preflight_supported_os": {"Plan9": ["4"]}}', "preflight_supported_os"),
    ("missing-group", '{"preflight_required_groups": ["slurm_compute"]}', "preflight_required_groups"),
    ("python-format", '{"preflight_min_python": "three"}', "preflight_min_python"),
    ("nccl-graph-file", '{"nccl_settings": {"NCCL_GRAPH_FILE": "/tmp/graph.xml"}}', "nccl_settings: NCCL_GRAPH_FILE"),
    ("nccl-unknown-key", '{"nccl_settings": {"NCCL_MAGIC": "1"}}', "nccl_settings: unknown key NCCL_MAGIC"),
    ("nccl-backup", '{"nccl_backup": "sometimes"}', "nccl_backup"),
]


@pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")
@pytest.mark.parametrize(("extra_vars", "variable"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_value_stops_in_preflight(extra_vars, variable):
    returncode, report, stderr = run_site(extra_vars)
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert failed, "no task failed"
    assert all(play.startswith("Preflight") for play, text in failed), failed
    assert any(variable in text for play, text in failed), failed
    assert changed == []
    assert plays == [plays[0]] and plays[0].startswith("Preflight"), plays


@pytest.mark.parametrize("tags", ["preflight", "base", "slurm", "nccl", "gpu_stack"])
def test_bad_value_stops_any_tagged_run(tags):
    returncode, report, stderr = run_site('{"base_hosts_manage": "maybe"}', "--tags", tags)
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert any("base_hosts_manage" in text for play, text in failed), failed
    assert changed == [] and plays[0].startswith("Preflight")


def test_good_values_pass_preflight():
    # --tags preflight: validate only, as a user would before a change window.
    returncode, report, stderr = run_site('{"base_chrony_servers": ["10.0.0.1"]}', "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    assert (returncode, failed, changed) == (0, [], []), stderr
    assert plays[0].startswith("Preflight")
