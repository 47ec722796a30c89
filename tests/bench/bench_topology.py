# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU time of probing each recorded topology (target < 0.3 s without nvidia-smi) and of rendering its NCCL XML.

Run from the repository root:  python tests/bench/bench_topology.py [repeats]
Prints figures only; never asserts (CONTRIBUTING: benchmarks print, tests assert).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'collections'))

from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner  # noqa: E402
from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_xml import build_topology_xml  # noqa: E402
from ansible_collections.trainstack.cluster.plugins.module_utils._nvsmi_topo import parse_topo  # noqa: E402
from ansible_collections.trainstack.cluster.plugins.module_utils._probe_record import RecordingTree, write_record  # noqa: E402
from ansible_collections.trainstack.cluster.plugins.module_utils._topology import SysfsTree, collect_topology  # noqa: E402

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'topology')
TOPO_CORPUS = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'nvidia_smi_topo')


def load_make_fixtures():
    spec = importlib.util.spec_from_file_location('make_fixtures', os.path.join(FIXTURES, 'make_fixtures.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_seconds(function, repeats):
    start = time.process_time()
    for _repeat in range(repeats):
        result = function()
    return (time.process_time() - start) / repeats, result


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    make_fixtures = load_make_fixtures()
    print('%-14s %12s %12s %6s %6s' % ('case', 'probe_cpu_s', 'xml_cpu_s', 'gpus', 'hcas'))
    with tempfile.TemporaryDirectory() as scratch:
        for case in sorted(make_fixtures.CASES):
            root = make_fixtures.materialize(case, os.path.join(scratch, case))
            probe, facts = cpu_seconds(lambda: collect_topology(SysfsTree(root), CommandRunner(root)), repeats)
            render, _xml = cpu_seconds(lambda: build_topology_xml(facts), repeats)
            print('%-14s %12.4f %12.4f %6d %6d' % (case, probe, render, len(facts['gpus']), len(facts['hcas'])))
            if case == 'hgx_h100':
                def probe_and_record():
                    tree, commands = RecordingTree(root), CommandRunner(root)
                    collect_topology(tree, commands)
                    return write_record(tree, commands.outputs(), os.path.join(scratch, 'record.tar.gz'))
                recording, members = cpu_seconds(probe_and_record, repeats)
                print('%-14s %12.4f %12s %6s %6s  (probe + record tarball, %d members)' % ('hgx_h100+rec', recording, '-', '-', '-', members))
    texts = {}
    for case in sorted(os.listdir(TOPO_CORPUS)):
        path = os.path.join(TOPO_CORPUS, case, 'topo-m.txt')
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as handle:
                texts[case] = handle.read()
    parse_times = {case: cpu_seconds(lambda text=text: parse_topo(text), repeats)[0] for case, text in texts.items()}
    slowest = max(parse_times, key=parse_times.get)
    print('topo -m parser: %d real outputs, slowest %.4f s (%s), mean %.4f s' % (
        len(texts), parse_times[slowest], slowest, sum(parse_times.values()) / max(1, len(texts))))
    if os.path.isdir('/sys/bus/pci/devices'):
        # This machine's own sysfs, commands live (nvidia-smi is absent on CI machines).
        probe, facts = cpu_seconds(lambda: collect_topology(SysfsTree('/'), CommandRunner('/')), max(1, repeats // 4))
        print('%-14s %12.4f %12s %6d %6d' % ('live-host', probe, '-', len(facts['gpus']), len(facts['hcas'])))


if __name__ == '__main__':
    main()
