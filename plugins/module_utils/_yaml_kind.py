# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The user's word for the YAML type of a value, for messages ("must be a list, got a mapping").

Standard library only; shared by the validation filters so that every message names types alike.
"""

from __future__ import annotations


def yaml_kind(value):
    """boolean, mapping, list, null, number or string (lazy template containers included); else the Python type."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "list"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def a_yaml_kind(value):
    """yaml_kind with its article: 'a list', 'a boolean', but 'null'."""
    kind = yaml_kind(value)
    return kind if kind == "null" else "a " + kind
