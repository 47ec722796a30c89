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


# Variables a playbook reads itself (documented in its header), not a role.
PLAYBOOK_VARIABLES = {'diagnose.yml': {'job', 'nccl_log', 'diagnose_samples', 'diagnose_thresholds', 'diagnose_fail_on_findings'}}
# Never a survey answer: they come from the credential type.
SECRETS = {'slurm_munge_key', 'slurm_dbd_db_password'}


def _survey(template):
    return {'name': template['name'], 'description': template['description'], 'spec': template['survey']}


TEMPLATES = _objects()['job_templates']
WITH_SURVEY = [template for template in TEMPLATES if 'survey' in template]


@pytest.mark.parametrize('template', WITH_SURVEY, ids=[template['name'] for template in WITH_SURVEY])
def test_surveys_pass_awx_rules(template):
    assert awx_survey_problems(_survey(template)) == []


@pytest.mark.parametrize('template', TEMPLATES, ids=[template['name'] for template in TEMPLATES])
def test_templates_name_real_playbooks_variables_and_no_secret(template):
    assert os.path.exists(os.path.join(ROOT, 'playbooks', template['playbook'])), template['playbook']
    # playbooks/awx_templates.yml sets job_slice_count 1 for every template; the data may not ask for slicing.
    assert 'job_slice_count' not in template
    known = _role_options() | PLAYBOOK_VARIABLES.get(template['playbook'], set())
    for question in template.get('survey', []):
        assert question['variable'] in known, question['variable']
        assert question['variable'] not in SECRETS and question['type'] != 'password', question['variable']


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
])
def test_awx_survey_rules(spec, expected):
    assert awx_survey_problems(spec) == expected


def test_bad_input():
    with pytest.raises(AnsibleFilterError):
        awx_survey_problems([])
    with pytest.raises(AnsibleFilterError):
        awx_workflow_nodes([], 'Default')
