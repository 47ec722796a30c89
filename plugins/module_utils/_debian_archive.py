# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Debian archive metadata: the signed Release (InRelease) -> Sources index -> a source package's files.

The chain of trust of `apt-get source`: the suite's InRelease is signed by the archive keys (checked with gpgv
against the Debian keyring), it lists the SHA-256 of `<component>/source/Sources.xz`, and the Sources paragraph
of a package version lists the SHA-256 of its .dsc, orig and debian tarballs and their pool directory. Nothing
here trusts a .dsc or a file name from the mirror without that chain. Standard library only.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import re

# A file of a source package: no directory part, no leading dot, Debian's version characters only.
_FILE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+~_-]*\Z')
_PACKAGE = re.compile(r'^[a-z0-9][a-z0-9.+-]+\Z')
_DIRECTORY = re.compile(r'^pool/[a-z0-9-]+/(?:lib)?[a-z0-9]/[a-z0-9][a-z0-9.+-]+\Z')
_CHECKSUM_LINE = re.compile(r'^\s+([0-9a-f]{64})\s+([0-9]+)\s+(\S+)\s*\Z')


class ArchiveError(Exception):
    """Metadata that cannot be trusted or read; the message says which and why."""


def paragraphs(text):
    """deb822 paragraphs as lists of (field, value) with continuation lines joined by newlines, field names as given."""
    result, current = [], []
    for line in (text or '').splitlines():
        if not line.strip():
            if current:
                result.append(current)
                current = []
            continue
        if line[0] in ' \t':
            if not current:
                raise ArchiveError('a continuation line before any field: %r' % line[:80])
            name, value = current[-1]
            current[-1] = (name, value + '\n' + line)
            continue
        if ':' not in line:
            raise ArchiveError('not a deb822 field: %r' % line[:80])
        name, value = line.split(':', 1)
        current.append((name.strip(), value.strip()))
    if current:
        result.append(current)
    return result


def _field(paragraph, name):
    for key, value in paragraph:
        if key.lower() == name.lower():
            return value
    return None


def checksums(value, what):
    """[{name, sha256, size}] from a Checksums-Sha256 / SHA256 field value (its first line is empty)."""
    entries = []
    for line in (value or '').splitlines()[1:]:
        match = _CHECKSUM_LINE.match(line)
        if not match:
            raise ArchiveError('unreadable SHA-256 line in %s: %r' % (what, line[:120]))
        entries.append({'name': match.group(3), 'sha256': match.group(1), 'size': int(match.group(2))})
    if not entries:
        raise ArchiveError('%s has no SHA-256 checksums' % what)
    return entries


def release_index(release_text, path):
    """(sha256, size) of ``path`` (such as main/source/Sources.xz) in a verified Release text."""
    found = [paragraph for paragraph in paragraphs(release_text) if _field(paragraph, 'SHA256') is not None]
    if not found:
        raise ArchiveError('the Release file has no SHA256 field')
    for entry in checksums(_field(found[0], 'SHA256'), 'the Release file'):
        if entry['name'] == path:
            return entry['sha256'], entry['size']
    raise ArchiveError('the Release file lists no %s' % path)


def release_codename(release_text):
    found = paragraphs(release_text)
    return (_field(found[0], 'Codename') or _field(found[0], 'Suite') or '') if found else ''


def decompress(data, name):
    """The text of a Sources index, from its .xz, .gz or plain file."""
    try:
        if name.endswith('.xz'):
            data = lzma.decompress(data)
        elif name.endswith('.gz'):
            data = gzip.decompress(data)
        return data.decode('utf-8')
    except (lzma.LZMAError, OSError, EOFError, UnicodeDecodeError) as exc:
        raise ArchiveError('%s is no readable Sources index: %s' % (name, exc))


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def source_files(entries, package, what):
    """Checks the files of a source package: plain names of that package, exactly one .dsc and one main orig
    tarball (component tarballs <src>_<ver>.orig-<component>.tar.* may join them)."""
    for entry in entries:
        if not _FILE_NAME.match(entry['name']) or not entry['name'].startswith(package + '_'):
            raise ArchiveError('%s lists %r, which is not a file of source package %s' % (what, entry['name'], package))
    names = [entry['name'] for entry in entries]
    dscs = [name for name in names if name.endswith('.dsc')]
    origs = [name for name in names if re.search(r'[.]orig[.]tar[.][a-z0-9]+\Z', name)]
    if len(origs) != 1:
        raise ArchiveError('%s lists %d main orig tarballs among %s, expected one' % (what, len(origs), ', '.join(names)))
    if len(dscs) > 1:
        raise ArchiveError('%s lists %d .dsc files among %s' % (what, len(dscs), ', '.join(names)))
    return entries


def sources_entry(sources_text, package, version):
    """{'directory', 'files': [{name, sha256, size}]} of ``package`` at ``version`` in a Sources index."""
    if not _PACKAGE.match(str(package or '')):
        raise ArchiveError('not a Debian source package name: %r' % (package,))
    for paragraph in paragraphs(sources_text):
        if _field(paragraph, 'Package') != package or _field(paragraph, 'Version') != version:
            continue
        what = 'the Sources entry of %s %s' % (package, version)
        directory = _field(paragraph, 'Directory') or ''
        if not _DIRECTORY.match(directory) or not directory.endswith('/' + package):
            raise ArchiveError('%s names the pool directory %r' % (what, directory))
        files = source_files(checksums(_field(paragraph, 'Checksums-Sha256'), what), package, what)
        return {'directory': directory, 'files': files}
    versions = sorted({_field(paragraph, 'Version') for paragraph in paragraphs(sources_text)
                       if _field(paragraph, 'Package') == package})
    raise ArchiveError('source package %s %s is not in the index%s' % (
        package, version, (' (it has %s)' % ', '.join(versions)) if versions else ' (nor any version of it)'))
