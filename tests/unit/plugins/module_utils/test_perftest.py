# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest reports collected from public sources (tests/unit/fixtures/perftest/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._perftest import PerftestParseError, parse


@pytest.mark.parametrize('text, expected', cases('perftest'))
def test_corpus(text, expected):
    check(parse, PerftestParseError, text, expected)


def test_a_sweep_keeps_every_size_in_order():
    text = next(param.values[0] for param in cases('perftest') if param.id == 'ib_write_bw_roce_gbits_sweep_client')
    assert [row['bytes'] for row in parse(text)['rows']] == [2 ** power for power in range(1, 24)]


@pytest.mark.parametrize('text, words', [
    ('', 'no result table'),
    (' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n', 'no result row'),
    (' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n'
     ' 65536      1000             -11709.18            11708.31\t\t   0.187333\n', 'negative'),
    (' #bytes     #iterations    BW peak[TB/sec]    BW average[TB/sec]   MsgRate[Mpps]\n 2 1000 1 1 1\n', 'unknown'),
    (' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 2.5 1000 1 1 1\n', 'fractional'),
])
def test_hostile_text_gives_an_error_never_a_number(text, words):
    with pytest.raises(PerftestParseError) as raised:
        parse(text)
    assert words in str(raised.value)


def test_a_header_without_the_msgrate_column_of_perftest_1_x_is_read():
    result = parse(' #bytes #iterations    BW peak[MB/sec]    BW average[MB/sec]\n 65536        5000           3154.06            3153.77\n')
    assert result['rows'] == [{'bytes': 65536, 'iterations': 5000, 'bw_peak': 3154.06, 'bw_average': 3153.77,
                               'bw_average_gbps': pytest.approx(26.456, rel=1e-3)}]
