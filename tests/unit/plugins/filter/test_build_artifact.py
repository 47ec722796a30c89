# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""build_artifact_id and build_artifact_builders."""

from __future__ import annotations

import hashlib

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter import build_artifact


SPEC = {
    'name': 'ucx', 'version': '1.13.1',
    'source': {'type': 'debian', 'package': 'ucx', 'debian_version': '1.13.1-1', 'patches': True},
    'configure_flags': ['--without-cuda', '--enable-mt'],
    'compiler': 'gcc (Debian 12.2.0-14) 12.2.0', 'os': 'Debian-12.11', 'arch': 'x86_64', 'cuda': 'none', 'depends': [],
}


def test_id_is_sha256_of_the_documented_canonical_text():
    # Written out by hand: keys sorted, flags sorted, compact separators.
    text = ('{"arch":"x86_64","compiler":"gcc (Debian 12.2.0-14) 12.2.0","configure_flags":["--enable-mt","--without-cuda"],'
            '"cuda":"none","depends":[],"name":"ucx","os":"Debian-12.11","source":"debian:ucx=1.13.1-1:patched",'
            '"version":"1.13.1"}')
    assert build_artifact.build_artifact_canonical(SPEC) == text
    assert build_artifact.build_artifact_id(SPEC) == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_flag_order_does_not_change_the_id():
    reordered = dict(SPEC, configure_flags=['--enable-mt', '--without-cuda'])
    assert build_artifact.build_artifact_id(reordered) == build_artifact.build_artifact_id(SPEC)


@pytest.mark.parametrize('key, value', [
    ('version', '1.13.2'),
    ('configure_flags', ['--without-cuda', '--disable-mt']),
    ('configure_flags', ['--without-cuda', '--enable-mt', '--with-verbs']),
    ('compiler', 'gcc (Debian 14.2.0-19) 14.2.0'),
    ('os', 'Debian-13.1'),
    ('arch', 'aarch64'),
    ('cuda', '12.8'),
    ('depends', ['ucx-0123456789ab']),
    ('source', {'type': 'debian', 'package': 'ucx', 'debian_version': '1.13.1-2', 'patches': True}),
    ('source', {'type': 'debian', 'package': 'ucx', 'debian_version': '1.13.1-1', 'patches': False}),
    ('source', {'type': 'url', 'sha256': 'ab' * 32}),
])
def test_every_input_changes_the_id(key, value):
    assert build_artifact.build_artifact_id(dict(SPEC, **{key: value})) != build_artifact.build_artifact_id(SPEC)


@pytest.mark.parametrize('patches', [False, 'False', 'no'])
def test_patches_off_in_any_spelling_is_one_build(patches):
    source = dict(SPEC['source'], patches=patches)
    orig = dict(SPEC['source'], patches=False)
    assert build_artifact.build_artifact_id(dict(SPEC, source=source)) == build_artifact.build_artifact_id(dict(SPEC, source=orig))


def test_a_tarball_is_named_by_its_sum_not_by_where_it_came_from():
    url = build_artifact.build_artifact_id(dict(SPEC, source={'type': 'url', 'sha256': 'AB' * 32}))
    mirror = build_artifact.build_artifact_id(dict(SPEC, source={'type': 'mirror', 'sha256': 'ab' * 32}))
    other = build_artifact.build_artifact_id(dict(SPEC, source={'type': 'mirror', 'sha256': 'cd' * 32}))
    assert url == mirror != other


@pytest.mark.parametrize('none', [None, '', 'none', False])
def test_no_cuda_spellings_are_one_build(none):
    assert build_artifact.build_artifact_id(dict(SPEC, cuda=none)) == build_artifact.build_artifact_id(SPEC)


