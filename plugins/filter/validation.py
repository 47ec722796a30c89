# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether inventory values may reach a rendered file (controller side, pure).

preflight applies these to every variable a role declares in ``meta/value_formats.yml`` and to
every variable name the inventory sets. Messages name the variable and the offending character,
never the value (passwords pass through here).

Every pattern is matched with ``fullmatch``: ``$`` would match before a trailing newline.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import posixpath
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, expand
from ansible_collections.trainstack.cluster.plugins.module_utils._yaml_kind import yaml_kind as _kind

_HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")
_WORDS = {
    # Slurm words: partition names, GPU types, features, cluster names.
    "slurm_word": re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+@-]*"),
    "slurm_key": re.compile(r"[A-Za-z][A-Za-z0-9]*"),
    "nccl_key": re.compile(r"NCCL_[A-Z0-9_]+"),
    # Environment of MPI jobs: the MPI stack's own settings, never the loader's or the shell's (LD_PRELOAD, BASH_ENV).
    "mpi_env_key": re.compile(r"(OMPI|OPAL|PRTE|PMIX|UCX|HWLOC)_[A-Za-z0-9_]+"),
    # NCCL_SOCKET_IFNAME syntax: names, prefixes, ^ (exclude) and = (exact), comma separated.
    "ifname": re.compile(r"[=^]?[A-Za-z0-9_.:@-]{1,15}(,[=^]?[A-Za-z0-9_.:@-]{1,15})*"),
    "package": re.compile(r"[A-Za-z0-9][A-Za-z0-9+._:~=*-]*"),
    # One pip requirement: a name, optional [extras], optional version clauses; never an option (pip reads a
    # leading '-' as one: --index-url in a package list would redirect every download).
    # An environment marker after ';' (PEP 508) is data too: the pip module passes each requirement as one argument.
    "pip_requirement": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\])?"
                                  r"( *(===?|[<>!~]=|[<>]) *[A-Za-z0-9.*+!_-]+( *, *(===?|[<>!~]=|[<>]) *[A-Za-z0-9.*+!_-]+)*)?"
                                  r"( *; *[A-Za-z_][A-Za-z0-9_.'\"<>=!~, ()-]*)?"),
    # x.y.z as upstream numbers its releases (no v, no suffix).
    "release": re.compile(r"[0-9]+\.[0-9]+\.[0-9]+"),
    "version": re.compile(r"[0-9]+(\.[0-9]+)*"),
    # A CUDA architecture as nccl_tests_gencode takes it: 9.0, 90, sm_90, compute_90a.
    "cuda_arch": re.compile(r"((sm|compute)_)?[0-9]{1,3}(\.[0-9])?[a-z]?", re.IGNORECASE),
    # Ansible host patterns (playbook hosts:): group and host names, : & ! * ranges.
    "host_pattern": re.compile(r"[A-Za-z0-9_.*!&:\[\],-]+"),
    "word": re.compile(r"[A-Za-z0-9][A-Za-z0-9+._:~@/-]*"),
    "db_name": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}"),
    "ini_key": re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*"),
    "url": re.compile(r"(https?|file)://[^\s#\"'<>\\]+"),
    "proxy_url": re.compile(r"https?://[^\s#\"'<>\\;]+"),
    "python_version": re.compile(r"[0-9]+\.[0-9]+"),
    "fingerprint": re.compile(r"[0-9A-Fa-f]{40}"),
    "chrony_makestep": re.compile(r"[0-9]+(\.[0-9]+)? -?[0-9]+"),
}
# What each pattern allows, as a refusal says it (the user reads words, not the regular expression).
_WORD_RULES = {
    "slurm_word": "a Slurm word: letters, digits and _.:+@- starting with a letter or digit",
    "slurm_key": "a Slurm parameter name: letters and digits starting with a letter",
    "nccl_key": "an NCCL variable name: NCCL_ then upper-case letters, digits or _",
    "mpi_env_key": ("a variable of the MPI stack: OMPI_, OPAL_, PRTE_, PMIX_, UCX_ or HWLOC_ then letters, digits or _ "
                    "(never one of the loader or the shell, such as LD_PRELOAD or BASH_ENV)"),
    "ifname": "interface names of at most 15 letters, digits or _.:@- each, comma separated, each after an optional ^ or =",
    "package": "a package name: letters, digits and +._:~=*- starting with a letter or digit (never an option)",
    "pip_requirement": "a pip requirement such as numpy==1.26.4 or accelerate[deepspeed]>=1.0",
    "release": "a release number x.y.z such as 4.1.4 (no v, no suffix)",
    "version": "a version of digits and dots such as 4.2.2",
    "cuda_arch": "a CUDA architecture such as 90, 9.0, sm_90 or compute_90a",
    "host_pattern": "an Ansible host pattern: group and host names with : & ! * [ ] and commas",
    "word": "one word of letters, digits and +._:~@/- starting with a letter or digit",
    "db_name": "a database name of at most 64 letters, digits, _ and -",
    "ini_key": "a name of letters, digits, _ and - starting with a letter or digit",
    "url": "an http://, https:// or file:// URL",
    "proxy_url": "an http:// or https:// proxy URL",
    "python_version": "a Python version major.minor such as 3.9",
    "fingerprint": "the 40 hex digits of a key fingerprint",
    "chrony_makestep": "a threshold in seconds and a count of updates, such as 1.0 3",
}
# Directories a role must never own, chown or fill (exact match), and trees it must not write into.
SYSTEM_DIRS = frozenset([
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt",
    "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/lib64",
    "/usr/local", "/usr/local/bin", "/usr/sbin", "/usr/share", "/var", "/var/lib", "/var/log", "/var/run",
    "/var/spool", "/var/tmp", "/var/cache", "/etc/ssh", "/etc/ssl", "/etc/pam.d", "/etc/sudoers.d",
])
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/boot", "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64",
                "/etc/ssh", "/etc/pam.d", "/etc/sudoers.d", "/etc/ssl", "/root")


