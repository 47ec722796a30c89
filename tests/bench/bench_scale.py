# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side cost of the collection's plays at 10, 100, 1000 and 4000 simulated hosts (issue 30 item 1).

Run from the repository root:  python tests/bench/bench_scale.py        (SCALE_SIZES=10,100 for a quick run)

For each size it writes an inventory (slurm_controller: 1 host, slurm_compute: N hosts, connection local) whose hosts
get the trainstack_topology the real topology_facts module returned for recorded roots (probed once per hardware
kind, tests/bench/scale/simulate.py) and measures three ways:

1. ansible-playbook (sizes up to SCALE_PLAYBOOK_MAX, 1000): tests/bench/scale/scale.yml in check mode: the slurm
   role's tasks_from nodes.yml, slurm.conf and gres.conf rendered once and then per host as config.yml does, the
   role variables each host evaluates; build_artifact's validation and builder choice; the acceptance hook
   ib_send_bw_pairs (its pair schedule: check mode runs no perftest). A callback (tests/bench/scale/callback_plugins)
   times every task. Above SCALE_FULL (10) hosts the per-host work whose cost grows with N runs on a sample of hosts
   (SCALE_SAMPLE, 4; the hook SCALE_HOOK_SAMPLE, 2) in plays that keep the whole cluster, and is multiplied by
   N / sample ("projected to every host"): a full run at 1000 hosts takes hours.
2. The Python-API path at every size (tests/bench/scale/api.py): ansible's InventoryManager, VariableManager and
   Templar template the same tasks for the sampled hosts, without forks.
3. The hook's later steps (rounds, records, verdicts: they need perftest on real nodes): their filters timed directly
   in Python on the same N hosts, one call and as many calls as the hook makes (one per host).

Prints seconds and seconds per host per part and task, the NodeName lines of the rendered slurm.conf and its render
time, and the growth exponent of each (least squares of log(seconds) over log(hosts): 1 is linear, 2 quadratic) with
the slope between the two largest sizes. SCALE_FORKS (10), SCALE_PY_MAX (4000: largest size of path 3), SCALE_KEEP=1
keeps the work directory. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE_DIR = os.path.join(ROOT, 'tests', 'bench', 'scale')
sys.path.insert(0, SCALE_DIR)

# pylint: disable=wrong-import-position
import api  # noqa: E402
import simulate  # noqa: E402

# ansible's collection loader (collections/ of the checkout) imports the collection, as it does for ansible-playbook.
api.start_plugins()
from ansible_collections.trainstack.cluster.plugins.filter import acceptance_ib  # noqa: E402  pylint: disable=import-error

PLAYBOOK_DIR = os.path.dirname(sys.executable)
ANSIBLE_PLAYBOOK = os.path.join(PLAYBOOK_DIR, 'ansible-playbook')
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')
PERFTEST = os.path.join(FIXTURES, 'perftest')
SLURM_TEMPLATES = os.path.join(ROOT, 'roles', 'slurm', 'templates')
BUILD_ARTIFACT_MAIN = os.path.join(ROOT, 'roles', 'build_artifact', 'tasks', 'main.yml')
# The builder choice: the set_fact tasks of build_artifact's main.yml that set these (the tasks after them run
# modules on the nodes: stat, find, file).
BUILDER_FACTS = ('__build_artifact_key', '__build_artifact_builder')
IB_SETTINGS = {'bw_size': 65536, 'lat_size': 2, 'tcp_port': 18515, 'timeout_s': 60}  # the role's defaults


def env_int(name, default):
    return int(os.environ.get(name) or default)


def sizes():
    return [int(text) for text in (os.environ.get('SCALE_SIZES') or '10,100,1000,4000').split(',') if text.strip()]


def ansible_env(extra=None):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'collections'),
               ANSIBLE_NOCOLOR='1', ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_FORKS=str(env_int('SCALE_FORKS', 10)),
               ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_DEPRECATION_WARNINGS='0')
    env.update(extra or {})
    return env


