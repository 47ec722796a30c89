# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/device/run without a GPU: every check is a skip with the reason, in the report and the summary; a check
that cannot run on a GPU host says why (exit 77) and is a skip too; never a pass. The checks themselves need a GPU
host (docs/benchmarks/h200-nccl-tests/ holds a run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from playbook_support import ROOT

RUN = os.path.join(ROOT, 'tests', 'device', 'run')


def device_run(tmp_path, *args, smi=None):
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop('NVIDIA_SMI', None)
    env['PATH'] = '/usr/bin:/bin'
    if smi is not None:
        fake = tmp_path / 'nvidia-smi'
        fake.write_text('#!/bin/sh\n' + smi)
        fake.chmod(0o755)
        env['NVIDIA_SMI'] = str(fake)
    out = tmp_path / 'results'
    proc = subprocess.run([RUN, '--out', str(out)] + list(args), env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    report = json.loads((out / 'device-report.json').read_text()) if (out / 'device-report.json').exists() else None
    return proc, report, out


@pytest.mark.skipif(any(os.path.exists(os.path.join(d, 'nvidia-smi')) for d in ('/usr/bin', '/bin')),
                    reason='this machine has an nvidia-smi in /usr/bin or /bin')
def test_without_nvidia_smi_every_default_check_is_skipped_with_the_reason(tmp_path):
    proc, report, out = device_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [check['check'] for check in report['checks']] == ['probe', 'gpu_stack', 'record', 'pytorch', 'nccl_tests', 'validate', 'health']
    assert {check['status'] for check in report['checks']} == {'skip'}
    assert report['counts'] == {'pass': 0, 'fail': 0, 'skip': 7}
    assert report['checks'][0]['reason'] == 'no GPU: nvidia-smi not found (set NVIDIA_SMI)'
    assert (out / 'summary.txt').read_text().splitlines()[-1] == 'device: 0 passed, 0 failed, 7 skipped'


def test_an_nvidia_smi_that_lists_no_gpu_skips_the_checks_asked_for(tmp_path):
    proc, report, _out = device_run(tmp_path, 'probe', 'gres', smi='exit 0\n')
    assert proc.returncode == 0, proc.stderr
    assert [(check['check'], check['status'], check['reason']) for check in report['checks']] == [
        ('probe', 'skip', 'no GPU: %s -L lists none' % (tmp_path / 'nvidia-smi')),
        ('gres', 'skip', 'no GPU: %s -L lists none' % (tmp_path / 'nvidia-smi'))]


def test_a_check_that_cannot_run_on_a_gpu_host_says_why_and_is_a_skip(tmp_path):
    # gres needs a Slurm build (SLURM_PREFIX): without one it exits 77 with its reason.
    env_free = 'echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)"\n'
    proc, report, out = device_run(tmp_path, 'gres', smi=env_free)
    assert proc.returncode == 0, proc.stderr
    gres = report['checks'][0]
    assert (gres['status'], gres['exit_status']) == ('skip', 77)
    assert gres['reason'] == 'SLURM_PREFIX (a Slurm build with sbin/slurmd) is not set'
    assert report['blocker'] is None and report['gpus'] == [env_free.split('"')[1]]


def test_an_unknown_check_is_refused(tmp_path):
    proc, report, _out = device_run(tmp_path, 'nope')
    assert proc.returncode == 2 and 'unknown check: nope' in proc.stderr and report is None
