# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preload_filters: its lookup, as a play name does it, leaves every filter file of the collection loaded."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

from ansible_collections.trainstack.cluster.plugins.filter.controller import preload_filters

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# A fresh interpreter: the test process has imported filter modules of its own. It templates the string a playbook's
# first play name ends in, through ansible-core's public Templar, and reports the filter modules then loaded.
PROBE = r'''
import json, sys
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

init_plugin_loader([sys.argv[1]])
prefix = "ansible_collections.trainstack.cluster.plugins.filter."
before = sorted(name for name in sys.modules if name.startswith(prefix))
rendered = Templar(loader=DataLoader()).template(trust_as_template("Play{{ '' | trainstack.cluster.preload_filters }}"))
after = sorted(name[len(prefix):] for name in sys.modules if name.startswith(prefix))
print(json.dumps({"before": before, "after": after, "rendered": rendered}))
'''


def test_preload_filters_returns_an_empty_string_whatever_it_is_given():
    assert preload_filters('') == ''
    assert preload_filters({'a': 1}) == ''


def test_the_lookup_in_a_play_name_loads_every_filter_file_of_the_collection():
    files = sorted(os.path.basename(path)[:-len('.py')] for path in glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.py')))
    proc = subprocess.run([sys.executable, '-c', PROBE, os.path.join(ROOT, 'collections')],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen['rendered'] == 'Play'
    assert seen['before'] == []
    assert seen['after'] == files
    assert len(files) > 20


def test_every_playbook_names_its_first_play_through_the_filter():
    # A playbook run alone must load the filters in its first play; one that starts with an import gets it there.
    missing = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            first = next(line for line in handle if line.startswith('- name:') or line.startswith('- ansible.builtin.import_playbook'))
            following = next(handle, '')
        if 'import_playbook' in following or 'import_playbook' in first:
            continue
        if "{{ '' | trainstack.cluster.preload_filters }}\"" not in first:
            missing.append(os.path.basename(path))
    assert missing == []
