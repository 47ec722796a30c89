# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/secret_scan.py: it fails on what the old dbd.yml leaked (recorded -vvv and ps), passes clean text."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import threading

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


def test_check_exit_status(tmp_path, capsys):
    (tmp_path / 'secrets.json').write_text(json.dumps({'db password': OLD_PASSWORD}), encoding='utf-8')
    (tmp_path / 'modes.txt').write_text('600 slurm:slurm h:/etc/slurm/slurmdbd.conf\n', encoding='utf-8')
    (tmp_path / 'clean.log').write_text('TASK [Write slurmdbd.conf]\nok: [h] => censored\n', encoding='utf-8')
    args = ['secret_scan.py', 'check', str(tmp_path / 'secrets.json'), str(tmp_path / 'modes.txt')]
    assert scan.main(args + [str(tmp_path / 'clean.log')]) == 0
    assert capsys.readouterr().out.startswith('OK 1 secrets')
    assert scan.main(args + [os.path.join(FIXTURES, 'old_dbd_ps.txt')]) == 1
    assert 'FAIL db password (as is) appears in' in capsys.readouterr().out


def test_check_fails_on_a_text_that_could_not_show_a_leak(tmp_path, capsys):
    # A log written below -vvv holds no EXEC lines: clean, but proof of nothing.
    (tmp_path / 'secrets.json').write_text(json.dumps({'db password': OLD_PASSWORD}), encoding='utf-8')
    (tmp_path / 'modes.txt').write_text('', encoding='utf-8')
    log = tmp_path / 'quiet.log'
    log.write_text('TASK [Write slurmdbd.conf]\nok: [h]\n', encoding='utf-8')
    args = ['secret_scan.py', 'check', str(tmp_path / 'secrets.json'), str(tmp_path / 'modes.txt'), str(log)]
    assert scan.main(args + ['--require', '%s=TASK [Write' % log]) == 0
    capsys.readouterr()
    assert scan.main(args + ['--require', '%s=ESTABLISH DOCKER CONNECTION' % log]) == 1
    assert "does not hold 'ESTABLISH DOCKER CONNECTION'" in capsys.readouterr().out
    # A required text that was never given fails too.
    assert scan.missing_requirements([('other.txt', 'x')], [(str(log), 'x')]) == [('other.txt', 'x')]


def test_canary_must_be_seen_in_every_text(tmp_path, capsys):
    (tmp_path / 'secrets.json').write_text(json.dumps({'db password': OLD_PASSWORD, 'canary': 'Canary-0123abcd'}),
                                           encoding='utf-8')
    (tmp_path / 'modes.txt').write_text('', encoding='utf-8')
    log = tmp_path / 'vvv.log'
    log.write_text('"argv": ["sh", "-c", "sleep 1", "scan-canary", "Canary-0123abcd"]\n', encoding='utf-8')
    samples = tmp_path / 'samples.txt'
    samples.write_text('cmdline: sh -c sleep 1 scan-canary Canary-0123abcd\n', encoding='utf-8')
    args = ['secret_scan.py', 'check', str(tmp_path / 'secrets.json'), str(tmp_path / 'modes.txt'), str(log)]
    # The canary is found, as planted, and is no failure.
    assert scan.main(args + [str(samples), '--canary', 'canary']) == 0
    assert capsys.readouterr().out == ('OK 1 secrets x their forms in 2 texts (%d characters), 1 canaries seen in each; '
                                       '0 files holding secrets checked; 0 requirements\n'
                                       % (len(log.read_text(encoding='utf-8')) + len(samples.read_text(encoding='utf-8'))))
    # Without --canary the same text is a leak.
    assert scan.main(args + [str(samples)]) == 1
    assert 'FAIL canary (as is) appears in' in capsys.readouterr().out
    # Samples taken while nothing ran (the sampler stopped early) cannot hold it: that fails.
    samples.write_text('cmdline: /sbin/init\n', encoding='utf-8')
    assert scan.main(args + [str(samples), '--canary', 'canary']) == 1
    assert ('FAIL the canary canary, leaked on purpose, is not in %s' % samples) in capsys.readouterr().out


def test_usage_errors():
    assert scan.main(['secret_scan.py']) == 2
    assert scan.main(['secret_scan.py', 'check', 'only-one']) == 2
    assert scan.main(['secret_scan.py', 'secrets']) == 2


def test_secrets_are_fresh_private_and_hostile(tmp_path):
    directory = tmp_path / 'secrets'
    first = scan.write_secrets(str(directory))
    assert os.stat(directory).st_mode & 0o777 == 0o700
    assert os.stat(directory / 'secrets.json').st_mode & 0o777 == 0o600
    assert json.loads((directory / 'secrets.json').read_text(encoding='utf-8')) == first
    second = scan.write_secrets(str(directory))
    assert all(first[name] != second[name] for name in first)
    assert set(first) == {'munge key', 'slurmdbd password', 'proxy password', 'proxy password (before)', 'canary'}
    # The munge key is base64 of 1024 bytes, as the slurm role wants it.
    assert len(base64.b64decode(first['munge key'], validate=True)) == 1024
    for character in '\'"\\;#\u20ac':
        assert character in first['slurmdbd password']
    assert '\n' not in first['slurmdbd password']


def _fake_proc(root, pid, cmdline, environ):
    directory = root / str(pid)
    directory.mkdir()
    (directory / 'cmdline').write_bytes(b'\0'.join(cmdline) + b'\0')
    (directory / 'environ').write_bytes(b'\0'.join(environ) + b'\0')


def test_read_processes(tmp_path):
    _fake_proc(tmp_path, 1, [b'/sbin/init'], [b'HOME=/'])
    _fake_proc(tmp_path, 42, [b'/bin/sh', b'-c', b'MYSQL_PWD=x mysql'], [b'MYSQL_PWD=s3cret', b'HOME=/'])
    (tmp_path / '43').mkdir()  # a process that ended between listdir and open
    (tmp_path / 'self').mkdir()
    assert scan.read_processes(str(tmp_path)) == {
        'cmdline: /sbin/init', 'cmdline: /bin/sh -c MYSQL_PWD=x mysql', 'environ: HOME=/', 'environ: MYSQL_PWD=s3cret'}


def test_sample_until_the_stop_file(tmp_path):
    proc = tmp_path / 'proc'
    proc.mkdir()
    _fake_proc(proc, 7, [b'slurmdbd', b'-D'], [b'A=1'])
    stop = tmp_path / 'stop'
    out = tmp_path / 'samples.txt'
    timer = threading.Timer(0.2, stop.touch)
    timer.start()
    rounds = scan.sample(str(out), str(stop), interval=0.01, proc=str(proc))
    timer.join()
    assert rounds >= 2
    lines = out.read_text(encoding='utf-8').splitlines()
    assert lines[0] == '# %d samples every 0.01s' % rounds
    assert lines[1:] == ['cmdline: slurmdbd -D', 'environ: A=1']
    assert os.stat(out).st_mode & 0o777 == 0o600
