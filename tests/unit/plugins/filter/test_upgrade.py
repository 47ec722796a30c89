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
    # An AWX text answer: the play cuts it with upgrade_serial_steps, as the plan does.
    ('1,5,10%', [1, 5, 1, 1, 1, 1, 1, 1]),
])
def test_batches_as_ansible_cuts_them(serial, sizes):
    batches = upgrade.upgrade_batches(HOSTS, serial)
    assert [len(batch) for batch in batches] == sizes
    assert [host for batch in batches for host in batch] == HOSTS


@pytest.mark.parametrize('serial', [[1, 5, '10%'], '25%', [2, 0], '1,5,10%'])
def test_the_plan_is_the_batches_ansible_runs(tmp_path, serial):
    # A real play with that serial over 12 local hosts; each batch says its hosts once (run_once per batch).
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'children': {'nodes': {'hosts': {host: {} for host in HOSTS}}},
                                             'vars': {'ansible_connection': 'local'}}}), encoding='utf-8')
    play = tmp_path / 'play.yml'
    play.write_text(yaml.safe_dump([{'name': 'Batches', 'hosts': 'nodes', 'gather_facts': False,
                                     'serial': '{{ %s | trainstack.cluster.upgrade_serial_steps }}' % json.dumps(serial),
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
                                 'nccl': ['2.26.2-1+cuda12.8', '2.27.7-1+cuda12.8']}, 'rebuild': {}}
    assert upgrade.upgrade_changes(node, {'nccl': '2.27.7-1+cuda12.8'})['reboot'] is False
    assert upgrade.upgrade_changes({}, {'ucx': '1.18.1'})['change'] == ['ucx']
    with pytest.raises(AnsibleFilterError, match='unknown components kernel'):
        upgrade.upgrade_changes(node, {'kernel': '6.1'})


# .build-info.json of current builds, as build_artifact writes them (roles/build_artifact/vars/main.yml).
UCX = {'name': 'ucx', 'version': '1.13.1', 'id': 'aaaaaaaaaaaa', 'cuda': '12.8', 'depends': []}
OMPI = {'name': 'openmpi', 'version': '4.1.4', 'id': 'bbbbbbbbbbbb', 'cuda': '12.8', 'depends': ['ucx-aaaaaaaaaaaa']}
TESTS = {'name': 'nccl-tests', 'version': '2.13.11', 'id': 'cccccccccccc', 'cuda': '12.8', 'depends': ['mpi:bbbbbbbbbbbb']}
BUILT_NODE = {'cuda': '12.8', 'ucx': '1.13.1', 'openmpi': '4.1.4', 'nccl_tests': '2.13.11'}
BUILT_PINS = {'ucx': '1.13.1', 'openmpi': '4.1.4', 'nccl_tests': '2.13.11'}


@pytest.mark.parametrize('node, targets, built, change, rebuild', [
    # The same pins and the same CUDA: nothing to redo.
    (BUILT_NODE, dict(BUILT_PINS, cuda='12.8'), {'ucx': UCX, 'openmpi': OMPI, 'nccl_tests': TESTS}, [], {}),
    # A new CUDA pin: every build against CUDA is redone, each saying why.
    (BUILT_NODE, dict(BUILT_PINS, cuda='12.9'), {'ucx': UCX, 'openmpi': OMPI, 'nccl_tests': TESTS},
     ['cuda', 'ucx', 'openmpi', 'nccl_tests'],
     {'ucx': 'built against CUDA 12.8, the pin is 12.9', 'openmpi': 'built against CUDA 12.8, the pin is 12.9',
      'nccl_tests': 'built against CUDA 12.8, the pin is 12.9'}),
    # An interrupted run left CUDA 12.9 installed and the builds on 12.8: a re-run finds them by their build key.
    (dict(BUILT_NODE, cuda='12.9.41'), dict(BUILT_PINS, cuda='12.9'), {'ucx': UCX, 'openmpi': OMPI, 'nccl_tests': TESTS},
     ['ucx', 'openmpi', 'nccl_tests'],
     {'ucx': 'built against CUDA 12.8, the pin is 12.9', 'openmpi': 'built against CUDA 12.8, the pin is 12.9',
      'nccl_tests': 'built against CUDA 12.8, the pin is 12.9'}),
    # A new UCX version: Open MPI links it, nccl-tests links that Open MPI.
    (BUILT_NODE, dict(BUILT_PINS, ucx='1.18.1'), {'ucx': UCX, 'openmpi': OMPI, 'nccl_tests': TESTS},
     ['ucx', 'openmpi', 'nccl_tests'], {'openmpi': 'it links ucx, which changes', 'nccl_tests': 'it links openmpi, which changes'}),
    # UCX was rebuilt (another id) but Open MPI still links the old build.
    (BUILT_NODE, BUILT_PINS, {'ucx': dict(UCX, id='dddddddddddd'), 'openmpi': OMPI, 'nccl_tests': TESTS},
     ['openmpi', 'nccl_tests'],
     {'openmpi': 'it links ucx build aaaaaaaaaaaa, the current one is dddddddddddd', 'nccl_tests': 'it links openmpi, which changes'}),
    # Built without CUDA on purpose ('none'), or nccl-tests without MPI: a CUDA or Open MPI change leaves them.
    (BUILT_NODE, dict(BUILT_PINS, cuda='12.9', openmpi='5.0.7'),
     {'ucx': dict(UCX, cuda='none'), 'openmpi': dict(OMPI, cuda='none'), 'nccl_tests': dict(TESTS, depends=[], cuda='12.9')},
     ['cuda', 'openmpi'], {}),
    # Not this run's components (no pin selected), or nothing built yet: no rebuild is asked for.
    (BUILT_NODE, {'cuda': '12.9'}, {'ucx': UCX, 'openmpi': OMPI, 'nccl_tests': TESTS}, ['cuda'], {}),
    ({'cuda': '12.8'}, dict(BUILT_PINS, cuda='12.9'), {}, ['cuda', 'ucx', 'openmpi', 'nccl_tests'], {}),
])
def test_builds_whose_build_key_changed_are_redone(node, targets, built, change, rebuild):
    plan = upgrade.upgrade_changes(node, targets, built)
    assert (plan['change'], plan['rebuild']) == (change, rebuild)


def test_a_rebuild_is_named_in_the_plan_and_the_gate():
    plan = upgrade.upgrade_changes(BUILT_NODE, dict(BUILT_PINS, cuda='12.9'), {'ucx': UCX})
    assert upgrade.upgrade_plan_lines([['n1']], {'n1': plan}) == [
        'batch 1 (1 node): n1', '  n1: cuda 12.8 -> 12.9; ucx 1.13.1 rebuilt (built against CUDA 12.8, the pin is 12.9)']
    # After the run, a build still on the old CUDA fails the gate, saying why.
    after = upgrade.upgrade_changes(dict(BUILT_NODE, cuda='12.9.41'), dict(BUILT_PINS, cuda='12.9'), {'ucx': UCX})
    assert upgrade.upgrade_gate(after)['failed'] == ['ucx 1.13.1 is built against CUDA 12.8, the pin is 12.9']


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


# --- what a node runs, against the pins -------------------------------------------------------------------------

# package_facts' shapes: apt gives the version with its Debian revision, rpm splits version and release.
APT_PACKAGES = {
    'libnccl2': [{'name': 'libnccl2', 'version': '2.26.2-1+cuda12.8', 'arch': 'amd64', 'category': 'libs', 'origin': '',
                  'source': 'apt'}],
    'libnvidia-ml1': [{'name': 'libnvidia-ml1', 'version': '580.95.05-1', 'arch': 'amd64', 'source': 'apt'}],
    'slurmd': [{'name': 'slurmd', 'version': '22.05.8-4+deb12u3', 'arch': 'amd64', 'source': 'apt'}],
}
RPM_PACKAGES = {
    'libnccl': [{'name': 'libnccl', 'version': '2.26.2', 'release': '1+cuda12.8', 'epoch': None, 'arch': 'x86_64',
                 'source': 'rpm'}],
    'slurm': [{'name': 'slurm', 'version': '24.11.5', 'release': '1.el9', 'epoch': None, 'arch': 'x86_64', 'source': 'rpm'}],
}
# trainstack_gpu_stack of a container: nvidia-smi absent, no headers, a CPU torch wheel.
STACK_CONTAINER = {'driver': {'version': None}, 'cuda': {'version': None}, 'nccl': {'version': None},
                   'pytorch': {'version': '2.13.0+cpu'}}


@pytest.mark.parametrize('stack, packages, slurmd, built, expected', [
    # Debian: the pins come from the package database, the driver without its Debian revision.
    (STACK_CONTAINER, APT_PACKAGES, 'slurm 22.05.8\n', None,
     {'driver': '580.95.05', 'cuda': '', 'nccl': '2.26.2-1+cuda12.8', 'slurm': '22.05.8-4+deb12u3', 'pytorch': '2.13.0+cpu',
      'ucx': '', 'openmpi': '', 'nccl_tests': ''}),
    # EL: version-release, as dnf pins it.
    (STACK_CONTAINER, RPM_PACKAGES, '', None,
     {'driver': '', 'cuda': '', 'nccl': '2.26.2-1+cuda12.8', 'slurm': '24.11.5-1.el9', 'pytorch': '2.13.0+cpu',
      'ucx': '', 'openmpi': '', 'nccl_tests': ''}),
    # No package database entry: the probe (nvidia-smi, the NCCL header) and `slurmd -V`; the builds' info files.
    ({'driver': {'version': '580.95.05'}, 'cuda': {'version': '12.8'}, 'nccl': {'version': '2.26.2'}, 'pytorch': {}}, {},
     'slurm 24.11.5', {'ucx': {'version': '1.18.1', 'id': 'b1'}, 'openmpi': {'version': '5.0.7'}, 'nccl_tests': None},
     {'driver': '580.95.05', 'cuda': '12.8', 'nccl': '2.26.2', 'slurm': '24.11.5', 'pytorch': '', 'ucx': '1.18.1',
      'openmpi': '5.0.7', 'nccl_tests': ''}),
    # Ubuntu's driver packages carry the branch in their name.
    ({}, {'libnvidia-compute-580': [{'version': '580.95.05-0ubuntu1'}]}, '', None,
     {'driver': '580.95.05', 'cuda': '', 'nccl': '', 'slurm': '', 'pytorch': '', 'ucx': '', 'openmpi': '', 'nccl_tests': ''}),
])
def test_what_a_node_runs(stack, packages, slurmd, built, expected):
    assert upgrade.upgrade_installed(stack, packages, slurmd, built) == expected


def test_targets_are_the_managed_pins_of_the_chosen_components():
    settings = {'driver': {'version': '580.95.05', 'managed': False}, 'nccl': {'version': '2.27.7-1+cuda12.9', 'managed': True},
                'slurm': {'version': '', 'managed': True}, 'pytorch': {'version': '2.13.0', 'managed': True}}
    # The driver's source is preinstalled here, Slurm has no pin: neither is compared.
    assert upgrade.upgrade_targets(settings) == {'nccl': '2.27.7-1+cuda12.9', 'pytorch': '2.13.0'}
    assert upgrade.upgrade_targets(settings, ['nccl']) == {'nccl': '2.27.7-1+cuda12.9'}
    # A string is refused, not split: the same rule as preflight's type check.
    with pytest.raises(AnsibleFilterError, match="upgrade_components must be a list of components such as"):
        upgrade.upgrade_targets(settings, 'nccl,pytorch')
    with pytest.raises(AnsibleFilterError, match='upgrade_components: unknown kernel'):
        upgrade.upgrade_targets(settings, ['nccl', 'kernel'])


@pytest.mark.parametrize('installed, pin, same', [
    ('580.95.05-1', '580.95.05', True),       # Debian revision
    ('2.13.0+cpu', '2.13.0', True),           # a wheel's local label
    ('12.8.93', '12.8', True),                # CUDA's patch release
    ('2.26.2-1+cuda12.8', '2.26.2-1+cuda12.8', True),
    ('2.26.2-1+cuda12.8', '2.26.2-1+cuda12.9', False),
    ('2.26.2', '2.26.2-1+cuda12.8', False),   # the header says less than the pin: not proven equal
    ('2.26.2', '2.2', False),
    ('', '2.26.2', False),
])
def test_a_pin_is_met_by_the_same_version_or_one_that_only_adds_to_it(installed, pin, same):
    assert (upgrade.upgrade_changes({'nccl': installed}, {'nccl': pin})['change'] == []) is same


# --- the gate ---------------------------------------------------------------------------------------------------

CLEAN = {'change': [], 'reboot': False, 'versions': {'nccl': ['2.27.7-1+cuda12.9', '2.27.7-1+cuda12.9']}}


@pytest.mark.parametrize('after, nhc, checks, commands, failed', [
    (CLEAN, {'rc': 0, 'stdout': ''}, [{'check': 'gpu_count', 'status': 'skip', 'reason': 'no GPU'}], [], []),
    ({'change': ['nccl'], 'versions': {'nccl': ['2.26.2-1+cuda12.8', '2.27.7-1+cuda12.9']}}, None, [], [],
     ['nccl runs 2.26.2-1+cuda12.8, not 2.27.7-1+cuda12.9']),
    # NHC's own line for a failed check (nhc -l - prints it on stdout).
    (CLEAN, {'rc': 1, 'stdout': 'ERROR:  nhc:  Health check failed:  check_fs_mount:  /srv/scratch not mounted\n'}, [], [],
     ['NHC failed: ERROR:  nhc:  Health check failed:  check_fs_mount:  /srv/scratch not mounted']),
    (CLEAN, None, [{'check': 'driver_version', 'status': 'fail', 'reason': 'runs 570.195.03, expected 580.95.05'},
                   {'check': 'nvlinks', 'status': 'info', 'reason': 'nothing to compare'}], [],
     ['driver_version: runs 570.195.03, expected 580.95.05']),
    (CLEAN, None, [], [{'cmd': ['test', '!', '-e', '/run/x'], 'rc': 1, 'stdout': '', 'stderr': '', 'msg': 'non-zero return code'},
                       {'cmd': ['true'], 'rc': 0}, {'skipped': True}],
     ['test ! -e /run/x: exit 1']),
    (CLEAN, None, [], [{'cmd': ['dcgmi', 'diag', '-r', '2'], 'rc': 226, 'stdout': '', 'stderr': 'Error: unable to connect\n'}],
     ['dcgmi diag -r 2: exit 226, Error: unable to connect']),
])
def test_the_gate(after, nhc, checks, commands, failed):
    gate = upgrade.upgrade_gate(after, nhc, checks, commands)
    assert gate['failed'] == failed
    assert gate['healthy'] is (not failed)
    assert gate['reason'] == ('trainstack upgrade: gate failed: ' + '; '.join(failed) if failed else '')


def test_a_long_gate_reason_is_capped():
    gate = upgrade.upgrade_gate(CLEAN, None, [], [{'cmd': ['check'], 'rc': 1, 'stderr': 'x' * 400}])
    assert len(gate['reason']) == 250 and gate['reason'].startswith('trainstack upgrade: gate failed: check: exit 1, xxx')


# --- the batch verdict ------------------------------------------------------------------------------------------

OK = {'status': 'upgraded', 'detail': 'nccl 2.27.7-1+cuda12.9'}
BAD = {'status': 'gate_failed', 'detail': 'NHC failed: ...: stays drained'}


@pytest.mark.parametrize('outcomes, batch, budget, stop', [
    ({'n1': OK, 'n2': BAD}, ['n1', 'n2'], 50, False),   # 50 % failed, budget 50: equalled, not exceeded
    ({'n1': OK, 'n2': BAD}, ['n1', 'n2'], 49, True),
    ({'n1': OK}, ['n1'], 0, False),
    ({'n1': BAD}, ['n1'], 0, True),
    ({'n1': {'status': 'waiting', 'detail': 'jobs left'}}, ['n1'], 0, False),  # waiting is not a failure of the node
    ({'n1': OK}, ['n1', 'n2'], 50, False),              # n2 lost (no outcome): failed, 50 % equalled
    ({'n1': OK, 'n2': {'status': 'pending'}}, ['n1', 'n2'], 49, True),   # its play stopped before its outcome
])
def test_the_failure_budget_is_exceeded_not_equalled(outcomes, batch, budget, stop):
    assert upgrade.upgrade_batch_verdict(outcomes, ['n1', 'n2', 'n3'], batch, budget)['stop'] is stop


def test_the_report_says_what_was_done_and_what_was_not():
    report = upgrade.upgrade_batch_verdict({'n1': {'status': 'unchanged', 'detail': ''}, 'n2': BAD},
                                           ['n1', 'n2', 'n3', 'n4'], ['n2'], 0)
    assert report['lines'] == ['n1: unchanged', 'n2: gate failed - NHC failed: ...: stays drained',
                               'not done (the run stopped): n3, n4',
                               'STOPPED: 1 of 1 nodes in this batch failed (100.0 %), more than upgrade_max_fail_percentage 0']
    assert (report['gate_failed'], report['not_done'], report['failed_percentage']) == (['n2'], ['n3', 'n4'], 100.0)


# --- the run's settings -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('settings, problems', [
    ({'upgrade_serial': [1, 5, '10%'], 'upgrade_max_fail_percentage': 0, 'upgrade_components': ['nccl']}, []),
    ({'upgrade_serial': '25%'}, []),
    # AWX's text answer, as a user types it.
    ({'upgrade_serial': '1, 5,10%'}, []),
    ({'upgrade_serial': '1,5,10%\n'}, ["upgrade_serial: '10%\\n' is not a whole number of nodes or a percentage such as \"10%\""]),
    ({'upgrade_serial': ''}, ['upgrade_serial is empty: give batches such as [1, 5, "10%"] ("100%" upgrades every node at once)']),
    ({'upgrade_serial': []}, ['upgrade_serial is empty: give batches such as [1, 5, "10%"] ("100%" upgrades every node at once)']),
    ({'upgrade_serial': '1,,2'}, ["upgrade_serial: '' is not a whole number of nodes or a percentage such as \"10%\""]),
    ({'upgrade_serial': [1, 'ten']}, ["upgrade_serial: 'ten' is not a whole number of nodes or a percentage such as \"10%\""]),
    ({'upgrade_serial': ['150%']}, ["upgrade_serial: '150%' is not a whole number of nodes or a percentage such as \"10%\""]),
    ({'upgrade_serial': ['10%\n']}, ["upgrade_serial: '10%\\n' is not a whole number of nodes or a percentage such as \"10%\""]),
    ({'upgrade_serial': [0]}, ['upgrade_serial: a batch of 0 nodes']),
    ({'upgrade_serial': [True]}, ["upgrade_serial: True is not a whole number of nodes or a percentage such as \"10%\""]),
    # A survey's text answer arrives as a string.
    ({'upgrade_max_fail_percentage': '10'}, ["upgrade_max_fail_percentage must be a whole number, got '10'"]),
    ({'upgrade_max_fail_percentage': 101}, ['upgrade_max_fail_percentage must be between 0 and 100, got 101']),
    ({'upgrade_drain_poll': 0}, ['upgrade_drain_poll must be between 1 and 3600, got 0']),
    ({'upgrade_cancel_jobs': 'yes'}, ["upgrade_cancel_jobs must be true or false, got 'yes'"]),
    ({'upgrade_components': ['nccl', 'bios']}, ['upgrade_components: unknown bios (known: driver, cuda, nccl, slurm, ucx, '
                                                'openmpi, nccl_tests, pytorch)']),
    ({'upgrade_components': 'nccl'}, ["upgrade_components must be a list of components such as [nccl, driver], got 'nccl'"]),
    ({'upgrade_gate_commands': 'dcgmi diag -r 2'}, ['upgrade_gate_commands must be a list of commands, each a list of strings '
                                                    '(argv, no shell)']),
    ({'upgrade_gate_commands': [['dcgmi', 'diag', '-r', 2]]}, ['upgrade_gate_commands must be a list of commands, each a list '
                                                               'of strings (argv, no shell)']),
    ({'upgrade_gate_commands': [['bin/check']]}, ['upgrade_gate_commands: a program is a name found in PATH or an absolute path']),
    ({'upgrade_gate_commands': [['dcgmi', 'diag', '-r', '2'], ['/opt/site/burn-in', '--quick']]}, []),
])
def test_the_run_settings(settings, problems):
    assert upgrade.upgrade_input_problems(settings) == problems


