# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The acceptance all-reduce hooks: their result, NCCL environment sets and their comparison (controller side, pure).

The all-reduce hooks run once with the default environment and once per named set of NCCL_* settings
(the inventory's acceptance_nccl_tuned_environments, plus the sweep grid with acceptance_nccl_sweep).
acceptance_nccl_compare says per message size how much each set gains over the default and which set
is best.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.acceptance import acceptance_parse_allreduce, size_label
from ansible_collections.trainstack.cluster.plugins.filter.nccl import check_overrides

DEFAULT = 'default'


def _error(message):
    raise AnsibleFilterError('acceptance_nccl: ' + message)


def acceptance_nccl_sweep_sets(grid):
    """One set per value of each grid key, the other keys left at NCCL's default: {'NCCL_PROTO=Simple': {...}}.

    ``grid`` is a list of axes {NCCL_KEY: [values]}; one factor at a time keeps the count at the number of
    values (a full product would multiply them).
    """
    sets = {}
    for axis in grid or []:
        if not isinstance(axis, dict) or len(axis) != 1:
            _error('every sweep axis is one NCCL key with its list of values, got %r' % (axis,))
        key, values = next(iter(axis.items()))
        if not isinstance(values, list) or not values:
            _error('sweep axis %s needs a non-empty list of values, got %r' % (key, values))
        for value in values:
            sets['%s=%s' % (key, value)] = {key: value}
    return sets


def acceptance_nccl_sets(tuned=None, sweep_grid=None):
    """[{'name', 'environment'}]: the default set first, then the named sets, then the sweep's (their order kept).

    Every set is checked like the nccl role's overrides (NCCL_* keys, one-line values; NCCL_GRAPH_FILE and
    NCCL_CONF_FILE are refused: they replace NCCL's own decisions for every job); keys NCCL does not
    document are allowed, a set is one job's experiment. The message names the variable and the set.
    """
    if tuned is None:
        tuned = {}
    if not isinstance(tuned, dict):
        _error('acceptance_nccl_tuned_environments must map set names to NCCL settings, got a %s' % type(tuned).__name__)
    sets = [{'name': DEFAULT, 'environment': {}}]
    for source, entries in (('acceptance_nccl_tuned_environments', tuned),
                            ('acceptance_nccl_sweep', acceptance_nccl_sweep_sets(sweep_grid))):
        for name, settings in entries.items():
            if str(name) == DEFAULT or str(name) in [entry['name'] for entry in sets]:
                _error('%s: set name %r is used twice (or is the reserved "default")' % (source, name))
            if not isinstance(settings, dict) or not settings:
                _error('%s.%s must be a non-empty mapping of NCCL_* settings' % (source, name))
            try:
                checked = check_overrides(settings, allow_unknown=True)
            except AnsibleFilterError as error:
                _error('%s.%s: %s' % (source, name, str(error).replace('nccl_settings: ', '')))
            if any(value is None for value in checked.values()):
                _error('%s.%s: a value must be set (null removes nothing here)' % (source, name))
            sets.append({'name': str(name), 'environment': checked})
    return sets


def _best_by_size(texts):
    """{bytes: best busbw} over the complete runs among texts (parsed here), and whether any run was broken."""
    best, broken = {}, []
    for text in texts or []:
        run = acceptance_parse_allreduce(text)
        if run['errors'] or not run['complete']:
            broken.append('; '.join(run['errors'] or ['incomplete'])[:200])
            continue
        for row in run['rows']:
            best[row['bytes']] = max(best.get(row['bytes'], 0.0), row['busbw'])
    return best, broken


def _gain_pct(value, base):
    """Percent gain of value over base, unrounded (means are taken before rounding); None without a base."""
    return (value - base) / base * 100 if base else None


def _gain(value, base):
    gain = _gain_pct(value, base)
    return None if gain is None else round(gain, 1)


def acceptance_nccl_compare(outputs, order=None):
    """Compare the busbw of NCCL environment sets with the default per message size.

    ``outputs`` maps a set name ('default' and the tuned sets) to its output texts (one per attempt; the
    best busbw per size counts). Returns {'baseline', 'sets', 'sizes': [{'bytes', 'label', 'busbw': {set:
    GB/s}, 'gain_pct': {set: %}, 'best', 'best_gain_pct'}], 'overall': {set: {'mean_gain_pct', 'sizes_won'}},
    'best', 'best_mean_gain_pct', 'failed': {set: why}, 'reason'}. A set is best overall when its mean gain
    over the sizes every set measured is the highest and above 0; otherwise the default stays best.
    """
    outputs = dict(outputs or {})
    if DEFAULT not in outputs:
        _error('the outputs need the default set (%s given)' % ', '.join(sorted(outputs)))
    names = [name for name in (order or sorted(outputs)) if name in outputs and name != DEFAULT]
    best, failed = {}, {}
    for name in [DEFAULT] + names:
        best[name], broken = _best_by_size(outputs[name])
        if broken and not best[name]:
            failed[name] = broken[0]
    tuned = [name for name in names if name not in failed]
    result = {'baseline': DEFAULT, 'sets': names, 'sizes': [], 'overall': {}, 'best': DEFAULT, 'best_mean_gain_pct': 0.0,
              'failed': failed}
    if DEFAULT in failed:
        return dict(result, reason='the default run failed (%s): nothing to compare with' % failed[DEFAULT])
    common = sorted(set(best[DEFAULT]).intersection(*[set(best[name]) for name in tuned]))
    for size in sorted(best[DEFAULT]):
        base = best[DEFAULT][size]
        busbw = {name: best[name][size] for name in [DEFAULT] + tuned if size in best[name]}
        gains = {name: _gain(value, base) for name, value in busbw.items() if name != DEFAULT}
        winner = max(busbw, key=lambda name: (busbw[name], name == DEFAULT))
        result['sizes'].append({'bytes': size, 'label': size_label(size), 'busbw': busbw, 'gain_pct': gains, 'best': winner,
                                'best_gain_pct': gains.get(winner, 0.0)})
    for name in tuned:
        gains = [_gain_pct(best[name][size], best[DEFAULT][size]) for size in common if best[DEFAULT][size]]
        result['overall'][name] = {'mean_gain_pct': round(sum(gains) / len(gains), 1) if gains else None,
                                   'sizes_won': sum(1 for entry in result['sizes'] if entry['best'] == name)}
    ranked = sorted((stats['mean_gain_pct'], name) for name, stats in result['overall'].items() if stats['mean_gain_pct'] is not None)
    if ranked and ranked[-1][0] > 0:
        result.update(best=ranked[-1][1], best_mean_gain_pct=ranked[-1][0])
    if not tuned:
        reason = 'no tuned set completed' if names else 'no tuned set given'
    elif result['best'] == DEFAULT:
        reason = 'the default environment is best: no set gains on average over %d sizes' % len(common)
    else:
        reason = 'best set %s: %+.1f %% busbw on average over %d sizes' % (result['best'], result['best_mean_gain_pct'], len(common))
    if failed:
        reason += '; failed: %s' % ', '.join(sorted(failed))
    # gloo (CPU) never reads NCCL settings: the sets differ by noise only.
    if any(acceptance_parse_allreduce(text).get('backend') == 'gloo' for text in outputs[DEFAULT]):
        reason = 'gloo ignores NCCL settings, differences are noise: ' + reason
    return dict(result, reason=reason)


def acceptance_allreduce_result(outputs, check, nodes=None, order=None):
    """The hook result of an all-reduce hook from its outputs per environment set ({'default': [texts], set: [texts]}).

    Fails when the last default attempt broke (an error, no result line, a wrong result in nccl-tests' #wrong
    column) or, given ``nodes``, did not run on exactly those hosts; the per-size verdict is the acceptance_busbw_verdict check beside it. Carries
    tool (nccl-tests or pytorch), backend, world_size, hosts, attempts and, with tuned sets, the comparison (acceptance_nccl_compare).
    """
    texts = list((outputs or {}).get(DEFAULT) or [])
    if not texts:
        return {'check': check, 'status': 'fail', 'reason': 'no all-reduce output'}
    run = acceptance_parse_allreduce(texts[-1])
    data = {'tool': run['tool'], 'backend': run.get('backend'), 'world_size': run.get('world_size'), 'hosts': run.get('hosts'),
            'attempts': len(texts)}
    problems = []
    if run['errors'] or not run['complete']:
        problems.append('; '.join(run['errors'] or ['no result line'])[:600])
    if run['wrong']:
        problems.append('%d wrong result(s) in nccl-tests\' #wrong column' % run['wrong'])
    missing = sorted(set(nodes or []) - set(run.get('hosts') or []))
    if nodes and missing:
        problems.append('no rank ran on %s' % ', '.join(missing))
    if len(outputs) > 1:
        data['comparison'] = acceptance_nccl_compare(outputs, order)
    if problems:
        return dict(data, check=check, status='fail', reason='; '.join(problems))
    largest = run['rows'][-1]
    who = []
    if data['world_size']:
        who.append('%s ranks' % data['world_size'])
    if data['hosts']:
        who.append('on ' + ', '.join(data['hosts']))
    tool = 'nccl-tests all_reduce_perf' if run['tool'] == 'nccl-tests' else data['backend'] or 'nccl'
    reason = '%s%s: %d sizes, busbw %.2f GB/s at %s' % (
        tool, ', ' + ' '.join(who) if who else '', len(run['rows']), largest['busbw'], size_label(largest['bytes']))
    if len(texts) > 1:
        reason += ' (attempt %d)' % len(texts)
    if 'comparison' in data:
        reason += '; ' + data['comparison']['reason']
    return dict(data, check=check, status='pass', reason=reason)


# The all-reduce sizes of both tools: x4 from 1 MiB, as the pytorch role's benchmark steps.
NCCL_TESTS_MIN = '1M'
NCCL_TESTS_STEP = '4'
# The pytorch role's benchmark stops at 4 GiB on GPUs unless told otherwise; nccl-tests across nodes does the same.
MULTI_NODE_MAX_MIB = 4096
MULTI_NODE_TOOLS = ('auto', 'nccl-tests', 'pytorch')


def acceptance_nccl_tests_argv(path, max_mib, gpus_per_process=1):
    """nccl-tests' all_reduce_perf command line: sizes x4 from 1 MiB to ``max_mib`` MiB, ``-g`` GPUs per process,
    ``-c 1`` to check every result (a wrong sum is counted in #wrong and fails the run)."""
    try:
        max_mib, gpus_per_process = int(max_mib), int(gpus_per_process)
    except (TypeError, ValueError):
        _error('nccl-tests needs whole numbers for the largest size (MiB) and GPUs per process, got %r and %r'
               % (max_mib, gpus_per_process))
    if not path or not str(path).startswith('/'):
        _error('acceptance_nccl_tests_path must be an absolute path, got %r' % (path,))
    if max_mib < 1 or gpus_per_process < 1:
        _error('nccl-tests needs a largest size of at least 1 MiB and one GPU per process, got %s MiB and %s GPUs'
               % (max_mib, gpus_per_process))
    return [str(path), '-b', NCCL_TESTS_MIN, '-e', '%dM' % max_mib, '-f', NCCL_TESTS_STEP, '-g', str(gpus_per_process), '-c', '1']


def acceptance_nccl_tests_mpi_problem(ldd, path, gpus):
    """Why a node cannot be a rank host of nccl-tests across nodes ('' when it can), from ``ldd`` of its all_reduce_perf
    (a command result: rc, stdout, stderr; None when not looked at) and its GPU count. Across nodes the ranks are
    started by ``srun --mpi=pmix``: only an MPI=1 build (linked with libmpi) joins them into one job; an MPI=0 build
    would run one independent single-node test per rank."""
    if int(gpus or 0) < 1:
        return 'no GPU on this node: nccl-tests runs one rank per GPU'
    if not isinstance(ldd, dict) or 'rc' not in ldd:
        return 'nccl-tests was not looked for at %s' % path
    if ldd.get('rc') != 0:
        said = [line for line in str(ldd.get('stderr') or ldd.get('stdout') or ldd.get('msg') or '').splitlines() if line.strip()]
        return 'nccl-tests not usable at %s (%s)' % (path, said[-1].strip()[:200] if said else 'ldd exit status %s' % ldd.get('rc'))
    stdout = str(ldd.get('stdout') or '')
    missing = [line.split('=>')[0].strip() for line in stdout.splitlines() if 'not found' in line]
    if missing:
        return 'nccl-tests at %s cannot load %s' % (path, ', '.join(missing))
    if not re.search(r'(?m)^\s*libmpi\.so', stdout):
        return 'nccl-tests at %s is built without MPI (MPI=0): srun cannot join its ranks into one test' % path
    return ''


def acceptance_allreduce_multi_tool(problems, tool='auto'):
    """Which tool runs the all-reduce across nodes, from {node: why it cannot host nccl-tests ranks ('' when it can)}.

    ``tool`` is acceptance_allreduce_multi_node_tool: C(pytorch) always takes the pytorch role's benchmark; C(nccl-tests)
    always takes nccl-tests, and a node that cannot run it is left out with its reason (judged alone, never a silent
    fallback); C(auto) takes nccl-tests when every node can run it, else the benchmark, saying which node decided.
    Returns {'tool', 'reason', 'problems'} (problems: the nodes nccl-tests leaves out; empty for the benchmark).
    """
    if tool not in MULTI_NODE_TOOLS:
        _error('acceptance_allreduce_multi_node_tool must be one of %s, got %r' % (', '.join(MULTI_NODE_TOOLS), tool))
    problems = dict(problems or {})
    failing = dict((node, reason) for node, reason in sorted(problems.items()) if reason)
    if tool == 'pytorch':
        return {'tool': 'pytorch', 'reason': 'acceptance_allreduce_multi_node_tool is pytorch', 'problems': {}}
    if tool == 'nccl-tests':
        return {'tool': 'nccl-tests', 'reason': 'acceptance_allreduce_multi_node_tool is nccl-tests', 'problems': failing}
    if problems and not failing:
        return {'tool': 'nccl-tests', 'reason': 'every node has an MPI build of nccl-tests and GPUs', 'problems': {}}
    if not problems:
        return {'tool': 'pytorch', 'reason': 'no node to look at', 'problems': {}}
    node = next(iter(failing))
    return {'tool': 'pytorch', 'reason': 'the pytorch benchmark, as %s cannot run nccl-tests: %s' % (node, failing[node]),
            'problems': {}}


class FilterModule:
    """All-reduce hook filters of the acceptance suite."""

    def filters(self):
        return {
            'acceptance_nccl_sets': acceptance_nccl_sets,
            'acceptance_nccl_compare': acceptance_nccl_compare,
            'acceptance_allreduce_result': acceptance_allreduce_result,
            'acceptance_nccl_tests_argv': acceptance_nccl_tests_argv,
            'acceptance_nccl_tests_mpi_problem': acceptance_nccl_tests_mpi_problem,
            'acceptance_allreduce_multi_tool': acceptance_allreduce_multi_tool,
        }