@pytest.mark.parametrize('spec, message', [
    ({k: v for k, v in SPEC.items() if k != 'compiler'}, 'build spec lacks compiler'),
    (dict(SPEC, flags=[]), 'build spec has unknown keys flags'),
    (dict(SPEC, depends='ucx-1'), 'build spec depends must be a list'),
    ('ucx', 'build_artifact_id expects a dict'),
    (dict(SPEC, source='debian'), 'source must be a dict'),
    (dict(SPEC, source={'type': 'debian', 'package': 'ucx'}), 'needs package and debian_version'),
    (dict(SPEC, source={'type': 'url', 'sha256': ''}), 'needs the tarball sha256'),
    (dict(SPEC, source={'type': 'svn'}), 'source type must be debian, url, mirror or git'),
    (dict(SPEC, source={'type': 'git'}), 'needs the full commit id'),
    (dict(SPEC, source={'type': 'git', 'commit': 'a0b82b2'}), 'needs the full commit id'),
    (dict(SPEC, source={'type': 'git', 'commit': 'v2.19.6'}), 'needs the full commit id'),
    (dict(SPEC, build_system='cmake'), 'build_system must be autotools or make'),
    (dict(SPEC, make_args=['MPI=1']), 'make_args and build_env belong to build_system make'),
    (dict(SPEC, build_system='make', make_args=['-j8']), 'make_args must be NAME=value'),
    (dict(SPEC, build_system='make', make_args='MPI=1'), 'make_args must be a list'),
])
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(AnsibleFilterError, match=message):
        build_artifact.build_artifact_id(spec)


def test_one_builder_per_group_first_in_play_order():
    keys = {'n3': 'Debian-12-x86_64-cuda-none', 'n1': 'Debian-12-x86_64-cuda-12.8',
            'n2': 'Debian-12-x86_64-cuda-none', 'n4': 'Debian-12-x86_64-cuda-12.8', 'a1': 'Debian-12-aarch64-cuda-none'}
    assert build_artifact.build_artifact_builders(keys) == {'n3': 'n3', 'n1': 'n1', 'n2': 'n3', 'n4': 'n1', 'a1': 'a1'}


GIT_MAKE = dict(SPEC, name='nccl-tests', version='2.19.6', configure_flags=[], cuda='11.8',
                source={'type': 'git', 'commit': 'a0b82b2260cf5152b9f8c061bbf7eaf0ba096432'},
                build_system='make', make_args=['MPI=0', 'NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80'],
                build_env={'LD_RUN_PATH': '/opt/nccl/lib'})


def test_git_make_canonical_text():
    # Written out by hand: the source is the commit, the make part follows the autotools keys.
    assert build_artifact.build_artifact_canonical(GIT_MAKE) == (
        '{"arch":"x86_64","build_env":{"LD_RUN_PATH":"/opt/nccl/lib"},"build_system":"make",'
        '"compiler":"gcc (Debian 12.2.0-14) 12.2.0","configure_flags":[],"cuda":"11.8","depends":[],'
        '"make_args":["MPI=0","NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80"],"name":"nccl-tests",'
        '"os":"Debian-12.11","source":"git:a0b82b2260cf5152b9f8c061bbf7eaf0ba096432","version":"2.19.6"}')


def test_autotools_ids_do_not_see_the_make_keys():
    # ucx and openmpi pass the make keys empty: their ids are those of the specs without them.
    assert build_artifact.build_artifact_id(dict(SPEC, build_system='autotools', make_args=[], build_env={})) == \
        build_artifact.build_artifact_id(SPEC)


@pytest.mark.parametrize('key, value', [
    ('make_args', ['MPI=1', 'NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80']),
    ('make_args', ['NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80', 'MPI=0']),
    ('build_env', {'LD_RUN_PATH': '/opt/other/lib'}),
    ('source', {'type': 'git', 'commit': 'b' * 40}),
])
def test_every_make_input_changes_the_id(key, value):
    assert build_artifact.build_artifact_id(dict(GIT_MAKE, **{key: value})) != build_artifact.build_artifact_id(GIT_MAKE)


# The builder's registered results in the shapes Ansible gives them: a package task that failed, a command that could
# not start, async_status of a finished and of an unfinished job (finished is 1 or 0), a shell task's stdout.
FAILED_TOOLS = {'changed': False, 'failed': True, 'msg': 'No package matching autoconf is available'}
NO_CC = {'changed': False, 'failed': True, 'rc': 2, 'cmd': 'cc --version',
         'msg': "[Errno 2] No such file or directory: b'cc'", 'stdout': '', 'stderr': ''}
