#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Validates topology_facts and nccl_topology on a live multi-GPU host (made for 2 x H200,
# Ubuntu 24.04, no systemd): facts vs nvidia-smi/sysfs, the generated XML as NCCL reads it,
# and all-reduce busbw without and with the file. About 2-4 minutes.
#
#   OUT=/path/to/results scripts/gpu-validate.sh
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python3), NVIDIA_SMI (default
# /usr/local/nvidia/bin/nvidia-smi), ansible-core wheels in /tmp/site (PYTHONPATH), MAX_MIB (4096).
# Writes 8 files to $OUT: facts.json nvidia-smi.txt topology.xml allreduce-default.log
# allreduce-topofile.log dump-default.xml dump-topofile.xml summary.txt. Exit 1 on any FAIL.
set -uo pipefail

OUT=${OUT:?set OUT to the results directory}
mkdir -p "$OUT"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
SMI=${NVIDIA_SMI:-/usr/local/nvidia/bin/nvidia-smi}
[ -x "$SMI" ] || SMI=$(command -v nvidia-smi || echo nvidia-smi)
MAX_MIB=${MAX_MIB:-4096}
WORK=/tmp/trainstack-validate
rm -rf "$WORK" && mkdir -p "$WORK"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export ANSIBLE_COLLECTIONS_PATH=$REPO/collections ANSIBLE_CONFIG=$REPO/ansible.cfg
export ANSIBLE_LOCAL_TEMP=$WORK/ansible-tmp ANSIBLE_HOME=$WORK/ansible-home ANSIBLE_NOCOLOR=1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

say "## host $(hostname) $(date -u +%FT%TZ) python $PY nvidia-smi $SMI"

# Runs one of the collection's modules on localhost through ansible (ad-hoc, JSON via --tree),
# falling back to running the module file directly when ansible is not importable.
run_module() { # name args_json result_json
  local name=$1 args=$2 result=$3
  if "$PY" -c 'import ansible' 2>/dev/null; then
    rm -rf "$WORK/tree"
    (cd "$REPO" && "$PY" -m ansible adhoc localhost -i localhost, -c local \
      -e "ansible_python_interpreter=$PY" -m "trainstack.cluster.$name" -a "$args" --tree "$WORK/tree" \
      > "$WORK/$name.ansible.log" 2>&1)
    if [ -s "$WORK/tree/localhost" ]; then
      cp "$WORK/tree/localhost" "$result"
      say "INFO $name ran through ansible"
      return 0
    fi
    say "INFO ansible run of $name failed, running the module file: $(tail -c 300 "$WORK/$name.ansible.log" | tr '\n' ' ')"
  fi
  printf '{"ANSIBLE_MODULE_ARGS": %s}' "$args" > "$WORK/$name.args.json"
  PYTHONPATH=$REPO/collections:$PYTHONPATH "$PY" "$REPO/plugins/modules/$name.py" "$WORK/$name.args.json" > "$result"
}

# 1. Facts of the live host.
run_module topology_facts "{\"nvidia_smi_path\": \"$SMI\"}" "$OUT/facts.json"

# 2. nvidia-smi as read independently of the module.
{
  echo "## query"; "$SMI" --query-gpu=index,pci.bus_id,uuid,name,compute_cap,memory.total --format=csv,noheader,nounits
  echo "## topo -m"; "$SMI" topo -m
  echo "## nvlink -s"; "$SMI" nvlink -s
} > "$OUT/nvidia-smi.txt" 2>&1
say "## facts vs nvidia-smi and sysfs"
"$PY" "$REPO/scripts/gpu_validate_report.py" facts "$OUT/facts.json" "$OUT/nvidia-smi.txt" | tee -a "$SUMMARY"

# 3. The topology file and an nccl.conf that points at it, both in /tmp.
TOPO=$WORK/topology.xml
CONF=$WORK/nccl.conf
"$PY" - "$OUT/facts.json" "$TOPO" > "$WORK/nccl_topology.args.json" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))
facts = facts.get('ansible_facts', facts)
print(json.dumps({'topology': facts['trainstack_topology'], 'dest': sys.argv[2], 'mode': '0644'}))
PY
run_module nccl_topology "$(cat "$WORK/nccl_topology.args.json")" "$WORK/nccl_topology.result.json"
if [ ! -s "$TOPO" ]; then
  say "FAIL nccl_topology wrote no file: $(head -c 400 "$WORK/nccl_topology.result.json")"
  exit 1
fi
cp "$TOPO" "$OUT/topology.xml"
printf '# written by scripts/gpu-validate.sh\nNCCL_TOPO_FILE=%s\n' "$TOPO" > "$CONF"
say "## nccl.conf"; sed 's/^/    /' "$CONF" | tee -a "$SUMMARY"

# 4. All-reduce without and with the file (all GPUs of the node, NVLS off as on the probed host).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH
NCCL_TOPO_DUMP_FILE=$WORK/dump-default.xml timeout 240 "$PY" "$REPO/scripts/gpu_allreduce.py" "$MAX_MIB" > "$OUT/allreduce-default.log" 2>&1
say "INFO default run exit $?"
NCCL_CONF_FILE=$CONF NCCL_TOPO_FILE=$TOPO NCCL_TOPO_DUMP_FILE=$WORK/dump-topofile.xml \
  timeout 240 "$PY" "$REPO/scripts/gpu_allreduce.py" "$MAX_MIB" > "$OUT/allreduce-topofile.log" 2>&1
say "INFO run with the file exit $?"
cp "$WORK/dump-default.xml" "$OUT/dump-default.xml" 2>/dev/null
cp "$WORK/dump-topofile.xml" "$OUT/dump-topofile.xml" 2>/dev/null
say "INFO NCCL_CONF_FILE lines: $(grep -c 'NCCL_CONF_FILE\|nccl.conf' "$OUT/allreduce-topofile.log")"

say "## NCCL with the generated file"
"$PY" "$REPO/scripts/gpu_validate_report.py" nccl "$OUT/allreduce-default.log" "$OUT/allreduce-topofile.log" \
  "$OUT/dump-default.xml" "$OUT/dump-topofile.xml" "$TOPO" | tee -a "$SUMMARY"
say "## busbw (GB/s) default | with file"
paste <(grep -h 'busbw' "$OUT/allreduce-default.log") <(grep -h 'busbw' "$OUT/allreduce-topofile.log" | sed 's/.*busbw/busbw/') | tee -a "$SUMMARY"

if grep -q '^FAIL' "$SUMMARY"; then
  say "RESULT FAIL ($(grep -c '^FAIL' "$SUMMARY") failed checks)"
  exit 1
fi
say "RESULT OK"
