# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""acceptance_report module: files, idempotence, check mode and diff on a report from recorded outputs."""

from __future__ import annotations

import json

from acceptance_support import recorded_report
from ansible_collections.trainstack.cluster.plugins.modules import acceptance_report
from topology_support import run_module


def write(dest, capsys, **options):
    return run_module(acceptance_report.main, dict({'report': recorded_report(), 'dest': str(dest), 'png': False}, **options), capsys)


def test_writes_json_and_markdown_then_changes_nothing(tmp_path, capsys):
    dest = tmp_path / 'out'
    first = write(dest, capsys)
    assert first['changed'] and first['status'] == 'fail' and first['png_skipped'] == 'PNG skipped: png=false'
    assert sorted(path.rsplit('/', 1)[1] for path in first['files']) == ['acceptance.json', 'acceptance.md']
    assert json.loads((dest / 'acceptance.json').read_text())['failing_nodes'][0]['name'] == 'gpu-b'
    assert first['table'][-1] == 'FAIL: 1 pass, 1 fail, 0 repeat, 0 skip, 0 info'
    assert write(dest, capsys)['changed'] is False


def test_check_mode_writes_nothing_and_diff_shows_the_markdown(tmp_path, capsys):
    dest = tmp_path / 'out'
    result = write(dest, capsys, _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] and not dest.exists()
    assert result['diff']['before'] == '' and '# Cluster acceptance report' in result['diff']['after']


def test_a_document_without_nodes_is_refused(tmp_path, capsys):
    result = run_module(acceptance_report.main, {'report': {'status': 'pass'}, 'dest': str(tmp_path)}, capsys)
    assert result['failed'] and 'acceptance_report filter' in result['msg']
