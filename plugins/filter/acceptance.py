# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Acceptance verdicts (controller side, pure): per-node checks, busbw against thresholds, the report.

Every check is {'check', 'status', 'reason'} with status pass, fail, repeat (a miss that may be noise:
run it again), skip (cannot apply here, the reason says why) or info (measured, nothing to judge).
The report is one JSON-ready document; Markdown and PNG are renderings of it (acceptance_report module).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.pytorch import pytorch_ddp_result
from ansible_collections.trainstack.cluster.plugins.module_utils import _nccl_tests, _torch_allreduce

SCHEMA = 'trainstack.cluster/acceptance-report/v1'
STATUS_ORDER = ('fail', 'repeat', 'pass', 'info', 'skip')
_SIZE = re.compile(r'^\s*(?P<number>\d+)\s*(?P<unit>B|KiB|MiB|GiB|TiB)?\s*$')
UNITS = {'B': 1, None: 1, 'KiB': 1024, 'MiB': 1024 ** 2, 'GiB': 1024 ** 3, 'TiB': 1024 ** 4}


def _error(message):
    raise AnsibleFilterError('acceptance: ' + message)


def size_bytes(label):
    """'16MiB' -> 16777216; an int is taken as bytes."""
    if isinstance(label, int) and not isinstance(label, bool):
        return label
    match = _SIZE.match(str(label))
    if not match:
        _error('message size %r is not a number of B, KiB, MiB, GiB or TiB' % (label,))
    return int(match.group('number')) * UNITS[match.group('unit')]


