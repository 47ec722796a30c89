# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""topology_summary on every recorded topology, compared with reviewed golden tables."""

from __future__ import annotations

import os

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.topology import topology_summary
from topology_support import CASES, UNIT_DIR, expected_facts as facts, golden

SUMMARY_GOLDEN = os.path.join(UNIT_DIR, "fixtures", "topology_summary")


@pytest.mark.parametrize("case", CASES)
def test_summary_matches_golden(case):
    text = topology_summary(facts(case), case)
    assert text == golden(os.path.join(SUMMARY_GOLDEN, case + ".txt"), text)


def test_summary_lists_every_gpu_and_port():
    text = topology_summary(facts("hgx_h100"), "gpu01")
    assert text.startswith("== gpu01\n")
    assert sum(line.startswith(str(i) + "    NVIDIA H100") for i in range(8) for line in text.splitlines()) == 8
    assert all("mlx5_%d:1  ACTIVE" % i in text for i in range(8))


@pytest.mark.parametrize("topology", [None, {}, {"gpus": [], "hcas": [], "ethernet": []}])
def test_empty_topology(topology):
    assert topology_summary(topology) == "GPUs: none\nHCAs: none\nEthernet: none (physical)\n"
