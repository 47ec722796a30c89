# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kernel log Xid lines collected from public sources (tests/unit/fixtures/xid/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._xid import parse


@pytest.mark.parametrize('text, expected', cases('xid'))
def test_corpus(text, expected):
    check(parse, ValueError, text, expected)


@pytest.mark.parametrize('line', [
    'NVRM: Xid (PCI:0000:01:00): seventy-nine, GPU has fallen off the bus.',
    '[ 12.5] NVRM: Xid (PCI:0000:01:00 79',
    'NVRM: Xid',
])
def test_a_garbled_xid_line_is_an_event_not_silence(line):
    events = parse(line)['events']
    assert [event['kind'] for event in events] == ['unparsed']


def test_a_log_without_nvidia_errors_has_no_events():
    assert parse('[    0.000000] Linux version 6.1.0-26-amd64\n[    1.2] mlx5_core 0000:ab:00.0: Port: 1 Link ACTIVE\n') == \
        {'events': [], 'xids': []}
