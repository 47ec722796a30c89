# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""build_artifact_id, build_artifact_builders and debian_dsc_files."""

from __future__ import annotations

import hashlib
import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter import build_artifact

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures', 'debian_dsc')

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
    (dict(SPEC, source={'type': 'git'}), 'source type must be debian, url or mirror'),
])
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(AnsibleFilterError, match=message):
        build_artifact.build_artifact_id(spec)


def test_one_builder_per_group_first_in_play_order():
    keys = {'n3': 'Debian-12-x86_64-cuda-none', 'n1': 'Debian-12-x86_64-cuda-12.8',
            'n2': 'Debian-12-x86_64-cuda-none', 'n4': 'Debian-12-x86_64-cuda-12.8', 'a1': 'Debian-12-aarch64-cuda-none'}
    assert build_artifact.build_artifact_builders(keys) == {'n3': 'n3', 'n1': 'n1', 'n2': 'n3', 'n4': 'n1', 'a1': 'a1'}


@pytest.mark.parametrize('name, expected', [
    ('ucx_1.13.1-1.dsc', [
        {'name': 'ucx_1.13.1.orig.tar.xz', 'sha256': '1a88e09ca1b406c046a469c2ae271d2c330050b5664c0bcd9890e26c6ef09f3c',
         'size': 2067176},
        {'name': 'ucx_1.13.1-1.debian.tar.xz', 'sha256': 'e0a407539b44d3aa81e3f11fc43a3ad512550944a59227e2105317446fd2e0ff',
         'size': 6268}]),
    ('openmpi_4.1.4-3.dsc', [
        {'name': 'openmpi_4.1.4.orig.tar.xz', 'sha256': 'ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263',
         'size': 6916772},
        {'name': 'openmpi_4.1.4-3.debian.tar.xz', 'sha256': 'd8e17f15993eddd9ab8a490cdd93f24e2fd32b730cf17dc5b071f8126106d59f',
         'size': 68788}]),
])
def test_dsc_files(name, expected):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        assert build_artifact.debian_dsc_files(handle.read()) == expected


def test_dsc_without_sha256_is_refused():
    with pytest.raises(AnsibleFilterError, match='no Checksums-Sha256'):
        build_artifact.debian_dsc_files('Format: 3.0 (quilt)\nSource: ucx\nFiles:\n 470a 1 ucx_1.orig.tar.xz\n')


def test_dsc_without_orig_tarball_is_refused():
    text = 'Checksums-Sha256:\n %s 6268 ucx_1.13.1-1.debian.tar.xz\nFiles:\n' % ('e' * 64)
    with pytest.raises(AnsibleFilterError, match='lists 0 main orig tarballs'):
        build_artifact.debian_dsc_files(text)
