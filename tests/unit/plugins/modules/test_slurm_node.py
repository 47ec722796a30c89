# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_node: parsing of recorded scontrol outputs, decisions, and the module run against a fake scontrol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.trainstack.cluster.plugins.module_utils._scontrol import parse_node_line, parse_show_node
from ansible_collections.trainstack.cluster.plugins.modules.slurm_node import nodes_to_change, predicted_state, requested_names

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..'))
FIXTURES = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'slurm')
MODULE = os.path.join(REPO, 'plugins', 'modules', 'slurm_node.py')
CASES = sorted(name for name in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, name, 'expected.json')))


def fixture_text(case, name='show_node.txt'):
    with open(os.path.join(FIXTURES, case, name), encoding='utf-8') as handle:
        return handle.read()


def fixture_lines(*cases):
    """{node name: recorded line} from one or more fixture cases."""
    lines = {}
    for case in cases:
        for line in fixture_text(case).splitlines():
            if line.startswith('NodeName='):
                lines[line.split()[0].split('=', 1)[1]] = line
    return lines


# ----------------------------------------------------------------------------------------- parsing

@pytest.mark.parametrize('case', CASES)
def test_parse_recorded_show_node(case):
    with open(os.path.join(FIXTURES, case, 'expected.json'), encoding='utf-8') as handle:
        expected = json.load(handle)
    nodes, missing = parse_show_node(fixture_text(case))
    assert missing == expected['missing']
    assert list(nodes) == list(expected['nodes'])
    for name, want in expected['nodes'].items():
        assert {key: nodes[name][key] for key in want} == want, name


@pytest.mark.parametrize('line, expected', [
    ('NodeName=a State=IDLE Reason=plain text', {'NodeName': 'a', 'State': 'IDLE', 'Reason': 'plain text'}),
    ('NodeName=a Reason=x [root@2025-01-01T00:00:00] Comment=c d', {'Reason': 'x', 'ReasonUser': 'root', 'Comment': 'c d'}),
    ('NodeName=a Reason=has Key=val inside [bob@2025-01-01T00:00:00]', {'Reason': 'has Key=val inside', 'ReasonUser': 'bob'}),
    ('NodeName=a Reason=no trailer Extra={"k":1}', {'Reason': 'no trailer', 'Extra': '{"k":1}'}),
    ('NodeName=a OS=Linux 6.1 #1 SMP  RealMemory=5', {'OS': 'Linux 6.1 #1 SMP', 'RealMemory': '5'}),
    ('NodeName=a AllocTRES= CfgTRES=cpu=2,mem=1G', {'AllocTRES': '', 'CfgTRES': 'cpu=2,mem=1G'}),
])
def test_parse_node_line(line, expected):
    fields = parse_node_line(line)
    assert {key: fields.get(key) for key in expected} == expected


# ----------------------------------------------------------------------------------------- decisions

def _node(state, reason=''):
    return parse_show_node('NodeName=x State=%s%s' % (state, (' Reason=%s [root@2025-01-01T00:00:00]' % reason) if reason else ''))[0]['x']


@pytest.mark.parametrize('wanted, state, reason, current_reason, change', [
    ('drained', 'IDLE', 'maint', '', True),
    ('drained', 'IDLE+DRAIN', 'maint', 'maint', False),
    ('drained', 'MIXED+DRAIN', 'maint', 'maint', False),          # draining counts as drained
    ('drained', 'DRAINED', 'maint', 'maint', False),              # sinfo-style word
    ('drained', 'DRAINING', 'maint', 'maint', False),
    ('drained', 'IDLE+DRAIN', 'maint', 'other', True),            # new reason
    ('drained', 'DOWN', 'maint', 'maint', True),                  # down is not drained
    ('drained', 'DOWN+DRAIN+NOT_RESPONDING', 'maint', 'maint', False),
    ('resumed', 'IDLE+DRAIN', None, 'maint', True),
    ('resumed', 'MIXED+DRAIN', None, 'maint', True),
    ('resumed', 'DOWN+DRAIN', None, 'maint', True),
    ('resumed', 'IDLE', None, '', False),
    ('resumed', 'DOWN', None, 'psu', False),                      # DOWN without DRAIN is left to Slurm
    ('resumed', 'IDLE+NOT_RESPONDING', None, '', False),
    ('query', 'IDLE+DRAIN', None, 'maint', False),
])
def test_decision(wanted, state, reason, current_reason, change):
    nodes = {'x': _node(state, current_reason)}
    assert nodes_to_change(wanted, ['x'], nodes, reason) == (['x'] if change else [])


