# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """Options of the modules that probe a host or replay a recorded one (module_utils._commands)."""

    DOCUMENTATION = r"""
options:
  root:
    description:
      - Directory that holds the file tree to read (C(/) is the live host).
      - Anything other than C(/) switches commands to replay mode (see the description).
    type: path
    default: /
  nvidia_smi_path:
    description:
      - Name or absolute path of C(nvidia-smi). A bare name is searched in E(PATH) and C(/usr/local/nvidia/bin).
    type: str
    default: nvidia-smi
  command_timeout:
    description:
      - Seconds after which an external command counts as unavailable (a wedged GPU can hang C(nvidia-smi)).
    type: int
    default: 30
"""
