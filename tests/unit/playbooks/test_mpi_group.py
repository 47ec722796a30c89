# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An mpi group of Debian 12 and Debian 13 hosts is refused in preflight, every host of it naming the others.

The ranks of one job need one Open MPI and one UCX; the roles' defaults give Debian 12 Open MPI 4.1.4 / UCX 1.13.1
and Debian 13 Open MPI 5.0.7 / UCX 1.18.1. The preflight play runs in check mode against this machine (Debian 12);
the Debian 13 host gets Debian 13's facts in the fact cache (playbook_support.preflight_hosts).
"""

from __future__ import annotations

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, preflight_hosts

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

DEBIAN_13 = {"ansible_distribution": "Debian", "ansible_distribution_release": "trixie", "ansible_distribution_version": "13.1",
             "ansible_distribution_major_version": "13", "ansible_os_family": "Debian"}
DEBIAN_12 = {"ansible_distribution": "Debian", "ansible_distribution_release": "bookworm", "ansible_distribution_version": "12.12",
             "ansible_distribution_major_version": "12", "ansible_os_family": "Debian"}


def _group(gpu03_vars):
    return {"gpu01": {"groups": ["mpi"], "facts": DEBIAN_12}, "gpu02": {"groups": ["mpi"], "facts": DEBIAN_12},
            "gpu03": {"groups": ["mpi"], "facts": DEBIAN_13, "vars": gpu03_vars},
            # Outside the mpi group: its OS is nobody's business here.
            "login01": {"facts": DEBIAN_13}}


def test_a_debian_12_and_13_mpi_group_is_refused_on_every_host_naming_the_releases_and_hosts():
    seen = preflight_hosts(_group({}))
    for host in ("gpu01", "gpu02", "gpu03"):
        failed = " ".join(seen[host]["failed"])
        assert "the mpi group would get 2 Open MPI releases, and the ranks of one job need one: 4.1.4 on gpu[01-02] (Debian 12); " \
               "5.0.7 on gpu03 (Debian 13). Pin one release every node can build (openmpi_version)" in failed, (host, seen[host])
        assert "the mpi group would get 2 UCX releases, and the ranks of one job need one: 1.13.1 on gpu[01-02] (Debian 12); " \
               "1.18.1 on gpu03 (Debian 13)" in failed, (host, seen[host])
        assert "the mpi group would get 2 PMIx releases" in failed, (host, seen[host])
        assert seen[host]["changed"] == [] and seen[host]["plays"] == {0}, (host, seen[host])
    assert seen["login01"]["failed"] == [] and seen["login01"]["plays"] == {0, 1}, seen["login01"]


def test_the_debian_13_host_left_out_of_mpi_leaves_a_group_that_passes():
    seen = preflight_hosts(_group({"trainstack_mpi": False}))
    for host in ("gpu01", "gpu02", "gpu03", "login01"):
        assert seen[host]["failed"] == [] and seen[host]["plays"] == {0, 1}, (host, seen[host])