@pytest.mark.parametrize('wanted, state, reason, after', [
    ('drained', 'IDLE', 'maint', {'state': 'IDLE+DRAIN', 'reason': 'maint'}),
    ('drained', 'IDLE+DRAIN', 'new', {'state': 'IDLE+DRAIN', 'reason': 'new'}),
    ('resumed', 'MIXED+DRAIN', None, {'state': 'MIXED', 'reason': ''}),
    ('resumed', 'DOWN+DRAIN+NOT_RESPONDING', None, {'state': 'DOWN+NOT_RESPONDING', 'reason': ''}),
])
def test_predicted_state(wanted, state, reason, after):
    assert predicted_state(wanted, _node(state, 'old'), reason) == after


@pytest.mark.parametrize('value, names', [
    ('gpu[01-03]', ['gpu01', 'gpu02', 'gpu03']),
    (['gpu01', 'gpu[02-03]', 'gpu01'], ['gpu01', 'gpu02', 'gpu03']),
    ('gpu01,gpu01 cpu1', ['gpu01', 'cpu1']),
])
def test_requested_names(value, names):
    assert requested_names(value) == names


# ----------------------------------------------------------------------------------------- module + fake scontrol

FAKE_SCONTROL = textwrap.dedent(r'''
    #!{python}
    """Fake scontrol: answers `-o show node EXPR` and `update NodeName=EXPR State=... [Reason=...]`
    from a JSON map {{node: recorded line}}, applies updates to it, and logs every call."""
    import json, os, re, sys
    sys.path.insert(0, {module_utils!r})
    from _hostlist import expand

    state_file, log_file = os.environ['FAKE_SCONTROL_STATE'], os.environ['FAKE_SCONTROL_LOG']
    args = sys.argv[1:]
    with open(log_file, 'a') as log:
        log.write(json.dumps(args) + '\n')
    with open(state_file) as handle:
        nodes = json.load(handle)
    words = [a for a in args if a not in ('-o', '--oneliner')]

    def drop_reason(line):
        return re.sub(r' Reason=.*?(?=( Comment=| Extra=|$))', '', line)

    if words[:2] == ['show', 'node'] and len(words) == 3:
        rc = 0
        for name in expand(words[2]):
            if name in nodes:
                print(nodes[name])
            else:
                print('Node %s not found' % name)
                rc = 1
        sys.exit(rc)
    if words and words[0] == 'update':
        fields = dict(w.split('=', 1) for w in words[1:])
        names = expand(fields['NodeName'])
        if os.environ.get('FAKE_SCONTROL_DENY'):
            print('slurm_update error: Access/permission denied')
            sys.exit(1)
        if any(name not in nodes for name in names):
            print('slurm_update error: Invalid node name specified')
            sys.exit(1)
        for name in names:
            line = nodes[name]
            state = re.search(r' State=(\S+)', line).group(1).split('+')
            if fields['State'] == 'DRAIN':
                if 'Reason' not in fields:
                    print('You must specify a reason when DOWNING or DRAINING a node. Request denied')
                    sys.exit(1)
                if 'DRAIN' not in state:
                    state.insert(1, 'DRAIN')
                line = drop_reason(line) + ' Reason=%s [root@2026-01-01T00:00:00]' % fields['Reason']
            elif fields['State'] == 'RESUME':
                if 'DRAIN' not in state and state[0] != 'DOWN':
                    print('slurm_update error: Invalid node state specified')
                    sys.exit(1)
                state = [w for w in state if w != 'DRAIN']
                state[0] = 'IDLE' if state[0] == 'DOWN' else state[0]
                line = drop_reason(line)
            nodes[name] = re.sub(r' State=\S+', ' State=' + '+'.join(state), line)
        with open(state_file, 'w') as handle:
            json.dump(nodes, handle)
        sys.exit(0)
    print('fake scontrol: unsupported %r' % (args,), file=sys.stderr)
    sys.exit(2)
''').lstrip()


