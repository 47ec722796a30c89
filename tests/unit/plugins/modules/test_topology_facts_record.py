# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""topology_facts record=: what the probe read, recorded in a tarball, reads back with identical facts."""

from __future__ import annotations

import io
import json
import os
import tarfile

import pytest

from ansible_collections.trainstack.cluster.plugins.modules import topology_facts
from topology_support import CASES, recorded_root, run_module


def probe(capsys, **args):
    return run_module(topology_facts.main, args, capsys)


@pytest.mark.parametrize('case', CASES)
def test_record_reads_back_identical_on_every_fixture(case, tmp_path, capsys):
    root = recorded_root(case, tmp_path / 'root')
    tarball = str(tmp_path / 'record.tar.gz')
    recorded = probe(capsys, root=root, record=tarball)
    assert recorded['changed'] is True and recorded['record'] == tarball and recorded['record_members'] > 0
    replayed = probe(capsys, root=tarball)
    assert replayed['changed'] is False
    assert replayed['ansible_facts'] == recorded['ansible_facts']


@pytest.mark.skipif(not os.path.isdir('/sys/class/net'), reason='needs a Linux sysfs')
def test_record_of_this_machine_reads_back_identical(tmp_path, capsys):
    """The live path: commands run for real (nvidia-smi is absent here, uname is not), sysfs read live."""
    tarball = str(tmp_path / 'live.tar.gz')
    recorded = probe(capsys, record=tarball)
    replayed = probe(capsys, root=tarball)
    assert replayed['ansible_facts'] == recorded['ansible_facts']
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
        manifest = json.load(archive.extractfile('trainstack-record.json'))
    assert '.commands/uname-m.txt' in names and 'proc/cpuinfo' in names
    assert 'uname-m' in manifest['commands']


def test_record_holds_only_what_the_probe_read(tmp_path, capsys):
    root = recorded_root('hgx_h100', tmp_path / 'root')
    with open(os.path.join(root, 'proc', 'unrelated-secret'), 'w', encoding='utf-8') as handle:
        handle.write('not for the bug report\n')
    tarball = str(tmp_path / 'record.tar.gz')
    probe(capsys, root=root, record=tarball)
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert 'proc/unrelated-secret' not in names
    assert {'proc/cpuinfo', '.commands/nvidia-smi_topo-m.txt', 'trainstack-record.json'} <= names
    assert any(name.startswith('sys/bus/pci/devices/') for name in names)


def test_check_mode_writes_no_record(tmp_path, capsys):
    root = recorded_root('h200_vm', tmp_path / 'root')
    tarball = tmp_path / 'record.tar.gz'
    result = probe(capsys, root=root, record=str(tarball), _ansible_check_mode=True)
    assert result['changed'] is False and 'record' not in result and not tarball.exists()


@pytest.mark.parametrize(('member', 'link'), [('../evil', None), ('sys/x', '/etc/passwd'), ('sys/y', '../../outside')])
def test_tarball_leaving_its_root_is_refused(member, link, tmp_path, capsys):
    tarball = str(tmp_path / 'bad.tar.gz')
    with tarfile.open(tarball, 'w:gz') as archive:
        info = tarfile.TarInfo(member)
        if link:
            info.type, info.linkname = tarfile.SYMTYPE, link
            archive.addfile(info)
        else:
            info.size = 1
            archive.addfile(info, io.BytesIO(b'x'))
    result = probe(capsys, root=tarball)
    assert result['failed'] is True and 'outside the recorded root' in result['msg']