def run_logged(cmd, env, log):
    """Run cmd with its output in log; (rc, wall seconds, CPU seconds of it and its children, start time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    with open(log, 'w', encoding='utf-8') as handle:
        rc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return rc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), start


def tail(path, lines=30):
    with open(path, encoding='utf-8', errors='replace') as handle:
        return ''.join(handle.readlines()[-lines:])


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def probe_topologies(work):
    """{case: trainstack_topology} from the real topology_facts module on each recorded root (one playbook run)."""
    sys.path.insert(0, os.path.join(FIXTURES, 'topology'))
    import make_fixtures  # noqa: E402  pylint: disable=import-outside-toplevel,import-error
    roots = {case: make_fixtures.materialize(case, os.path.join(work, 'roots', case)) for case in simulate.cases()}
    log = os.path.join(work, 'probe.log')
    rc, wall, _cpu, _start = run_logged([ANSIBLE_PLAYBOOK, '-i', 'localhost,', '-c', 'local', os.path.join(SCALE_DIR, 'probe.yml'),
                                         '-e', json.dumps({'bench_roots': roots, 'bench_out': work})], ansible_env(), log)
    if rc != 0:
        print('topology_facts on the recorded roots failed (rc %d):\n%s' % (rc, tail(log)))
        return None
    with open(os.path.join(work, 'topology.json'), encoding='utf-8') as handle:
        topologies = json.load(handle)
    print('topology_facts on %d recorded roots: %.1f s (%s)' % (len(roots), wall, ', '.join(sorted(roots))))
    return topologies


def write_builder_tasks(work):
    """The builder tasks of roles/build_artifact/tasks/main.yml, copied as they are: (group key file, choice file), names.

    The group key task (it sets __build_artifact_key; every host runs it), then the set_fact tasks after it up to the
    one that sets __build_artifact_builder: the choice (per host, or run_once and handed to every host).
    """
    with open(BUILD_ARTIFACT_MAIN, encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    facts = [set(task.get('ansible.builtin.set_fact') or {}) for task in tasks]
    first = [index for index, names in enumerate(facts) if BUILDER_FACTS[0] in names][0]
    last = [index for index, names in enumerate(facts) if BUILDER_FACTS[1] in names][0]
    chosen = ([tasks[first]], [task for task, names in zip(tasks[first + 1:last + 1], facts[first + 1:last + 1]) if names])
    paths = []
    for label, part in zip(('group', 'choice'), chosen):
        paths.append(os.path.join(work, 'build_artifact_%s.yml' % label))
        with open(paths[-1], 'w', encoding='utf-8') as handle:
            yaml.safe_dump(part, handle, sort_keys=False, width=1000)
    return (paths[0], paths[1]), [task['name'] + (' (run_once)' if task.get('run_once') else '') for task in chosen[0] + chosen[1]]


class Size:
    """One simulated cluster: its inventory, hosts and samples."""

    def __init__(self, work, size, topologies):
        self.size = size
        self.directory = os.path.join(work, 'n%d' % size)
        os.makedirs(self.directory, exist_ok=True)
        self.inventory, self.names, self.kinds = simulate.write_cluster(self.directory, size, topologies)
        self.full = size <= env_int('SCALE_FULL', 10)
        self.sample = self.names if self.full else simulate.sample(self.names, env_int('SCALE_SAMPLE', 4))
        self.hook_sample = self.names if self.full else simulate.sample(self.sample, env_int('SCALE_HOOK_SAMPLE', 2))


def durations(timer):
    """[(play mark, task mark, seconds)] from the callback's marks: a task lasts until the next mark."""
    marks = timer['marks']
    out = []
    play = None
    for mark, following in zip(marks, marks[1:]):
        if mark['kind'] == 'play':
            play = mark
            out.append((play, dict(mark, name='(play start)', hosts=0, run_once=True), following['time'] - mark['time']))
        elif mark['kind'] == 'task':
            out.append((play, mark, following['time'] - mark['time']))
    return out


def part_of(play):
    match = re.match(r'Part (\S+):', play)
    return match.group(1) if match else play


def factor(play, task, size):
    """N / hosts for a task that ran for a sample of the hosts it runs for in a full run; 1 otherwise."""
    target = size + 1 if play.get('target') == 'all' else size
    if task.get('run_once') or not task.get('hosts') or task['hosts'] >= target:
        return 1.0
    return target / float(task['hosts'])