def _char_name(char):
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL byte",
             " ": "a space", "#": "'#' (starts a comment)", "=": "'='", "/": "'/'"}
    if char in names:
        return names[char]
    if ord(char) < 32 or ord(char) == 127:
        return "control character U+%04X" % ord(char)
    if char.isspace():
        return "whitespace U+%04X" % ord(char)
    return repr(char)


def _control(text):
    """The first control character (C0, DEL, or a Unicode line separator) in text, else None."""
    for char in text:
        if ord(char) < 32 or ord(char) == 127 or char in "\x85\u2028\u2029":
            return char
    return None


def _first(text, chars):
    for char in text:
        if char in chars or (" " in chars and char.isspace()):
            return char
    return None


# Paths land in shell scripts (build.sh, profile.d, sbatch files), Tcl module files and Slurm's key=value files: besides
# quoting there, no character that any of them would read as syntax.
_PATH_META = "$`;|&<>()[]{}*?!"


def _path_problem(text, kind):
    bad = _control(text) or _first(text, " #=\"'\\")
    if bad:
        return "contains %s" % _char_name(bad)
    bad = _first(text, _PATH_META)
    if bad:
        return "contains %s (a shell or Tcl metacharacter)" % _char_name(bad)
    if not text.startswith("/"):
        return "must be an absolute path"
    if "/.." in text + "/" and any(part == ".." for part in text.split("/")):
        return "must not contain '..'"
    if posixpath.normpath(text) != text or text.startswith("//"):
        return "must be normalised (no '.', '//' or trailing '/'), e.g. %s" % posixpath.normpath(text)
    if kind == "path":
        return None
    if text in SYSTEM_DIRS or any(text == tree or text.startswith(tree + "/") for tree in SYSTEM_TREES + _ETC_SYSTEM + _SYSTEM_STATE):
        return "is a system directory or lies in one; use a directory of its own such as /var/lib/<name>"
    if kind == "owned_dir":
        return None
    if any(text.startswith(tree + "/") for tree in _WORLD_WRITABLE):
        return "lies in a directory anyone may write to (%s): use a directory of its own such as /etc/nccl" % posixpath.dirname(text)
    base = posixpath.basename(text)
    if kind == "nccl_conf_file" and not re.fullmatch(r"nccl[A-Za-z0-9_.-]*\.conf", base):
        return "must name an NCCL configuration file (nccl*.conf, e.g. /etc/nccl.conf)"
    if kind == "xml_file" and not re.fullmatch(r"[A-Za-z0-9_.-]+\.xml", base):
        return "must name an .xml file"
    return None


