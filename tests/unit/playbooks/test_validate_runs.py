# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/validate.yml runs side by side: one report folder per run with the `latest` link, and the run's
root-only scratch directory on the nodes (made, checked, removed; refused where others could write its parent).

The play runs locally against recorded roots (test_validate.run_validate), as root (CI runs as root).
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from test_validate import run_validate, task_results

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the scratch directory must be root\'s: the play runs as root (CI does)')


def test_each_run_keeps_its_report_beside_the_earlier_ones_and_leaves_no_scratch_directory(tmp_path):
    # Two runs into one output folder: each its own report folder and scratch directory, the first report kept.
    work = tmp_path / 'work'
    work.mkdir(mode=0o755)
    options = ('-e', json.dumps({'acceptance_fail_on_error': False, 'acceptance_scratch_dir': str(work / 'ts')}))
    run_dirs, run_ids, out = [], [], None
    for attempt in (1, 2):
        (tmp_path / str(attempt)).mkdir()
        same_folder = ('-e', 'acceptance_output_dir=' + str(out)) if out else ()
        proc, report, out = run_validate(tmp_path / str(attempt), *(options + same_folder))
        assert proc.returncode == 0, proc.stderr
        made = task_results(report, "Make this run's scratch directory (root, 0700)")
        # Every node names the same directory (one run id from the controller): <acceptance_scratch_dir>-<run id>.
        commands = {tuple(result['cmd']) for result in made.values()}
        assert len(made) == 3 and len(commands) == 1, commands
        run_dir = commands.pop()[-1]
        assert run_dir.startswith(str(work / 'ts') + '-') and not os.path.exists(run_dir)
        run_dirs.append(run_dir)
        written = next(iter(task_results(report, 'Write the report (JSON, Markdown, PNG)').values()))
        run_id = os.path.basename(written['run_dir'])
        run_ids.append(run_id)
        assert run_dir == str(work / 'ts') + '-' + run_id
        out = pathlib.Path(os.path.dirname(written['run_dir']))
        document = json.loads((out / run_id / 'acceptance.json').read_text(encoding='utf-8'))
        assert document['meta']['run_id'] == run_id and os.readlink(out / 'latest') == run_id
    assert run_dirs[0] != run_dirs[1] and os.listdir(work) == []
    assert sorted(os.listdir(out)) == sorted(run_ids + ['latest'])
    assert all((out / run_id / 'acceptance.md').is_file() for run_id in run_ids)


@pytest.mark.parametrize('mode, words', [(0o777, 'is writable by group or others (mode 0777) and not sticky')])
def test_a_scratch_parent_others_can_write_is_refused_before_any_hook(tmp_path, mode, words):
    work = tmp_path / 'open'
    work.mkdir()
    os.chmod(work, mode)
    proc, report, out = run_validate(tmp_path, '-e', json.dumps({'acceptance_scratch_dir': str(work / 'ts')}))
    assert proc.returncode == 2, proc.stderr
    failed = task_results(report, 'Check the parent (root\'s, a directory, not writable by others unless sticky)')
    assert {host: result.get('failed') for host, result in failed.items()} == {'gpu-a': True, 'gpu-b': True, 'cpu-c': True}
    message = failed['gpu-a']['msg']
    assert message.startswith('acceptance_scratch_dir: refusing %s as the parent' % work) and words in message, message
    assert os.listdir(work) == [] and not out.exists()
