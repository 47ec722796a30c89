# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build-once-ship-everywhere helpers for the build_artifact role (controller side, pure).

A build id names one build exactly: the same inputs give the same id on every run and every
controller, and any change of an input (one configure flag, the compiler, a dependency's build)
gives a new id, hence a new install prefix <root>/<name>/<version>-<id>. The source is an input too:
a new Debian revision, Debian's patches on or off, or another upstream tarball under the same version
number is another build.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

ID_LENGTH = 12
_SPEC_KEYS = ('name', 'version', 'source', 'configure_flags', 'compiler', 'os', 'arch', 'cuda', 'depends')
_SHA256 = re.compile(r'^[0-9a-f]{64}\Z')


def _error(message):
    raise AnsibleFilterError(message)


def _source_identity(source):
    """One string for the sources a build starts from.

    source: {type: debian, package, debian_version, patches} -> 'debian:<package>=<debian_version>:patched|orig';
    {type: url|mirror, sha256} -> 'sha256:<sum>' (where the tarball came from does not change what is built).
    """
    if not isinstance(source, dict):
        _error('build spec source must be a dict with a type, got %r' % (source,))
    kind = source.get('type')
    if kind == 'debian':
        package, version = source.get('package'), source.get('debian_version')
        if not package or not version:
            _error('build spec source of type debian needs package and debian_version, got %r' % (source,))
        return 'debian:%s=%s:%s' % (package, version, 'patched' if boolean(source.get('patches', True), strict=False) else 'orig')
    if kind in ('url', 'mirror'):
        digest = str(source.get('sha256', '')).lower()
        if not _SHA256.match(digest):
            _error('build spec source of type %s needs the tarball sha256 (64 hex digits), got %r'
                   % (kind, source.get('sha256')))
        return 'sha256:%s' % digest
    _error('build spec source type must be debian, url or mirror, got %r' % (kind,))


def build_artifact_canonical(spec):
    """The text the build id hashes: compact JSON, keys sorted, flags and dependency ids sorted."""
    if not isinstance(spec, dict):
        _error('build_artifact_id expects a dict with %s' % ', '.join(_SPEC_KEYS))
    missing = [key for key in _SPEC_KEYS if key not in spec]
    if missing:
        _error('build spec lacks %s' % ', '.join(missing))
    unknown = sorted(set(spec) - set(_SPEC_KEYS))
    if unknown:
        _error('build spec has unknown keys %s' % ', '.join(unknown))
    for key in ('configure_flags', 'depends'):
        if not isinstance(spec[key], (list, tuple)):
            _error('build spec %s must be a list, got %r' % (key, spec[key]))
    canonical = {
        'name': str(spec['name']),
        'version': str(spec['version']),
        'source': _source_identity(spec['source']),
        'configure_flags': sorted(str(flag) for flag in spec['configure_flags']),
        'compiler': str(spec['compiler']),
        'os': str(spec['os']),
        'arch': str(spec['arch']),
        # No CUDA is its own build, whatever spelling the caller uses for "none".
        'cuda': str(spec['cuda']) if spec['cuda'] not in (None, '', 'none', False) else 'none',
        'depends': sorted(str(dep) for dep in spec['depends']),
    }
    return json.dumps(canonical, sort_keys=True, separators=(',', ':'))


def build_artifact_id(spec):
    """First 12 hex digits of the SHA-256 of build_artifact_canonical(spec)."""
    return hashlib.sha256(build_artifact_canonical(spec).encode('utf-8')).hexdigest()[:ID_LENGTH]


def build_artifact_builders(group_keys):
    """Map every host to the host that builds for its group: the first host (in the order given) with the same key.

    group_keys: {host: key} in play order, the key naming the (OS, arch, CUDA) group.
    """
    if not isinstance(group_keys, dict):
        _error('build_artifact_builders expects a dict {host: group key}')
    first = {}
    builders = {}
    for host, key in group_keys.items():
        builders[host] = first.setdefault(str(key), host)
    return builders


_DSC_ENTRY = re.compile(r'^\s+([0-9a-f]{64})\s+([0-9]+)\s+(\S+)\s*$')


def debian_dsc_files(dsc_text):
    """The files of a Debian source package (name, sha256, size) from its .dsc's Checksums-Sha256 field.

    The list must hold exactly one main upstream tarball (<src>_<version>.orig.tar.*).
    """
    if not isinstance(dsc_text, str):
        _error('debian_dsc_files expects the text of a .dsc file')
    entries = []
    in_section = False
    for line in dsc_text.splitlines():
        if line.startswith('Checksums-Sha256:'):
            in_section = True
            continue
        if in_section:
            match = _DSC_ENTRY.match(line)
            if not match:
                # The field's continuation lines start with white space; anything else ends it.
                if line[:1] in (' ', '\t'):
                    _error('unreadable Checksums-Sha256 line in the .dsc: %r' % line)
                break
            entries.append({'name': match.group(3), 'sha256': match.group(1), 'size': int(match.group(2))})
    if not entries:
        _error('the .dsc has no Checksums-Sha256 field')
    # Component tarballs are named <src>_<ver>.orig-<component>.tar.*; exactly one main one must be there.
    origs = [entry['name'] for entry in entries if re.search(r'[.]orig[.]tar[.][a-z0-9]+$', entry['name'])]
    if len(origs) != 1:
        _error('the .dsc lists %d main orig tarballs among %s, expected one'
               % (len(origs), ', '.join(entry['name'] for entry in entries)))
    return entries


class FilterModule:
    """Build-artifact filters."""

    def filters(self):
        return {
            'build_artifact_id': build_artifact_id,
            'build_artifact_builders': build_artifact_builders,
            'debian_dsc_files': debian_dsc_files,
        }