# Directories every user may write to: a file root writes there for every job to read could be replaced or linked.
_WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
# The package managers' and cron's state: a file there is the system's record, never a role's.
_SYSTEM_STATE = ("/var/lib/dpkg", "/var/lib/apt", "/var/lib/rpm", "/var/lib/dnf", "/var/spool/cron")
# Directories in /etc whose files the system runs, sources or reads as its own configuration.
_ETC_SYSTEM = ("/etc/apt", "/etc/cron.d", "/etc/cron.daily", "/etc/cron.hourly", "/etc/cron.weekly", "/etc/cron.monthly",
               "/etc/default", "/etc/init.d", "/etc/ld.so.conf.d", "/etc/logrotate.d", "/etc/modprobe.d", "/etc/profile.d",
               "/etc/security", "/etc/sysctl.d", "/etc/systemd", "/etc/udev", "/etc/yum.repos.d", "/etc/dnf")


def _owned_path_problem(text):
    """A file or directory a role writes as its own (a launcher, a JSON config): never a system one or one the system runs."""
    problem = _path_problem(text, "path")
    if problem:
        return problem
    parent = posixpath.dirname(text)
    local = parent == "/usr/local" or parent.startswith("/usr/local/")
    if (parent in SYSTEM_DIRS and parent not in ("/usr/local/bin", "/usr/local/sbin", "/opt")) or (
            not local and any(parent == tree or parent.startswith(tree + "/") for tree in SYSTEM_TREES + _ETC_SYSTEM + _SYSTEM_STATE)):
        return ("would replace a system file or one the system runs (%s); use a file of its own such as "
                "/usr/local/bin/<name> or /etc/<name>/<file>" % parent)
    return None


def _git_url_problem(text):
    """A repository git clones: a URL, user@host:path or a path (a bundle); never an option or a transport helper."""
    bad = _control(text) or _first(text, " #\"'\\") or _first(text, _PATH_META)
    if bad:
        return "contains %s" % _char_name(bad)
    if text.startswith("-"):
        return "must not begin with '-' (git would read it as an option)"
    if "::" in text:
        return "must not name a git transport helper (<transport>::)"
    if re.match(r"(ssh|git)://([^/@]*@)?-", text):
        return "must not name a host beginning with '-' (ssh would read it as an option)"
    if re.fullmatch(r"(https?|ssh|git)://[^/]+.*|file://.+", text) or re.fullmatch(r"[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:.+", text):
        return None
    if "://" in text:
        return "must be an https, ssh, git or file URL, user@host:path or a path"
    return None


def _relative_path_problem(text):
    bad = _control(text) or _first(text, " #\"'\\")
    if bad:
        return "contains %s" % _char_name(bad)
    if text.startswith("/") or any(part in ("..", ".", "") for part in text.split("/")):
        return "must be a relative path inside the mirror without '..', '.' or empty parts"
    return None


