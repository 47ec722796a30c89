# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's slurmd -C cross-check (tasks/hardware_check.yml) against this host's real slurmd."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, run_playbook

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardware_check.yml")
INVENTORY = "[slurm_controller]\nlocalhost\n[slurm_compute]\nlocalhost\n"


def check(tmp_path, overrides):
    if not (shutil.which("slurmd") or os.path.exists("/usr/sbin/slurmd")):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("slurmd is not installed (.ci/run and make test install Debian package slurmd)")
        pytest.skip("slurmd is not installed")
    (tmp_path / "inventory.ini").write_text(INVENTORY, encoding="utf-8")
    returncode, report, stderr = run_playbook(PLAYBOOK, "-i", str(tmp_path / "inventory.ini"),
                                              "-e", json.dumps({"slurm_node_overrides": overrides}))
    messages = [result.get("msg", "") for play in report["plays"] for task in play["tasks"]
                for result in task["hosts"].values() if "Compare the rendered" in task["task"]["name"]]
    return returncode, messages, stderr


def test_probed_line_fits_slurmd(tmp_path):
    returncode, messages, stderr = check(tmp_path, {})
    assert returncode == 0, stderr
    assert messages and "fits slurmd -C" in messages[0]


def test_more_memory_than_slurmd_finds_fails_with_both_lines(tmp_path):
    returncode, messages, _stderr = check(tmp_path, {"real_memory": 99999999})
    assert returncode != 0
    assert "would be drained by slurmctld (Low RealMemory)" in messages[0]
    assert "Rendered: NodeName=localhost " in messages[0] and "RealMemory=99999999" in messages[0]
    assert "slurmd -C: NodeName=" in messages[0]


def test_more_cpus_than_slurmd_finds_fails(tmp_path):
    returncode, messages, _stderr = check(tmp_path, {"cpus": 4096, "sockets": 64, "cores_per_socket": 32, "threads_per_core": 2})
    assert returncode != 0
    assert "(Low CPUs, Low socket*core*thread count)" in messages[0]
