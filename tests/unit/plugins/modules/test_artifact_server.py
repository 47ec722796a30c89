# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""artifact_server: the module run as Ansible runs it (a JSON args file), against real HTTP requests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..', 'plugins', 'modules', 'artifact_server.py'))


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def run(tmp_path, check_mode=False, **args):
    args_file = tmp_path / 'args.json'
    module_args = dict(args)
    if check_mode:
        module_args['_ansible_check_mode'] = True
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': module_args}), encoding='utf-8')
    proc = subprocess.run([sys.executable, MODULE, str(args_file)], capture_output=True, text=True, check=False, timeout=30)
    return json.loads(proc.stdout)


def status(port, name):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d/%s' % (port, name), timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b''


@pytest.fixture
def served(tmp_path):
    directory = tmp_path / 'serve'
    (directory / 'sub').mkdir(parents=True)
    (directory / 'ucx.tar.gz').write_bytes(b'archive bytes')
    (directory / '.hidden').write_text('x', encoding='utf-8')
    (tmp_path / 'secret').write_text('outside', encoding='utf-8')
    port = free_port()
    yield directory, port
    run(tmp_path, path=str(directory), port=port, state='stopped')


def test_serves_top_level_files_only_then_stops(tmp_path, served):
    directory, port = served
    started = run(tmp_path, path=str(directory), port=port, address='127.0.0.1', timeout=60)
    assert started['changed'] is True and isinstance(started['pid'], int)
    assert status(port, 'ucx.tar.gz') == (200, b'archive bytes')
    for name in ('', 'sub', 'sub/', '.hidden', '.artifact_server.pid', '../secret', '%2e%2e/secret'):
        assert status(port, name)[0] == 404, name
    again = run(tmp_path, path=str(directory), port=port, address='127.0.0.1')
    assert again['changed'] is False and again['pid'] == started['pid']
    stopped = run(tmp_path, path=str(directory), port=port, state='stopped')
    assert stopped['changed'] is True and stopped['pid'] is None
    assert not (directory / '.artifact_server.pid').exists()
    with pytest.raises(urllib.error.URLError):
        status(port, 'ucx.tar.gz')
    assert run(tmp_path, path=str(directory), port=port, state='stopped')['changed'] is False


def test_check_mode_starts_nothing(tmp_path, served):
    directory, port = served
    result = run(tmp_path, check_mode=True, path=str(directory), port=port)
    assert result['changed'] is True and result['pid'] is None
    assert not (directory / '.artifact_server.pid').exists()


def test_a_stale_pid_file_is_not_trusted(tmp_path, served):
    # A pid file left by a server that is gone (its pid now another process, here this test's own, with another start time).
    directory, port = served
    (directory / '.artifact_server.pid').write_text('%d %d 1\n' % (os.getpid(), port), encoding='utf-8')
    result = run(tmp_path, path=str(directory), port=port, address='127.0.0.1', timeout=60)
    assert result['changed'] is True and result['pid'] != os.getpid()
    assert status(port, 'ucx.tar.gz')[0] == 200


def test_the_server_stops_by_itself_after_its_timeout(tmp_path, served):
    import time  # pylint: disable=import-outside-toplevel
    directory, port = served
    run(tmp_path, path=str(directory), port=port, address='127.0.0.1', timeout=1)
    deadline = time.monotonic() + 10
    while (directory / '.artifact_server.pid').exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (directory / '.artifact_server.pid').exists()


@pytest.mark.parametrize('args, message', [
    ({'port': 0}, 'port must be 1 to 65535, got 0'),
    ({'port': 70000}, 'port must be 1 to 65535, got 70000'),
    ({'timeout': 0}, 'timeout must be 1 second or more, got 0'),
])
def test_bad_arguments_are_refused(tmp_path, served, args, message):
    directory, _port = served
    result = run(tmp_path, path=str(directory), **args)
    assert result['failed'] is True and result['msg'] == message


def test_a_missing_directory_is_refused(tmp_path):
    result = run(tmp_path, path=str(tmp_path / 'nope'), port=free_port())
    assert result['failed'] is True and result['msg'] == '%s is not a directory: nothing to serve' % (tmp_path / 'nope')


def test_a_port_another_program_holds_is_named(tmp_path, served):
    directory, _port = served
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        result = run(tmp_path, path=str(directory), port=port, address='127.0.0.1')
    assert result['failed'] is True
    assert result['msg'] == ('port %d is taken on this host by another program: choose another '
                             '(build_artifact_serve_port) or stop it' % port)
