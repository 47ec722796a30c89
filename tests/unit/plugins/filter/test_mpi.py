# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""UCX/Open MPI configure flags and the Open MPI/PMIx/Slurm pairing check against data/mpi_compatibility.yml."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter import mpi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(ROOT, 'data', 'mpi_compatibility.yml'), encoding='utf-8') as handle:
    MATRIX = yaml.safe_load(handle)

# (id, stack, expected messages (exact))
PAIRINGS = [
    ('debian-12', {'openmpi_version': '4.1.4', 'pmix_version': '4.2.2', 'slurm_version': '22.05.8'}, []),
    ('debian-13', {'openmpi_version': '5.0.7', 'pmix_version': '5.0.7', 'slurm_version': '24.11.5'}, []),
    ('4.1.6-pmix-4.2.8', {'openmpi_version': '4.1.6', 'pmix_version': '4.2.8', 'slurm_version': '23.11.4'}, []),
    ('4.1.4-pmix-4.2.3', {'openmpi_version': '4.1.4', 'pmix_version': '4.2.3', 'slurm_version': '22.05.8'},
     ['openmpi_version 4.1.4 with pmix_version 4.2.3: Open MPI before 4.1.6 breaks against PMIx 4.2.3 and newer '
      '(open-mpi/ompi#11729)']),
    ('4.1.5-pmix-4.2.2-ok', {'openmpi_version': '4.1.5', 'pmix_version': '4.2.2'}, []),
    ('4.1-pmix-5-slurm-22.05', {'openmpi_version': '4.1.6', 'pmix_version': '5.0.7', 'slurm_version': '22.05.8'},
     ['openmpi_version 4.1.6 with pmix_version 5.0.7: Open MPI 4.x does not support PMIx 5 (open-mpi/ompi#10307)',
      "pmix_version 5.0.7 with slurm_version 22.05.8: Slurm before 23.02 has no PMIx 5 plugin (Debian 12's 22.05 "
      'ships mpi_pmix_v4 only)']),
    ('5.0-pmix-4.1', {'openmpi_version': '5.0.3', 'pmix_version': '4.1.2-2'},
     ['openmpi_version 5.0.3 with pmix_version 4.1.2-2: Open MPI 5.0 needs PMIx 4.2.0 or newer '
      '(Open MPI 5.0 documentation, required support libraries)']),
    ('debian-revision-ignored', {'openmpi_version': '4.1.4', 'pmix_version': '4.2.2-1+deb12u1'}, []),
    # ompi #12264: 5.0.0 - 5.0.2 with CUDA build without it; 5.0.3 and a build without CUDA are fine.
    ('5.0.1-cuda', {'openmpi_version': '5.0.1', 'pmix_version': '5.0.1', 'cuda': True},
     ['openmpi_version 5.0.1 with cuda (CUDA): Open MPI 5.0.0 to 5.0.2 built with CUDA drop CUDA support silently unless '
      '--with-cuda-libdir is given (open-mpi/ompi#12264, fixed in 5.0.3 by open-mpi/ompi#12382); use 5.0.3 or newer']),
    ('5.0.2-no-cuda', {'openmpi_version': '5.0.2', 'pmix_version': '5.0.1', 'cuda': False}, []),
    ('5.0.3-cuda', {'openmpi_version': '5.0.3', 'pmix_version': '5.0.2', 'cuda': True}, []),
    ('unsupported-series', {'openmpi_version': '3.1.6'},
     ['openmpi_version 3.1.6 is not a supported Open MPI series (supported: 4.1, 5.0)']),
]


@pytest.mark.parametrize('stack, expected', [case[1:] for case in PAIRINGS], ids=[case[0] for case in PAIRINGS])
def test_pairings(stack, expected):
    assert mpi.mpi_stack_conflicts(stack, MATRIX) == expected


def test_labels_name_the_variables():
    stack = {'openmpi_version': '4.1.4', 'pmix_version': '4.2.3'}
    labels = {'pmix_version': 'openmpi_pmix_version'}
    assert mpi.mpi_stack_conflicts(stack, MATRIX, labels)[0].startswith('openmpi_version 4.1.4 with openmpi_pmix_version 4.2.3:')


def test_the_cuda_label_names_the_variable_and_the_home():
    stack = {'openmpi_version': '5.0.0', 'pmix_version': '4.2.6', 'cuda': True}
    labels = {'cuda': 'openmpi_cuda_home /usr/local/cuda-12.4'}
    assert mpi.mpi_stack_conflicts(stack, MATRIX, labels)[0].startswith(
        'openmpi_version 5.0.0 with openmpi_cuda_home /usr/local/cuda-12.4 (CUDA): Open MPI 5.0.0 to 5.0.2')


def test_matrix_is_required():
    with pytest.raises(AnsibleFilterError, match='pmix_rules'):
        mpi.mpi_stack_conflicts({'openmpi_version': '4.1.4'}, {})


