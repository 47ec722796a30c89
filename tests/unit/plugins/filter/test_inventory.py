# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.inventory import host_addresses

HOSTVARS = {
    "ctl": {"ansible_facts": {"default_ipv4": {"address": "10.0.0.1"}}},
    "gpu1": {"base_host_address": "192.168.1.11", "ansible_facts": {"default_ipv4": {"address": "10.0.0.11"}}},
    "gpu2": {"ansible_facts": {}},
    "gpu3": {},
    "gpu4": {"base_host_address": "", "ansible_facts": {"default_ipv4": {"address": "10.0.0.14"}}},
    "gpu5": {"mgmt": "172.16.0.5"},
}


@pytest.mark.parametrize(
    ("hosts", "override_var", "expected"),
    [
        (["ctl"], "base_host_address", {"ctl": "10.0.0.1"}),
        (["gpu1"], "base_host_address", {"gpu1": "192.168.1.11"}),
        (["gpu2", "gpu3"], "base_host_address", {"gpu2": "", "gpu3": ""}),
        (["gpu4"], "base_host_address", {"gpu4": "10.0.0.14"}),
        (["gpu5", "ctl"], "mgmt", {"gpu5": "172.16.0.5", "ctl": "10.0.0.1"}),
        ([], "base_host_address", {}),
    ],
    ids=["facts", "override-wins", "unknown", "empty-override-falls-back", "custom-var", "no-hosts"],
)
def test_host_addresses(hosts, override_var, expected):
    assert host_addresses(HOSTVARS, hosts, override_var) == expected


def test_unknown_host_is_an_error():
    with pytest.raises(KeyError):
        host_addresses(HOSTVARS, ["nope"])
