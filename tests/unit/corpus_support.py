# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real tool outputs (tests/unit/fixtures/<tool>/<case>.txt) beside hand-written expectations.

``<case>.expected.json`` holds either ``{"error": "<words the error must contain>"}`` or the values the
parser must return: ``fields`` (top-level keys), ``<list>_count`` and ``<list>`` ({index: {key: value}}),
compared with a relative tolerance of 1e-3 for floats (expectations convert units by hand).
"""

from __future__ import annotations

import json
import os

import pytest

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')


def cases(tool):
    """pytest params (text, expected) for every recorded output of a tool, with the case name as id."""
    directory = os.path.join(FIXTURES, tool)
    params = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith('.txt'):
            continue
        case = name[:-len('.txt')]
        with open(os.path.join(directory, name), encoding='utf-8') as handle:
            text = handle.read()
        with open(os.path.join(directory, case + '.expected.json'), encoding='utf-8') as handle:
            expected = json.load(handle)
        params.append(pytest.param(text, expected, id=case))
    return params


def same(actual, expected):
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return actual == pytest.approx(expected, rel=1e-3)
    return actual == expected


def check(parse, error_type, text, expected):
    """Run the parser on a recorded output and compare with the expectation file."""
    if 'error' in expected:
        with pytest.raises(error_type) as raised:
            parse(text)
        assert expected['error'] in str(raised.value)
        return
    result = parse(text)
    for key, value in expected.get('fields', {}).items():
        assert same(result[key], value), (key, result[key], value)
    for key, value in expected.items():
        if key.endswith('_count'):
            assert len(result[key[:-len('_count')]]) == value, key
    for list_key, entries in expected.items():
        if list_key == 'fields' or list_key.endswith('_count') or not isinstance(entries, dict):
            continue
        for index, values in entries.items():
            item = result[list_key][int(index)]
            for key, value in values.items():
                actual = item
                for part in key.split('.'):
                    actual = actual[part]
                assert same(actual, value), (list_key, index, key, actual, value)
