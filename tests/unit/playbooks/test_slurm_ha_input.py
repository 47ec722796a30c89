# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""HA controllers that name different StateSaveLocations are refused in preflight, before any change.

Each controller reads its own host variables; the marker check of validate_state_dir.yml finds nothing to compare on a
first run, so the values themselves must agree (issue 25, third held-out round). The preflight play runs in check
mode against this machine (playbook_support.preflight_hosts).
"""

from __future__ import annotations

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, preflight_hosts

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

MESSAGE = "slurm_state_save_location differs between the controllers (ctl1: /srv/slurm/state, ctl2: /var/lib/slurm/slurmctld)"


def _cluster(ctl2_vars):
    ha = {"slurm_controller_ha": True, "slurm_state_save_location": "/srv/slurm/state"}
    return {"ctl1": {"groups": ["slurm_controller"], "vars": ha},
            "ctl2": {"groups": ["slurm_controller"], "vars": dict(ha, **ctl2_vars)},
            "node1": {"groups": ["slurm_compute"], "vars": ha}}


def _failures(seen):
    return " ".join(text for host in seen.values() for text in host["failed"])


def test_ha_controllers_with_their_own_state_directories_are_refused():
    # ctl2 left at the role's default: a local directory of its own.
    seen = preflight_hosts(_cluster({"slurm_state_save_location": "/var/lib/slurm/slurmctld"}))
    assert MESSAGE in _failures(seen), seen
    assert all(host["changed"] == [] and host["plays"] == {0} for host in seen.values()), seen


def test_ha_controllers_naming_one_state_directory_pass_that_check():
    seen = preflight_hosts(_cluster({}))
    assert "slurm_state_save_location differs" not in _failures(seen), seen
