# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rolling upgrades (playbooks/upgrade.yml): the batch plan, what changes per node, Slurm's upgrade rules (controller side, pure).

- upgrade_batches: the batches Ansible's `serial` makes of the hosts (for --check's plan; Ansible's own percent rule).
- upgrade_serial_steps: upgrade_serial as a list (an AWX text answer "1,5,10%" cut at its commas).
- upgrade_installed: the version of each component a node runs, from the probe facts and the package database.
- upgrade_targets: the version of each component the inventory pins, for the components this run may change.
- upgrade_changes: the components whose installed version differs from the target, and the builds to redo.
- upgrade_gate: the health gate after a node's upgrade (NHC, versions, acceptance node checks, site commands).
- upgrade_batch_verdict: the run's report after a batch, and whether the failure budget stops it.
- upgrade_input_problems: the run's own settings (batches, budget, time-outs, components), named as the user wrote them.
- upgrade_plan_lines: the plan --check prints, batch by batch.
- upgrade_drain_reason: the drain reason of a node being upgraded.
- upgrade_daemon_versions, upgrade_slurm_daemons: the Slurm daemons' versions across the cluster, for the order check.
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
# Built from source by build_artifact, in build order: a build key change rebuilds them (upgrade_changes).
_BUILT_COMPONENTS = ('ucx', 'openmpi', 'nccl_tests')
_SLURM_VERSION = re.compile(r'^(\d{2})\.(\d{2})(?:\.(\d+))?')
# The drain reason of this playbook: a node drained with another reason is someone else's and is never resumed.
REASON_PREFIX = 'trainstack upgrade'
# Package names that carry each component's version (Debian/Ubuntu, then EL), as the roles install them.
_PACKAGES = {
    'driver': ('libnvidia-ml1', 'libnvidia-compute-', 'nvidia-driver-NVML', 'nvidia-driver-cuda-libs'),
    'nccl': ('libnccl2', 'libnccl'),
    'slurm': ('slurmd', 'slurmctld', 'slurmdbd', 'slurm-client', 'slurm'),
}
# A node's outcome after its batch (tasks/node.yml); any other status (pending: its play stopped) counts as failed.
_STATUSES = ('upgraded', 'unchanged', 'skipped', 'waiting', 'gate_failed', 'failed')


def _error(message):
    raise AnsibleFilterError('upgrade: ' + message)


def upgrade_serial_steps(serial):
    """``upgrade_serial`` as the play's ``serial`` takes it, a list: an AWX text answer such as "1,5,10%" is cut at its
    commas (Ansible would take the whole text as one step); spaces around a step go, anything else stays to be judged."""
    if isinstance(serial, string_types):
        return [part.strip(' ') for part in serial.split(',')] if serial else []
    if isinstance(serial, (list, tuple)):
        return list(serial)
    return [] if serial is None else [serial]


def upgrade_batches(hosts, serial=None):
    """The batches `serial` makes of ``hosts`` (in order): a number, a percentage or a list of them, the last one
    repeating, as Ansible's PlaybookExecutor cuts them (a percentage of all hosts, rounded down, at least 1)."""
    hosts = list(hosts or [])
    steps = upgrade_serial_steps(serial)
    if not steps:
        return [hosts] if hosts else []
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


def _package_version(packages, names):
    """The installed version (with its Debian revision or EL release) of the first of ``names`` in package_facts'
    ``packages``; a name ending in '-' matches any package it begins (libnvidia-compute-<branch>)."""
    packages = packages or {}
    for name in names:
        found = [packages[key] for key in sorted(packages) if key == name or (name.endswith('-') and key.startswith(name))]
        for entries in found:
            for entry in entries or []:
                version = _normal(entry.get('version'))
                release = _normal(entry.get('release'))
                if version:
                    return version + ('-' + release if release else '')
    return ''


