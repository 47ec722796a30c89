# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Renderings of the acceptance report document: a console table, Markdown and PNG plots.

The report (filter trainstack.cluster.acceptance_report) is the source; these functions only format
it, so AWX (the JSON), a shell user (the table, the Markdown) and a reader of the plots see the same
numbers. PNG needs matplotlib on the controller; without it ``write_pngs`` says why it skipped.
"""

from __future__ import annotations

import json
import os
import re

MARK = {'pass': 'PASS', 'fail': 'FAIL', 'repeat': 'REPEAT', 'skip': 'skip', 'info': 'info'}


def to_json(report):
    return json.dumps(report, indent=1, sort_keys=True) + '\n'


# (verdict check, the hook whose NCCL environment sets are compared, PNG name part, title)
SCOPES = (('allreduce_busbw', 'nccl_allreduce_single_node', '', 'All-reduce bus bandwidth'),
          ('allreduce_busbw_multi_node', 'nccl_allreduce_multi_node', 'multi-node-', 'All-reduce bus bandwidth across nodes'))


def _allreduce(node, name='allreduce_busbw'):
    return next((check for check in node['checks'] if check['check'] == name), None)


def _comparison(node, hook):
    check = _allreduce(node, hook)
    return (check or {}).get('comparison') or None


def _busbw_table(allreduce, title):
    out = ['', '%s (GB/s), %d attempt(s), thresholds: %s' % (
        title, allreduce.get('attempts', 0), allreduce.get('threshold_source') or 'none'), '',
        '| size | best busbw | attempts | best algbw | threshold | status |', '|---|---|---|---|---|---|']
    for entry in allreduce['sizes']:
        values = ', '.join('%.1f' % value for value in entry['values']) or '-'
        out.append('| %s | %s | %s | %s | %s | %s%s |' % (
            entry['label'], '-' if entry['best'] is None else '%.1f' % entry['best'], values,
            '-' if entry.get('algbw_best') is None else '%.1f' % entry['algbw_best'],
            '-' if entry['threshold'] is None else '%.1f' % entry['threshold'], MARK[entry['status']],
            ' (noisy)' if entry.get('noisy') else ''))
    return out


def _comparison_table(comparison, hook):
    """busbw per size of the default environment and each NCCL set, with the gain over the default."""
    names = ['default'] + [name for name in comparison['sets'] if name not in comparison.get('failed', {})]
    out = ['', 'NCCL environment sets (%s): %s' % (hook, comparison['reason']), '',
           '| size | %s | best |' % ' | '.join(_cell(name) for name in names), '|---|%s---|' % ('---|' * len(names))]
    for entry in comparison['sizes']:
        cells = []
        for name in names:
            value = entry['busbw'].get(name)
            gain = entry['gain_pct'].get(name)
            cells.append('-' if value is None else '%.2f' % value + ('' if gain is None else ' (%+.1f %%)' % gain))
        out.append('| %s | %s | %s |' % (entry['label'], ' | '.join(cells), _cell(entry['best'])))
    return out


def _ib(node):
    return next((check for check in node['checks'] if check['check'] == 'ib_ports'), None)


def _ib_pairs(node):
    return next((check for check in node['checks'] if check['check'] == 'ib_send_bw_pairs'), None)


def _number(value, digits):
    return '-' if value is None else '%.*f' % (digits, value)


def _cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def table(report):
    """Console lines: one row per node with its status and the checks that failed."""
    nodes = report.get('nodes', [])
    width = max([len('NODE')] + [len(node['name']) for node in nodes])
    lines = ['%-*s  %-6s  %s' % (width, 'NODE', 'STATUS', 'FAILED OR TO REPEAT')]
    for node in nodes:
        bad = [check['check'] for check in node['checks'] if check['status'] in ('fail', 'repeat')]
        lines.append('%-*s  %-6s  %s' % (width, node['name'], MARK[node['status']], ', '.join(bad) or '-'))
    counts = report.get('counts', {})
    lines.append('%s: %d pass, %d fail, %d repeat, %d skip, %d info' % (
        MARK.get(report.get('status'), report.get('status')), counts.get('pass', 0), counts.get('fail', 0),
        counts.get('repeat', 0), counts.get('skip', 0), counts.get('info', 0)))
    return lines


def markdown(report, images=None):
    """The report as Markdown; ``images`` maps a node name (or 'ib') to a PNG file name to link."""
    images = images or {}
    out = ['# Cluster acceptance report', '',
           '- status: **%s**' % MARK.get(report.get('status'), report.get('status')),
           '- generated: %s' % (report.get('generated') or 'unknown')]
    for key, value in sorted((report.get('meta') or {}).items()):
        out.append('- %s: %s' % (key, value))
    out += ['', '| node | status | GPUs | all-reduce | failed or to repeat |', '|---|---|---|---|---|']
    for node in report.get('nodes', []):
        allreduce = _allreduce(node)
        bad = [check['check'] for check in node['checks'] if check['status'] in ('fail', 'repeat')]
        gpus = '%s x %s' % (node.get('gpu_count'), node.get('gpu_name')) if node.get('gpu_name') else '-'
        out.append('| %s | %s | %s | %s | %s |' % (_cell(node['name']), MARK[node['status']], _cell(gpus),
                                                   MARK[allreduce['status']] if allreduce else '-', _cell(', '.join(bad) or '-')))
    out += ['', '## Failing nodes', '']
    if not report.get('failing_nodes'):
        out.append('None.')
    for node in report.get('failing_nodes', []):
        out.append('- **%s** (%s)' % (node['name'], MARK[node['status']]))
        out += ['  - %s' % reason for reason in node['reasons']]
    for node in report.get('nodes', []):
        out += ['', '## %s: %s' % (node['name'], MARK[node['status']]), '', '| check | status | reason |', '|---|---|---|']
        for check in node['checks']:
            out.append('| %s | %s | %s |' % (check['check'], MARK[check['status']], _cell(check['reason'])))
        for check_name, hook, part, title in SCOPES:
            allreduce = _allreduce(node, check_name)
            if allreduce and allreduce.get('sizes'):
                out += _busbw_table(allreduce, title)
            comparison = _comparison(node, hook)
            if comparison and comparison.get('sizes'):
                out += _comparison_table(comparison, hook)
            if part and images.get(part + node['name']):
                out += ['', '![busbw across nodes, seen from %s](%s)' % (node['name'], images[part + node['name']])]
        ib = _ib(node)
        if ib and ib.get('ports'):
            out += ['', '| IB port | state | rate |', '|---|---|---|']
            out += ['| %s/%s | %s | %s |' % (port['device'], port['port'], port['state'], port['rate']) for port in ib['ports']]
        pairs = _ib_pairs(node)
        if pairs and pairs.get('links'):
            out += ['', '| perftest port pair | rate (Gb/s) | threshold (Gb/s) | ib_send_bw (Gb/s) | ib_send_lat (us) | status |',
                    '|---|---|---|---|---|---|']
            for link in pairs['links']:
                out.append('| %s | %g | %s | %s | %s | %s |' % (
                    _cell(link['name']), link['rate_gbps'], _number(link['threshold_gbps'], 1), _number(link['bw_gbps'], 1),
                    _number(link['latency_us'], 2), MARK[link['status']]))
        if node['name'] in images:
            out += ['', '![busbw of %s](%s)' % (node['name'], images[node['name']])]
    if 'ib' in images:
        out += ['', '## InfiniBand ports', '', '![IB bandwidth per port](%s)' % images['ib']]
    return '\n'.join(out) + '\n'


def safe_name(name):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', name)


def busbw_series(node, check='allreduce_busbw'):
    """(labels, best busbw, thresholds, best algbw) of a node's all-reduce sizes, smallest first; empty lists without sizes."""
    allreduce = _allreduce(node, check)
    if not allreduce or not allreduce.get('sizes'):
        return [], [], [], []
    sizes = allreduce['sizes']
    return ([entry['label'] for entry in sizes], [entry['best'] for entry in sizes], [entry['threshold'] for entry in sizes],
            [entry.get('algbw_best') for entry in sizes])


