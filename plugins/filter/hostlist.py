# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm hostlist filters: hostlist_expand and hostlist_compress (documented in the sidecar YAML files)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, compress, expand


def _as_plain(value, name):
    """Strings and lists/tuples of strings pass; Ansible's tagged str subclasses are fine."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [str(item) if isinstance(item, str) else item for item in value]
    raise AnsibleFilterError('%s expects a string or a list of strings, got %s' % (name, type(value).__name__))


def hostlist_expand(value):
    """'gpu[01-03],cpu1' -> ['gpu01', 'gpu02', 'gpu03', 'cpu1'] (scontrol show hostnames)."""
    value = _as_plain(value, 'hostlist_expand')
    if isinstance(value, list) and not value:
        return []
    try:
        return expand(value)
    except HostlistError as exc:
        raise AnsibleFilterError('hostlist_expand: %s' % exc) from exc


def hostlist_compress(value):
    """['gpu01', 'gpu02', 'gpu03', 'cpu1'] -> 'gpu[01-03],cpu1' (scontrol show hostlist)."""
    value = _as_plain(value, 'hostlist_compress')
    if isinstance(value, list) and not value:
        return ''
    try:
        return compress(value)
    except HostlistError as exc:
        raise AnsibleFilterError('hostlist_compress: %s' % exc) from exc


class FilterModule:
    """Slurm hostlist expressions."""

    def filters(self):
        return {
            'hostlist_expand': hostlist_expand,
            'hostlist_compress': hostlist_compress,
        }