def _scalar_problem(value, fmt):
    """Why value does not fit the scalar format fmt, or None."""
    if fmt == "bool":  # switches shared by several roles (trainstack_gpu_hold, trainstack_mpi)
        return None if isinstance(value, bool) else "must be true or false, got a %s" % _kind(value)
    if fmt == "nccl_value" and isinstance(value, bool):  # NCCL switches: true/false are written as 1/0
        return None
    if isinstance(value, bool) or isinstance(value, (list, tuple, dict)):
        return "must be a string, got a %s" % _kind(value)
    if value is None:
        return "must be set, got null"
    if fmt == "major_version":
        # A distribution's major version as ansible_distribution_major_version gives it: 12 or "12", never 12.1 or 9.4.
        text = value if isinstance(value, str) else repr(value) if isinstance(value, (int, float)) else None
        if text is not None and re.fullmatch(r"[0-9]+", text):
            return None
        return "must be a major version such as 12 (ansible_distribution_major_version has no minor part), got %s" % _shown(value)
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        return "must be a string, got %s" % type(value).__name__
    if fmt == "text":  # free text: one line, anything printable
        bad = _control(value)
        return "contains %s" % _char_name(bad) if bad else None
    if fmt in ("path", "owned_dir", "nccl_conf_file", "xml_file"):
        return _path_problem(value, fmt)
    if fmt == "relative_path":
        return _relative_path_problem(value)
    if fmt == "controller_path":
        # A controller path; ~/ is the controller user's home (Ansible expands it for type path).
        return _path_problem(value[1:] if value.startswith("~/") else value, "path")
    if fmt == "owned_path":
        return _owned_path_problem(value)
    if fmt == "git_url":
        return _git_url_problem(value)
    if fmt == "build_arg":
        # configure flags and make arguments: build.sh quotes each, but what reaches a shell is refused outright.
        bad = _control(value) or _first(value, "$`;|&<>(){}\\\"'!*?#")
        return "contains %s (a shell metacharacter)" % _char_name(bad) if bad else None
    if fmt == "file_name":
        bad = _control(value) or _first(value, " #\"'\\")
        if bad:
            return "contains %s" % _char_name(bad)
        return "must be a file name (no '/', not '.' or '..')" if "/" in value or value in ("", ".", "..") else None
    bad = _control(value)
    if bad:
        return "contains %s" % _char_name(bad)
    if fmt == "slurm_value":
        # key=value files: '#' starts a comment; whitespace ends the value unless the whole value is quoted.
        if value == "":
            return "must not be empty"
        bad = _first(value, "#")
        if bad:
            return "contains %s" % _char_name(bad)
        quoted = len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1]
        bad = None if quoted else _first(value, ' "')
        return "contains %s (quote the whole value in double quotes)" % _char_name(bad) if bad else None
    if fmt == "nccl_value":
        if value == "":
            return "must not be empty"
        bad = _first(value, " #")
        return "contains %s" % _char_name(bad) if bad else None
    if fmt == "secret":
        # slurmdbd.conf.j2 escapes '#' and '\' and double-quotes a value with whitespace; a value inside double
        # quotes cannot hold one itself, and a leading one would be read as an opening quote.
        if value.startswith('"'):
            return "must not begin with a double quote"
        space = next((char for char in value if char.isspace()), None)
        if space and '"' in value:
            return "contains %s and a double quote (it may hold either, not both)" % _char_name(space)
        return None
    if fmt == "hostlist":
        # As slurm's verify step and scontrol will read it.
        try:
            expand(value)
        except HostlistError as exc:
            return "must be a Slurm hostlist such as gpu[01-04],cpu1: %s" % exc
        return None
    if fmt == "ini_value":
        bad = _first(value, "#;")
        if bad or value != value.strip() or value == "":
            return "contains %s" % _char_name(bad) if bad else "must be a non-empty value without leading or trailing spaces"
        return None
    if fmt == "ip":
        try:
            ipaddress.ip_address(value)
        except ValueError:
            return "must be an IPv4 or IPv6 address"
        return None
    if fmt in ("hostname", "host"):
        if fmt == "host":
            try:
                ipaddress.ip_address(value)
                return None
            except ValueError:
                pass
        if _HOSTNAME.fullmatch(value):
            return None
        bad = _first(value, " #=")
        return ("contains %s" % _char_name(bad)) if bad else "must be a DNS name%s" % (" or an IP address" if fmt == "host" else "")
    if fmt == "program":
        # A command name (g++-12) or an absolute path to it (/usr/bin/g++-12), as nvcc -ccbin takes it.
        return _path_problem(value, "path") if value.startswith("/") else _scalar_problem(value, "word")
    if fmt.endswith("_or_empty"):
        return None if value == "" else _scalar_problem(value, fmt[:-len("_or_empty")])
    pattern = _WORDS.get(fmt)
    if pattern is None:
        raise AnsibleFilterError("conf_value_problems: unknown format %r" % fmt)
    if fmt == "url" and re.match(r"[A-Za-z]+://[^/]*@", value):
        # Credentials in a download URL land in logs, process lists and the build records (an apt proxy's are apt's own
        # configuration: proxy_url keeps them).
        return "must not carry credentials (user:password@host): use a netrc file or the proxy's own authentication"
    if pattern.fullmatch(value):
        return None
    if fmt == "pip_requirement":
        if value.startswith("-"):
            return "must be a pip requirement (name[extras]==version), not a pip option"
        # Spaces are legal around operators and in a marker; an option after a space is not.
        bad = _first(value, "#$`|&\\") or (" " if " -" in value else None)
        return "contains %s" % _char_name(bad) if bad else "must be %s" % _WORD_RULES[fmt]
    bad = _first(value, " #=") if fmt not in ("ifname", "package", "url", "proxy_url", "pip_requirement") else _first(value, " #")
    if bad:
        return "contains %s" % _char_name(bad)
    return "must be %s" % _WORD_RULES.get(fmt, "of the form %s" % pattern.pattern)