def ib_series(report):
    """(port labels, rate Gb/s) of every InfiniBand port of every node."""
    labels, rates = [], []
    for node in report.get('nodes', []):
        ib = _ib(node)
        for port in (ib or {}).get('ports', []):
            labels.append('%s %s/%s' % (node['name'], port['device'], port['port']))
            rates.append(port['rate_gbps'] if port['state'] == 'ACTIVE' else 0.0)
    return labels, rates


def ib_measured_series(report):
    """(ib_send_bw Gb/s, threshold Gb/s) per port of ib_series, from the port pairs the port took part in (the lowest
    figure, with that pair's threshold); None where the port was not tested."""
    measured, thresholds = [], []
    for node in report.get('nodes', []):
        links = (_ib_pairs(node) or {}).get('links') or []
        for port in ((_ib(node) or {}).get('ports') or []):
            own = [link for link in links if link.get('bw_gbps') is not None and (
                (link['client'], link['client_hca'], link['client_port']) == (node['name'], port['device'], port['port'])
                or (link['server'], link['server_hca'], link['server_port']) == (node['name'], port['device'], port['port']))]
            lowest = min(own, key=lambda link: link['bw_gbps']) if own else None
            measured.append(lowest['bw_gbps'] if lowest else None)
            thresholds.append(lowest['threshold_gbps'] if lowest else None)
    return measured, thresholds


