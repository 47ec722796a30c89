# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every generated shell script keeps hostile values as data (issue 25).

The roles' own templates are rendered by Ansible (render_scripts.yml) with paths, flags, make arguments and
environment values that would run commands if a template ever left them unquoted; each script then passes
`bash -n` and really runs against stand-ins for configure, make, srun and the launcher, which record the argv and
environment they got. A command that ran leaves a pwned-* file in the work directory.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, run_playbook

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

HERE = os.path.dirname(os.path.abspath(__file__))
# A directory name (no '/'): every shell syntax that would run `touch pwned-*` in the work directory if unquoted.
HOSTILE = "h $(touch pwned-dollar) `touch pwned-tick` ;touch pwned-semi; 'q\" \\ \ntouch pwned-newline &&"
# Records its argv (NUL-separated) and $DEMO / $TRAINSTACK_LAUNCH_CONFIG into <work>/<name>.rec.
RECORDER = """#!/bin/sh
{ printf '%s\\0' "$@"; printf 'ENV\\0%s\\0%s\\0' "${DEMO-}" "${TRAINSTACK_LAUNCH_CONFIG-}"; } >"$WORK/$(basename "$0").rec"
"""


def _recorded(work, name):
    with open(os.path.join(work, name + ".rec"), encoding="utf-8") as handle:
        parts = handle.read().split("\0")[:-1]
    split = parts.index("ENV")
    return parts[:split], parts[split + 1:]


def _write(path, text, mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def _pwned(work):
    return sorted(name for entry in os.walk(work) for name in entry[2] if name.startswith("pwned"))


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("scripts"))
    hostile = os.path.join(work, HOSTILE)
    os.makedirs(hostile)
    os.makedirs(os.path.join(work, "out"))
    values = {
        "out": os.path.join(work, "out"),
        "__build_artifact_id": "0123456789ab",
        "__build_artifact_log": os.path.join(hostile, "build.log"),
        "__build_artifact_prefix": os.path.join(hostile, "root", "demo", "1.0-0123456789ab"),
        "__build_artifact_pkg_root": os.path.join(hostile, "root", "demo"),
        "__build_artifact_dirname": "1.0-0123456789ab",
        "__build_artifact_archive": os.path.join(work, "controller", "demo.tar.gz"),
        "__build_artifact_info": {"name": "demo", "note": HOSTILE + "\nTRAINSTACK_BUILD_INFO"},
        "build_artifact_name": "demo",
        "build_artifact_version": "1.0",
        "build_artifact_build_dir": os.path.join(hostile, "build"),
        "build_artifact_bootstrap": "",
        "build_artifact_configure_flags": ["--with-x=" + HOSTILE, HOSTILE],
        "build_artifact_make_jobs": "2\ntouch pwned-jobs",
        "build_artifact_make_args": ["CFLAGS=" + HOSTILE],
        "build_artifact_install_bin": ["out/*_perf"],
        "build_artifact_build_env": {"DEMO": HOSTILE},
        "build_artifact_env": {"DEMO_HOME": "@PREFIX@", "DEMO": HOSTILE + "@PREFIX@/x"},
        "__pytorch_cpus_per_gpu": "4\ntouch pwned-cpus",
        "pytorch_share_dir": hostile,
        "pytorch_launcher_path": os.path.join(hostile, "launcher"),
        "pytorch_launch_config_path": os.path.join(hostile, "launch.json"),
        "__pytorch_env_python": os.path.join(hostile, "python"),
    }
    extra = os.path.join(work, "extra.json")
    with open(extra, "w", encoding="utf-8") as handle:
        json.dump(values, handle)
    returncode, report, stderr = run_playbook(os.path.join(HERE, "render_scripts.yml"), "-e", "@" + extra)
    failed = [result.get("msg") for play in report["plays"] for task in play["tasks"] for result in task["hosts"].values()
              if result.get("failed")] + [item.get("msg") for play in report["plays"] for task in play["tasks"]
                                          for result in task["hosts"].values() for item in result.get("results", [])
                                          if item.get("failed")]
    assert returncode == 0, (stderr, failed)
    # Stand-ins: make and srun on PATH, configure in the source tree, the launcher at its hostile path.
    # make install creates the prefix configure was given; the Makefile build leaves a program in out/.
    _write(os.path.join(work, "bin", "make"), RECORDER + 'if [ "${1-}" = install ]; then mkdir -p "$(cat "$WORK/prefix")"; '
           'else mkdir -p out && printf "#!/bin/sh\\n" >out/demo_perf; fi\n')
    _write(os.path.join(work, "bin", "srun"), RECORDER)
    _write(os.path.join(work, "src", "configure"), RECORDER + 'printf "%s" "${1#--prefix=}" >"$WORK/prefix"\n')
    os.makedirs(values["build_artifact_build_dir"])
    _write(values["pytorch_launcher_path"], '#!/bin/sh\necho "MASTER_ADDR=node1; MASTER_PORT=29500"\n')
    return work, values