def _check(name, value, spec, keysets, allow_unknown, out, top=False):
    if isinstance(spec, str):
        # A list-valued variable: each element has the format (a switch is never a list). Inside mappings a
        # list never fits a scalar.
        if top and isinstance(value, (list, tuple)) and spec != "bool":
            for index, item in enumerate(value):
                _check("%s[%d]" % (name, index), item, spec, keysets, allow_unknown, out)
            return
        problem = _scalar_problem(value, spec)
        if problem:
            out.append("%s %s" % (name, problem))
        return
    if not isinstance(spec, dict):
        raise AnsibleFilterError("conf_value_problems: bad spec for %s: %r" % (name, spec))
    if "words" in spec:
        # A few reserved words (auto, external, ...) or a value of the given format.
        # null among the words: an option whose documented default is null may be set to null again.
        if (value is None or isinstance(value, str)) and value in spec["words"]:
            return
        before = len(out)
        _check(name, value, spec["format"], keysets, allow_unknown, out, top)
        for index in range(before, len(out)):
            out[index] += " (or one of: %s)" % ", ".join("null" if word is None else repr(word) for word in spec["words"])
        return
    if "min" in spec or "max" in spec:
        # float() also reads other scripts' digits ("３００"), which would reach the file as they are: ASCII only.
        if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
                isinstance(value, str) and not re.fullmatch(r" *[-+]?[0-9]+(\.[0-9]+)? *", value)):
            out.append("%s must be a number" % name)
            return
        number = float(value)
        if "min" in spec and number < spec["min"]:
            out.append("%s must be at least %s, got %s" % (name, spec["min"], value))
        if "max" in spec and number > spec["max"]:
            out.append("%s must be at most %s, got %s" % (name, spec["max"], value))
        return
    if "choices" in spec:
        # A field of a mapping whose argument spec lists its choices: refused here in the user's words, before argument
        # validation's own message ("value of state must be one of ... found in slurm_partitions").
        problem = _choice_problem(name, value, "str", spec["choices"])
        if problem:
            out.append(problem)
        return
    if "items" in spec:
        if not isinstance(value, (list, tuple)):
            out.append("%s must be a list, got a %s" % (name, _kind(value)))
            return
        for index, item in enumerate(value):
            _check("%s[%d]" % (name, index), item, spec["items"], keysets, allow_unknown, out)
        return
    if not isinstance(value, dict):
        out.append("%s must be a mapping, got a %s" % (name, _kind(value)))
        return
    if "fields" in spec:
        # A mapping with known keys (a partition, a manifest entry): a key outside them is a typo that would be
        # ignored silently (min_free_pct, dets), so it is refused naming the closest known key.
        root = name.split("[")[0].split(".")[0]
        fields = spec["fields"]
        for key in value:
            if key in fields or root in allow_unknown:
                continue
            lowered = {field.lower(): field for field in fields}
            hint = lowered.get(str(key).lower()) or _closest(str(key), fields, 0.5)
            out.append("%s: unknown key %s%s (known keys: %s)"
                       % (name, key, " (did you mean %s?)" % hint if hint else "", ", ".join(fields)))
        for field, sub in fields.items():
            if field in value and value[field] is not None and sub != "any":
                _check("%s.%s" % (name, field), value[field], sub, keysets, allow_unknown, out)
        return
    root = name.split("[")[0].split(".")[0]
    known = keysets.get(spec["known"]) if spec.get("known") else None
    owned = keysets.get(spec["owned"], []) if spec.get("owned") else []
    lowered = {k.lower(): k for k in (known or [])}
    for key, item in value.items():
        key_problem = _scalar_problem(key, spec.get("keys", "slurm_key"))
        if key_problem:
            out.append("%s: key %r %s" % (name, str(key), key_problem))
            continue
        if str(key).lower() in {o.lower() for o in owned}:
            out.append("%s: key %s is set by the role itself and cannot be overridden here" % (name, key))
            continue
        if known is not None and root not in allow_unknown:
            if str(key) not in known:
                hint = lowered.get(str(key).lower()) or next(iter(difflib.get_close_matches(str(key), known, 1)), None)
                out.append("%s: unknown key %s%s (add %s to preflight_allow_unknown_keys to accept it)"
                           % (name, key, " (did you mean %s?)" % hint if hint else "", root))
                continue
        if item is None and spec.get("null_ok"):
            continue
        _check("%s.%s" % (name, key), item, spec.get("values", "slurm_value"), keysets, allow_unknown, out)


