# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rolling upgrade filters: the batch plan against Ansible's own `serial`, per-node changes, Slurm's upgrade rules."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from playbook_support import ROOT, run_playbook

from ansible_collections.trainstack.cluster.plugins.filter import upgrade

with open(os.path.join(ROOT, 'data', 'slurm_releases.yml'), encoding='utf-8') as handle:
    MAJORS = yaml.safe_load(handle)['slurm_major_releases']

HOSTS = ['n%02d' % number for number in range(1, 13)]


@pytest.mark.parametrize('serial, sizes', [
    # [1, 5, "10%"] on 12 hosts: 1, then 5, then 10 % of 12 = 1.2 -> 1 for the rest (the last entry repeats).
    ([1, 5, '10%'], [1, 5, 1, 1, 1, 1, 1, 1]),
    ('25%', [3, 3, 3, 3]),
    # 5 % of 12 is 0.6: at least one host.
    (['5%'], [1] * 12),
    (4, [4, 4, 4]),
    ([2, 0], [2, 10]),
    (None, [12]),
])
def test_batches_as_ansible_cuts_them(serial, sizes):
    batches = upgrade.upgrade_batches(HOSTS, serial)
    assert [len(batch) for batch in batches] == sizes
    assert [host for batch in batches for host in batch] == HOSTS


@pytest.mark.parametrize('serial', [[1, 5, '10%'], '25%', [2, 0]])
def test_the_plan_is_the_batches_ansible_runs(tmp_path, serial):
    # A real play with that serial over 12 local hosts; each batch says its hosts once (run_once per batch).
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'children': {'nodes': {'hosts': {host: {} for host in HOSTS}}},
                                             'vars': {'ansible_connection': 'local'}}}), encoding='utf-8')
    play = tmp_path / 'play.yml'
    play.write_text(yaml.safe_dump([{'name': 'Batches', 'hosts': 'nodes', 'gather_facts': False, 'serial': serial,
                                     'tasks': [{'name': 'Say the batch', 'ansible.builtin.debug': {'msg': '{{ ansible_play_batch }}'},
                                                'run_once': True}]}]), encoding='utf-8')
    returncode, report, stderr = run_playbook(str(play), '-i', str(inventory))
    assert returncode == 0, stderr
    ran = [next(iter(task['hosts'].values()))['msg'] for played in report['plays'] for task in played['tasks']]
    assert ran == upgrade.upgrade_batches(HOSTS, serial)


def test_a_bad_serial_entry_is_refused():
    with pytest.raises(AnsibleFilterError, match='upgrade_serial entries are whole numbers or percentages'):
        upgrade.upgrade_batches(HOSTS, ['ten'])


def test_changes_and_the_reboot_they_need():
    node = {'driver': '570.124.06', 'cuda': '12.8', 'nccl': '2.26.2-1+cuda12.8', 'slurm': '22.05.8'}
    plan = upgrade.upgrade_changes(node, {'driver': '580.95.05', 'cuda': '12.8', 'nccl': '2.27.7-1+cuda12.8', 'slurm': ''})
    assert plan == {'change': ['driver', 'nccl'], 'reboot': True,
                    'versions': {'driver': ['570.124.06', '580.95.05'], 'cuda': ['12.8', '12.8'],
                                 'nccl': ['2.26.2-1+cuda12.8', '2.27.7-1+cuda12.8']}}
    assert upgrade.upgrade_changes(node, {'nccl': '2.27.7-1+cuda12.8'})['reboot'] is False
    assert upgrade.upgrade_changes({}, {'ucx': '1.18.1'})['change'] == ['ucx']
    with pytest.raises(AnsibleFilterError, match='unknown components kernel'):
        upgrade.upgrade_changes(node, {'kernel': '6.1'})


@pytest.mark.parametrize('installed, target, problems', [
    # Debian 12's 22.05 to 23.11: two majors on (23.02, 23.11), inside 23.11's window of two.
    ({'slurmdbd': '22.05.8', 'slurmctld': ['22.05.8'], 'slurmd': {'n1': '22.05.8'}}, '23.11.10', []),
    # 22.05 to 24.11 is three majors (23.02, 23.11, 24.05, then 24.11 is the fourth): 24.11 reads three back.
    ({'slurmd': {'n1': '23.02.7'}}, '24.11.5', []),
    ({'slurmd': {'n1': '22.05.8'}}, '24.11.5',
     ['n1 runs Slurm 22.05.8, 4 major releases before 24.11.5: Slurm 24.11 upgrades from at most 3 releases back '
      '(slurm.schedmd.com/upgrades.html); upgrade through an intermediate release']),
    ({'slurmd': {'n1': '22.05.8'}}, '24.05.3',
     ['n1 runs Slurm 22.05.8, 3 major releases before 24.05.3: Slurm 24.05 upgrades from at most 2 releases back '
      '(slurm.schedmd.com/upgrades.html); upgrade through an intermediate release']),
    ({'slurmctld': ['24.11.5']}, '23.11.10', ['slurmctld 1 runs Slurm 24.11.5, newer than the target 23.11.10: Slurm is never downgraded']),
    # Half-way: slurmd already upgraded on n2 while slurmctld is not - the order is broken.
    ({'slurmdbd': '23.11.10', 'slurmctld': ['22.05.8'], 'slurmd': {'n1': '22.05.8', 'n2': '23.11.10'}}, '23.11.10',
     ['slurmctld 1 (Slurm 22.05.8) is older than n2 (Slurm 23.11.10): Slurm wants slurmctld >= slurmd']),
    ({'slurmdbd': '22.05.8', 'slurmctld': ['23.11.10']}, '23.11.10',
     ['slurmdbd (Slurm 22.05.8) is older than slurmctld 1 (Slurm 23.11.10): Slurm wants slurmdbd >= slurmctld']),
    ({'slurmd': {'n1': '21.02.1'}}, '22.05.8', ['n1 runs Slurm 21.02.1, a major release data/slurm_releases.yml does not list']),
])
def test_slurm_upgrade_rules(installed, target, problems):
    assert upgrade.slurm_upgrade_problems(installed, target, MAJORS) == problems


def test_a_target_that_is_no_slurm_version_is_named():
    with pytest.raises(AnsibleFilterError, match="slurm_upgrade_version: 'latest' is not a Slurm version"):
        upgrade.slurm_upgrade_problems({'slurmd': {'n1': '22.05.8'}}, 'latest', MAJORS)