def run_playbook(cluster, builder_files):
    """One ansible-playbook run of scale.yml; a dict of its figures, or None."""
    directory, size = cluster.directory, cluster.size
    timer_file = os.path.join(directory, 'timer.json')
    extra = {'bench_out': directory, 'bench_slurm_templates': SLURM_TEMPLATES, 'bench_sample': cluster.sample,
             'bench_hook_sample': cluster.hook_sample,
             'bench_slurm_hosts': 'slurm_controller:slurm_compute' if cluster.full else ','.join([simulate.CONTROLLER] + cluster.sample),
             'bench_build_artifact_group': builder_files[0], 'bench_build_artifact_choice': builder_files[1]}
    extra_file = os.path.join(directory, 'extra_vars.json')
    with open(extra_file, 'w', encoding='utf-8') as handle:
        json.dump(extra, handle)
    env = ansible_env({'ANSIBLE_CALLBACK_PLUGINS': os.path.join(SCALE_DIR, 'callback_plugins'), 'ANSIBLE_GATHERING': 'explicit',
                       'ANSIBLE_CALLBACKS_ENABLED': 'bench_timer', 'BENCH_TIMER_OUT': timer_file})
    log = os.path.join(directory, 'ansible.log')
    cmd = [ANSIBLE_PLAYBOOK, '-i', cluster.inventory, os.path.join(SCALE_DIR, 'scale.yml'), '--check', '-e', '@' + extra_file]
    rc, wall, cpu, start = run_logged(cmd, env, log)
    if rc != 0 or not os.path.exists(timer_file):
        print('  %d hosts: ansible-playbook failed (rc %d), log %s:\n%s' % (size, rc, log, tail(log)))
        return None
    with open(timer_file, encoding='utf-8') as handle:
        timer = json.load(handle)
    tasks = [(play, task, seconds, seconds * factor(play, task, size)) for play, task, seconds in durations(timer)]
    projected = {'startup': timer['marks'][0]['time'] - start}
    for play, _task, _seconds, full_seconds in tasks:
        part = part_of(play['name'])
        projected[part] = projected.get(part, 0.0) + full_seconds
    with open(os.path.join(directory, 'slurm.conf'), encoding='utf-8') as handle:
        node_lines = [line for line in handle.read().splitlines() if line.startswith('NodeName=')]
    per_host = [seconds / task['hosts'] for _play, task, seconds, _full in tasks
                if task['name'].startswith('Render slurm.conf for this host') and task['hosts']]
    return {'size': size, 'wall': wall, 'cpu': cpu, 'projected': projected, 'tasks': tasks,
            'rss_mib': timer['max_rss_kib'] / 1024.0, 'node_lines': len(node_lines),
            'longest_line': max((len(line) for line in node_lines), default=0),
            'render_once': sum(seconds for _play, task, seconds, _full in tasks if task['name'] == 'Write slurm.conf once'),
            'render_per_host': per_host[0] if per_host else 0.0}


def run_api(cluster, builder_files):
    """The Python-API path on the cluster: {'items': {label: (measured, every host)}, 'wall', 'node_lines', ...}."""
    wall, (items, figures) = timed(api.measure, cluster.inventory, cluster.names, cluster.sample, cluster.hook_sample,
                                   SLURM_TEMPLATES, builder_files)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return dict(figures, items=items, wall=wall, size=cluster.size, rss_mib=rss)


def ib_results(runs):
    """Client results of a round as the hook registers them: the recorded perftest reports (rc 0)."""
    texts = {}
    for test, name in (('bw', 'ib_send_bw_ndr_mibytes_client.txt'), ('lat', 'ib_send_lat_ndr_percentiles_client.txt')):
        with open(os.path.join(PERFTEST, name), encoding='utf-8') as handle:
            texts[test] = handle.read()
    return {run['client']: {'rc': 0, 'stdout': texts[run['test']], 'stderr': ''} for run in runs}


def time_ib_filters(size, topologies):
    """Seconds of the ib_send_bw_pairs hook's filters on `size` hosts: {filter: (one call, as many calls as the hook makes)}.

    The hook calls acceptance_ib_pairs twice per host, acceptance_ib_runs and acceptance_ib_links once per host per
    attempt, acceptance_ib_records once per host per round, acceptance_ib_node_check once per host (its own node).
    """
    by_kind = {kind: case for kind, case, _share, _os in simulate.HARDWARE}
    hosts = {simulate.host_name(index, size): topologies[by_kind[kind]] for index, kind in enumerate(simulate.kinds_of(size), start=1)}
    one_pairs, plan = timed(acceptance_ib.acceptance_ib_pairs, hosts)
    one_runs, rounds = timed(acceptance_ib.acceptance_ib_runs, plan, IB_SETTINGS)
    records, one_records = [], 0.0
    for runs in rounds:
        seconds, found = timed(acceptance_ib.acceptance_ib_records, runs, ib_results(runs), 1, IB_SETTINGS)
        one_records += seconds
        records += found
    one_links, links = timed(acceptance_ib.acceptance_ib_links, records, plan, 0.9, None, 3)
    checks = 0.0
    for host in hosts:
        seconds, _check = timed(acceptance_ib.acceptance_ib_node_check, links, host, plan)
        checks += seconds
    count = len(hosts)
    return {
        'figures': {'links': len(links), 'records': len(records), 'rounds': len(rounds)},
        'acceptance_ib_pairs': (one_pairs, 2 * count * one_pairs),
        'acceptance_ib_runs': (one_runs, count * one_runs),
        'acceptance_ib_records': (one_records, count * one_records),
        'acceptance_ib_links': (one_links, count * one_links),
        'acceptance_ib_node_check': (checks / max(count, 1), checks),
    }


