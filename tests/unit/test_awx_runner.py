# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Jobs run the way an AWX execution node runs them (ansible-runner, a private data dir, extra vars written !unsafe
by AWX's rules, the credential's extra vars in their own file; see awx_runner_support).

- The munge key of the credential type (base64 of 1,024 random bytes) reaches the file the slurm role's own task
  files write byte for byte, and no event of the job shows it.
- Hostile survey answers for the site, validate and diagnose templates (newlines, CRLF textareas, Jinja, shell
  metacharacters, huge values) are refused by the play before any change, each naming its variable; good answers pass. Each job holds
  one bad answer for every variable (the preflight check reports all of them at once), so a few jobs cover the matrix.
"""

from __future__ import annotations

import base64
import concurrent.futures
import fcntl
import json
import os
import pwd

import pytest

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader

from awx_runner_support import (HAS_ANSIBLE_RUNNER, awx_extra_vars_yaml, credential_type, job_summary, local_inventory,
                                render_injectors, run_job)

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_RUNNER, reason="ansible-runner is not beside this Python")


# What AWX adds to every job's extra vars (awx/main/models/unified_jobs.py awx_meta_vars, jobs.py).
AWX_META = {"awx_job_id": 4242, "tower_job_id": 4242, "awx_job_launch_type": "manual", "awx_job_template_id": 7,
            "awx_job_template_name": "trainstack site", "awx_user_name": "someone"}

# --- The munge key -------------------------------------------------------------------------------------------------

MUNGE_PLAYBOOK = """---
- name: The slurm role's own munge key tasks, on a key path of the test's
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the key as preflight does
      ansible.builtin.include_role:
        name: trainstack.cluster.slurm
        tasks_from: validate_munge.yml
    - name: Install the key as the role does
      ansible.builtin.include_role:
        name: trainstack.cluster.slurm
        tasks_from: munge.yml
