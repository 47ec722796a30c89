#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The acceptance suite on a live GPU host, the way an inventory runs it (no Slurm, no systemd, no package registry):
#   1. playbooks/pytorch.yml with pytorch_source=preinstalled installs the launcher configuration and the all-reduce
#      benchmark under $WORK (nothing is written outside it);
#   2. playbooks/validate.yml with this host in the pytorch group: nccl_allreduce_single_node runs nccl-tests'
#      all_reduce_perf where the nccl_tests check built it (its path in $DEVICE_OUT/nccl_tests/all_reduce_perf.path,
#      or NCCL_TESTS_PATH), else the pytorch role's benchmark, on every GPU, the default environment and each set of
#      SETS_JSON (default: NCCL_BUFFSIZE 8 MiB), judged per size; the expected GPU count, model and driver are the
#      host's own (nvidia-smi); the jobs through Slurm say why they skip.
# Check `validate` of tests/device/run (environment there; MAX_MIB, default 4096; SETS_JSON).
# Writes to $OUT: report/ (the acceptance report: <run id>/acceptance.{json,md,png} and the `latest` link),
# acceptance.json (a copy of the latest), all_reduce_perf.txt (nccl-tests' output as the hook ran it, where it ran),
# pytorch.log, validate.log, summary.txt.
# Exit 1 when a playbook failed, the host's verdict is not pass, or nccl-tests was built and the hook did not use it.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
MAX_MIB=${MAX_MIB:-4096}
SETS_JSON=${SETS_JSON:-'{"buffsize_8m": {"NCCL_BUFFSIZE": "8388608"}}'}
NCCL_TESTS_PATH=${NCCL_TESTS_PATH:-$(cat "${DEVICE_OUT:-$OUT/..}/nccl_tests/all_reduce_perf.path" 2>/dev/null)}
mkdir -p "$WORK/bin" "$WORK/etc" "$WORK/share"
GPUS=$(gpu_count)
MODEL=$(gpu_query name)
DRIVER=$(gpu_query driver_version)
say "## host $(hostname) $(date -u +%FT%TZ): $GPUS x $MODEL, driver $DRIVER; python $PY"
say "## all-reduce tool: ${NCCL_TESTS_PATH:-allreduce_bench.py of the pytorch role, no nccl-tests built}"

cat > "$WORK/hosts.yml" <<HOSTS
all:
  children:
    pytorch:
      hosts:
        localhost: {ansible_connection: local, ansible_python_interpreter: "$PY"}
HOSTS
# Only the single-node hook: this host has no Slurm, and a job hook asked for where no host submits jobs is a FAIL
# (expected but not run), never a skip. The DDP smoke job through the launcher is the pytorch check's.
cat > "$WORK/vars.json" <<VARS
{"pytorch_hosts": "localhost", "pytorch_source": "preinstalled", "pytorch_python": "$PY",
 "pytorch_launcher_path": "$WORK/bin/trainstack-torchrun", "pytorch_share_dir": "$WORK/share",
 "pytorch_launch_config_path": "$WORK/etc/pytorch-launch.json",
 "acceptance_output_dir": "$OUT/report", "acceptance_fail_on_error": false, "acceptance_nvidia_smi_path": "$SMI",
 "acceptance_expected_gpu_count": $GPUS, "acceptance_expected_gpu_model": "$MODEL",
 "acceptance_expected_driver_version": "$DRIVER", "acceptance_allreduce_max_mib": $MAX_MIB,
 "acceptance_nccl_tests_path": $([ -n "${NCCL_TESTS_PATH:-}" ] && echo "\"$NCCL_TESTS_PATH\"" || echo null),
 "acceptance_builtin_hooks": ["nccl_allreduce_single_node"],
 "acceptance_nccl_tuned_environments": $SETS_JSON}
VARS
status=0
for play in pytorch validate; do
  (cd "$REPO" && "$PY" -m ansible playbook -i "$WORK/hosts.yml" -e "@$WORK/vars.json" "playbooks/$play.yml" \
    > "$OUT/$play.log" 2>&1); rc=$?
  say "## playbooks/$play.yml exit $rc: $(recap "$OUT/$play.log")"
  [ "$rc" -eq 0 ] || { status=1; grep -E -A8 'fatal|FAILED' "$OUT/$play.log" | head -n 40 | tee -a "$SUMMARY"; }
done
sed -n '/Show the result per node/,/^$/p' "$OUT/validate.log" | tee -a "$SUMMARY"
# The report of this run: <dir>/latest/ (one directory per run), or <dir>/ itself from a collection without runs.
report=$OUT/report/latest/acceptance.json
[ -s "$report" ] || report=$OUT/report/acceptance.json
[ -s "$report" ] && cp "$report" "$OUT/acceptance.json"
# What the hook ran and found, from the report itself.
"$PY" - "$report" "$GPUS" "${NCCL_TESTS_PATH:-}" "$OUT" <<'PY' | tee -a "$SUMMARY" || status=1
import json, sys
path, gpus, nccl_tests, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    report = json.load(open(path))
except (OSError, ValueError) as error:
    print('FAIL no report: %s' % error)
    sys.exit(1)
node = report['nodes'][0]
checks = {check['check']: check for check in node['checks']}
single = checks.get('nccl_allreduce_single_node', {})
print('nccl_allreduce_single_node: %s - %s' % (single.get('status'), single.get('reason')))
busbw = checks.get('allreduce_busbw', {})
print('allreduce_busbw: %s - %s' % (busbw.get('status'), busbw.get('reason')))
for row in busbw.get('sizes', []):
    print('  %s' % json.dumps({key: row.get(key) for key in ('label', 'best', 'algbw_best', 'threshold', 'status')}, sort_keys=True))
problems = []
if node['status'] != 'pass':
    problems.append('the host is %s: %s' % (node['status'], '; '.join(node.get('reasons') or [])))
if single.get('status') != 'pass':
    problems.append('nccl_allreduce_single_node is %s' % single.get('status'))
if nccl_tests and single.get('tool') != 'nccl-tests':
    problems.append('nccl-tests was built (%s) but the hook ran %s' % (nccl_tests, single.get('tool')))
if single.get('world_size') not in (None, gpus) and single.get('tool') != 'nccl-tests':
    problems.append('%s ranks, %d GPUs' % (single.get('world_size'), gpus))
print('RESULT %s' % ('FAIL: ' + '; '.join(problems) if problems else 'OK (report status %s)' % report['status']))
sys.exit(1 if problems else 0)
PY
# nccl-tests' own output, as the hook ran it (verbose play output holds it only in the register; run it once more).
if [ -n "${NCCL_TESTS_PATH:-}" ] && [ -x "$NCCL_TESTS_PATH" ]; then
  timeout 300 "$NCCL_TESTS_PATH" -b 1M -e "${MAX_MIB}M" -f 4 -g "$GPUS" -c 1 > "$OUT/all_reduce_perf.txt" 2>&1
  say "INFO all_reduce_perf -b 1M -e ${MAX_MIB}M -f 4 -g $GPUS -c 1 exit $? (all_reduce_perf.txt)"
fi
say "INFO report files: $(cd "$OUT/report" && find . -mindepth 1 -printf '%P ' 2>/dev/null)"
exit $status
