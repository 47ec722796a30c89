# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight passes the example inventory on the newest and the oldest supported ansible-core.

meta/runtime.yml promises ansible-core >= 2.18; the development venv has 2.19. The oldest comes from
.venv-core-floor (scripts/core-floor-venv) or $TRAINSTACK_CORE_FLOOR_VENV; without it that case is skipped.
Runs site.yml --check --tags preflight on the example inventory's first GPU node, pointed at this
machine (connection local): the inventory's values and groups are real, the target not. Its Slurm name
is this machine's short hostname (slurm_node_name), which preflight checks against the host.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from playbook_support import ANSIBLE_PLAYBOOK, ROOT, example_overlay

FLOOR_VENV = os.environ.get("TRAINSTACK_CORE_FLOOR_VENV", os.path.join(ROOT, ".venv-core-floor"))
CORES = {
    "current": ANSIBLE_PLAYBOOK,
    "floor": os.path.join(FLOOR_VENV, "bin", "ansible-playbook"),
}


def _floor():
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as handle:
        return re.match(r">=\s*([0-9.]+)", yaml.safe_load(handle)["requires_ansible"]).group(1)


@pytest.mark.parametrize("core", sorted(CORES))
def test_preflight_passes_the_example_inventory(core, tmp_path):
    playbook = CORES[core]
    if not os.path.exists(playbook):
        pytest.skip("%s is missing: run scripts/core-floor-venv" % playbook)
    python = os.path.join(os.path.dirname(playbook), "python")
    version = subprocess.run([python, "-c", "import ansible.release as r; print(r.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    if core == "floor":
        # The venv holds the promised floor's minor release, not a newer one.
        assert version.split(".")[:2] == _floor().split(".")[:2], version
    # The default callback: ansible-core 2.18 has no ansible.builtin.json. Its recap is read below.
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1")
    overlay = example_overlay(tmp_path)
    proc = subprocess.run(
        [playbook, "-i", os.path.join(ROOT, "inventories", "example"), "-i", overlay, "-c", "local", "--limit", "gpu01",
         "-e", "ansible_python_interpreter=" + sys.executable, "-e", "ansible_become=false",
         os.path.join(ROOT, "site.yml"), "--check", "--tags", "preflight"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    recap = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", proc.stdout, re.MULTILINE))
    assert proc.returncode == 0, (version, proc.stdout[-3000:], proc.stderr[-2000:])
    assert sorted(recap) == ["gpu01"], proc.stdout[-3000:]
    for host, counts in recap.items():
        numbers = dict(pair.split("=") for pair in counts.split())
        assert (numbers["failed"], numbers["changed"], numbers["unreachable"]) == ("0", "0", "0"), (host, counts)
        assert int(numbers["ok"]) > 10, (host, counts)  # preflight really ran its checks
    assert "PLAY [Preflight" in proc.stdout
