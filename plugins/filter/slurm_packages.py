# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm packages to install, pinned to slurm_version (controller side, pure)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def slurm_package_pins(packages, version='', pkg_mgr='apt'):
    """``packages`` with Slurm's own (names starting with ``slurm``) pinned to ``version``: ``slurmd=22.05.8-4+deb12u3``
    for apt, ``slurm-slurmd-24.11.5`` for dnf/yum; munge, MariaDB and the others as they are. Empty: no pin."""
    version = str(version or '').strip()
    if not version:
        return list(packages or [])
    if any(character.isspace() or character in '=<>*' for character in version):
        raise AnsibleFilterError('slurm_version must be one package version such as 22.05.8-4+deb12u3, got %r' % version)
    separator = '=' if pkg_mgr == 'apt' else '-'
    return [name + separator + version if str(name).startswith('slurm') else name for name in packages or []]


class FilterModule:
    """Slurm package filters."""

    def filters(self):
        return {'slurm_package_pins': slurm_package_pins}
