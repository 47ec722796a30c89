#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Validates topology_facts, nccl_topology and the nccl role on a live multi-GPU host (made for 2 x H200,
# Ubuntu 24.04, no systemd): facts vs nvidia-smi/sysfs, the generated XML as NCCL reads it,
# and all-reduce busbw without and with /etc/nccl.conf as the nccl role writes it. About 2-4 minutes.
# It writes /etc/nccl.conf and /etc/nccl/topology.xml: run it on a machine you may change.
#
# Check `nccl_conf` of tests/device/run, not run by default (environment there; MAX_MIB, default 4096).
# Writes 8 files to $OUT: facts.json nvidia-smi.txt topology.xml allreduce-default.log
# allreduce-topofile.log dump-default.xml dump-topofile.xml summary.txt. Exit 1 on any FAIL.
set -uo pipefail

MAX_MIB=${MAX_MIB:-4096}
# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

say "## host $(hostname) $(date -u +%FT%TZ) python $PY nvidia-smi $SMI"


# 1. Facts of the live host.
module topology_facts "{\"nvidia_smi_path\": \"$SMI\"}" "$OUT/facts.json" || exit 1

# 2. nvidia-smi as read independently of the module.
nvidia_smi_snapshot "$OUT/nvidia-smi.txt"
say "## facts vs nvidia-smi and sysfs"
"$PY" "$REPO/tests/device/gpu_validate_report.py" facts "$OUT/facts.json" "$OUT/nvidia-smi.txt" | tee -a "$SUMMARY"

# 3. All-reduce with NCCL's own detection: no /etc/nccl.conf yet (all GPUs, NVLS off as on the probed host).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH
if [ -e /etc/nccl.conf ]; then mv /etc/nccl.conf "$WORK/nccl.conf.before"; say "INFO moved the existing /etc/nccl.conf aside"; fi
NCCL_TOPO_DUMP_FILE=$WORK/dump-default.xml timeout 240 "$PY" "$REPO/roles/pytorch/files/allreduce_bench.py" --max-mib "$MAX_MIB" > "$OUT/allreduce-default.log" 2>&1
say "INFO default run exit $?"

# 4. The nccl role writes /etc/nccl/topology.xml and /etc/nccl.conf, as site.yml does; a second run
#    must change nothing.
TOPO=/etc/nccl/topology.xml
CONF=/etc/nccl.conf
run_nccl_play() { # log
  (cd "$REPO" && ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default "$PY" -m ansible playbook -i localhost, -c local \
    -e "ansible_python_interpreter=$PY" -e nccl_hosts=localhost playbooks/nccl.yml > "$1" 2>&1)
}
run_nccl_play "$WORK/nccl-play-1.log"; first=$?
run_nccl_play "$WORK/nccl-play-2.log"; second=$?
say "## nccl role on this host: first run exit $first: $(grep -A1 'PLAY RECAP' "$WORK/nccl-play-1.log" | tail -n 1 | tr -s ' ')"
say "## nccl role, second run exit $second: $(grep -A1 'PLAY RECAP' "$WORK/nccl-play-2.log" | tail -n 1 | tr -s ' ')"
if [ "$first" -ne 0 ] || [ ! -s "$TOPO" ] || [ ! -s "$CONF" ]; then
  say "FAIL the nccl role wrote no topology file or nccl.conf"; tail -n 40 "$WORK/nccl-play-1.log" | tee -a "$SUMMARY"
  exit 1
fi
if grep -A1 'PLAY RECAP' "$WORK/nccl-play-2.log" | grep -q 'changed=0 .*failed=0'; then
  say "OK   nccl role idempotent on the real host (second run changed=0)"
else
  say "FAIL nccl role second run changed something or failed"
fi
cp "$TOPO" "$OUT/topology.xml"
say "## /etc/nccl.conf"; sed 's/^/    /' "$CONF" | tee -a "$SUMMARY"

# 5. All-reduce again: NCCL reads /etc/nccl.conf by itself (no NCCL_TOPO_FILE in the environment).
NCCL_TOPO_DUMP_FILE=$WORK/dump-topofile.xml \
  timeout 240 "$PY" "$REPO/roles/pytorch/files/allreduce_bench.py" --max-mib "$MAX_MIB" > "$OUT/allreduce-topofile.log" 2>&1
say "INFO run with /etc/nccl.conf exit $?"
cp "$WORK/dump-default.xml" "$OUT/dump-default.xml" 2>/dev/null
cp "$WORK/dump-topofile.xml" "$OUT/dump-topofile.xml" 2>/dev/null

say "## NCCL with the generated file"
"$PY" "$REPO/tests/device/gpu_validate_report.py" nccl "$OUT/allreduce-default.log" "$OUT/allreduce-topofile.log" \
  "$OUT/dump-default.xml" "$OUT/dump-topofile.xml" "$TOPO" | tee -a "$SUMMARY"
say "## busbw (GB/s) default | with file"
paste <(grep -h 'busbw' "$OUT/allreduce-default.log") <(grep -h 'busbw' "$OUT/allreduce-topofile.log" | sed 's/.*busbw/busbw/') | tee -a "$SUMMARY"

if grep -q '^FAIL' "$SUMMARY"; then
  say "RESULT FAIL ($(grep -c '^FAIL' "$SUMMARY") failed checks)"
  exit 1
fi
say "RESULT OK"
