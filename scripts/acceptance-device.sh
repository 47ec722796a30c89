#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The single-node part of the acceptance suite on a live GPU host (made for the 1 x H200 device host:
# Ubuntu 24.04, no systemd, no package registry): runs the PyTorch all-reduce (the pytorch role's
# roles/pytorch/files/allreduce_bench.py)
# ATTEMPTS times at 1 MiB .. MAX_MIB, then playbooks/validate.yml against localhost with the host's own
# GPU count, model and driver as the expected values and those runs as the all-reduce results. Changes
# nothing on the host. About 1-2 minutes.
#
#   OUT=/path/to/results scripts/acceptance-device.sh
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3), NVIDIA_SMI (default
# /usr/local/nvidia/bin/nvidia-smi), ansible-core wheels unpacked in /tmp/site (PYTHONPATH), MAX_MIB (4096),
# ATTEMPTS (2). Writes to $OUT: acceptance.json, acceptance.md, acceptance-*.png (where matplotlib is
# importable by PYTHON; otherwise the run says "PNG skipped" and the JSON can be rendered elsewhere with the
# acceptance_report module), allreduce-<n>.txt, nvidia-smi-q.txt, nvidia-smi-nvlink-s.txt, kernel-nvrm.txt,
# validate.log, summary.txt. Exit status: the playbook's (0 unless it could not run; node verdicts are in the
# report, acceptance_fail_on_error is off so that the report is always written).
set -uo pipefail

MAX_MIB=${MAX_MIB:-4096}
ATTEMPTS=${ATTEMPTS:-2}
WORK=/tmp/trainstack-acceptance-device
# shellcheck source=scripts/device-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/device-env.sh"
export ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default

say "## host $(hostname) $(date -u +%FT%TZ) python $PY ansible $("$PY" -c 'import ansible.release as r; print(r.__version__)' 2>&1)"

# 1. What the host is, read independently of the collection (kept as real outputs for future fixtures).
"$SMI" -q > "$OUT/nvidia-smi-q.txt" 2>&1
"$SMI" nvlink -s > "$OUT/nvidia-smi-nvlink-s.txt" 2>&1
{ journalctl -k -b --no-pager 2>/dev/null || dmesg 2>&1; } | grep -E 'NVRM' > "$OUT/kernel-nvrm.txt"
GPUS=$("$SMI" --query-gpu=index --format=csv,noheader | grep -c .)
MODEL=$("$SMI" --query-gpu=name --format=csv,noheader | head -n 1)
DRIVER=$("$SMI" --query-gpu=driver_version --format=csv,noheader | head -n 1)
say "## nvidia-smi: $GPUS x $MODEL, driver $DRIVER; persistence: $(grep -c 'Persistence Mode *: Enabled' "$OUT/nvidia-smi-q.txt") of $GPUS enabled; NVRM kernel lines: $(grep -c . "$OUT/kernel-nvrm.txt")"

# 2. The PyTorch all-reduce, ATTEMPTS times (one GPU is allowed: busbw is then 0 by definition, algbw is kept).
logs=()
for attempt in $(seq 1 "$ATTEMPTS"); do
  log=$OUT/allreduce-$attempt.txt
  timeout 300 "$PY" "$REPO/roles/pytorch/files/allreduce_bench.py" --allow-one-rank --max-mib "$MAX_MIB" > "$log" 2>&1
  say "INFO all-reduce attempt $attempt exit $?: $(grep -c '^size_MiB=' "$log") sizes"
  grep '^size_MiB=\|^torch \|^ERROR ' "$log" | sed 's/^/    /' | tee -a "$SUMMARY"
  logs+=("\"$log\"")
done
log_list=$(IFS=,; echo "${logs[*]}")

# 3. The acceptance playbook against this host.
cat > "$WORK/vars.json" <<EOF
{"acceptance_output_dir": "$OUT", "acceptance_fail_on_error": false, "acceptance_nvidia_smi_path": "$SMI",
 "acceptance_expected_gpu_count": $GPUS, "acceptance_expected_gpu_model": "$MODEL",
 "acceptance_expected_driver_version": "$DRIVER", "acceptance_allreduce_logs": [$log_list]}
EOF
(cd "$REPO" && "$PY" -m ansible playbook -i localhost, -c local -e "ansible_python_interpreter=$PY" \
  -e "@$WORK/vars.json" playbooks/validate.yml > "$OUT/validate.log" 2>&1)
status=$?
say "## playbooks/validate.yml exit $status: $(grep -A1 'PLAY RECAP' "$OUT/validate.log" | tail -n 1 | tr -s ' ')"
sed -n '/Show the result per node/,/^$/p' "$OUT/validate.log" | tee -a "$SUMMARY"
for file in acceptance.json acceptance.md; do
  if [ -s "$OUT/$file" ]; then say "OK   $file written"; else say "FAIL $file missing"; fi
done
say "INFO PNG: $(find "$OUT" -maxdepth 1 -name 'acceptance-*.png' -printf '%f ')$(grep -o 'PNG skipped[^"]*' "$OUT/validate.log" | head -n 1)"
exit $status