CC_OK = {'changed': False, 'rc': 0, 'stdout': 'cc (Debian 12.2.0-14) 12.2.0', 'stdout_lines': ['cc (Debian 12.2.0-14) 12.2.0']}
BUILD_EXIT_2 = {'ansible_job_id': 'j1', 'finished': 1, 'rc': 2, 'changed': True}
BUILD_RUNNING = {'ansible_job_id': 'j1', 'finished': 0, 'started': 1, 'attempts': 360}
BUILD_OK = {'ansible_job_id': 'j1', 'finished': 1, 'rc': 0, 'changed': True}
TAIL = {'rc': 0, 'stdout': '== /var/tmp/trainstack-build/ucx.log\n' + '\n'.join('line %d' % n for n in range(1, 31))
        + "\nmake: *** [Makefile:640: all-recursive] Error 1"}


@pytest.mark.parametrize('results, expected', [
    ({'tools': FAILED_TOOLS},
     'installing the build tools failed on n1: No package matching autoconf is available'),
    ({'tools': {'changed': False}, 'compiler': NO_CC},
     "reading the compiler version (cc --version) failed on n1: [Errno 2] No such file or directory: b'cc'"),
    ({'tools': {'changed': False}, 'compiler': CC_OK, 'build': BUILD_RUNNING},
     'the build failed on n1: not finished within build_artifact_timeout (full log /var/tmp/b.log on n1)'),
    ({'tools': {'skipped': True}, 'compiler': CC_OK, 'build': BUILD_EXIT_2, 'log_tail': TAIL},
     'the build failed on n1: exit status 2 (full log /var/tmp/b.log on n1):\n'
     + '\n'.join('line %d' % n for n in range(12, 31)) + '\nmake: *** [Makefile:640: all-recursive] Error 1'),
    # Nothing of these failed (a source refused on the controller, a fetch): the builder's own error says it.
    ({'tools': {'changed': False}, 'compiler': CC_OK, 'build': BUILD_OK}, ''),
    ({}, ''),
])
def test_the_builder_failure_names_the_step_and_the_log_tail(results, expected):
    assert build_artifact.build_artifact_builder_failure(results, builder='n1', log='/var/tmp/b.log') == expected


def test_the_builder_failure_wants_a_dict():
    with pytest.raises(AnsibleFilterError, match='registered results'):
        build_artifact.build_artifact_builder_failure(['tools'])


# ansible.builtin.find's files entries (path, mtime as a float) under <root>/ucx.
FOUND = [
    {'path': '/opt/trainstack/ucx/1.13.1-aaaaaaaaaaaa', 'mtime': 100.0},
    {'path': '/opt/trainstack/ucx/1.13.1-bbbbbbbbbbbb', 'mtime': 300.0},
    {'path': '/opt/trainstack/ucx/1.17.0-cccccccccccc', 'mtime': 200.0},
    {'path': '/opt/trainstack/ucx/1.13.1-dddddddddddd', 'mtime': 400.0},
    # Not builds: an unpack directory and a name without an id.
    {'path': '/opt/trainstack/ucx/.1.13.1-eeeeeeeeeeee.unpack', 'mtime': 50.0},
    {'path': '/opt/trainstack/ucx/local-copy', 'mtime': 10.0},
]


@pytest.mark.parametrize('current, keep, expected', [
    ('1.13.1-dddddddddddd', 3, ['/opt/trainstack/ucx/1.13.1-aaaaaaaaaaaa']),
    ('1.13.1-dddddddddddd', 1, ['/opt/trainstack/ucx/1.13.1-aaaaaaaaaaaa', '/opt/trainstack/ucx/1.13.1-bbbbbbbbbbbb',
                                '/opt/trainstack/ucx/1.17.0-cccccccccccc']),
    # A rollback: current points at the oldest build; it stays, the newest others fill the rest.
    ('1.13.1-aaaaaaaaaaaa', 2, ['/opt/trainstack/ucx/1.13.1-bbbbbbbbbbbb', '/opt/trainstack/ucx/1.17.0-cccccccccccc']),
    ('1.13.1-dddddddddddd', 10, []),
])
def test_prune_keeps_the_current_and_the_newest(current, keep, expected):
    assert build_artifact.build_artifact_prune(FOUND, current=current, keep=keep) == expected


