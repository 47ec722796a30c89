# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""build_artifact's Debian source stage against a signed stand-in of a Debian mirror (file:// URL).

A throw-away GPG key signs the stand-in's InRelease the way the archive keys sign Debian's; its keyring is the
one the stage trusts. Each case then tampers with one link of the chain: the orig tarball, the .dsc, the Sources
index, the signature, a file name in a re-signed index. Debian's own files and keys are tested in
tests/unit/plugins/module_utils/test_debian_archive.py.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import subprocess

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, run_playbook

pytestmark = [
    pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python"),
    pytest.mark.skipif(shutil.which("gpg") is None or shutil.which("gpgv") is None, reason="needs gpg and gpgv"),
]

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"demo_1.0-1.dsc": b"Format: 3.0 (quilt)\nSource: demo\n", "demo_1.0.orig.tar.gz": b"orig tarball bytes\n",
         "demo_1.0-1.debian.tar.xz": b"debian tarball bytes\n"}


def gpg(home, *args):
    subprocess.run(["gpg", "--homedir", str(home), "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", "",
                    *args], check=True, capture_output=True)


def new_key(home, name):
    home.mkdir(mode=0o700)
    gpg(home, "--quick-generate-key", "%s <%s@example.invalid>" % (name, name), "ed25519", "sign", "never")
    keyring = home / "keyring.gpg"
    gpg(home, "--output", str(keyring), "--export")
    return keyring


def sources_paragraph(files):
    sums = "".join(" %s %d %s\n" % (hashlib.sha256(data).hexdigest(), len(data), name) for name, data in files.items())
    return "Package: demo\nVersion: 1.0-1\nFormat: 3.0 (quilt)\nChecksums-Sha256:\n%sDirectory: pool/main/d/demo\n" % sums


def publish(root, home, sources_text):
    """The mirror: pool files, dists/testsuite/main/source/Sources.xz and an InRelease signed with home's key."""
    pool = root / "pool" / "main" / "d" / "demo"
    pool.mkdir(parents=True, exist_ok=True)
    for name, data in FILES.items():
        (pool / name).write_bytes(data)
    source = root / "dists" / "testsuite" / "main" / "source"
    source.mkdir(parents=True, exist_ok=True)
    index = lzma.compress(sources_text.encode("utf-8"))
    (source / "Sources.xz").write_bytes(index)
    release = root / "dists" / "testsuite" / "Release"
    release.write_text("Origin: Test\nCodename: testsuite\nComponents: main\nSHA256:\n %s %d main/source/Sources.xz\n"
                       % (hashlib.sha256(index).hexdigest(), len(index)), encoding="utf-8")
    inrelease = root / "dists" / "testsuite" / "InRelease"
    if inrelease.exists():
        inrelease.unlink()
    gpg(home, "--output", str(inrelease), "--clearsign", str(release))


@pytest.fixture(name="mirror")
def mirror_fixture(tmp_path):
    home = tmp_path / "gnupg"
    keyring = new_key(home, "archive")
    root = tmp_path / "mirror"
    publish(root, home, sources_paragraph(FILES))
    return root, home, keyring


def fetch(tmp_path, root, keyring, version="1.0-1"):
    extra = {"work": str(tmp_path / "work"), "mirror": "file://%s" % root, "keyring": str(keyring), "version": version}
    returncode, report, stderr = run_playbook(os.path.join(HERE, "build_artifact_debian_source.yml"), "-e", json.dumps(extra))
    results = [result for play in report["plays"] for task in play["tasks"] for result in task["hosts"].values()]
    # A loop's failure is in its items.
    failed = [item.get("msg", "") for result in results if result.get("failed")
              for item in [result] + result.get("results", []) if item.get("failed")]
    settled = [json.loads(result["msg"]) for result in results if str(result.get("msg", "")).startswith('{"files"')]
    return returncode, failed, settled, stderr


def test_an_authentic_package_is_fetched_with_the_signed_index_s_sums(tmp_path, mirror):
    root, _home, keyring = mirror
    returncode, failed, settled, stderr = fetch(tmp_path, root, keyring)
    assert returncode == 0, (failed, stderr[-2000:])
    expected = [{"name": name, "sha256": hashlib.sha256(FILES[name]).hexdigest(), "size": len(FILES[name])}
                for name in ("demo_1.0.orig.tar.gz", "demo_1.0-1.debian.tar.xz")]
    dsc = {"name": "demo_1.0-1.dsc", "sha256": hashlib.sha256(FILES["demo_1.0-1.dsc"]).hexdigest(), "size": len(FILES["demo_1.0-1.dsc"])}
    assert settled == [{"files": expected, "dsc": [dsc]}]
    cached = tmp_path / "work" / "cache" / "sources"
    assert sorted(p.name for p in cached.iterdir() if p.name.startswith("demo_")) == sorted(FILES)


@pytest.mark.parametrize("name", ["demo_1.0.orig.tar.gz", "demo_1.0-1.dsc"])
def test_a_tampered_pool_file_is_refused(tmp_path, mirror, name):
    root, _home, keyring = mirror
    (root / "pool" / "main" / "d" / "demo" / name).write_bytes(b"swapped by the mirror\n")
    returncode, failed, _settled, _stderr = fetch(tmp_path, root, keyring)
    assert returncode != 0
    assert any("The checksum for" in msg and "did not match" in msg for msg in failed), failed


def test_an_index_swapped_after_signing_is_refused(tmp_path, mirror):
    root, _home, keyring = mirror
    index = root / "dists" / "testsuite" / "main" / "source" / "Sources.xz"
    index.write_bytes(lzma.compress(sources_paragraph(dict(FILES, **{"demo_1.0.orig.tar.gz": b"evil\n"})).encode("utf-8")))
    returncode, failed, _settled, _stderr = fetch(tmp_path, root, keyring)
    assert returncode != 0
    assert any("The checksum for" in msg and "did not match" in msg for msg in failed), failed


def test_a_release_signed_by_another_key_is_refused(tmp_path, mirror):
    root, _home, keyring = mirror
    other = tmp_path / "other"
    new_key(other, "intruder")
    publish(root, other, sources_paragraph(FILES))
    returncode, failed, _settled, _stderr = fetch(tmp_path, root, keyring)
    assert returncode != 0
    assert any("is not signed by a key of %s" % keyring in msg for msg in failed), failed


def test_a_signed_index_naming_a_file_outside_the_package_is_refused(tmp_path, mirror):
    # The archive key signs an index whose entry climbs out of the cache: the name is refused before any download.
    root, home, keyring = mirror
    hostile = sources_paragraph(FILES).replace("demo_1.0.orig.tar.gz", "../../../demo_1.0.orig.tar.gz")
    publish(root, home, hostile)
    returncode, failed, _settled, _stderr = fetch(tmp_path, root, keyring)
    assert returncode != 0
    assert any("'../../../demo_1.0.orig.tar.gz', which is not a file of source package demo" in msg for msg in failed), failed
    assert not (tmp_path / "work" / "demo_1.0.orig.tar.gz").exists()


def test_a_version_the_signed_index_does_not_hold_is_named(tmp_path, mirror):
    root, _home, keyring = mirror
    returncode, failed, _settled, _stderr = fetch(tmp_path, root, keyring, version="1.0-2")
    assert returncode != 0
    assert any("source package demo 1.0-2 is not in the index (it has 1.0-1)" in msg for msg in failed), failed
