# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvidia-smi -q outputs collected from public sources (tests/unit/fixtures/nvsmi_query/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._nvsmi_query import NvsmiQueryParseError, parse

GPU = 'GPU 00000000:18:00.0\n    Product Name                          : NVIDIA H800\n'


@pytest.mark.parametrize('text, expected', cases('nvsmi_query'))
def test_corpus(text, expected):
    check(parse, NvsmiQueryParseError, text, expected)


@pytest.mark.parametrize('extra, words', [
    ('    Persistence Mode                      : Maybe\n', 'Persistence Mode'),
    ('    Retired Pages\n        Double Bit ECC                    : 2x\n', 'not a count'),
    ('    Remapped Rows\n        Pending                           : Perhaps\n', 'Yes/No'),
])
def test_values_outside_what_nvidia_smi_prints_are_refused(extra, words):
    with pytest.raises(NvsmiQueryParseError) as raised:
        parse(GPU + extra)
    assert words in str(raised.value)


def test_a_gpu_section_without_a_name_is_refused():
    with pytest.raises(NvsmiQueryParseError):
        parse('GPU 00000000:18:00.0\n    Persistence Mode                      : Enabled\n')
