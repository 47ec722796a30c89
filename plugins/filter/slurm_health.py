# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm.conf's node-health settings: the periodic check, the check after a reboot, the prolog check (pure).

Meant for the slurm role's slurm.conf and validate tasks: a bad value raises, naming the variable, so that they can
refuse it before anything changes. Not wired into the role yet: that wiring (the switches
slurm_health_check_after_reboot and slurm_prolog_health_check, off by default) waits for a full molecule slurm_ha run.

Slurm facts this relies on:
- slurmd runs HealthCheckProgram once when it starts, before it registers with slurmctld, but only where both
  HealthCheckProgram and a HealthCheckInterval above 0 are set (slurmd.c, run_script_health_check). A node that
  ``scontrol reboot`` restarted is therefore checked before it takes a job; RebootProgram is what
  ``scontrol reboot`` runs, and a node that is not back within ResumeTimeout is set DOWN (slurm.conf(5)).
- A Prolog that exits non-zero drains the node and requeues the job (prolog_epilog.html). slurmctld drains it
  with "Prolog error" only when it is not drained already (node_mgr.c, validate_node_specs): NHC's own "NHC:"
  drain survives, so the next health pass can resume the node.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_PATH_RE = re.compile(r'/[A-Za-z0-9._/+-]*\Z')
# The keys this filter writes when a switch asks for them; slurm_config_extra must not write them as well.
_REBOOT_KEYS = ('RebootProgram', 'ResumeTimeout')
_PROLOG_KEYS = ('Prolog', 'PrologFlags')
# Slurm kills the health check program after 60 s; a prolog check is meant to take seconds.
PROLOG_TIMEOUT_MAX = 60
# ResumeTimeout is kept in 16 bits by slurmctld (as the other timeouts the role checks).
RESUME_TIMEOUT_MAX = 65533


def _flag(settings, key, name):
    value = settings.get(key, False)
    if isinstance(value, bool):
        return value
    if str(value).lower() in ('true', 'yes', 'on', '1'):
        return True
    if str(value).lower() in ('false', 'no', 'off', '0', ''):
        return False
    raise AnsibleFilterError('%s must be true or false, got %r' % (name, value))


def _seconds(settings, key, name, low, high):
    value = settings.get(key)
    if isinstance(value, bool) or not re.match(r'[0-9]+\Z', str(value)) or not low <= int(value) <= high:
        raise AnsibleFilterError('%s must be %d to %d seconds, got %r' % (name, low, high, value))
    return int(value)


def _path(settings, key, name, empty_ok=False):
    value = str(settings.get(key) or '')
    if value == '' and empty_ok:
        return value
    if not _PATH_RE.match(value) or '/../' in value + '/' or '//' in value:
        raise AnsibleFilterError('%s must be an absolute path (letters, digits, . _ / + -), got %r'
                                 % (name, settings.get(key)))
    return value


def slurm_health_settings(settings):
    """{slurm.conf key: value} for the health checks, in writing order.

    ``settings`` holds the role's variables without their ``slurm_`` prefix: health_check_program,
    health_check_interval, health_check_node_state, health_check_after_reboot, reboot_program, resume_timeout,
    prolog_health_check, prolog_health_check_path, config_extra.
    """
    program = str(settings.get('health_check_program') or '')
    after_reboot = _flag(settings, 'health_check_after_reboot', 'slurm_health_check_after_reboot')
    prolog = _flag(settings, 'prolog_health_check', 'slurm_prolog_health_check')
    extra = {str(key).lower(): key for key in (settings.get('config_extra') or {})}
    out = {}
    if program:
        out['HealthCheckProgram'] = _path(settings, 'health_check_program', 'slurm_health_check_program')
        out['HealthCheckInterval'] = int(settings.get('health_check_interval', 300))
        out['HealthCheckNodeState'] = str(settings.get('health_check_node_state', 'IDLE'))
    if after_reboot:
        if not program or int(settings.get('health_check_interval', 0) or 0) < 1:
            raise AnsibleFilterError(
                'slurm_health_check_after_reboot needs slurm_health_check_program and a slurm_health_check_interval'
                ' above 0: slurmd runs the health check when it starts (after a reboot) only where both are set')
        out['RebootProgram'] = _path(settings, 'reboot_program', 'slurm_reboot_program')
        out['ResumeTimeout'] = _seconds(settings, 'resume_timeout', 'slurm_resume_timeout', 1, RESUME_TIMEOUT_MAX)
        taken = [extra[key.lower()] for key in _REBOOT_KEYS if key.lower() in extra]
        if taken:
            raise AnsibleFilterError('slurm_config_extra sets %s, which slurm_health_check_after_reboot writes itself'
                                     % ', '.join(taken))
    if prolog:
        if not program:
            raise AnsibleFilterError('slurm_prolog_health_check needs slurm_health_check_program (the check it runs)')
        _seconds(settings, 'prolog_health_check_timeout', 'slurm_prolog_health_check_timeout', 1, PROLOG_TIMEOUT_MAX)
        _path(settings, 'prolog_health_check_config', 'slurm_prolog_health_check_config', empty_ok=True)
        out['Prolog'] = _path(settings, 'prolog_health_check_path', 'the prolog script path')
        # At allocation, on every node of the job, before any step starts (not at a node's first step).
        out['PrologFlags'] = 'Alloc'
        taken = [extra[key.lower()] for key in _PROLOG_KEYS if key.lower() in extra]
        if taken:
            raise AnsibleFilterError('slurm_config_extra sets %s, which slurm_prolog_health_check writes itself'
                                     % ', '.join(taken))
    return out


class FilterModule:
    """Slurm node-health settings."""

    def filters(self):
        return {'slurm_health_settings': slurm_health_settings}
