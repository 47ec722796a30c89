# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The AWX objects as data (data/awx_templates.yml) and the filters playbooks/awx_templates.yml applies them with.

AWX's own survey rules (awx/api/views JobTemplateSurveySpec._validate_spec_data) are applied to every survey by the
filter awx_survey_problems; its cases below are written by hand from those rules.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.awx import awx_survey_problems, awx_workflow_nodes
from ansible_collections.trainstack.cluster.plugins.filter.upgrade import COMPONENTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Loader(yaml.SafeLoader):
    """safe_load plus Ansible's !unsafe (the credential injectors are templates AWX renders)."""


_Loader.add_constructor('!unsafe', lambda loader, node: loader.construct_scalar(node))


def _objects():
    with open(os.path.join(ROOT, 'data', 'awx_templates.yml'), encoding='utf-8') as handle:
        return yaml.load(handle, Loader=_Loader)  # nosec: a loader built on SafeLoader


def _role_options():
    names = set()
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(path, encoding='utf-8') as handle:
            for entry in (yaml.safe_load(handle)['argument_specs'] or {}).values():
                names.update((entry or {}).get('options') or {})
    return names


def _role_defaults():
    names = set()
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'defaults', 'main.yml')):
        with open(path, encoding='utf-8') as handle:
            names.update(yaml.safe_load(handle) or {})
    return names


# Variables a playbook reads itself (documented in its header), not a role.
PLAYBOOK_VARIABLES = {
    'diagnose.yml': {'job', 'nccl_log', 'diagnose_samples', 'diagnose_thresholds', 'diagnose_fail_on_findings'},
}
# Never a survey answer: they come from the credential type.
SECRETS = {'slurm_munge_key', 'slurm_dbd_db_password'}
# Only the cluster's operator sets these (as inventory or launch variables), never someone answering a survey.
OPERATOR_ONLY = {'upgrade_cancel_jobs'}


def _survey(template):
    return {'name': template['name'], 'description': template['description'], 'spec': template['survey']}


TEMPLATES = _objects()['job_templates']
WITH_SURVEY = [template for template in TEMPLATES if 'survey' in template]


@pytest.mark.parametrize('template', WITH_SURVEY, ids=[template['name'] for template in WITH_SURVEY])
def test_surveys_pass_awx_rules(template):
    assert awx_survey_problems(_survey(template)) == []


def test_the_templates_are_the_issues_list():
    assert [template['name'] for template in TEMPLATES] == [
        'trainstack site', 'trainstack validate', 'trainstack diagnose', 'trainstack upgrade', 'trainstack probe',
        'trainstack record']


@pytest.mark.parametrize('template', TEMPLATES, ids=[template['name'] for template in TEMPLATES])
def test_templates_name_real_playbooks_variables_and_no_secret(template):
    playbook = os.path.join(ROOT, 'playbooks', template['playbook'])
    # playbooks/awx_templates.yml sets job_slice_count 1 for every template; the data may only repeat it.
    assert template.get('job_slice_count', 1) == 1
    known = _role_options() | _role_defaults() | PLAYBOOK_VARIABLES.get(template['playbook'], set())
    for question in template.get('survey', []):
        assert question['variable'] in known, question['variable']
        assert question['variable'] not in SECRETS | OPERATOR_ONLY and question['type'] != 'password', question['variable']
    assert os.path.exists(playbook), template['playbook']
    with open(playbook, encoding='utf-8') as handle:
        text = handle.read()
    # A playbook's own variables are documented in it (a role's, in its argument specs).
    assert [name for name in sorted(PLAYBOOK_VARIABLES.get(template['playbook'], ())) if name not in text] == []


def test_upgrade_template_is_never_sliced_and_asks_only_what_a_user_may_choose():
    (upgrade,) = [template for template in TEMPLATES if template['playbook'] == 'upgrade.yml']
    assert (upgrade['job_slice_count'], upgrade['ask_limit_on_launch']) == (1, True)
    questions = {question['variable']: question for question in upgrade['survey']}
    assert {name: (question['type'], question.get('min'), question.get('max'), question['default'])
            for name, question in questions.items()} == {
        'upgrade_components': ('multiselect', None, None, ''),
        'upgrade_serial': ('text', 1, 64, '1'),
        'upgrade_max_fail_percentage': ('integer', 0, 100, 0),
        'upgrade_drain_timeout': ('integer', 60, 86400, 3600),
    }
    assert questions['upgrade_components']['choices'] == ['driver', 'cuda', 'nccl', 'slurm', 'ucx', 'openmpi', 'nccl_tests', 'pytorch']
    # The components the upgrade filters know, in their order.
    assert questions['upgrade_components']['choices'] == list(COMPONENTS)


def test_credential_type_injects_the_slurm_role_secrets():
    (credential,) = _objects()['credential_types']
    injected = credential['injectors']['extra_vars']
    assert set(injected) == SECRETS and SECRETS <= _role_options()
    fields = {field['id']: field for field in credential['inputs']['fields']}
    assert all(field['secret'] for field in fields.values())
    # Each injector renders one of the credential's own inputs.
    assert all(any('{{ %s' % name in template for name in fields) for template in injected.values())


