#!/usr/bin/env python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks behind scripts/secret-scan.sh; standard library only, every line OK/FAIL.

  secret_scan.py SECRETS_JSON MODES_TXT TEXT_FILE...
      SECRETS_JSON: {"name": "secret value", ...}
      MODES_TXT: `stat -c '%a %U:%G %n'` lines of the files that hold secrets (the lines of
      files that do not exist are left out by the caller; a missing file is reported as such)
      TEXT_FILE: the -vvv logs of the runs and the `ps -eo args` samples taken on the targets
The exit status is 1 when any FAIL line was printed.
"""

from __future__ import annotations

import base64
import json
import sys


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


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        secrets = json.load(handle)
    with open(argv[2], encoding="utf-8") as handle:
        mode_lines = handle.read().splitlines()
    texts = []
    for path in argv[3:]:
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append((path, handle.read()))
    failed = False
    for secret_name, form, text_name, line in leaks(secrets, texts):
        print("FAIL %s (%s) appears in %s line %d" % (secret_name, form, text_name, line))
        failed = True
    for path, mode, owner in open_modes(mode_lines):
        print("FAIL %s is %s %s: group or others may read it" % (path, mode, owner))
        failed = True
    size = sum(len(text) for _name, text in texts)
    print("%s %d secrets x their forms in %d texts (%d characters); %d files holding secrets checked"
          % ("FAIL" if failed else "OK", len(secrets), len(texts), size, len([x for x in mode_lines if x.strip()])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
