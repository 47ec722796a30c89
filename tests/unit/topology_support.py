# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared helpers of the topology tests: recorded roots, goldens, module runs."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree, collect_topology

UNIT_DIR = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY_FIXTURES = os.path.join(UNIT_DIR, 'fixtures', 'topology')
NCCL_XML_GOLDEN = os.path.join(UNIT_DIR, 'fixtures', 'nccl_xml')
CASES = ('a100_pcie', 'cpu_only', 'h200_vm', 'hgx_b200_bare', 'hgx_h100', 'hgx_h100_bare', 'ib_down_roce', 'interleaved_2s')
GPU_CASES = ('a100_pcie', 'h200_vm', 'hgx_h100', 'ib_down_roce')
# Set to rewrite the golden files after a reviewed change of the output.
UPDATE_GOLDEN = os.environ.get('TRAINSTACK_UPDATE_GOLDEN') == '1'


def load_script(path):
    """A fixture's generator script (not a package module) loaded as a module."""
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_fixtures = load_script(os.path.join(TOPOLOGY_FIXTURES, 'make_fixtures.py'))


def recorded_root(case, directory):
    """A real root (sysfs names, symlinks, .commands/) unpacked from the case's fixture."""
    return make_fixtures.materialize(case, str(directory))


def probe_recorded_cases(tmp_path_factory):
    """trainstack_topology of every recorded case, probed by the real collector."""
    gathered = {}
    for case in CASES:
        root = recorded_root(case, tmp_path_factory.mktemp(case))
        gathered[case] = collect_topology(SysfsTree(root), CommandRunner(root))
    return gathered


def expected_facts(case):
    """The reviewed trainstack_topology of a recorded case (expected_facts.json)."""
    with open(os.path.join(TOPOLOGY_FIXTURES, case, 'expected_facts.json'), encoding='utf-8') as handle:
        data = json.load(handle)
    return data.get('trainstack_topology', data)


def golden(path, actual):
    """Compare actual text with the golden file (or rewrite it when UPDATE_GOLDEN)."""
    if UPDATE_GOLDEN:
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(actual)
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def facts_json(facts):
    return json.dumps(facts, indent=1, sort_keys=True) + '\n'


def value_at(facts, path):
    """The value at a dotted path of a fact ('gpus.0.busid': list indexes are numbers)."""
    value = facts
    for key in path.split('.'):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def expectation_params(expectations):
    """pytest parameters (case, path, expected) with ids 'case:path' from {case: {path: expected}}."""
    return [pytest.param(case, path, expected, id=case + ':' + path)
            for case, table in expectations.items() for path, expected in table.items()]


def run_module(main, args, capsys):
    """Run a module's main() with args; returns its result dict."""
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            main()
    return json.loads(capsys.readouterr().out)
