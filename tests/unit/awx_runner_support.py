# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a playbook through ansible-runner the way an AWX execution node runs a job, and read its events.

What AWX hands ansible-runner (awx/main/tasks/jobs.py RunJob, awx/main/models/credential CredentialType.inject_credential):
- a private data dir: project/ (the project's checkout; the playbook is relative to it), inventory/, env/;
- env/extravars: the job's extra vars (survey answers, launch variables, awx_* meta variables), each string written
  with the tag !unsafe (awx/main/utils/safe_yaml.py safe_dump), so Ansible never templates an answer;
- a credential's extra_vars injectors, rendered by AWX with the credential's inputs in a sandboxed Jinja environment,
  dumped the same way into their own file env/tmpXXXX (0400) and passed as `-e @file` on the command line (env/cmdline).
ansible-runner puts env/cmdline before `-e @env/extravars`: a job's extra var outranks a credential's of the same name.

Run as a program (molecule's default scenario, the AWX-like run against its nodes), it runs one job described by a JSON file:
  python awx_runner_support.py JOB_JSON DIRECTORY
JOB_JSON: {"playbook": {file name: text}, "inventory": {...}, "extra_vars": {...}, "credential_inputs": {...} (the
credential of data/awx_templates.yml's credential type, rendered through its injectors), "collections_path": the
execution environment's collections, "options": more of the command line, "timeout": seconds}. It writes
DIRECTORY/summary.json ({"rc", "plays", "failed", "changed"}) and DIRECTORY/events.txt (every event as JSON, one a line).
"""

from __future__ import annotations

import glob
import json
import os
import stat
import subprocess
import sys

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
ANSIBLE_RUNNER = os.path.join(VENV_BIN, "ansible-runner")
HAS_ANSIBLE_RUNNER = os.path.exists(ANSIBLE_RUNNER)


class _UnsafeLoader(yaml.SafeLoader):
    """safe_load plus Ansible's !unsafe: the injectors are templates AWX renders."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def credential_type():
    """The collection's one AWX credential type (data/awx_templates.yml)."""
    with open(os.path.join(ROOT, "data", "awx_templates.yml"), encoding="utf-8") as handle:
        (credential,) = yaml.load(handle, Loader=_UnsafeLoader)["credential_types"]  # nosec: a loader built on SafeLoader
    return credential


class _UnsafeStringDumper(yaml.SafeDumper):
    """Every string (keys too) tagged !unsafe, as AWX writes extra vars."""

    def represent_data(self, data):
        if isinstance(data, str):
            return self.represent_scalar("!unsafe", data)
        return super().represent_data(data)


def awx_extra_vars_yaml(extra_vars):
    """The text AWX writes for extra vars (one document per top-level key, each string !unsafe)."""
    return "".join(yaml.dump_all([{key: value}], Dumper=_UnsafeStringDumper, default_flow_style=False)
                   for key, value in extra_vars.items())


def render_injectors(injectors, inputs):
    """A credential type's extra_vars injectors rendered with a credential's inputs, as AWX renders them."""
    sandbox = ImmutableSandboxedEnvironment()
    return {name: sandbox.from_string(template).render(**inputs) for name, template in injectors.items()}


def _write(path, text, mode=0o600):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def run_job(directory, playbook, inventory, extra_vars, credential_vars=None, options="", timeout=120,
            collections_path=os.path.join(ROOT, "collections"), envvars=None):
    """One ansible-runner job in the private data dir `directory` (created here).

    playbook: {file name: playbook text} for project/ (the first is run); inventory: the Ansible YAML inventory
    (a dict); extra_vars: the job's extra vars; credential_vars: the injected extra vars of a credential; options:
    more of the command line (--check, --tags); collections_path: where the execution environment holds the
    collection (default the checkout's); envvars: more of the job's environment. Returns (rc, events in order).
    """
    for name in ("project", "inventory", "env"):
        os.makedirs(os.path.join(directory, name), exist_ok=True)
    for name, text in playbook.items():
        _write(os.path.join(directory, "project", name), text, 0o644)
    _write(os.path.join(directory, "inventory", "hosts.yml"), json.dumps(inventory))  # JSON is YAML
    _write(os.path.join(directory, "env", "extravars"), awx_extra_vars_yaml(extra_vars), stat.S_IRUSR)
    cmdline = []
    if credential_vars is not None:
        path = os.path.join(directory, "env", "tmpcredential")
        _write(path, awx_extra_vars_yaml(credential_vars), stat.S_IRUSR)
        cmdline.append("-e @%s" % path)
    cmdline.append(options)
    _write(os.path.join(directory, "env", "cmdline"), " ".join(cmdline))
    # The execution environment's collection path; the project's own ansible.cfg would be read from project/.
    _write(os.path.join(directory, "env", "envvars"), json.dumps(dict({
        "ANSIBLE_COLLECTIONS_PATH": collections_path,
        "ANSIBLE_NOCOLOR": "1",
        "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
    }, **(envvars or {}))))
    _write(os.path.join(directory, "env", "settings"), json.dumps({"job_timeout": timeout}))
    proc = subprocess.run([ANSIBLE_RUNNER, "run", directory, "-p", next(iter(playbook)), "--ident", "job"],
                          capture_output=True, text=True, timeout=timeout + 60, check=False)
    events = []
    for path in glob.glob(os.path.join(directory, "artifacts", "job", "job_events", "*.json")):
        with open(path, encoding="utf-8") as handle:
            events.append(json.load(handle))
    events.sort(key=lambda event: event["counter"])
    assert events, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, events


def job_summary(events):
    """(plays started, failed results' messages (else the whole result as JSON), names of tasks that changed a host)."""
    plays, failed, changed = [], [], []
    for event in events:
        data = event.get("event_data", {})
        if event["event"] == "playbook_on_play_start":
            plays.append(data.get("play", ""))
        elif event["event"] in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            result = data.get("res", {})
            failed.append(result["msg"] if isinstance(result.get("msg"), str) else json.dumps(result))
        elif event["event"] == "runner_on_ok" and data.get("res", {}).get("changed"):
            changed.append(data.get("task", ""))
    return plays, failed, changed


def local_inventory(hosts=("localhost",), **host_vars):
    """An inventory of this machine under the given names (connection local, this Python)."""
    return {"all": {"hosts": {name: dict(host_vars, ansible_connection="local", ansible_python_interpreter=sys.executable)
                              for name in hosts}}}


def main(argv):
    """Run the job of a JSON file (see the module's doc); exit 0 when it ran, whatever its outcome."""
    job_path, directory = argv
    with open(job_path, encoding="utf-8") as handle:
        job = json.load(handle)
    credential_vars = None
    if "credential_inputs" in job:
        credential_vars = render_injectors(credential_type()["injectors"]["extra_vars"], job["credential_inputs"])
    rc, events = run_job(directory, job["playbook"], job["inventory"], job["extra_vars"], credential_vars,
                         options=job.get("options", ""), timeout=job.get("timeout", 120),
                         collections_path=job["collections_path"], envvars=job.get("envvars"))
    plays, failed, changed = job_summary(events)
    _write(os.path.join(directory, "events.txt"), "".join(json.dumps(event) + "\n" for event in events))
    _write(os.path.join(directory, "summary.json"), json.dumps({"rc": rc, "plays": plays, "failed": failed, "changed": changed}))
    print(json.dumps({"rc": rc, "plays": len(plays), "failed": failed, "changed": changed}))


if __name__ == "__main__":
    main(sys.argv[1:])
