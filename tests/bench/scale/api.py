# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python-API path of tests/bench/bench_scale.py: the same per-host evaluations as scale.yml, without ansible-playbook.

ansible's own InventoryManager, VariableManager (with HostVars and the play's magic variables) and Templar template the
tasks as a task executor would: for each host, get_vars() of the play and host, the role's defaults and vars (role_path
set), the task's vars, then the task's arguments (set_fact values, assert conditions). The tasks are read from the files
the roles run: roles/slurm/tasks/nodes.yml (run_once), the per-host assert tasks of scale.yml's slurm play,
roles/build_artifact/tasks/validate.yml and the builder tasks of its main.yml, roles/acceptance/tasks/hooks/
ib_send_bw_pairs.yml (check mode: its shell and include tasks do not run). What a forked worker adds per host and task
(the fork, loading the collection's filter plugins) is not in these figures: ansible-playbook measures it.
"""

from __future__ import annotations

import json
import os
import time

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

import simulate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
ROLES = os.path.join(ROOT, 'roles')
_STARTED = []


def start_plugins():
    """ansible's plugin and collection loader, with the checkout's collections/ (once)."""
    if not _STARTED:
        init_plugin_loader([os.path.join(ROOT, 'collections')])
        _STARTED.append(True)


def _action(task):
    """(short action name, arguments) of a task dict."""
    for key, value in task.items():
        if key.startswith('ansible.builtin.'):
            return key[len('ansible.builtin.'):], value
    return None, None


class Cluster:
    """A simulated cluster loaded through ansible's Python API, with every host's facts in the run's fact cache."""

    def __init__(self, inventory_path, check_mode=True):
        start_plugins()
        self.loader = DataLoader()
        self.inventory = InventoryManager(loader=self.loader, sources=[inventory_path])
        self.variables = VariableManager(loader=self.loader, inventory=self.inventory)
        HostVars(inventory=self.inventory, variable_manager=self.variables, loader=self.loader)
        self.check_mode = check_mode
        self.plays = {}
        self.roles = {}
        topologies = {}
        for host in self.inventory.get_hosts():
            host_vars = host.get_vars()
            path = host_vars['bench_topology_file']
            if path not in topologies:
                with open(path, encoding='utf-8') as handle:
                    topologies[path] = json.load(handle)
            distribution, major, version = host_vars['bench_os']
            # What scale.yml's facts play (set_fact cacheable) leaves in the fact cache.
            self.variables.set_host_facts(host.name, {
                'trainstack_topology': topologies[path], 'hostname': host.name, 'distribution': distribution,
                'distribution_major_version': major, 'distribution_version': version, 'os_family': 'Debian',
                'architecture': 'x86_64', 'service_mgr': 'systemd', 'default_ipv4': {'address': host_vars['ansible_host']}})
        self.topology_bytes = {path: len(json.dumps(topology)) for path, topology in topologies.items()}

    def load(self, *parts):
        """A YAML file of the checkout, its strings trusted as templates (as ansible trusts the files it loads)."""
        return self.loader.load_from_file(os.path.join(ROOT, *parts), trusted_as_template=True)

    def play(self, pattern):
        """(Play, its hosts): the strategy passes the play's hosts to get_vars (ansible_play_hosts, ansible_play_batch)."""
        if pattern not in self.plays:
            play = Play.load({'name': 'bench', 'hosts': pattern, 'gather_facts': False}, variable_manager=self.variables, loader=self.loader)
            self.plays[pattern] = (play, [host.name for host in self.inventory.get_hosts(pattern)])
        return self.plays[pattern]

    def role(self, name, extra_files=()):
        """(defaults, vars) of a role, as include_role loads them (extra_files: more vars files, after vars/main.yml)."""
        if name not in self.roles:
            defaults = self.load('roles', name, 'defaults', 'main.yml') or {}
            role_vars = dict(self.load('roles', name, 'vars', 'main.yml') or {})
            for path in extra_files:
                role_vars.update(self.load(*path) or {})
            self.roles[name] = (defaults, role_vars, os.path.join(ROLES, name))
        return self.roles[name]

    def context(self, host, pattern, role, task_vars=None, more=None):
        """Templar for `host` in the play `pattern` and the role `role` (a role() tuple), with task vars."""
        defaults, role_vars, role_path = role
        play, hosts = self.play(pattern)
        found = self.variables.get_vars(play=play, host=self.inventory.get_host(host), _hosts=hosts, _hosts_all=hosts)
        variables = dict(defaults)
        variables.update(found)
        variables.update(role_vars)
        variables.update(more or {})
        variables.update(task_vars or {})
        variables.update(role_path=role_path, ansible_check_mode=self.check_mode)
        return Templar(loader=self.loader, variables=variables)

    def run_task(self, task, host, pattern, role, more=None):
        """Template one set_fact or assert task for `host` (set_fact: its facts are set for that host). Returns the values."""
        action, args = _action(task)
        templar = self.context(host, pattern, role, task.get('vars'), more)
        if action == 'set_fact':
            facts = {key: templar.template(value) for key, value in args.items() if key != 'cacheable'}
            self.variables.set_nonpersistent_facts(host, facts)
            return facts
        if action == 'assert':
            that = args['that'] if isinstance(args['that'], list) else [args['that']]
            return [templar.template(trust_as_template('{{ (%s) | bool }}' % condition)) for condition in that]
        # include_tasks, shell, ...: only their conditions are evaluated, as a skipped task's are.
        when = task.get('when')
        if when is not None:
            for condition in (when if isinstance(when, list) else [when]):
                templar.template(trust_as_template('{{ (%s) | bool }}' % condition))
        return None

    def forget(self, host, *names):
        self.variables.set_nonpersistent_facts(host, {name: None for name in names})


def measure_round(cluster, names, hook_sample, acceptance):
    """(label, (seconds measured, seconds of one attempt on every host)) of tasks/hooks/ib_send_bw_round.yml's set_facts.

    What a real run (not check mode) does per host and round: its part of the round and the round's figures, read from
    every client's registered result (here a recorded ib_send_bw report on every host). Measured on the largest round
    (the first); an attempt's rounds are counted by their runs: seconds x (runs of all rounds / runs of the first).
    """
    from ansible_collections.trainstack.cluster.plugins.filter import acceptance_ib  # pylint: disable=import-outside-toplevel,import-error
    settings = {'bw_size': 65536, 'lat_size': 2, 'tcp_port': 18515, 'timeout_s': 60}
    topologies = {name: cluster.variables._fact_cache.get(name)['trainstack_topology'] for name in names}  # pylint: disable=protected-access
    rounds = acceptance_ib.acceptance_ib_runs(acceptance_ib.acceptance_ib_pairs(topologies), settings)
    with open(os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'perftest', 'ib_send_bw_ndr_mibytes_client.txt'), encoding='utf-8') as handle:
        report = {'rc': 0, 'stdout': handle.read(), 'stderr': '', 'changed': False}
    for name in names:
        cluster.variables.set_nonpersistent_facts(name, {'__acceptance_ib_client': report})
    tasks = [task for task in cluster.load('roles', 'acceptance', 'tasks', 'hooks', 'ib_send_bw_round.yml') if _action(task)[0] == 'set_fact']
    more = {'__acceptance_ib_round': rounds[0], '__acceptance_ib_records': [], '__acceptance_ib_attempt': 1}
    per_host_seconds, once_seconds = 0.0, 0.0
    for task in tasks:
        if task.get('run_once'):
            # Once per round for the whole play (run_once set_fact).
            spent, _result = timed(cluster.run_task, task, hook_sample[0], 'slurm_compute', acceptance, more)
            once_seconds += spent
            continue
        for host in hook_sample:
            spent, _result = timed(cluster.run_task, task, host, 'slurm_compute', acceptance, more)
            per_host_seconds += spent
    runs = sum(len(runs) for runs in rounds)
    label = 'acceptance | ib_send_bw_round.yml, its %d set_facts in every round of an attempt (a real run)' % len(tasks)
    scale = runs / float(len(rounds[0]))
    return label, (per_host_seconds + once_seconds,
                   (per_host_seconds / len(hook_sample) * len(names) + once_seconds) * scale)


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def measure(inventory_path, names, sample, hook_sample, templates_dir, builder_files):
    """{label: (seconds measured, seconds for every host)} of the per-host and run_once evaluations on the cluster.

    sample, hook_sample: the compute hosts that evaluate the per-host tasks, the acceptance hook's (their mean is
    multiplied by the hosts of a full run).
    builder_files: (group key task file, choice task file), the tasks copied from roles/build_artifact/tasks/main.yml.
    """
    out = {}
    setup, cluster = timed(Cluster, inventory_path)
    out['setup: inventory and facts (not a part of a run)'] = (setup, setup)
    everyone = 'slurm_controller:slurm_compute'
    controller = simulate.CONTROLLER
    count = len(names)
    more = {'bench_slurm_templates': templates_dir}

    def per_host(label, task, pattern, role, hosts, target, extra=None):
        seconds = 0.0
        for host in hosts:
            spent, _result = timed(cluster.run_task, task, host, pattern, role, extra)
            seconds += spent
        out[label] = (seconds, seconds / len(hosts) * target)

    # slurm: tasks/nodes.yml's run_once tasks on the first play host, their facts given to every host (as run_once does).
    slurm = cluster.role('slurm', [('roles', 'slurm', 'vars', 'Debian.yml')])
    # names.yml first, as nodes.yml and validate.yml include it: its run_once fact replaces the role variable.
    for task in cluster.load('roles', 'slurm', 'tasks', 'names.yml') + cluster.load('roles', 'slurm', 'tasks', 'nodes.yml'):
        action, _args = _action(task)
        if action in ('set_fact', 'assert'):
            spent, facts = timed(cluster.run_task, task, controller, everyone, slurm, more)
            if action == 'set_fact':
                for host in [controller] + names:
                    cluster.variables.set_nonpersistent_facts(host, facts)
            out['slurm | nodes.yml: %s (run_once)' % task['name']] = (spent, spent)
    render = trust_as_template("{{ lookup('ansible.builtin.template', bench_slurm_templates ~ '/slurm.conf.j2') }}")
    spent, conf = timed(lambda: cluster.context(controller, everyone, slurm, more=more).template(render))
    out['slurm | slurm.conf rendered once'] = (spent, spent)
    node_lines = [line for line in conf.splitlines() if line.startswith('NodeName=')]
    scale = cluster.load('tests', 'bench', 'scale', 'scale.yml')
    slurm_play = [play for play in scale if play['name'].startswith('Part slurm: slurm.conf')][0]
    for task in slurm_play['tasks']:
        if _action(task)[0] == 'assert' and not task.get('run_once'):
            per_host('slurm | %s' % task['name'], task, everyone, slurm, sample, count + 1, more)

    # build_artifact: the group key on every host (read by the choice), then validate.yml and the choice on the sample.
    build = cluster.role('build_artifact', [('tests', 'bench', 'scale', 'build_artifact_settings.yml')])
    group_tasks, choice_tasks = (cluster.load(path) for path in builder_files)
    for task in group_tasks:
        per_host('build_artifact | %s (every host)' % task['name'], task, 'slurm_compute', build, names, count)
    for task in cluster.load('roles', 'build_artifact', 'tasks', 'validate.yml') + choice_tasks:
        if task.get('run_once'):
            # Once on the first host, its facts handed to every host of the batch (as run_once set_fact does).
            spent, facts = timed(cluster.run_task, task, names[0], 'slurm_compute', build)
            for host in names:
                cluster.variables.set_nonpersistent_facts(host, facts)
            out['build_artifact | %s (run_once)' % task['name']] = (spent, spent)
        else:
            per_host('build_artifact | %s' % task['name'], task, 'slurm_compute', build, sample, count)

    # acceptance: the hook's tasks in order on each sampled host (check mode).
    acceptance = cluster.role('acceptance')
    hook = cluster.load('roles', 'acceptance', 'tasks', 'hooks', 'ib_send_bw_pairs.yml')
    # Task by task, as the linear strategy runs them: a run_once task once, its facts handed to every host.
    for task in hook:
        if task.get('run_once'):
            spent, facts = timed(cluster.run_task, task, hook_sample[0], 'slurm_compute', acceptance)
            for host in names:
                cluster.variables.set_nonpersistent_facts(host, facts)
            out['acceptance | %s (run_once)' % task['name']] = (spent, spent)
            continue
        spent = 0.0
        for host in hook_sample:
            seconds, _result = timed(cluster.run_task, task, host, 'slurm_compute', acceptance)
            spent += seconds
        out['acceptance | %s' % task['name']] = (spent, spent / len(hook_sample) * count)
    for host in hook_sample:
        cluster.forget(host, '__acceptance_ib_topologies', '__acceptance_ib_plan')
    round_label, round_seconds = measure_round(cluster, names, hook_sample, acceptance)
    out[round_label] = round_seconds
    sizes = cluster.topology_bytes
    per_host_fact = sum(sizes[cluster.inventory.get_host(name).get_vars()['bench_topology_file']] for name in names)
    return out, {'node_lines': len(node_lines), 'topologies_fact_bytes': per_host_fact}
