# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests outputs collected from public sources (tests/unit/fixtures/nccl_tests/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_tests import NcclTestsParseError, parse

HEADER = ('#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n')


@pytest.mark.parametrize('text, expected', cases('nccl_tests'))
def test_corpus(text, expected):
    check(parse, NcclTestsParseError, text, expected)


def test_wrong_results_and_failed_bounds_are_reported():
    result = parse(HEADER + '  1048576  262144  float  sum  -1  339.61  3.09  3.09  7  335.85  3.12  3.12  0\n'
                   '# Out of bounds values : 248 FAILED\n# Avg bus bandwidth    : 3.1\n')
    assert result['rows'][0]['out_of_place']['wrong'] == 7
    assert result['out_of_bounds'] == 248 and result['out_of_bounds_ok'] is False


@pytest.mark.parametrize('row, words', [
    ('  1048576  262144  float  sum  -1  339.61  3.09  nan  0  335.85  3.12  3.12  0', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  3.09  0  335.85  3.12  3.12  0  extra', 'columns'),
    ('  1048576  262144  float  sum  x  339.61  3.09  3.09  0  335.85  3.12  3.12  0', 'root'),
    ('  1048576  262144  float  sum  -1  339.61  -3.09  3.09  0  335.85  3.12  3.12  0', 'where a number belongs'),
])
def test_hostile_rows_give_an_error_never_a_number(row, words):
    with pytest.raises(NcclTestsParseError) as raised:
        parse(HEADER + row + '\n')
    assert words in str(raised.value)


def test_text_that_is_not_nccl_tests_is_refused():
    with pytest.raises(NcclTestsParseError):
        parse('size_MiB=1 time_us=47.4 algbw_GBs=22.1 busbw_GBs=22.1\n')
