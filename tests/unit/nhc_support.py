# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the real LBNL NHC 1.4.3 with the collection's check files against stand-in commands.

NHC is built once per test session from the site mirror (../shared/mirrors/nhc/nhc-1.4.3.tar.gz, or
TRAINSTACK_NHC_TARBALL) into a cache directory: ./autogen.sh && ./configure && make && make install (autoconf,
automake, make).  Each run gets a config directory holding NHC's own scripts plus roles/nhc/files/scripts/*.nhc,
an nhc.conf with the check lines, and a bin/ directory of stand-ins (nvidia-smi, dmesg, ...) that print a recorded
output, exit with a given status and note their arguments.  NHC resets PATH and unsets NHC_RM, TIMEOUT and the like
from the environment, so those go on its command line (VAR=value arguments).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK_SCRIPTS = os.path.join(ROOT, 'roles', 'nhc', 'files', 'scripts')
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'nhc')
TARBALL = os.environ.get('TRAINSTACK_NHC_TARBALL', os.path.join(os.path.dirname(ROOT), 'shared', 'mirrors', 'nhc', 'nhc-1.4.3.tar.gz'))
BUILD_TOOLS = ('autoconf', 'automake', 'aclocal', 'make', 'bash', 'timeout')
# The stand-ins and the checks need these; NHC's own PATH is /sbin:/usr/sbin:/bin:/usr/bin.
BASE_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'


class NhcUnavailable(Exception):
    """NHC cannot be built here (no mirror tarball, no build tools, or the build failed)."""


def missing_prerequisites() -> str | None:
    """Why NHC cannot be built on this machine, or None."""
    if not os.path.isfile(TARBALL):
        return 'NHC mirror tarball not found: %s' % TARBALL
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        return 'build tools missing: %s (apt-get install autoconf automake make)' % ' '.join(missing)
    return None


def build_nhc(cache_dir: str) -> str:
    """Unpack, build and install NHC under cache_dir; returns the install prefix."""
    reason = missing_prerequisites()
    if reason:
        raise NhcUnavailable(reason)
    prefix = os.path.join(cache_dir, 'install')
    if os.access(os.path.join(prefix, 'sbin', 'nhc'), os.X_OK):
        return prefix
    src = os.path.join(cache_dir, 'src')
    with tarfile.open(TARBALL) as tar:
        if hasattr(tarfile, 'data_filter'):
            tar.extractall(src, filter='data')
        else:
            tar.extractall(src)  # nosec: the site mirror's own tarball
    tree = os.path.join(src, 'nhc-1.4.3')
    steps = [
        ['./autogen.sh'],
        ['./configure', '--prefix=' + prefix, '--sysconfdir=' + os.path.join(prefix, 'etc'), '--libexecdir=' + os.path.join(prefix, 'libexec')],
        ['make'],
        ['make', 'install'],
    ]
    for step in steps:
        proc = subprocess.run(step, cwd=tree, capture_output=True, text=True, check=False, timeout=300)
        if proc.returncode != 0:
            raise NhcUnavailable('NHC build step %s failed (rc %d): %s' % (' '.join(step), proc.returncode, (proc.stdout + proc.stderr)[-2000:]))
    return prefix


@dataclass
class StandIn:
    """A command on PATH that prints `output`, exits with `rc` and notes its arguments.

    when: {exact argument string: StandIn} answers for particular arguments (one nvidia-smi, many queries).
    """

    output: str = ''
    rc: int = 0
    when: dict = field(default_factory=dict)


@dataclass
class NhcResult:
    """What one NHC run returned."""

    rc: int
    output: str
    seconds: float
    calls: dict = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The failure message (what follows "Health check failed:"), or '' when NHC passed."""
        for line in self.output.splitlines():
            if 'Health check failed:' in line:
                return line.split('Health check failed:', 1)[1].strip()
        return ''


def read_fixture(name: str) -> str:
    """Text of tests/unit/fixtures/<name> (name relative to fixtures/, e.g. 'nhc/h200_query_count.txt')."""
    with open(os.path.join(ROOT, 'tests', 'unit', 'fixtures', name), encoding='utf-8') as handle:
        return handle.read()


def write_tree(root: str, files: dict) -> None:
    """Writes {relative path: content} under root (a recorded sysfs tree)."""
    for rel, content in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(content)


def _stand_in(bin_dir: str, name: str, stand_in: StandIn) -> None:
    calls = os.path.join(bin_dir, '.' + name + '.calls')
    lines = ['#!/bin/bash', 'printf "%%s\\n" "$*" >> %s' % shlex.quote(calls), 'case "$*" in']
    answers = list(stand_in.when.items()) + [('*', stand_in)]
    for number, (args, answer) in enumerate(answers):
        data = os.path.join(bin_dir, '.%s.%d.out' % (name, number))
        with open(data, 'w', encoding='utf-8') as handle:
            handle.write(answer.output)
        pattern = '*' if args == '*' else shlex.quote(args)
        lines.append('    %s) cat %s; exit %d ;;' % (pattern, shlex.quote(data), answer.rc))
    lines.append('esac')
    script = os.path.join(bin_dir, name)
    with open(script, 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(lines) + '\n')
    os.chmod(script, 0o755)


def run_nhc(prefix: str, checks: list, stand_ins: dict | None = None, env: dict | None = None, timeout: int = 30) -> NhcResult:
    """Runs NHC (installed under prefix) with one nhc.conf line per check; stand_ins: {command: StandIn}."""
    with tempfile.TemporaryDirectory(prefix='nhc-run-') as work:
        confdir = os.path.join(work, 'etc', 'nhc')
        scripts = os.path.join(confdir, 'scripts')
        os.makedirs(scripts)
        upstream = os.path.join(prefix, 'etc', 'nhc', 'scripts')
        for directory in (upstream, CHECK_SCRIPTS):
            for name in sorted(os.listdir(directory)):
                if name.endswith('.nhc'):
                    shutil.copy(os.path.join(directory, name), scripts)
        conffile = os.path.join(confdir, 'nhc.conf')
        with open(conffile, 'w', encoding='utf-8') as handle:
            handle.write(''.join('* || %s\n' % check for check in checks))
        bin_dir = os.path.join(work, 'bin')
        os.makedirs(bin_dir)
        # logger: keep the test runs out of the host's syslog
        _stand_in(bin_dir, 'logger', StandIn())
        for name, stand_in in (stand_ins or {}).items():
            _stand_in(bin_dir, name, stand_in)
        run_env = dict(os.environ)
        run_env.update(env or {})
        command = [
            os.path.join(prefix, 'sbin', 'nhc'), '-D', confdir, '-c', conffile, '-l', '-', '-t', str(timeout),
            'NHC_RM=none', 'MARK_OFFLINE=0', 'SYSCONFIGDIR=' + work, 'HELPERDIR=' + os.path.join(prefix, 'libexec', 'nhc'),
            'PATH=%s:%s' % (bin_dir, BASE_PATH),
        ]
        start = time.monotonic()
        proc = subprocess.run(command, capture_output=True, text=True, env=run_env, check=False, timeout=timeout + 15)
        seconds = time.monotonic() - start
        calls = {}
        for name in stand_ins or {}:
            path = os.path.join(bin_dir, '.' + name + '.calls')
            if os.path.exists(path):
                with open(path, encoding='utf-8') as handle:
                    calls[name] = handle.read().splitlines()
        return NhcResult(rc=proc.returncode, output=proc.stdout + proc.stderr, seconds=seconds, calls=calls)