class FakeSlurm:
    """A tmp dir with a fake `scontrol` first on PATH, its node table and its call log."""

    def __init__(self, tmp_path, lines):
        self.dir = tmp_path
        self.state_file = tmp_path / 'nodes.json'
        self.log_file = tmp_path / 'calls.log'
        self.state_file.write_text(json.dumps(lines), encoding='utf-8')
        self.log_file.write_text('', encoding='utf-8')
        bindir = tmp_path / 'bin'
        bindir.mkdir()
        script = bindir / 'scontrol'
        script.write_text(FAKE_SCONTROL.format(python=sys.executable, module_utils=os.path.join(REPO, 'plugins', 'module_utils')), encoding='utf-8')
        script.chmod(0o755)
        self.env = dict(os.environ, PATH='%s%s%s' % (bindir, os.pathsep, os.environ.get('PATH', '')),
                        PYTHONPATH=os.path.join(REPO, 'collections'),
                        FAKE_SCONTROL_STATE=str(self.state_file), FAKE_SCONTROL_LOG=str(self.log_file))

    def calls(self):
        return [json.loads(line) for line in self.log_file.read_text(encoding='utf-8').splitlines()]

    def updates(self):
        return [call for call in self.calls() if call[0] == 'update']

    def nodes(self):
        return parse_show_node('\n'.join(json.loads(self.state_file.read_text(encoding='utf-8')).values()))[0]

    def run(self, check_mode=False, diff=False, **params):
        args = dict(params, _ansible_check_mode=check_mode, _ansible_diff=diff)
        args_file = self.dir / 'args.json'
        args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}), encoding='utf-8')
        proc = subprocess.run([sys.executable, MODULE, str(args_file)], env=self.env, capture_output=True, text=True, check=False)
        try:
            return json.loads(proc.stdout)
        except ValueError:
            pytest.fail('module printed no JSON (rc=%s): %s %s' % (proc.returncode, proc.stdout, proc.stderr))


@pytest.fixture
def slurm(tmp_path):
    # gpu01 IDLE, gpu02 IDLE+DRAIN (nvlink reason), gpu03 DOWN (psu), vm MIXED+DRAIN (kernel upgrade): all recorded 22.05
    lines = fixture_lines('22.05-idle', '22.05-drained', '22.05-down', '22.05-draining')
    lines.update(fixture_lines('24.11-draining', '24.11-down'))   # gpu05 MIXED+DRAIN, gpu06 DOWN+DRAIN+NOT_RESPONDING
    return FakeSlurm(tmp_path, lines)


NVLINK = 'nvlink errors: replace baseboard (ticket=123)'

# (params, changed, changed_nodes, update argv after 'update' or None)
SCENARIOS = [
    pytest.param(dict(name='gpu01', state='drained', reason='maint'), True, ['gpu01'],
                 ['NodeName=gpu01', 'State=DRAIN', 'Reason=maint'], id='drain-idle'),
    pytest.param(dict(name='gpu02', state='drained', reason=NVLINK), False, [], None, id='drain-already-same-reason'),
    pytest.param(dict(name='vm', state='drained', reason='kernel upgrade'), False, [], None, id='draining-same-reason'),
    pytest.param(dict(name='gpu02', state='drained', reason='new reason'), True, ['gpu02'],
                 ['NodeName=gpu02', 'State=DRAIN', 'Reason=new reason'], id='drain-new-reason'),
    pytest.param(dict(name='gpu[01-03]', state='drained', reason=NVLINK), True, ['gpu01', 'gpu03'],
                 ['NodeName=gpu[01,03]', 'State=DRAIN', 'Reason=' + NVLINK], id='drain-expression-one-call'),
    pytest.param(dict(name=['gpu02', 'vm', 'gpu05', 'gpu06'], state='resumed'), True, ['gpu02', 'vm', 'gpu05', 'gpu06'],
                 ['NodeName=gpu02,vm,gpu[05-06]', 'State=RESUME'], id='resume-list'),
    pytest.param(dict(name='gpu[01,03]', state='resumed'), False, [], None, id='resume-not-drained'),
    pytest.param(dict(name='gpu[01-03],vm'), False, [], None, id='query-default'),
]


@pytest.mark.parametrize('params, changed, changed_nodes, update', SCENARIOS)
def test_module(slurm, params, changed, changed_nodes, update):
    result = slurm.run(**params)
    assert not result.get('failed'), result
    assert result['changed'] is changed
    assert result['changed_nodes'] == changed_nodes
    assert slurm.updates() == ([['update'] + update] if update else [])
    if update:
        assert result['command'][1:] == ['update'] + update
    # the second run changes nothing
    again = slurm.run(**params)
    assert again['changed'] is False and again['changed_nodes'] == []
    assert len(slurm.updates()) == (1 if update else 0)