def fit(points):
    """(exponent of the least-squares fit of log(seconds) over log(hosts), slope between the last two points)."""
    points = [(size, seconds) for size, seconds in points if seconds > 0]
    if len(points) < 2:
        return None, None
    xs = [math.log(size) for size, _seconds in points]
    ys = [math.log(seconds) for _size, seconds in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    return slope, (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])


def exponent_text(points):
    slope, last = fit(points)
    return '%5.2f %5.2f' % (slope, last) if slope is not None else '    -     -'


def print_table(title, rows, measured):
    """rows: [(label, {size: seconds})]; one line per label: seconds, seconds per host at the largest size, exponents."""
    print('\n%s' % title)
    print('  %-80s %s %10s %11s' % ('', ' '.join('%10d' % size for size in measured), 's/host', 'fit  last'))
    for label, values in rows:
        cells = ' '.join('%10s' % (('%.3f' if values[size] < 1e5 else '%.0f') % values[size] if size in values else '-') for size in measured)
        biggest = max((size for size in measured if size in values), default=None)
        per_host = '%.2e' % (values[biggest] / biggest) if biggest else '-'
        print('  %-80s %s %10s %11s' % (label[:80], cells, per_host, exponent_text(sorted(values.items()))))


def report_playbook(results):
    done = [result['size'] for result in results]
    print('\n== 1. ansible-playbook (scale.yml); "projected" multiplies what the sampled hosts did by N / sample')
    for result in results:
        print('  %5d hosts: %7.1f s wall, %7.1f s CPU, controller RSS %5.0f MiB; %d NodeName lines (longest %d chars); '
              'slurm.conf: %.3f s (run_once template task), %.3f s per host (lookup)' % (
                  result['size'], result['wall'], result['cpu'], result['rss_mib'], result['node_lines'],
                  result['longest_line'], result['render_once'], result['render_per_host']))
    rows = [('total wall, measured', {r['size']: r['wall'] for r in results}),
            ('total CPU, measured (controller and workers)', {r['size']: r['cpu'] for r in results}),
            ('total, projected to every host', {r['size']: sum(r['projected'].values()) for r in results})]
    part_names = []
    for result in results:
        part_names += [name for name in result['projected'] if name not in part_names]
    rows += [('part %s, projected' % name, {r['size']: r['projected'][name] for r in results if name in r['projected']}) for name in part_names]
    print_table('Seconds per part (fit: exponent over all sizes; last: slope between the two largest sizes)', rows, done)
    keys = []
    for result in results:
        keys += [(part_of(play['name']), task['name']) for play, task, _s, _f in result['tasks'] if (part_of(play['name']), task['name']) not in keys]
    rows = []
    for part, name in keys:
        values, sampled = {}, ''
        for result in results:
            found = [(seconds, full) for play, task, seconds, full in result['tasks'] if (part_of(play['name']), task['name']) == (part, name)]
            if found:
                values[result['size']] = sum(full for _seconds, full in found)
                if any(abs(full - seconds) > 1e-9 for seconds, full in found):
                    sampled = ' *'
        rows.append(('%s | %s%s' % (part, name, sampled), values))
    print_table('Seconds per task, projected to every host (* sampled; an include\'s tasks count once per include)', rows, done)
    print_table('slurm.conf', [('rendered once (run_once template task, module run included)', {r['size']: r['render_once'] for r in results}),
                               ('rendered per host (lookup, one host), s', {r['size']: r['render_per_host'] for r in results})], done)


