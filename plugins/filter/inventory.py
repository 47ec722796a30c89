# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that read the inventory as a whole (controller side, pure)."""

from __future__ import annotations


def host_addresses(hostvars, hosts, override_var="base_host_address"):
    """Map each host to its cluster address: its override variable, else its default IPv4 address.

    Hosts with neither map to an empty string, so callers can name what is missing.
    """
    addresses = {}
    for host in hosts:
        host_vars = hostvars[host]
        address = host_vars.get(override_var)
        if not address:
            facts = host_vars.get("ansible_facts") or {}
            address = (facts.get("default_ipv4") or {}).get("address", "")
        addresses[host] = address
    return addresses


class FilterModule:
    """Inventory filters."""

    def filters(self):
        return {"host_addresses": host_addresses}
