# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rolling upgrades (playbooks/upgrade.yml): the batch plan, what changes per node, Slurm's upgrade rules (controller side, pure).

- upgrade_batches: the batches Ansible's `serial` makes of the hosts (for --check's plan; Ansible's own percent rule).
- upgrade_changes: the components whose installed version differs from the target.
- slurm_upgrade_problems: Slurm's upgrade order and compatibility window (slurm.schedmd.com/upgrades.html).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types
from ansible.utils.helpers import pct_to_int

# Components a node upgrade may change, in the order the roles apply them; the kernel module needs a reboot.
COMPONENTS = ('driver', 'cuda', 'nccl', 'slurm', 'ucx', 'openmpi', 'nccl_tests', 'pytorch')
REBOOT_COMPONENTS = ('driver',)
_SLURM_VERSION = re.compile(r'^(\d{2})\.(\d{2})(?:\.(\d+))?')


def _error(message):
    raise AnsibleFilterError('upgrade: ' + message)


def upgrade_batches(hosts, serial=None):
    """The batches `serial` makes of ``hosts`` (in order): a number, a percentage or a list of them, the last one
    repeating, as Ansible's PlaybookExecutor cuts them (a percentage of all hosts, rounded down, at least 1)."""
    hosts = list(hosts or [])
    if serial in (None, '', []):
        return [hosts] if hosts else []
    steps = list(serial) if isinstance(serial, (list, tuple)) else [serial]
    for step in steps:
        if not (isinstance(step, int) and not isinstance(step, bool)) and not (
                isinstance(step, string_types) and re.match(r'^\d+%?\Z', step)):
            _error('upgrade_serial entries are whole numbers or percentages such as "10%%", got %r' % (step,))
    total, batches, index = len(hosts), [], 0
    while hosts:
        size = pct_to_int(steps[index], total)
        if size <= 0:
            batches.append(hosts)
            break
        batches.append(hosts[:size])
        hosts = hosts[size:]
        index = min(index + 1, len(steps) - 1)
    return batches


def _normal(version):
    return str(version if version is not None else '').strip()


def upgrade_changes(current, targets):
    """{'change': [components], 'reboot': bool, 'versions': {component: [current, target]}} for one node.

    ``targets`` maps a component to the version wanted ('' or absent: not managed); ``current`` to the version the
    node runs ('' or absent: not installed). A component changes where both differ; the driver's kernel module
    needs a reboot.
    """
    current = dict(current or {})
    targets = dict(targets or {})
    unknown = sorted(set(targets) - set(COMPONENTS))
    if unknown:
        _error('unknown components %s (known: %s)' % (', '.join(unknown), ', '.join(COMPONENTS)))
    change, versions = [], {}
    for component in COMPONENTS:
        target = _normal(targets.get(component))
        if not target:
            continue
        have = _normal(current.get(component))
        versions[component] = [have or None, target]
        if have != target:
            change.append(component)
    return {'change': change, 'reboot': any(component in REBOOT_COMPONENTS for component in change), 'versions': versions}


def _major(version, what):
    match = _SLURM_VERSION.match(_normal(version))
    if not match:
        _error('%s: %r is not a Slurm version such as 24.11.5' % (what, version))
    return int(match.group(1)), int(match.group(2))


def _window(target):
    # "Slurm has long supported in-place upgrades from the previous two major releases ... Slurm 24.11 introduced
    # compatibility with the previous three major releases" (upgrades.html, Compatibility Window).
    return 3 if target >= (24, 11) else 2


def slurm_upgrade_problems(installed, target, majors=None):
    """What keeps ``installed`` ({slurmdbd: v, slurmctld: v or [v], slurmd: {node: v}}) from upgrading to ``target``.

    Slurm's order: slurmdbd first, then slurmctld, then slurmd; every daemon may be newer than the ones it serves,
    never older (slurmdbd >= slurmctld >= slurmd), and an upgrade may skip at most the compatibility window of
    major releases. ``majors`` lists the known major releases in order (data/slurm_releases.yml).
    """
    if not target:
        return []
    target_major = _major(target, 'slurm_upgrade_version')
    known = [tuple(int(part) for part in str(item).split('.')[:2]) for item in (majors or [])]
    problems = []
    versions = {}
    for daemon in ('slurmdbd', 'slurmctld', 'slurmd'):
        value = (installed or {}).get(daemon)
        if isinstance(value, dict):
            items = sorted(value.items())
        elif isinstance(value, (list, tuple)):
            items = [('%s %d' % (daemon, number), item) for number, item in enumerate(value, 1)]
        elif value:
            items = [(daemon, value)]
        else:
            items = []
        versions[daemon] = [(who, _major(version, who), _normal(version)) for who, version in items if version]
    for daemon, found in versions.items():
        for who, major, text in found:
            if major > target_major:
                problems.append('%s runs Slurm %s, newer than the target %s: Slurm is never downgraded' % (who, text, target))
            elif known and major in known and target_major in known:
                behind = known.index(target_major) - known.index(major)
                if behind > _window(target_major):
                    problems.append('%s runs Slurm %s, %d major releases before %s: Slurm %s upgrades from at most %d '
                                    'releases back (slurm.schedmd.com/upgrades.html); upgrade through an intermediate release'
                                    % (who, text, behind, target, '%02d.%02d' % target_major, _window(target_major)))
            elif known and major not in known:
                problems.append('%s runs Slurm %s, a major release data/slurm_releases.yml does not list' % (who, text))
    # The order holds before and during the upgrade: each tier at least as new as the one below it.
    for upper, lower in (('slurmdbd', 'slurmctld'), ('slurmctld', 'slurmd')):
        if versions[upper] and versions[lower]:
            oldest_upper = min(versions[upper], key=lambda item: item[1])
            newest_lower = max(versions[lower], key=lambda item: item[1])
            if oldest_upper[1] < newest_lower[1]:
                problems.append('%s (Slurm %s) is older than %s (Slurm %s): Slurm wants %s >= %s'
                                % (oldest_upper[0], oldest_upper[2], newest_lower[0], newest_lower[2], upper, lower))
    return problems


class FilterModule:
    """Rolling upgrade filters."""

    def filters(self):
        return {
            'upgrade_batches': upgrade_batches,
            'upgrade_changes': upgrade_changes,
            'slurm_upgrade_problems': slurm_upgrade_problems,
        }
