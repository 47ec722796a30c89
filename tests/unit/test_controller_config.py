# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller settings every run uses: the shipped ansible.cfg (lab, unit playbook runs, AWX projects) and the
molecule scenarios' shared config agree on facts staying under ansible_facts (issue 30)."""

from __future__ import annotations

import configparser
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def shipped_config():
    parser = configparser.ConfigParser(interpolation=None)
    with open(os.path.join(ROOT, "ansible.cfg"), encoding="utf-8") as handle:
        parser.read_file(handle)
    return parser


def test_ansible_cfg_keeps_facts_under_ansible_facts():
    assert shipped_config().getboolean("defaults", "inject_facts_as_vars") is False


def test_ansible_cfg_keeps_ssh_masters_and_pipelining():
    config = shipped_config()
    assert config.getboolean("ssh_connection", "pipelining") is True
    args = config.get("ssh_connection", "ssh_args").split()
    assert "ControlMaster=auto" in args and any(arg.startswith("ControlPersist=") for arg in args)


def test_molecule_scenarios_run_with_the_same_fact_setting():
    with open(os.path.join(ROOT, ".config", "molecule", "config.yml"), encoding="utf-8") as handle:
        shared = yaml.safe_load(handle)
    assert shared["provisioner"]["config_options"]["defaults"]["inject_facts_as_vars"] is False
    # No scenario overrides it back.
    for scenario in sorted(os.listdir(os.path.join(ROOT, "molecule"))):
        path = os.path.join(ROOT, "molecule", scenario, "molecule.yml")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                own = yaml.safe_load(handle) or {}
            defaults = ((own.get("provisioner") or {}).get("config_options") or {}).get("defaults") or {}
            assert "inject_facts_as_vars" not in defaults, scenario
            assert "ANSIBLE_INJECT_FACT_VARS" not in ((own.get("provisioner") or {}).get("env") or {}), scenario
