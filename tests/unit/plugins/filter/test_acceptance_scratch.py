# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""acceptance_scratch_problems on what ansible.builtin.stat (follow: false) returns for real paths made here."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible.modules import stat as stat_module
from ansible_collections.trainstack.cluster.plugins.filter.acceptance_scratch import acceptance_scratch_problems
from topology_support import run_module

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='ownership by uid 0 needs the tests to run as root (CI does)')


def stat(path, capsys):
    return run_module(stat_module.main, {'path': str(path), 'follow': False, 'get_checksum': False}, capsys)['stat']


def made(path, mode, uid=None):
    path.mkdir()
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    return path


@needs_root
def test_a_root_directory_of_mode_0700_passes(tmp_path, capsys):
    assert acceptance_scratch_problems(stat(made(tmp_path / 'run', 0o700), capsys)) == []


@needs_root
@pytest.mark.parametrize('mode, words', [(0o755, 'has mode 0755, not 0700'), (0o1700, 'has mode 1700, not 0700')])
def test_another_mode_is_refused(tmp_path, capsys, mode, words):
    assert acceptance_scratch_problems(stat(made(tmp_path / 'run', mode), capsys)) == ['%s %s' % (tmp_path / 'run', words)]


@needs_root
def test_a_directory_of_another_user_is_refused_even_with_mode_0700(tmp_path, capsys):
    problems = acceptance_scratch_problems(stat(made(tmp_path / 'run', 0o700, uid=4321), capsys))
    assert problems == ['%s is owned by uid 4321 (?), not by root: run the play as root (become)' % (tmp_path / 'run')]


@needs_root
def test_a_symbolic_link_to_a_good_directory_is_refused(tmp_path, capsys):
    made(tmp_path / 'elsewhere', 0o700)
    os.symlink(tmp_path / 'elsewhere', tmp_path / 'run')
    problems = acceptance_scratch_problems(stat(tmp_path / 'run', capsys))
    assert problems[0] == '%s is a symbolic link (to %s)' % (tmp_path / 'run', tmp_path / 'elsewhere')


def test_a_file_and_a_missing_path_are_refused(tmp_path, capsys):
    (tmp_path / 'file').write_text('')
    assert '%s is not a directory' % (tmp_path / 'file') in acceptance_scratch_problems(stat(tmp_path / 'file', capsys))
    # stat says no more than exists=false: the task's message names the path.
    assert acceptance_scratch_problems(stat(tmp_path / 'none', capsys)) == ['the directory does not exist']


@needs_root
@pytest.mark.parametrize('mode, ok', [(0o1777, True), (0o755, True), (0o777, False), (0o775, False)])
def test_a_parent_writable_by_others_passes_only_when_sticky(tmp_path, capsys, mode, ok):
    problems = acceptance_scratch_problems(stat(made(tmp_path / 'parent', mode), capsys), parent=True)
    assert problems == ([] if ok else ['%s is writable by group or others (mode %04o) and not sticky' % (tmp_path / 'parent', mode)])


def test_a_value_that_is_not_a_stat_result_is_an_error():
    with pytest.raises(AnsibleFilterError, match='expected the stat result'):
        acceptance_scratch_problems('/var/tmp')
