# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The type words every validation message uses."""

from __future__ import annotations

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._yaml_kind import a_yaml_kind, yaml_kind


@pytest.mark.parametrize(("value", "kind", "with_article"), [
    (True, "boolean", "a boolean"), (False, "boolean", "a boolean"),
    ({}, "mapping", "a mapping"), ([], "list", "a list"), ((1,), "list", "a list"),
    (None, "null", "null"), (0, "number", "a number"), (1.5, "number", "a number"),
    ("", "string", "a string"), ("yes", "string", "a string"), (b"x", "bytes", "a bytes"),
])
def test_kinds(value, kind, with_article):
    assert (yaml_kind(value), a_yaml_kind(value)) == (kind, with_article)