@pytest.mark.parametrize('params, state, reason', [
    (dict(name='gpu01', state='drained', reason='maint'), 'IDLE+DRAIN', 'maint'),
    (dict(name='gpu02', state='resumed'), 'IDLE', ''),
    (dict(name='gpu06', state='resumed'), 'DOWN+NOT_RESPONDING', ''),   # predicted; Slurm decides the rest
])
def test_check_mode_reports_diff_and_runs_no_update(slurm, params, state, reason):
    name = params['name']
    before = slurm.nodes()[name]
    result = slurm.run(check_mode=True, diff=True, **params)
    assert result['changed'] is True and result['changed_nodes'] == [name]
    assert slurm.updates() == []
    assert result['command'] == []
    assert result['diff']['before'] == {name: {'state': before['state'], 'reason': before['reason']}}
    assert result['diff']['after'] == {name: {'state': state, 'reason': reason}}


def test_diff_after_a_real_change(slurm):
    result = slurm.run(diff=True, name='gpu01', state='drained', reason='maint')
    assert result['diff'] == {'before': {'gpu01': {'state': 'IDLE', 'reason': ''}}, 'after': {'gpu01': {'state': 'IDLE+DRAIN', 'reason': 'maint'}}}
    assert slurm.nodes()['gpu01']['state'] == 'IDLE+DRAIN' and slurm.nodes()['gpu01']['reason'] == 'maint'


def test_query_returns_parsed_nodes(slurm):
    result = slurm.run(name='gpu0[2,5-6]', state='query')
    assert result['changed'] is False
    nodes = result['nodes']
    assert list(nodes) == ['gpu02', 'gpu05', 'gpu06']
    assert nodes['gpu02']['drain_state'] == 'drained' and nodes['gpu02']['reason'] == NVLINK
    assert nodes['gpu05']['drain_state'] == 'draining' and nodes['gpu05']['gres_used'] == 'gpu:h100:8(IDX:0-7)'
    assert nodes['gpu06']['state_flags'] == ['DRAIN', 'NOT_RESPONDING'] and nodes['gpu06']['cpus'] == 192
    assert slurm.calls() == [['--oneliner', 'show', 'node', 'gpu[02,05-06]']]


@pytest.mark.parametrize('params, message', [
    (dict(name='gpu01,nope', state='drained', reason='x'), 'Slurm does not know node(s): nope'),
    (dict(name='gpu[5-3]', state='resumed'), "invalid node name or hostlist expression: invalid range '5-3'"),
    (dict(name='gpu[01', state='query'), 'unbalanced'),
    (dict(name='gpu01', state='drained'), 'state is drained but all of the following are missing: reason'),
    (dict(name='gpu01', state='drained', reason='  '), 'reason must not be empty'),
    (dict(name='gpu01', state='paused'), 'value of state must be one of'),
])
def test_module_failures_change_nothing(slurm, params, message):
    result = slurm.run(**params)
    assert result.get('failed') is True
    assert message in result['msg']
    assert slurm.updates() == []


def test_update_error_is_reported(slurm):
    slurm.env['FAKE_SCONTROL_DENY'] = '1'
    result = slurm.run(name='gpu01', state='drained', reason='maint')
    assert result.get('failed') is True
    assert 'Access/permission denied' in result['msg'] and result['rc'] == 1
    assert result['changed_nodes'] == ['gpu01']


def test_fake_scontrol_matches_recorded_update_errors(slurm):
    """The fake answers like Slurm 22.05 did for a resume of an idle node and an unknown node."""
    for args, case_file in ((['update', 'NodeName=gpu01', 'State=RESUME'], 'resume_not_drained.txt'),
                            (['update', 'NodeName=nope', 'State=DRAIN', 'Reason=x'], 'unknown_node.txt')):
        proc = subprocess.run(['scontrol'] + args, env=slurm.env, capture_output=True, text=True, check=False)
        assert proc.returncode == 1
        assert proc.stdout == fixture_text('22.05-update_errors', case_file)
    proc = subprocess.run(['scontrol', '-o', 'show', 'node', 'gpu01,nope'], env=slurm.env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout == fixture_text('22.05-partial')


def test_multi_line_and_one_line_forms_read_alike():
    """The same two nodes, recorded from one Slurm 22.05 controller with `scontrol show node` and `scontrol -o show node`."""
    multi = parse_show_node(fixture_text('22.05-multiline'))[0]
    single = parse_show_node(fixture_text('22.05-registration_drain'))[0]
    assert list(multi) == list(single) == ['gpu01', 'gpu02']
    for name in multi:
        assert {k: v for k, v in multi[name].items() if k != 'fields'} == {k: v for k, v in single[name].items() if k != 'fields'}
