# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The acceptance run's scratch directory on a node, judged from ``ansible.builtin.stat`` (follow: false): pure.

Job outputs and scratch files of the built-in hooks live in one directory per run (tasks/scratch.yml). Only root
may be able to place or read anything in it, so the directory must be a real directory (a symbolic link could send
the outputs anywhere), owned by uid 0 and of mode 0700; its parent must be root's and, unless sticky (/var/tmp),
writable by nobody else (else the directory could be renamed away and replaced).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def acceptance_scratch_problems(stat, parent=False):
    """Why the directory (or, with parent, the directory holding it) cannot hold this run's files; [] when it can."""
    if not isinstance(stat, dict):
        raise AnsibleFilterError('acceptance_scratch_problems: expected the stat result of ansible.builtin.stat, got %r' % (stat,))
    path = stat.get('path', 'the directory')
    if not stat.get('exists'):
        return ['%s does not exist' % path]
    problems = []
    if stat.get('islnk'):
        problems.append('%s is a symbolic link (to %s)' % (path, stat.get('lnk_source') or stat.get('lnk_target') or '?'))
    elif not stat.get('isdir'):
        problems.append('%s is not a directory' % path)
    if stat.get('uid') != 0:
        problems.append('%s is owned by uid %s (%s), not by root: run the play as root (become)' % (
            path, stat.get('uid'), stat.get('pw_name') or '?'))
    try:
        mode = int(str(stat.get('mode')), 8)
    except ValueError:
        return problems + ['%s has no readable mode (%r)' % (path, stat.get('mode'))]
    if parent:
        if mode & 0o022 and not mode & 0o1000:
            problems.append('%s is writable by group or others (mode %04o) and not sticky' % (path, mode))
    elif mode & 0o7777 != 0o700:
        problems.append('%s has mode %04o, not 0700' % (path, mode))
    return problems


class FilterModule:
    """Scratch directory filter of the acceptance role."""

    def filters(self):
        return {'acceptance_scratch_problems': acceptance_scratch_problems}
