# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run external read-only commands on the target, or replay recorded outputs.

Recorded-root convention (used by tests and to replay a captured host): when the
module reads an alternate root, a command is never executed; its standard output
is read from ``<root>/.commands/<key>.txt``.  A missing file means "command not
available", exactly like a missing program on a live host.
"""

from __future__ import annotations

import os
import shutil
import subprocess

RECORDED_COMMANDS_DIR = '.commands'

# Options of every probing module (documented once in doc_fragments/probe.py).
PROBE_ARGUMENT_SPEC = {
    'root': {'type': 'path', 'default': '/'},
    'nvidia_smi_path': {'type': 'str', 'default': 'nvidia-smi'},
    'command_timeout': {'type': 'int', 'default': 30},
}

# nvidia-smi lives outside the default PATH on several images (NGC containers,
# GPU operator hosts), and Ansible's PATH is often minimal.
EXTRA_SEARCH_DIRS = ('/usr/local/nvidia/bin', '/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin')


class CommandRunner:
    """Gives the standard output of read-only commands, once per key.

    Live mode runs the program with a timeout (a wedged GPU can hang nvidia-smi
    forever, and a facts module must return).  Replay mode reads recordings.
    """

    def __init__(self, root='/', timeout=30):
        self.replay_dir = None if os.path.realpath(root) == '/' else os.path.join(root, RECORDED_COMMANDS_DIR)
        self.timeout = timeout
        self._outputs = {}

    def output(self, key, argv):
        """Standard output of ``argv`` as text, or None when it is missing or fails."""
        if key not in self._outputs:
            self._outputs[key] = self._replay(key) if self.replay_dir else self._execute(argv)
        return self._outputs[key]

    def outputs(self):
        """{key: output or None} of every command asked for so far (what a recording keeps)."""
        return dict(self._outputs)

    def _replay(self, key):
        try:
            with open(os.path.join(self.replay_dir, key + '.txt'), encoding='utf-8', errors='replace') as recorded:
                return recorded.read()
        except OSError:
            return None

    def _execute(self, argv):
        program = find_program(argv[0])
        if program is None:
            return None
        env = dict(os.environ, LC_ALL='C')
        try:
            completed = subprocess.run([program] + list(argv[1:]), capture_output=True, timeout=self.timeout, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if completed.returncode != 0:
            return None
        return completed.stdout.decode('utf-8', errors='replace')


def find_program(name):
    """Absolute path of an executable given by name or path, or None."""
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    search_path = os.pathsep.join([os.environ.get('PATH', '')] + list(EXTRA_SEARCH_DIRS))
    return shutil.which(name, path=search_path)
