# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/record.yml run for real against this machine (connection local)."""

from __future__ import annotations

import json
import os
import tarfile

from playbook_support import ROOT, run_playbook


def test_record_fetches_a_tarball_that_reads_back_to_the_same_facts(tmp_path):
    out_dir = tmp_path / "records"
    returncode, report, stderr = run_playbook(os.path.join(ROOT, "playbooks", "record.yml"),
                                              "-e", "record_output_dir=" + str(out_dir))
    assert returncode == 0, stderr
    assert report["stats"]["localhost"]["failures"] == 0
    host_dir = out_dir / "localhost"
    facts = json.loads((host_dir / "facts.json").read_text(encoding="utf-8"))
    assert json.loads((host_dir / "facts-replayed.json").read_text(encoding="utf-8")) == facts
    with open("/proc/meminfo", encoding="utf-8") as handle:
        assert facts["memory"]["total_bytes"] == int(handle.readline().split()[1]) * 1024
    with tarfile.open(host_dir / "trainstack-record.tar.gz") as archive:
        assert "proc/meminfo" in archive.getnames()
    assert not os.path.exists("/tmp/trainstack-record-localhost.tar.gz")
