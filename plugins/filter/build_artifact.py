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


_NAME = re.compile(r'^[a-z0-9][a-z0-9+._-]*\Z')
_VERSION = re.compile(r'^[0-9][A-Za-z0-9.+~_-]*\Z')
_DEBIAN_VERSION = re.compile(r'^([0-9]+:)?[0-9][A-Za-z0-9.+~]*-[A-Za-z0-9.+~]+\Z')
_URL = re.compile(r'^(https?|ftp)://[^\s/]+\S*\Z')
_SHELL_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_SOURCES = ('debian', 'url', 'mirror', 'git')
_BUILD_SYSTEMS = ('autotools', 'make')
_ENVIRONMENTS = ('auto', 'modules', 'profile', 'none')
_DELIVERIES = ('builder', 'url', 'push')
# (key, lowest value) of the whole-number settings.
_COUNTS = (('make_jobs', 0), ('timeout', 60), ('poll_interval', 1), ('keep', 1))
_DELIVERY_COUNTS = (('serve_port', 1), ('pull_concurrency', 1))


def _shown(value):
    return json.dumps(value, sort_keys=True, default=str)


def _count(value):
    if isinstance(value, bool):
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def build_artifact_problems(settings, names=None):
    """Everything wrong with one build's settings, one message per broken rule, naming the variable the user wrote.

    settings: the build_artifact_* values without the prefix (name, version, source, url, sha256, mirror_dir,
    debian_version, git_url, git_commit, build_system, make_args, install_bin, build_env, env, configure_flags, root,
    build_dir, make_jobs, timeout, poll_interval, keep, environment; with delivery: delivery_url, serve_port,
    pull_concurrency). names: {'build_artifact_<key>': '<the calling
    role's variable>'} (ucx_sha256 for build_artifact_sha256): a message names what the user set, not what the calling
    role passed on. Returns [] when the settings are sound.
    """
    if not isinstance(settings, dict):
        _error('build_artifact_problems expects a dict of the build settings')
    names = names if isinstance(names, dict) else {}

    def name(key):
        return names.get('build_artifact_' + key) or 'build_artifact_' + key

    def text(key):
        value = settings.get(key)
        return value if isinstance(value, str) else None

    out = []

    def check(ok, key, rule):
        if not ok:
            out.append('%s %s, got %s' % (name(key), rule, _shown(settings.get(key))))

    check(_NAME.match(text('name') or ''), 'name', 'must be a lower-case package name (letters, digits, +._-)')
    check(_VERSION.match(text('version') or ''), 'version', 'must be a version that starts with a digit')
    source = settings.get('source')
    check(source in _SOURCES, 'source', 'must be one of %s' % ', '.join(_SOURCES))
    if source == 'debian':
        check(_DEBIAN_VERSION.match(text('debian_version') or ''), 'debian_version',
              'must be a Debian version with its revision, such as 1.13.1-1 (%s debian)' % name('source'))
    if source in ('url', 'mirror'):
        check(_SHA256.match(text('sha256') or ''), 'sha256', 'must be the 64 lower-case hex digits of the tarball (%s %s)' % (name('source'), source))
    if source == 'url':
        check(_URL.match(text('url') or ''), 'url', 'must be an http, https or ftp URL of one line without spaces (%s url)' % name('source'))
    if source == 'mirror':
        check(bool(text('mirror_dir')), 'mirror_dir', 'must name the directory that holds the tarball (%s mirror)' % name('source'))
    if source == 'git':
        check(bool(text('git_url')), 'git_url', 'must be a repository URL, a local mirror or a git bundle file (%s git)' % name('source'))
        check(_COMMIT.match(text('git_commit') or ''), 'git_commit',
              'must be a full 40-hex commit id (%s git: a tag, a branch or a short id can move or be ambiguous)' % name('source'))
    system = settings.get('build_system')
    check(system in _BUILD_SYSTEMS, 'build_system', 'must be autotools or make')
    make_args = settings.get('make_args') or []
    check(isinstance(make_args, list) and all(isinstance(a, str) and _MAKE_ARG.match(a) for a in make_args),
          'make_args', 'must be a list of NAME=value entries')
    # The build's environment (build.sh) and the module / profile.d one: both become shell variables.
    for key in ('build_env', 'env'):
        variables = settings.get(key) or {}
        check(isinstance(variables, dict) and all(isinstance(k, str) and _SHELL_NAME.match(k) for k in variables),
              key, 'must map shell variable names (letters, digits, _) to values')
    install_bin = settings.get('install_bin') or []
    if system == 'make':
        check(bool(install_bin), 'install_bin', 'must list the built programs to install (build_system make)')
    elif system == 'autotools':
        check(not make_args, 'make_args', 'belongs to build_system make (autotools runs configure, make, make install)')
        check(not install_bin, 'install_bin', 'belongs to build_system make (autotools installs with make install)')
    flags = settings.get('configure_flags') or []
    check(not any(str(flag).startswith('--prefix') for flag in flags), 'configure_flags',
          'may not set --prefix (the build id picks the prefix)')
    for key in ('root', 'build_dir'):
        check((text(key) or '').startswith('/'), key, 'must be an absolute path')
    for key, lowest in _COUNTS:
        number = _count(settings.get(key))
        check(number is not None and number >= lowest, key, 'must be a whole number >= %d' % lowest)
    check(settings.get('environment') in _ENVIRONMENTS, 'environment', 'must be one of %s' % ', '.join(_ENVIRONMENTS))
    if 'delivery' in settings:
        check(settings.get('delivery') in _DELIVERIES, 'delivery', 'must be one of %s' % ', '.join(_DELIVERIES))
        if settings.get('delivery') == 'url':
            check(bool(text('delivery_url')), 'delivery_url',
                  'must be the URL the site publishes build_artifact_controller_dir at (build_artifact_delivery url)')
        for key, lowest in _DELIVERY_COUNTS:
            number = _count(settings.get(key))
            check(number is not None and number >= lowest, key, 'must be a whole number >= %d' % lowest)
        port = _count(settings.get('serve_port'))
        check(port is None or port <= 65535, 'serve_port', 'must be a TCP port, 1 to 65535')
    return out


class FilterModule:
    """Build-artifact filters."""

    def filters(self):
        return {
            'build_artifact_id': build_artifact_id,
            'build_artifact_builders': build_artifact_builders,
            'build_artifact_builder_failure': build_artifact_builder_failure,
            'build_artifact_prune': build_artifact_prune,
            'build_artifact_problems': build_artifact_problems,
        }
