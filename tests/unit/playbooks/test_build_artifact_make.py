# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""build_artifact with source git and build system make (the nccl-tests shape), and its build directory check.

A tiny plain-Makefile project in a local git repository stands in for nccl-tests: make arguments that
would run commands if the build script left them unquoted, a commit the repository lacks, and build
directories someone else could control.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, run_playbook

pytestmark = [
    pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python"),
    pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make"),
]

HERE = os.path.dirname(os.path.abspath(__file__))
# Writes build/<name>_perf scripts that print GREETING; nccl-tests' layout (src/ built into build/).
MAKEFILE = """\
BUILDDIR ?= build
all: $(BUILDDIR)/hello_perf $(BUILDDIR)/bye_perf
$(BUILDDIR)/%_perf:
\tmkdir -p $(BUILDDIR)
\tprintf '#!/bin/sh\\ncat <<"EOF"\\n%s %s\\nEOF\\n' '$*' '$(GREETING)' >$@
\tchmod +x $@
"""
# Each would leave a pwned-* file behind if the shell ever saw it unquoted.
HOSTILE = "GREETING=hi;touch {work}/pwned-semicolon `touch {work}/pwned-backtick` $$(touch {work}/pwned-dollar)"


def git(*args, cwd):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(name="repo")
def repo_fixture(tmp_path):
    path = tmp_path / "upstream"
    path.mkdir()
    (path / "Makefile").write_text(MAKEFILE, encoding="utf-8")
    git("init", "-q", cwd=path)
    git("add", "Makefile", cwd=path)
    git("commit", "-q", "-m", "one", cwd=path)
    return path, git("rev-parse", "HEAD", cwd=path)


def build(tmp_path, repo, commit, make_args):
    extra = {"work": str(tmp_path), "repo": str(repo), "commit": commit, "make_args": make_args, "uid": os.getuid()}
    returncode, report, stderr = run_playbook(os.path.join(HERE, "build_artifact_make.yml"), "-e", json.dumps(extra))
    failed = [result.get("msg", "") for play in report["plays"] for task in play["tasks"]
              for result in task["hosts"].values() if result.get("failed")]
    changed = [task["task"]["name"] for play in report["plays"] for task in play["tasks"]
               for result in task["hosts"].values() if result.get("changed")]
    return returncode, failed, changed, stderr


def test_git_make_build_installs_the_programs_quoted_and_is_idempotent(tmp_path, repo):
    path, commit = repo
    hostile = HOSTILE.format(work=tmp_path)
    returncode, failed, _changed, stderr = build(tmp_path, path, commit, [hostile])
    assert returncode == 0, (failed, stderr[-3000:])
    prefixes = [p for p in (tmp_path / "root" / "demo-tests").iterdir() if p.name != "current"]
    assert len(prefixes) == 1
    current = tmp_path / "root" / "demo-tests" / "current"
    assert sorted(p.name for p in (current / "bin").iterdir()) == ["bye_perf", "hello_perf"]
    # make got the argument as one word; the shell ran none of it.
    assert not list(tmp_path.glob("pwned-*"))
    out = subprocess.run([str(current / "bin" / "hello_perf")], capture_output=True, text=True, check=True).stdout
    assert out == "hello hi;touch {0}/pwned-semicolon `touch {0}/pwned-backtick` $(touch {0}/pwned-dollar)\n".format(tmp_path)
    info = json.loads((current / ".build-info.json").read_text(encoding="utf-8"))
    assert info["git_commit"] == commit and info["source"] == "git"
    assert info["make_args"] == [hostile] and info["build_system"] == "make"
    # The exported tarball's sum is recorded and is the one the record lists.
    tarball = tmp_path / "cache" / "sources" / ("demo-tests-1.0.0-git-%s.tar.gz" % commit)
    record = (tmp_path / "cache" / "sources" / (tarball.name + ".sha256")).read_text(encoding="utf-8").split()[0]
    assert info["source_files"] == [{"name": tarball.name, "sha256": record}]
    assert oct((tmp_path / "build").stat().st_mode & 0o777) == "0o700"
    # Second run: nothing to do.
    returncode, failed, changed, stderr = build(tmp_path, path, commit, [hostile])
    assert returncode == 0, (failed, stderr[-3000:])
    assert changed == []
    # Another make argument is another build id, hence another prefix; of the builds beside it, the default
    # build_artifact_keep (3, the current one included) keeps the newest: the older of two stale ones goes.
    pkg = tmp_path / "root" / "demo-tests"
    for name, mtime in (("1.0.0-00000000000a", 1000), ("1.0.0-00000000000b", 2000)):
        (pkg / name).mkdir()
        os.utime(pkg / name, (mtime, mtime))
    returncode, failed, _changed, stderr = build(tmp_path, path, commit, ["GREETING=other"])
    assert returncode == 0, (failed, stderr[-3000:])
    kept = sorted(p.name for p in pkg.iterdir() if p.name != "current")
    assert len(kept) == 3 and "1.0.0-00000000000b" in kept and "1.0.0-00000000000a" not in kept, kept
    assert prefixes[0].name in kept and os.readlink(pkg / "current") in kept


