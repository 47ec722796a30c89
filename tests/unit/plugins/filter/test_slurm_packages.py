# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_package_pins: Slurm's packages pinned to slurm_version, the others left alone."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.slurm_packages import slurm_package_pins


@pytest.mark.parametrize('packages, version, pkg_mgr, expected', [
    (['munge', 'slurm-client', 'slurmd'], '22.05.8-4+deb12u3', 'apt', ['munge', 'slurm-client=22.05.8-4+deb12u3', 'slurmd=22.05.8-4+deb12u3']),
    (['munge', 'slurm', 'slurm-slurmd'], '24.11.5-1.el9', 'dnf', ['munge', 'slurm-24.11.5-1.el9', 'slurm-slurmd-24.11.5-1.el9']),
    (['slurmdbd', 'mariadb-server'], '', 'apt', ['slurmdbd', 'mariadb-server']),
])
def test_pins(packages, version, pkg_mgr, expected):
    assert slurm_package_pins(packages, version, pkg_mgr) == expected


@pytest.mark.parametrize('version', ['22.05.8 --allow-downgrades', '22.05*', '>=22.05'])
def test_a_version_that_is_not_one_is_refused(version):
    with pytest.raises(AnsibleFilterError, match='slurm_version must be one package version'):
        slurm_package_pins(['slurmd'], version)
