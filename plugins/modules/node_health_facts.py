#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_health_facts
short_description: Gather GPU health facts for acceptance checks (nvidia-smi -q, Xid errors since boot)
description:
  - Reads C(nvidia-smi -q) (persistence mode, NVSwitch fabric state, retired pages, remapped rows per GPU) and the kernel
    log since boot (C(journalctl -k -b), else C(dmesg)) for NVIDIA Xid errors, and returns the C(trainstack_node_health) fact.
  - Changes nothing. A missing or failing source is V(null) with the reason in C(*_error); the module never fails because of it.
    Output that does not parse is also V(null) with the parser's reason, never a guess.
  - With O(root) pointing at a recorded tree, commands are replayed from C(<root>/.commands/<key>.txt); keys are
    C(nvidia-smi_q), C(journalctl_k_b) and C(dmesg).
extends_documentation_fragment:
  - trainstack.cluster.attributes
  - trainstack.cluster.attributes.facts
  - trainstack.cluster.probe
options: {}
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Read GPU health
  trainstack.cluster.node_health_facts:

- name: Show the Xid numbers seen since boot
  ansible.builtin.debug:
    var: ansible_facts['trainstack_node_health']['kernel_log']['xids']
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: complex
  contains:
    trainstack_node_health:
      description: GPU health of the host.
      returned: always
      type: complex
      contains:
        nvidia_smi_q:
          description:
            - C(driver_version), C(cuda_version), C(attached_gpus) and C(gpus), each with C(busid), C(name), C(uuid),
              C(minor_number), C(persistence_mode), C(mig_mode), C(fabric) (C(state), C(status)), C(retired_pages) and
              C(remapped_rows). V(null) when nvidia-smi is missing, fails or prints something unreadable.
          type: dict
          returned: always
        nvidia_smi_q_error:
          description: Why C(nvidia_smi_q) is V(null); V(null) otherwise.
          type: str
          returned: always
        kernel_log:
          description:
            - C(source) (the command read), C(events) (C(kind), C(xid), C(busid), C(pid), C(process), C(detail),
              C(uptime_s), C(line)) and C(xids) (distinct Xid numbers). V(null) when no kernel log could be read.
          type: dict
          returned: always
        kernel_log_error:
          description: Why C(kernel_log) is V(null); V(null) otherwise.
          type: str
          returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils._commands import PROBE_ARGUMENT_SPEC, CommandRunner
from ansible_collections.trainstack.cluster.plugins.module_utils import _nvsmi_query, _xid

KERNEL_LOG_COMMANDS = (
    ('journalctl_k_b', ['journalctl', '-k', '-b', '--no-pager', '-o', 'short-monotonic']),
    ('dmesg', ['dmesg']),
)


def read_nvidia_smi(runner, nvidia_smi):
    text = runner.output('nvidia-smi_q', [nvidia_smi, '-q'])
    if text is None:
        return None, 'nvidia-smi -q unavailable (%s missing, no GPU driver, or it failed)' % nvidia_smi
    try:
        return _nvsmi_query.parse(text), None
    except ValueError as error:
        return None, 'nvidia-smi -q output not understood: %s' % error


def read_kernel_log(runner):
    for key, argv in KERNEL_LOG_COMMANDS:
        text = runner.output(key, argv)
        if text is not None:
            return dict(_xid.parse(text), source=' '.join(argv)), None
    return None, 'neither journalctl -k -b nor dmesg could be read (no permission, or not present)'


def collect(runner, nvidia_smi):
    query, query_error = read_nvidia_smi(runner, nvidia_smi)
    log, log_error = read_kernel_log(runner)
    return {'nvidia_smi_q': query, 'nvidia_smi_q_error': query_error, 'kernel_log': log, 'kernel_log_error': log_error}


def main():
    module = AnsibleModule(argument_spec=PROBE_ARGUMENT_SPEC, supports_check_mode=True)
    runner = CommandRunner(module.params['root'], module.params['command_timeout'])
    module.exit_json(changed=False, ansible_facts={'trainstack_node_health': collect(runner, module.params['nvidia_smi_path'])})


if __name__ == '__main__':
    main()
