# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/device/gpu_validate_report.py against what the real 2 x H200 host recorded (device probe)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from topology_support import NCCL_XML_GOLDEN, TOPOLOGY_FIXTURES, UNIT_DIR, make_fixtures, recorded_root

H200 = os.path.join(TOPOLOGY_FIXTURES, 'h200_vm')
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(UNIT_DIR)), 'tests', 'device', 'gpu_validate_report.py')


def _load_report():
    spec = importlib.util.spec_from_file_location('gpu_validate_report', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load_report()


def lines(capsys):
    return capsys.readouterr().out.splitlines()


def test_busbw_of_the_recorded_runs():
    with open(os.path.join(H200, 'allreduce-default.txt'), encoding='utf-8') as handle:
        assert report.busbw(handle.read()) == {1: 22.5, 8: 172.7, 64: 264.7, 256: 291.5, 1024: 327.2, 4096: 343.3}


def test_dump_view_shows_what_the_generated_file_improves():
    assert report.dump_view(os.path.join(H200, 'nccl-topo-dump.xml')) == {
        '0000:00:06.0': ('-1', '0', 18, [('fffffff:ff:ff.0', '0x068000')]),
        '0000:00:07.0': ('-1', '0', 18, [('fffffff:ff:ff.0', '0x068000')]),
    }
    assert report.dump_view(os.path.join(NCCL_XML_GOLDEN, 'h200_vm.xml')) == {
        '0000:00:06.0': ('0', '16', 18, [('fffffff:ff:ff.0', '0x068000')]),
        '0000:00:07.0': ('0', '16', 18, [('fffffff:ff:ff.0', '0x068000')]),
    }


def test_nccl_checks_on_the_recorded_runs(capsys):
    """The probe's second run loaded NCCL's own dump: file loaded, no warning; its dump stands in for ours."""
    result = report.compare_nccl(os.path.join(H200, 'allreduce-default.txt'), os.path.join(H200, 'allreduce-topofile.txt'),
                                 os.path.join(H200, 'nccl-topo-dump.xml'), os.path.join(NCCL_XML_GOLDEN, 'h200_vm.xml'),
                                 '$OUT/nccl-topo-dump.xml')
    assert lines(capsys) == [
        'OK   NCCL logged "Loading topology file $OUT/nccl-topo-dump.xml"',
        'OK   run with the file: no "NCCL WARN"',
        'OK   run with the file: no "KV Convert"',
        'OK   run with the file: no "Ignoring element"',
        'OK   run with the file: no "Could not open XML topology file"',
        'INFO default run: 0 NCCL WARN line(s)',
        'OK   dumps list the same GPUs: 0000:00:06.0 0000:00:07.0',
        "OK   0000:00:06.0 NVLink count 18 -> 18 [('fffffff:ff:ff.0', '0x068000')]",
        'OK   0000:00:06.0 numaid -1 -> 0',
        'OK   0000:00:06.0 link_width 0 -> 16',
        "OK   0000:00:07.0 NVLink count 18 -> 18 [('fffffff:ff:ff.0', '0x068000')]",
        'OK   0000:00:07.0 numaid -1 -> 0',
        'OK   0000:00:07.0 link_width 0 -> 16',
        'OK   busbw 1024 MiB: default 327.2 GB/s, with file 326.2 GB/s, ratio 0.997',
        'FAIL busbw 2048 MiB missing (default None, with file None)',  # probe.sh did not run 2 GiB
        'OK   busbw 4096 MiB: default 343.3 GB/s, with file 344.7 GB/s, ratio 1.004',
    ]
    assert result.failed is True


def test_nccl_checks_fail_on_a_warning(tmp_path, capsys):
    log = tmp_path / 'topo.log'
    log.write_text('vm:1:1 [0] NCCL INFO Loading topology file /tmp/t.xml\nvm:1:1 [0] NCCL WARN Could not find real path\n'
                   'size_MiB=1024 time_us=1 algbw_GBs=300.0 busbw_GBs=300.0\n')
    dump = os.path.join(H200, 'nccl-topo-dump.xml')
    result = report.compare_nccl(os.path.join(H200, 'allreduce-default.txt'), str(log), dump, dump, '/tmp/t.xml')
    output = lines(capsys)
    assert result.failed is True
    assert 'FAIL run with the file: no "NCCL WARN" (vm:1:1 [0] NCCL WARN Could not find real path)' in output
    assert 'FAIL 0000:00:06.0 numaid -1 -> -1' in output
    assert 'FAIL busbw 1024 MiB: default 327.2 GB/s, with file 300.0 GB/s, ratio 0.917' in output


@pytest.fixture()
def h200_smi(tmp_path):
    with open(os.path.join(H200, 'probe.txt'), encoding='utf-8') as handle:
        probe = make_fixtures.probe_sections(handle.read())
    query = '0, 00000000:00:06.0, GPU-57481031-c6e7-55ea-899c-c8d97c5043db, NVIDIA H200, 9.0, 143771\n' \
            '1, 00000000:00:07.0, GPU-9ee8f679-82be-17d4-4846-e15b9cd1f3c0, NVIDIA H200, 9.0, 143771\n'
    path = tmp_path / 'nvidia-smi.txt'
    path.write_text('## query\n' + query + '## topo -m\n' + probe['topo -m'] + '## nvlink -s\n' + probe['nvlink -s'])
    return str(path)


def test_facts_checks_pass_on_the_recorded_host(h200_smi, tmp_path, capsys):
    root = recorded_root('h200_vm', tmp_path / 'root')
    result = report.compare_facts(os.path.join(H200, 'expected_facts.json'), h200_smi, sysfs=os.path.join(root, 'sys'))
    output = lines(capsys)
    assert result.failed is False, output
    assert output[0] == 'OK   GPU count: facts 2, nvidia-smi 2'
    assert 'OK   GPU1 max_link_width facts 16 sysfs 16' in output and 'OK   GPU0 numa_node facts -1 sysfs -1' in output
    assert 'OK   topo -m cells NV18 match facts matrix (nvidia-smi)' in output


def test_facts_checks_catch_a_wrong_busid(h200_smi, tmp_path, capsys):
    facts = tmp_path / 'facts.json'
    with open(os.path.join(H200, 'expected_facts.json'), encoding='utf-8') as handle:
        facts.write_text(handle.read().replace('"busid": "0000:00:07.0"', '"busid": "0000:00:08.0"'))
    assert report.compare_facts(str(facts), h200_smi, sysfs=str(tmp_path)).failed is True
    assert 'FAIL GPU1 busid facts 0000:00:08.0 nvidia-smi 0000:00:07.0' in lines(capsys)