@pytest.mark.parametrize('keep', [0, -1, 'many'])
def test_prune_keeps_at_least_the_current_build(keep):
    with pytest.raises(AnsibleFilterError, match='keep must be'):
        build_artifact.build_artifact_prune(FOUND, current='1.13.1-dddddddddddd', keep=keep)


# --- build_artifact_problems: the settings as ucx passes them (Debian source), then one broken rule per case.
SETTINGS = {
    'name': 'ucx', 'version': '1.13.1', 'source': 'debian', 'url': '', 'sha256': '', 'mirror_dir': '',
    'debian_version': '1.13.1-1', 'git_url': '', 'git_commit': '', 'build_system': 'autotools', 'make_args': [],
    'install_bin': [], 'build_env': {}, 'configure_flags': ['--enable-mt'], 'root': '/opt/trainstack',
    'build_dir': '/var/tmp/trainstack-build', 'make_jobs': '0', 'timeout': '7200', 'poll_interval': '20', 'keep': '3',
    'environment': 'auto',
}
UCX_NAMES = {'build_artifact_version': 'ucx_version', 'build_artifact_source': 'ucx_source', 'build_artifact_url': 'ucx_url',
             'build_artifact_sha256': 'ucx_sha256', 'build_artifact_debian_version': 'ucx_debian_version'}
SHA = 'ab' * 32


@pytest.mark.parametrize('changes', [
    {},
    {'source': 'url', 'url': 'https://github.com/openucx/ucx/releases/download/v1.13.1/ucx-1.13.1.tar.gz', 'sha256': SHA},
    {'source': 'mirror', 'mirror_dir': '/srv/mirror', 'sha256': SHA},
    {'source': 'git', 'git_url': '/srv/mirror/nccl-tests.bundle', 'git_commit': 'a0b82b2260cf5152b9f8c061bbf7eaf0ba096432',
     'build_system': 'make', 'make_args': ['MPI=1', 'NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90'],
     'install_bin': ['build/*_perf'], 'build_env': {'CUDA_HOME': '/usr/local/cuda'}},
    {'debian_version': '1:4.1.4-3+b1', 'version': '4.1.4'},
    {'make_jobs': 8, 'keep': 1, 'timeout': 60, 'poll_interval': 1, 'environment': 'none'},
], ids=['debian', 'url', 'mirror', 'git-make', 'epoch', 'numbers-as-ints'])
def test_sound_settings_have_no_problem(changes):
    assert build_artifact.build_artifact_problems(dict(SETTINGS, **changes), UCX_NAMES) == []


