# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the real site.yml in check mode against this machine and read what ran.

The playbook tests use the JSON callback's account of a run: which plays ran, which results
failed (with their whole text, where the variable names appear) and which tasks changed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import yaml

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import compress, expand

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, "site.yml")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
HAS_ANSIBLE_PLAYBOOK = os.path.exists(ANSIBLE_PLAYBOOK)


def run_playbook(playbook, *options):
    """Run a playbook on localhost (connection local); return (rc, the JSON callback's report, stderr)."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_NOCOLOR="1",
    )
    cmd = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", playbook,
           "-e", "ansible_python_interpreter=" + sys.executable] + list(options)
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def run_site(extra_vars, *options):
    """Run site.yml --check with extra_vars (a dict or a JSON string)."""
    if not isinstance(extra_vars, str):
        extra_vars = json.dumps(extra_vars)
    return run_playbook(PLAYBOOK, "--check", "-e", extra_vars, *options)


def failures_and_changes(report):
    """Return (failed results as (play, result json) pairs, changed task names, play names)."""
    failed, changed, plays = [], [], []
    for play in report["plays"]:
        plays.append(play["play"]["name"])
        for task in play["tasks"]:
            for result in task["hosts"].values():
                text = json.dumps(result)
                if result.get("failed") or '"failed": true' in text:
                    failed.append((play["play"]["name"], text))
                if result.get("changed"):
                    changed.append(task["task"]["name"])
    return failed, changed, plays


def example_overlay(directory, host="gpu01"):
    """An inventory file to load after inventories/example when its `host` is pointed at this machine.

    preflight checks each Slurm host's name against the host's short hostname: the overlay makes this
    machine's name `host`'s Slurm name (slurm_node_name), and puts it in the partitions in its place.
    """
    name = socket.gethostname().split(".")[0]
    with open(os.path.join(ROOT, "inventories", "example", "group_vars", "all.yml"), encoding="utf-8") as handle:
        partitions = yaml.safe_load(handle)["slurm_partitions"]
    for partition in partitions:
        partition["nodes"] = compress([name if node == host else node for node in expand(partition["nodes"])])
    path = os.path.join(str(directory), "example-overlay.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": {host: {"slurm_node_name": name, "slurm_partitions": partitions}}}}, handle)
    return path