def test_workflow_runs_existing_templates_in_order():
    names = {template['name'] for template in TEMPLATES}
    for workflow in _objects()['workflows']:
        assert set(workflow['nodes']) <= names
        nodes = awx_workflow_nodes(workflow['nodes'], 'Default')
        assert [node['unified_job_template']['name'] for node in nodes] == workflow['nodes']
    assert awx_workflow_nodes(['a', 'b'], 'Org') == [
        {'identifier': 'step-1', 'unified_job_template': {'name': 'a', 'type': 'job_template', 'organization': {'name': 'Org'}},
         'related': {'success_nodes': [{'identifier': 'step-2'}], 'failure_nodes': [], 'always_nodes': []}},
        {'identifier': 'step-2', 'unified_job_template': {'name': 'b', 'type': 'job_template', 'organization': {'name': 'Org'}},
         'related': {'success_nodes': [], 'failure_nodes': [], 'always_nodes': []}}]


def _q(**changes):
    question = {'type': 'text', 'question_name': 'Q', 'variable': 'v', 'required': True}
    question.update(changes)
    return {key: value for key, value in question.items() if value is not None}


@pytest.mark.parametrize('spec, expected', [
    ({'name': 's', 'description': 'd', 'spec': []}, ['spec has no questions']),
    ({'name': 's', 'spec': [_q()]}, ['description must be a string']),
    ({'name': 's', 'description': 'd', 'spec': [_q(required='yes')]}, ['question 0: required must be a boolean']),
    ({'name': 's', 'description': 'd', 'spec': [_q(variable=None)]}, ['question 0: variable is missing']),
    ({'name': 's', 'description': 'd', 'spec': [_q(), _q()]}, ['question 1 (v): variable duplicated']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='boolean')]},
     ['question 0 (v): type boolean is not one of text, textarea, password, multiplechoice, multiselect, integer, float']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='integer', default='300')]}, ["question 0 (v): default '300' is not a number"]),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='float', default=1)]}, []),
    ({'name': 's', 'description': 'd', 'spec': [_q(min=1.5)]}, ['question 0 (v): min must be an integer']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='multiplechoice', default='a')]},
     ['question 0 (v): a multiplechoice question needs choices']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='multiplechoice', choices=['a', 'b'], default='c')]},
     ['question 0 (v): the default must be one of the choices']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='multiplechoice', choices='a\nb', default='a\nb')]},
     ['question 0 (v): a multiplechoice question takes one default']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='multiselect', choices='a\nb\n', default='a\nb')]}, []),
    ({'name': 's', 'description': 'd', 'spec': [_q(default='$encrypted$')]}, ['question 0 (v): $encrypted$ is reserved for password defaults']),
    ({'name': 's', 'description': 'd', 'spec': [_q(type='password', default='$encrypted$')]}, []),
    # Secrets: the credential's variables and names that say they are one, unless asked as a password.
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='slurm_munge_key')]},
     ['question 0 (slurm_munge_key): a secret is asked in a question of type text (AWX shows and stores the answer in clear): '
      'give it through the credential, or at least make it a password question']),
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='slurm_dbd_db_password', type='textarea')]},
     ['question 0 (slurm_dbd_db_password): a secret is asked in a question of type textarea (AWX shows and stores the answer in '
      'clear): give it through the credential, or at least make it a password question']),
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='api_token', type='multiplechoice', choices=['a'], default='a'),
                                                _q(variable='ldap_bind_secret', type='integer', default=1),
                                                _q(variable='ssh_key'), _q(variable='vault_password', type='password')]},
     ['question 0 (api_token): a secret is asked in a question of type multiplechoice (AWX shows and stores the answer in clear): '
      'give it through the credential, or at least make it a password question',
      'question 1 (ldap_bind_secret): a secret is asked in a question of type integer (AWX shows and stores the answer in clear): '
      'give it through the credential, or at least make it a password question',
      'question 2 (ssh_key): a secret is asked in a question of type text (AWX shows and stores the answer in clear): '
      'give it through the credential, or at least make it a password question']),
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='slurm_munge_key', type='password')]}, []),
    # Only the end of a name says secret: these are not.
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='keyboard_layout'), _q(variable='password_policy'),
                                                _q(variable='token_count', type='integer', default=1)]}, []),
    # The upgrade's operator switch: not a question AWX could ask, there is no boolean type.
    ({'name': 's', 'description': 'd', 'spec': [_q(variable='upgrade_cancel_jobs', type='boolean')]},
     ['question 0 (upgrade_cancel_jobs): type boolean is not one of text, textarea, password, multiplechoice, multiselect, '
      'integer, float']),
])
def test_awx_survey_rules(spec, expected):
    assert awx_survey_problems(spec) == expected


def test_bad_input():
    with pytest.raises(AnsibleFilterError):
        awx_survey_problems([])
    with pytest.raises(AnsibleFilterError):
        awx_workflow_nodes([], 'Default')
