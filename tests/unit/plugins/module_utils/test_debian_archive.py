# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Debian archive metadata (module_utils/_debian_archive.py and the debian_source module) on Debian's real files.

Fixtures (tests/unit/fixtures/debian_archive/README.md): bookworm's InRelease of 2026-07-11 (Debian 12.15) as the
mirror served it, and three paragraphs of that release's main/source/Sources.xz copied verbatim. Expected sums,
sizes and directories were read off the files by hand.
"""

from __future__ import annotations

import lzma
import os
import shutil

import pytest

from corpus_support import FIXTURES
from topology_support import run_module

from ansible_collections.trainstack.cluster.plugins.module_utils import _debian_archive as archive
from ansible_collections.trainstack.cluster.plugins.modules import debian_source

HERE = os.path.join(FIXTURES, 'debian_archive')
RELEASE = os.path.join(HERE, 'bookworm-InRelease')
KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg'
needs_gpgv = pytest.mark.skipif(not (shutil.which('gpgv') and os.path.exists(KEYRING)),
                                reason='gpgv and the Debian archive keyring are not on this host')


def read(name):
    with open(os.path.join(HERE, name), encoding='utf-8') as handle:
        return handle.read()


SOURCES = read('bookworm-main-Sources-excerpt')


def test_the_ucx_and_openmpi_entries_of_bookworm():
    assert archive.sources_entry(SOURCES, 'ucx', '1.13.1-1') == {'directory': 'pool/main/u/ucx', 'files': [
        {'name': 'ucx_1.13.1-1.dsc', 'sha256': 'bbe0768a0916a18f15de554660cfe5b7667ad5ba13e7e5f04f0662330cfcc664', 'size': 2312},
        {'name': 'ucx_1.13.1.orig.tar.xz', 'sha256': '1a88e09ca1b406c046a469c2ae271d2c330050b5664c0bcd9890e26c6ef09f3c',
         'size': 2067176},
        {'name': 'ucx_1.13.1-1.debian.tar.xz', 'sha256': 'e0a407539b44d3aa81e3f11fc43a3ad512550944a59227e2105317446fd2e0ff',
         'size': 6268}]}
    openmpi = archive.sources_entry(SOURCES, 'openmpi', '4.1.4-3')
    assert openmpi['directory'] == 'pool/main/o/openmpi'
    assert [(entry['name'], entry['size']) for entry in openmpi['files']] == [
        ('openmpi_4.1.4-3.dsc', 2743), ('openmpi_4.1.4.orig.tar.xz', 6916772), ('openmpi_4.1.4-3.debian.tar.xz', 68788)]
    # A point-release revision with '+' in it.
    assert archive.sources_entry(SOURCES, 'pmix', '4.2.2-1+deb12u1')['files'][0]['name'] == 'pmix_4.2.2-1+deb12u1.dsc'


@pytest.mark.parametrize('package, version, words', [
    ('ucx', '1.13.1-2', 'source package ucx 1.13.1-2 is not in the index (it has 1.13.1-1)'),
    ('hello', '2.10-3', 'source package hello 2.10-3 is not in the index (nor any version of it)'),
    ('../ucx', '1.13.1-1', "not a Debian source package name: '../ucx'"),
])
def test_a_version_the_index_does_not_hold_is_named(package, version, words):
    with pytest.raises(archive.ArchiveError, match=words.replace('(', '[(]').replace(')', '[)]').replace('+', '[+]')):
        archive.sources_entry(SOURCES, package, version)


UCX_ORIG = ' 1a88e09ca1b406c046a469c2ae271d2c330050b5664c0bcd9890e26c6ef09f3c 2067176 ucx_1.13.1.orig.tar.xz'


@pytest.mark.parametrize('edit, words', [
    # A mirror that rewrites the index: names that climb out of the cache or the build directory, another package's
    # file, a pool directory elsewhere, no orig tarball, two of them.
    ((UCX_ORIG, UCX_ORIG.replace('ucx_1.13.1.orig', '../../../../etc/cron.d/ucx_1.13.1.orig')), "which is not a file of source package ucx"),
    ((UCX_ORIG, UCX_ORIG.replace('ucx_1.13.1.orig.tar.xz', 'ucx_1.13.1/../x.orig.tar.xz')), 'not a file of source package ucx'),
    ((UCX_ORIG, UCX_ORIG.replace('ucx_1.13.1.orig', 'openmpi_4.1.4.orig')), 'not a file of source package ucx'),
    (('Directory: pool/main/u/ucx', 'Directory: pool/main/u/../../../tmp/ucx'), "names the pool directory"),
    (('Directory: pool/main/u/ucx', 'Directory: pool/main/o/openmpi'), "names the pool directory 'pool/main/o/openmpi'"),
    ((UCX_ORIG, UCX_ORIG.replace('.orig.tar.xz', '.tar.xz')), 'lists 0 main orig tarballs'),
    ((UCX_ORIG, UCX_ORIG + '\n' + UCX_ORIG.replace('.orig.tar.xz', '.orig.tar.gz')), 'lists 2 main orig tarballs'),
    ((UCX_ORIG, UCX_ORIG[:40]), 'unreadable SHA-256 line'),
])
def test_a_hostile_index_entry_is_refused(edit, words):
    hostile = SOURCES.replace(*edit)
    assert hostile != SOURCES
    with pytest.raises(archive.ArchiveError, match=words):
        archive.sources_entry(hostile, 'ucx', '1.13.1-1')


@needs_gpgv
def test_the_real_release_verifies_and_lists_the_source_index(capsys):
    result = run_module(debian_source.main, {'release': RELEASE, 'keyring': KEYRING}, capsys)
    assert not result.get('failed'), result
    # Read off the fixture's SHA256 field by hand (main/source/Sources.xz, 9491888 bytes).
    assert result['index_sha256'] == '92d11a035571df011f06f28c61cb9825130ef1d92abb2f2e0525e8674dc44af8'
    assert result['index_path'] == 'main/source/Sources.xz' and result['codename'] == 'bookworm'
    assert any('Good signature from "Debian Stable Release Key (12/bookworm)' in line for line in result['signature'])


@needs_gpgv
@pytest.mark.parametrize('old, new', [
    # The index's sum changed in the signed text: the signature no longer holds.
    (' 92d11a035571df011f06f28c61cb9825130ef1d92abb2f2e0525e8674dc44af8  9491888 main/source/Sources.xz',
     ' 0000000000000000000000000000000000000000000000000000000000000000  9491888 main/source/Sources.xz'),
    ('Codename: bookworm', 'Codename: bookwarm'),
])
def test_a_tampered_release_is_refused(tmp_path, capsys, old, new):
    text = read('bookworm-InRelease')
    assert old in text
    tampered = tmp_path / 'InRelease'
    tampered.write_text(text.replace(old, new), encoding='utf-8')
    result = run_module(debian_source.main, {'release': str(tampered), 'keyring': KEYRING}, capsys)
    assert result['failed'] and 'is not signed by a key of %s' % KEYRING in result['msg'], result
    assert 'BAD signature' in result['msg']


@needs_gpgv
def test_an_index_other_than_the_signed_one_is_refused(tmp_path, capsys):
    # The real excerpt, compressed: a valid index, but not the file the release signed.
    sources = tmp_path / 'Sources.xz'
    sources.write_bytes(lzma.compress(SOURCES.encode('utf-8')))
    result = run_module(debian_source.main, {'release': RELEASE, 'keyring': KEYRING, 'sources': str(sources),
                                             'package': 'ucx', 'version': '1.13.1-1'}, capsys)
    assert result['failed']
    assert result['msg'].startswith('%s is not the main/source/Sources.xz the signed release lists (SHA-256 92d11a03' % sources)


def test_deb822_continuation_before_a_field_is_an_error():
    with pytest.raises(archive.ArchiveError, match='continuation line before any field'):
        archive.paragraphs(' 1a88e09c 1 ucx.orig.tar.xz\n')
    with pytest.raises(archive.ArchiveError, match='not a deb822 field'):
        archive.paragraphs('-----BEGIN PGP SIGNED MESSAGE-----\n')
    with pytest.raises(archive.ArchiveError, match='no readable Sources index'):
        archive.decompress(b'not xz', 'Sources.xz')
