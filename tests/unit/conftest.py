# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.trainstack.cluster`` importable from a plain checkout.

collections/ansible_collections/trainstack/cluster links back to the repository
root, so putting collections/ on sys.path is all plain ``pytest tests/unit`` needs.
tests/unit itself is on sys.path too (rootdir-relative helpers such as nccl_xml_checker).
"""

from __future__ import annotations

import os
import sys

UNIT_DIR = os.path.dirname(os.path.abspath(__file__))
COLLECTIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(UNIT_DIR)), 'collections')

for path in (COLLECTIONS_DIR, UNIT_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)
