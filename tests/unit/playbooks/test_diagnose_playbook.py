# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/diagnose.yml on this machine (connection local) against two recorded roots: a healthy and a broken node.

Expectations written by hand from the recordings (tests/unit/fixtures/diagnose/README.md).
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, ROOT, run_playbook
from topology_support import load_script

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

PLAYBOOK = os.path.join(ROOT, "playbooks", "diagnose.yml")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
CONTROLLER_TASKS = {"Create the output directory on the controller", "Write the report (JSON)"}


@pytest.fixture(name="inventory", scope="module")
def inventory_fixture(tmp_path_factory):
    directory = tmp_path_factory.mktemp("diagnose")
    make_roots = load_script(os.path.join(FIXTURES, "diagnose", "make_roots.py"))
    hosts = {}
    for case, node in (("healthy", "gpu01"), ("broken", "gpu02")):
        hosts[case] = {"diagnose_root": make_roots.materialize(case, str(directory / case)), "slurm_node_name": node,
                       "ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    path = directory / "inventory.yml"
    path.write_text(json.dumps({"all": {"children": {"diagnose_nodes": {"hosts": hosts}}}}), encoding="utf-8")
    return str(path)


def diagnose(inventory, out_dir, *options):
    returncode, report, stderr = run_playbook(PLAYBOOK, "-i", inventory, "-e", "diagnose_hosts=diagnose_nodes",
                                              "-e", "diagnose_output_dir=" + str(out_dir), *options)
    changed = {task["task"]["name"] for play in report["plays"] for task in play["tasks"]
               for result in task["hosts"].values() if result.get("changed")}
    table = [line for play in report["plays"] for task in play["tasks"] if task["task"]["name"] == "Show the findings per node"
             for result in task["hosts"].values() for line in result.get("msg", [])]
    with open(os.path.join(str(out_dir), "diagnose.json"), encoding="utf-8") as handle:
        written = json.load(handle)
    return returncode, written, table, changed, stderr


def checks(written, host):
    return sorted((item["check"], item["severity"]) for item in written["hosts"][host]["findings"])


BROKEN = sorted([
    ("slurm_state", "error"), ("service munge.service", "error"), ("ib_port", "error"), ("nccl_conf", "error"),
    ("nccl_conf", "error"), ("nccl_conf", "error"), ("xid", "error"), ("clock", "warning"), ("ib_counters", "warning"),
    ("link_down", "warning"), ("gpu_utilization", "warning"), ("gpu_throttle", "warning"), ("pcie_width", "warning"),
    ("pcie_speed", "warning"), ("cpu_binding", "warning"), ("iowait", "warning"), ("job_gpuutil", "warning"),
])


def test_broken_node_fails_the_run_with_its_findings(inventory, tmp_path):
    returncode, written, table, _changed, stderr = diagnose(inventory, tmp_path, "-e", "job=4242")
    assert returncode != 0, stderr
    assert written["status"] == "findings" and written["failing_hosts"] == ["broken"]
    assert written["counts"] == {"error": 7, "warning": 10}
    assert checks(written, "healthy") == []
    assert checks(written, "broken") == BROKEN
    assert "== broken: 17 finding(s)" in table and "== healthy: nothing found" in table
    assert "| error | slurm_state | State=IDLE+NOT_RESPONDING |" in "\n".join(table)
    assert any(line.startswith("| warning | cpu_binding | job 4242 pid 81302 (python3, step 0) may run on CPUs 16-31 only")
               for line in table)
    skipped = {item["check"]: item["evidence"] for item in written["hosts"]["healthy"]["skipped"]}
    # Both nodes are this machine: no skew. A loaded machine may stretch the reading's round trip past the 1 s threshold,
    # which the report says instead of guessing.
    assert "cannot be told" in skipped.pop("clock_skew", "cannot be told")
    assert set(skipped) == {"ib_counters", "kernel_log", "cpu_binding", "xid", "job_gpuutil"}
    assert skipped["cpu_binding"].startswith("scontrol listpids 4242 failed")
    assert skipped["job_gpuutil"].startswith("sacct -j 4242 failed")
    assert any(line.startswith("| warning | job_gpuutil | job 4242 step batch: GPU utilisation averaged 12 % (peak 41 %)")
               for line in table)


def test_healthy_node_in_check_mode_is_clean(inventory, tmp_path):
    returncode, written, table, changed, stderr = diagnose(inventory, tmp_path, "--check", "--limit", "healthy")
    assert returncode == 0, stderr
    assert written["status"] == "clean" and list(written["hosts"]) == ["healthy"]
    assert table[0] == "== healthy: nothing found"
    assert changed <= CONTROLLER_TASKS


def test_nccl_log_socket_fallback_on_the_healthy_node(inventory, tmp_path):
    # gpu01 of nccl-2.11.4-net-socket.txt said "Using network Socket"; the healthy node (Slurm name gpu01) has 8
    # ACTIVE NDR ports.
    returncode, written, _table, _changed, stderr = diagnose(
        inventory, tmp_path, "--limit", "healthy", "-e", "nccl_log=" + os.path.join(FIXTURES, "nccl_log", "nccl-2.11.4-net-socket.txt"))
    assert returncode != 0, stderr
    assert checks(written, "healthy") == [("nccl_network", "error")]
    assert "NCCL used sockets on gpu01 although it has ACTIVE RDMA ports" in written["hosts"]["healthy"]["findings"][0]["evidence"]
