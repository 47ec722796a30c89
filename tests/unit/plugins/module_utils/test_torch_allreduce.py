# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch all-reduce outputs of real runs (tests/unit/fixtures/torch_allreduce/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._torch_allreduce import TorchAllreduceParseError, parse


@pytest.mark.parametrize('text, expected', cases('torch_allreduce'))
def test_corpus(text, expected):
    check(parse, TorchAllreduceParseError, text, expected)


def test_header_gives_the_world_size():
    result = parse('torch 2.11.0+cu130 nccl 2.28.9 gpus 1\nsize_MiB=4 time_us=10.0 algbw_GBs=400.0 busbw_GBs=0.0\n')
    assert result['world_size'] == 1 and result['rows'][0]['bytes'] == 4 * 1024 * 1024


@pytest.mark.parametrize('text, words', [
    ('size_MiB=4 time_us=10.0 algbw_GBs=400.0\n', 'lacks busbw_GBs'),
    ('size_MiB=4 time_us=10.0 algbw_GBs=4x busbw_GBs=1\n', 'not a number'),
    ('size_MiB=0.5 time_us=10.0 algbw_GBs=4 busbw_GBs=1\n', 'whole size'),
    ('nothing here\n', 'no all-reduce result line'),
])
def test_hostile_lines_give_an_error_never_a_number(text, words):
    with pytest.raises(TorchAllreduceParseError) as raised:
        parse(text)
    assert words in str(raised.value)


def test_a_traceback_makes_the_run_incomplete():
    result = parse('size_MiB=1 time_us=47.4 algbw_GBs=22.1 busbw_GBs=22.1\nTraceback (most recent call last):\n')
    assert result['complete'] is False and result['errors']


def test_the_backend_header_gives_backend_world_size_and_hosts():
    result = parse('torch 2.13.0+cpu backend gloo world_size 2 nccl none hosts tsm-node1,tsm-node2\n'
                   'size_MiB=1 time_us=2000.0 algbw_GBs=0.52 busbw_GBs=0.52\n')
    assert (result['backend'], result['world_size'], result['hosts'], result['nccl']) == ('gloo', 2, ['tsm-node1', 'tsm-node2'], None)
    old = parse('torch 2.11.0+cu130 nccl 2.28.9 gpus 2\nsize_MiB=4 time_us=10.0 algbw_GBs=400.0 busbw_GBs=400.0\n')
    assert (old['backend'], old['hosts'], old['nccl']) == ('nccl', None, '2.28.9')


def test_the_tool_s_error_line_makes_the_run_incomplete():
    result = parse('size_MiB=1 time_us=47.4 algbw_GBs=22.1 busbw_GBs=22.1\n'
                   'ERROR all-reduce sum wrong at size_MiB 4: 12 values differ from 3\n')
    assert result['complete'] is False and result['errors'] == ['ERROR all-reduce sum wrong at size_MiB 4: 12 values differ from 3']
