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
  - With O(run_id), the files go to C(<dest>/<run_id>/) and the link C(<dest>/latest) is moved to that folder, so the
    reports of earlier runs are kept beside it, not overwritten; the link is replaced atomically (a new link renamed
    over the old one). A C(latest) that is not a symbolic link is refused, never replaced.
  - Files whose content would not change are left alone; in check mode nothing is written.
extends_documentation_fragment:
  - trainstack.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows the Markdown before and after (with O(run_id), before is the report C(latest) pointed to).
options:
  report:
    description: The report document.
    type: dict
    required: true
  dest:
    description: Directory to write to; created when missing.
    type: path
    required: true
  run_id:
    description:
      - Name of this run's folder under O(dest) (letters, digits, C(.), C(_), C(-); not V(latest)). Not set - the files go
        to O(dest) itself and no link is made.
    type: str
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
    run_id: "{{ __run_id }}"
  delegate_to: localhost
  run_once: true
  become: false
"""

RETURN = r"""
files:
  description: Paths written (or that would be written in check mode), unchanged ones included.
  returned: always
  type: list
  elements: str
run_dir:
  description: The folder the files went to (O(dest)/O(run_id), or O(dest) without O(run_id)).
  returned: always
  type: str
latest:
  description: The link C(<dest>/latest) to this run's folder; V(null) without O(run_id).
  returned: always
  type: str
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
import re
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


RUN_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')
LATEST = 'latest'


def move_link(module, link, target, staging):
    """Point link at target (relative): a new link renamed over the old one, so readers never find it missing."""
    staged = os.path.join(staging, LATEST + '.new')
    os.symlink(target, staged)
    try:
        os.rename(staged, link)
    except OSError as error:
        # The staging folder is on another file system: make the new link beside the old one.
        staged = os.path.join(os.path.dirname(link), '.%s.%d.new' % (LATEST, os.getpid()))
        try:
            os.symlink(target, staged)
            os.rename(staged, link)
        except OSError:
            module.fail_json(msg='cannot point %s at %s: %s' % (link, target, error))


def main():
    module = AnsibleModule(
        argument_spec={
            'report': {'type': 'dict', 'required': True},
            'dest': {'type': 'path', 'required': True},
            'run_id': {'type': 'str'},
            'basename': {'type': 'str', 'default': 'acceptance'},
            'png': {'type': 'bool', 'default': True},
        },
        supports_check_mode=True,
    )
    report, top, basename, run_id = (module.params['report'], module.params['dest'], module.params['basename'],
                                     module.params['run_id'])
    if not report.get('nodes') and report.get('nodes') != []:
        module.fail_json(msg='report has no nodes list: build it with the trainstack.cluster.acceptance_report filter')
    link = None
    if run_id is None:
        dest = top
        markdown_before_path = os.path.join(dest, basename + '.md')
    else:
        if not RUN_ID.match(run_id) or run_id == LATEST:
            module.fail_json(msg='run_id must be letters, digits, ".", "_", "-" (not "latest"), got %r' % run_id)
        dest, link = os.path.join(top, run_id), os.path.join(top, LATEST)
        if os.path.lexists(link) and not os.path.islink(link):
            module.fail_json(msg='%s is not a symbolic link: move it away, the latest report is linked there' % link)
        if os.path.islink(dest) or (os.path.lexists(dest) and not os.path.isdir(dest)):
            module.fail_json(msg='%s exists and is not a folder: refusing to write this run there' % dest)
        # The diff is against the report the link pointed to (the run before), or this run's own on a second write.
        markdown_before_path = os.path.join(dest if os.path.isdir(dest) else link, basename + '.md')
    markdown_before = read(markdown_before_path) or ''
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
        if link is not None and (not os.path.islink(link) or os.readlink(link) != run_id):
            changed = True
            if not module.check_mode:
                if not os.path.isdir(dest):
                    os.makedirs(dest)
                move_link(module, link, run_id, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    result = {'changed': changed, 'files': files, 'table': render.table(report), 'png_skipped': skipped,
              'status': report.get('status'), 'run_dir': dest, 'latest': link}
    if module._diff:
        result['diff'] = {'before': markdown_before,
                          'after': rendered[basename + '.md'].decode('utf-8'),
                          'before_header': markdown_before_path,
                          'after_header': os.path.join(dest, basename + '.md')}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
