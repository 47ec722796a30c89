# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The execution environment, checked the way ansible-builder sees it, without a container engine.

The collection is built (ansible-galaxy collection build) and installed as an EE would hold it; ansible-builder's own
introspection must list exactly the collection's runtime needs (meta/execution-environment.yml), `ansible-builder create`
must make the build context of ee/execution-environment.yml, and the galaxy step of that context (the same
ansible-galaxy command its Dockerfile runs in /build) must install the built collection.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ANSIBLE_BUILDER = os.path.join(BIN, "ansible-builder")
ANSIBLE_GALAXY = os.path.join(BIN, "ansible-galaxy")

pytestmark = pytest.mark.skipif(not (os.path.exists(ANSIBLE_BUILDER) and os.path.exists(ANSIBLE_GALAXY)),
                                reason="ansible-builder or ansible-galaxy is not beside this Python (requirements-dev.txt)")

# Written by hand from what the roles run on the controller (meta/ee-requirements.txt, meta/ee-bindep.txt).
PYTHON = ["matplotlib>=3.7"]
SYSTEM = ["git [platform:dpkg platform:rpm]", "gpgv [platform:dpkg]", "gnupg2 [platform:rpm]",
          "debian-archive-keyring [platform:dpkg]", "openssh-client [platform:dpkg]", "openssh-clients [platform:rpm]"]


def _run(argv, cwd, env=None):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.fixture(name="built", scope="module")
def built_fixture(tmp_path_factory):
    """(tarball, collections path holding it installed): the collection as an EE would get it."""
    directory = tmp_path_factory.mktemp("ee")
    # Not the checkout's collections/ link: ansible-galaxy would call the collection installed already.
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    _run([ANSIBLE_GALAXY, "collection", "build", "--output-path", str(directory), ROOT], ROOT, env)
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    tarball = directory / ("trainstack-cluster-%s.tar.gz" % version)
    assert tarball.exists()
    installed = directory / "installed"
    _run([ANSIBLE_GALAXY, "collection", "install", "--force", "-p", str(installed), str(tarball)], str(directory),
         dict(env, ANSIBLE_COLLECTIONS_PATH=str(installed)))
    return tarball, installed, env


def _lines(values):
    # introspect appends "  # from collection <name>" to each line.
    return [value.split("  # from collection")[0] for value in values or []]


def test_introspection_lists_the_runtime_needs(built):
    _tarball, installed, env = built
    found = yaml.safe_load(_run([ANSIBLE_BUILDER, "introspect", str(installed)], ROOT, env))
    assert _lines(found["python"]) == PYTHON
    assert _lines(found["system"]) == SYSTEM


def test_create_makes_the_build_context_and_its_galaxy_step_installs_the_collection(built, tmp_path):
    tarball, _installed, env = built
    ee = tmp_path / "ee"
    shutil.copytree(os.path.join(ROOT, "ee"), ee)
    shutil.copy(tarball, ee)
    context = tmp_path / "context"
    _run([ANSIBLE_BUILDER, "create", "-f", "execution-environment.yml", "--context", str(context)], str(ee), env)
    build = context / "_build"
    assert (build / "collections" / tarball.name).exists()
    containerfile = (context / "Dockerfile").read_text(encoding="utf-8")
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    # The galaxy stage: WORKDIR /build holding _build; the requirements name the tarball relative to it.
    target = tmp_path / "ee-collections"
    _run([ANSIBLE_GALAXY, "collection", "install", "-r", "requirements.yml", "--collections-path", str(target)], str(build),
         dict(env, ANSIBLE_COLLECTIONS_PATH=str(target)))
    assert (target / "ansible_collections" / "trainstack" / "cluster" / "meta" / "execution-environment.yml").exists()


def test_requirements_name_the_collection_version_galaxy_builds():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    with open(os.path.join(ROOT, "ee", "requirements.yml"), encoding="utf-8") as handle:
        requirements = yaml.safe_load(handle)
    assert requirements == {"collections": [{"name": "collections/trainstack-cluster-%s.tar.gz" % version, "type": "file"}]}
