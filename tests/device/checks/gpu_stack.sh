#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Runs the GPU stack roles (nvidia_driver, cuda, nccl) in "preinstalled" mode on this host, twice, as
# playbooks/gpu_stack.yml would on a node whose driver and CUDA came with the image (DGX OS, cloud
# images, the H200 device hosts: Ubuntu 24.04, no systemd, no package registry). They must detect the
# versions, report them and change nothing: PLAY RECAP changed=0 on both runs. The nccl role's
# configuration part is switched off here (nccl_conf_manage / nccl_topology_manage: false), so the
# run writes nothing on the host. About a minute. Check `gpu_stack` of tests/device/run (environment there).
# Writes to $OUT: facts.json (trainstack_gpu_stack), run-1.log, run-2.log, summary.txt.
# Exit 1 when a run fails or changes something.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

say "## host $(hostname) $(date -u +%FT%TZ) python $PY ansible $("$PY" -c 'import ansible.release as r; print(r.__version__)' 2>&1)"

# 1. The facts module alone (what the roles read), as JSON.
(cd "$REPO" && "$PY" -m ansible adhoc localhost -i localhost, -c local -e "ansible_python_interpreter=$PY" \
  -m trainstack.cluster.gpu_stack_facts --tree "$WORK/tree" > "$WORK/facts.log" 2>&1)
if [ -s "$WORK/tree/localhost" ]; then
  cp "$WORK/tree/localhost" "$OUT/facts.json"
  say "## detected (trainstack_gpu_stack)"
  "$PY" - "$OUT/facts.json" <<'EOF' | tee -a "$SUMMARY"
import json, sys
facts = json.load(open(sys.argv[1]))["ansible_facts"]["trainstack_gpu_stack"]
driver, cuda, nccl = facts["driver"], facts["cuda"], facts["nccl"]
print("driver   %s (branch %s, %s kernel module %s, supports CUDA %s, from %s)" % (
    driver["version"], driver["branch"], driver["kernel_module"], driver["kernel_module_version"], driver["cuda"], driver["source"]))
print("gpus     %s" % ", ".join("%s %s sm_%s" % (g["index"], g["name"], g["sm"]) for g in facts["gpus"]))
print("devices  /dev/nvidiactl %s" % ("present" if facts["device_nodes"] else "missing"))
print("cuda     %s (%s, %s)" % (cuda["version"], cuda["release"], cuda["source"]))
print("nccl     %s (%s)" % (nccl["version"], nccl["source"]))
print("cudnn    %s" % facts["cudnn"]["version"])
print("pytorch  %s (index %s)" % (facts["pytorch"]["version"], facts["pytorch"]["cuda_index"]))
print("wheels   %s" % ", ".join("%s %s" % item for item in sorted(facts["python_packages"].items())))
EOF
else
  say "FAIL gpu_stack_facts returned nothing: $(tail -c 600 "$WORK/facts.log" | tr '\n' ' ')"
fi

# 2. The three roles, preinstalled, twice.
run_play() { # log
  (cd "$REPO" && "$PY" -m ansible playbook -i localhost, -c local -e "ansible_python_interpreter=$PY" \
    -e '{"gpu_stack_hosts": "localhost", "trainstack_gpu_source": "preinstalled",
         "nccl_conf_manage": false, "nccl_topology_manage": false}' \
    playbooks/gpu_stack.yml > "$1" 2>&1)
}
status=0
for n in 1 2; do
  run_play "$OUT/run-$n.log"; rc=$?
  recap=$(grep -A1 'PLAY RECAP' "$OUT/run-$n.log" | tail -n 1 | tr -s ' ')
  say "## run $n exit $rc: $recap"
  if [ "$rc" -ne 0 ] || ! echo "$recap" | grep -q 'changed=0 .*failed=0'; then
    say "FAIL run $n failed or changed something"; status=1
    grep -E 'fatal|FAILED|changed:' "$OUT/run-$n.log" | head -n 20 | tee -a "$SUMMARY"
  fi
done
say "## what the roles reported (run 2)"
grep -E '"msg": "([a-z_]+_source is preinstalled|WARNING)' "$OUT/run-2.log" | sed 's/^ *//' | tee -a "$SUMMARY"

if [ "$status" -eq 0 ]; then
  say "RESULT OK (both runs changed=0)"
else
  say "RESULT FAIL"
fi
exit "$status"
