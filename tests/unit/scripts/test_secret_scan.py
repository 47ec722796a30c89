# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/secret_scan.py: it fails on what the old dbd.yml leaked (recorded -vvv and ps), passes clean text."""

from __future__ import annotations

import base64
import importlib.util
import json
import os

import pytest

from topology_support import UNIT_DIR

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(UNIT_DIR)), 'scripts', 'secret_scan.py')
FIXTURES = os.path.join(UNIT_DIR, 'fixtures', 'secret_scan')
OLD_PASSWORD = 'old-code-s3cret-pw'


def _load():
    spec = importlib.util.spec_from_file_location('secret_scan', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scan = _load()


def read(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize(('fixture', 'line'), [('old_dbd_vvv.log', 6), ('old_dbd_ps.txt', 1)])
def test_old_dbd_leak_is_found(fixture, line):
    hits = scan.leaks({'db password': OLD_PASSWORD}, [(fixture, read(fixture))])
    assert (('db password', 'as is', fixture, line) in hits), hits


def test_other_secret_is_not_found_in_the_recording():
    assert scan.leaks({'db password': 'not-this-one-123'}, [('vvv', read('old_dbd_vvv.log'))]) == []


@pytest.mark.parametrize('form', ['base64', 'hex', 'json'])
def test_encoded_forms_are_found(form):
    secret = "a'b\"c\\d;e--f#g\\\u00fc\u20ac"
    encoded = {'base64': base64.b64encode(secret.encode()).decode(), 'hex': secret.encode().hex(),
               'json': json.dumps(secret)[1:-1]}[form]
    hits = scan.leaks({'pw': secret}, [('log', 'stdin: SET @pass = FROM_BASE64(%s);' % encoded)])
    assert ('pw', form, 'log', 1) in hits


def test_short_lines_of_a_secret_are_not_searched():
    # "ab" alone would match by chance; the whole value and its long lines are searched.
    assert 'line 1' not in scan.forms('ab\nlong enough line')
    assert scan.forms('ab\nlong enough line')['line 2'] == 'long enough line'


def test_open_modes():
    lines = ['400 munge:munge tsm-ctl:/etc/munge/munge.key', '600 slurm:slurm tsm-ctl:/etc/slurm/slurmdbd.conf',
             '644 root:root tsm-node1:/etc/apt/apt.conf.d/01trainstack-proxy', '640 root:root x:/f', '']
    assert scan.open_modes(lines) == [('tsm-node1:/etc/apt/apt.conf.d/01trainstack-proxy', '644', 'root:root'),
                                      ('x:/f', '640', 'root:root')]


def test_main_exit_status(tmp_path, capsys):
    (tmp_path / 'secrets.json').write_text(json.dumps({'db password': OLD_PASSWORD}), encoding='utf-8')
    (tmp_path / 'modes.txt').write_text('600 slurm:slurm h:/etc/slurm/slurmdbd.conf\n', encoding='utf-8')
    (tmp_path / 'clean.log').write_text('TASK [Write slurmdbd.conf]\nok: [h] => censored\n', encoding='utf-8')
    args = ['secret_scan.py', str(tmp_path / 'secrets.json'), str(tmp_path / 'modes.txt')]
    assert scan.main(args + [str(tmp_path / 'clean.log')]) == 0
    assert capsys.readouterr().out.startswith('OK 1 secrets')
    assert scan.main(args + [os.path.join(FIXTURES, 'old_dbd_ps.txt')]) == 1
    assert 'FAIL db password (as is) appears in' in capsys.readouterr().out
