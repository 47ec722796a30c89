#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The acceptance suite's built-in all-reduce hooks on a live GPU host, the way an inventory runs them (made for
# the device hosts: no Slurm, no systemd, no package registry):
#   1. playbooks/pytorch.yml on localhost with pytorch_source=preinstalled installs the launcher configuration and
#      the all-reduce benchmark under $WORK (nothing is written outside it);
#   2. playbooks/validate.yml with localhost in the pytorch group: nccl_allreduce_single_node runs the shipped
#      benchmark with nccl on every GPU, the default environment and each set of SETS_JSON (default: NCCL_BUFFSIZE
#      8 MiB and NCCL_MIN_CTAS 16), judged per size and compared; nccl_allreduce_multi_node and ddp say why they
#      skip (no Slurm here). Changes nothing outside $WORK and $OUT.
#
#   OUT=/path/to/results scripts/allreduce-hook-device.sh
#
# Environment: PYTHON, NVIDIA_SMI, ansible-core wheels unpacked in /tmp/site (see device-env.sh), MAX_MIB (4096),
# SETS_JSON. NCCL_NVLS_ENABLE=0 (NVLink multicast off on the lent machines). Writes to $OUT: acceptance.json,
# acceptance.md, acceptance-*.png, pytorch.log, validate.log, summary.txt. Exit status: 1 when a playbook failed or
# the hook did not run with nccl on every GPU.
set -uo pipefail

MAX_MIB=${MAX_MIB:-4096}
SETS_JSON=${SETS_JSON:-'{"buffsize_8m": {"NCCL_BUFFSIZE": "8388608"}, "min_ctas_16": {"NCCL_MIN_CTAS": "16"}}'}
WORK=/tmp/trainstack-allreduce-hook-device
# shellcheck source=scripts/device-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/device-env.sh"
export ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default NCCL_NVLS_ENABLE=0
mkdir -p "$WORK/bin" "$WORK/etc" "$WORK/share"
GPUS=$("$SMI" --query-gpu=index --format=csv,noheader | grep -c .)
MODEL=$("$SMI" --query-gpu=name --format=csv,noheader | head -n 1)
DRIVER=$("$SMI" --query-gpu=driver_version --format=csv,noheader | head -n 1)
say "## host $(hostname) $(date -u +%FT%TZ): $GPUS x $MODEL, driver $DRIVER; python $PY"

cat > "$WORK/hosts.yml" <<EOF
all:
  children:
    pytorch:
      hosts:
        localhost: {ansible_connection: local, ansible_python_interpreter: "$PY"}
EOF
cat > "$WORK/vars.json" <<EOF
{"pytorch_hosts": "localhost", "pytorch_source": "preinstalled", "pytorch_python": "$PY",
 "pytorch_launcher_path": "$WORK/bin/trainstack-torchrun", "pytorch_share_dir": "$WORK/share",
 "pytorch_launch_config_path": "$WORK/etc/pytorch-launch.json",
 "acceptance_output_dir": "$OUT", "acceptance_fail_on_error": false, "acceptance_nvidia_smi_path": "$SMI",
 "acceptance_expected_gpu_count": $GPUS, "acceptance_expected_gpu_model": "$MODEL",
 "acceptance_expected_driver_version": "$DRIVER", "acceptance_allreduce_max_mib": $MAX_MIB,
 "acceptance_builtin_hooks": ["nccl_allreduce_single_node", "nccl_allreduce_multi_node", "ddp"],
 "acceptance_nccl_tuned_environments": $SETS_JSON}
EOF
status=0
for play in pytorch validate; do
  (cd "$REPO" && "$PY" -m ansible playbook -i "$WORK/hosts.yml" -e "@$WORK/vars.json" "playbooks/$play.yml" \
    > "$OUT/$play.log" 2>&1); rc=$?
  say "## playbooks/$play.yml exit $rc: $(grep -A1 'PLAY RECAP' "$OUT/$play.log" | tail -n 1 | tr -s ' ')"
  [ "$rc" -eq 0 ] || { status=1; grep -E -A8 'fatal|FAILED' "$OUT/$play.log" | head -n 40 | tee -a "$SUMMARY"; }
done
sed -n '/Show the result per node/,/^$/p' "$OUT/validate.log" | tee -a "$SUMMARY"
# What the hook ran and found, from the report itself.
"$PY" - "$OUT/acceptance.json" "$GPUS" <<'EOF' | tee -a "$SUMMARY" || status=1
import json, sys
report, gpus = json.load(open(sys.argv[1])), int(sys.argv[2])
node = report['nodes'][0]
hooks = {check['check']: check for check in node['checks']}
single = hooks.get('nccl_allreduce_single_node', {})
print('single node: %s - %s' % (single.get('status'), single.get('reason')))
for name in ('nccl_allreduce_multi_node', 'ddp'):
    print('%s: %s - %s' % (name, hooks.get(name, {}).get('status'), hooks.get(name, {}).get('reason')))
busbw = hooks.get('allreduce_busbw', {})
print('allreduce_busbw: %s - %s' % (busbw.get('status'), busbw.get('reason')))
for row in busbw.get('sizes', []):
    print('  %s' % json.dumps(row, sort_keys=True))
print('comparison: %s' % json.dumps(single.get('comparison'), sort_keys=True)[:3000])
ok = single.get('status') in ('pass', 'info') and single.get('backend') == 'nccl' and single.get('world_size') == gpus
print('RESULT %s' % ('OK' if ok else 'FAIL'))
sys.exit(0 if ok else 1)
EOF
say "INFO PNG: $(find "$OUT" -maxdepth 1 -name 'acceptance-*.png' -printf '%f ')"
exit $status