def upgrade_installed(gpu_stack, packages=None, slurm_version_output='', built=None):
    """Component -> the version the node runs ('' where not found).

    The package database first (it holds what the roles pin, with the revision: NCCL's 2.26.2-1+cuda12.8), then the
    probe (``gpu_stack``: nvidia-smi, headers, the torch wheel), then ``slurmd -V`` (``slurm 22.05.8``); UCX, Open MPI
    and nccl-tests from the .build-info.json of their current build (``built``: name -> its content or None).
    """
    stack = gpu_stack or {}

    def probed(component):
        return _normal((stack.get(component) or {}).get('version'))

    slurm = re.search(r'(\d{2}\.\d{2}\.\d+)', _normal(slurm_version_output))
    return {
        'driver': probed('driver') or _package_version(packages, _PACKAGES['driver']).split('-', maxsplit=1)[0],
        'cuda': probed('cuda'),
        'nccl': _package_version(packages, _PACKAGES['nccl']) or probed('nccl'),
        'slurm': _package_version(packages, _PACKAGES['slurm']) or (slurm.group(1) if slurm else ''),
        'pytorch': probed('pytorch'),
        'ucx': _normal(((built or {}).get('ucx') or {}).get('version')),
        'openmpi': _normal(((built or {}).get('openmpi') or {}).get('version')),
        'nccl_tests': _normal(((built or {}).get('nccl_tests') or {}).get('version')),
    }


def upgrade_targets(settings, components=None):
    """Component -> the version the inventory pins, for the components this run may change.

    ``settings`` holds per component ``version`` and ``managed`` (false: the role leaves it alone here, e.g. source
    preinstalled, or the node is not in the role's group); a managed component without a version is not compared.
    """
    selected = list(COMPONENTS) if components in (None, '', []) else _components(components)
    targets = {}
    for component in selected:
        item = (settings or {}).get(component) or {}
        version = _normal(item.get('version'))
        if item.get('managed', True) and version:
            targets[component] = version
    return targets


def _components(components):
    if not isinstance(components, (list, tuple)):
        _error('upgrade_components must be a list of components such as [nccl, driver], got %r' % (components,))
    unknown = [str(item) for item in components if item not in COMPONENTS]
    if unknown:
        _error('upgrade_components: unknown %s (known: %s)' % (', '.join(unknown), ', '.join(COMPONENTS)))
    return [component for component in COMPONENTS if component in components]


def _same(have, target):
    """An installed version meets a pin when it equals it, or the pin leaves out what follows it: a Debian revision
    (580.95.05 against 580.95.05-1), a local label (2.13.0 against 2.13.0+cpu), a patch level (12.8 against 12.8.93)."""
    return have == target or (have.startswith(target) and have[len(target)] in '-+.')


_MAJOR_MINOR = re.compile(r'(\d+)\.(\d+)')


def _major_minor(version):
    match = _MAJOR_MINOR.match(_normal(version))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _stale_build(component, built, targets, change):
    """Why the current build of UCX, Open MPI or nccl-tests must be rebuilt although its version is the pin's ('' when
    it need not): its build key (build_artifact: CUDA, the build it links) no longer matches what the node gets."""
    info = built.get(component) or {}
    cuda = _major_minor(targets.get('cuda'))
    # 'none': built without CUDA on purpose; only a build against another CUDA release is stale.
    if cuda and _major_minor(info.get('cuda')) not in (None, cuda):
        return 'built against CUDA %s, the pin is %s' % (info.get('cuda'), _normal(targets.get('cuda')))
    linked = {'openmpi': ('ucx', 'ucx-'), 'nccl_tests': ('openmpi', 'mpi:')}.get(component)
    if linked:
        name, prefix = linked
        depends = [str(item)[len(prefix):] for item in info.get('depends') or [] if str(item).startswith(prefix)]
        if depends and name in change:
            return 'it links %s, which changes' % name
        current = _normal((built.get(name) or {}).get('id'))
        if depends and current and current not in depends:
            return 'it links %s build %s, the current one is %s' % (name, depends[0], current)
    return ''