def test_ucx_flags_without_cuda_with_verbs():
    flags = mpi.ucx_configure_flags({'cuda_home': '', 'verbs': True, 'mt': True, 'extra': []})
    assert flags[:8] == ['--disable-logging', '--disable-debug', '--disable-assertions', '--disable-params-check',
                         '--enable-mt', '--without-cuda', '--with-verbs', '--with-rdmacm']
    assert not any(flag.startswith('--with-cuda') for flag in flags)
    assert '--disable-static' in flags


def test_ucx_flags_with_cuda_without_verbs():
    flags = mpi.ucx_configure_flags({'cuda_home': '/usr/local/cuda-12.8', 'verbs': False, 'mt': False,
                                     'extra': ['--with-gdrcopy=/usr']})
    assert '--with-cuda=/usr/local/cuda-12.8' in flags and '--without-cuda' not in flags
    assert '--without-verbs' in flags and '--without-rdmacm' in flags and '--disable-mt' in flags
    assert flags[-1] == '--with-gdrcopy=/usr'


@pytest.mark.parametrize('extra', [['--with-cuda=/opt/cuda'], ['--without-verbs'], ['--prefix=/usr']])
def test_ucx_extra_may_not_override_derived_flags(extra):
    with pytest.raises(AnsibleFilterError, match='ucx_configure_extra may not set'):
        mpi.ucx_configure_flags({'cuda_home': '', 'verbs': True, 'extra': extra})


_UCX = '/opt/trainstack/ucx/1.13.1-abc'
_OMPI_COMMON = ['--with-hwloc=external', '--with-libevent=external', '--without-cuda', '--with-slurm',
                'LDFLAGS=-Wl,-rpath,/opt/trainstack/ucx/1.13.1-abc/lib',
                '--disable-mpi-fortran', '--disable-oshmem', '--disable-io-romio']


@pytest.mark.parametrize('version, pmix_prefix, expected_pmix, expected_no_build', [
    # Debian 12: the PMIx directory itself.
    ('4.1.4', '/usr/lib/x86_64-linux-gnu/pmix2', '--with-pmix=/usr/lib/x86_64-linux-gnu/pmix2',
     '--enable-mca-no-build=btl-uct,btl-openib'),
    # Debian 13: PMIx through pkg-config (`external`): PRRTE, built inside Open MPI 5, finds PMIx's devel
    # headers only through Debian's pmix.pc. openib is gone in 5.0: only btl/uct is left out.
    ('5.0.7', 'external', '--with-pmix=external', '--enable-mca-no-build=btl-uct'),
])
def test_openmpi_flags_as_debian_derives_them(version, pmix_prefix, expected_pmix, expected_no_build):
    flags = mpi.openmpi_configure_flags({'version': version, 'ucx_prefix': _UCX, 'pmix_prefix': pmix_prefix,
                                         'cuda_home': '', 'slurm': True})
    assert flags == ['--with-ucx=' + _UCX, expected_pmix] + _OMPI_COMMON + [expected_no_build]


def test_openmpi_50_flags_with_cuda():
    flags = mpi.openmpi_configure_flags({'version': '5.0.7', 'ucx_prefix': '/u', 'pmix_prefix': '/p',
                                         'cuda_home': '/usr/local/cuda', 'slurm': False})
    assert '--with-cuda=/usr/local/cuda' in flags and '--without-slurm' in flags
    # openib is gone in 5.0: only btl/uct is left out.
    assert flags[-1] == '--enable-mca-no-build=btl-uct'


@pytest.mark.parametrize('options, message', [
    ({'version': '4.0.7', 'ucx_prefix': '/u', 'pmix_prefix': '/p'}, 'builds Open MPI 4.1.x and 5.0.x'),
    ({'version': '4.1.4', 'ucx_prefix': '/u', 'pmix_prefix': ''}, 'needs pmix_prefix'),
    ({'version': '4.1.4', 'ucx_prefix': '/u', 'pmix_prefix': '/p', 'extra': ['--with-pmix=internal']},
     'openmpi_configure_extra may not set --with-pmix'),
    # Installation directories, also abbreviated as configure takes them (the fifth held-out round of issue 25).
    ({'version': '4.1.4', 'ucx_prefix': '/u', 'pmix_prefix': '/p', 'extra': ['--sysconfdir=/etc']},
     r'openmpi_configure_extra may not set --sysconfdir \(an installation directory\)'),
    ({'version': '4.1.4', 'ucx_prefix': '/u', 'pmix_prefix': '/p', 'extra': ['--pre=/usr']},
     r'openmpi_configure_extra may not set --pre \(--prefix\)'),
])
def test_openmpi_bad_options(options, message):
    with pytest.raises(AnsibleFilterError, match=message):
        mpi.openmpi_configure_flags(options)


@pytest.mark.parametrize('cuda, home', [
    ({'version': None, 'release': None, 'nvcc': None, 'source': None}, ''),
    ({'version': '12.8', 'release': '12.8.93', 'nvcc': '/usr/local/cuda/bin/nvcc', 'source': 'nvcc'}, '/usr/local/cuda'),
    ({'version': '12.4', 'release': '12.4.131', 'nvcc': None, 'source': '/usr/local/cuda/version.json'}, '/usr/local/cuda'),
    ({'version': '12.0', 'release': '12.0.140', 'nvcc': '/usr/bin/nvcc', 'source': 'nvcc'}, '/usr'),
    ({}, ''),
])
def test_cuda_home_from_gpu_stack_facts(cuda, home):
    assert mpi.mpi_cuda_home(cuda) == home


