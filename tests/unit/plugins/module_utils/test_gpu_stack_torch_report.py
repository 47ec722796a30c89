# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""torch's own report in gpu_stack_facts (option python): a recorded report and a live interpreter."""

from __future__ import annotations

import os
import sys

from ansible_collections.trainstack.cluster.plugins.module_utils import _gpu_stack
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import CommandRunner

UNIT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(UNIT_DIR, 'fixtures', 'torch_report')


def test_parse_recorded_cpu_report():
    with open(os.path.join(FIXTURES, 'torch-2.13.0-cpu-debian12.txt'), encoding='utf-8') as handle:
        report = _gpu_stack.parse_torch_report(handle.read())
    assert report == {'site_dirs': ['/tmp/e-venv/lib/python3.11/site-packages'], 'version': '2.13.0+cpu',
                      'cuda_runtime': None, 'cuda_available': False, 'device_count': 0, 'nccl_version': None,
                      'distributed': True, 'backends': ['gloo']}


def test_parse_garbage():
    assert _gpu_stack.parse_torch_report('') is None
    assert _gpu_stack.parse_torch_report('{not json') is None
    assert _gpu_stack.parse_torch_report('warning\n[1, 2]') is None


def test_probe_with_an_interpreter_without_torch(tmp_path):
    """This interpreter (no torch in the test environment) reports an import error, never raises."""
    probe = _gpu_stack.GpuStackProbe(str(tmp_path), CommandRunner('/', 30), 'nvidia-smi-absent', [], None,
                                     python=sys.executable)
    try:
        import torch  # noqa: F401 pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        report = probe.torch_report()
        assert report['python'] == sys.executable
        assert report['import_error'].startswith('ModuleNotFoundError')
    else:
        assert probe.torch_report()['version']


def test_probe_without_interpreter_adds_nothing(tmp_path):
    probe = _gpu_stack.GpuStackProbe(str(tmp_path), CommandRunner('/', 30), 'nvidia-smi-absent', [], None)
    assert probe.torch_report() == {}
