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
import tempfile

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


PREFLIGHT_CASES = os.path.join(ROOT, "tests", "unit", "playbooks", "files", "preflight_cases.yml")


def _with_facts(text, overrides):
    """A fact cache file with some facts replaced (ansible-core 2.19 wraps them in a __payload__ string)."""
    document = json.loads(text)
    if "__payload__" in document:
        facts = json.loads(document["__payload__"])
        facts.update(overrides)
        return json.dumps({"__payload__": json.dumps(facts)})
    document.update(overrides)
    return json.dumps(document)


def preflight_hosts(hosts, timeout=900):
    """One ansible-playbook run of site.yml's preflight play (files/preflight_cases.yml, check mode) over `hosts`.

    hosts: {name: {"vars": {...}, "facts": {fact overrides}, "groups": [...]}} (every key optional); the first host's
    name is the one facts are gathered for. Every host is this machine (connection local), so facts are gathered
    once, by setup into a jsonfile fact cache, and that file (with each host's overrides) is given to every host:
    gathering 150 times costs minutes. Returns {host: {"failed": [result json], "changed": [task], "plays": {index}}}.
    """
    first = next(iter(hosts))
    inventory_hosts, groups = {}, {}
    for name, host in hosts.items():
        inventory_hosts[name] = dict(host.get("vars", {}), ansible_connection="local", ansible_python_interpreter=sys.executable)
        for group in host.get("groups", []):
            groups.setdefault(group, {"hosts": {}})["hosts"][name] = {}
    with tempfile.TemporaryDirectory() as directory:
        cache = os.path.join(directory, "facts")
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
                   ANSIBLE_CACHE_PLUGIN="ansible.builtin.jsonfile", ANSIBLE_CACHE_PLUGIN_CONNECTION=cache,
                   ANSIBLE_NOCOLOR="1")
        inventory = os.path.join(directory, "inventory.yml")
        with open(inventory, "w", encoding="utf-8") as handle:
            json.dump({"all": {"hosts": inventory_hosts, "children": groups}}, handle)  # JSON is YAML
        gathered = subprocess.run(
            [os.path.join(os.path.dirname(ANSIBLE_PLAYBOOK), "ansible"), "-i", inventory, first,
             "-m", "ansible.builtin.setup", "-a", "gather_subset=min,virtual"],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
        assert gathered.returncode == 0, gathered.stdout + gathered.stderr
        # The cache names files <schema prefix><host> (ansible-core 2.19: s1_<host>).
        (written,) = os.listdir(cache)
        prefix = written[:-len(first)]
        with open(os.path.join(cache, written), encoding="utf-8") as handle:
            facts = handle.read()
        for name, host in hosts.items():
            with open(os.path.join(cache, prefix + name), "w", encoding="utf-8") as handle:
                handle.write(_with_facts(facts, host["facts"]) if host.get("facts") else facts)
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, "-i", inventory, "--check", PREFLIGHT_CASES],
            env=dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json"), cwd=ROOT, capture_output=True, text=True,
            timeout=timeout, check=False)
    report = json.loads(proc.stdout)
    seen_by_host = {}
    for index, play in enumerate(report["plays"]):
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                seen = seen_by_host.setdefault(host, {"failed": [], "changed": [], "plays": set()})
                seen["plays"].add(index)
                if result.get("failed"):
                    seen["failed"].append(json.dumps(result))
                if result.get("changed"):
                    seen["changed"].append(task["task"]["name"])
    return seen_by_host