@pytest.mark.parametrize('changes, expected', [
    # the user's variable is named when the calling role maps it
    ({'version': 'latest'}, ['ucx_version must be a version that starts with a digit, got "latest"']),
    ({'version': '1.13.1\n'}, ['ucx_version must be a version that starts with a digit, got "1.13.1\\n"']),
    ({'source': 'github'}, ['ucx_source must be one of debian, url, mirror, git, got "github"']),
    ({'debian_version': '1.13.1'},
     ['ucx_debian_version must be a Debian version with its revision, such as 1.13.1-1 (ucx_source debian), got "1.13.1"']),
    ({'source': 'url', 'url': 'https://example.org/ucx.tar.gz', 'sha256': 'AB' * 32},
     ['ucx_sha256 must be the 64 lower-case hex digits of the tarball (ucx_source url), got "%s"' % ('AB' * 32)]),
    ({'source': 'url', 'url': 'example.org/ucx.tar.gz', 'sha256': SHA},
     ['ucx_url must be an http, https or ftp URL of one line without spaces (ucx_source url), got "example.org/ucx.tar.gz"']),
    ({'source': 'url', 'url': 'https://example.org/ucx.tar.gz\nrm -rf /', 'sha256': SHA},
     ['ucx_url must be an http, https or ftp URL of one line without spaces (ucx_source url), got "https://example.org/ucx.tar.gz\\nrm -rf /"']),
    # one message per broken rule, and only those
    ({'source': 'mirror', 'sha256': ''},
     ['ucx_sha256 must be the 64 lower-case hex digits of the tarball (ucx_source mirror), got ""',
      'build_artifact_mirror_dir must name the directory that holds the tarball (ucx_source mirror), got ""']),
    ({'source': 'git', 'git_url': '/srv/x.bundle', 'git_commit': 'v2.19.6'},
     ['build_artifact_git_commit must be a full 40-hex commit id (ucx_source git: a tag, a branch or a short id can move or be '
      'ambiguous), got "v2.19.6"']),
    ({'build_system': 'cmake'}, ['build_artifact_build_system must be autotools or make, got "cmake"']),
    ({'make_args': ['-j8']},
     ['build_artifact_make_args must be a list of NAME=value entries, got ["-j8"]',
      'build_artifact_make_args belongs to build_system make (autotools runs configure, make, make install), got ["-j8"]']),
    ({'build_system': 'make', 'install_bin': [], 'build_env': {'A B': 'x'}},
     ['build_artifact_build_env must map shell variable names (letters, digits, _) to values, got {"A B": "x"}',
      'build_artifact_install_bin must list the built programs to install (build_system make), got []']),
    ({'env': {'UCX_HOME': '@PREFIX@', 'X;id': 'y'}},
     ['build_artifact_env must map shell variable names (letters, digits, _) to values, got {"UCX_HOME": "@PREFIX@", "X;id": "y"}']),
    ({'configure_flags': ['--prefix=/usr']},
     ['build_artifact_configure_flags may not set --prefix (the build id picks the prefix), got ["--prefix=/usr"]']),
    ({'root': 'opt/trainstack'}, ['build_artifact_root must be an absolute path, got "opt/trainstack"']),
    ({'timeout': '59', 'keep': 'three', 'make_jobs': True},
     ['build_artifact_make_jobs must be a whole number >= 0, got true', 'build_artifact_timeout must be a whole number >= 60, got "59"',
      'build_artifact_keep must be a whole number >= 1, got "three"']),
    ({'environment': 'lmod'}, ['build_artifact_environment must be one of auto, modules, profile, none, got "lmod"']),
], ids=['latest', 'version-newline', 'source', 'debian-revision', 'sha-case', 'url-scheme', 'url-newline', 'mirror-two',
        'git-tag', 'build-system', 'make-args-autotools', 'make-env-install', 'env-name', 'prefix', 'relative-root', 'numbers',
        'environment'])
def test_each_broken_rule_is_named_once(changes, expected):
    assert build_artifact.build_artifact_problems(dict(SETTINGS, **changes), UCX_NAMES) == expected


DELIVERY = {'delivery': 'builder', 'delivery_url': '', 'serve_port': 8690, 'pull_concurrency': 32}


@pytest.mark.parametrize('changes, expected', [
    ({}, []),
    ({'delivery': 'url', 'delivery_url': 'https://mirror.example.org/trainstack/artifacts'}, []),
    ({'delivery': 'push', 'serve_port': '8690'}, []),
    ({'delivery': 'rsync'}, ['build_artifact_delivery must be one of builder, url, push, got "rsync"']),
    ({'delivery': 'url'}, ['build_artifact_delivery_url must be the URL the site publishes build_artifact_controller_dir at '
                           '(build_artifact_delivery url), got ""']),
    ({'serve_port': 70000}, ['build_artifact_serve_port must be a TCP port, 1 to 65535, got 70000']),
    ({'serve_port': 0, 'pull_concurrency': 'all'}, ['build_artifact_serve_port must be a whole number >= 1, got 0',
                                                    'build_artifact_pull_concurrency must be a whole number >= 1, got "all"']),
], ids=['builder', 'url', 'push-port-as-text', 'unknown', 'url-without-url', 'port-too-high', 'zero-and-text'])
def test_delivery_settings(changes, expected):
    assert build_artifact.build_artifact_problems(dict(SETTINGS, **dict(DELIVERY, **changes))) == expected


def test_problems_without_names_use_the_role_variables():
    assert build_artifact.build_artifact_problems(dict(SETTINGS, version='x')) == [
        'build_artifact_version must be a version that starts with a digit, got "x"']


def test_problems_want_a_dict():
    with pytest.raises(AnsibleFilterError, match='expects a dict'):
        build_artifact.build_artifact_problems(['ucx'])