def conf_value_problems(values, formats, keysets=None, allow_unknown=None):
    """Return one message per value that does not fit its declared format (empty: all fit).

    values: variable name -> value (only variables that are set); formats: variable name -> spec.
    A spec is a format name (a list value: each element), {words: [...], format: fmt} (a word, null if listed, or the format),
    {items: spec}, {choices: [...]} (one of these), {fields: {name: spec}} (a mapping with these keys only; a field's spec `any` is not checked here),
    {keys: fmt, values: spec, known: keyset, owned: keyset, null_ok: bool} or {min: n, max: n}.
    keysets: name -> list of keys (e.g. Slurm's documented parameters); allow_unknown: variable names
    whose unknown keys are accepted.
    """
    keysets = keysets or {}
    allow_unknown = allow_unknown or []
    out = []
    for name in sorted(values):
        if name in formats:
            _check(name, values[name], formats[name], keysets, allow_unknown, out, top=True)
    return out


def argument_spec_types(argument_specs):
    """Map every option of every entry point of the given roles' argument specs to its type.

    argument_specs: role name -> the parsed meta/argument_specs.yml.
    """
    types = {}
    for spec in (argument_specs or {}).values():
        for entry in ((spec or {}).get("argument_specs") or {}).values():
            for option, option_spec in ((entry or {}).get("options") or {}).items():
                types[option] = (option_spec or {}).get("type", "str")
    return types


def argument_spec_choices(argument_specs):
    """Map every option with `choices` (of any entry point of the given roles' argument specs) to its choices."""
    choices = {}
    for spec in (argument_specs or {}).values():
        for entry in ((spec or {}).get("argument_specs") or {}).values():
            for option, option_spec in ((entry or {}).get("options") or {}).items():
                if (option_spec or {}).get("choices") is not None:
                    choices[option] = list(option_spec["choices"])
    return choices


# What role argument validation reads as a boolean (ansible.module_utils.parsing.convert_bool).
_BOOL_WORDS = frozenset(["y", "yes", "on", "1", "true", "t", "n", "no", "off", "0", "false", "f"])