def size_label(size):
    """16777216 -> '16MiB' (the largest binary unit that divides it)."""
    for unit in ('TiB', 'GiB', 'MiB', 'KiB'):
        if size >= UNITS[unit] and size % UNITS[unit] == 0:
            return '%d%s' % (size // UNITS[unit], unit)
    return '%dB' % size


def worst(statuses):
    """The status that decides: fail > repeat > pass > info > skip; skip when there is none."""
    statuses = list(statuses)
    for status in STATUS_ORDER:
        if status in statuses:
            return status
    return 'skip'


def _check(name, status, reason, **data):
    result = {'check': name, 'status': status, 'reason': reason}
    result.update(data)
    return result


# ---------------------------------------------------------------------------------------------
# All-reduce results and thresholds


def _last_lines(text, count=3):
    """The last lines of an output, blanks squeezed, for a reason that says where the run stopped."""
    lines = [' '.join(line.split()) for line in str(text or '').splitlines() if line.strip()]
    return ' | '.join(lines[-count:])[-300:] or 'no output'


def _parse_text(text):
    """One tool's output text -> the run (see acceptance_parse_allreduce), without the exit status."""
    if text is None or not str(text).strip():
        return {'tool': None, 'rows': [], 'complete': False, 'errors': ['no output'], 'wrong': 0, 'world_size': None}
    text = str(text)
    if _torch_allreduce.recognises(text):
        try:
            parsed = _torch_allreduce.parse(text)
        except ValueError as error:
            return {'tool': 'pytorch', 'rows': [], 'complete': False, 'errors': [str(error)], 'wrong': 0, 'world_size': None}
        return {'tool': 'pytorch', 'rows': [{'bytes': row['bytes'], 'busbw': row['busbw'], 'algbw': row['algbw']}
                                            for row in parsed['rows']],
                'complete': parsed['complete'], 'errors': parsed['errors'], 'wrong': 0, 'world_size': parsed['world_size'],
                'backend': parsed['backend'], 'hosts': parsed['hosts']}
    try:
        parsed = _nccl_tests.parse(text)
    except ValueError as error:
        return {'tool': 'nccl-tests', 'rows': [], 'complete': False, 'errors': [str(error)], 'wrong': 0, 'world_size': None}
    wrong = sum((row[half].get('wrong') or 0) for row in parsed['rows'] for half in ('out_of_place', 'in_place'))
    errors = list(parsed['errors'])
    # Releases before 2.13 print a deviation, not a count, per row: their verdict is this closing line.
    if parsed['out_of_bounds_ok'] is False:
        errors.append('nccl-tests: %s out-of-bounds values (Out of bounds values ... FAILED)' % parsed['out_of_bounds'])
    # printf's inf/nan (a zero time) is no bandwidth: the run is broken, the row is not judged.
    bad = [row for row in parsed['rows'] if row['out_of_place'].get('busbw') is None]
    if bad:
        errors.append('nccl-tests printed no finite busbw at %s (%s)' % (
            ', '.join(size_label(row['bytes']) for row in bad), '; '.join(parsed['nonfinite'][:4])))
    # The out-of-place figure is the one nccl-tests users quote and the health checks compare.
    return {'tool': 'nccl-tests', 'rows': [{'bytes': row['bytes'], 'busbw': row['out_of_place']['busbw'],
                                            'algbw': row['out_of_place'].get('algbw')}
                                           for row in parsed['rows'] if row not in bad],
            'complete': parsed['complete'] and not errors, 'errors': errors, 'wrong': wrong,
            'world_size': parsed['nranks'] or None, 'hosts': parsed['hosts'] or None}


def acceptance_parse_allreduce(output, rc=None):
    """nccl-tests output or the pytorch role's allreduce_bench.py lines -> {'tool', 'rows': [{'bytes', 'busbw'}], 'complete',
    'errors', 'wrong', 'world_size', 'backend', 'hosts', 'rc'}.

    ``output`` is the text, or a hook's record {'text', 'rc', 'msg'} of one run. A non-zero exit status (``rc``, or the
    record's) is an error with the status and the last lines of the output, even after a complete table (a crash at exit).
    """
    msg = None
    if isinstance(output, dict):
        rc = output.get('rc', rc)
        msg = output.get('msg')
        output = output.get('text')
    run = _parse_text(output)
    run['rc'] = rc
    if rc is not None and str(rc).strip() not in ('0', ''):
        run['errors'] = list(run['errors']) + ['exit status %s%s after %s; last lines: %s' % (
            rc, ' (%s)' % str(msg)[:120] if msg else '', 'a complete result table' if run['complete'] else 'no complete result',
            _last_lines(output))]
        run['complete'] = False
    elif run['complete'] and not run['rows']:
        run['errors'] = list(run['errors']) + ['no result row']
        run['complete'] = False
    return run


def gpu_model(gpu_name, data):
    """The table's model key whose `match` fits the GPU name nvidia-smi prints, or None."""
    for model, spec in sorted((data or {}).get('models', {}).items()):
        if gpu_name and re.search(spec['match'], gpu_name):
            return model
    return None


def thresholds_for(data, gpu_name, gpu_count, overrides=None):
    """({bytes: GB/s}, model, source words) for a GPU name and count, inventory overrides applied."""
    model = gpu_model(gpu_name, data)
    table = dict(((data or {}).get('thresholds', {}).get(model) or {}).get(gpu_count) or
                 ((data or {}).get('thresholds', {}).get(model) or {}).get(str(gpu_count)) or {})
    source = 'data/acceptance_thresholds.yml' if table else None
    for label, value in (overrides or {}).items():
        source = 'inventory (acceptance_busbw_overrides)' if not table else source + ' + inventory overrides'
        if value is None:
            table.pop(label, None)
        else:
            table[label] = value
    parsed = {}
    for label, value in table.items():
        try:
            parsed[size_bytes(label)] = float(value)
        except (TypeError, ValueError):
            _error('threshold %r for %s is not a number of GB/s' % (value, label))
    return parsed, model, source


def acceptance_busbw_verdict(runs, gpu_name, gpu_count, data, overrides=None):
    """Pass/fail/repeat per message size of all-reduce attempts (oldest first) against the thresholds."""
    runs = [run for run in (runs or []) if run is not None]
    policy = (data or {}).get('policy', {})
    attempts = int(policy.get('attempts', 3))
    spread = float(policy.get('noisy_spread', 0.2))
    # gloo runs on CPUs: GPU thresholds do not apply to them.
    gloo = any(run.get('backend') == 'gloo' for run in runs)
    thresholds, model, source = ({}, None, None) if gloo else thresholds_for(data, gpu_name, gpu_count, overrides)
    measured, algbw = {}, {}
    for run in runs:
        for row in run.get('rows', []):
            measured.setdefault(row['bytes'], []).append(row['busbw'])
            if row.get('algbw') is not None:
                algbw.setdefault(row['bytes'], []).append(row['algbw'])
    base = {'check': 'allreduce_busbw', 'model': model, 'gpu_name': gpu_name, 'gpu_count': gpu_count,
            'attempts': len(runs), 'max_attempts': attempts, 'threshold_source': source}
    sizes = []
    for size in sorted(set(measured) | set(thresholds)):
        values = measured.get(size, [])
        entry = {'bytes': size, 'label': size_label(size), 'threshold': thresholds.get(size), 'values': values,
                 'best': max(values) if values else None, 'algbw_best': max(algbw[size]) if algbw.get(size) else None}
        if values and len(values) > 1 and entry['best'] > 0 and (entry['best'] - min(values)) / entry['best'] > spread:
            entry['noisy'] = True
        if entry['threshold'] is None:
            entry.update(status='info', reason='no threshold for this size')
        elif not values:
            entry.update(status='fail', reason='not measured (the run must include %s)' % entry['label'])
        elif entry['best'] >= entry['threshold']:
            first_pass = next(index for index, value in enumerate(values) if value >= entry['threshold'])
            entry.update(status='pass', reason='%.1f GB/s >= %.1f' % (entry['best'], entry['threshold'])
                         + (' (passed on attempt %d)' % (first_pass + 1) if first_pass else ''))
        elif len(runs) < attempts:
            entry.update(status='repeat', reason='%.1f GB/s < %.1f on attempt %d of %d: repeat to rule out noise'
                         % (entry['best'], entry['threshold'], len(runs), attempts))
        else:
            entry.update(status='fail', reason='%.1f GB/s < %.1f in all %d attempts' % (entry['best'], entry['threshold'], len(runs)))
        sizes.append(entry)
    base['sizes'] = sizes
    broken = [run for run in runs if run.get('errors') or run.get('wrong') or not run.get('complete')]
    if not runs:
        return dict(base, status='skip', reason='no all-reduce result (hook not run)')
    if broken:
        run = broken[0]
        why = ('%d wrong values' % run['wrong']) if run.get('wrong') else '; '.join(run.get('errors') or ['the run did not finish'])
        return dict(base, status='fail', reason='all-reduce attempt failed: ' + why[:600])
    if gloo:
        world = next((run.get('world_size') for run in runs if run.get('world_size')), None)
        return dict(base, status='info', reason='gloo on CPU, %s ranks: measured, not judged (thresholds are for GPUs)' % world)
    if gpu_count is not None and int(gpu_count) < 2 and not thresholds:
        return dict(base, status='info', reason='one GPU: busbw is 0 by definition (2(n-1)/n); measured, not judged')
    if not thresholds:
        return dict(base, status='info', reason='no threshold for %s x %s in data/acceptance_thresholds.yml; measured, not judged'
                    % (gpu_name, gpu_count))
    status = worst(entry['status'] for entry in sizes if entry['status'] != 'info')
    judged = [entry for entry in sizes if entry['status'] != 'info']
    failed = [entry for entry in judged if entry['status'] in ('fail', 'repeat')]
    reason = ('; '.join('%s: %s' % (entry['label'], entry['reason']) for entry in failed) if failed
              else '%d sizes at or above their thresholds (%s)' % (len(judged), source))
    return dict(base, status=status, reason=reason)


DEFAULT_MAX_MIB = 4096


def acceptance_allreduce_max_mib(data, gpu_name, gpu_count, overrides=None, requested=None, gpu_memory_mib=None,
                                 default=DEFAULT_MAX_MIB):
    """The largest message (MiB) of a node's all-reduce run: the run must reach every size its thresholds judge.

    ``requested`` (acceptance_allreduce_max_mib) wins. Otherwise the larger of ``default`` and the largest size of
    the node's table (data/acceptance_thresholds.yml for the GPU model and count, inventory overrides applied),
    capped by a quarter of ``gpu_memory_mib`` (all_reduce_perf -c 1 holds send, receive and expected buffers on
    the GPU, and NCCL needs room of its own). Returns whole MiB.
    """
    if requested not in (None, '', 0, '0'):
        try:
            value = int(requested)
        except (TypeError, ValueError):
            value = 0
        if value < 1:
            _error('acceptance_allreduce_max_mib must be a whole number of MiB >= 1, got %r' % (requested,))
        return value
    thresholds, _model, _source = thresholds_for(data, gpu_name, gpu_count, overrides)
    largest = max([int(default)] + [-(-size // UNITS['MiB']) for size in thresholds])
    if gpu_memory_mib not in (None, '', 0):
        cap = int(gpu_memory_mib) // 4
        if cap >= 1:
            largest = min(largest, max(cap, 1))
    return largest


def _port_rates(topology):
    """Gb/s of every ACTIVE port of the node's RDMA HCAs (InfiniBand or RoCE), fastest first."""
    rates = []
    for hca in (topology or {}).get('hcas') or []:
        for port in hca.get('ports') or []:
            if port.get('state') == 'ACTIVE' and port.get('speed_mbps'):
                rates.append(port['speed_mbps'] / 1000.0)
    return sorted(rates, reverse=True)


def acceptance_fabric_floor(topologies, data, gpus_per_node=None):
    """The busbw floor (GB/s) of an all-reduce across the given nodes, from their probed fabric.

    ``topologies`` maps node names to trainstack_topology facts. Per node: the sum of its fastest ACTIVE RDMA
    ports (at most one per GPU in the job: ``gpus_per_node`` or the node's GPU count) in Gb/s / 8; without
    active NVLink and with several GPUs, also the GPUs' PCIe link. The floor is fabric.fraction of the smallest
    node's figure. A node without an ACTIVE port runs over sockets: floor None, the reason names it.
    Returns {'floor', 'line_rate_gbytes', 'fraction', 'min_size', 'nodes': {name: {...}}, 'reason'}.
    """
    spec = (data or {}).get('fabric') or {}
    fraction = float(spec.get('fraction', 0.78))
    lanes = {int(gen): float(rate) for gen, rate in (spec.get('pcie_gbytes_per_lane') or {}).items()}
    nodes, sockets = {}, []
    for name, topology in sorted((topologies or {}).items()):
        gpus = (topology or {}).get('gpus') or []
        used = int(gpus_per_node) if gpus_per_node else len(gpus)
        rates = _port_rates(topology)
        ports = rates[:used] if used else rates
        entry = {'active_ports': len(rates), 'ports_used': len(ports), 'network_gbytes': round(sum(ports) / 8, 3),
                 'gpus': len(gpus), 'nvlink': any((gpu.get('nvlink') or {}).get('active_links') for gpu in gpus)}
        limit = entry['network_gbytes']
        if len(gpus) > 1 and not entry['nvlink']:
            links = [lanes.get(gpu.get('pcie_gen_max')) * (gpu.get('pcie_width_max') or 0) for gpu in gpus
                     if lanes.get(gpu.get('pcie_gen_max')) and gpu.get('pcie_width_max')]
            if links:
                entry['pcie_gbytes'] = round(min(links), 3)
                limit = min(limit, entry['pcie_gbytes']) if rates else limit
        entry['limit_gbytes'] = limit
        nodes[name] = entry
        if not rates:
            sockets.append(name)
    result = {'floor': None, 'line_rate_gbytes': None, 'fraction': fraction, 'min_size': spec.get('min_size', '1GiB'),
              'nodes': nodes}
    if not nodes:
        return dict(result, reason='no node topology: the fabric is unknown')
    if sockets:
        return dict(result, reason='no ACTIVE RDMA port on %s: NCCL runs over sockets there; measured, not judged '
                    'against a fabric' % ', '.join(sockets))
    weakest = min(nodes, key=lambda name: nodes[name]['limit_gbytes'])
    line = nodes[weakest]['limit_gbytes']
    entry = nodes[weakest]
    how = ('%d x %s Gb/s' % (entry['ports_used'], _rate_words(topologies[weakest], entry['ports_used'])))
    if entry.get('pcie_gbytes') is not None and entry['pcie_gbytes'] <= entry['network_gbytes']:
        how = 'PCIe %.1f GB/s (no NVLink)' % entry['pcie_gbytes']
    floor = round(line * fraction, 1)
    return dict(result, floor=floor, line_rate_gbytes=line,
                reason='%.1f GB/s = %.2f x %.1f GB/s (%s, %s)' % (floor, fraction, line, weakest, how))


def _rate_words(topology, count):
    rates = _port_rates(topology)[:count]
    return '/'.join(sorted({'%g' % rate for rate in rates})) or '0'


def acceptance_fabric_busbw_verdict(runs, topologies, data, gpus_per_node=None):
    """allreduce_busbw_multi_node: the best busbw at sizes from fabric.min_size against acceptance_fabric_floor.

    ``runs`` are parsed attempts (oldest first). Broken runs fail at once; gloo runs and nodes without an RDMA
    port are measured, not judged (info); a miss is `repeat` until policy.attempts attempts missed.
    """
    runs = [run for run in (runs or []) if run is not None]
    attempts = int(((data or {}).get('policy') or {}).get('attempts', 3))
    fabric = acceptance_fabric_floor(topologies, data, gpus_per_node)
    min_size = size_bytes(fabric['min_size'])
    measured, algbw = {}, {}
    for run in runs:
        for row in run.get('rows', []):
            if row.get('busbw') is not None:
                measured.setdefault(row['bytes'], []).append(row['busbw'])
            if row.get('algbw') is not None:
                algbw.setdefault(row['bytes'], []).append(row['algbw'])
    best = {size: max(values) for size, values in measured.items()}
    # The rows the report renders (as acceptance_busbw_verdict's): the floor shows from min_size on.
    sizes = []
    for size in sorted(measured):
        judged = size >= min_size and fabric['floor'] is not None
        entry = {'bytes': size, 'label': size_label(size), 'values': measured[size], 'best': best[size],
                 'algbw_best': max(algbw[size]) if algbw.get(size) else None,
                 'threshold': fabric['floor'] if judged else None}
        if not judged:
            entry.update(status='info', reason='not judged (below %s or no fabric floor)' % size_label(min_size))
        elif best[size] >= fabric['floor']:
            entry.update(status='pass', reason='%.1f GB/s >= floor %s' % (best[size], fabric['floor']))
        else:
            entry.update(status='info', reason='%.1f GB/s under the floor; the best size from %s decides'
                         % (best[size], size_label(min_size)))
        sizes.append(entry)
    base = {'check': 'allreduce_busbw_multi_node', 'attempts': len(runs), 'max_attempts': attempts,
            'floor': fabric['floor'], 'fabric': fabric, 'threshold_source': 'fabric: ' + fabric['reason'], 'sizes': sizes}
    if not runs:
        return dict(base, status='skip', reason='no all-reduce result across nodes (hook not run)')
    broken = [run for run in runs if run.get('errors') or run.get('wrong') or not run.get('complete')]
    if broken:
        run = broken[0]
        why = ('%d wrong values' % run['wrong']) if run.get('wrong') else '; '.join(run.get('errors') or ['the run did not finish'])
        return dict(base, status='fail', reason='all-reduce attempt failed: ' + why[:600])
    if any(run.get('backend') == 'gloo' for run in runs):
        return dict(base, status='info', reason='gloo on CPU: measured, not judged against the fabric')
    large = {size: value for size, value in best.items() if size >= min_size}
    peak_size = max(large, key=lambda size: large[size]) if large else None
    base['peak'] = large.get(peak_size)
    if fabric['floor'] is None:
        shown = (', best %.1f GB/s at %s' % (large[peak_size], size_label(peak_size))) if large else ''
        return dict(base, status='info', reason=fabric['reason'] + shown)
    if not large:
        return dict(base, status='fail', reason='not measured: the run must reach %s to be judged against the fabric floor %s'
                    % (size_label(min_size), fabric['reason']))
    words = '%.1f GB/s at %s' % (large[peak_size], size_label(peak_size))
    if large[peak_size] >= fabric['floor']:
        return dict(base, status='pass', reason='%s >= floor %s' % (words, fabric['reason']))
    status = 'repeat' if len(runs) < attempts else 'fail'
    for entry in sizes:
        if entry['bytes'] == peak_size:
            entry.update(status=status, reason='%.1f GB/s < floor %s' % (entry['best'], fabric['floor']))
    if status == 'repeat':
        return dict(base, status='repeat', reason='%s < floor %s on attempt %d of %d: repeat to rule out noise'
                    % (words, fabric['reason'], len(runs), attempts))
    return dict(base, status='fail', reason='%s < floor %s in all %d attempts' % (words, fabric['reason'], len(runs)))


# ---------------------------------------------------------------------------------------------
# Per-node checks from facts


def _gpus(topology):
    return list((topology or {}).get('gpus') or [])


def _gpu_checks(topology, gpu_stack, health, expected):
    gpus = _gpus(topology)
    want_count = expected.get('gpu_count')
    checks = []
    if not gpus and not want_count and not expected.get('slurm_gres_gpus'):
        reason = 'no GPU on this host (nvidia-smi lists none) and the inventory expects none'
        for name in ('gpu_count', 'gpu_model', 'driver_version', 'nvlinks', 'fabric', 'persistence_mode',
                     'xid_since_boot', 'gpu_memory_errors'):
            checks.append(_check(name, 'skip', reason))
        return checks
    checks.append(_gpu_count_check(len(gpus), want_count, expected.get('slurm_gres_gpus')))
    names = sorted({gpu.get('name') for gpu in gpus})
    want_model = expected.get('gpu_model')
    if want_model is None:
        checks.append(_check('gpu_model', 'info', 'GPUs: %s; the inventory sets no acceptance_expected_gpu_model' % ', '.join(map(str, names))))
    else:
        wrong = [gpu for gpu in gpus if gpu.get('name') != want_model]
        checks.append(_check('gpu_model', 'fail' if wrong or not gpus else 'pass',
                             ('GPU %s is %s, inventory expects %s' % (wrong[0]['index'], wrong[0]['name'], want_model)) if wrong
                             else ('all %d GPUs are %s' % (len(gpus), want_model) if gpus else 'no GPU found')))
    driver = ((gpu_stack or {}).get('driver') or {}).get('version')
    want_driver = expected.get('driver_version')
    if want_driver is None:
        checks.append(_check('driver_version', 'info', 'driver %s; the inventory sets no acceptance_expected_driver_version' % driver))
    else:
        checks.append(_check('driver_version', 'pass' if str(driver) == str(want_driver) else 'fail',
                             'driver %s, inventory expects %s' % (driver, want_driver)))
    checks.append(_nvlink_check(gpus, expected))
    checks.append(_fabric_check(gpus, health))
    checks.append(_persistence_check(gpus, health))
    checks.append(_xid_check(health))
    checks.append(_memory_check(health))
    return checks


def _gpu_count_check(count, want_count, gres):
    """FAIL below the inventory's expectation or below what Slurm hands out (its Gres): a node that lost a GPU
    must not pass, nor shrink the jobs sized by the other nodes."""
    problems, judged = [], []
    if want_count is not None:
        judged.append('inventory expects %d' % int(want_count))
        if count != int(want_count):
            problems.append('%d GPUs, inventory expects %d' % (count, int(want_count)))
    if gres is not None:
        judged.append("Slurm's Gres declares %d" % int(gres))
        if count < int(gres):
            problems.append("%d GPUs, fewer than Slurm's Gres=gpu:%d" % (count, int(gres)))
    if problems:
        return _check('gpu_count', 'fail', '; '.join(problems), gpus=count)
    if not judged:
        return _check('gpu_count', 'info', '%d GPUs; the inventory sets no acceptance_expected_gpu_count and Slurm '
                      'declares no GPU Gres' % count, gpus=count)
    return _check('gpu_count', 'pass', '%d GPUs (%s)' % (count, ', '.join(judged)), gpus=count)


_GRES_GPU = re.compile(r'(?:^|,)gpu(?::[^:,(\s]+)?:(?P<count>\d+)')


def acceptance_slurm_gres_gpus(text):
    """The GPUs Slurm declares for a node, from `scontrol -o show node NAME` (Gres=gpu[:type]:N[(S:..)],...);
    0 when the node has a Gres line without GPUs, None when the text shows no node (no Slurm here)."""
    match = re.search(r'(?:^|\s)Gres=(?P<gres>\S*)', str(text or ''))
    if not match or not re.search(r'(?:^|\s)NodeName=', str(text or '')):
        return None
    return sum(int(found.group('count')) for found in _GRES_GPU.finditer(match.group('gres')))


def _nvlink_check(gpus, expected):
    want = expected.get('nvlinks_per_gpu')
    links = {gpu['index']: (gpu.get('nvlink') or {}).get('active_links', 0) for gpu in gpus}
    if want is None:
        if not any(links.values()):
            return _check('nvlinks', 'skip', 'no active NVLink and no acceptance_expected_nvlinks_per_gpu: PCIe-only GPUs')
        if len(set(links.values())) > 1:
            return _check('nvlinks', 'fail', 'GPUs differ in active NVLinks (%s) and no expected count is set'
                          % ', '.join('GPU%d %d' % item for item in sorted(links.items())))
        return _check('nvlinks', 'info', 'every GPU has %d active NVLinks; set acceptance_expected_nvlinks_per_gpu to judge'
                      % next(iter(links.values())))
    short = {index: count for index, count in links.items() if count != int(want)}
    if short:
        return _check('nvlinks', 'fail', 'active NVLinks differ from %d: %s' % (
            int(want), ', '.join('GPU%d has %d' % item for item in sorted(short.items()))))
    return _check('nvlinks', 'pass', 'all %d GPUs have %d active NVLinks' % (len(gpus), int(want)))


def _health_gpus(health):
    query = (health or {}).get('nvidia_smi_q')
    return None if query is None else query.get('gpus', [])


def _fabric_check(gpus, health):
    query_gpus = _health_gpus(health)
    if query_gpus is None:
        return _check('fabric', 'fail', 'nvidia-smi -q gave nothing: %s' % ((health or {}).get('nvidia_smi_q_error') or 'not run'))
    states = {gpu['busid']: (gpu.get('fabric') or {}).get('state') for gpu in query_gpus}
    judged = {busid: state for busid, state in states.items() if state is not None}
    if not judged:
        return _check('fabric', 'skip', 'no GPU reports a fabric state (no NVSwitch fabric, or a driver before R525)')
    bad = {busid: state for busid, state in judged.items() if state != 'Completed'}
    if bad:
        return _check('fabric', 'fail', 'fabric not trained (fabric manager?): %s' % ', '.join(
            '%s %s' % item for item in sorted(bad.items())))
    return _check('fabric', 'pass', 'fabric state Completed on %d GPUs' % len(judged))


def _persistence_check(gpus, health):
    query_gpus = _health_gpus(health)
    if query_gpus is None:
        return _check('persistence_mode', 'fail', 'nvidia-smi -q gave nothing: %s'
                      % ((health or {}).get('nvidia_smi_q_error') or 'not run'))
    off = [gpu['busid'] for gpu in query_gpus if gpu.get('persistence_mode') != 'Enabled']
    if off or not query_gpus:
        return _check('persistence_mode', 'fail', 'persistence mode not Enabled on %s' % (', '.join(off) or 'any GPU'))
    return _check('persistence_mode', 'pass', 'persistence mode Enabled on %d GPUs' % len(query_gpus))


def _xid_check(health):
    log = (health or {}).get('kernel_log')
    if log is None:
        return _check('xid_since_boot', 'fail', 'kernel log unreadable, no proof of no Xid: %s'
                      % ((health or {}).get('kernel_log_error') or 'not read'))
    events = log.get('events', [])
    if events:
        shown = ['Xid %s on %s' % (event['xid'], event['busid']) if event['kind'] != 'unparsed'
                 else 'unparsed: %s' % event['line'][:120] for event in events[:5]]
        return _check('xid_since_boot', 'fail', '%d NVIDIA driver error(s) since boot: %s%s' % (
            len(events), '; '.join(shown), '' if len(events) <= 5 else '; ...'), xids=log.get('xids', []))
    return _check('xid_since_boot', 'pass', 'no Xid in the kernel log since boot (%s)' % log.get('source'))


def _memory_check(health):
    query_gpus = _health_gpus(health)
    if query_gpus is None:
        return _check('gpu_memory_errors', 'fail', 'nvidia-smi -q gave nothing')
    problems = []
    for gpu in query_gpus:
        rows = gpu.get('remapped_rows') or {}
        pages = gpu.get('retired_pages') or {}
        if rows.get('failure'):
            problems.append('%s row remapping failed' % gpu['busid'])
        if rows.get('pending') or pages.get('pending'):
            problems.append('%s remapping/retirement pending (reset the GPU)' % gpu['busid'])
        if rows.get('uncorrectable'):
            problems.append('%s %d rows remapped for uncorrectable errors' % (gpu['busid'], rows['uncorrectable']))
    if problems:
        return _check('gpu_memory_errors', 'fail', '; '.join(problems))
    return _check('gpu_memory_errors', 'pass', 'no pending or failed row remapping / page retirement')


def _ib_checks(topology, expected):
    ports = []
    for hca in (topology or {}).get('hcas') or []:
        for port in hca.get('ports') or []:
            if expected.get('include_roce') or port.get('link_layer') == 'InfiniBand':
                ports.append(dict(port, device=hca['name']))
    want_ports = expected.get('ib_ports')
    want_rate = expected.get('ib_rate_gbps')
    if not ports and not want_ports:
        return [_check('ib_ports', 'skip', 'no InfiniBand port on this host and the inventory expects none', ports=[])]
    summary = [{'device': port['device'], 'port': port['port'], 'state': port.get('state'), 'rate': port.get('rate'),
                'rate_gbps': (port.get('speed_mbps') or 0) / 1000.0, 'link_layer': port.get('link_layer')} for port in ports]
    active = [port for port in summary if port['state'] == 'ACTIVE']
    problems = ['%s/%s %s' % (port['device'], port['port'], port['state']) for port in summary if port['state'] != 'ACTIVE']
    if want_rate is not None:
        problems += ['%s/%s at %s, expected %s Gb/sec' % (port['device'], port['port'], port['rate'], want_rate)
                     for port in active if port['rate_gbps'] < float(want_rate)]
    if want_ports is not None and len(active) != int(want_ports):
        problems.insert(0, '%d ACTIVE ports, inventory expects %d' % (len(active), int(want_ports)))
    if problems:
        return [_check('ib_ports', 'fail', '; '.join(problems), ports=summary)]
    rate = '' if want_rate is None else ' at >= %s Gb/sec' % want_rate
    return [_check('ib_ports', 'pass', '%d ports ACTIVE%s' % (len(active), rate), ports=summary)]


def acceptance_node_checks(topology, gpu_stack=None, health=None, expected=None):
    """Per-node checks (GPU count/model/driver, NVLinks, fabric, persistence, Xid, GPU memory, IB ports)."""
    expected = dict(expected or {})
    for key in ('gpu_count', 'nvlinks_per_gpu', 'ib_ports', 'slurm_gres_gpus'):
        if expected.get(key) is not None and not str(expected[key]).isdigit():
            _error('%s must be a whole number, got %r' % (key, expected[key]))
    return _gpu_checks(topology, gpu_stack, health, expected) + _ib_checks(topology, expected)


# ---------------------------------------------------------------------------------------------
# Jobs across nodes: the MPI check and the DDP smoke job

_MPI_HELLO = re.compile(r'^hello rank=(?P<rank>\d+) size=(?P<size>\d+) host=(?P<host>\S+)\s*$')
_MPI_ALLREDUCE = re.compile(r'^allreduce sum=(?P<sum>-?\d+) expected=(?P<expected>-?\d+) '
                            r'vector_mismatches_rank0=(?P<mismatches>\d+) all_ok=(?P<ok>[01])\s*$')
_MPI_PINGPONG = re.compile(r'^pingpong from=(?P<src>\S+) to=(?P<dst>\S+) latency_us=(?P<lat>[0-9.]+) '
                           r'bandwidth_MBps=(?P<bw>[0-9.]+)\s*$')


def _number(value, name):
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        _error('%s must be a number, got %r' % (name, value))


def acceptance_mpi_verdict(text, nodes, rc=0, min_bandwidth_mbps=None, max_latency_us=None):
    """Judge the output of the collection's MPI check (roles/acceptance/files/mpi_check.c) run on ``nodes``.

    Passes when every node ran a rank, the two allreduces were exact on every rank and the ping-pong went
    between two different nodes within the optional bandwidth and latency bounds. The check carries
    ranks, hosts, latency_us and bandwidth_mbps for the report.
    """
    nodes = sorted(nodes or [])
    min_bw = _number(min_bandwidth_mbps, 'min_bandwidth_mbps')
    max_lat = _number(max_latency_us, 'max_latency_us')
    ranks, allreduce, pingpong = {}, None, None
    for line in (text or '').splitlines():
        line = line.strip()
        match = _MPI_HELLO.match(line)
        if match:
            ranks[int(match.group('rank'))] = (int(match.group('size')), match.group('host'))
            continue
        allreduce = _MPI_ALLREDUCE.match(line) or allreduce
        pingpong = _MPI_PINGPONG.match(line) or pingpong
    hosts = sorted({host for _size, host in ranks.values()})
    data = {'ranks': len(ranks), 'hosts': hosts, 'latency_us': None, 'bandwidth_mbps': None}
    problems = []
    if rc not in (0, '0'):
        problems.append('the job exited with %s' % rc)
    sizes = {size for size, _host in ranks.values()}
    if not ranks:
        problems.append('no rank said hello')
    elif len(sizes) != 1 or sorted(ranks) != list(range(sizes.pop())):
        problems.append('ranks %s did not all report (world sizes %s)'
                        % (','.join(map(str, sorted(ranks))), ','.join(sorted({str(s) for s, _h in ranks.values()}))))
    missing = [node for node in nodes if node not in hosts]
    if missing:
        problems.append('no rank ran on %s' % ', '.join(missing))
    if allreduce is None:
        problems.append('no allreduce result')
    elif allreduce.group('ok') != '1' or allreduce.group('sum') != allreduce.group('expected') \
            or allreduce.group('mismatches') != '0':
        problems.append('allreduce wrong: sum %s, expected %s, %s vector mismatches on rank 0'
                        % (allreduce.group('sum'), allreduce.group('expected'), allreduce.group('mismatches')))
    latency = bandwidth = None
    if len(nodes) > 1:
        if pingpong is None:
            problems.append('no ping-pong result')
        else:
            latency, bandwidth = float(pingpong.group('lat')), float(pingpong.group('bw'))
            data.update(latency_us=latency, bandwidth_mbps=bandwidth)
            if pingpong.group('src') == pingpong.group('dst'):
                problems.append('the ping-pong stayed on %s' % pingpong.group('src'))
            if min_bw is not None and bandwidth < min_bw:
                problems.append('ping-pong bandwidth %.1f MB/s < %g' % (bandwidth, min_bw))
            if max_lat is not None and latency > max_lat:
                problems.append('ping-pong latency %.2f us > %g' % (latency, max_lat))
    if problems:
        return _check('mpi', 'fail', '; '.join(problems), **data)
    reason = '%d ranks on %s: allreduce exact' % (len(ranks), ', '.join(hosts))
    if latency is not None:
        reason += '; ping-pong %s -> %s %.1f us, %.0f MB/s' % (pingpong.group('src'), pingpong.group('dst'), latency, bandwidth)
    return _check('mpi', 'pass', reason, **data)


def acceptance_ddp_verdict(text, nodes, backend=None, rc=0, min_samples_per_s=None):
    """Judge the output of the pytorch role's DDP smoke job run on ``nodes`` (one torchrun per node).

    The job's own checks (loss decreased, parameters bit-identical on every rank) come from
    pytorch_ddp_result; here the job must also have run on exactly ``nodes`` and, when given, reach
    ``min_samples_per_s`` in total. Carries world_size, hosts and samples_per_s_total for the report.
    """
    nodes = sorted(nodes or [])
    floor = _number(min_samples_per_s, 'min_samples_per_s')
    checked = pytorch_ddp_result(text, hosts=nodes, backend=backend)
    result = checked['result'] or {}
    data = {'world_size': result.get('world_size'), 'hosts': sorted(result.get('hosts') or []),
            'samples_per_s_total': result.get('samples_per_s_total')}
    problems = list(checked['problems'])
    if rc not in (0, '0'):
        problems.insert(0, 'the job exited with %s' % rc)
    total = data['samples_per_s_total']
    if floor is not None and isinstance(total, (int, float)) and total < floor:
        problems.append('%.0f samples/s in total < %g' % (total, floor))
    if problems:
        return _check('ddp', 'fail', '; '.join(problems), **data)
    return _check('ddp', 'pass', 'DDP %s, %s ranks on %s: loss %s -> %s, parameters identical, %s samples/s in total'
                  % (result.get('backend'), result.get('world_size'), ', '.join(data['hosts']),
                     result.get('loss_first'), result.get('loss_last'), total), **data)


def acceptance_not_run(reason, in_group=True, check_mode=False):
    """The result of a hook that did not run on a node: skip where the node is not asked to run it (outside the
    hook's group) or in check mode, else FAIL marked not_run (the node was asked and could not)."""
    if check_mode:
        return {'status': 'skip', 'reason': reason if str(reason).startswith('check mode') else 'check mode: nothing is run'}
    if not in_group:
        return {'status': 'skip', 'reason': reason}
    return {'status': 'fail', 'reason': 'expected but not run: %s' % reason, 'not_run': True}


def acceptance_mpi_plan(hcas, nodes):
    """The MPI job's nodes and transport from {node: number of HCAs}: UCX over TCP and shared memory only where no
    MPI node has an HCA (the lab). Where some have, the job runs on those over RDMA and each node without an HCA is
    left out and judged alone ({'nodes', 'tcp', 'left_out': {node: reason}}): one such node never turns TCP on
    for the others."""
    nodes = list(nodes or [])
    with_hca = [node for node in nodes if int((hcas or {}).get(node) or 0) > 0]
    if not with_hca:
        return {'nodes': nodes, 'tcp': True, 'left_out': {}}
    left_out = {node: 'no HCA on this node while %d of the %d MPI nodes have one: left out of the MPI job (UCX over '
                      'TCP is not turned on for the others)' % (len(with_hca), len(nodes))
                for node in nodes if node not in with_hca}
    return {'nodes': with_hca, 'tcp': False, 'left_out': left_out}


def acceptance_job_plan(gpus, problems=None, label='the job'):
    """The nodes of a PyTorch job from {node: GPUs} and {node: why it cannot run ('' when it can)}: the job takes
    as many GPUs per node as the best-equipped node has, and runs on the nodes that have them and no problem. The
    others are left out ({node: reason}) and judged alone: a node that lost a GPU fails, it does not shrink the job.
    Returns {'nodes', 'gpus', 'left_out'}."""
    gpus = dict((node, int(count or 0)) for node, count in (gpus or {}).items())
    problems = dict((node, reason) for node, reason in (problems or {}).items() if reason)
    most = max(gpus.values()) if gpus else 0
    left_out = {}
    for node in sorted(gpus):
        if problems.get(node):
            left_out[node] = problems[node]
        elif gpus[node] < most:
            left_out[node] = '%d GPUs, fewer than the %d of another node: left out of %s' % (gpus[node], most, label)
    return {'nodes': [node for node in sorted(gpus) if node not in left_out], 'gpus': most, 'left_out': left_out}


# At most 10 digits a field: more never fits Slurm's limit below (and int() of 100,000 digits raises).
_SLURM_TIME = re.compile(r'^(?:(?P<days>\d{1,10})-(?P<dh>\d{1,10})(?::(?P<dm>\d{1,10})(?::(?P<ds>\d{1,10}))?)?'
                         r'|(?:(?:(?P<h>\d{1,10}):)?(?P<m>\d{1,10}):)?(?P<s>\d{1,10}))$')
# Slurm adds a time limit up in seconds in a C int (parse_time.c time_str2secs): more overflows into nonsense.
_SLURM_MAX_TIME_S = 2 ** 31 - 1


def acceptance_slurm_time_s(text):
    """A Slurm time limit (sbatch --time: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) in seconds; None for anything else
    (UNLIMITED included: the suite's jobs must have a bound), and for a limit Slurm cannot hold (over 2**31 - 1
    seconds, about 68 years). A lone number is minutes, as Slurm reads it."""
    match = _SLURM_TIME.match(str(text if text is not None else '').strip())
    if not match:
        return None
    part = dict((key, int(value)) for key, value in match.groupdict().items() if value is not None)
    if 'days' in part:
        seconds = ((part['days'] * 24 + part['dh']) * 60 + part.get('dm', 0)) * 60 + part.get('ds', 0)
    elif 'm' not in part:
        seconds = part['s'] * 60
    else:
        seconds = (part.get('h', 0) * 60 + part['m']) * 60 + part['s']
    return seconds if 0 < seconds <= _SLURM_MAX_TIME_S else None


_SCONTROL_FIELD = re.compile(r'(?:^|\s)(?P<key>JobId|JobState|Reason|ExitCode|BatchHost)=(?P<value>\S*)')


def acceptance_slurm_job(text):
    """`scontrol -o show job ID` -> {'job_id', 'state', 'reason', 'exit_code', 'batch_host', 'rc'}; rc is the
    batch script's exit status as the verdicts take it: 0 only for COMPLETED 0:0, else the exit code or the
    state (CANCELLED, TIMEOUT ...). None when the text shows no job."""
    fields = dict((match.group('key'), match.group('value')) for match in _SCONTROL_FIELD.finditer(str(text or '')))
    if 'JobId' not in fields:
        return None
    exit_code = fields.get('ExitCode')
    state = fields.get('JobState')
    status = (exit_code or '').split(':')[0]
    if state == 'COMPLETED' and exit_code == '0:0':
        rc = 0
    elif status.isdigit() and status != '0':
        rc = int(status)
    else:
        rc = '%s %s' % (state, exit_code)
    return {'job_id': fields['JobId'], 'state': state, 'reason': fields.get('Reason'), 'exit_code': exit_code,
            'batch_host': None if fields.get('BatchHost') in (None, '', '(null)') else fields['BatchHost'], 'rc': rc}


# ---------------------------------------------------------------------------------------------
# The report


def acceptance_report(nodes, generated=None, meta=None):
    """One report document from [{'name', 'checks': [...], 'allreduce': verdict or None, 'allreduce_multi_node': verdict
    or None, 'hooks': [...]}].

    ``nodes`` may also map host names to such dicts; a host mapped to None (it failed or was
    unreachable before its checks finished) is a failing node.
    """
    if isinstance(nodes, dict):
        nodes = [dict(node, name=name) if node else
                 {'name': name, 'checks': [_check('run', 'fail', 'no result: the host failed or was unreachable before its '
                                                                 'checks finished (see the play output)')]}
                 for name, node in nodes.items()]
    report_nodes = []
    for node in nodes or []:
        if not isinstance(node, dict) or not node.get('name'):
            _error('every node needs a name and its checks, got %r' % (node,))
        checks = list(node.get('checks') or [])
        checks += [node[key] for key in ('allreduce', 'allreduce_multi_node') if node.get(key)]
        checks += [hook for hook in node.get('hooks') or [] if hook]
        # A check the node was asked to run and could not is a failure whatever status its producer gave.
        checks = [dict(check, status='fail') if check.get('not_run') else check for check in checks]
        status = worst(check['status'] for check in checks)
        reasons = ['%s: %s' % (check['check'], check['reason']) for check in checks if check['status'] in ('fail', 'repeat')]
        report_nodes.append({'name': node['name'], 'status': status, 'reasons': reasons, 'checks': checks,
                             'gpu_name': node.get('gpu_name'), 'gpu_count': node.get('gpu_count'),
                             'not_run': sorted(check['check'] for check in checks if check.get('not_run')),
                             'skipped': sorted(check['check'] for check in checks if check['status'] == 'skip')})
    report_nodes.sort(key=lambda node: node['name'])
    counts = {status: sum(1 for node in report_nodes if node['status'] == status) for status in STATUS_ORDER}
    return {
        'schema': SCHEMA,
        'generated': generated,
        'meta': dict(meta or {}),
        'status': worst(node['status'] for node in report_nodes),
        'counts': counts,
        # Checks, not nodes: expected but not run (each one a failure) and skipped (not asked of that node).
        'check_counts': {'not_run': sum(len(node['not_run']) for node in report_nodes),
                         'skipped': sum(len(node['skipped']) for node in report_nodes)},
        'failing_nodes': [{'name': node['name'], 'status': node['status'], 'reasons': node['reasons']}
                          for node in report_nodes if node['status'] in ('fail', 'repeat')],
        'nodes': report_nodes,
    }


class FilterModule:
    """Acceptance filters."""

    def filters(self):
        return {
            'acceptance_parse_allreduce': acceptance_parse_allreduce,
            'acceptance_busbw_verdict': acceptance_busbw_verdict,
            'acceptance_allreduce_max_mib': acceptance_allreduce_max_mib,
            'acceptance_fabric_floor': acceptance_fabric_floor,
            'acceptance_fabric_busbw_verdict': acceptance_fabric_busbw_verdict,
            'acceptance_node_checks': acceptance_node_checks,
            'acceptance_mpi_verdict': acceptance_mpi_verdict,
            'acceptance_ddp_verdict': acceptance_ddp_verdict,
            'acceptance_report': acceptance_report,
            'acceptance_not_run': acceptance_not_run,
            'acceptance_mpi_plan': acceptance_mpi_plan,
            'acceptance_job_plan': acceptance_job_plan,
            'acceptance_slurm_job': acceptance_slurm_job,
            'acceptance_slurm_gres_gpus': acceptance_slurm_gres_gpus,
            'acceptance_slurm_time_s': acceptance_slurm_time_s,
        }