def upgrade_changes(current, targets, built=None):
    """{'change': [components], 'reboot': bool, 'versions': {component: [current, target]}, 'rebuild': {component:
    why}} for one node.

    ``targets`` maps a component to the version wanted ('' or absent: not managed); ``current`` to the version the
    node runs ('' or absent: not installed). A component changes where both differ; the driver's kernel module
    needs a reboot. ``built`` (name -> the .build-info.json of its current build, as for upgrade_installed) adds the
    builds whose version is the pin's but whose build key is not: built against another CUDA, or linking a UCX or
    Open MPI build that is no longer (or no longer will be) the current one. A re-run after an interrupted upgrade
    finds them too.
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
        if not _same(have, target):
            change.append(component)
    rebuild = {}
    for component in _BUILT_COMPONENTS:
        if component in versions and component not in change and versions[component][0]:
            why = _stale_build(component, built or {}, targets, change)
            if why:
                rebuild[component] = why
                change.append(component)
    change.sort(key=COMPONENTS.index)
    return {'change': change, 'reboot': any(component in REBOOT_COMPONENTS for component in change), 'versions': versions,
            'rebuild': rebuild}


def _first_line(*texts):
    for text in texts:
        for line in _normal(text).splitlines():
            if line.strip():
                return line.strip()
    return ''


def upgrade_gate(after, nhc=None, node_checks=None, commands=None):
    """The health gate a node passes before it goes back to Slurm: {'healthy', 'failed', 'reason'}.

    ``after`` is upgrade_changes of the node after the upgrade (any component still off its target fails);
    ``nhc`` the result of one NHC run (None: the node has no NHC); ``node_checks`` the acceptance role's node checks
    (a ``fail`` fails, ``skip``/``info`` do not); ``commands`` the results of the site's own gate commands.
    """
    failed = []
    rebuild = (after or {}).get('rebuild') or {}
    for component in (after or {}).get('change', []):
        have, target = ((after or {}).get('versions') or {}).get(component, [None, None])
        failed.append('%s %s is %s' % (component, have, rebuild[component]) if component in rebuild
                      else '%s runs %s, not %s' % (component, have or 'nothing', target))
    if nhc is not None and nhc.get('rc') != 0:
        failed.append('NHC failed: %s' % (_first_line(nhc.get('stdout'), nhc.get('stderr')) or 'exit %s' % nhc.get('rc')))
    for check in node_checks or []:
        if check.get('status') == 'fail':
            failed.append('%s: %s' % (check.get('check'), _normal(check.get('reason')) or 'failed'))
    for result in commands or []:
        if result.get('skipped'):
            continue
        if result.get('rc') != 0:
            argv = result.get('cmd') or result.get('item') or []
            command = ' '.join(argv) if isinstance(argv, (list, tuple)) else _normal(argv)
            # What the command said (the command module's own msg only repeats "non-zero return code").
            said = _first_line(result.get('stderr'), result.get('stdout'))
            failed.append('%s: exit %s%s' % (command, result.get('rc'), (', ' + said) if said else ''))
    reason = '%s: gate failed: %s' % (REASON_PREFIX, '; '.join(failed)) if failed else ''
    # scontrol keeps a reason of any length, sinfo shows the start: the first failure first, the whole text capped.
    return {'healthy': not failed, 'failed': failed, 'reason': reason[:250]}


def upgrade_batch_verdict(outcomes, hosts, batch, max_fail_percentage=0):
    """The run's report after one batch, and whether it stops here.

    ``outcomes`` maps a host to its outcome ({'status': upgraded | unchanged | skipped | waiting | gate_failed |
    failed, 'detail': text}); a host of ``batch`` without one was lost (unreachable, or the play failed on it).
    The batch stops the run when its failed share EXCEEDS ``max_fail_percentage``, as Ansible's own
    max_fail_percentage does (an equal share goes on). ``hosts`` are all hosts of the run, in order.
    """
    outcomes = dict(outcomes or {})
    batch = list(batch or [])
    for host in batch:
        outcome = outcomes.get(host)
        if not isinstance(outcome, dict):
            outcomes[host] = {'status': 'failed', 'detail': 'lost during its batch (unreachable, or its play failed)'}
        elif outcome.get('status') not in _STATUSES:
            outcomes[host] = {'status': 'failed', 'detail': _normal(outcome.get('detail')) or 'stopped before its outcome'}
    failed_here = [host for host in batch if outcomes[host].get('status') in ('failed', 'gate_failed')]
    share = 100.0 * len(failed_here) / len(batch) if batch else 0.0
    stop = share > float(max_fail_percentage)

    def having(*statuses):
        return [host for host in hosts if isinstance(outcomes.get(host), dict) and outcomes[host].get('status') in statuses]

    not_done = [host for host in hosts if host not in outcomes]
    report = {
        'stop': stop,
        'failed_percentage': round(share, 1),
        'upgraded': having('upgraded'),
        'unchanged': having('unchanged'),
        'skipped': having('skipped'),
        'waiting': having('waiting'),
        'gate_failed': having('gate_failed'),
        'failed': having('failed'),
        'not_done': not_done,
    }
    lines = []
    for status in ('upgraded', 'unchanged', 'skipped', 'waiting', 'gate_failed', 'failed'):
        for host in report[status]:
            detail = _normal(outcomes[host].get('detail'))
            lines.append('%s: %s%s' % (host, status.replace('_', ' '), (' - ' + detail) if detail else ''))
    if not_done:
        lines.append('not done (%s): %s' % ('the run stopped' if stop else 'later batches', ', '.join(not_done)))
    if stop:
        lines.append('STOPPED: %s of %d nodes in this batch failed (%.1f %%), more than upgrade_max_fail_percentage %s'
                     % (len(failed_here), len(batch), share, max_fail_percentage))
    report['lines'] = lines
    return report


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def upgrade_input_problems(settings):
    """The run's own settings, each problem naming the variable as the user wrote it (AWX survey answers included:
    a survey checks type and bounds only, and a text answer arrives as a string)."""
    settings = settings or {}
    problems = []
    steps = upgrade_serial_steps(settings.get('upgrade_serial'))
    if 'upgrade_serial' in settings and not steps:
        problems.append('upgrade_serial is empty: give batches such as [1, 5, "10%"] ("100%" upgrades every node at once)')
    for step in steps:
        if not (_whole(step) and step >= 0) and not (isinstance(step, string_types) and re.match(r'^(?:\d+|(?:100|[1-9]?\d)%)\Z', step)):
            problems.append('upgrade_serial: %s is not a whole number of nodes or a percentage such as "10%%"' % (repr(step),))
    if steps and all(_whole(step) and step == 0 or step in ('0', '0%') for step in steps):
        problems.append('upgrade_serial: a batch of 0 nodes')
    for name, low, high in (('upgrade_max_fail_percentage', 0, 100), ('upgrade_drain_timeout', 0, 7 * 86400),
                            ('upgrade_drain_poll', 1, 3600), ('upgrade_reboot_timeout', 60, 86400)):
        value = settings.get(name)
        if value is None:
            continue
        if not _whole(value):
            problems.append('%s must be a whole number, got %s' % (name, repr(value)))
        elif not low <= value <= high:
            problems.append('%s must be between %d and %d, got %d' % (name, low, high, value))
    for name in ('upgrade_cancel_jobs', 'upgrade_reboot'):
        value = settings.get(name)
        if value is not None and not isinstance(value, bool):
            problems.append('%s must be true or false, got %s' % (name, repr(value)))
    try:
        _components(settings.get('upgrade_components') or [])
    except AnsibleFilterError as error:
        problems.append(str(error).replace('upgrade: ', '', 1))
    commands = settings.get('upgrade_gate_commands')
    if commands is not None:
        if not isinstance(commands, (list, tuple)) or not all(
                isinstance(argv, (list, tuple)) and argv and all(isinstance(part, string_types) for part in argv) for argv in commands):
            problems.append('upgrade_gate_commands must be a list of commands, each a list of strings (argv, no shell)')
        elif any(not argv[0].startswith('/') and '/' in argv[0] for argv in commands):
            problems.append('upgrade_gate_commands: a program is a name found in PATH or an absolute path')
    return problems


def upgrade_slurm_daemons(installed, controllers=None, dbds=None):
    """{slurmdbd: v, slurmctld: [v, ...], slurmd: {host: v}} for slurm_upgrade_problems, from each host's
    upgrade_installed (host -> {'slurm': package or slurmd version, 'slurmctld': v, 'slurmdbd': v})."""
    daemons = {'slurmdbd': '', 'slurmctld': [], 'slurmd': {}}
    for host in sorted(installed or {}):
        versions = (installed or {})[host] or {}
        if host in (dbds or []) and versions.get('slurmdbd') and not daemons['slurmdbd']:
            daemons['slurmdbd'] = versions['slurmdbd']
        if host in (controllers or []) and versions.get('slurmctld'):
            daemons['slurmctld'].append(versions['slurmctld'])
        if versions.get('slurmd'):
            daemons['slurmd'][host] = versions['slurmd']
    return daemons


def upgrade_daemon_versions(results):
    """Daemon -> version from the results of `<daemon> -V` (``slurm 22.05.8``), for upgrade_slurm_daemons."""
    versions = {}
    for result in results or []:
        match = re.search(r'(\d{2}\.\d{2}\.\d+)', _normal(result.get('stdout')))
        if result.get('rc') == 0 and match:
            versions[_normal(result.get('item'))] = match.group(1)
    return versions


def upgrade_drain_reason(plan):
    """The drain reason of a node being upgraded: the prefix, then each component and its target."""
    versions = (plan or {}).get('versions') or {}
    return '%s: %s' % (REASON_PREFIX, ', '.join('%s %s' % (component, versions[component][1]) for component in (plan or {}).get('change', [])))


def upgrade_plan_lines(batches, plans):
    """The plan --check prints: a line per batch and per node, what changes from which version to which."""
    lines = []
    for number, batch in enumerate(batches or [], 1):
        lines.append('batch %d (%d node%s): %s' % (number, len(batch), '' if len(batch) == 1 else 's', ', '.join(batch)))
        for host in batch:
            plan = (plans or {}).get(host)
            if not isinstance(plan, dict):
                lines.append('  %s: not read (unreachable, or its plan failed)' % host)
                continue
            rebuild = plan.get('rebuild') or {}
            changes = [('%s %s rebuilt (%s)' % (component, plan['versions'][component][1], rebuild[component]) if component in rebuild
                        else '%s %s -> %s' % (component, plan['versions'][component][0] or 'none', plan['versions'][component][1]))
                       for component in plan.get('change', [])]
            text = '; '.join(changes) if changes else 'no version changes'
            if plan.get('drained_by_others'):
                text += '; SKIPPED: drained by someone else (%s)' % plan['drained_by_others']
            lines.append('  %s: %s%s' % (host, text, '; reboot' if plan.get('reboot') else ''))
    return lines


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
            'upgrade_serial_steps': upgrade_serial_steps,
            'upgrade_installed': upgrade_installed,
            'upgrade_targets': upgrade_targets,
            'upgrade_changes': upgrade_changes,
            'upgrade_gate': upgrade_gate,
            'upgrade_batch_verdict': upgrade_batch_verdict,
            'upgrade_input_problems': upgrade_input_problems,
            'upgrade_plan_lines': upgrade_plan_lines,
            'upgrade_drain_reason': upgrade_drain_reason,
            'upgrade_slurm_daemons': upgrade_slurm_daemons,
            'upgrade_daemon_versions': upgrade_daemon_versions,
            'slurm_upgrade_problems': slurm_upgrade_problems,
        }
