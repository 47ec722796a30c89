#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Secrets never show: converges molecule/slurm_cluster with -vvv and --diff, given a munge key, a
# hostile slurmdbd password and an apt proxy URL with credentials, while `ps -eo args` is sampled on
# every container; then writes, changes and removes the apt proxy file (nvidia_driver tasks_from
# apt_proxy, the same -vvv --diff). Fails when any secret (as is, base64, hex, JSON-escaped) shows in
# the output or the process samples, or a file holding one is readable by group or others.
# Also proves the password works: sacctmgr lists the cluster through slurmdbd (verify.yml checks it).
#
#   MOLECULE_DISTRO=12 scripts/secret-scan.sh [OUTDIR]     (keeps the containers: KEEP=1)
# Takes the scenario's lock (/tmp/molecule-slurm_cluster.lock) and destroys the containers at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
out=${1:-$(mktemp -d /tmp/secret-scan.XXXXXX)}
mkdir -p "$out"
chmod 700 "$out"
containers=(tsm-ctl tsm-node1 tsm-node2)
secret_files=(/etc/munge/munge.key /etc/slurm/slurmdbd.conf /etc/apt/apt.conf.d/01trainstack-proxy)

# The secrets: fresh each run, so that no earlier output can match by accident. The password holds
# quotes, a backslash, ';', '--', '#' and non-ASCII; it cannot hold a newline (slurmdbd.conf is read
# line by line; preflight refuses one).
python3 - "$out" <<'EOF'
import base64, json, os, secrets, sys
out = sys.argv[1]
tag = secrets.token_hex(4)
values = {
    "munge key (base64)": base64.b64encode(os.urandom(1024)).decode(),
    "slurmdbd password": "a'b\"c\\d;e--f#g\\\u00fc\u20ac-" + tag,
    "proxy password": "Pr0xy-" + secrets.token_hex(6),
    "proxy password (before)": "Pr0xy-" + secrets.token_hex(6),
}
proxy = "http://scan:%s@apt-proxy.invalid:3142"
extra = {"slurm_munge_key": values["munge key (base64)"], "slurm_dbd_db_password": values["slurmdbd password"],
         "trainstack_apt_proxy": proxy % values["proxy password"],
         "secret_scan_proxy_before": proxy % values["proxy password (before)"]}
for name, data in (("secrets.json", values), ("vars.json", extra)):
    fd = os.open(os.path.join(out, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
EOF

sample() {  # $1: container; ps -eo args every 0.1 s until /run/secret-scan.stop exists
  docker exec "$1" sh -c 'rm -f /run/secret-scan.stop; while [ ! -e /run/secret-scan.stop ]; do ps -eo args; sleep 0.1; done' \
    > "$out/ps-$1.txt" 2>/dev/null
}

run() {
  local rc=0 pids=()
  molecule destroy -s slurm_cluster > "$out/destroy-before.log" 2>&1
  molecule create -s slurm_cluster > "$out/create.log" 2>&1
  molecule prepare -s slurm_cluster > "$out/prepare.log" 2>&1
  for c in "${containers[@]}"; do sample "$c" & pids+=($!); done
  # Molecule wraps its console at 80 columns, which would split a secret: Ansible's own log is scanned
  # too (the same -vvv messages, unwrapped).
  ANSIBLE_LOG_PATH="$out/converge-ansible.log" COLUMNS=100000 \
    molecule converge -s slurm_cluster -- -vvv -e @"$out/vars.json" > "$out/converge.log" 2>&1 || rc=1
  # The password works: slurmdbd reached MariaDB with it and holds the cluster (the role checks it too).
  docker exec tsm-ctl sacctmgr --noheader --parsable2 list cluster format=cluster > "$out/sacctmgr.txt" 2>&1 || rc=1
  grep -qx molecule "$out/sacctmgr.txt" || { echo "FAIL sacctmgr does not list the cluster" >&2; rc=1; }
  # The apt proxy file: written with credentials, then changed (the --diff of a change).
  ANSIBLE_COLLECTIONS_PATH="$PWD/collections" ANSIBLE_LOG_PATH="$out/proxy-ansible.log" ansible-playbook -i tsm-node1, -c community.docker.docker --diff -vvv \
    -e @"$out/vars.json" scripts/secret-scan-proxy.yml > "$out/proxy.log" 2>&1 || rc=1
  for c in "${containers[@]}"; do docker exec "$c" touch /run/secret-scan.stop; done
  wait "${pids[@]}" || true
  for c in "${containers[@]}"; do
    docker exec "$c" sh -c 'for f in "$@"; do [ -e "$f" ] && stat -c "%a %U:%G $(hostname):%n" "$f"; done; true' sh \
      "${secret_files[@]}"
  done > "$out/modes.txt"
  grep -c . "$out"/ps-*.txt > "$out/ps-sample-lines.txt" || true
  if [ "${KEEP:-0}" != 1 ]; then molecule destroy -s slurm_cluster > "$out/destroy.log" 2>&1; fi
  return $rc
}

export out containers secret_files
rc=0
( flock 9; run ) 9>/tmp/molecule-slurm_cluster.lock || rc=$?
echo "logs in $out (converge rc: $rc)"
[ "$rc" = 0 ] || { echo "FAIL the converge or the proxy play failed: see $out/converge.log, $out/proxy.log"; }
python3 scripts/secret_scan.py "$out/secrets.json" "$out/modes.txt" "$out"/converge*.log "$out"/proxy*.log \
  "$out"/ps-*.txt || rc=1
exit "$rc"
