# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU software stack checks against the compatibility matrix (controller side, pure).

The matrix is data (data/gpu_compatibility.yml); these functions only apply it. A stack is a dict
keyed by the inventory variable names (nvidia_driver_branch, cuda_version, nccl_version, ...), so
every message names the variables that conflict.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_NCCL = re.compile(r"^(?P<nccl>[0-9]+\.[0-9]+\.[0-9]+)(-[0-9]+)?(\+cuda(?P<cuda>[0-9]+\.[0-9]+))?([-~+].*)?$")
_INDEX = re.compile(r"^cu[0-9]{3}$")
MODULE_TYPES = ("auto", "open", "proprietary")


def _error(message):
    raise AnsibleFilterError("gpu_stack: " + message)


def version_tuple(value):
    """'12.8' -> (12, 8); numbers and strings alike; None for an empty or malformed value."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not _VERSION.match(text):
        return None
    return tuple(int(part) for part in text.split("."))


def _text(value):
    return "" if value is None else str(value).strip()


def driver_branch(value):
    """The branch (first number) of a driver branch or version: '570.133.20' -> 570, 535 -> 535."""
    parsed = version_tuple(value)
    return parsed[0] if parsed else None


def nccl_parts(value):
    """'2.26.2-1+cuda12.8' -> ('2.26.2', '12.8'); the CUDA part is None where the version has none."""
    match = _NCCL.match(_text(value))
    if not match:
        return None, None
    return match.group("nccl"), match.group("cuda")


def _major_minor(value):
    parsed = version_tuple(value)
    if not parsed:
        return None
    return "%d.%d" % (parsed[0], parsed[1] if len(parsed) > 1 else 0)


def _check_matrix(matrix):
    if not isinstance(matrix, dict) or "cuda_min_driver" not in matrix:
        _error("the compatibility matrix must be a dict with cuda_min_driver (data/gpu_compatibility.yml)")


def architecture(matrix, sm):
    """The matrix entry for an SM (exact, else the newest older one of the same major), or None."""
    try:
        sm = int(sm)
    except (TypeError, ValueError):
        return None
    candidates = [arch for arch in matrix.get("architectures") or [] if int(arch["sm"]) <= sm
                  and int(arch["sm"]) // 10 == sm // 10]
    return max(candidates, key=lambda arch: int(arch["sm"])) if candidates else None


def kernel_module_type(requested, gpus, branch, matrix):
    """Resolve 'auto' to 'open' or 'proprietary' from the GPUs (their SM) and the driver branch."""
    requested = _text(requested) or "auto"
    if requested != "auto":
        return requested
    _check_matrix(matrix)
    archs = [architecture(matrix, gpu.get("sm")) for gpu in gpus or []]
    kinds = set(arch.get("open_kernel_modules") for arch in archs if arch)
    if "unsupported" in kinds:
        return "proprietary"
    if kinds & {"required", "recommended"}:
        return "open"
    branch = driver_branch(branch)
    if branch is not None and branch >= int(matrix.get("open_kernel_modules_default_from_branch", 560)):
        return "open"
    return "proprietary"


def _label(labels, key):
    return (labels or {}).get(key, key)


def gpu_stack_conflicts(stack, matrix, labels=None):
    """Messages for every conflict in a GPU stack; an empty list when it is consistent.

    ``stack`` keys (all optional): nvidia_driver_branch, nvidia_driver_version, cuda_version,
    nccl_version, cuda_cudnn_version, pytorch_cuda_index, nvidia_driver_kernel_module_type and gpus
    (list of dicts with ``sm`` and ``name``, as topology facts give them). ``labels`` renames keys in
    the messages (e.g. to say "installed driver" for a detected stack).
    """
    _check_matrix(matrix)
    if not isinstance(stack, dict):
        _error("the stack must be a dict of variable name -> value, got %s" % type(stack).__name__)

    def name(key):
        return _label(labels, key)

    conflicts = []

    branch_key = "nvidia_driver_branch"
    branch = driver_branch(stack.get("nvidia_driver_branch"))
    exact = _text(stack.get("nvidia_driver_version"))
    if _text(stack.get("nvidia_driver_branch")) and branch is None:
        conflicts.append("%s must be a driver branch such as 570, got '%s'" % (name(branch_key), stack.get("nvidia_driver_branch")))
    if exact:
        if version_tuple(exact.partition("-")[0]) is None:
            conflicts.append("%s must look like 570.133.20, got '%s'" % (name("nvidia_driver_version"), exact))
        elif branch is not None and driver_branch(exact.partition("-")[0]) != branch:
            conflicts.append("%s %s is not on %s %s" % (name("nvidia_driver_version"), exact, name(branch_key), branch))
        elif branch is None:
            branch, branch_key = driver_branch(exact.partition("-")[0]), "nvidia_driver_version"
    driver_full = version_tuple(exact.partition("-")[0]) if exact else None

    def driver_too_old(need):
        """True where the pinned driver is older than need {branch, version}."""
        if branch is None:
            return False
        if branch != int(need["branch"]) or driver_full is None:
            return branch < int(need["branch"])
        return driver_full < version_tuple(need["version"])

    cuda_text = _text(stack.get("cuda_version"))
    cuda = _major_minor(cuda_text) if cuda_text else None
    if cuda_text and (cuda is None or not re.match(r"^[0-9]+\.[0-9]+$", cuda_text)):
        conflicts.append("%s must be CUDA major.minor such as 12.8, got '%s'" % (name("cuda_version"), cuda_text))
        cuda = None
    if cuda:
        need = matrix["cuda_min_driver"].get(cuda)
        if need is None:
            known = ", ".join(sorted(matrix["cuda_min_driver"], key=version_tuple))
            conflicts.append("%s %s is not in the compatibility matrix (known: %s)" % (name("cuda_version"), cuda, known))
        elif driver_too_old(need):
            conflicts.append("%s %s needs a driver branch >= %s (%s or newer), %s is %s"
                             % (name("cuda_version"), cuda, need["branch"], need["version"], name(branch_key),
                                exact or branch))
    cuda_major = version_tuple(cuda)[0] if cuda else None

    nccl_text = _text(stack.get("nccl_version"))
    if nccl_text:
        nccl, nccl_cuda = nccl_parts(nccl_text)
        if nccl is None:
            conflicts.append("%s must look like 2.26.2-1+cuda12.8, got '%s'" % (name("nccl_version"), nccl_text))
        elif nccl_cuda:
            if cuda and version_tuple(nccl_cuda)[0] != cuda_major:
                conflicts.append("%s is built for CUDA %s, %s is %s (CUDA majors differ)"
                                 % (name("nccl_version"), nccl_cuda, name("cuda_version"), cuda))
            elif cuda and version_tuple(nccl_cuda) > version_tuple(cuda):
                conflicts.append("%s is built for CUDA %s, newer than %s %s: pick the +cuda%s build"
                                 % (name("nccl_version"), nccl_cuda, name("cuda_version"), cuda, cuda))
            compat = (matrix.get("cuda_minor_compat_min_driver") or {}).get(str(version_tuple(nccl_cuda)[0]))
            if compat and driver_too_old(compat):
                conflicts.append("%s (CUDA %s) needs a driver branch >= %s, %s is %s"
                                 % (name("nccl_version"), nccl_cuda, compat["branch"], name(branch_key), exact or branch))
        if nccl:
            for gpu in stack.get("gpus") or []:
                arch = architecture(matrix, gpu.get("sm"))
                minimum = (matrix.get("nccl_min_for_sm") or {}).get(str(arch["sm"])) if arch else None
                if minimum and version_tuple(nccl) < version_tuple(minimum):
                    conflicts.append("%s %s is older than %s, the first NCCL for %s GPUs (%s)"
                                     % (name("nccl_version"), nccl, minimum, arch["name"], gpu.get("name", "sm %s" % gpu.get("sm"))))
                    break

    cudnn_text = _text(stack.get("cuda_cudnn_version"))
    if cudnn_text:
        cudnn = _major_minor(cudnn_text.partition("-")[0])
        majors = (matrix.get("cudnn") or {}).get(cudnn) if cudnn else None
        if cudnn is None:
            conflicts.append("%s must look like 9.8.0.87-1, got '%s'" % (name("cuda_cudnn_version"), cudnn_text))
        elif majors is None:
            conflicts.append("%s %s is not in the compatibility matrix" % (name("cuda_cudnn_version"), cudnn))
        elif cuda and cuda_major not in [int(major) for major in majors]:
            conflicts.append("%s %s is built for CUDA %s, %s is %s"
                             % (name("cuda_cudnn_version"), cudnn, "/".join(str(m) for m in majors) + ".x",
                                name("cuda_version"), cuda))

    index = _text(stack.get("pytorch_cuda_index"))
    # cpu: the CPU wheels (documented for the pytorch role) ask nothing of CUDA or the driver.
    if index and index != "cpu":
        index_cuda = (matrix.get("pytorch_indexes") or {}).get(index)
        if not _INDEX.match(index) or index_cuda is None:
            known = ", ".join(sorted(matrix.get("pytorch_indexes") or {}))
            conflicts.append("%s '%s' is not a known PyTorch wheel index (%s)" % (name("pytorch_cuda_index"), index, known))
        else:
            if cuda and version_tuple(index_cuda)[0] != cuda_major:
                conflicts.append("%s %s bundles CUDA %s, %s is %s (CUDA majors differ)"
                                 % (name("pytorch_cuda_index"), index, index_cuda, name("cuda_version"), cuda))
            compat = (matrix.get("cuda_minor_compat_min_driver") or {}).get(str(version_tuple(index_cuda)[0]))
            if compat and driver_too_old(compat):
                conflicts.append("%s %s (CUDA %s) needs a driver branch >= %s, %s is %s"
                                 % (name("pytorch_cuda_index"), index, index_cuda, compat["branch"], name(branch_key),
                                    exact or branch))

    module_type = _text(stack.get("nvidia_driver_kernel_module_type")) or "auto"
    if module_type not in MODULE_TYPES:
        conflicts.append("%s must be one of %s, got '%s'" % (name("nvidia_driver_kernel_module_type"), ", ".join(MODULE_TYPES), module_type))
    seen = set()
    for gpu in stack.get("gpus") or []:
        arch = architecture(matrix, gpu.get("sm"))
        if arch is None or arch["sm"] in seen:
            continue
        seen.add(arch["sm"])
        label = "%s GPUs (%s, sm %s)" % (arch["name"], gpu.get("name") or "GPU", gpu.get("sm"))
        if branch is not None and branch < int(arch["min_branch"]):
            conflicts.append("%s need a driver branch >= %s, %s is %s" % (label, arch["min_branch"], name(branch_key), exact or branch))
        if branch is not None and arch.get("max_branch") and branch > int(arch["max_branch"]):
            conflicts.append("%s are not supported after driver branch %s, %s is %s"
                             % (label, arch["max_branch"], name(branch_key), exact or branch))
        if cuda and version_tuple(cuda) < version_tuple(arch["min_cuda"]):
            conflicts.append("%s need %s >= %s, got %s" % (label, name("cuda_version"), arch["min_cuda"], cuda))
        if cuda and arch.get("max_cuda") and version_tuple(cuda) > version_tuple(arch["max_cuda"]):
            conflicts.append("%s cannot be targeted by CUDA %s (last: %s), %s is %s"
                             % (label, cuda, arch["max_cuda"], name("cuda_version"), cuda))
        support = arch.get("open_kernel_modules")
        if support == "required" and module_type == "proprietary":
            conflicts.append("%s require the open kernel modules, %s is proprietary"
                             % (label, name("nvidia_driver_kernel_module_type")))
        if support == "unsupported" and module_type == "open":
            conflicts.append("%s are not supported by the open kernel modules, %s is open"
                             % (label, name("nvidia_driver_kernel_module_type")))
    return conflicts


def gpu_cuda_min_driver(cuda_version, matrix):
    """{branch, version} of the oldest driver for a CUDA major.minor, or None when unknown."""
    _check_matrix(matrix)
    return matrix["cuda_min_driver"].get(_major_minor(cuda_version) or "")


class FilterModule:
    """GPU stack compatibility filters."""

    def filters(self):
        return {
            "gpu_stack_conflicts": gpu_stack_conflicts,
            "gpu_kernel_module_type": kernel_module_type,
            "gpu_cuda_min_driver": gpu_cuda_min_driver,
        }
