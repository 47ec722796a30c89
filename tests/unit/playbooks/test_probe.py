# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/probe.yml run for real against this machine (connection local)."""

from __future__ import annotations

import os

from playbook_support import ROOT, run_playbook


def test_probe_writes_a_summary_per_host(tmp_path):
    out_dir = tmp_path / "probe"
    returncode, report, stderr = run_playbook(os.path.join(ROOT, "playbooks", "probe.yml"),
                                              "-e", "probe_output_dir=" + str(out_dir))
    assert returncode == 0, stderr
    stats = report["stats"]["localhost"]
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
