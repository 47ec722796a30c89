# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/probe.yml run for real against this machine (connection local)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def test_probe_writes_a_summary_per_host(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    out_dir = tmp_path / "probe"
    cmd = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", os.path.join(ROOT, "playbooks", "probe.yml"),
           "-e", "ansible_python_interpreter=" + sys.executable, "-e", "probe_output_dir=" + str(out_dir)]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    stats = json.loads(proc.stdout)["stats"]["localhost"]
    assert stats["failures"] == 0 and stats["unreachable"] == 0

    summary = (out_dir / "localhost.txt").read_text(encoding="utf-8")
    lines = summary.splitlines()
    assert lines[0] == "== localhost"
    # This machine's own facts, read independently of the module.
    with open("/proc/meminfo", encoding="utf-8") as handle:
        mem_kib = int(handle.readline().split()[1])
    assert "Memory: %d MiB" % (mem_kib // 1024) in lines
    assert any(line.startswith("NUMA node 0: cpus ") for line in lines)
    if not os.path.exists("/dev/nvidiactl"):
        assert "GPUs: none" in lines
        assert not (out_dir / "localhost-nccl-topology.xml").exists()