"""


def _random_key():
    key = bytearray(os.urandom(1024))
    # The bytes a text path would lose or change: NUL, LF, CR, 0xff, and a key that ends in a newline.
    for index, byte in ((0, 0x00), (1, 0x0a), (2, 0xff), (3, 0x0d), (511, 0x0a), (512, 0x00), (1022, 0xff), (1023, 0x0a)):
        key[index] = byte
    return bytes(key)


@pytest.mark.skipif(os.geteuid() != 0, reason="the role's tasks chown the key to munge: root only")
def test_credential_munge_key_reaches_the_file_byte_for_byte(tmp_path):
    try:
        pwd.getpwnam("munge")
    except KeyError:
        pytest.skip("no munge user here (the role's tasks chown the key to it)")
    key = _random_key()
    encoded = base64.b64encode(key).decode()
    credential_vars = render_injectors(credential_type()["injectors"]["extra_vars"], {"munge_key_b64": encoded})
    assert credential_vars["slurm_munge_key"] == encoded
    key_path = tmp_path / "munge.key"
    # Extra vars outrank the role's vars/main.yml: the key goes to a file of the test's, no service is touched.
    job_vars = dict(AWX_META, __slurm_munge_key_path=str(key_path), __slurm_systemd=False, __slurm_controller="localhost")
    runs = []
    for attempt in ("first", "again"):
        rc, events = run_job(str(tmp_path / attempt), {"munge.yml": MUNGE_PLAYBOOK}, local_inventory(), job_vars,
                             credential_vars)
        _plays, failed, _changed = job_summary(events)
        assert (rc, failed) == (0, []), failed
        # no_log results carry no `changed`: what ran, and the play's count of changes, say it instead.
        install = [event["event"] for event in events
                   if event["event"].startswith("runner_on_") and event["event"] != "runner_on_start"
                   and event["event_data"].get("task") == "Install the cluster's munge key"]
        (stats,) = [event["event_data"] for event in events if event["event"] == "playbook_on_stats"]
        runs.append((install, stats["changed"]))
        # no_log on every task that holds the key: not in any event, whole or as its checksum's source.
        text = "".join(json.dumps(event) for event in events)
        assert encoded not in text and encoded[:40] not in text
    assert key_path.read_bytes() == key
    assert oct(key_path.stat().st_mode & 0o777) == "0o400" and key_path.stat().st_uid == pwd.getpwnam("munge").pw_uid
    # Installed once; the second run finds the same checksum and changes nothing.
    assert runs == [(["runner_on_ok"], {"localhost": 1}), (["runner_on_skipped"], {})], runs


# --- How Ansible reads what AWX writes -----------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "read_as"), [
    ("00:10:00", "00:10:00"), ("0-10:00:00", "0-10:00:00"), ("gpu[07-08]", "gpu[07-08]"), ("1,5,10%", "1,5,10%"),
    # ansible-core 2.19 resolves an !unsafe scalar as if it were plain, quotes or not: YAML 1.1's base-60 integers,
    # booleans and null. A time limit answered 10:00:00 reaches the play as 36000 (Slurm would read minutes).
    ("10:00:00", 36000), ("10:00", 600), ("true", True), ("yes", True), ("null", None), ("300", 300),
])
def test_what_a_text_answer_becomes_in_the_play(answer, read_as):
    text = awx_extra_vars_yaml({"answer": answer})
    assert text == "!unsafe 'answer': !unsafe '%s'\n" % answer
    value = DataLoader().load(text)["answer"]
    # Ansible's tagged str and int are subclasses of the plain ones; True is an int too.
    assert isinstance(value, type(read_as)) and isinstance(value, bool) == isinstance(read_as, bool) and value == read_as


def test_an_answer_of_more_than_4300_digits_stops_the_job_before_any_play():
    # Read as an integer, which Python refuses to convert: ansible-playbook stops on the extra vars file, naming it.
    with pytest.raises(AnsibleError, match="Exceeds the limit"):
        DataLoader().load(awx_extra_vars_yaml({"acceptance_job_time_limit": "9" * 4301}))


# --- Hostile survey answers ----------------------------------------------------------------------------------------

SITE = {"site.yml": "---\n- name: The site project's playbook\n  ansible.builtin.import_playbook: trainstack.cluster.site\n"}
VALIDATE = {"validate.yml": "---\n- name: The site project's playbook\n  ansible.builtin.import_playbook: trainstack.cluster.validate\n"}
DIAGNOSE = {"diagnose.yml": "---\n- name: The site project's playbook\n  ansible.builtin.import_playbook: trainstack.cluster.diagnose\n"}
UPGRADE = {"upgrade.yml": "---\n- name: The site project's playbook\n  ansible.builtin.import_playbook: trainstack.cluster.upgrade\n"}
FIRST_PLAY = {"site.yml": "Preflight - validate inventory and targets before anything changes", "validate.yml": "Accept the cluster",
              "diagnose.yml": "Diagnose the nodes", "upgrade.yml": "Plan the upgrade - settings, pins, what each node runs, Slurm's order"}
# Where a Jinja or shell answer would leave a file if anything ran it (a folder of the test's, put in at run time).
MARKERS = "@MARKERS@"
PIPE = "{{ lookup('ansible.builtin.pipe', 'touch %s/%%s') }}" % MARKERS

# job: (playbook, {variable: (answer, what the refusal says)}). The site and validate templates' survey variables;
# answers AWX's own checks would let through (a textarea, a text without a pattern) or a template edited to loosen.
BAD_JOBS = {
    "crlf-textarea": (SITE, {
        "slurm_verify_ignore_nodes": ("gpu01\r\ngpu02\r\n", "slurm_verify_ignore_nodes contains a carriage return"),
        "acceptance_job_time_limit": ("00:10:00\r\n", "acceptance_job_time_limit contains a carriage return"),
        "acceptance_job_start_timeout_s": (10 ** 12, "acceptance_job_start_timeout_s must be at most 86400, got 1000000000000"),
        "acceptance_drain_failing": ("true\r\nfalse", 'acceptance_drain_failing must be true or false, got "true\\r\\nfalse"'),
    }),
    "jinja": (SITE, {
        "slurm_verify_ignore_nodes": (PIPE % "ignore", "slurm_verify_ignore_nodes must be a Slurm hostlist such as gpu[01-04],cpu1: "
                                                       "invalid host name '{{'"),
        "acceptance_job_time_limit": ("{{lookup('ansible.builtin.pipe','id')}}", "acceptance_job_time_limit must be a Slurm word"),
        "acceptance_job_start_timeout_s": (-1, "acceptance_job_start_timeout_s must be at least 5, got -1"),
        "acceptance_drain_failing": (PIPE % "drain", 'acceptance_drain_failing must be true or false, got "{{ lookup('),
    }),
    "shell-and-newline": (SITE, {
        "slurm_verify_ignore_nodes": ("gpu01;touch %s/ignore-shell" % MARKERS,
                                      "slurm_verify_ignore_nodes must be a Slurm hostlist such as gpu[01-04],cpu1: invalid host name "
                                      "'gpu01;touch'"),
        "acceptance_job_time_limit": ("00:10:00\n$(touch${IFS}%s/time)" % MARKERS, "acceptance_job_time_limit contains a newline"),
        "acceptance_job_start_timeout_s": (4, "acceptance_job_start_timeout_s must be at least 5, got 4"),
        "acceptance_drain_failing": ("yes; scancel --user=root", 'acceptance_drain_failing must be true or false, got "yes; scancel --user=root"'),
    }),
    "huge": (SITE, {
        "slurm_verify_ignore_nodes": ("gpu[1-100000000]", "slurm_verify_ignore_nodes must be a Slurm hostlist such as gpu[01-04],cpu1: "
                                                          "invalid range '1-100000000'"),
        "acceptance_job_time_limit": ("$(touch${IFS}%s/time-shell)" % MARKERS, "acceptance_job_time_limit must be a Slurm word"),
        "acceptance_job_start_timeout_s": (2 ** 64, "acceptance_job_start_timeout_s must be at most 86400, got 18446744073709551616"),
        "acceptance_drain_failing": ("y" * 1000000, 'acceptance_drain_failing must be true or false, got "yyyyyyyyyy'),
    }),
    # A Slurm word (the format check lets it by) of 100,000 digits after the days: the bound refuses it, a check that
    # comes after the formats. Its own job, through the validate template's playbook (which validates on its own).
    "huge-time-limit": (VALIDATE, {
        "acceptance_job_time_limit": ("1-" + "9" * 100000, "acceptance_job_time_limit must be a bounded Slurm time"),
    }),
    # The upgrade template's answers (a multiselect arrives as a list): its plan checks them before it reads a node.
    # upgrade_hosts (not a question: the job's limit plays that part) puts this machine in the plan.
    "upgrade": (UPGRADE, {
        "upgrade_hosts": ("localhost", None),
        "upgrade_serial": ("1,5\n$(touch${IFS}%s/serial)" % MARKERS, "upgrade_serial: '5\\n$(touch${IFS}"),
        "upgrade_components": (["nccl", "bios;reboot"], "upgrade_components: unknown bios;reboot (known: driver, cuda, nccl"),
        "upgrade_max_fail_percentage": (10 ** 6, "upgrade_max_fail_percentage must be between 0 and 100, got 1000000"),
        "upgrade_drain_timeout": (-5, "upgrade_drain_timeout must be between 0 and 604800, got -5"),
    }),
    # The diagnose template's job id: its module refuses it before it reads anything.
    "diagnose-job-id": (DIAGNOSE, {
        "job": ("4242\n$(scancel --user=root)", "job must be a Slurm job id (digits, or <array job>_<task>), got '4242\\n$(scancel --user=root)'"),
    }),
}
GOOD = {"slurm_verify_ignore_nodes": "gpu[07-08]", "acceptance_job_time_limit": "1-00:00:00",
        "acceptance_job_start_timeout_s": 300, "acceptance_drain_failing": "false"}


def _run_bad_job(name, directory, markers):
    playbook, answers = BAD_JOBS[name]
    job_vars = {variable: answer.replace(MARKERS, markers) if isinstance(answer, str) else answer
                for variable, (answer, _said) in answers.items()}
    # --check: the job type AWX calls check; a preflight that let an answer through would still change nothing here.
    rc, events = run_job(directory, playbook, local_inventory(), dict(AWX_META, **job_vars), options="--check")
    return (rc,) + job_summary(events)


def _run_bad_jobs(tmp_path_factory):
    markers = str(tmp_path_factory.mktemp("markers"))
    directories = [str(tmp_path_factory.mktemp(name)) for name in BAD_JOBS]
    # Two at a time: each job is one ansible-playbook, mostly one busy core.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(_run_bad_job, BAD_JOBS, directories, [markers] * len(BAD_JOBS))
        return [dict(zip(BAD_JOBS, results)), markers]


# Once per test run, whatever the xdist workers (as test_bad_input.py's corpus): the first runs the jobs, the others
# read its result from pytest's common temporary root.
@pytest.fixture(name="bad_jobs", scope="session")
def fixture_bad_jobs(tmp_path_factory, worker_id):
    """[{job: [rc, plays, failed, changed]} for every job of BAD_JOBS, the markers' folder]."""
    if worker_id == "master":
        return _run_bad_jobs(tmp_path_factory)
    shared = tmp_path_factory.getbasetemp().parent / "awx_hostile_answers.json"
    with open(str(shared) + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.is_file():
            shared.write_text(json.dumps(_run_bad_jobs(tmp_path_factory)), encoding="utf-8")
        return json.loads(shared.read_text(encoding="utf-8"))


CASES = [(job, variable) for job, (_playbook, answers) in BAD_JOBS.items() for variable, (_answer, said) in answers.items() if said]


@pytest.mark.xdist_group("awx_hostile_answers")
@pytest.mark.parametrize(("job", "variable"), CASES, ids=["%s-%s" % case for case in CASES])
def test_hostile_answer_is_refused_before_any_change_naming_the_variable(bad_jobs, job, variable):
    rc, plays, failed, changed = bad_jobs[0][job]
    said = BAD_JOBS[job][1][variable][1].replace(MARKERS, bad_jobs[1])
    assert rc != 0
    assert any(said in message for message in failed), (said, failed)
    # The first play stopped the run: nothing after it started, nothing changed.
    assert plays == [FIRST_PLAY[next(iter(BAD_JOBS[job][0]))]], plays
    assert changed == []


@pytest.mark.xdist_group("awx_hostile_answers")
def test_no_answer_was_run_as_a_template_or_a_command(bad_jobs):
    assert os.listdir(bad_jobs[1]) == []


# site.yml's preflight play as it is there, then a play that only says it was reached: `site.yml --tags preflight` would
# still gather facts in each of site's later plays.
PREFLIGHT = {"preflight.yml": """---
- name: Preflight - validate inventory and targets before anything changes
  hosts: all
  gather_facts: true
  gather_subset: [min, virtual]
  any_errors_fatal: true
  tasks:
    - name: Run preflight
      ansible.builtin.include_role:
        name: trainstack.cluster.preflight

- name: After preflight
  hosts: all
  gather_facts: false
  tasks:
    - name: Record that preflight passed
      ansible.builtin.debug:
        msg: preflight passed
"""}


def test_good_answers_pass(tmp_path):
    rc, events = run_job(str(tmp_path), PREFLIGHT, local_inventory(), dict(AWX_META, **GOOD), options="--check")
    plays, failed, changed = job_summary(events)
    assert (rc, failed, changed, plays) == (
        0, [], [], ["Preflight - validate inventory and targets before anything changes", "After preflight"])
