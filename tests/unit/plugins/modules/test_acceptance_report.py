# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""acceptance_report module: files, idempotence, check mode and diff on a report from recorded outputs."""

from __future__ import annotations

import json

import pytest

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


def test_each_run_is_kept_in_its_folder_and_latest_moves_to_the_newest(tmp_path, capsys):
    dest = tmp_path / 'out'
    first = write(dest, capsys, run_id='20261202T170000Z-aaaaaa')
    assert first['changed'] and first['run_dir'] == str(dest / '20261202T170000Z-aaaaaa') and first['latest'] == str(dest / 'latest')
    assert sorted(first['files']) == [str(dest / '20261202T170000Z-aaaaaa' / name) for name in ('acceptance.json', 'acceptance.md')]
    assert (dest / 'latest').is_symlink() and (dest / 'latest').readlink().as_posix() == '20261202T170000Z-aaaaaa'
    assert write(dest, capsys, run_id='20261202T170000Z-aaaaaa')['changed'] is False
    second = write(dest, capsys, run_id='20261202T180000Z-bbbbbb', _ansible_diff=True)
    assert second['changed'] and (dest / 'latest').readlink().as_posix() == '20261202T180000Z-bbbbbb'
    # The earlier run is still there, and the diff is against it (the report latest pointed to).
    assert (dest / '20261202T170000Z-aaaaaa' / 'acceptance.json').is_file()
    assert second['diff']['before_header'] == str(dest / 'latest' / 'acceptance.md')
    assert second['diff']['before'] == (dest / '20261202T170000Z-aaaaaa' / 'acceptance.md').read_text()
    assert json.loads((dest / 'latest' / 'acceptance.json').read_text())['failing_nodes'][0]['name'] == 'gpu-b'


def test_check_mode_with_a_run_id_moves_no_link(tmp_path, capsys):
    dest = tmp_path / 'out'
    write(dest, capsys, run_id='one')
    result = write(dest, capsys, run_id='two', _ansible_check_mode=True)
    assert result['changed'] and not (dest / 'two').exists() and (dest / 'latest').readlink().as_posix() == 'one'


@pytest.mark.parametrize('run_id', ['../x', 'a/b', 'latest', '.hidden', ''])
def test_a_run_id_that_is_not_one_plain_name_is_refused(tmp_path, capsys, run_id):
    result = write(tmp_path / 'out', capsys, run_id=run_id)
    assert result['failed'] and 'run_id must be' in result['msg'] and not (tmp_path / 'out').exists()


def test_a_latest_that_is_not_a_link_is_refused_not_replaced(tmp_path, capsys):
    dest = tmp_path / 'out'
    (dest / 'latest').mkdir(parents=True)
    (dest / 'latest' / 'keep').write_text('mine')
    result = write(dest, capsys, run_id='one')
    assert result['failed'] and 'is not a symbolic link' in result['msg']
    assert (dest / 'latest' / 'keep').read_text() == 'mine' and not (dest / 'one').exists()
