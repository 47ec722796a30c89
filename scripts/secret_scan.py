#!/usr/bin/env python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The secret scan of molecule's default scenario; standard library only (the sampler runs on the target).

  secret_scan.py secrets DIR
      writes fresh secrets for one run to DIR/secrets.json ({"name": "value"}, 0600; DIR 0700)
  secret_scan.py sample OUT STOP_FILE [INTERVAL]
      on a target: reads every process's command line and environment from /proc each INTERVAL seconds
      (default 0.05) until STOP_FILE exists, then writes each distinct line once to OUT
  secret_scan.py check SECRETS_JSON MODES_TXT TEXT_FILE... [--canary NAME]... [--require TEXT_FILE=SUBSTRING]...
      MODES_TXT: `stat -c '%a %U:%G %n'` lines of the files that hold secrets
      TEXT_FILE: the -vvv logs of the runs and the samples taken on the targets
      --canary: a secret that the run leaked on purpose (a task's argv and environment): it must be found in
      every text, which proves that each text could show a leak; it is not a failure itself
      --require: a text that must hold SUBSTRING (the sampler saw the daemons that hold the secrets)
Every check prints an OK or FAIL line; the exit status is 1 when any FAIL line was printed.
"""

from __future__ import annotations

import base64
import json
import os
import secrets as random_source
import sys
import time

# Characters that break naive quoting in SQL, shell, INI and JSON (a newline is refused by preflight:
# slurmdbd.conf is read line by line).
HOSTILE = "a'b\"c\\d;e--f#g\\\u00fc\u20ac-"


def forms(secret):
    """The forms a secret may leak in: itself, its base64 and hex (how the roles carry values), and
    each line of a multi-line secret (a log wraps or escapes newlines). Short pieces are left out:
    they would match by chance."""
    raw = secret.encode("utf-8")
    found = {"as is": secret, "base64": base64.b64encode(raw).decode("ascii"), "hex": raw.hex()}
    # A JSON-escaped copy (the -vvv output prints module arguments and results as JSON).
    found["json"] = json.dumps(secret, ensure_ascii=True)[1:-1]
    found["json (utf-8)"] = json.dumps(secret, ensure_ascii=False)[1:-1]
    for number, line in enumerate(secret.splitlines()):
        if len(line) >= 8:
            found["line %d" % (number + 1)] = line
    return {name: value for name, value in found.items() if len(value) >= 8}


def leaks(secrets, texts):
    """[(secret name, form, text name, line number)] for each secret form found in a text."""
    hits = []
    for secret_name, secret in sorted(secrets.items()):
        for form, needle in sorted(forms(secret).items()):
            for text_name, text in texts:
                if needle in text:
                    line = text.count("\n", 0, text.index(needle)) + 1
                    hits.append((secret_name, form, text_name, line))
    return hits


def open_modes(mode_lines):
    """[(path, mode, owner)] of files whose mode gives group or others any access."""
    bad = []
    for line in mode_lines:
        if not line.strip():
            continue
        mode, owner, path = line.split(None, 2)
        if int(mode, 8) & 0o077:
            bad.append((path, mode, owner))
    return bad


def missing_requirements(requirements, texts):
    """[(text name, substring)] of each --require whose text lacks the substring (or was not given)."""
    by_name = dict(texts)
    return [(name, needle) for name, needle in requirements if needle not in by_name.get(name, "")]


def new_secrets():
    """Fresh values for one run, so that no earlier output can match by accident."""
    tag = random_source.token_hex(6)
    return {
        "munge key": base64.b64encode(os.urandom(1024)).decode("ascii"),
        "slurmdbd password": HOSTILE + tag,
        "proxy password": "Pr0xy-" + random_source.token_hex(8),
        "proxy password (before)": "Pr0xy-" + random_source.token_hex(8),
        "canary": "Canary-" + random_source.token_hex(8),
    }


def _write_private(path, text):
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_secrets(directory):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    values = new_secrets()
    _write_private(os.path.join(directory, "secrets.json"), json.dumps(values))
    return values


def read_processes(proc="/proc"):
    """{line} of every process's command line ('cmdline: a b c') and environment ('environ: K=V')."""
    lines = set()
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        for name in ("cmdline", "environ"):
            try:
                with open(os.path.join(proc, pid, name), "rb") as handle:
                    raw = handle.read()
            except OSError:  # gone meanwhile, or a kernel thread
                continue
            parts = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
            if name == "cmdline" and parts:
                lines.add("cmdline: " + " ".join(parts))
            elif name == "environ":
                lines.update("environ: " + part for part in parts)
    return lines


def sample(out, stop_file, interval=0.05, proc="/proc"):
    seen, rounds = set(), 0
    while not os.path.exists(stop_file):
        seen |= read_processes(proc)
        rounds += 1
        time.sleep(interval)
    _write_private(out, "# %d samples every %ss\n%s\n" % (rounds, interval, "\n".join(sorted(seen))))
    return rounds


def unseen_canaries(canaries, hits, texts):
    """[(canary, text name)] of each canary that a text does not hold (in any form)."""
    seen = {(secret_name, text_name) for secret_name, _form, text_name, _line in hits}
    return [(canary, name) for canary in canaries for name, _text in texts if (canary, name) not in seen]


def check(secrets_path, modes_path, text_paths, requirements, canaries=()):
    with open(secrets_path, encoding="utf-8") as handle:
        secrets = json.load(handle)
    with open(modes_path, encoding="utf-8") as handle:
        mode_lines = handle.read().splitlines()
    texts = []
    for path in text_paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append((path, handle.read()))
    failed = False
    hits = leaks(secrets, texts)
    for secret_name, form, text_name, line in hits:
        if secret_name not in canaries:
            print("FAIL %s (%s) appears in %s line %d" % (secret_name, form, text_name, line))
            failed = True
    for canary, text_name in unseen_canaries(canaries, hits, texts):
        print("FAIL the canary %s, leaked on purpose, is not in %s: that text could not show a leak" % (canary, text_name))
        failed = True
    for path, mode, owner in open_modes(mode_lines):
        print("FAIL %s is %s %s: group or others may read it" % (path, mode, owner))
        failed = True
    for text_name, needle in missing_requirements(requirements, texts):
        print("FAIL %s does not hold %r: it cannot show what it should" % (text_name, needle))
        failed = True
    size = sum(len(text) for _name, text in texts)
    print("%s %d secrets x their forms in %d texts (%d characters), %d canaries seen in each; %d files holding secrets"
          " checked; %d requirements" % ("FAIL" if failed else "OK", len(secrets) - len(canaries), len(texts), size,
                                         len(canaries), len([x for x in mode_lines if x.strip()]), len(requirements)))
    return 1 if failed else 0


def main(argv):
    command, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if command == "secrets" and len(args) == 1:
        values = write_secrets(args[0])
        print("wrote %d secrets to %s" % (len(values), os.path.join(args[0], "secrets.json")))
        return 0
    if command == "sample" and len(args) in (2, 3):
        sample(args[0], args[1], float(args[2]) if len(args) == 3 else 0.05)
        return 0
    if command == "check":
        plain, requirements, canaries = [], [], []
        while args:
            arg = args.pop(0)
            if arg == "--require" and args:
                name, _sep, needle = args.pop(0).partition("=")
                requirements.append((name, needle))
            elif arg == "--canary" and args:
                canaries.append(args.pop(0))
            else:
                plain.append(arg)
        if len(plain) >= 3:
            return check(plain[0], plain[1], plain[2:], requirements, canaries)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
