# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Record what a probe reads on a host into a tarball, and read such a tarball back as a root.

The tarball holds exactly the files, directories and symlinks the probe touched (sysfs
names, relative symlinks and all) plus ``.commands/<key>.txt`` for each command output,
i.e. the recorded-root layout of ``_commands``: unpacked, it is a root the probe reads
with identical results.  This is how a misdetected machine is reported.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import time

from ansible_collections.trainstack.cluster.plugins.module_utils._commands import RECORDED_COMMANDS_DIR
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree

MANIFEST = 'trainstack-record.json'
RECORD_FORMAT = 1
_MAX_LINK_DEPTH = 40


class RecordingTree(SysfsTree):
    """A SysfsTree that remembers every path the probe asked about."""

    def __init__(self, root='/'):
        super().__init__(root)
        self.touched = []

    def read(self, path):
        self.touched.append(('file', path))
        return super().read(path)

    def listdir(self, path):
        self.touched.append(('dir', path))
        return super().listdir(path)

    def exists(self, path):
        self.touched.append(('path', path))
        return super().exists(path)

    def realpath(self, path):
        self.touched.append(('path', path))
        return super().realpath(path)


class _Archive:
    """Members to write, keyed by their root-relative name (one entry per name)."""

    def __init__(self, root):
        self.root = root
        self.members = {}
        self._resolved = {}

    def host(self, name):
        return os.path.join(self.root, name.lstrip('/'))

    def canonical(self, path, depth=0):
        """Resolve ``path`` component by component, recording its symlinks and directories; its link-free form or None."""
        path = posixpath.normpath('/' + path.lstrip('/'))
        if path == '/':
            return path
        if path in self._resolved:
            return self._resolved[path]
        if depth > _MAX_LINK_DEPTH:
            return None
        parent, part = posixpath.split(path)
        current = self.canonical(parent, depth)
        resolved = None
        if current is not None:
            candidate = posixpath.join(current, part)
            host = self.host(candidate)
            if os.path.islink(host):
                link = os.readlink(host)
                if os.path.isabs(link):
                    # Keep the recording self-contained: point inside the recorded root.
                    link = posixpath.relpath(link, current)
                self.members.setdefault(candidate.lstrip('/'), ('symlink', link))
                resolved = self.canonical(posixpath.join(current, link), depth + 1)
            elif os.path.isdir(host):
                self.members.setdefault(candidate.lstrip('/'), ('dir', None))
                resolved = candidate
            elif os.path.exists(host):
                resolved = candidate
        self._resolved[path] = resolved
        return resolved

    def add_file(self, path):
        canonical = self.canonical(path)
        if canonical is None or os.path.isdir(self.host(canonical)):
            return
        try:
            with open(self.host(canonical), 'rb') as handle:
                data = handle.read()
        except OSError:
            return
        self.members[canonical.lstrip('/')] = ('file', data)

    def add_listing(self, path):
        canonical = self.canonical(path)
        if canonical is None or not os.path.isdir(self.host(canonical)):
            return
        try:
            entries = os.listdir(self.host(canonical))
        except OSError:
            return
        for entry in entries:
            name = posixpath.join(canonical, entry).lstrip('/')
            host = self.host(name)
            if os.path.islink(host):
                link = os.readlink(host)
                self.members.setdefault(name, ('symlink', posixpath.relpath(link, canonical) if os.path.isabs(link) else link))
            elif os.path.isdir(host):
                self.members.setdefault(name, ('dir', None))
            else:
                # Only the name is needed for a listing; a file read later gets its content.
                self.members.setdefault(name, ('file', b''))

    def add_text(self, name, text):
        self.members[name] = ('file', text.encode('utf-8'))

    def write(self, dest):
        directory = os.path.dirname(dest) or '.'
        descriptor, temporary = tempfile.mkstemp(prefix='.trainstack-record-', dir=directory)
        os.close(descriptor)
        now = int(time.time())
        with tarfile.open(temporary, 'w:gz', compresslevel=6) as archive:
            for name in sorted(self.members):
                kind, payload = self.members[name]
                info = tarfile.TarInfo(name)
                info.mtime = now
                if kind == 'dir':
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    archive.addfile(info)
                elif kind == 'symlink':
                    info.type, info.linkname, info.mode = tarfile.SYMTYPE, payload, 0o777
                    archive.addfile(info)
                else:
                    info.size, info.mode = len(payload), 0o644
                    archive.addfile(info, io.BytesIO(payload))
        os.chmod(temporary, 0o644)
        os.replace(temporary, dest)


def write_record(tree, outputs, dest, extra=None):
    """Write the tarball of what ``tree`` (a RecordingTree) was asked and the command ``outputs`` {key: text or None}.

    Returns the number of members written.
    """
    archive = _Archive(tree.root)
    for kind, path in tree.touched:
        if kind == 'file':
            archive.add_file(path)
        elif kind == 'dir':
            archive.add_listing(path)
        else:
            archive.canonical(path)
    commands = sorted(key for key, output in outputs.items() if output is not None)
    if commands:
        archive.members.setdefault(RECORDED_COMMANDS_DIR, ('dir', None))
    for key in commands:
        archive.add_text('%s/%s.txt' % (RECORDED_COMMANDS_DIR, key), outputs[key])
    manifest = {'format': RECORD_FORMAT, 'commands': commands, 'missing_commands': sorted(set(outputs) - set(commands))}
    manifest.update(extra or {})
    archive.add_text(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + '\n')
    archive.write(dest)
    return len(archive.members)


class RecordError(Exception):
    """A tarball that cannot be read back safely as a root."""


def unpack_record(tarball, directory):
    """Unpack a record tarball into ``directory``; members that would leave it are refused."""
    try:
        archive = tarfile.open(tarball, 'r:*')
    except (OSError, tarfile.TarError) as error:
        raise RecordError('%s is not a readable tarball: %s' % (tarball, error))
    with archive:
        for member in archive.getmembers():
            name = posixpath.normpath(member.name)
            if name.startswith(('/', '../')) or name == '..':
                raise RecordError('%s: member %s lies outside the recorded root' % (tarball, member.name))
            target = os.path.join(directory, name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.issym():
                landing = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.linkname))
                if posixpath.isabs(member.linkname) or landing.startswith('../') or landing == '..':
                    raise RecordError('%s: symlink %s points outside the recorded root' % (tarball, member.name))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(member.linkname, target)
            elif member.isfile():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with archive.extractfile(member) as source, open(target, 'wb') as handle:
                    shutil.copyfileobj(source, handle)
            else:
                raise RecordError('%s: member %s is neither a file, a directory nor a symlink' % (tarball, member.name))


@contextlib.contextmanager
def probe_root(root):
    """The directory to probe: ``root`` itself, or a record tarball unpacked into a temporary root."""
    if not os.path.isfile(root):
        yield root
        return
    directory = tempfile.mkdtemp(prefix='trainstack-replay-')
    try:
        unpack_record(root, directory)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
