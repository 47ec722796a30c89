# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The acceptance role's variables judged before any check runs (controller side, pure).

tasks/validate.yml gives every option of meta/argument_specs.yml with its value; each message names the variable
as the user wrote it (an element or key by its index or key) and the rule it breaks. Types and choices come from
the argument specs (the role's own argument validation enforces them too); the ranges and the rules no argument
spec can say (message sizes, hook names, a drain host with draining) are here.
"""

from __future__ import annotations

import difflib
import math
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.module_utils._yaml_kind import yaml_kind as _kind

# A message size as data/acceptance_thresholds.yml and acceptance_busbw_overrides write it (binary units, like
# nccl-tests' -b/-e and allreduce_bench.py), or a whole number of bytes; the filter acceptance_busbw_verdict reads it.
_SIZE = re.compile(r'\s*(?P<number>[0-9]+)\s*(?P<unit>B|KiB|MiB|GiB|TiB)?\s*')
# The lowest value that makes sense where the type allows less; null stays legal where the option documents it.
MINIMUMS = {
    'acceptance_expected_gpu_count': 0,
    'acceptance_expected_nvlinks_per_gpu': 0,
    'acceptance_expected_ib_ports': 0,
    'acceptance_expected_ib_rate_gbps': 0,
    'acceptance_allreduce_gpu_count': 0,
    'acceptance_ddp_steps': 1,
    'acceptance_mpi_min_bandwidth_mbps': 0,
    'acceptance_mpi_max_latency_us': 0,
    'acceptance_ddp_min_samples_per_s': 0,
}
# Options whose value the tasks use as a container or a switch: null is no value for them.
_NOT_NULL_TYPES = ('bool', 'dict', 'list')
# Versions compared as text: YAML reads 550.90 as the number 550.9.
_QUOTED = ('acceptance_expected_driver_version',)
_TRUE = ('y', 'yes', 'on', '1', 'true', 't')
_FALSE = ('n', 'no', 'off', '0', 'false', 'f')


def _shown(value):
    text = repr(value) if isinstance(value, str) else 'null' if value is None else str(value)
    return text if len(text) <= 80 else text[:77] + '...'


def _as_bool(value):
    """True or False as Ansible's bool reads it (true, 'yes', 1 ...), None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _as_number(value, whole):
    """The number value means (an int, a float or such a string), or None; whole: integers only."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if re.fullmatch(r'[-+]?[0-9]+', text) else float(text)
        except ValueError:
            return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if whole and not isinstance(value, int):
        return None
    return value


def _choice_problem(name, value, choices):
    if isinstance(value, str) and value in choices:
        return None
    close = difflib.get_close_matches(str(value), [str(choice) for choice in choices], 1)
    hint = ' (did you mean %s?)' % close[0] if close else ''
    return '%s must be one of %s, got %s%s' % (name, ', '.join(map(str, choices)), _shown(value), hint)


def _typed_problem(name, value, spec):
    """Why value does not fit the option's type, choices and minimum, or None."""
    kind = spec.get('type', 'str')
    if value is None:
        if kind in _NOT_NULL_TYPES:
            return '%s must be %s, got null' % (name, 'true or false' if kind == 'bool' else 'a ' + {'dict': 'mapping'}.get(kind, kind))
        # One of the choices, unless null is the option's own default.
        return _choice_problem(name, value, spec['choices']) if 'choices' in spec and spec.get('default') is not None else None
    if kind == 'bool':
        return None if _as_bool(value) is not None else '%s must be true or false, got %s' % (name, _shown(value))
    if kind in ('int', 'float'):
        number = _as_number(value, kind == 'int')
        if number is None:
            return '%s must be %s, got %s' % (name, 'a whole number' if kind == 'int' else 'a number', _shown(value))
        least = MINIMUMS.get(name)
        if least is not None and number < least:
            return '%s must be at least %s%s, got %s' % (name, least, ' or null' if spec.get('default') is None else '', _shown(value))
        return None
    if kind == 'dict':
        return None if isinstance(value, dict) else '%s must be a mapping, got a %s' % (name, _kind(value))
    if kind == 'list':
        if not isinstance(value, (list, tuple)):
            return '%s must be a list, got a %s' % (name, _kind(value))
        return None
    # str and path
    if name in _QUOTED and not isinstance(value, str):
        return "%s must be a string (quote it: YAML reads 550.90 as the number 550.9), got the %s %s" % (
            name, _kind(value), _shown(value))
    if isinstance(value, (dict, list, tuple, bool)):
        return '%s must be a string, got a %s' % (name, _kind(value))
    if 'choices' in spec:
        return _choice_problem(name, value, spec['choices'])
    return None


def _element_problems(name, value, spec):
    out = []
    for index, item in enumerate(value):
        label = '%s[%d]' % (name, index)
        if 'choices' in spec:
            problem = _choice_problem(label, item, spec['choices'])
        elif not isinstance(item, str) or not item.strip():
            problem = '%s must be a non-empty %s, got %s' % (label, spec.get('elements', 'str'), _shown(item))
        else:
            problem = None
        if problem:
            out.append(problem)
    return out


def _size_problem(key):
    """Why key is not a message size (16GiB, 256MiB, 1048576), or None."""
    if isinstance(key, bool):
        number = None
    elif isinstance(key, int):
        number = key
    else:
        match = _SIZE.fullmatch(str(key))
        number = int(match.group('number')) if match else None
    if number is None:
        return 'must be a message size such as 16GiB (a whole number of B, KiB, MiB, GiB or TiB, or of bytes)'
    return 'must be a message size greater than 0' if number <= 0 else None


def _busbw_problems(name, overrides):
    out = []
    for key, value in overrides.items():
        problem = _size_problem(key)
        if problem:
            out.append('%s: key %s %s' % (name, _shown(key), problem))
            continue
        if value is None:  # null removes the size from the table
            continue
        number = _as_number(value, False)
        if number is None or number <= 0:
            out.append('%s.%s must be a busbw in GB/s greater than 0 (or null to remove the size), got %s'
                       % (name, key, _shown(value)))
    return out


def _hook_problems(name, hooks, hook_names):
    out = []
    for key, path in hooks.items():
        if key not in hook_names:
            close = difflib.get_close_matches(str(key), hook_names, 1)
            hint = ' (did you mean %s?)' % close[0] if close else ''
            out.append('%s: unknown hook %s%s; known: %s' % (name, _shown(key), hint, ', '.join(hook_names)))
        elif not isinstance(path, str) or not path.strip():
            out.append('%s.%s must be the path of a task file, got %s' % (name, key, _shown(path)))
    return out


def acceptance_input_problems(values, options, hook_names):
    """One message per acceptance variable that breaks a rule; [] when every value may be used.

    values: variable name -> value (every option of the role); options: the options of meta/argument_specs.yml;
    hook_names: the hooks the role knows (the keys acceptance_hooks may have).
    """
    if not isinstance(values, dict) or not isinstance(options, dict):
        raise AnsibleFilterError('acceptance_input_problems: expected the values and the argument spec options as mappings')
    hook_names = [str(name) for name in (hook_names or [])]
    out = []
    mistyped = set()
    for name in sorted(values):
        spec = options.get(name)
        if spec is None:
            continue
        value = values[name]
        problem = _typed_problem(name, value, spec)
        if problem:
            out.append(problem)
            mistyped.add(name)
            continue
        if spec.get('type') == 'list' and value is not None:
            out.extend(_element_problems(name, value, spec))
        elif name == 'acceptance_busbw_overrides':
            out.extend(_busbw_problems(name, value))
        elif name == 'acceptance_hooks':
            out.extend(_hook_problems(name, value, hook_names))
    # Across variables: draining needs the host that runs scontrol.
    if _as_bool(values.get('acceptance_drain_failing')) is True and 'acceptance_drain_host' not in mistyped:
        host = values.get('acceptance_drain_host')
        if not isinstance(host, str) or not host.strip():
            out.append('acceptance_drain_host must name the host that runs scontrol (the Slurm controller) when '
                       'acceptance_drain_failing is true, got %s' % ('null' if host is None else _shown(host)))
    # NHC resumes every node whose reason starts with its own leader (roles/nhc): an acceptance drain must outlast it.
    reason = values.get('acceptance_drain_reason')
    if isinstance(reason, str) and reason.lstrip().upper().startswith('NHC:'):
        out.append('acceptance_drain_reason may not begin with "NHC:": NHC resumes the nodes it finds so drained once its '
                   'own checks pass, got %s' % _shown(reason))
    return out


class FilterModule:
    """Acceptance input filters."""

    def filters(self):
        return {'acceptance_input_problems': acceptance_input_problems}