def test_a_commit_the_repository_lacks_is_refused(tmp_path, repo):
    path, _commit = repo
    returncode, failed, _changed, _stderr = build(tmp_path, path, "ab" * 20, ["GREETING=x"])
    assert returncode != 0
    assert any("build_artifact_git_commit " + "ab" * 20 in msg and "could not be exported" in msg for msg in failed), failed
    assert not (tmp_path / "root" / "demo-tests").exists()


@pytest.mark.parametrize("commit", ["v2.19.6", "a0b82b2", "A0B82B2260CF5152B9F8C061BBF7EAF0BA096432", ""])
def test_anything_but_a_full_commit_is_refused_before_any_change(tmp_path, repo, commit):
    path, _commit = repo
    returncode, failed, _changed, _stderr = build(tmp_path, path, commit, ["GREETING=x"])
    assert returncode != 0
    assert any("build_artifact_git_commit" in msg and "full 40-hex commit" in msg for msg in failed), failed
    assert not (tmp_path / "build").exists() and not (tmp_path / "cache").exists()


def check_dir(path):
    extra = {"dir": str(path), "uid": os.getuid()}
    returncode, report, stderr = run_playbook(os.path.join(HERE, "build_artifact_build_dir.yml"), "-e", json.dumps(extra))
    failed = [result.get("msg", "") for play in report["plays"] for task in play["tasks"]
              for result in task["hosts"].values() if result.get("failed")]
    return returncode, failed, stderr


def test_build_dir_is_created_owner_only(tmp_path):
    returncode, failed, stderr = check_dir(tmp_path / "b")
    assert returncode == 0, (failed, stderr)
    assert oct((tmp_path / "b").stat().st_mode & 0o777) == "0o700"
    assert (tmp_path / "b").stat().st_uid == os.getuid()


def test_an_own_0755_build_dir_is_tightened(tmp_path):
    (tmp_path / "b").mkdir(mode=0o755)
    returncode, failed, stderr = check_dir(tmp_path / "b")
    assert returncode == 0, (failed, stderr)
    assert oct((tmp_path / "b").stat().st_mode & 0o777) == "0o700"


def test_a_build_dir_others_can_write_is_refused(tmp_path):
    (tmp_path / "b").mkdir()
    os.chmod(tmp_path / "b", 0o1777)
    returncode, failed, _stderr = check_dir(tmp_path / "b")
    assert returncode != 0
    assert any("is not safe to build in as root" in msg and "mode 1777" in msg for msg in failed), failed
    assert oct((tmp_path / "b").stat().st_mode & 0o7777) == "0o1777"


def test_a_symlinked_build_dir_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "b").symlink_to(tmp_path / "elsewhere")
    returncode, failed, _stderr = check_dir(tmp_path / "b")
    assert returncode != 0
    assert any("a symbolic link" in msg for msg in failed), failed


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a directory to another user")
def test_a_build_dir_someone_else_owns_is_refused(tmp_path):
    (tmp_path / "b").mkdir(mode=0o700)
    os.chown(tmp_path / "b", 65534, 65534)
    returncode, failed, _stderr = check_dir(tmp_path / "b")
    assert returncode != 0
    assert any("owner uid 65534 (expected %d)" % os.getuid() in msg for msg in failed), failed
    assert (tmp_path / "b").stat().st_uid == 65534
