# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""acceptance_input_problems against the role's real argument specs, defaults and hook names.

Each case is one inventory value (over the role's defaults) and the exact messages written by hand: the message
names the variable as the user wrote it and the rule it breaks.
"""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.acceptance_inputs import acceptance_input_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(ROOT, 'roles', 'acceptance')


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


SPECS = _load('meta', 'argument_specs.yml')['argument_specs']
OPTIONS = SPECS['main']['options']
DEFAULTS = _load('defaults', 'main.yml')
HOOKS = _load('vars', 'main.yml')['__acceptance_hook_names']
KNOWN = 'nccl_allreduce_single_node, nccl_allreduce_multi_node, ib_send_bw_pairs, mpi, ddp'


def problems(**inventory):
    return acceptance_input_problems(dict(DEFAULTS, **inventory), OPTIONS, HOOKS)


BAD = [
    # acceptance_builtin_hooks: the hooks of its choices, each element named by its index
    ({'acceptance_builtin_hooks': ['mpi', 'nccl_alreduce']},
     ['acceptance_builtin_hooks[1] must be one of %s, got %r (did you mean nccl_allreduce_multi_node?)' % (KNOWN, 'nccl_alreduce')]),
    ({'acceptance_builtin_hooks': ['hpl']}, ["acceptance_builtin_hooks[0] must be one of %s, got 'hpl'" % KNOWN]),
    ({'acceptance_builtin_hooks': 'mpi'}, ['acceptance_builtin_hooks must be a list, got a string']),
    ({'acceptance_builtin_hooks': None}, ['acceptance_builtin_hooks must be a list, got null']),
    # acceptance_allreduce_multi_node_tool: auto, nccl-tests or pytorch
    ({'acceptance_allreduce_multi_node_tool': 'nccl_tests_'},
     ["acceptance_allreduce_multi_node_tool must be one of auto, nccl-tests, pytorch, got 'nccl_tests_' (did you mean nccl-tests?)"]),
    ({'acceptance_allreduce_multi_node_tool': 'nccl_tests'},
     ["acceptance_allreduce_multi_node_tool must be one of auto, nccl-tests, pytorch, got 'nccl_tests' (did you mean nccl-tests?)"]),
    ({'acceptance_allreduce_multi_node_tool': 'NCCL-TESTS'},
     ["acceptance_allreduce_multi_node_tool must be one of auto, nccl-tests, pytorch, got 'NCCL-TESTS'"]),
    ({'acceptance_allreduce_multi_node_tool': None},
     ['acceptance_allreduce_multi_node_tool must be one of auto, nccl-tests, pytorch, got null']),
    # acceptance_busbw_overrides: message sizes to GB/s greater than 0, or null
    ({'acceptance_busbw_overrides': {'lots': 440}},
     ["acceptance_busbw_overrides: key 'lots' must be a message size such as 16GiB (a whole number of B, KiB, MiB, GiB or TiB, "
      "or of bytes)"]),
    ({'acceptance_busbw_overrides': {'16GB': 440}},
     ["acceptance_busbw_overrides: key '16GB' must be a message size such as 16GiB (a whole number of B, KiB, MiB, GiB or TiB, "
      "or of bytes)"]),
    ({'acceptance_busbw_overrides': {'1.5GiB': 440}},
     ["acceptance_busbw_overrides: key '1.5GiB' must be a message size such as 16GiB (a whole number of B, KiB, MiB, GiB or TiB, "
      "or of bytes)"]),
    ({'acceptance_busbw_overrides': {'0MiB': 440}}, ["acceptance_busbw_overrides: key '0MiB' must be a message size greater than 0"]),
    ({'acceptance_busbw_overrides': {'16GiB': 0}},
     ['acceptance_busbw_overrides.16GiB must be a busbw in GB/s greater than 0 (or null to remove the size), got 0']),
    ({'acceptance_busbw_overrides': {'16GiB': -440}},
     ['acceptance_busbw_overrides.16GiB must be a busbw in GB/s greater than 0 (or null to remove the size), got -440']),
    ({'acceptance_busbw_overrides': {'16GiB': 'fast'}},
     ["acceptance_busbw_overrides.16GiB must be a busbw in GB/s greater than 0 (or null to remove the size), got 'fast'"]),
    ({'acceptance_busbw_overrides': {'16GiB': True}},
     ['acceptance_busbw_overrides.16GiB must be a busbw in GB/s greater than 0 (or null to remove the size), got True']),
    ({'acceptance_busbw_overrides': {'16GiB': 'inf'}},
     ["acceptance_busbw_overrides.16GiB must be a busbw in GB/s greater than 0 (or null to remove the size), got 'inf'"]),
    ({'acceptance_busbw_overrides': [440]}, ['acceptance_busbw_overrides must be a mapping, got a list']),
    ({'acceptance_busbw_overrides': None}, ['acceptance_busbw_overrides must be a mapping, got null']),
    # the counts a node must have: whole numbers >= 0, or null
    ({'acceptance_expected_gpu_count': -1}, ['acceptance_expected_gpu_count must be at least 0 or null, got -1']),
    ({'acceptance_expected_gpu_count': '-1'}, ["acceptance_expected_gpu_count must be at least 0 or null, got '-1'"]),
    ({'acceptance_expected_gpu_count': 'eight'}, ["acceptance_expected_gpu_count must be a whole number, got 'eight'"]),
    ({'acceptance_expected_gpu_count': 7.5}, ['acceptance_expected_gpu_count must be a whole number, got 7.5']),
    ({'acceptance_expected_gpu_count': True}, ['acceptance_expected_gpu_count must be a whole number, got True']),
    ({'acceptance_expected_nvlinks_per_gpu': -18}, ['acceptance_expected_nvlinks_per_gpu must be at least 0 or null, got -18']),
    ({'acceptance_expected_ib_ports': -8}, ['acceptance_expected_ib_ports must be at least 0 or null, got -8']),
    ({'acceptance_expected_ib_rate_gbps': -400}, ['acceptance_expected_ib_rate_gbps must be at least 0 or null, got -400']),
    ({'acceptance_allreduce_gpu_count': -2}, ['acceptance_allreduce_gpu_count must be at least 0 or null, got -2']),
    ({'acceptance_ddp_steps': 0}, ['acceptance_ddp_steps must be at least 1, got 0']),
    ({'acceptance_mpi_min_bandwidth_mbps': -1.5}, ['acceptance_mpi_min_bandwidth_mbps must be at least 0 or null, got -1.5']),
    ({'acceptance_mpi_max_latency_us': 'low'}, ["acceptance_mpi_max_latency_us must be a number, got 'low'"]),
    ({'acceptance_ddp_min_samples_per_s': -1}, ['acceptance_ddp_min_samples_per_s must be at least 0 or null, got -1']),
    # the switches: true or false (Ansible's yes/no words included), never null
    ({'acceptance_png': 'maybe'}, ["acceptance_png must be true or false, got 'maybe'"]),
    ({'acceptance_drain_failing': None}, ['acceptance_drain_failing must be true or false, got null']),
    ({'acceptance_slurm_gres_check': 2}, ['acceptance_slurm_gres_check must be true or false, got 2']),
    # draining needs the host that runs scontrol
    ({'acceptance_drain_failing': True},
     ['acceptance_drain_host must name the host that runs scontrol (the Slurm controller) when acceptance_drain_failing is true, '
      'got null']),
    ({'acceptance_drain_failing': 'yes', 'acceptance_drain_host': ' '},
     ["acceptance_drain_host must name the host that runs scontrol (the Slurm controller) when acceptance_drain_failing is true, "
      "got ' '"]),
    ({'acceptance_drain_failing': True, 'acceptance_drain_host': ['ctl']}, ['acceptance_drain_host must be a string, got a list']),
    # NHC resumes what carries its leader
    ({'acceptance_drain_reason': 'NHC: acceptance failed'},
     ["acceptance_drain_reason may not begin with \"NHC:\": NHC resumes the nodes it finds so drained once its own checks pass, "
      "got 'NHC: acceptance failed'"]),
    # acceptance_hooks: known hook names to task files
    ({'acceptance_hooks': {'mpl': '/srv/hooks/mpi.yml'}},
     ["acceptance_hooks: unknown hook 'mpl' (did you mean mpi?); known: %s" % KNOWN]),
    ({'acceptance_hooks': {'hpl': '/srv/hooks/hpl.yml'}}, ["acceptance_hooks: unknown hook 'hpl'; known: %s" % KNOWN]),
    ({'acceptance_hooks': {'ddp': None}}, ['acceptance_hooks.ddp must be the path of a task file, got null']),
    ({'acceptance_hooks': {'ddp': ''}}, ["acceptance_hooks.ddp must be the path of a task file, got ''"]),
    ({'acceptance_hooks': None}, ['acceptance_hooks must be a mapping, got null']),
    # lists of paths
    ({'acceptance_allreduce_logs': '/srv/run.txt'}, ['acceptance_allreduce_logs must be a list, got a string']),
    ({'acceptance_allreduce_logs': ['/srv/run.txt', '']}, ["acceptance_allreduce_logs[1] must be a non-empty path, got ''"]),
    ({'acceptance_allreduce_logs': None}, ['acceptance_allreduce_logs must be a list, got null']),
    # strings
    ({'acceptance_expected_driver_version': 550.9},
     ['acceptance_expected_driver_version must be a string (quote it: YAML reads 550.90 as the number 550.9), got the number 550.9']),
    ({'acceptance_expected_gpu_model': ['NVIDIA H200']}, ['acceptance_expected_gpu_model must be a string, got a list']),
    ({'acceptance_mpi_group': {'mpi': None}}, ['acceptance_mpi_group must be a string, got a mapping']),
    # several at once: one message each, by variable name
    ({'acceptance_expected_gpu_count': -1, 'acceptance_busbw_overrides': {'lots': 440}},
     ["acceptance_busbw_overrides: key 'lots' must be a message size such as 16GiB (a whole number of B, KiB, MiB, GiB or TiB, "
      "or of bytes)", 'acceptance_expected_gpu_count must be at least 0 or null, got -1']),
]


@pytest.mark.parametrize('inventory, expected', BAD, ids=['-'.join('%s=%s' % item for item in case[0].items())[:60] for case in BAD])
def test_a_bad_value_is_refused_naming_the_variable_and_the_rule(inventory, expected):
    assert problems(**inventory) == expected


GOOD = [
    {},
    # legal but unusual: a GPU-less node, no built-in hook, every tool choice, string numbers of an INI inventory
    {'acceptance_expected_gpu_count': 0, 'acceptance_expected_nvlinks_per_gpu': 0, 'acceptance_expected_ib_ports': 0},
    {'acceptance_expected_gpu_count': '8', 'acceptance_expected_ib_rate_gbps': 400},
    {'acceptance_builtin_hooks': []},
    {'acceptance_builtin_hooks': ['ddp', 'mpi', 'mpi']},
    {'acceptance_allreduce_multi_node_tool': 'nccl-tests'},
    {'acceptance_allreduce_multi_node_tool': 'pytorch'},
    {'acceptance_busbw_overrides': {'16GiB': 460, '16MiB': None, '2GiB': None}},
    {'acceptance_busbw_overrides': {1073741824: 400, '256 MiB': '300.5', '1TiB': 1e-3, '4096B': 0.5}},
    {'acceptance_drain_failing': True, 'acceptance_drain_host': 'slurm-ctl'},
    {'acceptance_drain_failing': 'yes', 'acceptance_drain_host': '10.0.0.1'},
    {'acceptance_drain_failing': False, 'acceptance_drain_host': None},
    {'acceptance_drain_failing': 'no'},
    {'acceptance_hooks': {'ddp': '/srv/hooks/ddp.yml', 'mpi': 'hooks/mpi.yml'}, 'acceptance_builtin_hooks': ['nccl_allreduce_single_node']},
    {'acceptance_expected_driver_version': '550.90', 'acceptance_expected_gpu_model': 'NVIDIA H200'},
    {'acceptance_mpi_min_bandwidth_mbps': 0, 'acceptance_mpi_max_latency_us': '2.5', 'acceptance_ddp_min_samples_per_s': 1000},
    {'acceptance_ddp_steps': 1, 'acceptance_allreduce_gpu_count': 0},
    {'acceptance_nccl_tests_path': None, 'acceptance_allreduce_max_mib': None, 'acceptance_slurm_host': None},
    {'acceptance_png': 'false', 'acceptance_include_roce': 1, 'acceptance_nccl_sweep': 'on'},
    {'acceptance_allreduce_logs': ['/srv/acceptance/run1.txt', '/srv/acceptance/run2.txt']},
]


@pytest.mark.parametrize('inventory', GOOD, ids=['-'.join('%s=%s' % item for item in case.items())[:60] or 'defaults' for case in GOOD])
def test_a_legal_value_passes(inventory):
    assert problems(**inventory) == []


def test_every_option_has_a_default_and_the_defaults_pass():
    assert sorted(DEFAULTS) == sorted(OPTIONS)
    assert acceptance_input_problems(DEFAULTS, OPTIONS, HOOKS) == []


def test_preflight_validates_the_same_options_as_the_role():
    # preflight includes tasks/validate.yml as the entry point `validate`: Ansible checks its argument spec there.
    assert SPECS['validate']['options'] == OPTIONS


def test_the_hooks_are_the_choices_of_acceptance_builtin_hooks():
    builtin = sorted(_load('vars', 'main.yml')['__acceptance_builtin_hooks'], key=HOOKS.index)
    assert OPTIONS['acceptance_builtin_hooks']['choices'] == HOOKS == builtin


def test_a_value_of_an_unknown_variable_is_not_judged():
    assert acceptance_input_problems({'something_else': -1}, OPTIONS, HOOKS) == []


def test_the_inputs_must_be_mappings():
    with pytest.raises(AnsibleFilterError, match='expected the values and the argument spec options as mappings'):
        acceptance_input_problems(None, OPTIONS, HOOKS)
