#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: artifact_server
short_description: Serve the files of one directory over HTTP for a while, from the host that built them
description:
  - Starts (or stops) a small HTTP server, in the background, that serves the regular files at the top of O(path) and
    nothing else - no listing, no subdirectory, no file whose name starts with C(.). The other nodes of a build group
    download the build archive from it (role C(trainstack.cluster.build_artifact), O(state=started) before their
    download and O(state=stopped) after), so the controller sends nothing large.
  - The server has no authentication; the downloads are checked against the SHA-256 the controller recorded. It exits
    by itself after O(timeout) seconds, so a play that failed between start and stop leaves nothing running for long.
  - The server's process id (and start time, so a reused process id is never signalled) is kept in
    C(<path>/.artifact_server.pid); a second O(state=started) on the same directory and port finds it running and
    changes nothing.
  - Python standard library only (C(http.server)).
extends_documentation_fragment:
  - trainstack.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  path:
    description: The directory whose files are served; it must exist.
    type: path
    required: true
  port:
    description: TCP port to listen on.
    type: int
    default: 8690
  address:
    description: Address to listen on; V(0.0.0.0) is every IPv4 address of the host.
    type: str
    default: 0.0.0.0
  timeout:
    description: Seconds after which the server stops by itself.
    type: int
    default: 3600
  state:
    description: V(started) starts the server unless it already runs; V(stopped) stops it.
    type: str
    choices: [started, stopped]
    default: started
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Serve the archive to the rest of the group
  trainstack.cluster.artifact_server:
    path: /var/tmp/trainstack-build/serve-ucx
    port: 8690

- name: Stop serving it
  trainstack.cluster.artifact_server:
    path: /var/tmp/trainstack-build/serve-ucx
    state: stopped
"""

RETURN = r"""
pid:
  description: Process id of the server; V(null) when none runs (after O(state=stopped), or in check mode before a start).
  returned: always
  type: int
port:
  description: The port it listens on.
  returned: always
  type: int
"""

import errno
import http.server
import os
import signal
import socket
import threading
import time

from ansible.module_utils.basic import AnsibleModule

PID_NAME = '.artifact_server.pid'


def _pid_file(path):
    return os.path.join(path, PID_NAME)


def _start_time(pid):
    """The process's start time in clock ticks (/proc/<pid>/stat field 22), None when it is gone.

    Kept in the pid file beside the pid: a pid the kernel gave to another program since has another start time,
    and is never signalled.
    """
    try:
        with open('/proc/%d/stat' % pid, encoding='utf-8') as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return int(stat[stat.rindex(')') + 2:].split()[19])


def _running(path):
    """(pid, port) of the server recorded for ``path`` when that very process still runs; else None."""
    try:
        with open(_pid_file(path), encoding='utf-8') as handle:
            pid, port, started = (int(word) for word in handle.read().split()[:3])
    except (OSError, ValueError):
        return None
    return (pid, port) if _start_time(pid) == started else None


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Top-level regular files only: no listing, no subdirectory, no dot file (the pid file)."""

    def send_head(self):
        name = self.path.split('?', 1)[0].split('#', 1)[0].lstrip('/')
        if not name or '/' in name or '%' in name or name.startswith('.') or not os.path.isfile(os.path.join(self.directory, name)):
            self.send_error(404, 'Not found')
            return None
        return super().send_head()

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """Quiet: the server's streams are /dev/null."""


def _serve(path, address, port, timeout, ready):
    """The server itself, in the detached grandchild: binds, writes its pid file, says so on ``ready``, serves."""
    try:
        server = http.server.ThreadingHTTPServer((address, port), lambda *a: _Handler(*a, directory=path))
    except OSError as exc:
        os.write(ready, ('error %s\n' % exc).encode())
        return
    pid = os.getpid()
    with open(_pid_file(path) + '.new', 'w', encoding='utf-8') as handle:
        handle.write('%d %d %d\n' % (pid, port, _start_time(pid)))
    os.rename(_pid_file(path) + '.new', _pid_file(path))
    os.write(ready, b'ok\n')
    os.close(ready)
    timer = threading.Timer(timeout, server.shutdown)
    timer.daemon = True
    timer.start()
    # shutdown() waits for serve_forever to return: from the signal handler it must run in another thread.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    server.serve_forever()
    server.server_close()
    try:
        os.remove(_pid_file(path))
    except OSError:
        pass


def start(path, address, port, timeout):
    """Detach a server (double fork, own session, standard streams on /dev/null); its pid, or raise with why not."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked children report through the pipe, not to the caller
        try:
            os.close(read_end)
            os.setsid()
            if os.fork() == 0:
                # Ansible waits for the module's output to close: the server keeps none of its streams.
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.chdir('/')
                _serve(path, address, port, timeout, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(child, 0)
    with os.fdopen(read_end, 'r') as handle:
        answer = handle.readline().strip()
    if answer != 'ok':
        raise OSError(answer[len('error '):] if answer.startswith('error ') else 'the server exited before it listened')
    running = _running(path)
    if not running:
        raise OSError('the server started but its pid file %s is missing' % _pid_file(path))
    return running[0]


def stop(pid, path, wait=10.0):
    """SIGTERM, then wait for the process to go (SIGKILL after ``wait`` seconds)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and _running(path):
        time.sleep(0.05)
    if _running(path):
        os.kill(pid, signal.SIGKILL)
    try:
        os.remove(_pid_file(path))
    except OSError:
        pass


def _port_taken(address, port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.settimeout(1)
        return probe.connect_ex(('127.0.0.1' if address in ('', '0.0.0.0') else address, port)) == 0
    finally:
        probe.close()


def main():
    module = AnsibleModule(
        argument_spec={
            'path': {'type': 'path', 'required': True},
            'port': {'type': 'int', 'default': 8690},
            'address': {'type': 'str', 'default': '0.0.0.0'},
            'timeout': {'type': 'int', 'default': 3600},
            'state': {'type': 'str', 'choices': ['started', 'stopped'], 'default': 'started'},
        },
        supports_check_mode=True,
    )
    path, port, state = module.params['path'], module.params['port'], module.params['state']
    if not 0 < port < 65536:
        module.fail_json(msg='port must be 1 to 65535, got %d' % port)
    if module.params['timeout'] < 1:
        module.fail_json(msg='timeout must be 1 second or more, got %d' % module.params['timeout'])
    if not os.path.isdir(path):
        module.fail_json(msg='%s is not a directory: nothing to serve' % path)
    running = _running(path)
    if state == 'stopped':
        if running and not module.check_mode:
            stop(running[0], path)
        module.exit_json(changed=bool(running), pid=None, port=port)
    if running and running[1] == port:
        module.exit_json(changed=False, pid=running[0], port=port)
    if module.check_mode:
        module.exit_json(changed=True, pid=None, port=port)
    if running:
        stop(running[0], path)
    if _port_taken(module.params['address'], port):
        module.fail_json(msg='port %d is taken on this host by another program: choose another '
                             '(build_artifact_serve_port) or stop it' % port)
    try:
        pid = start(path, module.params['address'], port, module.params['timeout'])
    except OSError as exc:
        module.fail_json(msg='cannot serve %s on %s:%d: %s' % (path, module.params['address'], port, exc))
    module.exit_json(changed=True, pid=pid, port=port)


if __name__ == '__main__':
    main()
