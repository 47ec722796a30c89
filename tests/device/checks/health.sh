#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Node health and diagnosis on a live GPU host: playbooks/health.yml (the nhc role: NHC built from NHC_SOURCE, a git
# bundle of upstream, at the role's pinned commit, nhc.conf from the probed GPU) twice, then NHC itself three times as
# slurmd would run it (without marking: no Slurm here) with its wall time against the 60 s Slurm allows; then
# playbooks/diagnose.yml on the host, which must run and say what it skipped (no Slurm, no HCA).
# Check `health` of tests/device/run (environment there; NHC_SOURCE, NHC_VARS: a JSON object of further role variables).
# Writes to $OUT: run-1.log, run-2.log, nhc.conf, nhc-runs.txt, diagnose.log, diagnose.json, summary.txt.
# Exit 1 when a play fails, NHC fails or exceeds its budget, or diagnose does not run; 77 when the role is not there.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
[ -d "$REPO/roles/nhc" ] || skip "the nhc role is not in this checkout"
say "## host $(hostname) $(date -u +%FT%TZ): $(gpu_count) x $(gpu_query name), driver $(gpu_query driver_version)"
say "## source ${NHC_SOURCE:-upstream git, the default of the role}"

# The role's variables, as an inventory of this host would set them. No systemd here: no munge, no time daemon; no
# package registry: the build tools must be there already.
"$PY" - "$WORK/vars.json" "${NHC_SOURCE:-}" "${NHC_VARS:-}" <<'PY'
import json, sys
path, source, more = sys.argv[1:4]
variables = {'nhc_hosts': 'localhost', 'nhc_munge': False, 'nhc_clock_sync': False, 'nhc_build_packages': []}
if source:
    variables.update({'nhc_source': 'git', 'nhc_git_url': source})
variables.update(json.loads(more or '{}'))
json.dump(variables, open(path, 'w'), indent=1, sort_keys=True)
print(json.dumps(variables, sort_keys=True))
PY
status=0
for n in 1 2; do
  started=$SECONDS
  playbook "$OUT/run-$n.log" "$REPO/playbooks/health.yml" -v -e "@$WORK/vars.json"; rc=$?
  say "## run $n exit $rc in $((SECONDS - started)) s: $(recap "$OUT/run-$n.log")"
  if [ "$rc" -ne 0 ]; then
    status=1; grep -E -A12 'fatal|FAILED' "$OUT/run-$n.log" | head -n 60 | tee -a "$SUMMARY"; break
  fi
done
[ "$status" -eq 0 ] && ! recap "$OUT/run-2.log" | grep -q 'changed=0 ' && { say "FAIL run 2 changed something"; status=1; }
[ "$status" -eq 0 ] || { say "RESULT FAIL"; exit 1; }
cp /etc/nhc/nhc.conf "$OUT/nhc.conf"
say "## the role's report: $(grep -o 'NHC on [^"]*' "$OUT/run-2.log" | head -n 1)"
grep '^\* ||' /etc/nhc/nhc.conf | tee -a "$SUMMARY"

# NHC as slurmd runs it (HealthCheckProgram: no arguments but the settings file), only without marking the node.
: > "$OUT/nhc-runs.txt"
for n in 1 2 3; do
  start=$(date +%s%N)
  /usr/sbin/nhc -l - MARK_OFFLINE=0 >> "$OUT/nhc-runs.txt" 2>&1; rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  say "## nhc run $n: exit $rc in $ms ms"
  [ "$rc" -eq 0 ] || { status=1; tail -n 3 "$OUT/nhc-runs.txt" | tee -a "$SUMMARY"; }
  [ "$ms" -lt 30000 ] || { say "FAIL nhc took $ms ms, over its 30 s watchdog (Slurm kills it at 60 s)"; status=1; }
done

# Diagnose: read-only; here it must run and list what it could not check (findings do not fail this check).
playbook "$OUT/diagnose.log" "$REPO/playbooks/diagnose.yml" -e diagnose_fail_on_findings=false \
  -e "diagnose_output_dir=$WORK/diagnose"; rc=$?
say "## diagnose exit $rc: $(recap "$OUT/diagnose.log")"
if [ "$rc" -eq 0 ] && [ -s "$WORK/diagnose/diagnose.json" ]; then
  cp "$WORK/diagnose/diagnose.json" "$OUT/diagnose.json"
  "$PY" - "$OUT/diagnose.json" <<'PY' | tee -a "$SUMMARY"
import json, sys
report = json.load(open(sys.argv[1]))
print('## diagnose: %s, counts %s' % (report.get('status'), json.dumps(report.get('counts'), sort_keys=True)))
for line in report.get('table', []):
    print(line)
PY
else
  say "FAIL diagnose did not write its report"; status=1
fi
if [ "$status" -eq 0 ]; then say "RESULT OK"; else say "RESULT FAIL"; fi
exit "$status"
