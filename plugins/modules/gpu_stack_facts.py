#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_stack_facts
short_description: Report the installed NVIDIA driver, CUDA, NCCL, cuDNN and PyTorch versions
description:
  - Reads C(nvidia-smi), C(/proc/driver/nvidia/version), C(nvcc --version) (or C(version.json) of the CUDA home),
    C(nccl.h) (or C(ldconfig -p), or an C(nvidia-nccl-cu*) wheel), C(cudnn_version.h) and the C(torch) and C(nvidia-*)
    wheels beside the Python interpreter that runs the module, and returns the C(trainstack_gpu_stack) fact.
  - Changes nothing. Every source is optional; what is missing is V(null), the module never fails because of it.
  - With O(root) pointing at a recorded tree the module reads files under it and replays command outputs from
    C(<root>/.commands/<key>.txt); keys are C(nvidia-smi_query), C(nvidia-smi), C(nvcc_version) and C(ldconfig_p).
extends_documentation_fragment:
  - trainstack.cluster.attributes
  - trainstack.cluster.attributes.facts
  - trainstack.cluster.probe
options:
  python_site_dirs:
    description:
      - Directories searched for C(torch) and C(nvidia-*) wheels (C(*.dist-info)).
      - Default the C(site-packages) directories of the interpreter running the module.
    type: list
    elements: path
  python:
    description:
      - An interpreter (such as a virtual environment's C(bin/python)) that imports C(torch) and reports what torch
        itself sees; adds C(python), C(cuda_runtime), C(cuda_available), C(device_count), C(nccl_version),
        C(distributed), C(backends) (or C(import_error)) to C(pytorch). Replay key C(torch_report).
      - Without O(python_site_dirs), the wheels are looked up in that interpreter's site directories.
    type: path
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Read the installed GPU software stack
  trainstack.cluster.gpu_stack_facts:

- name: Show the driver and CUDA versions
  ansible.builtin.debug:
    msg: >-
      driver {{ ansible_facts['trainstack_gpu_stack']['driver']['version'] }},
      CUDA {{ ansible_facts['trainstack_gpu_stack']['cuda']['version'] }}

- name: Read the wheels of the training virtual environment rather than of Ansible's interpreter
  trainstack.cluster.gpu_stack_facts:
    python_site_dirs:
      - /opt/venvs/train/lib/python3.12/site-packages

- name: Ask the environment's torch for its CUDA devices and NCCL version
  trainstack.cluster.gpu_stack_facts:
    python: /opt/trainstack/pytorch/bin/python
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: complex
  contains:
    trainstack_gpu_stack:
      description: Versions found on the host; V(null) where a source is missing.
      returned: always
      type: complex
      contains:
        driver:
          description:
            - C(version) (C(580.159.04)) and C(branch) (C(580)) from C(nvidia-smi), else from the kernel module;
              C(kernel_module) (C(open) or C(proprietary)) and C(kernel_module_version) from C(/proc/driver/nvidia/version);
              C(cuda), the newest CUDA the driver supports (C(nvidia-smi) header); C(source).
          type: dict
          returned: always
          sample: {version: 580.159.04, branch: "580", kernel_module: open, cuda: "13.0", source: nvidia-smi}
        gpus:
          description: C(index), C(name), C(compute_capability) and C(sm) of every GPU C(nvidia-smi) lists.
          type: list
          elements: dict
          returned: always
        device_nodes:
          description:
            - Whether C(/dev/nvidiactl) exists and the NVIDIA kernel module is loaded (C(/proc/driver/nvidia/version)).
            - C(nvidia-smi) creates C(/dev/nvidiactl) by itself where it may, even in a container without a GPU.
          type: bool
          returned: always
        cuda:
          description: C(version) (major.minor), C(release) (C(12.8.93)), C(nvcc) (path) and C(source).
          type: dict
          returned: always
        nccl:
          description: C(version) (C(2.26.2)) and C(source) (header, library or wheel).
          type: dict
          returned: always
        cudnn:
          description: C(version) and C(source) (header).
          type: dict
          returned: always
        pytorch:
          description:
            - C(version) of the C(torch) wheel (C(2.11.0+cu130)) and its C(cuda_index) (C(cu130)).
            - With O(python) also torch's own report, C(nccl_version) being the NCCL torch loaded (V(null) on CPU builds).
          type: dict
          returned: always
        python_packages:
          description: C(torch) and C(nvidia-*) wheels found, name to version.
          type: dict
          returned: always
"""

import site
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import PROBE_ARGUMENT_SPEC, CommandRunner, find_program
from ansible_collections.trainstack.cluster.plugins.module_utils._gpu_stack import GpuStackProbe


def default_site_dirs():
    """site-packages directories of this interpreter (a virtual environment's own ones included)."""
    dirs = [path for path in sys.path if path.endswith(('site-packages', 'dist-packages'))]
    try:
        dirs += [path for path in site.getsitepackages() if path not in dirs]
    except AttributeError:
        pass
    return dirs


def main():
    module = AnsibleModule(
        argument_spec={
            'python_site_dirs': {'type': 'list', 'elements': 'path'},
            'python': {'type': 'path'},
            **PROBE_ARGUMENT_SPEC,
        },
        supports_check_mode=True,
    )
    params = module.params
    runner = CommandRunner(params['root'], params['command_timeout'])
    site_dirs = params['python_site_dirs']
    if site_dirs is None:
        site_dirs = default_site_dirs() if runner.replay_dir is None and not params['python'] else []
    probe = GpuStackProbe(params['root'], runner, params['nvidia_smi_path'], site_dirs,
                          find_program if runner.replay_dir is None else None, python=params['python'])
    module.exit_json(changed=False, ansible_facts={'trainstack_gpu_stack': probe.collect()})


if __name__ == '__main__':
    main()
