# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inventories/example, the README's quick start, loaded for real.

The example's first compute node is pointed at this machine (connection local, no become; its Slurm name
is this machine's, see example_overlay): site.yml in check mode with --tags preflight shows that
preflight passes on the example's variables and that every play of site.yml renders; example_first_run.yml shows what nvidia_driver decides
for the example's first compute node on a recorded bare HGX H100 (no driver, no nvidia-smi).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, PLAYBOOK, ROOT, example_overlay, failures_and_changes, run_playbook
from topology_support import recorded_root

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

EXAMPLE = os.path.join(ROOT, "inventories", "example")
LOCAL = ["-i", EXAMPLE, "-e", "ansible_connection=local", "-e", "ansible_become=false"]


def example_run(playbook, *options):
    # run_playbook adds "-i localhost,"; a later -i adds the example's hosts, and --limit keeps only them.
    hosts = "slurm_controller:slurm_compute"
    return run_playbook(playbook, *LOCAL, "--limit", hosts, *options)


def test_preflight_passes_and_every_play_renders(tmp_path):
    returncode, report, stderr = run_playbook(PLAYBOOK, *LOCAL, "-i", example_overlay(tmp_path), "--limit", "gpu01",
                                              "--check", "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    assert returncode == 0, stderr
    assert failed == [] and changed == []
    assert plays == ["Preflight - validate inventory and targets before anything changes", "Base host setup",
                     "GPU software stack", "Slurm with munge (controller, compute, login and accounting hosts)",
                     "Node health checks (NHC) on the nhc group", "PyTorch environment and launcher",
                     "RDMA user space on the nodes with HCAs and the MPI nodes", "UCX and Open MPI on the MPI nodes",
                     "The nccl-tests programs on the GPU compute nodes"]
    hosts = {play["play"]["name"]: sorted(play["tasks"][0]["hosts"]) for play in report["plays"] if play["tasks"]}
    assert hosts["Preflight - validate inventory and targets before anything changes"] == ["gpu01"]
    assert hosts["GPU software stack"] == ["gpu01"]
    # nvidia_driver's and cuda's validate entry points checked the example's pins against the matrix.
    names = [task["task"]["name"] for task in report["plays"][0]["tasks"]]
    assert len([name for name in names if name.endswith("Check the stack against the compatibility matrix")]) >= 2, names


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="slurm-client (scontrol) is not installed")
def test_first_run_on_a_bare_hgx_node(tmp_path):
    root = recorded_root("hgx_h100_bare", tmp_path / "root")
    returncode, report, stderr = example_run(os.path.join(ROOT, "tests", "unit", "playbooks", "example_first_run.yml"),
                                             "--check", "-e", json.dumps({"topology_root": root}))
    failed, changed, _plays = failures_and_changes(report)
    assert returncode == 0, stderr
    assert failed == [] and changed == []
    tasks = report["plays"][0]["tasks"]
    decisions = next(task for task in tasks if task["task"]["name"] == "Report the decisions")["hosts"]
    assert sorted(decisions) == ["gpu01"]
    decided = decisions["gpu01"]["msg"]
    # Written from the fixture: 4 NVSwitch functions 10de:22a3 and 8 GPUs 10de:2330, no driver yet.
    assert decided["fabric"] == {"fabricmanager": True, "nvlsm": False,
                                 "reason": "4 NVSwitch PCI function(s) (0x22a3) and 8 NVIDIA GPU(s) on the PCI bus"}
    assert decided["fabricmanager_packages"] == ["nvidia-fabricmanager-580"]
    assert decided["reboot"] is True and decided["controller"] == "ctl01"
    # ctl01 (this machine) has scontrol but no slurm.conf: Slurm runs no job on gpu01 yet.
    assert decided["drain"]["drain"] is False
    assert decided["drain"]["why"].startswith("slurmctld does not answer on ctl01 (scontrol: error:")
