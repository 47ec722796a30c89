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
# Plain-Makefile builds (nccl-tests): enter the canonical text only when set, so autotools ids stay as they were.
_OPTIONAL_KEYS = ('build_system', 'make_args', 'build_env')
_SHA256 = re.compile(r'^[0-9a-f]{64}\Z')
_COMMIT = re.compile(r'^[0-9a-f]{40}\Z')
_MAKE_ARG = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*=')


def _error(message):
    raise AnsibleFilterError(message)


def _source_identity(source):
    """One string for the sources a build starts from.

    source: {type: debian, package, debian_version, patches} -> 'debian:<package>=<debian_version>:patched|orig';
    {type: url|mirror, sha256} -> 'sha256:<sum>' (where the tarball came from does not change what is built);
    {type: git, commit} -> 'git:<commit>' (the full commit id names the tree wherever it was cloned from).
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
    if kind == 'git':
        commit = str(source.get('commit', ''))
        if not _COMMIT.match(commit):
            _error('build spec source of type git needs the full commit id (40 lower-case hex digits), got %r'
                   % (source.get('commit'),))
        return 'git:%s' % commit
    _error('build spec source type must be debian, url, mirror or git, got %r' % (kind,))


def build_artifact_canonical(spec):
    """The text the build id hashes: compact JSON, keys sorted, flags and dependency ids sorted."""
    if not isinstance(spec, dict):
        _error('build_artifact_id expects a dict with %s' % ', '.join(_SPEC_KEYS))
    missing = [key for key in _SPEC_KEYS if key not in spec]
    if missing:
        _error('build spec lacks %s' % ', '.join(missing))
    unknown = sorted(set(spec) - set(_SPEC_KEYS) - set(_OPTIONAL_KEYS))
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
    canonical.update(_make_identity(spec))
    return json.dumps(canonical, sort_keys=True, separators=(',', ':'))


def _make_identity(spec):
    """The plain-Makefile part of the canonical text: {} for autotools (their ids do not change)."""
    system = spec.get('build_system') or 'autotools'
    if system not in ('autotools', 'make'):
        _error('build spec build_system must be autotools or make, got %r' % (system,))
    make_args = spec.get('make_args') or []
    build_env = spec.get('build_env') or {}
    if not isinstance(make_args, (list, tuple)):
        _error('build spec make_args must be a list of NAME=value, got %r' % (make_args,))
    bad = [arg for arg in make_args if not _MAKE_ARG.match(str(arg))]
    if bad:
        _error('build spec make_args must be NAME=value, got %r' % (bad,))
    if not isinstance(build_env, dict):
        _error('build spec build_env must be a dict, got %r' % (build_env,))
    if system == 'autotools':
        if make_args or build_env:
            _error('build spec make_args and build_env belong to build_system make')
        return {}
    # Order matters to make (a later NAME=value wins): kept as given.
    return {'build_system': 'make', 'make_args': [str(arg) for arg in make_args],
            'build_env': {str(key): str(value) for key, value in build_env.items()}}


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


_BUILD_DIR = re.compile(r'^[^./][^/]*-[0-9a-f]{12}\Z')


def build_artifact_prune(found, current, keep):
    """The build prefixes to remove on a node: all but the `keep` newest (by modification time) of the
    <version>-<id> directories found, never `current` (the build `current` points at, always kept and counted).

    found: the files list of ansible.builtin.find (path, mtime); other names (current, .unpack directories) are left.
    """
    try:
        keep = int(keep)
    except (TypeError, ValueError):
        _error('build_artifact_prune: keep must be a whole number, got %r' % (keep,))
    if keep < 1:
        _error('build_artifact_prune: keep must be at least 1 (the current build), got %d' % keep)
    builds = []
    for entry in found or []:
        path = str(entry.get('path', ''))
        name = path.rstrip('/').rsplit('/', 1)[-1]
        if _BUILD_DIR.match(name):
            builds.append((name == current, float(entry.get('mtime') or 0), path))
    # The current build first, then the newest; ties broken by path so the choice is the same on every run.
    builds.sort(key=lambda build: (not build[0], -build[1], build[2]))
    return sorted(path for _current, _mtime, path in builds[keep:])


# The builder's steps in the role's order: (name of the registered result, what the step does).
_BUILDER_STEPS = (
    ('tools', 'installing the build tools'),
    ('compiler', 'reading the compiler version (cc --version)'),
    ('build', 'the build'),
)
_TAIL_LINES = 20


def _text(value):
    return str(value if value is not None else '').strip()


def build_artifact_builder_failure(results, builder='the builder', log=''):
    """What went wrong on a group's builder, from the results it registered, for the other nodes of its group.

    results: {'tools': <install result>, 'compiler': <cc --version result>, 'build': <async_status result>,
    'log_tail': <result of reading the logs' ends>} as registered on the builder (any may be missing: a step not
    reached). Returns one line naming the builder, the step and its error (and the end of the build log for a
    failed build), or '' when none of the steps failed: the failure was elsewhere and is in the builder's own error.
    """
    if not isinstance(results, dict):
        _error('build_artifact_builder_failure expects a dict of the builder\'s registered results')
    for key, step in _BUILDER_STEPS:
        result = results.get(key)
        if not isinstance(result, dict) or result.get('skipped'):
            continue
        if key == 'build':
            finished = bool(result.get('finished'))
            rc = result.get('rc')
            if finished and rc == 0:
                continue
            cause = 'exit status %s' % rc if finished else 'not finished within build_artifact_timeout'
            tail = results.get('log_tail') or {}
            lines = _text(tail.get('stdout') if isinstance(tail, dict) else '').splitlines()[-_TAIL_LINES:]
            where = ' (full log %s on %s)' % (log, builder) if log else ''
            listing = (':\n' + '\n'.join(lines)) if lines else ''
            return '%s failed on %s: %s%s%s' % (step, builder, cause, where, listing)
        if result.get('failed'):
            message = _text(result.get('msg')) or _text(result.get('stderr')) or 'failed'
            return '%s failed on %s: %s' % (step, builder, message.splitlines()[0] if message else message)
    return ''


class FilterModule:
    """Build-artifact filters."""

    def filters(self):
        return {
            'build_artifact_id': build_artifact_id,
            'build_artifact_builders': build_artifact_builders,
            'build_artifact_builder_failure': build_artifact_builder_failure,
            'build_artifact_prune': build_artifact_prune,
        }
