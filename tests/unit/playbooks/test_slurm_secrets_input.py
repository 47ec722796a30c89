# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hostile accounting names, unwritable passwords, malformed munge keys and wrong node names stop
site.yml in preflight, before any host changes, naming the variable; a hostile but writable password
passes. Runs the real site.yml in check mode against this machine (connection local)."""

from __future__ import annotations

import base64
import json
import socket

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, PLAYBOOK, failures_and_changes, run_playbook, run_site

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

CASES = [
    ("db-name-injection", {"slurm_dbd_db_name": "slurm_acct_db`; DROP DATABASE mysql; --"}, "slurm_dbd_db_name"),
    ("db-name-trailing-newline", {"slurm_dbd_db_name": "slurm_acct_db\n"}, "slurm_dbd_db_name"),
    ("db-name-list", {"slurm_dbd_db_name": ["slurm_acct_db"]}, "slurm_dbd_db_name"),
    ("db-user-grant-injection",
     {"slurm_dbd_db_user": "slurm'@'%' IDENTIFIED BY 'x'; GRANT ALL ON *.* TO 'slurm"}, "slurm_dbd_db_user"),
    ("db-user-too-long", {"slurm_dbd_db_user": "u" * 33}, "slurm_dbd_db_user"),
    ("password-newline", {"slurm_dbd_db_password": "pw\nStorageHost=evil"}, "slurm_dbd_db_password"),
    ("password-space-and-quote", {"slurm_dbd_db_password": 'two words "quoted"'}, "slurm_dbd_db_password"),
    ("munge-key-not-base64", {"slurm_munge_key": "not base64 at all!"}, "slurm_munge_key"),
    ("munge-key-5-bytes", {"slurm_munge_key": base64.b64encode(b"12345").decode()}, "slurm_munge_key"),
    ("munge-key-empty", {"slurm_munge_key": ""}, "slurm_munge_key"),
]


@pytest.mark.parametrize(("extra_vars", "variable"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_value_stops_in_preflight(extra_vars, variable):
    returncode, report, stderr = run_site(extra_vars)
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert any(variable in text for play, text in failed), failed
    assert all(play.startswith("Preflight") for play, text in failed), failed
    assert changed == [] and plays == [plays[0]] and plays[0].startswith("Preflight"), (changed, plays)


def test_hostile_but_writable_secrets_pass_preflight():
    good = {"slurm_dbd_db_password": "a'b\"c\\d;e--f#g\\\u00fc\u20ac", "slurm_munge_key": base64.b64encode(bytes(range(256)) * 4).decode()}
    returncode, report, stderr = run_site(good, "--tags", "preflight")
    failed, changed, _plays = failures_and_changes(report)
    assert (returncode, failed, changed) == (0, [], []), stderr
    # The password is a no_log option: it never shows in the report.
    assert "\u00fc\u20ac" not in json.dumps(report, ensure_ascii=False)


def _inventory(tmp_path, host_vars="", host="localhost"):
    path = tmp_path / "inventory.ini"
    # A controller alone, without partitions (a partition with no slurm_compute host is refused): these tests are
    # about names and secrets.
    path.write_text("[slurm_controller]\n%s ansible_connection=local slurm_partitions=[] %s\n" % (host, host_vars), encoding="utf-8")
    return str(path)


def test_inventory_name_that_is_not_the_hostname_stops_in_preflight(tmp_path):
    hostname = socket.gethostname().split(".")[0]
    assert hostname != "localhost"
    returncode, report, stderr = run_site({}, "-i", _inventory(tmp_path), "--tags", "preflight")
    failed, changed, _plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert any("Inventory host localhost is not the host's short hostname '%s'" % hostname in text
               and "slurm_node_name" in text for _play, text in failed), failed
    assert changed == []


def test_slurm_node_name_set_to_the_hostname_passes(tmp_path):
    hostname = socket.gethostname().split(".")[0]
    inventory = _inventory(tmp_path, "slurm_node_name=%s" % hostname)
    returncode, report, stderr = run_site({}, "-i", inventory, "--tags", "preflight")
    failed, changed, _plays = failures_and_changes(report)
    assert (returncode, failed, changed) == (0, [], []), stderr


@pytest.mark.parametrize(("host", "kind"), [("127.0.0.1", "an IP address"), ("%s.example.test", "a fully qualified name")])
def test_fqdn_or_ip_inventory_name_gets_a_clear_message(tmp_path, host, kind):
    hostname = socket.gethostname().split(".")[0]
    host = host % hostname if "%s" in host else host
    returncode, report, stderr = run_playbook(PLAYBOOK, "-i", _inventory(tmp_path, host=host), "--check", "--tags", "preflight")
    failed, changed, _plays = failures_and_changes(report)
    assert returncode != 0, stderr
    expected = "Inventory host %s is %s, not the host's short hostname '%s'" % (host, kind, hostname)
    assert any(expected in text and "slurm_node_name to '%s'" % hostname in text for _play, text in failed), failed
    assert changed == []
