# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""AWX objects of the collection (controller side, pure).

- awx_survey_problems: what AWX's API would refuse in a survey spec, checked before anything is sent.
- awx_workflow_nodes: the workflow_nodes of awx.awx.workflow_job_template for job templates run one after another.

The survey rules are the ones AWX's API applies to a survey spec (awx/api/views JobTemplateSurveySpec: required
fields and their types, unique variables, the allowed question types and their default's type, integer bounds,
choices for the choice types, a default among the choices, one default for multiplechoice, $encrypted$ only for a
password). AWX checks nothing else: the play validates every answer again.

One rule is the collection's own: a question on a secret's variable (the slurm role's munge key and slurmdbd password,
or any name ending in _password, _key, _token or _secret) must be a password question. The play cannot tell a survey
answer from the credential's value (both arrive as extra vars, the job's after the credential's), so this is where a
secret asked in clear is refused.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# Question type -> the Python types its default may have (AWX's ALLOWED_TYPES).
ALLOWED_TYPES = {'text': (str,), 'textarea': (str,), 'password': (str,), 'multiplechoice': (str,), 'multiselect': (str,),
                 'integer': (int,), 'float': (float, int)}

# Variables that hold a secret: the ones the credential type injects, and names that say they are one.
SECRET_VARIABLES = ('slurm_munge_key', 'slurm_dbd_db_password')
_SECRET_NAME = re.compile(r'_(?:password|key|token|secret)\Z')


def _is_secret(variable):
    return variable in SECRET_VARIABLES or bool(_SECRET_NAME.search(variable))


def _choices(question):
    choices = question.get('choices')
    if isinstance(choices, str):
        return [line for line in choices.splitlines() if line.strip()]
    return list(choices or [])


def _question_problems(index, question, seen):
    where = 'question %d' % index
    if not isinstance(question, dict):
        return ['%s is not a mapping' % where]
    out = []
    for field in ('type', 'question_name', 'variable', 'required'):
        wanted = bool if field == 'required' else str
        if field not in question:
            out.append('%s: %s is missing' % (where, field))
        elif not isinstance(question[field], wanted):
            out.append('%s: %s must be a %s' % (where, field, 'boolean' if wanted is bool else 'string'))
    if out:
        return out
    where = '%s (%s)' % (where, question['variable'])
    if question['variable'] in seen:
        out.append('%s: variable duplicated' % where)
    seen.add(question['variable'])
    qtype = question['type']
    if qtype not in ALLOWED_TYPES:
        return out + ['%s: type %s is not one of %s' % (where, qtype, ', '.join(ALLOWED_TYPES))]
    if _is_secret(question['variable']) and qtype != 'password':
        out.append('%s: a secret is asked in a question of type %s (AWX shows and stores the answer in clear): give it through '
                   'the credential, or at least make it a password question' % (where, qtype))
    default = question.get('default', '')
    if default != '' and (not isinstance(default, ALLOWED_TYPES[qtype]) or isinstance(default, bool)):
        out.append('%s: default %r is not a %s' % (where, default, 'number' if qtype in ('integer', 'float') else 'string'))
    for key in ('min', 'max'):
        value = question.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            out.append('%s: %s must be an integer' % (where, key))
    if qtype in ('multiplechoice', 'multiselect'):
        if 'choices' not in question:
            out.append('%s: a %s question needs choices' % (where, qtype))
        elif default not in ('', None):
            defaults = [line for line in default.splitlines() if line.strip()] if isinstance(default, str) else list(default)
            if qtype == 'multiplechoice' and len(defaults) > 1:
                out.append('%s: a multiplechoice question takes one default' % where)
            if any(item not in _choices(question) for item in defaults):
                out.append('%s: the default must be one of the choices' % where)
    if isinstance(default, str) and default.startswith('$encrypted$') and qtype != 'password':
        out.append('%s: $encrypted$ is reserved for password defaults' % where)
    return out


def awx_survey_problems(survey):
    """What AWX would refuse in a survey spec {name, description, spec: [questions]}: a list of messages."""
    if not isinstance(survey, dict):
        raise AnsibleFilterError('awx_survey_problems expects a survey spec (a dict), got %s' % type(survey).__name__)
    out = []
    for field, wanted in (('name', str), ('description', str), ('spec', list)):
        if not isinstance(survey.get(field), wanted):
            out.append('%s must be a %s' % (field, 'list' if wanted is list else 'string'))
    if out:
        return out
    if not survey['spec']:
        return ['spec has no questions']
    seen = set()
    for index, question in enumerate(survey['spec']):
        out.extend(_question_problems(index, question, seen))
    return out


def awx_workflow_nodes(names, organization):
    """workflow_nodes for awx.awx.workflow_job_template: the job templates `names`, each after the one before succeeded."""
    if not isinstance(names, list) or not names or not all(isinstance(name, str) and name for name in names):
        raise AnsibleFilterError('awx_workflow_nodes expects a list of job template names, got %r' % (names,))
    nodes = []
    for index, name in enumerate(names):
        following = [{'identifier': 'step-%d' % (index + 2)}] if index + 1 < len(names) else []
        nodes.append({'identifier': 'step-%d' % (index + 1),
                      'unified_job_template': {'name': name, 'type': 'job_template', 'organization': {'name': organization}},
                      'related': {'success_nodes': following, 'failure_nodes': [], 'always_nodes': []}})
    return nodes


class FilterModule:
    """AWX filters."""

    def filters(self):
        return {'awx_survey_problems': awx_survey_problems, 'awx_workflow_nodes': awx_workflow_nodes}