@pytest.mark.parametrize(('stack', 'message'), [
    ({'openmpi_version': '4.1.4', 'pmix_version': 'newest'}, "openmpi_pmix_version must be a version such as 4.2.2, got 'newest'"),
    ({'openmpi_version': 'v4.1.4'}, "openmpi_version must be a version such as 4.2.2, got 'v4.1.4'"),
])
def test_a_word_for_a_version_names_the_variable(stack, message):
    labels = {'pmix_version': 'openmpi_pmix_version (the PMIx Slurm uses on Debian 12)'}
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        mpi.mpi_stack_conflicts(stack, MATRIX, labels)


D12 = {'Open MPI': '4.1.4', 'PMIx': '4.x', 'UCX': '1.13.1', 'os': 'Debian 12'}
D13 = {'Open MPI': '5.0.7', 'PMIx': '5.x', 'UCX': '1.18.1', 'os': 'Debian 13'}
PINS = {'Open MPI': 'openmpi_version', 'UCX': 'ucx_version'}

# (id, stacks, expected messages (exact))
GROUPS = [
    ('one-os', {'gpu01': D12, 'gpu02': D12, 'gpu03': D12}, []),
    ('empty', {}, []),
    ('debian-12-and-13', {'gpu01': D12, 'gpu02': D12, 'gpu03': D13},
     ['the mpi group would get 2 Open MPI releases, and the ranks of one job need one: 4.1.4 on gpu[01-02] (Debian 12); '
      '5.0.7 on gpu03 (Debian 13). Pin one release every node can build (openmpi_version) or give each OS its own mpi group',
      'the mpi group would get 2 PMIx releases, and the ranks of one job need one: 4.x on gpu[01-02] (Debian 12); '
      '5.x on gpu03 (Debian 13). Give each OS its own mpi group',
      'the mpi group would get 2 UCX releases, and the ranks of one job need one: 1.13.1 on gpu[01-02] (Debian 12); '
      '1.18.1 on gpu03 (Debian 13). Pin one release every node can build (ucx_version) or give each OS its own mpi group']),
    # Open MPI pinned for the whole group (a source every OS builds): UCX still differs, and is named alone.
    ('openmpi-pinned-ucx-not', {'a1': dict(D12, **{'Open MPI': '5.0.7', 'PMIx': '5.x'}), 'b1': D13},
     ['the mpi group would get 2 UCX releases, and the ranks of one job need one: 1.13.1 on a1 (Debian 12); '
      '1.18.1 on b1 (Debian 13). Pin one release every node can build (ucx_version) or give each OS its own mpi group']),
    # Sorted by version number, not by text (4.1.10 after 4.1.9); IP addresses are listed, not compressed.
    ('by-number', {'10.0.0.1': dict(D12, **{'Open MPI': '4.1.10'}), '10.0.0.2': D12, '10.0.0.3': dict(D12, **{'Open MPI': '4.1.9'})},
     ['the mpi group would get 3 Open MPI releases, and the ranks of one job need one: 4.1.4 on 10.0.0.2 (Debian 12); '
      '4.1.9 on 10.0.0.3 (Debian 12); 4.1.10 on 10.0.0.1 (Debian 12). Pin one release every node can build (openmpi_version) '
      'or give each OS its own mpi group']),
    # A host where the ucx role did not note its release is not compared on UCX.
    ('ucx-unknown-on-one', {'gpu01': D12, 'gpu02': {key: value for key, value in D12.items() if key != 'UCX'}}, []),
]


@pytest.mark.parametrize(('stacks', 'expected'), [case[1:] for case in GROUPS], ids=[case[0] for case in GROUPS])
def test_mpi_group_problems(stacks, expected):
    assert mpi.mpi_group_problems(stacks, 'mpi', PINS) == expected


@pytest.mark.parametrize('stacks', [['gpu01'], {'gpu01': '4.1.4'}, None])
def test_mpi_group_problems_refuses_other_shapes(stacks):
    with pytest.raises(AnsibleFilterError, match='mpi_group_problems expects a dict'):
        mpi.mpi_group_problems(stacks)


@pytest.mark.parametrize('flag, meant', [
    ('--libdir=/usr/lib/x86_64-linux-gnu', 'an installation directory'), ('--pre=/usr', '--prefix'),
    ('--lib=/usr/lib', '--libexecdir, --libdir')])
def test_ucx_extra_may_not_move_the_install(flag, meant):
    with pytest.raises(AnsibleFilterError, match='ucx_configure_extra may not set %s \\(%s\\)' % (flag.split('=')[0], meant)):
        mpi.ucx_configure_flags({'cuda_home': '', 'extra': [flag]})


def test_ucx_extra_keeps_other_flags():
    assert mpi.ucx_configure_flags({'cuda_home': '', 'extra': ['--with-dm', '--enable-cma']})[-2:] == ['--with-dm', '--enable-cma']