def report_api(results):
    done = [result['size'] for result in results]
    print('\n== 2. Python API (tests/bench/scale/api.py): per-host tasks templated for the sampled hosts, x N / sample')
    for result in results:
        print('  %5d hosts: %6.1f s wall, peak RSS so far %5.0f MiB; %d NodeName lines; the hook\'s __acceptance_ib_topologies fact: '
              '%.1f MB of JSON per host' % (result['size'], result['wall'], result['rss_mib'], result['node_lines'],
                                            result['topologies_fact_bytes'] / 1e6))
    labels = []
    for result in results:
        labels += [label for label in result['items'] if label not in labels]
    parts = {}
    for label in labels:
        if label.startswith('setup'):
            continue
        part = label.split(' | ')[0] + (' run_once' if 'run_once' in label or 'rendered once' in label
                                        else ' rounds (a real run, one attempt)' if 'a real run' in label else ' per host')
        for result in results:
            if label in result['items']:
                parts.setdefault(part, {})
                parts[part][result['size']] = parts[part].get(result['size'], 0.0) + result['items'][label][1]
    total = {size: sum(values.get(size, 0.0) for values in parts.values()) for size in done}
    print_table('Seconds per part, every host', [('total', total)] + sorted(parts.items()), done)
    rows = [(label, {r['size']: r['items'][label][1] for r in results if label in r['items']}) for label in labels]
    print_table('Seconds per task, every host', rows, done)


def report_ib_filters(measured, topologies):
    ib = {size: time_ib_filters(size, topologies) for size in measured}
    if not ib:
        return
    print('\n== 3. ib_send_bw_pairs hook filters in Python (plugins/filter/acceptance_ib.py), one attempt on N hosts:')
    for size in measured:
        print('  %5d hosts: %d port pairs, %d records, %d rounds' % (
            size, ib[size]['figures']['links'], ib[size]['figures']['records'], ib[size]['figures']['rounds']))
    rows = []
    for name in ('acceptance_ib_pairs', 'acceptance_ib_runs', 'acceptance_ib_records', 'acceptance_ib_links', 'acceptance_ib_node_check'):
        rows.append(('%s, one call' % name, {size: ib[size][name][0] for size in measured}))
        rows.append(('%s, the hook\'s calls (per host)' % name, {size: ib[size][name][1] for size in measured}))
    print_table('Seconds of the hook\'s filters (one call; all the calls the hook makes on N hosts)', rows, measured)


def main():
    measured = sizes()
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        print('skipped: no ansible-playbook beside %s' % sys.executable)
        return
    work = tempfile.mkdtemp(prefix='bench-scale-')
    try:
        version = subprocess.run([os.path.join(PLAYBOOK_DIR, 'ansible'), '--version'], capture_output=True, text=True,
                                 check=False, env=ansible_env()).stdout.splitlines()[0]
        print('scale benchmark: %s, Python %s, %d CPUs, forks %d, sizes %s; ansible-playbook up to %d hosts; every host does the '
              'per-host work up to %d hosts, else a sample of %d (the hook %d)' % (
                  version, sys.version.split()[0], os.cpu_count(), env_int('SCALE_FORKS', 10), ','.join(map(str, measured)),
                  env_int('SCALE_PLAYBOOK_MAX', 1000), env_int('SCALE_FULL', 10), env_int('SCALE_SAMPLE', 4),
                  env_int('SCALE_HOOK_SAMPLE', 2)))
        topologies = probe_topologies(work)
        if topologies is None:
            return
        builder_files, builder_names = write_builder_tasks(work)
        print('build_artifact tasks copied from tasks/main.yml: %s' % '; '.join(builder_names))
        played, through_api = [], []
        for size in measured:
            cluster = Size(work, size, topologies)
            if size <= env_int('SCALE_PLAYBOOK_MAX', 1000):
                result = run_playbook(cluster, builder_files)
                if result is not None:
                    played.append(result)
                    print('  %5d hosts: ansible-playbook %.1f s' % (size, result['wall']))
            through_api.append(run_api(cluster, builder_files))
            kinds = ', '.join('%s %d' % item for item in sorted(cluster.kinds.items()))
            print('  %5d hosts: Python API %.1f s (kinds %s)' % (size, through_api[-1]['wall'], kinds))
            sys.stdout.flush()
        if played:
            report_playbook(played)
        report_api(through_api)
        report_ib_filters([size for size in measured if size <= env_int('SCALE_PY_MAX', 4000)], topologies)
    finally:
        if os.environ.get('SCALE_KEEP') == '1':
            print('work directory kept: %s' % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
