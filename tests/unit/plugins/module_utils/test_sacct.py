# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sacct's TRESUsageInAve/Max, real and hand-made outputs (tests/unit/fixtures/sacct/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._sacct import (
    SACCT_FORMAT, SacctError, parse_sacct_usage, parse_tres, tres_bytes)


@pytest.mark.parametrize('text, expected', cases('sacct'))
def test_corpus(text, expected):
    columns = expected.get('columns', SACCT_FORMAT)
    check(lambda value: parse_sacct_usage(value, columns), SacctError, text, expected)


@pytest.mark.parametrize(('value', 'expected'), [
    ('38888M', 38888 * 1024 ** 2), ('10372780K', 10372780 * 1024), ('40777023488', 40777023488), ('0', 0),
    ('1.5G', 1610612736), ('', None), ('12 MB', None), ('N/A', None)])
def test_sizes(value, expected):
    assert tres_bytes(value) == expected


def test_tres_list():
    assert parse_tres('cpu=00:56:24,gres/gpuutil=100') == {'cpu': '00:56:24', 'gres/gpuutil': '100'}
    assert parse_tres('') == {}


def test_array_and_het_job_ids():
    text = 'JobID|TRESUsageInAve|TRESUsageInMax\n777_3.batch|gres/gpuutil=5|gres/gpuutil=9\n778+1.0|gres/gpuutil=50|gres/gpuutil=60\n'
    steps = parse_sacct_usage(text)['steps']
    assert [(step['id'], step['step'], step['ave']['gpuutil_pct']) for step in steps] == [
        ('777_3.batch', 'batch', 5.0), ('778+1.0', '0', 50.0)]


def test_columns_without_usage_are_refused():
    with pytest.raises(SacctError, match='name no JobID and TRESUsageInAve/Max'):
        parse_sacct_usage('JobID|State\n1|COMPLETED\n')