def test_the_plan_lines_and_the_drain_reason():
    plans = {'n1': {'change': ['driver', 'nccl'], 'reboot': True,
                    'versions': {'driver': ['570.195.03', '580.95.05'], 'nccl': [None, '2.26.2-1+cuda12.8']}},
             'n2': {'change': [], 'reboot': False, 'versions': {}}}
    assert upgrade.upgrade_plan_lines([['n1'], ['n2', 'n3']], plans) == [
        'batch 1 (1 node): n1',
        '  n1: driver 570.195.03 -> 580.95.05; nccl none -> 2.26.2-1+cuda12.8; reboot',
        'batch 2 (2 nodes): n2, n3',
        '  n2: no version changes',
        '  n3: not read (unreachable, or its plan failed)',
    ]
    assert upgrade.upgrade_drain_reason(plans['n1']) == 'trainstack upgrade: driver 580.95.05, nccl 2.26.2-1+cuda12.8'


def test_the_slurm_daemons_across_the_cluster():
    # `slurmctld -V` and friends print "slurm 22.05.8".
    results = [{'item': 'slurmctld', 'rc': 0, 'stdout': 'slurm 22.05.8'}, {'item': 'slurmd', 'rc': 2, 'stdout': ''},
               {'item': 'slurmdbd', 'rc': 0, 'stdout': 'slurm 23.02.7\n'}]
    assert upgrade.upgrade_daemon_versions(results) == {'slurmctld': '22.05.8', 'slurmdbd': '23.02.7'}
    hosts = {'ctl1': {'slurmctld': '22.05.8'}, 'ctl2': {'slurmctld': '22.05.8'}, 'db': {'slurmdbd': '23.02.7'},
             'n1': {'slurmd': '22.05.8'}, 'n2': None}
    daemons = upgrade.upgrade_slurm_daemons(hosts, ['ctl1', 'ctl2'], ['db'])
    assert daemons == {'slurmdbd': '23.02.7', 'slurmctld': ['22.05.8', '22.05.8'], 'slurmd': {'n1': '22.05.8'}}
    assert upgrade.slurm_upgrade_problems(daemons, '23.02.7', MAJORS) == []


def test_the_playbook_batches_by_the_role_default():
    # A play keyword cannot read role defaults: playbooks/upgrade.yml repeats upgrade_serial's default.
    with open(os.path.join(ROOT, 'roles', 'upgrade', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        default = yaml.safe_load(handle)['upgrade_serial']
    with open(os.path.join(ROOT, 'playbooks', 'upgrade.yml'), encoding='utf-8') as handle:
        plays = yaml.safe_load(handle)
    serial = [play['serial'] for play in plays if 'upgrade_serial' in str(play.get('serial'))]
    assert serial == ["{{ upgrade_serial | default([1, 5, '10%']) | trainstack.cluster.upgrade_serial_steps }}"]
    assert default == [1, 5, '10%']
