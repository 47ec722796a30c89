# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The build_artifact role's ship step (tasks/ship.yml): archive present, tampered, cut short, or never built; a node
that an earlier ship left half unpacked."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, run_playbook

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_artifact_ship.yml")
ARCHIVE = "ucx-1.13.1-0123456789ab-Debian-12-x86_64-cuda-none.tar.gz"


def make_archive(directory, record=None):
    """An archive like archive.sh.j2 makes (the prefix directory at its top) and its .sha256 record."""
    path = directory / ARCHIVE
    with tarfile.open(path, "w:gz") as tar:
        data = b'{"name": "ucx"}\n'
        info = tarfile.TarInfo("1.13.1-0123456789ab/.build-info.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    digest = record or hashlib.sha256(path.read_bytes()).hexdigest()
    (directory / (ARCHIVE + ".sha256")).write_text("%s  %s\n" % (digest, ARCHIVE), encoding="utf-8")
    return path


def ship(tmp_path, archive, **extra):
    root = tmp_path / "root"
    returncode, report, stderr = run_playbook(PLAYBOOK, "-e", json.dumps(dict(extra, archive=str(archive), root=str(root))))
    messages = [result.get("msg", "") for play in report["plays"] for task in play["tasks"]
                for result in task["hosts"].values() if result.get("failed")]
    return returncode, messages, root, stderr


def test_archive_is_checked_and_unpacked(tmp_path):
    archive = make_archive(tmp_path)
    returncode, messages, root, stderr = ship(tmp_path, archive)
    assert returncode == 0, (messages, stderr)
    assert (root / "ucx" / "1.13.1-0123456789ab" / ".build-info.json").read_text(encoding="utf-8") == '{"name": "ucx"}\n'
    assert not (root / "ucx" / ("." + ARCHIVE)).exists()


def test_tampered_archive_is_refused_with_both_sums(tmp_path):
    archive = make_archive(tmp_path, record="0" * 64)
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    returncode, messages, root, _stderr = ship(tmp_path, archive)
    assert returncode != 0
    assert len(messages) == 1
    assert "SHA-256 mismatch, refusing it: expected " + "0" * 64 in messages[0] and "actual " + actual in messages[0]
    assert not (root / "ucx" / "1.13.1-0123456789ab").exists()


def test_missing_archive_names_the_builder(tmp_path):
    returncode, messages, root, _stderr = ship(tmp_path, tmp_path / ARCHIVE)
    assert returncode != 0
    assert len(messages) == 1
    assert "is not on the controller" in messages[0] and "built on builder-node" in messages[0]
    assert "Debian-12-x86_64-cuda-none" in messages[0]
    assert not root.exists()


def test_an_interrupted_unpack_is_replaced_by_the_whole_build(tmp_path):
    # What the unpack of an earlier run left when it was killed: part of the prefix without its build record, and
    # the unpack directory of this release of the role.
    archive = make_archive(tmp_path)
    pkg = tmp_path / "root" / "ucx"
    (pkg / "1.13.1-0123456789ab" / "lib").mkdir(parents=True)
    (pkg / "1.13.1-0123456789ab" / "lib" / "libucp.so.0").write_text("half a library", encoding="utf-8")
    (pkg / ".1.13.1-0123456789ab.unpack" / "1.13.1-0123456789ab").mkdir(parents=True)
    returncode, messages, root, stderr = ship(tmp_path, archive)
    assert returncode == 0, (messages, stderr)
    assert sorted(os.listdir(root / "ucx")) == ["1.13.1-0123456789ab"]
    assert sorted(os.listdir(root / "ucx" / "1.13.1-0123456789ab")) == [".build-info.json"]


def test_an_archive_without_its_record_is_a_fetch_cut_short_and_is_not_shipped(tmp_path):
    archive = make_archive(tmp_path)
    os.remove(str(archive) + ".sha256")
    returncode, messages, root, _stderr = ship(tmp_path, archive)
    assert returncode != 0
    assert len(messages) == 1
    assert "is not on the controller (only the archive, without its .sha256 record: a fetch cut short)" in messages[0]
    assert not root.exists()


def test_a_failed_build_is_named_on_every_other_node_with_the_step_and_the_log_tail(tmp_path):
    # async_status of the build as the builder registered it, and its "Read the end of config.log and of the build log".
    tail = "== /var/tmp/trainstack-build/ucx-1.13.1-0123456789ab.log\nconfigure: error: cannot find libibverbs"
    returncode, messages, root, _stderr = ship(tmp_path, tmp_path / ARCHIVE,
                                               builder_build={"ansible_job_id": "1", "finished": 1, "rc": 1},
                                               builder_tail={"rc": 0, "stdout": tail})
    assert returncode != 0
    assert len(messages) == 1
    assert ("that host failed: the build failed on builder-node: exit status 1 (full log "
            "/var/tmp/trainstack-build/ucx-1.13.1-0123456789ab.log on builder-node):\n" + tail) in messages[0]
    assert not root.exists()


# ------------------------------------------------------------------ downloaded, not pushed (issue 30)

def free_port():
    import socket  # pylint: disable=import-outside-toplevel
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def served(tmp_path, content=None):
    """The controller's archive and record, and the builder's served copy (``content`` replaces its bytes)."""
    controller = tmp_path / "controller"
    controller.mkdir()
    archive = make_archive(controller)
    serve_dir = tmp_path / "serve"
    serve_dir.mkdir()
    (serve_dir / ARCHIVE).write_bytes(content if content is not None else archive.read_bytes())
    return archive, serve_dir


def test_a_node_downloads_the_archive_from_its_builder(tmp_path):
    archive, serve_dir = served(tmp_path)
    port = free_port()
    returncode, messages, root, stderr = ship(tmp_path, archive, delivery="builder", serve_dir=str(serve_dir), port=port)
    assert returncode == 0, (messages, stderr)
    assert (root / "ucx" / "1.13.1-0123456789ab" / ".build-info.json").read_text(encoding="utf-8") == '{"name": "ucx"}\n'
    assert not (root / "ucx" / ("." + ARCHIVE)).exists()
    # The server went with the play.
    assert not (serve_dir / ".artifact_server.pid").exists()


def test_a_download_that_differs_from_the_controllers_record_is_refused(tmp_path):
    archive, serve_dir = served(tmp_path, content=b"not the archive the controller recorded")
    returncode, messages, root, _stderr = ship(tmp_path, archive, delivery="builder", serve_dir=str(serve_dir), port=free_port())
    assert returncode != 0
    assert len(messages) == 1 and "checksum" in messages[0].lower(), messages
    assert not (root / "ucx" / "1.13.1-0123456789ab").exists()


def test_a_builder_that_does_not_serve_is_named(tmp_path):
    archive, _serve_dir = served(tmp_path)
    returncode, messages, root, _stderr = ship(tmp_path, archive, delivery="builder", port=free_port())
    assert returncode != 0
    assert len(messages) == 1
    assert "builder-node, the builder of this group (Debian-12-x86_64-cuda-none), does not serve the archive" in messages[0]
    assert not (root / "ucx" / "1.13.1-0123456789ab").exists()


def test_a_node_downloads_the_archive_from_the_sites_url(tmp_path):
    # The site's web server over the controller's artifact directory: here the same small server on 127.0.0.1.
    archive, serve_dir = served(tmp_path)
    port = free_port()
    returncode, messages, root, stderr = ship(tmp_path, archive, delivery="url", serve_dir=str(serve_dir), port=port,
                                              delivery_url="http://127.0.0.1:%d/" % port)
    assert returncode == 0, (messages, stderr)
    assert (root / "ucx" / "1.13.1-0123456789ab" / ".build-info.json").exists()


def test_a_node_downloads_the_archive_from_a_shared_file_system(tmp_path):
    archive, _serve_dir = served(tmp_path)
    returncode, messages, root, stderr = ship(tmp_path, archive, delivery="url", delivery_url="file://%s" % archive.parent)
    assert returncode == 0, (messages, stderr)
    assert (root / "ucx" / "1.13.1-0123456789ab" / ".build-info.json").exists()