def _shown(value):
    """A value as a message quotes it: JSON (a newline stays visible), cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _choice_problem(name, value, wanted, allowed):
    """Why value is not one of allowed, compared as argument validation compares it (after its type), or None."""
    candidate = value
    if wanted == "int" and isinstance(value, str) and re.fullmatch(r" *[-+]?[0-9]+ *", value):
        candidate = int(value)
    if candidate in allowed or (isinstance(candidate, str) and candidate in [str(item) for item in allowed]):
        return None
    text = "%s must be one of: %s, got %s" % (name, ", ".join(str(item) for item in allowed), _shown(value))
    if isinstance(value, str):
        hint = next(iter(difflib.get_close_matches(value, [str(item) for item in allowed], 1, 0.6)), None)
        if hint:
            text += " (did you mean %s?)" % hint
    return text


def type_problems(values, types, choices=None):
    """Messages, in the user's words, for values that do not fit the type (or choices) their role declares.

    Role argument validation turns a list into its string form for type str, and a string into a list of its
    comma-separated parts for type list (a role's filter that loops over the string sees its letters); these never fit.
    Booleans, numbers and choices are judged as argument validation judges them, before it runs: its own messages
    ("argument ... is of type str and we were unable to convert to bool") speak its jargon.
    """
    choices = choices or {}
    out = []
    for name in sorted(values):
        value, wanted = values[name], types.get(name)
        if wanted in ("str", "path") and isinstance(value, (list, tuple, dict, bool)):
            out.append("%s must be a %s, got a %s" % (name, "path (a string)" if wanted == "path" else "string", _kind(value)))
        elif wanted == "str" and isinstance(value, float):
            # A version written unquoted: YAML reads 12.10 as 12.1 and 3.10 as 3.1.
            out.append("%s must be quoted: YAML read it as the number %s (12.10 becomes 12.1)" % (name, value))
        elif wanted == "list" and value is not None and not isinstance(value, (list, tuple)):
            out.append("%s must be a list, got a %s (write [%s])" % (name, _kind(value), json.dumps(value) if isinstance(value, str) else "..."))
        elif wanted == "dict" and value is not None and not isinstance(value, dict):
            out.append("%s must be a mapping, got a %s" % (name, _kind(value)))
        elif value is None:
            continue
        elif wanted == "bool" and not (isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1))
                                       or (isinstance(value, str) and value.strip().lower() in _BOOL_WORDS)):
            out.append("%s must be true or false, got %s" % (name, _shown(value)))
        elif wanted == "int" and not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())
                                      or (isinstance(value, str) and re.fullmatch(r" *[-+]?[0-9]+ *", value))):
            out.append("%s must be a whole number, got %s" % (name, _shown(value)))
        elif wanted == "float" and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                        or (isinstance(value, str) and re.fullmatch(r" *[-+]?[0-9]+(\.[0-9]+)? *", value))):
            out.append("%s must be a number, got %s" % (name, _shown(value)))
        elif name in choices:
            items = value if wanted == "list" and isinstance(value, (list, tuple)) else [value]
            for index, item in enumerate(items):
                problem = _choice_problem(name if items is not value else "%s[%d]" % (name, index), item, wanted, choices[name])
                if problem:
                    out.append(problem)
    return out


def value_problems(values, types, formats, keysets=None, allow_unknown=None, choices=None):
    """type_problems, then conf_value_problems for the variables whose type fits: one message per wrong value.

    A value of the wrong type would otherwise be reported twice, once by each (the same words or two different ones).
    """
    typed = type_problems(values, types, choices)
    wrong = set()
    for message in typed:
        wrong.add(re.split(r"[ \[]", message, maxsplit=1)[0])
    rest = dict((name, value) for name, value in values.items() if name not in wrong)
    return typed + conf_value_problems(rest, formats, keysets, allow_unknown)


def unknown_variables(names, known, prefixes, allowed=None):
    """Messages for names that carry a role's prefix but that no argument spec declares.

    Each message names the closest known name. Internal names (leading underscore) are skipped.
    """
    known = set(known)
    allowed = set(allowed or [])
    out = []
    for name in sorted(set(names)):
        if name in known or name in allowed or name.startswith("_"):
            continue
        if not any(name.startswith(prefix) for prefix in prefixes):
            # A typo inside a long prefix (opnempi_version, nvidia_drvier_branch): refused only with a close known name.
            close = _closest(name, known, 0.8)
            if close and any(difflib.SequenceMatcher(None, name[:len(prefix)], prefix).ratio() >= 0.75 and (
                    len(prefix) >= 6 or difflib.SequenceMatcher(None, name, close).ratio() >= 0.85) for prefix in prefixes):
                out.append("%s is not a variable of any role (did you mean %s?)" % (name, close))
            continue
        close = _closest(name, known)
        # A name kept on purpose (preflight_variables_allowed) misspelt: point at it when it is clearly the closer one.
        kept = _closest(name, allowed, 0.8)
        if kept and (not close or difflib.SequenceMatcher(None, name, kept).ratio()
                     > difflib.SequenceMatcher(None, name, close).ratio()):
            close = kept
        out.append("%s is not a variable of any role%s" % (name, " (did you mean %s?)" % close if close else ""))
    return out


def unknown_entries(values, known, variable, what="known"):
    """Messages for the entries of the list `variable` that are not in known, each with the closest known entry."""
    out = []
    for index, value in enumerate(values if isinstance(values, (list, tuple)) else [values]):
        if isinstance(value, str) and value in known:
            continue
        close = _closest(str(value), known, 0.5) if isinstance(value, str) else None
        out.append("%s[%d] %s is not %s%s" % (variable, index, _shown(value), what, " (did you mean %s?)" % close if close else ""))
    return out


def inventory_host_problems(values, hosts, what="the host its tasks are delegated to"):
    """Messages for the variables of `values` (name -> host name) that name no host of the inventory (`hosts`,
    groups['all']): a task delegated there fails half-way (a node drained, then no host to resume it through).
    An empty or null value means "none" and passes."""
    hosts = [str(host) for host in (hosts or [])]
    out = []
    for name in sorted(values or {}):
        value = values[name]
        if value is None or value == "":
            continue
        if not isinstance(value, str) or value not in hosts:
            close = _closest(str(value), hosts, 0.6) if isinstance(value, str) else None
            out.append("%s must name a host of the inventory (%s), got %s%s"
                       % (name, what, _shown(value), " (did you mean %s?)" % close if close else ""))
    return out


def path_overlap_problems(paths):
    """Messages for the directories of `paths` (variable name -> absolute path, as the roles use them) that are the same
    or lie one inside another: each role fills, prunes or removes its own (build_artifact keeps build_artifact_keep
    builds under its root and empties its build directory; acceptance makes and removes <scratch>-<run id>).
    Values that are not absolute path strings are left to their format checks."""
    names = [name for name in (paths or {}) if isinstance(paths[name], str) and paths[name].startswith("/")]
    out = []
    for position, first in enumerate(names):
        for second in names[position + 1:]:
            one, two = posixpath.normpath(paths[first]), posixpath.normpath(paths[second])
            if one == two:
                out.append("%s and %s are the same directory (%s): each needs a directory of its own" % (first, second, one))
            elif two.startswith(one.rstrip("/") + "/") or one.startswith(two.rstrip("/") + "/"):
                inner, outer = (second, first) if two.startswith(one.rstrip("/") + "/") else (first, second)
                out.append("%s (%s) lies inside %s (%s): each needs a directory of its own, apart from the other's"
                           % (inner, paths[inner], outer, paths[outer]))
    return out


def _closest(name, known, cutoff=0.6):
    """The known name a typo most likely meant: by similarity, a cut-short or run-on name first (acceptance_mpi_env
    means acceptance_mpi_environment, not the equally similar acceptance_mpi_prefix); None below the cutoff ratio."""
    def score(candidate):
        ratio = difflib.SequenceMatcher(None, name, candidate).ratio()
        return (ratio >= cutoff and (candidate.startswith(name) or name.startswith(candidate)), ratio, candidate)
    best = max((score(candidate) for candidate in known), default=None)
    return best[2] if best and best[1] >= cutoff else None


class FilterModule:
    """Input validation filters."""

    def filters(self):
        return {
            "conf_value_problems": conf_value_problems,
            "argument_spec_types": argument_spec_types,
            "type_problems": type_problems,
            "argument_spec_choices": argument_spec_choices,
            "value_problems": value_problems,
            "unknown_variables": unknown_variables,
            "unknown_entries": unknown_entries,
            "inventory_host_problems": inventory_host_problems,
            "path_overlap_problems": path_overlap_problems,
        }
