# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_health_settings (slurm.conf's health lines) and the slurm role's prolog script, run for real.

Expected lines and messages are written by hand. The prolog script is rendered from the role's template and
run with stand-in health check programs (pass, fail, hang) to show the exit status and the time bound.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time

import jinja2
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.slurm_health import slurm_health_settings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
TEMPLATE = os.path.join(ROOT, 'roles', 'slurm', 'templates', 'prolog-health.sh.j2')

BASE = {
    'health_check_program': '/usr/sbin/nhc', 'health_check_interval': 300, 'health_check_node_state': 'IDLE',
    'health_check_after_reboot': False, 'reboot_program': '/usr/sbin/reboot', 'resume_timeout': 600,
    'prolog_health_check': False, 'prolog_health_check_timeout': 10, 'prolog_health_check_config': '',
    'prolog_health_check_path': '/etc/slurm/trainstack-prolog-health', 'config_extra': {},
}


def settings(**changes):
    out = dict(BASE)
    out.update(changes)
    return out


def test_defaults_write_the_periodic_check_only():
    assert slurm_health_settings(settings()) == {
        'HealthCheckProgram': '/usr/sbin/nhc', 'HealthCheckInterval': 300, 'HealthCheckNodeState': 'IDLE'}
    assert list(slurm_health_settings(settings())) == ['HealthCheckProgram', 'HealthCheckInterval', 'HealthCheckNodeState']


def test_no_program_writes_nothing():
    assert slurm_health_settings(settings(health_check_program='')) == {}


def test_after_reboot_adds_reboot_program_and_resume_timeout():
    assert slurm_health_settings(settings(health_check_after_reboot=True, resume_timeout=900)) == {
        'HealthCheckProgram': '/usr/sbin/nhc', 'HealthCheckInterval': 300, 'HealthCheckNodeState': 'IDLE',
        'RebootProgram': '/usr/sbin/reboot', 'ResumeTimeout': 900}


def test_prolog_adds_prolog_at_allocation():
    out = slurm_health_settings(settings(prolog_health_check=True))
    assert out['Prolog'] == '/etc/slurm/trainstack-prolog-health'
    assert out['PrologFlags'] == 'Alloc'
    assert list(out)[-2:] == ['Prolog', 'PrologFlags']


def test_both_switches_as_strings_from_an_inventory():
    out = slurm_health_settings(settings(health_check_after_reboot='true', prolog_health_check='yes'))
    assert set(out) == {'HealthCheckProgram', 'HealthCheckInterval', 'HealthCheckNodeState', 'RebootProgram',
                        'ResumeTimeout', 'Prolog', 'PrologFlags'}


@pytest.mark.parametrize(('changes', 'message'), [
    ({'health_check_after_reboot': True, 'health_check_program': ''},
     'slurm_health_check_after_reboot needs slurm_health_check_program'),
    # slurmd skips the start-up run with HealthCheckInterval=0.
    ({'health_check_after_reboot': True, 'health_check_interval': 0}, 'a slurm_health_check_interval above 0'),
    ({'health_check_after_reboot': True, 'reboot_program': 'reboot'}, 'slurm_reboot_program must be an absolute path'),
    ({'health_check_after_reboot': True, 'reboot_program': '/usr/sbin/reboot;id'}, 'slurm_reboot_program must be'),
    ({'health_check_after_reboot': True, 'resume_timeout': 0}, 'slurm_resume_timeout must be 1 to 65533 seconds'),
    ({'health_check_after_reboot': True, 'resume_timeout': '10m'}, 'slurm_resume_timeout must be 1 to 65533 seconds'),
    ({'health_check_after_reboot': 'maybe'}, 'slurm_health_check_after_reboot must be true or false'),
    ({'health_check_after_reboot': True, 'config_extra': {'resumetimeout': 60}},
     'slurm_config_extra sets resumetimeout, which slurm_health_check_after_reboot writes itself'),
    ({'prolog_health_check': True, 'health_check_program': ''}, 'slurm_prolog_health_check needs slurm_health_check_program'),
    ({'prolog_health_check': True, 'prolog_health_check_timeout': 90}, 'slurm_prolog_health_check_timeout must be 1 to 60 seconds'),
    ({'prolog_health_check': True, 'prolog_health_check_timeout': True}, 'slurm_prolog_health_check_timeout must be'),
    ({'prolog_health_check': True, 'prolog_health_check_config': 'prolog.conf'}, 'slurm_prolog_health_check_config must be'),
    ({'prolog_health_check': True, 'config_extra': {'Prolog': '/etc/slurm/prolog.sh', 'PrologFlags': 'Contain'}},
     'slurm_config_extra sets Prolog, PrologFlags, which slurm_prolog_health_check writes itself'),
])
def test_bad_settings_are_refused_naming_the_variable(changes, message):
    with pytest.raises(AnsibleFilterError, match=None) as info:
        slurm_health_settings(settings(**changes))
    assert message in str(info.value)


def test_extra_keys_are_free_while_the_switches_are_off():
    extra = {'Prolog': '/etc/slurm/site-prolog', 'RebootProgram': '/sbin/reboot'}
    assert 'Prolog' not in slurm_health_settings(settings(config_extra=extra))


def render_prolog(tmp_path, program, timeout=2, config=''):
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters['quote'] = lambda value: "'" + str(value).replace("'", "'\"'\"'") + "'"
    with open(TEMPLATE, encoding='utf-8') as handle:
        text = env.from_string(handle.read()).render(
            slurm_health_check_program=program, slurm_prolog_health_check_timeout=timeout,
            slurm_prolog_health_check_config=config)
    path = tmp_path / 'prolog'
    path.write_text(text)
    path.chmod(0o755)
    return str(path), text


def stand_in(tmp_path, body):
    path = tmp_path / 'nhc'
    path.write_text('#!/bin/bash\necho "args: $*" > "%s/args"\n%s\n' % (tmp_path, body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def run(script):
    start = time.monotonic()
    proc = subprocess.run([script], capture_output=True, text=True, check=False, timeout=30,
                          env={'SLURMD_NODENAME': 'no-such-node-for-the-test'})
    return proc, time.monotonic() - start


def test_prolog_passes_and_fails_with_the_check(tmp_path):
    script, text = render_prolog(tmp_path, stand_in(tmp_path, 'exit 0'))
    assert run(script)[0].returncode == 0
    assert (tmp_path / 'args').read_text() == 'args: \n'
    script, text = render_prolog(tmp_path, stand_in(tmp_path, 'exit 1'), config='/etc/nhc/prolog.conf')
    assert run(script)[0].returncode == 1
    assert (tmp_path / 'args').read_text() == 'args: -c /etc/nhc/prolog.conf\n'


def test_prolog_is_bounded_and_drains_with_the_nhc_reason(tmp_path):
    script, text = render_prolog(tmp_path, stand_in(tmp_path, 'exec sleep 20'), timeout=2)
    proc, took = run(script)
    assert proc.returncode == 124
    assert 2 <= took < 5
    # The drain it asks for (scontrol has no controller to reach here): NHC's prefix, so NHC may resume the node.
    assert 'Reason="NHC: prolog health check ran over 2 s"' in text
