#!/usr/bin/env python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks behind the device layer (tests/device/checks/probe.sh, nccl_conf.sh); standard library only, every line OK/FAIL/INFO.

  gpu_validate_report.py facts FACTS_JSON NVIDIA_SMI_TXT
      compare topology_facts with nvidia-smi and sysfs read independently
  gpu_validate_report.py nccl DEFAULT_LOG TOPO_LOG DEFAULT_DUMP TOPO_DUMP TOPO_FILE
      check NCCL's logs and dumps of the runs without and with the generated file,
      and the busbw ratio at 1, 2 and 4 GiB
The exit status is 1 when any FAIL line was printed.
"""

from __future__ import annotations

import json
import os
import re
import sys
from xml.etree import ElementTree

FORBIDDEN_IN_TOPO_LOG = ('NCCL WARN', 'KV Convert', 'Ignoring element', 'Could not open XML topology file')
RATIO_SIZES_MIB = (1024, 2048, 4096)
# busbw with the file may not fall below the default run by more than run-to-run noise.
MIN_BUSBW_RATIO = 0.95


class Report:
    def __init__(self):
        self.failed = False

    def line(self, status, message):
        if status == 'FAIL':
            self.failed = True
        print('%-4s %s' % (status, message))

    def check(self, condition, message):
        self.line('OK' if condition else 'FAIL', message)


def normalize_busid(text):
    match = re.match(r'^\s*([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])\s*$', text or '')
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return '%04x:%02x:%02x.%x' % (int(domain, 16), int(bus, 16), int(device, 16), int(function))


def sections(text):
    """'## name' headed sections of a text file."""
    found, name = {}, None
    for line in text.splitlines(True):
        if line.startswith('## '):
            name = line[3:].strip()
            found[name] = ''
        elif name is not None:
            found[name] += line
    return found


def nvidia_smi_gpus(csv_text):
    """index -> row of 'index, pci.bus_id, uuid, name, compute_cap, memory.total' (csv, noheader, nounits)."""
    rows = {}
    for line in csv_text.splitlines():
        cells = [cell.strip() for cell in line.split(',')]
        if len(cells) >= 6 and cells[0].isdigit():
            rows[int(cells[0])] = {'busid': normalize_busid(cells[1]), 'uuid': cells[2], 'name': cells[3],
                                   'compute_cap': cells[4], 'memory_mib': cells[5]}
    return rows


def active_links(nvlink_text):
    counts, current = {}, None
    for line in nvlink_text.splitlines():
        gpu = re.match(r'^GPU (\d+):', line)
        if gpu:
            current = int(gpu.group(1))
            counts[current] = 0
        elif current is not None and re.search(r'Link \d+: [0-9.]+ GB/s', line):
            counts[current] += 1
    return counts


def compare_facts(facts_path, smi_path, sysfs='/sys'):
    report = Report()
    try:
        with open(facts_path, encoding='utf-8') as handle:
            facts = json.load(handle)
    except (OSError, ValueError) as error:
        report.line('FAIL', 'facts unreadable: %s' % error)
        return report
    topology = facts.get('ansible_facts', facts).get('trainstack_topology', facts)
    with open(smi_path, encoding='utf-8', errors='replace') as handle:
        smi = sections(handle.read())
    gpus = {gpu['index']: gpu for gpu in topology.get('gpus', [])}
    expected = nvidia_smi_gpus(smi.get('query', ''))
    report.check(len(gpus) == len(expected) and len(gpus) > 0, 'GPU count: facts %d, nvidia-smi %d' % (len(gpus), len(expected)))
    links = active_links(smi.get('nvlink -s', ''))
    for index, row in sorted(expected.items()):
        gpu = gpus.get(index)
        if gpu is None:
            report.line('FAIL', 'GPU%d missing from facts' % index)
            continue
        report.check(gpu['busid'] == row['busid'], 'GPU%d busid facts %s nvidia-smi %s' % (index, gpu['busid'], row['busid']))
        report.check(gpu['uuid'] == row['uuid'] and gpu['name'] == row['name'], 'GPU%d %s %s' % (index, gpu['name'], gpu['uuid']))
        report.check(gpu['compute_capability'] == row['compute_cap'] and gpu['sm'] == int(float(row['compute_cap']) * 10),
                     'GPU%d compute capability %s sm %s' % (index, gpu['compute_capability'], gpu['sm']))
        report.check(str(gpu['memory_mib']) == row['memory_mib'], 'GPU%d memory %s MiB' % (index, gpu['memory_mib']))
        report.check(gpu['nvlink']['active_links'] == links.get(index, 0),
                     'GPU%d NVLinks facts %s nvlink -s %s' % (index, gpu['nvlink']['active_links'], links.get(index, 0)))
        device = os.path.join(sysfs, 'bus', 'pci', 'devices', row['busid'] or 'none')
        for name in ('max_link_width', 'numa_node'):
            try:
                with open(os.path.join(device, name), encoding='utf-8') as handle:
                    value = int(handle.read().strip())
            except (OSError, ValueError):
                report.line('INFO', 'GPU%d sysfs %s unreadable' % (index, name))
                continue
            fact = gpu['pcie']['max_link_width'] if name == 'max_link_width' else gpu['numa_node']
            report.check(fact == value, 'GPU%d %s facts %s sysfs %s' % (index, name, fact, value))
    matrix = topology.get('distances', {}).get('matrix', {})
    nv_cells = re.findall(r'\b(NV\d+|PIX|PXB|PHB|NODE|SYS)\b', smi.get('topo -m', '').split('Legend')[0])
    facts_cells = [cell for row in matrix.values() for cell in row.values() if cell != 'X']
    report.check(sorted(nv_cells) == sorted(facts_cells), 'topo -m cells %s match facts matrix (%s)' % (
        ' '.join(sorted(set(nv_cells))), topology.get('distances', {}).get('source')))
    numa_ids = [node['id'] for node in topology.get('numa_nodes', [])]
    report.line('INFO', 'nvswitch=%s numa_nodes=%s cpu=%s' % (topology.get('nvswitch'), numa_ids, (topology.get('cpu') or {}).get('model_name')))
    return report


def busbw(log_text):
    """size in MiB -> busbw GB/s from the benchmark lines (size_MiB= or probe.sh's size_MB=)."""
    return {int(size): float(value) for size, value in re.findall(r'size_Mi?B=(\d+) .*busbw_GBs=([0-9.]+)', log_text)}


def dump_view(path):
    """GPUs of an NCCL dump: busid -> (numaid of its cpu, link_width, NVLink count, nvlink targets)."""
    view = {}
    root = ElementTree.parse(path).getroot()

    def walk(element, numaid, pci):
        for child in element:
            if child.tag == 'cpu':
                walk(child, child.get('numaid'), None)
            elif child.tag == 'pci':
                walk(child, numaid, child)
            elif child.tag == 'gpu' and pci is not None:
                links = child.findall('nvlink')
                view[pci.get('busid')] = (numaid, pci.get('link_width'), sum(int(link.get('count', '0')) for link in links),
                                          sorted((link.get('target'), link.get('tclass')) for link in links))
    walk(root, None, None)
    return view


def compare_nccl(default_log, topo_log, default_dump, topo_dump, topo_file):
    report = Report()
    with open(default_log, encoding='utf-8', errors='replace') as handle:
        default_text = handle.read()
    with open(topo_log, encoding='utf-8', errors='replace') as handle:
        topo_text = handle.read()
    report.check('Loading topology file %s' % topo_file in topo_text, 'NCCL logged "Loading topology file %s"' % topo_file)
    for needle in FORBIDDEN_IN_TOPO_LOG:
        hits = [line for line in topo_text.splitlines() if needle in line]
        report.check(not hits, 'run with the file: no "%s"%s' % (needle, (' (%s)' % hits[0].strip()[:160]) if hits else ''))
    default_warnings = [line for line in default_text.splitlines() if 'NCCL WARN' in line]
    report.line('INFO', 'default run: %d NCCL WARN line(s)' % len(default_warnings))
    views = []
    for label, path in (('default', default_dump), ('topo', topo_dump)):
        try:
            views.append(dump_view(path))
        except (OSError, ElementTree.ParseError) as error:
            report.line('FAIL', '%s dump unreadable: %s' % (label, error))
            views.append(None)
    if None not in views:
        default_view, topo_view = views
        report.check(sorted(default_view) == sorted(topo_view) and default_view,
                     'dumps list the same GPUs: %s' % ' '.join(sorted(topo_view)))
        for busid in sorted(set(default_view) & set(topo_view)):
            numaid_default, width_default, links_default, targets_default = default_view[busid]
            numaid_topo, width_topo, links_topo, targets_topo = topo_view[busid]
            report.check(links_default == links_topo and targets_default == targets_topo,
                         '%s NVLink count %s -> %s %s' % (busid, links_default, links_topo, targets_topo))
            report.check(numaid_topo is not None and int(numaid_topo) >= 0, '%s numaid %s -> %s' % (busid, numaid_default, numaid_topo))
            report.check(width_topo not in (None, '0'), '%s link_width %s -> %s' % (busid, width_default, width_topo))
    default_bw, topo_bw = busbw(default_text), busbw(topo_text)
    for size in RATIO_SIZES_MIB:
        if size in default_bw and size in topo_bw and default_bw[size] > 0:
            ratio = topo_bw[size] / default_bw[size]
            report.check(ratio >= MIN_BUSBW_RATIO, 'busbw %d MiB: default %.1f GB/s, with file %.1f GB/s, ratio %.3f' % (
                size, default_bw[size], topo_bw[size], ratio))
        else:
            report.line('FAIL', 'busbw %d MiB missing (default %s, with file %s)' % (size, default_bw.get(size), topo_bw.get(size)))
    return report


def main(argv):
    if len(argv) == 4 and argv[1] == 'facts':
        return 1 if compare_facts(argv[2], argv[3]).failed else 0
    if len(argv) == 7 and argv[1] == 'nccl':
        return 1 if compare_nccl(*argv[2:]).failed else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
