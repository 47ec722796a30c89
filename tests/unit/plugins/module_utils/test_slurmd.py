# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmd -C parsing on published outputs, and the drain rules of a NodeName line against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.trainstack.cluster.plugins.filter.slurm_nodes import slurm_node_hardware_check
from ansible_collections.trainstack.cluster.plugins.module_utils._slurmd import compare_node, node_resources, parse_slurmd_C

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures', 'slurmd_C')
CASES = sorted(name for name in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, name)))


def _read(case, name):
    with open(os.path.join(FIXTURES, case, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('case', CASES)
def test_parse_published_output(case):
    expected = json.loads(_read(case, 'expected.json'))
    parsed = parse_slurmd_C(_read(case, 'output.txt'))
    assert {key: parsed[key] for key in expected} == expected
    assert parsed['line'].startswith('NodeName=') and 'UpTime' not in parsed['line']


@pytest.mark.parametrize('text', ['', 'UpTime=0-00:01:00\n', 'slurmd: error: Unable to determine this slurmd\'s NodeName\n'])
def test_no_node_line_is_an_error(text):
    with pytest.raises(ValueError):
        parse_slurmd_C(text)


def test_configured_line_defaults():
    assert node_resources('NodeName=a Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=100 State=UNKNOWN') == {
        'name': 'a', 'cpus': 32, 'boards': 1, 'sockets': 2, 'cores_per_socket': 8, 'threads_per_core': 2, 'real_memory': 100}
    # Boards=2 SocketsPerBoard=2: 4 sockets in all.
    assert node_resources('NodeName=b CPUs=8 Boards=2 SocketsPerBoard=2 CoresPerSocket=1 ThreadsPerCore=2')['sockets'] == 4


# slurmd -C of the 96-CPU server: 2 sockets x 24 cores x 2 threads, RealMemory=385333.
HW = _read('cuhk_96cpu', 'output.txt')


@pytest.mark.parametrize(('line', 'reasons'), [
    # The same values: nothing to say.
    ('NodeName=n CPUs=96 Sockets=2 CoresPerSocket=24 ThreadsPerCore=2 RealMemory=385333', []),
    # Less memory configured than present: Slurm accepts it.
    ('NodeName=n CPUs=96 Sockets=2 CoresPerSocket=24 ThreadsPerCore=2 RealMemory=366000', []),
    # One MiB more than slurmd finds: slurmctld drains with "Low RealMemory" (22.05 fixture 22.05-multiline).
    ('NodeName=n CPUs=96 Sockets=2 CoresPerSocket=24 ThreadsPerCore=2 RealMemory=385334', ['Low RealMemory']),
    # SMT counted twice: more CPUs and threads than the hardware has.
    ('NodeName=n CPUs=192 Sockets=2 CoresPerSocket=24 ThreadsPerCore=4 RealMemory=1000', ['Low CPUs', 'Low socket*core*thread count']),
    # Fewer CPUs (SMT off in the configuration): accepted.
    ('NodeName=n CPUs=48 Sockets=2 CoresPerSocket=24 ThreadsPerCore=1 RealMemory=1000', []),
    # Same total, other shape: accepted (slurmd only logs the difference).
    ('NodeName=n CPUs=96 Sockets=1 CoresPerSocket=48 ThreadsPerCore=2 RealMemory=1000', []),
])
def test_drain_rules(line, reasons):
    fatal, _notes = compare_node(line, HW)
    assert sorted(fatal) == reasons


def test_harmless_differences_are_listed():
    _fatal, notes = compare_node('NodeName=n CPUs=96 Sockets=1 CoresPerSocket=48 ThreadsPerCore=2 RealMemory=1000', HW)
    assert notes == ['sockets: 1 configured, 2 found', 'cores_per_socket: 48 configured, 24 found']


def test_filter_reports_both_lines():
    result = slurm_node_hardware_check('NodeName=n CPUs=32 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=257000',
                                       _read('interleaved_2s', 'output.txt'))
    assert result['drains'] and result['reasons'] == ['Low RealMemory']
    assert result['problems'] == ['RealMemory=257000 MiB configured, slurmd -C finds 24105 MiB']
    assert result['slurmd_line'] == 'NodeName=vm CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=24105'


def test_live_slurmd_on_this_host():
    """Where slurmd is installed, its own output parses, and matches itself as a configuration."""
    slurmd = shutil.which('slurmd') or ('/usr/sbin/slurmd' if os.path.exists('/usr/sbin/slurmd') else None)
    if not slurmd:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail('slurmd is not installed (.ci/run and make test install Debian package slurmd)')
        pytest.skip('slurmd is not installed')
    output = subprocess.run([slurmd, '-C'], capture_output=True, text=True, check=True, timeout=60).stdout
    parsed = parse_slurmd_C(output)
    assert parsed['cpus'] == os.cpu_count()
    assert compare_node(parsed['line'], parsed) == ({}, [])
