# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os

from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner, find_program


def program(directory, name, body):
    path = directory / name
    path.write_text('#!/bin/sh\n' + body + '\n')
    path.chmod(0o755)
    return str(path)


def test_replays_recordings_and_missing_means_unavailable(tmp_path):
    (tmp_path / '.commands').mkdir()
    (tmp_path / '.commands' / 'nvidia-smi_topo-m.txt').write_text('recorded\n')
    runner = CommandRunner(str(tmp_path))
    assert runner.output('nvidia-smi_topo-m', ['/nonexistent/nvidia-smi', 'topo', '-m']) == 'recorded\n'
    assert runner.output('nvidia-smi_nvlink-s', ['nvidia-smi', 'nvlink', '-s']) is None


def test_live_runs_once_per_key(tmp_path):
    counter = tmp_path / 'count'
    echo = program(tmp_path, 'fake-smi', 'echo run >> %s; echo "$@"' % counter)
    runner = CommandRunner('/')
    assert runner.output('key', [echo, 'topo', '-m']) == 'topo -m\n'
    assert runner.output('key', [echo, 'topo', '-m']) == 'topo -m\n'
    assert counter.read_text() == 'run\n'


def test_live_failures_are_unavailable(tmp_path):
    runner = CommandRunner('/', timeout=1)
    assert runner.output('fails', [program(tmp_path, 'fails', 'echo partial; exit 9')]) is None
    assert runner.output('hangs', [program(tmp_path, 'hangs', 'exec sleep 5')]) is None
    assert runner.output('absent', ['trainstack-no-such-program']) is None
    assert runner.output('not-executable', [str(tmp_path / 'count')]) is None


def test_bare_names_are_also_searched_in_nvidia_dirs(tmp_path, monkeypatch):
    monkeypatch.setattr('ansible_collections.trainstack.cluster.plugins.module_utils._commands.EXTRA_SEARCH_DIRS', (str(tmp_path),))
    monkeypatch.setenv('PATH', '/nonexistent')
    path = program(tmp_path, 'nvidia-smi', 'true')
    assert find_program('nvidia-smi') == path
    assert find_program(path) == path
    assert find_program(os.path.join(str(tmp_path), 'absent')) is None