def write_pngs(report, dest, basename):
    """Write the plots; return ({node or 'ib': file name}, reason PNGs were skipped or None)."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        from matplotlib import pyplot
    except ImportError:
        return {}, 'PNG skipped: matplotlib is not installed on the controller (pip install matplotlib)'
    written = {}
    for node in report.get('nodes', []):
        for check, hook, part, title in SCOPES:
            labels, best, thresholds, algbw = busbw_series(node, check)
            if not labels:
                continue
            figure, axes = pyplot.subplots(figsize=(8, 4.5))
            positions = list(range(len(labels)))
            axes.plot(positions, [value if value is not None else float('nan') for value in best], marker='o', label='busbw (best attempt)')
            if any(value is not None for value in algbw):
                axes.plot(positions, [value if value is not None else float('nan') for value in algbw], marker='.', linestyle=':',
                          color='grey', label='algbw (best attempt)')
            if any(value is not None for value in thresholds):
                axes.plot(positions, [value if value is not None else float('nan') for value in thresholds],
                          marker='_', linestyle='--', color='red', label='threshold')
            comparison = _comparison(node, hook) or {}
            by_size = {entry['label']: entry['busbw'] for entry in comparison.get('sizes', [])}
            for set_name in comparison.get('sets', []):
                values = [by_size.get(label, {}).get(set_name) for label in labels]
                if any(value is not None for value in values):
                    axes.plot(positions, [value if value is not None else float('nan') for value in values], marker='x',
                              linestyle='-.', label='busbw, ' + set_name)
            axes.set_xticks(positions)
            axes.set_xticklabels(labels, rotation=45)
            axes.set_xlabel('message size')
            axes.set_ylabel('bus bandwidth (GB/s)')
            axes.set_title('%s: %s (%s)' % (node['name'], title.lower(), node['status']))
            axes.grid(True, alpha=0.3)
            axes.legend()
            figure.tight_layout()
            name = '%s-busbw-%s%s.png' % (basename, part, safe_name(node['name']))
            figure.savefig(os.path.join(dest, name), metadata={'Software': None})
            pyplot.close(figure)
            written[part + node['name']] = name
    labels, rates = ib_series(report)
    if labels:
        measured, limits = ib_measured_series(report)
        figure, axes = pyplot.subplots(figsize=(max(6, 0.5 * len(labels) + 2), 4.5))
        positions = list(range(len(labels)))
        if any(value is not None for value in measured):
            axes.bar([x - 0.2 for x in positions], rates, width=0.4, label='link rate')
            axes.bar([x + 0.2 for x in positions], [value or 0.0 for value in measured], width=0.4, label='ib_send_bw (lowest pair)')
            judged = [(x, limit) for x, limit in zip(positions, limits) if limit is not None]
            axes.hlines([limit for _x, limit in judged], [x for x, _limit in judged], [x + 0.4 for x, _limit in judged],
                        colors='red', linewidth=2, label='threshold')
            axes.set_ylim(0, 1.25 * max([1.0] + rates + [value for value in measured if value is not None]))
            axes.legend(loc='upper right', ncol=3)
        else:
            axes.bar(positions, rates)
        axes.set_xticks(positions)
        axes.set_xticklabels(labels, rotation=60, ha='right')
        axes.set_ylabel('Gb/s (link rate 0 = not ACTIVE)')
        axes.set_title('InfiniBand ports: link rate and measured bandwidth')
        figure.tight_layout()
        name = '%s-ib-ports.png' % basename
        figure.savefig(os.path.join(dest, name), metadata={'Software': None})
        pyplot.close(figure)
        written['ib'] = name
    if not written:
        return written, 'PNG skipped: nothing to plot (no all-reduce result and no InfiniBand port)'
    return written, None