def _run(work, script, *args, cwd=None):
    env = dict(os.environ, WORK=work, PATH=os.path.join(work, "bin") + os.pathsep + os.environ["PATH"], SLURM_CPUS_ON_NODE="3")
    env.pop("DEMO", None)
    return subprocess.run(["bash", os.path.join(work, "out", script)] + list(args), cwd=cwd or work, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("script", ["build-autotools.sh", "build-make.sh", "profile.sh", "archive.sh", "ddp_smoke.sbatch",
                                    "allreduce.sbatch"])
def test_every_script_parses(scripts, script):
    work = scripts[0]
    proc = subprocess.run(["bash", "-n", os.path.join(work, "out", script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_autotools_build_passes_flags_as_data(scripts):
    work, values = scripts
    proc = _run(work, "build-autotools.sh", cwd=os.path.join(work, "src"))
    assert _pwned(work) == []
    argv, env = _recorded(work, "configure")
    assert argv == ["--prefix=" + values["__build_artifact_prefix"], "--with-x=" + HOSTILE, HOSTILE]
    assert env[0] == HOSTILE
    make_argv = _recorded(work, "make")[0]
    # make -j2 then make install; the job count is a number, whatever else the value held.
    assert make_argv == ["install"] and proc.returncode == 0, proc.stderr
    with open(os.path.join(values["__build_artifact_prefix"], ".build-info.json"), encoding="utf-8") as handle:
        assert json.load(handle) == values["__build_artifact_info"]


def test_make_build_passes_arguments_and_environment_as_data(scripts):
    work, values = scripts
    proc = _run(work, "build-make.sh", cwd=os.path.join(work, "src"))
    assert (proc.returncode, _pwned(work)) == (0, []), proc.stderr
    argv, env = _recorded(work, "make")
    assert argv == ["-j2", "CFLAGS=" + HOSTILE] and env[0] == HOSTILE
    assert os.path.isfile(os.path.join(values["__build_artifact_prefix"], "bin", "demo_perf"))
    with open(values["__build_artifact_log"], encoding="utf-8") as handle:
        assert "installed_files=1" in handle.read()


def test_profile_script_exports_values_as_data(scripts):
    work, values = scripts
    current = os.path.join(values["__build_artifact_pkg_root"], "current")
    proc = subprocess.run(["bash", "-c", '. "$1"; printf "%s\\0" "$DEMO_HOME" "$DEMO" "$PATH" "$LD_LIBRARY_PATH"', "bash",
                           os.path.join(work, "out", "profile.sh")],
                          cwd=work, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False)
    assert (proc.returncode, _pwned(work)) == (0, []), proc.stderr
    home, demo, path, ld_path = proc.stdout.split("\0")[:4]
    assert home == current and demo == HOSTILE + current + "/x"
    assert path == current + "/bin:/usr/bin:/bin" and ld_path == current + "/lib"


def test_archive_script_archives_the_hostile_prefix(scripts):
    work, values = scripts
    prefix = values["__build_artifact_prefix"]
    _write(os.path.join(prefix, "bin", "tool"), "#!/bin/sh\n")
    proc = subprocess.run(["sh", os.path.join(work, "out", "archive.sh")], cwd=work, capture_output=True, text=True, check=False)
    assert (proc.returncode, _pwned(work)) == (0, []), proc.stderr
    archive = os.path.join(values["build_artifact_build_dir"], "demo.tar.gz")
    listing = subprocess.run(["tar", "-tzf", archive], capture_output=True, text=True, check=True).stdout.split()
    assert "1.0-0123456789ab/bin/tool" in listing


@pytest.mark.parametrize("job, program", [("ddp_smoke.sbatch", "ddp_smoke.py"), ("allreduce.sbatch", "allreduce_bench.py")])
def test_sbatch_scripts_launch_with_paths_as_data(scripts, job, program):
    work, values = scripts
    with open(os.path.join(work, "out", job), encoding="utf-8") as handle:
        directives = [line for line in handle if line.startswith("#SBATCH")]
    # The job's CPUs per GPU is a number: the rest of the value never reaches the script.
    assert "#SBATCH --cpus-per-gpu=0\n" in directives, directives
    proc = _run(work, job, "--steps", HOSTILE)
    assert (proc.returncode, _pwned(work)) == (0, []), proc.stderr
    argv, env = _recorded(work, "srun")
    assert argv == ["--kill-on-bad-exit=1", "--ntasks-per-node=1", "--cpus-per-task=3", values["pytorch_launcher_path"], "run",
                    "--", values["__pytorch_env_python"], os.path.join(values["pytorch_share_dir"], program), "--steps", HOSTILE]
    assert env[1] == values["pytorch_launch_config_path"]
