# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bad GPU stack inventory stops site.yml in preflight, before any host changes, naming the variables.

Runs the real site.yml in check mode against this machine (connection local) with bad extra variables,
and reads the JSON callback's account of what ran (as test_bad_input.py does).
"""

from __future__ import annotations

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, failures_and_changes, run_site

# (id, extra vars, strings that must all appear in one failed result)
CASES = [
    ("cuda-12.8-driver-535", {"nvidia_driver_branch": "535", "cuda_version": "12.8"},
     ["cuda_version 12.8 needs a driver branch >= 570", "nvidia_driver_branch is 535"]),
    ("cuda-13-nccl-cuda12", {"cuda_version": "13.0", "nccl_version": "2.26.2-1+cuda12.8"},
     ["nccl_version is built for CUDA 12.8", "cuda_version is 13.0"]),
    ("torch-index-vs-cuda", {"cuda_version": "12.8", "pytorch_cuda_index": "cu118"},
     ["pytorch_cuda_index cu118", "cuda_version is 12.8"]),
    ("cudnn-vs-cuda", {"cuda_version": "13.0", "cuda_cudnn_manage": True, "cuda_cudnn_version": "9.8.0.87-1"},
     ["cuda_cudnn_version 9.8", "cuda_version is 13.0"]),
    ("driver-version-off-branch", {"nvidia_driver_branch": "570", "nvidia_driver_version": "580.95.05"},
     ["nvidia_driver_version 580.95.05 is not on nvidia_driver_branch 570"]),
    # refused under the name the user wrote (preflight's check of the shared switches)
    ("source-unknown", {"trainstack_gpu_source": "nvidia"}, ["trainstack_gpu_source must be cuda_repo, distribution, local or preinstalled", "nvidia"]),
    ("local-without-url", {"trainstack_gpu_source": "local"}, ["trainstack_gpu_source is local: trainstack_gpu_local_repo_url must be"]),
    ("cuda-source-unknown", {"cuda_source": "conda"}, ["cuda_source", "conda"]),
    ("module-type", {"nvidia_driver_kernel_module_type": "closed"}, ["nvidia_driver_kernel_module_type"]),
    ("fabricmanager-bool", {"nvidia_driver_fabricmanager": "maybe"}, ["nvidia_driver_fabricmanager"]),
    ("cuda-format", {"cuda_version": "12"}, ["cuda_version"]),
    ("nccl-format", {"nccl_version": "2.26"}, ["nccl_version"]),
    ("reboot-type", {"nvidia_driver_reboot": "sometimes"}, ["nvidia_driver_reboot"]),
]


pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")


@pytest.mark.parametrize(("extra_vars", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_gpu_stack_stops_in_preflight(extra_vars, expected):
    returncode, report, stderr = run_site(extra_vars, "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert failed, "no task failed"
    assert all(play.startswith("Preflight") for play, text in failed), failed
    assert any(all(part in text for part in expected) for play, text in failed), failed
    assert changed == []
    assert plays == [plays[0]] and plays[0].startswith("Preflight"), plays


def test_distribution_source_needs_the_distributions_branch():
    """This Debian host packages one driver branch: the default 580 is refused, naming the variable."""
    returncode, report, stderr = run_site({"trainstack_gpu_source": "distribution", "nccl_packages_manage": False},
                                          "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    if not any("packages driver" in text for play, text in failed):
        pytest.skip("this machine's distribution does not pin one driver branch: %s" % failed)
    assert returncode != 0 and changed == []
    assert any("nvidia_driver_branch is 580" in text for play, text in failed), failed


def test_consistent_stack_passes_preflight():
    returncode, report, stderr = run_site({"trainstack_gpu_source": "cuda_repo", "nvidia_driver_branch": "580",
                                           "cuda_version": "12.8", "nccl_version": "2.26.2-1+cuda12.8",
                                           "pytorch_cuda_index": "cu128", "cuda_cudnn_manage": True,
                                           "base_chrony_servers": ["10.0.0.1"]}, "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    assert (returncode, failed, changed) == (0, [], []), (stderr, failed)
