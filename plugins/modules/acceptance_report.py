#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: acceptance_report
short_description: Write the acceptance report as JSON, Markdown and PNG plots
description:
  - Writes the report document (filter P(trainstack.cluster.acceptance_report#filter)) to O(dest) as C(<basename>.json), its Markdown
    rendering C(<basename>.md) and, where matplotlib is importable, PNG plots (busbw against the threshold per node with
    an all-reduce result; InfiniBand port rates). Without matplotlib the result says PNG was skipped and why.
  - "Meant to run on the controller (C(delegate_to: localhost), C(run_once)); returns the per-node table as lines."
  - Files whose content would not change are left alone; in check mode nothing is written.
extends_documentation_fragment:
  - trainstack.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows the Markdown before and after.
options:
  report:
    description: The report document.
    type: dict
    required: true
  dest:
    description: Directory to write to; created when missing.
    type: path
    required: true
  basename:
    description: File name stem of every file written.
    type: str
    default: acceptance
  png:
    description: Write PNG plots when matplotlib is available.
    type: bool
    default: true
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Write the report on the controller
  trainstack.cluster.acceptance_report:
    report: "{{ __report }}"
    dest: "{{ playbook_dir }}/acceptance-results"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
files:
  description: Paths written (or that would be written in check mode), unchanged ones included.
  returned: always
  type: list
  elements: str
table:
  description: The per-node pass/fail table, one line per node and a closing summary line.
  returned: always
  type: list
  elements: str
png_skipped:
  description: Why no PNG was written (matplotlib missing, or O(png=false)); V(null) when PNGs were written.
  returned: always
  type: str
status:
  description: The report's overall status (pass, fail, repeat, skip, info).
  returned: always
  type: str
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils import _acceptance_render as render


def read(path, mode='r'):
    try:
        with open(path, mode) as handle:
            return handle.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            'report': {'type': 'dict', 'required': True},
            'dest': {'type': 'path', 'required': True},
            'basename': {'type': 'str', 'default': 'acceptance'},
            'png': {'type': 'bool', 'default': True},
        },
        supports_check_mode=True,
    )
    report, dest, basename = module.params['report'], module.params['dest'], module.params['basename']
    if not report.get('nodes') and report.get('nodes') != []:
        module.fail_json(msg='report has no nodes list: build it with the trainstack.cluster.acceptance_report filter')
    markdown_before = read(os.path.join(dest, basename + '.md')) or ''
    staging = tempfile.mkdtemp(prefix='trainstack-acceptance-')
    try:
        images, skipped = ({}, 'PNG skipped: png=false') if not module.params['png'] else render.write_pngs(report, staging, basename)
        rendered = {basename + '.json': render.to_json(report).encode('utf-8'),
                    basename + '.md': render.markdown(report, images).encode('utf-8')}
        for name in images.values():
            rendered[name] = read(os.path.join(staging, name), 'rb')
        changed = False
        files = []
        for name, content in sorted(rendered.items()):
            path = os.path.join(dest, name)
            files.append(path)
            if read(path, 'rb') == content:
                continue
            changed = True
            if not module.check_mode:
                if not os.path.isdir(dest):
                    os.makedirs(dest)
                staged = os.path.join(staging, name + '.new')
                with open(staged, 'wb') as handle:
                    handle.write(content)
                module.atomic_move(staged, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    result = {'changed': changed, 'files': files, 'table': render.table(report), 'png_skipped': skipped,
              'status': report.get('status')}
    if module._diff:
        result['diff'] = {'before': markdown_before,
                          'after': rendered[basename + '.md'].decode('utf-8'),
                          'before_header': os.path.join(dest, basename + '.md'),
                          'after_header': os.path.join(dest, basename + '.md')}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
